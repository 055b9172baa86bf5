// `vigil reduce MODEL --check "CMD {model} {inputs}" [--fail-regex RE]
// [--input NAME=FILE ...] [--output OUT.onnx] [--timeout S] [--max-checks N]
// [--keep-temp] [--json]`: shrinks a model for which a check command fails
// to the smallest subgraph for which it still fails (search in
// reduce_search.h), each candidate fed with values recorded from a CPU run of
// the whole model (value_recorder.h). `--first-divergent` is in
// reduce_divergent.cpp.
#include <cstdio>
#include <filesystem>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/check_command.h"
#include "cli/tooling.h"
#include "cli/random_inputs.h"
#include "cli/reduce_output.h"
#include "cli/reduce_search.h"
#include "cli/value_recorder.h"
#include "ir/extract_subgraph.h"
#include "ir/validate.h"
#include "onnx/reader.h"

namespace vigil::cli {

int RunReduceFirstDivergent(const ReduceOptions& opt);  // reduce_divergent.cpp

namespace {

namespace fs = std::filesystem;

// The model's required inputs, named: from --input files, or made up.
Result<InputFiles> ResolveInputs(const ir::Model& model, const std::vector<std::string>& specs) {
  runtime::ModelInputs model_inputs = runtime::ListModelInputs(model.graph);
  if (specs.empty()) return GenerateRandomInputs(model_inputs);
  VIGIL_ASSIGN_OR_RETURN(InputFiles files, ReadInputFiles(specs));
  VIGIL_RETURN_IF_ERROR(runtime::ValidateInputs(model_inputs, files.bindings).status());
  return files;
}

// Everything one reduction keeps track of.
struct Reduction {
  explicit Reduction(const ReduceOptions& o) : opt(o), spec{o.check, o.fail_regex, o.timeout_s} {}
  const ReduceOptions& opt;
  CheckSpec spec;
  ir::Model model;
  std::vector<size_t> order;
  RecordedValues recorded;
  std::string temp_dir;
  int checks = 0;
  std::optional<CheckOutcome> whole_outcome;  // the first check, for "nothing to reduce"
  nlohmann::json steps = nlohmann::json::array();

  std::vector<size_t> Indices(const NodeSet& positions) const {
    std::vector<size_t> indices;
    for (size_t p : positions) indices.push_back(order[p]);
    return indices;
  }

  // Writes the candidate and runs the check on it; a candidate that cannot be
  // built counts as passing (it cannot show the failure).
  bool Fails(const NodeSet& positions) {
    const int number = ++checks;
    const std::string dir = fmt::format("{}/step-{}", temp_dir, number);
    nlohmann::json step = {{"step", number}, {"nodes", DescribeNodeSet(positions)}, {"count", positions.size()}};
    auto sub = ir::ExtractSubgraph(model, Indices(positions), recorded.types);
    auto written = sub.ok() ? WriteSubgraph(*sub, recorded.values, dir + "/model.onnx", dir + "/inputs")
                            : Result<WrittenSubgraph>(sub.status());
    bool fails = false;
    if (!written.ok()) {
      std::fprintf(stderr, "[%d] nodes %s: cannot be built, counted as passing: %s\n", number,
                   DescribeNodeSet(positions).c_str(), written.status().summary().c_str());
      step["fails"] = false;
      step["error"] = written.status().summary();
    } else {
      CheckOutcome o = RunCheck(spec, ExpandCheck(spec.command, written->model_path, written->inputs, dir));
      if (number == 1) whole_outcome = o;
      fails = o.fails;
      std::fprintf(stderr, "[%d] nodes %s: %s (%s, %.1f s)\n", number, DescribeNodeSet(positions).c_str(),
                   fails ? "fails" : "passes", o.how.c_str(), o.seconds);
      step["fails"] = fails;
      step["how"] = o.how;
      step["seconds"] = o.seconds;
    }
    steps.push_back(step);
    if (!opt.keep_temp) {
      std::error_code ec;
      fs::remove_all(dir, ec);
    }
    return fails;
  }
};

Status NothingToReduce(const Reduction& r) {
  Status s = InvalidInputError("nothing to reduce: the check passes on the whole model");
  if (r.whole_outcome) {
    s.WithFact("check result", r.whole_outcome->how);
    std::string tail = r.whole_outcome->output.substr(r.whole_outcome->output.size() > 2000
                                                          ? r.whole_outcome->output.size() - 2000
                                                          : 0);
    if (!tail.empty()) s.WithFact("check output (tail)", tail);
  }
  return s.WithFact("check", r.spec.command)
      .WithCause("the check command does not fail on this model with these inputs",
                 r.spec.fail_regex.empty() ? "it exited 0" : "its output does not match --fail-regex")
      .WithFix("run the check by hand on the model to see that it fails; give the inputs it fails with "
               "(--input), the environment it needs, or a --fail-regex that matches its output");
}

void PrintRecording(const Reduction& r) {
  std::fprintf(stderr, "reduce: values recorded %s\n", r.recorded.method.c_str());
  for (const auto& [k, why] : r.recorded.failed_nodes) {
    std::fprintf(stderr, "reduce: the recording could not run %s: %s\n", r.model.graph.nodes[k].Describe(k).c_str(),
                 why.c_str());
  }
}

nlohmann::json RecordingJson(const Reduction& r) {
  nlohmann::json failed = nlohmann::json::array();
  for (const auto& [k, why] : r.recorded.failed_nodes) {
    const ir::Node& n = r.model.graph.nodes[k];
    failed.push_back({{"index", k}, {"op_type", n.op_type}, {"name", n.name}, {"why", why}});
  }
  return {{"method", r.recorded.method}, {"failed_nodes", failed}};
}

// Writes the smallest failing subgraph to the output and reports it.
int Finish(Reduction& r, const ReduceSearchResult& result) {
  const std::string out = r.opt.output.empty() ? DefaultReducedPath(r.opt.model_path) : r.opt.output;
  const std::vector<size_t> indices = r.Indices(result.nodes);
  auto sub = ir::ExtractSubgraph(r.model, indices, r.recorded.types);
  if (!sub.ok()) return ReportFailure(sub.status(), r.opt.json);
  auto written = WriteSubgraph(*sub, r.recorded.values, out, InputsDirFor(out));
  if (!written.ok()) return ReportFailure(written.status(), r.opt.json);
  std::string out_dir = fs::path(out).parent_path().string();
  const std::string reproduce = ExpandCheck(r.spec.command, out, written->inputs, out_dir.empty() ? "." : out_dir);
  if (r.opt.json) {
    nlohmann::json j = {{"ok", true},
                        {"model", r.opt.model_path},
                        {"check", r.spec.command},
                        {"nodes_in_model", r.order.size()},
                        {"recording", RecordingJson(r)},
                        {"steps", r.steps},
                        {"budget_exhausted", result.budget_exhausted},
                        {"reduced", SubgraphJson(*sub, indices, *written)},
                        {"reproduce", reproduce}};
    std::printf("%s\n", j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    return kExitOk;
  }
  std::string text = fmt::format("reduced {} to {} of its {} nodes in {} checks{}\n", r.opt.model_path,
                                 indices.size(), r.order.size(), r.checks,
                                 result.budget_exhausted ? " (stopped at --max-checks: it may shrink further)" : "");
  text += fmt::format("wrote {} and its inputs in {}/\n", out, InputsDirFor(out));
  text += DescribeSubgraph(*sub, indices, *written);
  if (!written->made_up.empty()) {
    text += "note: inputs marked 'not recorded' depend on a node the recording could not run; they hold random "
            "values of the inferred type\n";
  }
  text += fmt::format("reproduce:\n  {}\n", reproduce);
  std::fwrite(text.data(), 1, text.size(), stdout);
  return kExitOk;
}

int RunReduceCheck(const ReduceOptions& opt) {
  Reduction r(opt);
  if (Status s = ValidateCheckSpec(r.spec); !s.ok()) {
    std::fprintf(stderr, "vigil reduce: %s\n", s.summary().c_str());
    for (const std::string& fix : s.diagnosis().fixes) std::fprintf(stderr, "  fix: %s\n", fix.c_str());
    return kExitUsage;
  }
  auto model = onnx::ReadModel(opt.model_path);
  if (!model.ok()) return ReportFailure(model.status(), opt.json);
  r.model = std::move(model).value();
  if (Status s = ir::ValidateModel(r.model); !s.ok()) return ReportFailure(s.WithFact("model", opt.model_path), opt.json);
  auto order = ir::TopologicalOrder(r.model.graph);
  if (!order.ok()) return ReportFailure(order.status(), opt.json);
  r.order = std::move(order).value();
  if (r.order.empty()) return ReportFailure(InvalidInputError("nothing to reduce: the model has no nodes"), opt.json);
  auto inputs = ResolveInputs(r.model, opt.inputs);
  if (!inputs.ok()) return ReportFailure(inputs.status(), opt.json);
  auto temp = MakeTempDir("vigil-reduce");
  if (!temp.ok()) return ReportFailure(temp.status(), opt.json);
  r.temp_dir = *temp;
  fs::create_directories(r.temp_dir + "/record");

  std::fprintf(stderr, "reduce: recording every value of one CPU run of %s (%zu nodes)\n", opt.model_path.c_str(),
               r.order.size());
  auto recorded = RecordValues(r.model, r.order, inputs->bindings,
                               {r.temp_dir + "/record", static_cast<int>(opt.timeout_s * 1000 * 4)});
  if (!recorded.ok()) return ReportFailure(recorded.status(), opt.json);
  r.recorded = std::move(recorded).value();
  PrintRecording(r);

  ReduceSearchOptions search;
  search.max_checks = opt.max_checks;
  ReduceSearchResult result = ReduceSearch(r.order.size(), [&](const NodeSet& s) { return r.Fails(s); }, search);
  int code = result.whole_fails ? Finish(r, result) : ReportFailure(NothingToReduce(r), opt.json);
  if (opt.keep_temp) {
    std::fprintf(stderr, "reduce: candidates kept in %s\n", r.temp_dir.c_str());
  } else {
    std::error_code ec;
    fs::remove_all(r.temp_dir, ec);
  }
  return code;
}

}  // namespace

Command AddReduceCommand(CLI::App& parent) {
  auto opt = std::make_shared<ReduceOptions>();
  CLI::App* sub = parent.add_subcommand(
      "reduce",
      "Shrink a model on which a check command fails to the smallest subgraph on which it still fails,\n"
      "and write that subgraph as a valid ONNX model with its inputs.\n"
      "First every intermediate value of one CPU run of the whole model is recorded (in child processes,\n"
      "so a node that crashes cannot take vigil down). Each candidate subgraph (nodes in execution order)\n"
      "is written as model.onnx with inputs/NAME.npy holding the recorded values of the values it cuts\n"
      "off, and CMD is run with /bin/sh -c after replacing {model} (the candidate's path), {inputs}\n"
      "(--input 'NAME=PATH' for each of its inputs) and {dir} (its directory). The check fails when CMD\n"
      "exits non-zero, dies of a signal or times out; with --fail-regex, when its output matches RE.\n"
      "The search: binary search for the shortest failing prefix, then for the latest start, then single\n"
      "nodes are dropped while it still fails (until --max-checks checks have run).\n"
      "With --first-divergent there is no check: the model runs on two backends (--backends, as in\n"
      "compare --per-node), and the first node whose output diverges is written alone, fed with the\n"
      "reference backend's values, and re-run on both backends to confirm.\n"
      "Examples:\n"
      "  vigil reduce model.onnx --check \"vigil run {model} {inputs} --backend cuda\"\n"
      "  vigil reduce model.onnx --check \"vigil run {model} {inputs}\" --fail-regex \"CUDNN_STATUS_\"\n"
      "  vigil reduce model.onnx --first-divergent --backends cuda,cpu --input image=cat.npy\n"
      "Exit codes: 0 a reduced model was written, 1 nothing to reduce (the check passes on the whole\n"
      "model, or no node diverges) or a diagnosed problem, 2 usage error, 3 internal error.");
  sub->add_option("MODEL", opt->model_path, "ONNX model file (.onnx)")->required();
  sub->add_option("--check", opt->check, "the command that fails on the model; must contain {model}");
  sub->add_option("--fail-regex", opt->fail_regex,
                  "the check fails when its stdout+stderr matches this (ECMAScript) regular expression, "
                  "whatever its exit status");
  AddInputFilesOption(sub, opt->inputs);
  sub->add_option("--output,-o", opt->output,
                  "where to write the reduced model (default: MODEL's stem + .reduced.onnx in the current "
                  "directory); its inputs go to OUT_inputs/NAME.npy");
  sub->add_option("--timeout", opt->timeout_s, "seconds per check before its process group is killed (default 60)");
  sub->add_option("--max-checks", opt->max_checks,
                  "stop dropping single nodes once this many checks have run (default 200); the binary searches "
                  "always finish")
      ->check(CLI::PositiveNumber);
  sub->add_flag("--keep-temp", opt->keep_temp, "keep every candidate's directory (printed at the end)");
  sub->add_flag("--first-divergent", opt->first_divergent,
                "no check command: find the first node whose output diverges between --backends and write it alone");
  sub->add_option("--backends", opt->backends, "with --first-divergent: GOT,REFERENCE (default cuda,cpu)");
  sub->add_option("--rtol", opt->rtol, "with --first-divergent: relative tolerance (default 1e-3)");
  sub->add_option("--atol", opt->atol, "with --first-divergent: absolute tolerance (default 1e-5)");
  sub->add_flag("--json", opt->json, "print JSON on stdout (progress stays on stderr)");
  return {sub, [opt] {
            if (opt->first_divergent && !opt->check.empty()) {
              std::fprintf(stderr, "vigil reduce: --first-divergent takes no --check; use one or the other\n");
              return kExitUsage;
            }
            return opt->first_divergent ? RunReduceFirstDivergent(*opt) : RunReduceCheck(*opt);
          }};
}

}  // namespace vigil::cli
