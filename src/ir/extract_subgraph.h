// Cuts a set of nodes out of a model as a standalone, valid model: the pass
// behind `vigil reduce`, which writes each candidate subgraph as an ONNX file
// fed with values recorded from a run of the whole model.
#pragma once

#include <cstddef>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "ir/graph.h"

namespace vigil::ir {

// The model made of the main graph's nodes `node_indices` (kept in the order
// given, which should be an execution order):
//  - every value they read (inputs, and outer-scope names used inside their
//    subgraph attributes) that none of them produces becomes a graph input,
//    unless it is an initializer of the original, which is kept; unused
//    initializers are dropped;
//  - graph outputs are the values they produce that the original lists as
//    graph outputs or that a node outside the set reads; when there are none,
//    the last node's outputs;
//  - value_info keeps only entries for values produced inside the set;
//  - opset imports, functions and model metadata are kept.
// Types of new inputs and outputs come from `types` (value name -> type, e.g.
// taken from a recorded run), else from the original's declarations. An
// input whose type is known from neither is an error; an output may stay
// untyped. Fails on an empty set or an index out of range.
Result<Model> ExtractSubgraph(const Model& model, const std::vector<size_t>& node_indices,
                              const std::unordered_map<std::string, TypeInfo>& types);

// Names used inside `node`'s subgraph attributes that those subgraphs do not
// define: the values the node reads implicitly from its enclosing graph.
std::vector<std::string> ImplicitInputs(const Node& node);

}  // namespace vigil::ir
