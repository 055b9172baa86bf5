#include "ir/model_stats.h"

namespace vigil::ir {
namespace {

void AddTensor(const Tensor& t, ModelStats& stats) {
  auto count = t.ElementCount();
  if (!count) return;
  stats.parameters += *count;
  if (t.dtype == DataType::kString) {
    for (const std::string& s : t.strings) stats.parameter_bytes += s.size();
  } else if (auto bytes = DataTypeStorageBytes(t.dtype, *count)) {
    stats.parameter_bytes += *bytes;
  }
}

void CountGraph(const Graph& g, ModelStats& stats, bool top_level) {
  for (const Tensor& t : g.initializers) AddTensor(t, stats);
  for (const SparseTensor& t : g.sparse_initializers) AddTensor(t.values, stats);
  for (const Node& n : g.nodes) {
    ++stats.nodes_including_subgraphs;
    if (top_level) {
      ++stats.nodes;
      bool default_domain = n.domain.empty() || n.domain == "ai.onnx";
      ++stats.ops[default_domain ? n.op_type : n.domain + "::" + n.op_type];
    }
    for (const Attribute& a : n.attributes) {
      if (a.g) {
        ++stats.subgraphs;
        CountGraph(*a.g, stats, false);
      }
      for (const auto& sub : a.graphs) {
        if (!sub) continue;
        ++stats.subgraphs;
        CountGraph(*sub, stats, false);
      }
    }
  }
}

}  // namespace

ModelStats ComputeStats(const Model& model) {
  ModelStats stats;
  CountGraph(model.graph, stats, true);
  return stats;
}

}  // namespace vigil::ir
