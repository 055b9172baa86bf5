// `vigil inspect MODEL [--json] [--shapes] [--backend cuda]`: what a model
// takes, gives and contains, and with --backend where each node would run.
#include <cstdio>
#include <map>
#include <optional>
#include <string>

#include "cli/command.h"
#include "cli/model_json.h"
#include "cli/node_shapes.h"
#include "ir/model_stats.h"
#include "ir/validate.h"
#include "onnx/reader.h"

namespace vigil::cli {
namespace {

struct InspectOptions {
  std::string model_path;
  bool json = false;
  bool shapes = false;
  std::string backend;  // empty: no partition
};

// Where each node runs on `backend` (after load-time folding), with the
// reason for every node the preferred backend does not take.
struct Partition {
  std::string backend;
  std::map<std::string, size_t> nodes_per_backend;
  std::vector<runtime::NodePlacement> fallbacks;
};

Result<Partition> PartitionOn(const std::string& model_path, const std::string& backend) {
  BackendChoice choice;
  choice.backend = backend;
  VIGIL_ASSIGN_OR_RETURN(auto session, LoadSession(model_path, choice));
  Partition p;
  p.backend = backend;
  for (const runtime::NodePlacement& n : session->placement()) {
    ++p.nodes_per_backend[n.backend];
    if (!n.fallback_reason.empty()) p.fallbacks.push_back(n);
  }
  return p;
}

std::string PartitionText(const Partition& p) {
  std::string out = fmt::format("partition on {} (after constant folding):", p.backend);
  for (const auto& [b, n] : p.nodes_per_backend) out += fmt::format(" {} {}", n, b);
  out += "\n";
  for (const runtime::NodePlacement& n : p.fallbacks) {
    out += fmt::format("  {:<40} -> {}: {}\n", n.node, n.backend, n.fallback_reason);
  }
  return out;
}

nlohmann::json PartitionJson(const Partition& p) {
  nlohmann::json fallbacks = nlohmann::json::array();
  for (const runtime::NodePlacement& n : p.fallbacks) {
    fallbacks.push_back({{"node", n.node}, {"backend", n.backend}, {"reason", n.fallback_reason}});
  }
  return {{"backend", p.backend}, {"nodes_per_backend", p.nodes_per_backend}, {"fallbacks", fallbacks}};
}

std::string HumanBytes(uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  return u == 0 ? fmt::format("{} B", bytes) : fmt::format("{:.1f} {}", v, units[u]);
}

std::string ValueLine(const ir::ValueInfo& vi) {
  return fmt::format("  {:<24} {}\n", vi.name, vi.has_type ? ir::TypeToString(vi.type) : std::string("(no type)"));
}

uint64_t TotalFlops(const std::vector<NodeShapes>& shapes) {
  uint64_t total = 0;
  for (const NodeShapes& s : shapes) total += s.flops;
  return total;
}

void PrintText(const ir::Model& m, const ir::ModelStats& stats, const std::vector<NodeShapes>& shapes,
               bool with_shapes) {
  std::string out = fmt::format("model:      {}\n", m.path);
  out += fmt::format("ir_version: {}\n", m.ir_version);
  out += fmt::format("producer:   {} {}\n", m.producer_name, m.producer_version);
  std::string opsets;
  for (const ir::OpsetImport& o : m.opset_imports) {
    opsets += fmt::format("{}{} {}", opsets.empty() ? "" : ", ", o.domain.empty() ? "ai.onnx" : o.domain, o.version);
  }
  out += fmt::format("opsets:     {}\n", opsets.empty() ? "none" : opsets);
  out += fmt::format("inputs ({}):\n", m.graph.inputs.size());
  for (const ir::ValueInfo& vi : m.graph.inputs) out += ValueLine(vi);
  out += fmt::format("outputs ({}):\n", m.graph.outputs.size());
  for (const ir::ValueInfo& vi : m.graph.outputs) out += ValueLine(vi);
  out += fmt::format("nodes:      {}", stats.nodes);
  if (stats.subgraphs) out += fmt::format(" (+{} in {} subgraphs)", stats.nodes_including_subgraphs - stats.nodes, stats.subgraphs);
  out += "\nops:\n";
  for (const auto& [op, count] : stats.ops) out += fmt::format("  {:<24} {}\n", op, count);
  out += fmt::format("parameters: {} ({})\n", stats.parameters, HumanBytes(stats.parameter_bytes));
  if (!m.functions.empty()) out += fmt::format("functions:  {}\n", m.functions.size());
  if (with_shapes) {
    out += "node shapes (execution order):\n";
    for (const NodeShapes& s : shapes) {
      out += fmt::format("  #{:<4} {:<32}", s.index, s.label);
      for (size_t i = 0; i < s.outputs.size(); ++i) out += fmt::format("{}{}", i ? ", " : "", s.outputs[i]);
      if (s.flops) out += fmt::format("  ({:.3g} FLOP)", static_cast<double>(s.flops));
      out += "\n";
    }
    out += fmt::format("FLOPs:      {:.4g} (Conv, ConvTranspose, Gemm, MatMul; 2 per multiply-add; symbolic dims = 1)\n",
                       static_cast<double>(TotalFlops(shapes)));
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
}

void PrintJson(const ir::Model& m, const ir::ModelStats& stats, const std::vector<NodeShapes>& shapes,
               bool with_shapes, const nlohmann::json& partition) {
  nlohmann::json j = ModelInterfaceJson(m);
  j["model"] = m.path;
  j["nodes"] = stats.nodes;
  j["nodes_including_subgraphs"] = stats.nodes_including_subgraphs;
  j["ops"] = stats.ops;
  j["parameters"] = stats.parameters;
  j["parameter_bytes"] = stats.parameter_bytes;
  j["functions"] = m.functions.size();
  if (with_shapes) {
    nlohmann::json nodes = nlohmann::json::array();
    for (const NodeShapes& s : shapes) {
      nodes.push_back({{"index", s.index}, {"node", s.label}, {"outputs", s.outputs}, {"flops", s.flops}});
    }
    j["node_shapes"] = nodes;
    j["flops"] = TotalFlops(shapes);
  }
  if (!partition.is_null()) j["partition"] = partition;
  std::string text = j.dump(2);
  std::fprintf(stdout, "%s\n", text.c_str());
}

int RunInspect(const InspectOptions& opt) {
  auto model = onnx::ReadModel(opt.model_path);
  if (!model.ok()) return ReportFailure(model.status(), opt.json);
  Status valid = ir::ValidateModel(*model);
  if (!valid.ok()) return ReportFailure(valid.WithFact("model", opt.model_path), opt.json);
  ir::ModelStats stats = ir::ComputeStats(*model);
  std::vector<NodeShapes> shapes;
  if (opt.shapes) {
    auto inferred = InferNodeShapes(*model);
    if (!inferred.ok()) return ReportFailure(inferred.status(), opt.json);
    shapes = std::move(*inferred);
  }
  std::optional<Partition> partition;
  if (!opt.backend.empty()) {
    auto p = PartitionOn(opt.model_path, opt.backend);
    if (!p.ok()) return ReportFailure(p.status(), opt.json);
    partition = std::move(p).value();
  }
  if (opt.json) {
    PrintJson(*model, stats, shapes, opt.shapes, partition ? PartitionJson(*partition) : nlohmann::json());
  } else {
    PrintText(*model, stats, shapes, opt.shapes);
    if (partition) std::fputs(PartitionText(*partition).c_str(), stdout);
  }
  return kExitOk;
}

}  // namespace

Command AddInspectCommand(CLI::App& parent) {
  auto opt = std::make_shared<InspectOptions>();
  CLI::App* sub = parent.add_subcommand(
      "inspect",
      "Describe a model: inputs and outputs (dtype, shape with symbolic dims), opsets, op counts and "
      "parameters. The model is read and validated; a malformed model gives exit 1 with a diagnosis.");
  sub->add_option("MODEL", opt->model_path, "ONNX model file (.onnx)")->required();
  sub->add_flag("--json", opt->json, "print JSON instead of text (errors too, as {\"ok\":false,...})");
  sub->add_flag("--shapes", opt->shapes,
                "also infer every node's output types (symbolic dims stay symbolic) and the FLOPs of Conv, "
                "ConvTranspose, Gemm and MatMul");
  sub->add_option("--backend", opt->backend,
                  "also show where each node would run on this backend (cpu or cuda): the node count per "
                  "backend and, for each node that falls back to the CPU, why")
      ->check(CLI::IsMember({"cpu", "cuda"}));
  return {sub, [opt] { return RunInspect(*opt); }};
}

}  // namespace vigil::cli
