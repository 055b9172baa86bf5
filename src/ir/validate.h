// Graph checks, the first of the three tiers of validation (graph, operator
// set-up, kernels). Errors name the graph, node and value concerned.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "base/status.h"
#include "ir/graph.h"

namespace vigil::ir {

// Checks the whole model, subgraphs and functions included:
//  - every node input is a graph input, an initializer, an outer-scope value
//    (for subgraphs) or the output of some node;
//  - every value has one producer (no duplicate outputs, no output that
//    redefines an input or initializer);
//  - the nodes form no cycle;
//  - every graph output is produced;
//  - every node's domain has an opset import;
//  - every declared dtype is known.
Status ValidateModel(const Model& model);

// Node indices in an order where producers come before consumers (stable: the
// file's order where it already is one). `outer_scope` lists names visible
// from enclosing graphs. Fails naming a node on a cycle or undefined input.
Result<std::vector<size_t>> TopologicalOrder(const Graph& graph,
                                             const std::vector<std::string>& outer_scope = {});

// For the rewriting passes, which mark nodes dead and append new ones: drops
// the nodes marked in `dead` (one flag per node) and sorts the rest so that
// producers come before consumers. Leaves `g` as it was on failure (a cycle).
Status RemoveDeadAndSort(Graph& g, const std::vector<bool>& dead);

}  // namespace vigil::ir
