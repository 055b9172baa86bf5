#include "doctor/doctor.h"

#include <algorithm>
#include <sstream>

#include "doctor/probe/probe_internal.h"
#include "doctor/resolver/binary_deps.h"
#include "doctor/rules/rules.h"

namespace vigil::doctor {
namespace {

Severity SeverityFromText(const std::string& text) {
  if (text == "error") return Severity::kError;
  if (text == "warning") return Severity::kWarning;
  return Severity::kInfo;
}

Finding FromBinaryFinding(const BinaryFinding& b) {
  Finding f{b.id, SeverityFromText(b.severity), b.summary, {}, b.fix, ""};
  for (const std::string& e : b.evidence) f.evidence.push_back({"", e});
  return f;
}

nlohmann::json DependencyJson(const BinaryDependency& d) {
  return {{"name", d.name},
          {"needed_by", d.needed_by},
          {"path", d.path ? nlohmann::json(*d.path) : nlohmann::json(nullptr)},
          {"found_via", d.found_via},
          {"other_copies", d.other_copies},
          {"load_error", d.load_error},
          {"depth", d.depth}};
}

void SortFindings(std::vector<Finding>& findings) {
  std::stable_sort(findings.begin(), findings.end(),
                   [](const Finding& a, const Finding& b) { return a.severity > b.severity; });
}

}  // namespace

void AddBinaryReport(const std::string& path, const SearchEnvironment& env, DoctorReport& report) {
  Result<BinaryReport> binary = ResolveBinary(path, env);
  if (!binary.ok()) {
    const Diagnosis& d = binary.status().diagnosis();
    report.findings.push_back({"binary.unreadable", Severity::kError, d.summary, d.facts,
                               d.fixes.empty() ? "" : d.fixes.front(), ""});
    report.binary_json = {{"path", path}, {"error", d.summary}};
    SortFindings(report.findings);
    return;
  }
  std::istringstream text(FormatBinaryReport(*binary));
  for (std::string line; std::getline(text, line);) report.binary_lines.push_back(line);
  nlohmann::json deps = nlohmann::json::array();
  for (const BinaryDependency& d : binary->dependencies) deps.push_back(DependencyJson(d));
  nlohmann::json findings = nlohmann::json::array();
  for (const BinaryFinding& b : binary->findings) {
    report.findings.push_back(FromBinaryFinding(b));
    findings.push_back(b.id);
  }
  report.binary_json = {{"path", binary->path},       {"real_path", binary->real_path},
                        {"build_id", binary->elf.build_id}, {"dependencies", deps},
                        {"finding_ids", findings},     {"truncated", binary->truncated}};
  SortFindings(report.findings);
}

DoctorReport RunDoctor(const DoctorOptions& options) {
  DoctorReport report;
  report.snapshot = ProbeStack(options.probe);
  report.findings = RunRules(report.snapshot);
  if (options.live_check) {
    LiveCheckResult live = RunLiveCheck(report.snapshot, options.live);
    report.live_check = live.summary;
    for (Finding& f : live.findings) report.findings.push_back(std::move(f));
  }
  if (options.binary) AddBinaryReport(*options.binary, EffectiveSearch(options.probe), report);
  SortFindings(report.findings);
  return report;
}

}  // namespace vigil::doctor
