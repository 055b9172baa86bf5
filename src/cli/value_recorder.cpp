#include "cli/value_recorder.h"

#include <cstring>
#include <optional>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "backends/cpu/cpu_backend.h"
#include "doctor/probe/forked_child.h"
#include "ir/extract_subgraph.h"
#include "runtime/session.h"
#include "runtime/tensor_file.h"
#include "runtime/type_inference.h"

namespace vigil::cli {
namespace {

// A child that dies again and again (one faulting node after another) is
// restarted at most this many times.
constexpr int kMaxChildren = 12;

std::string OneLine(const Status& s) {
  std::string text = s.summary();
  for (char& c : text) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return text;
}

// What a recording child does. It reports on its pipe, one line each:
//   value NODE SLOT FILE   output SLOT of node NODE is in FILE (.npy)
//   start NODE / end NODE  around running one node alone
//   fail NODE SUMMARY      that node returned an error
//   wholefail SUMMARY      the whole-model run returned an error
//   done
class RecordingChild {
 public:
  RecordingChild(const ir::Model& model, const std::vector<size_t>& order,
                 const std::vector<runtime::InputBinding>& inputs, const RecordedValues& known,
                 const std::set<size_t>& skip, const std::string& dir, int fd)
      : model_(model), order_(order), inputs_(inputs), values_(known.values), skip_(skip), dir_(dir), fd_(fd) {
    for (size_t i = 0; i < model.graph.nodes.size(); ++i) {
      const auto& outs = model.graph.nodes[i].outputs;
      for (size_t s = 0; s < outs.size(); ++s) {
        if (!outs[s].empty()) producer_.emplace(outs[s], std::make_pair(i, s));
      }
    }
    for (const ir::Tensor& t : model.graph.initializers) constants_.insert(t.name);
  }

  void RunWhole() {
    runtime::SessionOptions options;
    options.backends.push_back(cpu::MakeCpuBackend());
    auto session = runtime::Session::Create(model_, std::move(options));
    auto all = session.ok() ? (*session)->RunKeepingAll(inputs_) : Result<std::vector<runtime::NamedTensor>>(
                                                                       session.status());
    if (!all.ok()) {
      Say(fmt::format("wholefail {}\n", OneLine(all.status())));
      return;
    }
    for (const runtime::NamedTensor& v : *all) Keep(v.name, v.tensor);
  }

  void RunNodeByNode() {
    for (size_t k : order_) {
      if (skip_.count(k) || AllOutputsKnown(k) || !AllInputsKnown(k)) continue;
      Say(fmt::format("start {}\n", k));
      Status s = RunOne(k);
      Say(s.ok() ? fmt::format("end {}\n", k) : fmt::format("fail {} {}\n", k, OneLine(s)));
    }
    Say("done\n");
  }

 private:
  void Say(const std::string& line) { doctor::WriteAll(fd_, line); }

  bool Known(const std::string& name) const { return name.empty() || values_.count(name) || constants_.count(name); }

  bool AllOutputsKnown(size_t k) const {
    for (const std::string& out : model_.graph.nodes[k].outputs) {
      if (!Known(out)) return false;
    }
    return true;
  }

  bool AllInputsKnown(size_t k) const {
    const ir::Node& node = model_.graph.nodes[k];
    for (const std::string& in : node.inputs) {
      if (!Known(in)) return false;
    }
    for (const std::string& in : ir::ImplicitInputs(node)) {
      if (!Known(in)) return false;
    }
    return true;
  }

  // Writes a node output's value and tells the parent where it is.
  void Keep(const std::string& name, const runtime::Tensor& t) {
    auto p = producer_.find(name);
    if (p == producer_.end() || !t.on_host()) return;  // a graph input, or nothing to record
    std::string file = fmt::format("{}/v{}.npy", dir_, counter_++);
    if (!runtime::WriteNpy(file, t).ok()) return;
    values_[name] = t;
    Say(fmt::format("value {} {} {}\n", p->second.first, p->second.second, file));
  }

  // Node k alone, as a one-node model fed with the recorded values.
  Status RunOne(size_t k) {
    std::unordered_map<std::string, ir::TypeInfo> types;
    for (const auto& [name, t] : values_) types[name] = TypeOfTensor(t);
    VIGIL_ASSIGN_OR_RETURN(ir::Model sub, ir::ExtractSubgraph(model_, {k}, types));
    std::vector<runtime::InputBinding> bindings;
    for (const ir::ValueInfo& vi : sub.graph.inputs) {
      const runtime::Tensor& t = values_.at(vi.name);
      bindings.push_back({vi.name, t.dtype(), t.shape(), t.raw_data(), t.byte_size(), "recorded"});
    }
    runtime::SessionOptions options;
    options.backends.push_back(cpu::MakeCpuBackend());
    VIGIL_ASSIGN_OR_RETURN(auto session, runtime::Session::Create(std::move(sub), std::move(options)));
    VIGIL_ASSIGN_OR_RETURN(auto outs, session->Run(bindings));
    for (const runtime::NamedTensor& v : outs) Keep(v.name, v.tensor);
    return Status::Ok();
  }

  const ir::Model& model_;
  const std::vector<size_t>& order_;
  const std::vector<runtime::InputBinding>& inputs_;
  std::unordered_map<std::string, runtime::Tensor> values_;
  const std::set<size_t>& skip_;
  const std::string& dir_;
  int fd_;
  std::unordered_map<std::string, std::pair<size_t, size_t>> producer_;
  std::set<std::string> constants_;
  int counter_ = 0;
};

// What the parent learnt from one child's report.
struct ChildReport {
  bool done = false;
  std::optional<size_t> in_progress;  // a node started and not finished
  std::string whole_failure;
};

ChildReport ReadReport(const std::string& output, const ir::Model& model, RecordedValues& rec) {
  ChildReport report;
  std::istringstream lines(output);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream words(line);
    std::string verb;
    words >> verb;
    size_t node = 0, slot = 0;
    if (verb == "value") {
      std::string file;
      words >> node >> slot;
      std::getline(words >> std::ws, file);
      auto read = runtime::ReadNpy(file);
      if (read.ok() && node < model.graph.nodes.size() && slot < model.graph.nodes[node].outputs.size()) {
        rec.values[model.graph.nodes[node].outputs[slot]] = std::move(read->tensor);
      }
    } else if (verb == "start") {
      words >> node;
      report.in_progress = node;
    } else if (verb == "end") {
      report.in_progress.reset();
    } else if (verb == "fail") {
      words >> node;
      std::string why;
      std::getline(words >> std::ws, why);
      rec.failed_nodes[node] = "returned an error: " + why;
      report.in_progress.reset();
    } else if (verb == "wholefail") {
      std::getline(words >> std::ws, report.whole_failure);
    } else if (verb == "done") {
      report.done = true;
    }
  }
  return report;
}

std::string Death(const doctor::ChildOutcome& o) {
  if (o.timed_out) return "timed out";
  if (o.signal) return "died of " + doctor::SignalName(o.signal);
  return fmt::format("exited with code {}", o.exit_code);
}

// Types of the values the recording could not produce, from shape inference
// without evaluating anything (so that a faulting kernel cannot run here).
void AddInferredTypes(const ir::Model& model, const std::vector<size_t>& order,
                      const std::vector<runtime::InputBinding>& inputs, RecordedValues& rec) {
  for (const auto& [name, t] : rec.values) rec.types[name] = TypeOfTensor(t);
  std::map<std::string, ir::TypeInfo> input_types;
  for (const runtime::InputBinding& b : inputs) {
    input_types[b.name] = TypeOfTensor(runtime::Tensor::View(b.dtype, b.shape, nullptr));
  }
  auto inferred = runtime::InferGraph(model, order, input_types, runtime::FoldingPolicy{});
  if (!inferred.ok()) return;
  for (auto& [name, type] : inferred->types) rec.types.emplace(name, type);
}

}  // namespace

ir::TypeInfo TypeOfTensor(const runtime::Tensor& t) {
  ir::TypeInfo type;
  type.kind = ir::TypeInfo::Kind::kTensor;
  type.elem_type = t.dtype();
  type.shape.rank_known = true;
  for (int64_t d : t.shape()) type.shape.dims.push_back(ir::Dim::Known(d));
  return type;
}

Result<RecordedValues> RecordValues(const ir::Model& model, const std::vector<size_t>& order,
                                    const std::vector<runtime::InputBinding>& inputs, const RecordOptions& options) {
  RecordedValues rec;
  for (const runtime::InputBinding& b : inputs) {
    VIGIL_ASSIGN_OR_RETURN(runtime::Tensor t, runtime::Tensor::Allocate(b.dtype, b.shape));
    if (b.byte_size) std::memcpy(t.raw_data(), b.data, std::min(b.byte_size, t.byte_size()));
    rec.values[b.name] = std::move(t);
  }
  std::set<size_t> skip;
  bool whole = true;
  std::string whole_note;
  for (int child = 0; child < kMaxChildren; ++child) {
    doctor::ChildOutcome outcome = doctor::RunInForkedChild(
        [&](int fd) {
          RecordingChild body(model, order, inputs, rec, skip, options.dir, fd);
          if (whole) body.RunWhole();
          body.RunNodeByNode();
        },
        options.timeout_ms);
    ChildReport report = ReadReport(outcome.output, model, rec);
    if (whole && !report.whole_failure.empty()) whole_note = "it returned an error: " + report.whole_failure;
    if (report.done) break;
    for (const auto& [k, why] : rec.failed_nodes) skip.insert(k);
    if (report.in_progress) {
      rec.failed_nodes[*report.in_progress] = "killed the recording process: it " + Death(outcome);
      skip.insert(*report.in_progress);
    } else if (whole) {
      whole_note = "the process " + Death(outcome);
    } else {
      rec.method = "node by node (incomplete: a recording process " + Death(outcome) + " between nodes)";
      break;
    }
    whole = false;
    if (child == 0 && rec.values.size() == inputs.size() && outcome.exit_code == -1 && !outcome.signal &&
        !outcome.timed_out) {
      return EnvironmentError("cannot start a process to record the model's values: {}", outcome.output);
    }
  }
  if (rec.method.empty()) {
    rec.method = whole_note.empty() ? "the whole model on the CPU backend, in a child process"
                                    : "node by node on the CPU backend, in child processes (the whole-model run "
                                      "failed: " + whole_note + ")";
  }
  AddInferredTypes(model, order, inputs, rec);
  return rec;
}

}  // namespace vigil::cli
