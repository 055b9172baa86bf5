// SiLU fusion (see fuse_silu.h).
#include "ir/fuse_silu.h"

#include <vector>

#include "ir/graph_index.h"
#include "ir/layout_nhwc.h"  // kVigilDomain, kVigilOpsetVersion

namespace vigil::ir {

Result<size_t> FuseSilu(Model& model) {
  Graph& g = model.graph;
  const GraphIndex idx = IndexGraph(g);
  std::vector<bool> remove(g.nodes.size(), false);
  size_t fused = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& sigmoid = g.nodes[i];
    if (!IsDefaultOp(sigmoid, "Sigmoid", 1)) continue;
    const long mul = SoleConsumer(idx, sigmoid.outputs[0]);
    if (mul < 0 || remove[mul] || !IsDefaultOp(g.nodes[mul], "Mul", 2)) continue;
    const std::string* x = OtherOperand(g.nodes[mul], sigmoid.outputs[0]);
    if (!x || *x != sigmoid.inputs[0]) continue;
    // The Silu takes the Mul's place (its position keeps the order valid:
    // x is computed before the Sigmoid) and writes its output.
    Node f;
    f.name = g.nodes[mul].name;
    f.op_type = kSiluOp;
    f.domain = kVigilDomain;
    f.inputs = {sigmoid.inputs[0]};
    f.outputs = g.nodes[mul].outputs;
    g.nodes[mul] = std::move(f);
    remove[i] = true;
    ++fused;
  }
  if (fused > 0) DropFusedNodes(model, remove);
  return fused;
}

}  // namespace vigil::ir
