// `vigil run MODEL --input NAME=FILE ... [--backend cpu] [--output-dir DIR]
// [--json]`: runs a model on tensor files and writes its outputs as .npy.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <set>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "command.h"
#include "precision_hint.h"
#include "user_io.h"

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

Summary Summarise(const vigil::Value& t) {
  Summary s;
  const size_t n = t.ElementCount();
  for (size_t i = 0; i < n; ++i) {
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

// Writes each output as DIR/<safe name>.npy; returns the paths in output
// order, or "" with `error` set.
std::vector<std::string> WriteOutputs(const std::string& dir, const std::vector<vigil::Value>& outs,
                                      std::string* error) {
  std::vector<std::string> paths;
  if (dir.empty()) return paths;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir)) {
    *error = fmt::format("cannot create output directory '{}': {}", dir, ec ? ec.message() : "not a directory");
    return {};
  }
  std::set<std::string> used;
  for (const vigil::Value& out : outs) {
    const std::string path = (fs::path(dir) / (SafeFileStem(out.Name(), used) + ".npy")).string();
    vigil::WriteNpy(path, out.AsInput());  // throws vigil::Error naming the file
    paths.push_back(path);
  }
  return paths;
}

// ---- Printing -----------------------------------------------------------------

std::string Describe(const vigil::Value& v) { return std::string(DTypeName(v.GetDType())) + ShapeText(v.Shape()); }

void PrintText(const std::vector<vigil::Value>& outs, const std::vector<std::string>& paths) {
  std::string text = fmt::format("outputs ({}):\n", outs.size());
  for (size_t i = 0; i < outs.size(); ++i) {
    text += fmt::format("  {:<20} {:<24} {}\n", outs[i].Name(), Describe(outs[i]), SummaryText(Summarise(outs[i])));
    if (i < paths.size()) text += fmt::format("  {:<20} -> {}\n", "", paths[i]);
  }
  std::fwrite(text.data(), 1, text.size(), stdout);
}

void PrintJson(const std::vector<vigil::Value>& outs, const std::vector<std::string>& paths) {
  nlohmann::json list = nlohmann::json::array();
  for (size_t i = 0; i < outs.size(); ++i) {
    const vigil::Value& t = outs[i];
    nlohmann::json j = {{"name", t.Name()}, {"dtype", std::string(DTypeName(t.GetDType()))}, {"shape", t.Shape()}};
    j["summary"] = SummaryJson(Summarise(t));
    if (i < paths.size()) j["file"] = paths[i];
    list.push_back(std::move(j));
  }
  std::string text =
      nlohmann::json({{"ok", true}, {"outputs", list}}).dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
  std::fprintf(stdout, "%s\n", text.c_str());
}

// ---- The command ------------------------------------------------------------

int RunModel(const RunOptions& opt) {
  try {
    InputFileSet inputs = ReadInputFileSet(opt.inputs);
    vigil::SessionOptions options = ToSessionOptions(opt.backend);
    // --isolate: each run in a child process (the library's isolated session),
    // so a crash becomes a report.
    options.isolate = opt.isolate;
    options.isolate_timeout_s = opt.isolate_timeout;
    vigil::Session session(opt.model_path, options);
    std::vector<vigil::Value> outs = session.Run(inputs.refs);
    std::string error;
    std::vector<std::string> paths = WriteOutputs(opt.output_dir, outs, &error);
    if (!error.empty()) {
      std::fprintf(stderr, "vigil: %s\n", error.c_str());
      return kExitDiagnosed;
    }
    if (opt.json) {
      PrintJson(outs, paths);
    } else {
      PrintText(outs, paths);
      const std::string hint = PrecisionHintForRun(opt.backend, session, opt.model_path);
      if (!hint.empty()) std::fprintf(stderr, "%s\n", hint.c_str());
    }
    return kExitOk;
  } catch (const vigil::Error& e) {
    return ReportError(e, opt.json);
  }
}

}  // namespace

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
  return {sub, [opt] { return RunModel(*opt); }};
}

}  // namespace vigil::cli
