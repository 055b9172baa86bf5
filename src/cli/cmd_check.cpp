// `vigil check MODEL --input NAME=FILE ... [--json]`: checks input files
// against the model's inputs without running anything. This is what Session::
// Check does (ValidateInputs over ListModelInputs), done here without building
// a session, so it also works for models with ops vigil cannot run yet:
// useful to people on other runtimes too.
#include <cstdio>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "command.h"
#include "user_io.h"

namespace vigil::cli {
namespace {

struct CheckOptions {
  std::string model_path;
  std::vector<std::string> inputs;
  bool json = false;
};

void PrintText(const std::vector<vigil::TensorRef>& inputs, const nlohmann::json& dims) {
  std::string text = "ok: inputs match the model\n";
  for (const vigil::TensorRef& b : inputs) {
    text += fmt::format("  {:<20} {}{} from {}\n", b.name, DTypeName(b.dtype), ShapeText(b.shape), b.source);
  }
  if (!dims.empty()) {
    text += "symbolic dims:\n";
    for (const auto& [name, value] : dims.items()) {
      text += fmt::format("  {} = {}\n", name, value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    }
  }
  std::fwrite(text.data(), 1, text.size(), stdout);
}

void PrintJson(const std::vector<vigil::TensorRef>& inputs, const nlohmann::json& dims) {
  nlohmann::json list = nlohmann::json::array();
  for (const vigil::TensorRef& b : inputs) {
    list.push_back({{"name", b.name}, {"dtype", std::string(DTypeName(b.dtype))}, {"shape", b.shape}, {"file", b.source}});
  }
  nlohmann::json j = {{"ok", true}, {"inputs", list}, {"dims", dims.is_object() ? dims : nlohmann::json::object()}};
  std::string text = j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
  std::fprintf(stdout, "%s\n", text.c_str());
}

int RunCheck(const CheckOptions& opt) {
  try {
    // The model is read and validated first, so a broken model is reported
    // as such before any input file is looked at.
    vigil::Session session(opt.model_path, ToSessionOptions(BackendChoice{}));
    InputFileSet files = ReadInputFileSet(opt.inputs);
    nlohmann::json dims = nlohmann::json::parse(session.Check(files.refs), nullptr, false);
    // Positional inputs are reported with the names they were bound to: the
    // model's inputs not bound by name, in order.
    std::vector<std::string> free_names;
    for (const vigil::IoInfo& in : session.Inputs()) {
      bool named = false;
      for (const vigil::TensorRef& r : files.refs) named |= r.name == in.name;
      if (!named) free_names.push_back(in.name);
    }
    size_t next = 0;
    for (vigil::TensorRef& r : files.refs) {
      if (r.name.empty() && next < free_names.size()) r.name = free_names[next++];
    }
    if (opt.json) PrintJson(files.refs, dims);
    else PrintText(files.refs, dims);
    return kExitOk;
  } catch (const vigil::Error& e) {
    return ReportError(e, opt.json);
  }
}

}  // namespace

Command AddCheckCommand(CLI::App& parent) {
  auto opt = std::make_shared<CheckOptions>();
  CLI::App* sub = parent.add_subcommand(
      "check",
      "Check input tensor files (.npy or ONNX TensorProto .pb) against a model without running it: names, "
      "dtype, rank, each dim, symbolic dims across inputs, byte size. Prints \"ok: inputs match the model\" "
      "with the symbolic dims the inputs bind, or a diagnosis naming the input, expected and given, and the "
      "likely cause (NHWC given to NCHW, float64 from numpy, a missing batch dim...).\n"
      "Examples:\n"
      "  vigil check model.onnx --input image=cat.npy\n"
      "  vigil check model.onnx --input a.npy --input b.npy   (bound in the model's input order)\n"
      "Exit codes: 0 inputs match, 1 diagnosed problem (model or input), 2 usage error, 3 internal error.");
  sub->add_option("MODEL", opt->model_path, "ONNX model file (.onnx)")->required();
  AddInputFilesOption(sub, opt->inputs);
  sub->add_flag("--json", opt->json, "print JSON instead of text (errors too, as {\"ok\":false,...})");
  return {sub, [opt] { return RunCheck(*opt); }};
}

}  // namespace vigil::cli
