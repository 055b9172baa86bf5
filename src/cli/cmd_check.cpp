// `vigil check MODEL --input NAME=FILE ... [--json]`: checks input files
// against the model's inputs without running anything. This is what Session::
// Check does (ValidateInputs over ListModelInputs), done here without building
// a session, so it also works for models with ops vigil cannot run yet:
// useful to people on other runtimes too.
#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "ir/validate.h"
#include "onnx/reader.h"
#include "runtime/input_binding.h"

namespace vigil::cli {
namespace {

struct CheckOptions {
  std::string model_path;
  std::vector<std::string> inputs;
  bool json = false;
};

std::string ShapeText(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += fmt::format("{}{}", i ? "," : "", shape[i]);
  return s + "]";
}

void PrintText(const std::vector<runtime::InputBinding>& bindings, const runtime::DimBindings& dims) {
  std::string text = "ok: inputs match the model\n";
  for (const runtime::InputBinding& b : bindings) {
    text += fmt::format("  {:<20} {}{} from {}\n", b.name, ir::DataTypeName(b.dtype), ShapeText(b.shape), b.source);
  }
  if (!dims.empty()) {
    text += "symbolic dims:\n";
    for (const auto& [name, value] : dims) text += fmt::format("  {} = {}\n", name, value);
  }
  std::fwrite(text.data(), 1, text.size(), stdout);
}

void PrintJson(const std::vector<runtime::InputBinding>& bindings, const runtime::DimBindings& dims) {
  nlohmann::json inputs = nlohmann::json::array();
  for (const runtime::InputBinding& b : bindings) {
    inputs.push_back({{"name", b.name},
                      {"dtype", std::string(ir::DataTypeName(b.dtype))},
                      {"shape", b.shape},
                      {"file", b.source}});
  }
  nlohmann::json j = {{"ok", true}, {"inputs", inputs}, {"dims", nlohmann::json::object()}};
  for (const auto& [name, value] : dims) j["dims"][name] = value;
  std::string text = j.dump(2);
  std::fprintf(stdout, "%s\n", text.c_str());
}

int RunCheck(const CheckOptions& opt) {
  auto model = onnx::ReadModel(opt.model_path);
  if (!model.ok()) return ReportFailure(model.status(), opt.json);
  Status valid = ir::ValidateModel(*model);
  if (!valid.ok()) return ReportFailure(valid.WithFact("model", opt.model_path), opt.json);
  auto files = ReadInputFiles(opt.inputs);
  if (!files.ok()) return ReportFailure(files.status(), opt.json);
  std::vector<runtime::InputBinding>& bindings = files->bindings;
  auto dims = runtime::ValidateInputs(runtime::ListModelInputs(model->graph), bindings);
  if (!dims.ok()) return ReportFailure(dims.status(), opt.json);
  if (opt.json) PrintJson(bindings, *dims);
  else PrintText(bindings, *dims);
  return kExitOk;
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
