// What the fusion passes ask of a graph before they rewrite it: which values
// are constants (initializers that are not also graph inputs, since those can
// be overridden at run time), who reads each value, and which values are
// graph outputs.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
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

// Whether `n` is the default domain's `op` with `inputs` inputs and one output.
bool IsDefaultOp(const Node& n, const char* op, size_t inputs);
// The index of the only node reading `value` when `value` is not a graph
// output, else -1.
long SoleConsumer(const GraphIndex& idx, const std::string& value);
// The value of a single-element constant of float32, float64, float16 or
// bfloat16, or nullopt.
std::optional<double> FloatConstant(const GraphIndex& idx, const std::string& name);
// The operand of the binary node `n` other than `value` (which must be one
// of its two inputs), or null.
const std::string* OtherOperand(const Node& n, const std::string& value);
// Whether `clip` is a default-domain Clip(0, 6) with one output: its min and
// max inputs read through `scalar` (a 1-element constant's value, or
// nullopt) from `opset` 11, its attributes before.
bool IsClipZeroSix(const Node& clip, int64_t opset,
                   const std::function<std::optional<double>(const std::string&)>& scalar);
// The end of a fusion pass that wrote ai.vigil nodes: drops the nodes marked
// in `remove` (one flag per node of the main graph, order kept) and adds
// the opset import of "ai.vigil" when the model has none.
void DropFusedNodes(Model& model, const std::vector<bool>& remove);

}  // namespace vigil::ir
