// Common-subexpression elimination: a node that computes what an earlier
// node already computed (the same op, the same attributes, the same inputs)
// is dropped and its readers read the earlier node's outputs. Exporters
// repeat work per layer: torch.onnx writes BERT's attention mask as
// Where(mask, 0, -inf) once in each of its 12 layers, each a full
// [B, 1, S, S] write.
// Pure graph rewriting: the session decides when to run it.
#pragma once

#include <cstddef>

#include "base/status.h"
#include "ir/graph.h"

namespace vigil::ir {

// Rewrites the main graph: walking the nodes in topological order, a node
// whose domain, op, attributes and inputs equal an earlier node's is dropped
// and every read of its outputs reads the earlier node's instead. Inputs are
// equal when they are the same value, or constant initializers (not graph
// inputs) of at most 256 bytes with the same dtype, dims and bytes. Kept:
// nodes with subgraphs, random generators (RandomNormal, RandomUniform,
// their Like forms, Multinomial, Bernoulli) and Dropout; a node with a
// tensor attribute over 256 bytes; a node whose output is a graph output or
// is read inside a subgraph; nodes with no outputs. Returns the number of
// nodes dropped.
Result<size_t> EliminateCommonSubexpressions(Model& model);

}  // namespace vigil::ir
