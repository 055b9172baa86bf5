#include "doctor/report.h"

#include <map>
#include <set>

#include <fmt/format.h>

namespace vigil::doctor {
namespace {

// Names people know the components by.
std::string DisplayName(const std::string& id) {
  if (id == kDriver) return "CUDA driver";
  if (id == kCudart) return "CUDA runtime";
  if (id == kCudnn) return "cuDNN";
  if (id == kCublas) return "cuBLAS";
  if (id == kCublasLt) return "cuBLASLt";
  if (id.starts_with("cudnn_")) return "  " + id.substr(6);  // sub-libraries, indented under cuDNN
  return id;
}

// ✓ found and no finding about it, ✗ missing or named by an error, ! named
// by a warning.
std::string Mark(const Component& c, const std::map<std::string, Severity>& named, bool color) {
  auto it = named.find(c.id);
  const char* mark = "✓";
  const char* colour = "32";
  if (!c.found || (it != named.end() && it->second == Severity::kError)) {
    mark = "✗";
    colour = "31";
  } else if (it != named.end() && it->second == Severity::kWarning) {
    mark = "!";
    colour = "33";
  }
  return color ? fmt::format("\033[{}m{}\033[0m", colour, mark) : std::string(mark);
}

// The worst severity of the findings about each component (infos do not mark).
std::map<std::string, Severity> NamedComponents(const std::vector<Finding>& findings) {
  std::map<std::string, Severity> named;
  for (const Finding& f : findings) {
    if (f.component.empty() || f.severity == Severity::kInfo) continue;
    auto [it, added] = named.emplace(f.component, f.severity);
    if (!added && f.severity > it->second) it->second = f.severity;
  }
  return named;
}

std::string ComponentLine(const Component& c, const std::map<std::string, Severity>& named, bool color) {
  std::string line = fmt::format("  {} {:<26} ", Mark(c, named, color), DisplayName(c.id));
  if (!c.found) return line + fmt::format("{:<9} {}\n", "missing", c.load_error.empty() ? c.file : c.load_error);
  line += fmt::format("{:<9} {}", c.version_text.empty() ? c.version.ToString() : c.version_text, c.path);
  if (!c.build_id.empty()) line += fmt::format("  [build-id {}]", c.build_id.substr(0, 16));
  line += "\n";
  for (const LibraryCopy& copy : c.copies) {
    line += fmt::format("      also {:<9} {}\n", copy.version.ToString(), copy.path);
  }
  return line;
}

std::string Memory(int64_t bytes) {
  if (bytes < 0) return "?";
  return fmt::format("{:.1f} GiB", static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0));
}

std::string GpuLines(const StackSnapshot& s) {
  if (s.gpus.empty()) {
    if (!s.gpu_query_error.empty()) return "  none: " + s.gpu_query_error + "\n";
    return s.gpu_query_ran ? "  none\n" : "  not queried (no driver)\n";
  }
  std::string out;
  for (const Gpu& g : s.gpus) {
    out += fmt::format("  [{}] {}  compute capability {}.{}  memory {} total, {} free{}\n", g.index, g.name,
                       g.cc_major, g.cc_minor, Memory(g.total_memory), Memory(g.free_memory),
                       g.error.empty() ? "" : "  (" + g.error + ")");
  }
  return out;
}

// `fixes`: the fixes printed so far and the finding that printed each; a fix
// already printed is referred to, not repeated.
std::string FindingText(const Finding& f, std::map<std::string, std::string>& fixes) {
  std::string out = fmt::format("{} [{}]: {}\n", SeverityName(f.severity), f.id, f.summary);
  for (const Fact& e : f.evidence) {
    out += e.name.empty() ? fmt::format("    {}\n", e.value) : fmt::format("    {}: {}\n", e.name, e.value);
  }
  if (f.fix.empty()) return out;
  auto [it, first] = fixes.emplace(f.fix, f.id);
  out += first ? fmt::format("  fix: {}\n", f.fix) : fmt::format("  fix: the same as for [{}] above\n", it->second);
  return out;
}

std::string FixSuffix(const Finding& f) { return f.fix.empty() ? "" : " — fix: " + f.fix; }

}  // namespace

int DoctorExitCode(const DoctorReport& report) { return HasError(report.findings) ? 1 : 0; }

std::string VerdictLine(const std::vector<Finding>& findings) {
  int errors = 0, warnings = 0;
  const Finding* top_error = nullptr;
  const Finding* top_warning = nullptr;
  for (const Finding& f : findings) {
    if (f.severity == Severity::kError && errors++ == 0) top_error = &f;
    if (f.severity == Severity::kWarning && warnings++ == 0) top_warning = &f;
  }
  if (top_error != nullptr) return fmt::format("{} error(s): {}{}", errors, top_error->summary, FixSuffix(*top_error));
  if (top_warning != nullptr) {
    return fmt::format("no errors, {} warning(s): {}{}", warnings, top_warning->summary, FixSuffix(*top_warning));
  }
  return "no problems found";
}

std::string RenderReportText(const DoctorReport& report, bool color) {
  const StackSnapshot& s = report.snapshot;
  // The verdict first: what is wrong and its fix, before the details.
  std::string out = VerdictLine(report.findings) + "\n\nGPU software stack\n";
  std::map<std::string, Severity> named = NamedComponents(report.findings);
  for (const Component& c : s.components) out += ComponentLine(c, named, color);
  if (s.driver_cuda_version > 0) {
    out += fmt::format("  driver supports CUDA up to {}\n", DecodeCudaVersion(s.driver_cuda_version).ToString());
  }
  if (s.cudnn_cudart_version > 0) {
    out += fmt::format("  cuDNN built for CUDA {}", DecodeCudaVersion(s.cudnn_cudart_version).ToString());
    if (s.cudnn_max_device_version > 0) {
      out += fmt::format(", GPUs up to compute capability {}",
                         DecodeDeviceVersion(s.cudnn_max_device_version).ToString());
    }
    out += "\n";
  }
  out += "GPUs\n" + GpuLines(s);
  if (!s.env.empty()) {
    out += "Environment\n";
    for (const auto& [name, value] : s.env) out += fmt::format("  {}={}\n", name, value);
  }
  if (!report.live_check.empty()) out += "Live check\n  " + report.live_check + "\n";
  if (!report.binary_lines.empty()) {
    out += "Binary\n";
    for (const std::string& line : report.binary_lines) out += "  " + line + "\n";
  }
  int errors = 0, warnings = 0;
  for (const Finding& f : report.findings) {
    errors += f.severity == Severity::kError;
    warnings += f.severity == Severity::kWarning;
  }
  if (report.findings.empty()) return out;
  out += fmt::format("\nFindings: {} error(s), {} warning(s)\n", errors, warnings);
  std::map<std::string, std::string> fixes;
  for (const Finding& f : report.findings) out += FindingText(f, fixes);
  return out;
}

nlohmann::json FindingToJson(const Finding& f) {
  nlohmann::json evidence = nlohmann::json::array();
  for (const Fact& e : f.evidence) evidence.push_back({{"name", e.name}, {"value", e.value}});
  return {{"id", f.id},
          {"severity", std::string(SeverityName(f.severity))},
          {"summary", f.summary},
          {"evidence", evidence},
          {"fix", f.fix}};
}

nlohmann::ordered_json RenderReportJson(const DoctorReport& report) {
  const StackSnapshot& s = report.snapshot;
  nlohmann::json findings = nlohmann::json::array();
  for (const Finding& f : report.findings) findings.push_back(FindingToJson(f));
  nlohmann::json raw = {{"driver_cuda_version", s.driver_cuda_version},
                        {"driver_release", s.driver_release},
                        {"cudart_version", s.cudart_version},
                        {"cudnn_version", s.cudnn_version},
                        {"cudnn_cudart_version", s.cudnn_cudart_version},
                        {"cudnn_max_device_version", s.cudnn_max_device_version},
                        {"cublaslt_version", s.cublaslt_version}};
  nlohmann::json body = {{"schema_version", 1},
          {"healthy", !HasError(report.findings)},
          {"components", s.components},
          {"api_versions", raw},
          {"gpus", s.gpus},
          {"gpu_query_error", s.gpu_query_error},
          {"physical_gpu_count", s.physical_gpu_count},
          {"env", s.env},
          {"live_check", report.live_check},
          {"findings", findings},
          {"binary", report.binary_json}};
  // The verdict first, so that `vigil doctor --json | head` shows it too.
  nlohmann::ordered_json out;
  out["summary"] = VerdictLine(report.findings);
  for (auto& [key, value] : body.items()) out[key] = value;
  return out;
}

}  // namespace vigil::doctor
