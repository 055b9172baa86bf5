// GELU fusion (see fuse_gelu.h).
#include "ir/fuse_gelu.h"

#include <cmath>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "ir/graph_index.h"
#include "ir/layout_nhwc.h"  // kVigilDomain, kVigilOpsetVersion

namespace vigil::ir {
namespace {

bool Near(std::optional<double> v, double want, double rel) {
  return v && std::abs(*v - want) <= rel * std::abs(want);
}

// The chain's nodes from the Div at `div` (Div, Erf, Add, Mul, Mul), or an
// empty vector when the pattern does not hold.
std::vector<size_t> MatchChain(const Graph& g, const GraphIndex& idx, size_t div) {
  const Node& d = g.nodes[div];
  if (!IsDefaultOp(d, "Div", 2) || !Near(FloatConstant(idx, d.inputs[1]), std::sqrt(2.0), 1e-3)) return {};
  const std::string& x = d.inputs[0];
  const long erf = SoleConsumer(idx, d.outputs[0]);
  if (erf < 0 || !IsDefaultOp(g.nodes[erf], "Erf", 1)) return {};
  const long add = SoleConsumer(idx, g.nodes[erf].outputs[0]);
  if (add < 0 || !IsDefaultOp(g.nodes[add], "Add", 2)) return {};
  const std::string* one = OtherOperand(g.nodes[add], g.nodes[erf].outputs[0]);
  if (!one || !Near(FloatConstant(idx, *one), 1.0, 1e-6)) return {};
  const long mul = SoleConsumer(idx, g.nodes[add].outputs[0]);
  if (mul < 0 || !IsDefaultOp(g.nodes[mul], "Mul", 2)) return {};
  const std::string* same_x = OtherOperand(g.nodes[mul], g.nodes[add].outputs[0]);
  if (!same_x || *same_x != x) return {};
  const long half = SoleConsumer(idx, g.nodes[mul].outputs[0]);
  if (half < 0 || !IsDefaultOp(g.nodes[half], "Mul", 2)) return {};
  const std::string* c = OtherOperand(g.nodes[half], g.nodes[mul].outputs[0]);
  if (!c || !Near(FloatConstant(idx, *c), 0.5, 1e-6)) return {};
  return {div, static_cast<size_t>(erf), static_cast<size_t>(add), static_cast<size_t>(mul),
          static_cast<size_t>(half)};
}

}  // namespace

Result<size_t> FuseGelu(Model& model) {
  Graph& g = model.graph;
  const GraphIndex idx = IndexGraph(g);
  std::vector<bool> remove(g.nodes.size(), false);
  size_t fused = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (remove[i]) continue;
    std::vector<size_t> chain = MatchChain(g, idx, i);
    if (chain.empty()) continue;
    bool taken = false;
    for (size_t k : chain) taken = taken || remove[k];
    if (taken) continue;
    // The Gelu takes the last Mul's place and writes its output.
    Node& last = g.nodes[chain.back()];
    Node f;
    f.name = last.name;
    f.op_type = kGeluOp;
    f.domain = kVigilDomain;
    f.inputs = {g.nodes[i].inputs[0]};
    f.outputs = last.outputs;
    last = std::move(f);
    for (size_t k = 0; k + 1 < chain.size(); ++k) remove[chain[k]] = true;
    ++fused;
  }
  if (fused > 0) DropFusedNodes(model, remove);
  return fused;
}

}  // namespace vigil::ir
