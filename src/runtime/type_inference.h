// Shape inference over a whole graph, with constant folding: walks the nodes
// in execution order, runs each op's shape inference (src/ops), and evaluates
// nodes whose inputs are all known through a backend, so that shape
// subgraphs (Shape → Gather → Concat → Reshape) resolve to exact shapes.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "base/status.h"
#include "ir/graph.h"
#include "runtime/backend.h"
#include "runtime/tensor.h"

namespace vigil::runtime {

struct FoldingPolicy {
  const Backend* evaluator = nullptr;  // null: infer types only, fold nothing
  // Fold a node only when its outputs hold at most this many elements in all
  // (0: no limit).
  uint64_t max_output_elements = 0;
  // Leave DequantizeLinear nodes unfolded, so that a device session's QDQ
  // pass (ir/fuse_qdq.h) still sees the int8 weights behind them; the
  // session folds what the pass leaves afterwards.
  bool keep_dequantize = false;
};

struct InferredGraph {
  std::unordered_map<std::string, ir::TypeInfo> types;  // every value with a known type
  std::unordered_map<std::string, Tensor> values;        // every value with a known value
  std::unordered_set<size_t> folded_nodes;              // nodes whose outputs are all in `values`
};

// `input_types` overrides the declared types of graph inputs (concrete shapes
// at plan time); `order` is a topological order of model.graph.nodes.
// Fails naming the node when an op is not in the catalogue or its shape
// inference finds an inconsistency.
Result<InferredGraph> InferGraph(const ir::Model& model, const std::vector<size_t>& order,
                                 const std::map<std::string, ir::TypeInfo>& input_types, const FoldingPolicy& folding);

}  // namespace vigil::runtime
