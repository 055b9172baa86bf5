// MatMul + Add(bias) fusion (see fuse_matmul_bias.h).
#include "ir/fuse_matmul_bias.h"

#include <algorithm>
#include <unordered_set>
#include <vector>

#include "ir/graph_index.h"
#include "ir/layout_nhwc.h"  // kVigilDomain, kVigilOpsetVersion

namespace vigil::ir {
namespace {

bool IsDefaultDomain(const Node& n) { return n.domain.empty() || n.domain == "ai.onnx"; }

const Tensor* Constant(const GraphIndex& idx, const std::string& name) {
  auto it = idx.constants.find(name);
  return it == idx.constants.end() ? nullptr : it->second;
}

bool RankAtLeast2(const std::unordered_map<std::string, TypeInfo>& types, const std::string& name) {
  auto it = types.find(name);
  return it != types.end() && it->second.kind == TypeInfo::Kind::kTensor && it->second.shape.rank_known &&
         it->second.shape.dims.size() >= 2;
}

// The bias operand of `add` when it fits W [K, N]: its input index, else -1.
int BiasOperand(const GraphIndex& idx, const Node& add, const std::string& product, const Tensor& w) {
  if (add.inputs.size() != 2 || add.outputs.size() != 1) return -1;
  for (int i = 0; i < 2; ++i) {
    if (add.inputs[i] != product || add.inputs[1 - i] == product) continue;
    const Tensor* b = Constant(idx, add.inputs[1 - i]);
    if (!b || b->dtype != w.dtype) return -1;
    const int64_t n = w.dims[1];
    const bool row = (b->dims.size() == 1 && b->dims[0] == n) ||
                     (b->dims.size() == 2 && b->dims[0] == 1 && b->dims[1] == n);
    return row ? 1 - i : -1;
  }
  return -1;
}

}  // namespace

Result<size_t> FuseMatMulBias(Model& model, const std::unordered_map<std::string, TypeInfo>& types) {
  Graph& g = model.graph;
  const GraphIndex idx = IndexGraph(g);
  std::vector<bool> remove(g.nodes.size(), false);
  size_t fused = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& mm = g.nodes[i];
    if (remove[i] || mm.op_type != "MatMul" || !IsDefaultDomain(mm) || mm.inputs.size() != 2 ||
        mm.outputs.size() != 1) {
      continue;
    }
    const std::string& product = mm.outputs[0];
    const Tensor* w = Constant(idx, mm.inputs[1]);
    if (!w || w->dims.size() != 2 || !RankAtLeast2(types, mm.inputs[0]) || idx.outputs.count(product)) continue;
    auto users = idx.consumers.find(product);
    if (users == idx.consumers.end() || users->second.size() != 1) continue;
    const size_t a = users->second[0];
    Node& add = g.nodes[a];
    if (remove[a] || add.op_type != "Add" || !IsDefaultDomain(add)) continue;
    const int bias = BiasOperand(idx, add, product, *w);
    if (bias < 0) continue;
    // The fused node takes the Add's place: every consumer of its output
    // already comes after it in any topological order.
    Node f;
    f.name = add.name.empty() ? mm.name : add.name;
    f.op_type = kMatMulBiasOp;
    f.domain = kVigilDomain;
    f.inputs = {mm.inputs[0], mm.inputs[1], add.inputs[static_cast<size_t>(bias)]};
    f.outputs = add.outputs;
    add = std::move(f);
    remove[i] = true;
    ++fused;
  }
  if (fused == 0) return fused;
  std::vector<Node> kept;
  kept.reserve(g.nodes.size() - fused);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (!remove[i]) kept.push_back(std::move(g.nodes[i]));
  }
  g.nodes = std::move(kept);
  if (model.OpsetVersion(kVigilDomain) < 0) model.opset_imports.push_back({kVigilDomain, kVigilOpsetVersion});
  return fused;
}

}  // namespace vigil::ir
