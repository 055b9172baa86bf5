// Batch-first attention (see attention_layout.h).
#include "ir/attention_layout.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <optional>
#include <unordered_set>
#include <vector>

#include "ir/dtype.h"
#include "ir/fuse_attention.h"
#include "ir/fuse_matmul_bias.h"
#include "ir/graph_index.h"
#include "ir/layout_nhwc.h"  // kVigilDomain
#include "ir/symbolic_shapes.h"

namespace vigil::ir {
namespace {

// One matched chain, by node index.
struct LayoutMatch {
  size_t in_transpose = 0, in_proj = 0, attention = 0, gemm = 0, out_transpose = 0;
  std::vector<size_t> removed;  // the Transposes, the Reshapes and the Gemm
  std::string x;                // [B,S,E], the first Transpose's input
};

bool IsDefault(const Node& n, const char* op, size_t inputs) {
  return n.op_type == op && (n.domain.empty() || n.domain == "ai.onnx") && n.inputs.size() == inputs &&
         n.outputs.size() == 1;
}

bool IsVigil(const Node& n, const char* op, size_t inputs) {
  return n.op_type == op && n.domain == kVigilDomain && n.inputs.size() == inputs && n.outputs.size() == 1;
}

bool IsSwap(const Node& n) {
  const Attribute* a = n.FindAttribute("perm");
  return IsDefault(n, "Transpose", 1) && a && a->type == AttributeType::kInts &&
         a->ints == std::vector<int64_t>{1, 0, 2};
}

// The attribute `name` of `n` as an int (absent: `fallback`); nullopt when
// it has another type.
std::optional<int64_t> IntOr(const Node& n, const char* name, int64_t fallback) {
  const Attribute* a = n.FindAttribute(name);
  if (!a) return fallback;
  return a->type == AttributeType::kInt ? std::optional<int64_t>(a->i) : std::nullopt;
}

bool FloatIsOne(const Node& n, const char* name) {
  const Attribute* a = n.FindAttribute(name);
  return !a || (a->type == AttributeType::kFloat && a->f == 1.0f);
}

const TypeInfo* Rank3(const std::unordered_map<std::string, TypeInfo>& types, const std::string& value) {
  auto it = types.find(value);
  if (it == types.end() || it->second.kind != TypeInfo::Kind::kTensor || !it->second.shape.rank_known ||
      it->second.shape.dims.size() != 3) {
    return nullptr;
  }
  return &it->second;
}

class LayoutMatcher {
 public:
  LayoutMatcher(const Model& model, const GraphIndex& idx, const std::unordered_map<std::string, TypeInfo>& types)
      : g_(model.graph), idx_(idx), types_(types), sym_(model.graph, idx, types, model.OpsetVersion("")) {
    for (size_t i = 0; i < g_.nodes.size(); ++i) {
      for (const std::string& out : g_.nodes[i].outputs) {
        if (!out.empty()) producer_[out] = i;
      }
    }
  }

  // The chain around the Attention node `att`, or nullopt.
  std::optional<LayoutMatch> Match(size_t att);

 private:
  // The node that reads `value` as its input 0 and is `op` with `inputs`
  // inputs, when there is exactly one such reader. Other readers are judged
  // later, by what stays live once the chain is gone.
  std::optional<size_t> Next(const std::string& value, const char* op, size_t inputs) const {
    auto users = idx_.consumers.find(value);
    if (users == idx_.consumers.end()) return std::nullopt;
    std::optional<size_t> found;
    for (size_t u : users->second) {
      const Node& n = g_.nodes[u];
      if (!IsDefault(n, op, inputs) || n.inputs[0] != value) continue;
      if (found && *found != u) return std::nullopt;
      found = u;
    }
    return found;
  }
  // The y -> z part, from the Attention's output y [s,b,e].
  bool OutProjection(const std::string& y, const SymDim& s, const SymDim& b, int64_t e, LayoutMatch& m);
  bool GemmFits(const Node& gemm, int64_t e, DataType dt) const;

  const Graph& g_;
  const GraphIndex& idx_;
  const std::unordered_map<std::string, TypeInfo>& types_;
  SymbolicShapes sym_;
  std::unordered_map<std::string, size_t> producer_;
};

bool LayoutMatcher::GemmFits(const Node& gemm, int64_t e, DataType dt) const {
  if (IntOr(gemm, "transA", 0) != 0 || IntOr(gemm, "transB", 0) != 1) return false;
  if (!FloatIsOne(gemm, "alpha") || !FloatIsOne(gemm, "beta")) return false;
  auto w = idx_.constants.find(gemm.inputs[1]);
  auto c = idx_.constants.find(gemm.inputs[2]);
  if (w == idx_.constants.end() || c == idx_.constants.end()) return false;
  const Tensor& wt = *w->second;
  const Tensor& ct = *c->second;
  if (wt.dtype != dt || ct.dtype != dt || wt.dims.size() != 2 || wt.dims[1] != e || !wt.HasDenseBytes()) return false;
  const int64_t eo = wt.dims[0];
  return (ct.dims.size() == 1 && ct.dims[0] == eo) || (ct.dims.size() == 2 && ct.dims[0] == 1 && ct.dims[1] == eo);
}

bool LayoutMatcher::OutProjection(const std::string& y, const SymDim& s, const SymDim& b, int64_t e,
                                  LayoutMatch& m) {
  const auto view = Next(y, "Reshape", 2);
  if (!view) return false;
  const auto rows = Next(g_.nodes[*view].outputs[0], "Reshape", 2);
  if (!rows) return false;
  const auto gemm = Next(g_.nodes[*rows].outputs[0], "Gemm", 3);
  if (!gemm) return false;
  const auto back = Next(g_.nodes[*gemm].outputs[0], "Reshape", 2);
  if (!back) return false;
  const auto swap = Next(g_.nodes[*back].outputs[0], "Transpose", 1);
  if (!swap || !IsSwap(g_.nodes[*swap])) return false;
  const TypeInfo* yt = Rank3(types_, y);
  if (!yt || !GemmFits(g_.nodes[*gemm], e, yt->elem_type)) return false;
  // Reshapes keep the row-major element order, so y [s,b,e] viewed as
  // [s*b, e] has row s*B+b = y[s,b,:] whatever the first Reshape did; the
  // product's row goes back to [s,b,:] when the last one gives [s,b,eo].
  const int64_t eo = idx_.constants.at(g_.nodes[*gemm].inputs[1])->dims[0];
  const std::optional<SymDim> sb = MulDims(s, b);
  if (!sb || sym_.ShapeOf(g_.nodes[*rows].outputs[0]) != SymShape{*sb, SymDim::Known(e)}) return false;
  if (sym_.ShapeOf(g_.nodes[*back].outputs[0]) != SymShape{s, b, SymDim::Known(eo)}) return false;
  m.gemm = *gemm;
  m.out_transpose = *swap;
  m.removed.insert(m.removed.end(), {*view, *rows, *gemm, *back, *swap});
  return true;
}

std::optional<LayoutMatch> LayoutMatcher::Match(size_t att) {
  const Node& a = g_.nodes[att];
  const Attribute* layout = a.FindAttribute("layout");
  if (!IsVigil(a, kAttentionOp, 1) || (layout && (layout->type != AttributeType::kString || layout->s != "sbe"))) {
    return std::nullopt;
  }
  LayoutMatch m;
  m.attention = att;
  const std::string& qkv = a.inputs[0];
  auto p = producer_.find(qkv);
  auto users = idx_.consumers.find(qkv);
  if (p == producer_.end() || !IsVigil(g_.nodes[p->second], kMatMulBiasOp, 3) || users == idx_.consumers.end() ||
      users->second.size() != 1) {
    return std::nullopt;
  }
  // y is renamed, so the Reshape is its only reader.
  users = idx_.consumers.find(a.outputs[0]);
  if (users == idx_.consumers.end() || users->second.size() != 1) return std::nullopt;
  m.in_proj = p->second;
  const std::string& t = g_.nodes[m.in_proj].inputs[0];
  p = producer_.find(t);
  if (p == producer_.end() || !IsSwap(g_.nodes[p->second])) return std::nullopt;
  m.in_transpose = p->second;
  m.x = g_.nodes[m.in_transpose].inputs[0];
  // Every reader of t but the in-projection must be shape arithmetic that
  // dies with the chain (checked after the rewrite); t's rows are the ones
  // the Attention's output has.
  const std::optional<SymShape> sbe = sym_.ShapeOf(t);
  const TypeInfo* yt = Rank3(types_, a.outputs[0]);
  if (!Rank3(types_, m.x) || !Rank3(types_, qkv) || !sbe || sbe->size() != 3 || !yt ||
      !yt->shape.dims[2].is_known()) {
    return std::nullopt;
  }
  if (!OutProjection(a.outputs[0], (*sbe)[0], (*sbe)[1], *yt->shape.dims[2].value, m)) return std::nullopt;
  m.removed.push_back(m.in_transpose);
  for (size_t n : m.removed) {
    if (idx_.outputs.count(g_.nodes[n].outputs[0]) && n != m.out_transpose) return std::nullopt;
  }
  if (idx_.outputs.count(qkv) || idx_.outputs.count(a.outputs[0])) return std::nullopt;
  return m;
}

// A name no value of the graph has, starting from `base`.
std::string Fresh(std::unordered_set<std::string>& taken, const std::string& base) {
  std::string name = base;
  for (int k = 1; taken.count(name); ++k) name = base + "_" + std::to_string(k);
  taken.insert(name);
  return name;
}

// The [K, N] initializer `w` ([N, K]) transposed, named `name`.
Tensor Transposed(const Tensor& w, std::string name) {
  const size_t size = static_cast<size_t>(DataTypeBits(w.dtype) / 8);
  const int64_t rows = w.dims[0], cols = w.dims[1];
  auto owned = std::shared_ptr<uint8_t[]>(new uint8_t[std::max<size_t>(1, w.bytes.size())]);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      std::memcpy(owned.get() + (c * rows + r) * size, w.bytes.data() + (r * cols + c) * size, size);
    }
  }
  Tensor out;
  out.name = std::move(name);
  out.dtype = w.dtype;
  out.dims = {cols, rows};
  out.storage = Tensor::Storage::kTypedDecoded;
  out.bytes = {owned.get(), w.bytes.size()};
  out.keep_alive = std::shared_ptr<const void>(owned, owned.get());
  return out;
}

TypeInfo TensorOf(DataType dt, std::vector<Dim> dims) {
  TypeInfo t;
  t.kind = TypeInfo::Kind::kTensor;
  t.elem_type = dt;
  t.shape.rank_known = true;
  t.shape.dims = std::move(dims);
  return t;
}

// Rewires the chain of `m` batch-first in `nodes` (a copy of the graph's):
// the in-projection reads x, the Attention runs "bse", and a MatMulBias
// writing z takes the last Transpose's place. The removed nodes stay, to be
// dropped as dead. Records the new values' types and initializer.
void Rewrite(Graph& g, std::vector<Node>& nodes, const LayoutMatch& m, std::unordered_set<std::string>& taken,
             std::unordered_map<std::string, TypeInfo>& types) {
  Node& proj = nodes[m.in_proj];
  Node& att = nodes[m.attention];
  const Node& gemm = g.nodes[m.gemm];
  const TypeInfo& xt = types.at(m.x);
  const std::string qkv = Fresh(taken, proj.outputs[0] + "/batch_first");
  const std::string y = Fresh(taken, att.outputs[0] + "/batch_first");
  types[qkv] = TensorOf(types.at(proj.outputs[0]).elem_type,
                        {xt.shape.dims[0], xt.shape.dims[1], types.at(proj.outputs[0]).shape.dims[2]});
  types[y] = TensorOf(types.at(att.outputs[0]).elem_type,
                      {xt.shape.dims[0], xt.shape.dims[1], types.at(att.outputs[0]).shape.dims[2]});
  proj.inputs[0] = m.x;
  proj.outputs = {qkv};
  att.inputs = {qkv};
  att.outputs = {y};
  for (Attribute& a : att.attributes) {
    if (a.name == "layout") a.s = "bse";
  }
  if (!att.FindAttribute("layout")) {
    Attribute a;
    a.name = "layout", a.type = AttributeType::kString, a.s = "bse";
    att.attributes.push_back(a);
  }

  const Tensor* w = nullptr;
  for (const Tensor& t : g.initializers) {
    if (t.name == gemm.inputs[1]) w = &t;  // there: the matcher found it among the constants
  }
  Tensor wt = Transposed(*w, Fresh(taken, gemm.inputs[1] + "/transposed"));
  types[wt.name] = TensorOf(wt.dtype, {Dim::Known(wt.dims[0]), Dim::Known(wt.dims[1])});
  Node out;
  out.name = (gemm.name.empty() ? y : gemm.name) + "/batch_first";
  out.op_type = kMatMulBiasOp;
  out.domain = kVigilDomain;
  out.inputs = {y, wt.name, gemm.inputs[2]};
  out.outputs = nodes[m.out_transpose].outputs;
  // z was a Transpose of a Reshape with a run-time target, often typed
  // with unknown dims; it is proven [B, S, Eo] now.
  types[out.outputs[0]] = TensorOf(wt.dtype, {xt.shape.dims[0], xt.shape.dims[1], Dim::Known(wt.dims[1])});
  nodes[m.out_transpose] = std::move(out);
  g.initializers.push_back(std::move(wt));
}

// Which of `nodes` have a path to an output of `g`.
std::vector<bool> Live(const Graph& g, const std::vector<Node>& nodes) {
  std::unordered_map<std::string, size_t> producer;
  for (size_t i = 0; i < nodes.size(); ++i) {
    for (const std::string& out : nodes[i].outputs) {
      if (!out.empty()) producer[out] = i;
    }
  }
  std::vector<bool> live(nodes.size(), false);
  std::vector<std::string> work;
  for (const ValueInfo& v : g.outputs) work.push_back(v.name);
  while (!work.empty()) {
    auto p = producer.find(work.back());
    work.pop_back();
    if (p == producer.end() || live[p->second]) continue;
    live[p->second] = true;
    for (const std::string& in : nodes[p->second].inputs) work.push_back(in);
  }
  return live;
}

// The match of `matches` one of whose removed nodes is still live in
// `nodes`, if any.
std::optional<size_t> Broken(const std::vector<LayoutMatch>& matches, const std::vector<bool>& live) {
  for (size_t k = 0; k < matches.size(); ++k) {
    for (size_t n : matches[k].removed) {
      if (n != matches[k].out_transpose && live[n]) return k;
    }
  }
  return std::nullopt;
}

// Drops initializers that nothing reads any more and that are neither graph
// inputs nor outputs, among `candidates` (what the removed nodes read: the
// Gemm weights, now transposed copies, would otherwise stay resident).
void DropUnread(Graph& g, const std::unordered_set<std::string>& candidates) {
  std::unordered_set<std::string> needed;
  for (const Node& n : g.nodes) needed.insert(n.inputs.begin(), n.inputs.end());
  for (const ValueInfo& v : g.inputs) needed.insert(v.name);
  for (const ValueInfo& v : g.outputs) needed.insert(v.name);
  std::erase_if(g.initializers,
                [&](const Tensor& t) { return candidates.count(t.name) && !needed.count(t.name); });
}

}  // namespace

Result<size_t> AttentionBatchFirst(Model& model, std::unordered_map<std::string, TypeInfo>& types) {
  Graph& g = model.graph;
  std::vector<LayoutMatch> matches;
  {
    const GraphIndex idx = IndexGraph(g);
    LayoutMatcher matcher(model, idx, types);
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      if (std::optional<LayoutMatch> m = matcher.Match(i)) matches.push_back(std::move(*m));
    }
  }
  // Rewire on a copy and keep only the matches whose removed nodes all die;
  // dropping one can make another's shape arithmetic live, so start over.
  std::vector<Node> nodes;
  std::vector<bool> live;
  std::unordered_set<std::string> taken;
  std::unordered_map<std::string, TypeInfo> added;
  const size_t initializers = g.initializers.size();
  for (;;) {
    g.initializers.resize(initializers);  // the previous attempt's transposed weights
    if (matches.empty()) return size_t{0};
    nodes = g.nodes;
    taken.clear();
    for (const Node& n : g.nodes) taken.insert(n.outputs.begin(), n.outputs.end());
    for (const Tensor& t : g.initializers) taken.insert(t.name);
    for (const ValueInfo& v : g.inputs) taken.insert(v.name);
    added = types;
    for (const LayoutMatch& m : matches) Rewrite(g, nodes, m, taken, added);
    live = Live(g, nodes);
    const std::optional<size_t> broken = Broken(matches, live);
    if (!broken) break;
    matches.erase(matches.begin() + static_cast<long>(*broken));
  }
  std::unordered_set<std::string> inputs_of_removed;  // the Gemm weights, the Reshape targets
  std::vector<Node> kept;
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (live[i]) {
      kept.push_back(std::move(nodes[i]));
    } else {
      inputs_of_removed.insert(nodes[i].inputs.begin(), nodes[i].inputs.end());
    }
  }
  g.nodes = std::move(kept);
  types = std::move(added);
  DropUnread(g, inputs_of_removed);
  return matches.size();
}

}  // namespace vigil::ir
