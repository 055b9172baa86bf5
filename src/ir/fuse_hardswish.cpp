// HardSwish-chain fusion (see fuse_hardswish.h).
#include "ir/fuse_hardswish.h"

#include <optional>
#include <string>
#include <vector>

#include "ir/graph_index.h"
#include "ir/layout_nhwc.h"  // kVigilDomain

namespace vigil::ir {
namespace {

// The value of a single-element float32, float16 or bfloat16 constant (all
// exact as a float attribute), or nullopt.
std::optional<float> FloatScalar(const GraphIndex& idx, const std::string& name) {
  auto it = idx.constants.find(name);
  if (it == idx.constants.end() || it->second->dtype == DataType::kFloat64) return std::nullopt;
  const std::optional<double> v = FloatConstant(idx, name);
  return v ? std::optional<float>(static_cast<float>(*v)) : std::nullopt;
}

// The chain that starts at Add node `i`, as the indices of its Clip, Mul
// and Div and its constants; nullopt where it is not one.
struct Chain {
  long clip = -1, mul = -1, div = -1;
  float add = 0, lo = 0, hi = 0, d = 0;
  std::string x;
};

std::optional<Chain> ChainFrom(const Graph& g, const GraphIndex& idx, size_t i) {
  const Node& add = g.nodes[i];
  if (!IsDefaultOp(add, "Add", 2)) return std::nullopt;
  Chain c;
  for (int k = 0; k < 2; ++k) {
    if (auto v = FloatScalar(idx, add.inputs[k])) {
      c.add = *v;
      c.x = add.inputs[1 - k];
      break;
    }
  }
  if (c.x.empty()) return std::nullopt;
  c.clip = SoleConsumer(idx, add.outputs[0]);
  if (c.clip < 0 || !IsDefaultOp(g.nodes[c.clip], "Clip", 3)) return std::nullopt;
  const Node& clip = g.nodes[c.clip];
  const auto lo = FloatScalar(idx, clip.inputs[1]), hi = FloatScalar(idx, clip.inputs[2]);
  if (clip.inputs[0] != add.outputs[0] || !lo || !hi) return std::nullopt;
  c.lo = *lo;
  c.hi = *hi;
  c.mul = SoleConsumer(idx, clip.outputs[0]);
  if (c.mul < 0 || !IsDefaultOp(g.nodes[c.mul], "Mul", 2)) return std::nullopt;
  const std::string* other = OtherOperand(g.nodes[c.mul], clip.outputs[0]);
  if (!other || *other != c.x) return std::nullopt;
  c.div = SoleConsumer(idx, g.nodes[c.mul].outputs[0]);
  if (c.div < 0 || !IsDefaultOp(g.nodes[c.div], "Div", 2)) return std::nullopt;
  const Node& div = g.nodes[c.div];
  const auto d = FloatScalar(idx, div.inputs[1]);
  if (div.inputs[0] != g.nodes[c.mul].outputs[0] || !d) return std::nullopt;
  c.d = *d;
  return c;
}

}  // namespace

Result<size_t> FuseHardSwishChains(Model& model) {
  Graph& g = model.graph;
  const GraphIndex idx = IndexGraph(g);
  std::vector<bool> remove(g.nodes.size(), false);
  size_t fused = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (remove[i]) continue;
    const std::optional<Chain> c = ChainFrom(g, idx, i);
    if (!c || remove[c->clip] || remove[c->mul] || remove[c->div]) continue;
    // The fused node takes the Div's place (x is computed before the Add,
    // so the order stays valid) and writes its output.
    Node f;
    f.name = g.nodes[c->div].name;
    f.op_type = kHardSwishChainOp;
    f.domain = kVigilDomain;
    f.inputs = {c->x};
    f.outputs = g.nodes[c->div].outputs;
    f.attributes = {FloatAttribute("add", c->add), FloatAttribute("min", c->lo), FloatAttribute("max", c->hi),
                    FloatAttribute("div", c->d)};
    g.nodes[c->div] = std::move(f);
    remove[i] = remove[c->clip] = remove[c->mul] = true;
    ++fused;
  }
  if (fused > 0) DropFusedNodes(model, remove);
  return fused;
}

}  // namespace vigil::ir
