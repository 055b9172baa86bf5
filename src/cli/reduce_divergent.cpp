// `vigil reduce MODEL --first-divergent [--backends cuda,cpu]`: the first
// node whose output diverges between two backends (compare --per-node's
// search), written alone as a model fed with the reference's values, and
// re-run alone on both backends to confirm that it diverges by itself.
#include <cstdio>
#include <filesystem>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/check_command.h"
#include "cli/tooling.h"
#include "cli/per_node_compare.h"
#include "cli/random_inputs.h"
#include "cli/reduce_output.h"
#include "cli/value_recorder.h"
#include "ir/extract_subgraph.h"

namespace vigil::cli {
namespace {

namespace fs = std::filesystem;

Result<std::vector<std::string>> BackendPair(const std::string& text) {
  auto comma = text.find(',');
  std::vector<std::string> names;
  if (comma != std::string::npos) names = {text.substr(0, comma), text.substr(comma + 1)};
  if (names.size() != 2 || names[1].find(',') != std::string::npos) {
    return InvalidInputError("--backends '{}' is not GOT,REFERENCE (e.g. cuda,cpu)", text);
  }
  for (const std::string& n : names) {
    if (n != "cpu" && n != "cuda") return InvalidInputError("unknown backend '{}' in --backends '{}'", n, text);
  }
  return names;
}

// The node alone, re-run on both backends with the written inputs: does it
// still diverge?
struct Confirmation {
  bool diverges = false;
  std::vector<ValueComparison> outputs;
};

Result<Confirmation> Confirm(const WrittenSubgraph& written, const std::vector<std::string>& names, double rtol,
                             double atol) {
  VIGIL_ASSIGN_OR_RETURN(auto got, LoadSession(written.model_path, names[0]));
  VIGIL_ASSIGN_OR_RETURN(auto ref, LoadSession(written.model_path, names[1]));
  std::vector<std::string> specs;
  for (const auto& [name, path] : written.inputs) specs.push_back(name + "=" + path);
  VIGIL_ASSIGN_OR_RETURN(InputFiles in, ReadInputFiles(specs));
  auto got_outs = got->Run(in.bindings);
  if (!got_outs.ok()) return OnSide(got_outs.status(), names[0], "got");
  auto ref_outs = ref->Run(in.bindings);
  if (!ref_outs.ok()) return OnSide(ref_outs.status(), names[1], "reference");
  Confirmation c;
  for (size_t i = 0; i < ref_outs->size() && i < got_outs->size(); ++i) {
    c.outputs.push_back(CompareValue((*ref_outs)[i].name, (*got_outs)[i].tensor, (*ref_outs)[i].tensor, rtol, atol));
    c.diverges |= !c.outputs.back().cmp.ok();
  }
  return c;
}

Status NoDivergence(const FirstDivergence& found, const std::vector<std::string>& names) {
  return InvalidInputError("nothing to reduce: no value diverges between {} and {}", names[0], names[1])
      .WithFact("values compared", std::to_string(found.compared))
      .WithFix("loosen nothing: the backends agree within tolerance on these inputs; try other inputs (--input) "
               "or tighter --rtol/--atol");
}

}  // namespace

int RunReduceFirstDivergent(const ReduceOptions& opt) {
  auto names = BackendPair(opt.backends);
  if (!names.ok()) {
    std::fprintf(stderr, "vigil reduce: %s\n", names.status().summary().c_str());
    return kExitUsage;
  }
  auto got = LoadSession(opt.model_path, (*names)[0]);
  if (!got.ok()) return ReportFailure(OnSide(got.status(), (*names)[0], "got"), opt.json);
  auto ref = LoadSession(opt.model_path, (*names)[1]);
  if (!ref.ok()) return ReportFailure(OnSide(ref.status(), (*names)[1], "reference"), opt.json);
  auto inputs = opt.inputs.empty() ? GenerateRandomInputs((*ref)->inputs()) : ReadInputFiles(opt.inputs);
  if (!inputs.ok()) return ReportFailure(inputs.status(), opt.json);
  if (auto checked = (*ref)->Check(inputs->bindings); !checked.ok()) return ReportFailure(checked.status(), opt.json);
  std::fprintf(stderr, "reduce: comparing every value of %s against %s\n", (*names)[0].c_str(), (*names)[1].c_str());
  auto found = FindFirstDivergence(**got, **ref, inputs->bindings, *names, opt.rtol, opt.atol);
  if (!found.ok()) return ReportFailure(found.status(), opt.json);
  if (!found->value) return ReportFailure(NoDivergence(*found, *names), opt.json);
  if (!found->node_index) {
    return ReportFailure(InvalidInputError("the first diverging value '{}' is not produced by a node, so there is "
                                           "no node to cut out",
                                           found->value->name),
                         opt.json);
  }

  // The reference's values feed the node; its model is the one after
  // load-time folding, whose node indices the search reported.
  const ir::Model& model = (*ref)->model();
  const size_t k = *found->node_index;
  std::unordered_map<std::string, runtime::Tensor> values;
  std::unordered_map<std::string, ir::TypeInfo> types;
  for (const runtime::NamedTensor& v : found->ref_values) values[v.name] = v.tensor;
  for (const runtime::InputBinding& b : inputs->bindings) {
    values[b.name] = runtime::Tensor::View(b.dtype, b.shape, const_cast<void*>(b.data));
  }
  for (const auto& [name, t] : values) types[name] = TypeOfTensor(t);
  auto sub = ir::ExtractSubgraph(model, {k}, types);
  if (!sub.ok()) return ReportFailure(sub.status(), opt.json);
  const std::string out = opt.output.empty() ? DefaultReducedPath(opt.model_path) : opt.output;
  auto written = WriteSubgraph(*sub, values, out, InputsDirFor(out));
  if (!written.ok()) return ReportFailure(written.status(), opt.json);
  std::fprintf(stderr, "reduce: re-running %s alone on both backends\n", model.graph.nodes[k].Describe(k).c_str());
  auto confirmed = Confirm(*written, *names, opt.rtol, opt.atol);
  if (!confirmed.ok()) return ReportFailure(confirmed.status(), opt.json);

  std::string reproduce = fmt::format("vigil compare {} --backends {},{} --rtol {:g} --atol {:g}", ShellQuote(out),
                                      (*names)[0], (*names)[1], opt.rtol, opt.atol);
  for (const auto& [name, path] : written->inputs) reproduce += " --input " + ShellQuote(name + "=" + path);
  if (opt.json) {
    nlohmann::json outs = nlohmann::json::array();
    for (const ValueComparison& v : confirmed->outputs) outs.push_back(ValueJson(v));
    nlohmann::json j = {{"ok", true},
                        {"model", opt.model_path},
                        {"got", (*names)[0]},
                        {"reference", (*names)[1]},
                        {"first_divergence", ValueJson(*found->value)},
                        {"values_compared", found->compared},
                        {"reduced", SubgraphJson(*sub, {k}, *written)},
                        {"alone_diverges", confirmed->diverges},
                        {"alone_outputs", outs},
                        {"reproduce", reproduce}};
    std::printf("%s\n", j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    return kExitOk;
  }
  std::string text = fmt::format("first diverging value '{}' ({}), after {} value(s) that match\n",
                                 found->value->name, Detail(*found->value), found->compared - 1);
  text += fmt::format("wrote {} (that node alone, fed with {}'s values) and its inputs in {}/\n", out, (*names)[1],
                      InputsDirFor(out));
  text += DescribeSubgraph(*sub, {k}, *written);
  if (confirmed->diverges) {
    text += fmt::format("confirmed: alone, the node still diverges between {} and {}:\n", (*names)[0], (*names)[1]);
  } else {
    text += fmt::format("not confirmed: alone, with these inputs, the node agrees between {} and {}; the divergence "
                        "needs more of the graph (or is not repeatable):\n",
                        (*names)[0], (*names)[1]);
  }
  for (const ValueComparison& v : confirmed->outputs) text += fmt::format("  {:<20} {}\n", v.name, Detail(v));
  text += fmt::format("reproduce:\n  {}\n", reproduce);
  std::fwrite(text.data(), 1, text.size(), stdout);
  return kExitOk;
}

}  // namespace vigil::cli
