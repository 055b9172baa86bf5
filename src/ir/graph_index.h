// What the fusion passes ask of a graph before they rewrite it: which values
// are constants (initializers that are not also graph inputs, since those can
// be overridden at run time), who reads each value, and which values are
// graph outputs.
#pragma once

#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "ir/graph.h"

namespace vigil::ir {

struct GraphIndex {
  std::unordered_map<std::string, const Tensor*> constants;
  std::unordered_map<std::string, std::vector<size_t>> consumers;  // value -> reading node indices
  std::unordered_set<std::string> outputs;
};

// The index of `g` as it is now (pointers into `g`: rebuild after changing it).
GraphIndex IndexGraph(const Graph& g);

}  // namespace vigil::ir
