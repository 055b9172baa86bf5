// `vigil run MODEL --input NAME=FILE ... [--backend cpu] [--output-dir DIR]
// [--json]`: runs a model on tensor files and writes its outputs as .npy.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <set>
#include <string>

#include "base/diagnosis_render.h"
#include "base/float16.h"
#include "cli/command.h"
#include "doctor/crash_guard.h"
#include "runtime/session.h"
#include "runtime/tensor_file.h"

namespace vigil::cli {
namespace {

namespace fs = std::filesystem;

struct RunOptions {
  std::string model_path;
  std::vector<std::string> inputs;
  BackendChoice backend;
  std::string output_dir;
  bool json = false;
  bool isolate = false;
  double isolate_timeout = 0;  // seconds; 0: none
  std::string isolated_fds;    // set only in the isolated worker
};

// ---- Output summaries ------------------------------------------------------

struct Summary {
  uint64_t count = 0;  // finite values
  double min = std::numeric_limits<double>::infinity();
  double max = -std::numeric_limits<double>::infinity();
  double sum = 0;
  uint64_t nan = 0;
  uint64_t inf = 0;
  bool numeric = true;
};

// Element i of a tensor as double; false for dtypes without a numeric view.
bool ElementAsDouble(const runtime::Tensor& t, uint64_t i, double* out) {
  switch (t.dtype()) {
    case ir::DataType::kFloat32: *out = t.data<float>()[i]; return true;
    case ir::DataType::kFloat64: *out = t.data<double>()[i]; return true;
    case ir::DataType::kFloat16: *out = Float16ToFloat(t.data<uint16_t>()[i]); return true;
    case ir::DataType::kBfloat16: *out = Bfloat16ToFloat(t.data<uint16_t>()[i]); return true;
    case ir::DataType::kInt8: *out = t.data<int8_t>()[i]; return true;
    case ir::DataType::kInt16: *out = t.data<int16_t>()[i]; return true;
    case ir::DataType::kInt32: *out = t.data<int32_t>()[i]; return true;
    case ir::DataType::kInt64: *out = static_cast<double>(t.data<int64_t>()[i]); return true;
    case ir::DataType::kUint8: *out = t.data<uint8_t>()[i]; return true;
    case ir::DataType::kBool: *out = t.data<uint8_t>()[i] != 0; return true;
    case ir::DataType::kUint16: *out = t.data<uint16_t>()[i]; return true;
    case ir::DataType::kUint32: *out = t.data<uint32_t>()[i]; return true;
    case ir::DataType::kUint64: *out = static_cast<double>(t.data<uint64_t>()[i]); return true;
    default: return false;
  }
}

Summary Summarise(const runtime::Tensor& t) {
  Summary s;
  const uint64_t n = t.element_count();
  for (uint64_t i = 0; i < n; ++i) {
    double v = 0;
    if (!ElementAsDouble(t, i, &v)) {
      s.numeric = false;
      return s;
    }
    if (std::isnan(v)) {
      ++s.nan;
    } else if (std::isinf(v)) {
      ++s.inf;
    } else {
      ++s.count;
      s.min = std::min(s.min, v);
      s.max = std::max(s.max, v);
      s.sum += v;
    }
  }
  return s;
}

std::string SummaryText(const Summary& s) {
  if (!s.numeric) return "(no summary for this dtype)";
  if (s.count == 0) return fmt::format("no finite values; nan {} inf {}", s.nan, s.inf);
  return fmt::format("min {:.6g} max {:.6g} mean {:.6g} nan {} inf {}", s.min, s.max,
                     s.sum / static_cast<double>(s.count), s.nan, s.inf);
}

nlohmann::json SummaryJson(const Summary& s) {
  nlohmann::json j = {{"nan", s.nan}, {"inf", s.inf}};
  if (s.numeric && s.count > 0) {
    j["min"] = s.min;
    j["max"] = s.max;
    j["mean"] = s.sum / static_cast<double>(s.count);
  }
  return j;
}

// ---- Output files ---------------------------------------------------------

// Output name made safe as a file name: anything outside [A-Za-z0-9._-]
// becomes '_'; names that would collide (or are empty or dots) get a suffix.
std::string SafeFileStem(const std::string& name, std::set<std::string>& used) {
  std::string stem;
  for (char c : name) {
    const bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' ||
                    c == '_' || c == '-';
    stem.push_back(ok ? c : '_');
  }
  if (stem.empty() || stem.find_first_not_of('.') == std::string::npos) stem = "output" + stem;
  std::string candidate = stem;
  for (int i = 1; used.count(candidate); ++i) candidate = fmt::format("{}_{}", stem, i);
  used.insert(candidate);
  return candidate;
}

Status MakeOutputDir(const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir)) {
    return EnvironmentError("cannot create output directory '{}': {}", dir, ec ? ec.message() : "not a directory");
  }
  return Status::Ok();
}

// Writes each output as DIR/<safe name>.npy; returns the paths in output order.
Result<std::vector<std::string>> WriteOutputs(const std::string& dir, const std::vector<runtime::NamedTensor>& outs) {
  std::vector<std::string> paths;
  if (dir.empty()) return paths;
  VIGIL_RETURN_IF_ERROR(MakeOutputDir(dir));
  std::set<std::string> used;
  for (const runtime::NamedTensor& out : outs) {
    const std::string path = (fs::path(dir) / (SafeFileStem(out.name, used) + ".npy")).string();
    Status s = runtime::WriteNpy(path, out.tensor);
    if (!s.ok()) return s.WithContext(fmt::format("output '{}'", out.name));
    paths.push_back(path);
  }
  return paths;
}

// ---- Printing -----------------------------------------------------------------

void PrintText(const std::vector<runtime::NamedTensor>& outs, const std::vector<std::string>& paths) {
  std::string text = fmt::format("outputs ({}):\n", outs.size());
  for (size_t i = 0; i < outs.size(); ++i) {
    text += fmt::format("  {:<20} {:<24} {}\n", outs[i].name, outs[i].tensor.Describe(),
                        SummaryText(Summarise(outs[i].tensor)));
    if (i < paths.size()) text += fmt::format("  {:<20} -> {}\n", "", paths[i]);
  }
  std::fwrite(text.data(), 1, text.size(), stdout);
}

void PrintJson(const std::vector<runtime::NamedTensor>& outs, const std::vector<std::string>& paths) {
  nlohmann::json list = nlohmann::json::array();
  for (size_t i = 0; i < outs.size(); ++i) {
    const runtime::Tensor& t = outs[i].tensor;
    nlohmann::json j = {{"name", outs[i].name}, {"dtype", std::string(ir::DataTypeName(t.dtype()))}, {"shape", t.shape()}};
    j["summary"] = SummaryJson(Summarise(t));
    if (i < paths.size()) j["file"] = paths[i];
    list.push_back(std::move(j));
  }
  std::string text = nlohmann::json({{"ok", true}, {"outputs", list}}).dump(2);
  std::fprintf(stdout, "%s\n", text.c_str());
}

// ---- The command ------------------------------------------------------------

// --isolate: the same run in a child process (doctor/crash_guard.h); this
// process reads the input files and writes the outputs.
Result<std::vector<runtime::NamedTensor>> RunIsolatedModel(const RunOptions& opt, const InputFiles& inputs) {
  doctor::IsolatedRunRequest req;
  req.worker_argv = {"/proc/self/exe", "run", opt.model_path};
  for (std::string& a : BackendArguments(opt.backend)) req.worker_argv.push_back(std::move(a));
  for (size_t i = 0; i < inputs.bindings.size(); ++i) req.inputs.push_back({inputs.bindings[i].name, inputs.tensors[i]});
  req.timeout_ms = static_cast<int>(opt.isolate_timeout * 1000);
  req.note = [](std::string_view text) { std::fprintf(stderr, "vigil: %.*s\n", static_cast<int>(text.size()), text.data()); };
  return doctor::RunIsolated(req);
}

int RunModel(const RunOptions& opt) {
  if (!opt.isolated_fds.empty()) {
    auto fds = doctor::ParseIsolatedChildFds(opt.isolated_fds);
    if (!fds) return ReportFailure(InvalidInputError("--isolated-fds '{}' is not C,I,O", opt.isolated_fds), false);
    return doctor::ServeIsolatedRun(*fds, [&opt] { return LoadSession(opt.model_path, opt.backend); });
  }
  auto inputs = ReadInputFiles(opt.inputs);
  if (!inputs.ok()) return ReportFailure(inputs.status(), opt.json);
  Result<std::vector<runtime::NamedTensor>> outs = InternalError("not run");
  if (opt.isolate) {
    outs = RunIsolatedModel(opt, *inputs);
  } else {
    auto session = LoadSession(opt.model_path, opt.backend);
    if (!session.ok()) return ReportFailure(session.status(), opt.json);
    outs = (*session)->Run(inputs->bindings);
  }
  if (!outs.ok()) return ReportFailure(outs.status(), opt.json);
  auto paths = WriteOutputs(opt.output_dir, *outs);
  if (!paths.ok()) return ReportFailure(paths.status(), opt.json);
  if (opt.json) PrintJson(*outs, *paths);
  else PrintText(*outs, *paths);
  return kExitOk;
}

// NAME=FILE, unless the whole spec names an existing file (paths may hold '=').
std::pair<std::string, std::string> SplitSpec(const std::string& spec) {
  const size_t eq = spec.find('=');
  std::error_code ec;
  if (eq == std::string::npos || eq == 0 || fs::exists(spec, ec)) return {std::string(), spec};
  return {spec.substr(0, eq), spec.substr(eq + 1)};
}

}  // namespace

Result<InputFiles> ReadInputFiles(const std::vector<std::string>& specs) {
  InputFiles files;
  files.tensors.reserve(specs.size());
  for (const std::string& spec : specs) {
    auto [name, path] = SplitSpec(spec);
    auto file = runtime::ReadTensorFile(path);
    if (!file.ok()) {
      Status s = file.status();
      if (!name.empty()) s.WithContext(fmt::format("input '{}'", name));
      return s;
    }
    runtime::Tensor& t = files.tensors.emplace_back(std::move(file->tensor));
    files.bindings.push_back(runtime::InputBinding{name, t.dtype(), t.shape(), t.raw_data(), t.byte_size(), path});
  }
  return files;
}

void AddInputFilesOption(CLI::App* sub, std::vector<std::string>& specs) {
  sub->add_option("--input,-i", specs,
                  "NAME=FILE binds FILE (.npy or .pb) to the model input NAME; FILE alone binds by position "
                  "(required inputs first, in the model's order). Repeat for each input.")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
}

Command AddRunCommand(CLI::App& parent) {
  auto opt = std::make_shared<RunOptions>();
  CLI::App* sub = parent.add_subcommand(
      "run",
      "Run a model on input tensor files (.npy or ONNX TensorProto .pb). Every input is checked against the "
      "model (name, dtype, rank, dims, symbolic dims, byte size) before anything runs; a mismatch is a "
      "diagnosis naming the input, what was expected and what was given, and the likely cause.\n"
      "Examples:\n"
      "  vigil run model.onnx --input image=cat.npy --output-dir out/\n"
      "  vigil run model.onnx --input a.npy --input b.pb      (bound in the model's input order)\n"
      "  vigil run model.onnx --input x=x.npy --json\n"
      "  vigil run model.onnx --input x=x.npy --backend cuda --isolate   (a crash becomes a report)\n"
      "Exit codes: 0 ran, 1 diagnosed problem (model, input, unsupported op or backend, a crash under --isolate), "
      "2 usage error, "
      "3 internal error.");
  sub->add_option("MODEL", opt->model_path, "ONNX model file (.onnx)")->required();
  AddInputFilesOption(sub, opt->inputs);
  AddBackendOptions(sub, opt->backend);
  sub->add_option("--output-dir,-o", opt->output_dir,
                  "write each output as DIR/<output name>.npy (characters outside [A-Za-z0-9._-] become '_'); "
                  "without it, outputs are only summarised");
  sub->add_flag("--json", opt->json, "print JSON instead of text (errors too, as {\"ok\":false,...})");
  sub->add_flag("--isolate", opt->isolate,
                "run the model in a child process: if it crashes (in cuDNN, the driver or a kernel), vigil reports "
                "the signal, the faulting library, offset and build-id, and the node that was running, and exits 1");
  sub->add_option("--isolate-timeout", opt->isolate_timeout,
                  "with --isolate: kill the child after SECONDS and report the node it hung in (default: no limit)")
      ->check(CLI::NonNegativeNumber);
  // The worker side of --isolate; not for people.
  sub->add_option("--isolated-fds", opt->isolated_fds)->group("");
  return {sub, [opt] { return RunModel(*opt); }};
}

}  // namespace vigil::cli
