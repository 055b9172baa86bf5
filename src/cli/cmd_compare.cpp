// `vigil compare MODEL [--backends cuda,cpu] [--input NAME=FILE ...]
// [--per-node | --repeat N] [--rtol R --atol A] [--json]`: runs one model on two backends
// with the same inputs and compares the results element-wise
// (|got - ref| <= atol + rtol*|ref|, see runtime/tensor_compare.h).
#include <cstdio>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "cli/tooling.h"
#include "cli/compare_repeat.h"
#include "cli/per_node_compare.h"
#include "cli/random_inputs.h"
#include "runtime/tensor_compare.h"

namespace vigil::cli {
namespace {

inline constexpr double kDefaultRtol = 1e-3;
inline constexpr double kDefaultAtol = 1e-5;

struct CompareOptions {
  std::string model_path;
  std::string backends = "cuda,cpu";
  std::vector<std::string> inputs;
  bool per_node = false;
  int repeat = 0;  // 0: one run of each side
  double rtol = kDefaultRtol;
  double atol = kDefaultAtol;
  bool json = false;
  // Passed to whichever side runs on cuda.
  bool tf32 = false;
  bool no_tf32x3 = false;
  bool tf32x3_convs = false;
  bool deterministic = false;
  std::string layout = "auto";
  bool no_fallback = false;
  std::string gpu_mem_limit;
  int device = 0;
};

// "cuda,cpu" -> {"cuda", "cpu"}; an error message when it is not two names
// from {cpu, cuda}.
std::pair<std::vector<std::string>, std::string> SplitBackends(const std::string& text) {
  std::vector<std::string> names;
  size_t start = 0;
  while (true) {
    const size_t comma = text.find(',', start);
    names.push_back(text.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (names.size() != 2) {
    return {names, fmt::format("expected two backend names, GOT,REFERENCE (e.g. cuda,cpu); '{}' has {}",
                               text, names.size())};
  }
  for (const std::string& n : names) {
    if (n != "cpu" && n != "cuda") {
      return {names, fmt::format("unknown backend '{}' in '{}'; the backends are cpu and cuda", n, text)};
    }
  }
  return {names, std::string()};
}

BackendChoice ChoiceFor(const std::string& backend, const CompareOptions& opt) {
  BackendChoice c;
  c.backend = backend;
  if (backend == "cuda") {
    c.tf32 = opt.tf32;
    c.no_tf32x3 = opt.no_tf32x3;
    c.tf32x3_convs = opt.tf32x3_convs;
    c.deterministic = opt.deterministic;
    c.no_fallback = opt.no_fallback;
    c.gpu_mem_limit = opt.gpu_mem_limit;
    c.device = opt.device;
    c.layout = opt.layout;
  }
  return c;
}

// ---- Comparing ----------------------------------------------------------------

std::string Header(const std::vector<std::string>& names, const CompareOptions& opt) {
  return fmt::format("compare: {} (got) against {} (reference); pass when |got-ref| <= {:g} + {:g}*|ref|\n",
                     names[0], names[1], opt.atol, opt.rtol);
}

nlohmann::json HeaderJson(const std::vector<std::string>& names, const CompareOptions& opt, const InputFiles& in) {
  nlohmann::json inputs = nlohmann::json::array();
  for (const runtime::InputBinding& b : in.bindings) {
    inputs.push_back({{"name", b.name}, {"dtype", std::string(ir::DataTypeName(b.dtype))}, {"shape", b.shape},
                      {"source", b.source}});
  }
  return {{"ok", true}, {"model", opt.model_path}, {"got", names[0]}, {"reference", names[1]},
          {"rtol", opt.rtol}, {"atol", opt.atol}, {"inputs", inputs}};
}

std::string InputsText(const InputFiles& in) {
  std::string text = "inputs:\n";
  for (const runtime::InputBinding& b : in.bindings) {
    std::string shape;
    for (size_t i = 0; i < b.shape.size(); ++i) shape += (i ? "," : "") + std::to_string(b.shape[i]);
    text += fmt::format("  {:<20} {}[{}] from {}\n", b.name, ir::DataTypeName(b.dtype), shape, b.source);
  }
  return text;
}

void Print(const std::string& text) { std::fwrite(text.data(), 1, text.size(), stdout); }

// Default mode: the graph outputs only.
int CompareOutputs(const runtime::Session& got, const runtime::Session& ref, const InputFiles& in,
                   const std::vector<std::string>& names, const CompareOptions& opt) {
  auto got_outs = got.Run(in.bindings);
  if (!got_outs.ok()) return ReportFailure(OnSide(got_outs.status(), names[0], "got"), opt.json);
  auto ref_outs = ref.Run(in.bindings);
  if (!ref_outs.ok()) {
    return ReportFailure(OnSide(ref_outs.status(), names[1], "reference"), opt.json);
  }
  if (got_outs->size() != ref_outs->size()) {
    return ReportFailure(InternalError("the two sessions returned {} and {} outputs", got_outs->size(),
                                       ref_outs->size()),
                         opt.json);
  }
  std::vector<ValueComparison> results;
  std::vector<std::string> failed;
  for (size_t i = 0; i < ref_outs->size(); ++i) {
    results.push_back(CompareValue((*ref_outs)[i].name, (*got_outs)[i].tensor, (*ref_outs)[i].tensor, opt.rtol, opt.atol));
    if (!results.back().cmp.ok()) failed.push_back(results.back().name);
  }
  const bool pass = failed.empty();
  if (opt.json) {
    nlohmann::json j = HeaderJson(names, opt, in);
    j["outputs"] = nlohmann::json::array();
    for (const ValueComparison& v : results) j["outputs"].push_back(ValueJson(v));
    j["pass"] = pass;
    j["diverging"] = failed;
    nlohmann::json notes = nlohmann::json::array();
    for (const ValueComparison& v : results) {
      if (std::string n = HalfPrecisionNote(v, opt.rtol); !n.empty()) notes.push_back(n);
    }
    if (!notes.empty()) j["notes"] = notes;
    std::printf("%s\n", j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    return pass ? kExitOk : kExitDiagnosed;
  }
  std::string text = Header(names, opt) + InputsText(in) + fmt::format("outputs ({}):\n", results.size());
  for (const ValueComparison& v : results) {
    const runtime::TensorComparison& c = v.cmp;
    text += fmt::format("  {:<20} {:<24} {}\n", v.name, v.ref_type, c.ok() ? "PASS" : "FAIL");
    if (c.same_dtype && c.same_shape) {
      text += fmt::format("  {:<20} max abs error {:.3g}, max rel error {:.3g}, rel L2 error {:.3g}, "
                          "NaN mismatches {}\n",
                          "", c.max_abs_error, c.max_rel_error, c.rel_l2_error, c.nan_mismatches);
    }
    if (!c.ok()) text += fmt::format("  {:<20} {}\n", "", Detail(v));
  }
  if (pass) {
    text += fmt::format("PASS: all {} output(s) match within tolerance\n", results.size());
  } else {
    std::string list;
    for (const std::string& n : failed) list += (list.empty() ? "'" : ", '") + n + "'";
    text += fmt::format("FAIL: {} of {} output(s) diverge beyond tolerance: {}\n"
                        "  (vigil compare --per-node finds the first value that diverges)\n",
                        failed.size(), results.size(), list);
    for (const ValueComparison& v : results) {
      if (std::string n = HalfPrecisionNote(v, opt.rtol); !n.empty()) text += "  note: " + n + "\n";
    }
  }
  Print(text);
  return pass ? kExitOk : kExitDiagnosed;
}

// ---- Per node -------------------------------------------------------------------

int ComparePerNode(const runtime::Session& got, const runtime::Session& ref, const InputFiles& in,
                   const std::vector<std::string>& names, const CompareOptions& opt) {
  auto found = FindFirstDivergence(got, ref, in.bindings, names, opt.rtol, opt.atol);
  if (!found.ok()) return ReportFailure(found.status(), opt.json);
  const ir::Graph& graph = ref.model().graph;
  const size_t compared = found->compared, skipped = found->skipped;
  const std::optional<ValueComparison>& first = found->value;
  const std::optional<size_t>& node_index = found->node_index;
  const auto& node_inputs = found->node_inputs;

  if (opt.json) {
    nlohmann::json j = HeaderJson(names, opt, in);
    j["per_node"] = true;
    j["compared"] = compared;
    j["not_compared"] = skipped;
    j["pass"] = !first.has_value();
    if (first) {
      nlohmann::json d = ValueJson(*first);
      if (node_index) {
        const ir::Node& node = graph.nodes[*node_index];
        nlohmann::json ins = nlohmann::json::array();
        for (const auto& [name, type] : node_inputs) ins.push_back({{"name", name}, {"type", type}});
        d["node"] = {{"index", *node_index}, {"op_type", node.op_type}, {"name", node.name}, {"inputs", ins}};
      }
      j["first_divergence"] = d;
    } else {
      j["first_divergence"] = nullptr;
    }
    std::printf("%s\n", j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    return first ? kExitDiagnosed : kExitOk;
  }
  std::string text = Header(names, opt) + InputsText(in);
  std::string skipped_note =
      skipped ? fmt::format(" ({} value(s) of the reference that {} did not produce were skipped)", skipped, names[0])
              : std::string();
  if (!first) {
    text += fmt::format("PASS: no value diverges: {} value(s) compared in step order{}\n", compared, skipped_note);
    Print(text);
    return kExitOk;
  }
  text += fmt::format("FAIL: first diverging value, after {} value(s) that match, in step order{}:\n", compared - 1,
                      skipped_note);
  text += fmt::format("  value      '{}' {}\n", first->name, first->ref_type);
  if (node_index) {
    const ir::Node& node = graph.nodes[*node_index];
    text += fmt::format("  node       {} (node #{}), op type {}\n", node.Describe(*node_index), *node_index,
                        node.op_type);
    for (const auto& [name, type] : node_inputs) text += fmt::format("  input      '{}' {}\n", name, type);
  } else {
    text += "  node       none (a graph input or constant)\n";
  }
  const runtime::TensorComparison& c = first->cmp;
  if (c.same_dtype && c.same_shape) {
    text += fmt::format("  errors     max abs {:.3g}, max rel {:.3g}, rel L2 {:.3g}, NaN mismatches {}\n",
                        c.max_abs_error, c.max_rel_error, c.rel_l2_error, c.nan_mismatches);
  }
  text += fmt::format("  detail     {}\n", Detail(*first));
  text += "  every value before it matched, so this node is where the backends part ways\n";
  Print(text);
  return kExitDiagnosed;
}

// ---- The command ------------------------------------------------------------

int RunCompare(const CompareOptions& opt) {
  auto [names, error] = SplitBackends(opt.backends);
  if (!error.empty()) {  // already refused by the option's check; kept for safety
    std::fprintf(stderr, "vigil compare: --backends: %s\n", error.c_str());
    return kExitUsage;
  }
  if (opt.repeat > 0 && opt.per_node) {
    std::fprintf(stderr, "vigil compare: --repeat and --per-node cannot be combined; use one at a time\n");
    return kExitUsage;
  }
  if (!(opt.rtol >= 0) || !(opt.atol >= 0)) {
    return ReportFailure(InvalidInputError("--rtol and --atol must be non-negative numbers"), opt.json);
  }
  auto got = LoadSession(opt.model_path, ChoiceFor(names[0], opt));
  if (!got.ok()) return ReportFailure(OnSide(got.status(), names[0], "got"), opt.json);
  auto ref = LoadSession(opt.model_path, ChoiceFor(names[1], opt));
  if (!ref.ok()) {
    return ReportFailure(OnSide(ref.status(), names[1], "reference"), opt.json);
  }
  auto inputs = opt.inputs.empty() ? GenerateRandomInputs((*ref)->inputs()) : ReadInputFiles(opt.inputs);
  if (!inputs.ok()) return ReportFailure(inputs.status(), opt.json);
  // Resolve positional bindings to names once, so both sides and the report agree.
  if (auto checked = (*ref)->Check(inputs->bindings); !checked.ok()) return ReportFailure(checked.status(), opt.json);
  if (opt.per_node) return ComparePerNode(**got, **ref, *inputs, names, opt);
  if (opt.repeat > 0) {
    RepeatRequest request{opt.repeat, opt.rtol,      opt.atol, opt.json, opt.deterministic, names,
                          Header(names, opt) + InputsText(*inputs), HeaderJson(names, opt, *inputs)};
    return CompareRepeated(**got, **ref, inputs->bindings, request);
  }
  return CompareOutputs(**got, **ref, *inputs, names, opt);
}

}  // namespace

Command AddCompareCommand(CLI::App& parent) {
  auto opt = std::make_shared<CompareOptions>();
  CLI::App* sub = parent.add_subcommand(
      "compare",
      "Run a model on two backends with the same inputs and compare the results element-wise in float64:\n"
      "an element passes when |got - ref| <= atol + rtol*|ref| (integers and bool exactly; NaN only where\n"
      "the reference has NaN). The first backend of --backends is compared against the second.\n"
      "Inputs come from --input files, or are made up (seeded, so the same every time) for inputs whose\n"
      "shape is fully fixed: floats uniform in [-1,1], integers in [0,10).\n"
      "With --per-node every value the graph computes is compared in execution order, and the first one\n"
      "that diverges is reported with the node that produced it.\n"
      "With --repeat N the first backend runs N times on the same inputs: outputs that are not bitwise\n"
      "identical across repeats are reported as nondeterminism, and each repeat is compared with the\n"
      "reference. Disagreement that changes between repeats is how a faulty GPU shows itself.\n"
      "Examples:\n"
      "  vigil compare model.onnx                                (cuda against cpu, random inputs)\n"
      "  vigil compare model.onnx --input image=cat.npy --per-node\n"
      "  vigil compare model.onnx --backends cuda,cpu --tf32 --rtol 1e-2 --json\n"
      "  vigil compare model.onnx --repeat 20 --deterministic    (nondeterminism and hardware check)\n"
      "Exit codes: 0 every compared value within tolerance (and, with --repeat, every repeat identical),\n"
      "1 a value diverges, a repeat differs, or a diagnosed problem\n"
      "(model, input or backend), 2 usage error, 3 internal error.");
  sub->add_option("MODEL", opt->model_path, "ONNX model file (.onnx)")->required();
  sub->add_option("--backends", opt->backends,
                  "GOT,REFERENCE: two of cpu and cuda (default cuda,cpu); the first is compared against the second")
      ->check(CLI::Validator(
          [](std::string& value) { return SplitBackends(value).second; }, "GOT,REF", "backend pair"));
  AddInputFilesOption(sub, opt->inputs);
  sub->add_flag("--per-node", opt->per_node,
                "compare every intermediate value in execution order and report the first that diverges");
  sub->add_option("--repeat", opt->repeat,
                  "run the first backend N times on the same inputs; report nondeterminism (outputs not bitwise "
                  "identical) and disagreement with the reference per repeat")
      ->check(CLI::Range(1, 100000));
  sub->add_option("--rtol", opt->rtol, "relative tolerance (default 1e-3)");
  sub->add_option("--atol", opt->atol, "absolute tolerance (default 1e-5)");
  sub->add_flag("--tf32", opt->tf32, "for the cuda side: let float32 convolutions and products use TF32");
  sub->add_flag("--no-tf32x3", opt->no_tf32x3,
                "for the cuda side: every float32 matrix product on CUDA cores (none as 3xTF32; docs/cuda.md)");
  sub->add_flag("--tf32x3-convs", opt->tf32x3_convs,
                "for the cuda side: float32 convolutions as 3xTF32, channels-last (docs/cuda.md, Numerics)");
  sub->add_flag("--deterministic", opt->deterministic, "for the cuda side: only deterministic algorithms");
  sub->add_option("--layout", opt->layout,
                  "for the cuda side: auto (2D convolutions run channels-last) or nchw (as the model says)")
      ->check(CLI::IsMember({"auto", "nchw"}));
  sub->add_flag("--no-fallback", opt->no_fallback,
                "for the cuda side: fail at load when a node cannot run on CUDA instead of running it on the CPU");
  sub->add_option("--gpu-mem-limit", opt->gpu_mem_limit,
                  "for the cuda side: refuse a run whose planned device memory exceeds this (512M, 2G)")
      ->check(ByteSizeValidator());
  sub->add_option("--device", opt->device, "for the cuda side: the CUDA device ordinal (default 0)")
      ->check(CLI::NonNegativeNumber);
  sub->add_flag("--json", opt->json, "print JSON instead of text (errors too, as {\"ok\":false,...})");
  return {sub, [opt] { return RunCompare(*opt); }};
}

}  // namespace vigil::cli
