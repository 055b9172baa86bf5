// MatMul + Add(bias) fusion (see fuse_matmul_bias.h).
#include "ir/fuse_matmul_bias.h"

#include <algorithm>
#include <optional>
#include <unordered_set>
#include <vector>

#include <fmt/format.h>

#include "base/printable.h"
#include "ir/fuse_gelu.h"
#include "ir/graph_index.h"
#include "ir/layout_nhwc.h"  // kVigilDomain, kVigilOpsetVersion
#include "ir/symbolic_shapes.h"

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

// One residual match: the MatMulBias and the Add, by node index, and the
// node that replaces them.
struct ResidualMatch {
  size_t product = 0, add = 0;
  Node fused;
};

// Whether `value` is computed from `from`, walking producers back from
// `value`. In a valid graph r never is (y's only reader is the Add, which
// reads r, so that would be a cycle); the check keeps the pass from
// rewriting a malformed graph into another, harder to diagnose.
bool DependsOn(const Graph& g, const std::unordered_map<std::string, size_t>& producer, const std::string& value,
               const std::string& from) {
  std::unordered_set<std::string> seen;
  std::vector<std::string> work{value};
  while (!work.empty()) {
    std::string v = std::move(work.back());
    work.pop_back();
    if (v == from) return true;
    if (v.empty() || !seen.insert(v).second) continue;
    auto p = producer.find(v);
    if (p == producer.end()) continue;
    for (const std::string& in : g.nodes[p->second].inputs) work.push_back(in);
  }
  return false;
}

// Whether r's known type is y's: the same tensor dtype and a shape proven
// the same, so the Add cannot broadcast. Inference gives equal dims the same
// number or symbol (an unnamed dim equals nothing); where it could not
// (a Reshape to a run-time target), symbolic evaluation of the producers
// may still prove it.
bool SameType(const std::unordered_map<std::string, TypeInfo>& types, SymbolicShapes& sym, const std::string& y,
              const std::string& r) {
  auto ty = types.find(y), tr = types.find(r);
  if (ty == types.end() || tr == types.end() || ty->second.kind != TypeInfo::Kind::kTensor ||
      tr->second.kind != TypeInfo::Kind::kTensor || ty->second.elem_type != tr->second.elem_type) {
    return false;
  }
  if (SameDims(ty->second.shape, tr->second.shape)) return true;
  const std::optional<SymShape> ys = sym.ShapeOf(y), rs = sym.ShapeOf(r);
  return ys && rs && *ys == *rs;
}

class ResidualMatcher {
 public:
  ResidualMatcher(const Model& model, const std::unordered_map<std::string, TypeInfo>& types)
      : g_(model.graph), idx_(IndexGraph(g_)), types_(types), sym_(g_, idx_, types, model.OpsetVersion("")) {
    for (size_t i = 0; i < g_.nodes.size(); ++i) {
      for (const std::string& out : g_.nodes[i].outputs) {
        if (!out.empty()) producer_.emplace(out, i);
      }
    }
  }

  // The match whose MatMulBias is node `i`, or nullopt.
  std::optional<ResidualMatch> Match(size_t i) {
    const Node& mm = g_.nodes[i];
    if (mm.op_type != kMatMulBiasOp || mm.domain != kVigilDomain || mm.inputs.size() != 3 ||
        mm.outputs.size() != 1 || mm.outputs[0].empty() || mm.FindAttribute(kMatMulBiasActivation)) {
      return std::nullopt;
    }
    const std::string& y = mm.outputs[0];
    auto users = idx_.consumers.find(y);
    if (idx_.outputs.count(y) || users == idx_.consumers.end() || users->second.size() != 1) return std::nullopt;
    const size_t a = users->second[0];
    const Node& add = g_.nodes[a];
    if (add.op_type != "Add" || !IsDefaultDomain(add) || add.inputs.size() != 2 || add.outputs.size() != 1) {
      return std::nullopt;
    }
    const std::string& r = add.inputs[0] == y ? add.inputs[1] : add.inputs[0];
    if (r == y || r.empty() || !SameType(types_, sym_, y, r) || DependsOn(g_, producer_, r, y)) return std::nullopt;
    ResidualMatch m{i, a, mm};
    m.fused.inputs.push_back(r);
    m.fused.outputs = add.outputs;
    return m;
  }

 private:
  const Graph& g_;
  const GraphIndex idx_;
  const std::unordered_map<std::string, TypeInfo>& types_;
  SymbolicShapes sym_;
  std::unordered_map<std::string, size_t> producer_;
};

// The activation attribute for the Gelu node `n`, or null when `n` is no
// Gelu the product's epilogue can take.
const char* GeluActivation(const Node& n) {
  if (n.inputs.size() != 1 || n.outputs.size() != 1) return nullptr;
  if (n.domain == kVigilDomain && n.op_type == kGeluOp) return n.attributes.empty() ? "gelu" : nullptr;
  if (!IsDefaultDomain(n) || n.op_type != "Gelu") return nullptr;
  const Attribute* approximate = n.FindAttribute("approximate");
  if (n.attributes.size() > (approximate ? 1u : 0u)) return nullptr;
  if (!approximate || (approximate->type == AttributeType::kString && approximate->s == "none")) return "gelu";
  if (approximate->type == AttributeType::kString && approximate->s == "tanh") return "gelu_tanh";
  return nullptr;
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

Result<size_t> FuseResidualAdd(Model& model, const std::unordered_map<std::string, TypeInfo>& types,
                               const ResidualAcceptor& accept) {
  Graph& g = model.graph;
  // Matched on the unchanged graph (the symbolic evaluator reads it), then
  // rewritten. Each Add is taken once: Add(y1, y2) of two MatMulBias outputs
  // fuses into the first, whose residual is then the second's output.
  std::vector<ResidualMatch> matches;
  {
    ResidualMatcher matcher(model, types);
    std::vector<bool> taken(g.nodes.size(), false);
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      std::optional<ResidualMatch> m = matcher.Match(i);
      if (!m || taken[m->add] || (accept && !accept(m->fused))) continue;
      taken[m->add] = true;
      matches.push_back(std::move(*m));
    }
  }
  if (matches.empty()) return size_t{0};
  // The fused node takes the Add's place: r and the MatMulBias' inputs come
  // before it in any topological order, its readers after.
  std::vector<bool> remove(g.nodes.size(), false);
  for (ResidualMatch& m : matches) {
    g.nodes[m.add] = std::move(m.fused);
    remove[m.product] = true;
  }
  const size_t fused = matches.size();
  std::vector<Node> kept;
  kept.reserve(g.nodes.size() - fused);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (!remove[i]) kept.push_back(std::move(g.nodes[i]));
  }
  g.nodes = std::move(kept);
  return fused;
}

Result<MatMulBiasAct> MatMulBiasActivationOf(const Node& node) {
  const Attribute* a = node.FindAttribute(kMatMulBiasActivation);
  if (!a) return MatMulBiasAct::kNone;
  if (a->type == AttributeType::kString && a->s == "gelu") return MatMulBiasAct::kGelu;
  if (a->type == AttributeType::kString && a->s == "gelu_tanh") return MatMulBiasAct::kGeluTanh;
  const std::string got = a->type == AttributeType::kString ? "\"" + Printable(a->s) + "\""
                                                              : fmt::format("a {} attribute", AttributeTypeName(a->type));
  return InvalidModelError("MatMulBias '{}': the attribute activation is {}; expected \"gelu\" or \"gelu_tanh\"",
                           Printable(node.name), got);
}

Result<size_t> FuseMatMulBiasGelu(Model& model, const ResidualAcceptor& accept) {
  Graph& g = model.graph;
  const GraphIndex idx = IndexGraph(g);
  std::vector<bool> remove(g.nodes.size(), false);
  size_t fused = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& mm = g.nodes[i];
    if (mm.op_type != kMatMulBiasOp || mm.domain != kVigilDomain || mm.inputs.size() != 3 ||
        mm.outputs.size() != 1 || !mm.attributes.empty()) {
      continue;
    }
    const long gelu = SoleConsumer(idx, mm.outputs[0]);
    if (gelu < 0) continue;
    const char* activation = GeluActivation(g.nodes[static_cast<size_t>(gelu)]);
    if (!activation || g.nodes[static_cast<size_t>(gelu)].inputs[0] != mm.outputs[0]) continue;
    Node f = mm;
    f.attributes.push_back(StringAttribute(kMatMulBiasActivation, activation));
    f.outputs = g.nodes[static_cast<size_t>(gelu)].outputs;
    if (accept && !accept(f)) continue;
    // The fused node takes the Gelu's place: the product's inputs come
    // before it in any topological order, the Gelu's readers after.
    g.nodes[static_cast<size_t>(gelu)] = std::move(f);
    remove[i] = true;
    ++fused;
  }
  if (fused > 0) DropFusedNodes(model, remove);
  return fused;
}

}  // namespace vigil::ir
