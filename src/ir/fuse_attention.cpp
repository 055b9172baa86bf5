// Self-attention fusion (see fuse_attention.h).
#include "ir/fuse_attention.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <cmath>
#include <memory>
#include <optional>
#include <unordered_set>
#include <vector>

#include "ir/attention_matcher.h"
#include "ir/fuse_matmul_bias.h"  // kMatMulBiasOp
#include "ir/graph_index.h"
#include "ir/layout_nhwc.h"  // kVigilDomain, kVigilOpsetVersion
#include "ir/symbolic_shapes.h"

namespace vigil::ir {

bool IsOp(const Node& n, const char* op, size_t inputs) {
  return n.op_type == op && (n.domain.empty() || n.domain == "ai.onnx") && n.inputs.size() == inputs &&
         n.outputs.size() == 1;
}

bool HasPerm(const Node& n, const std::vector<int64_t>& perm) {
  const Attribute* a = n.FindAttribute("perm");
  return IsOp(n, "Transpose", 1) && a && a->type == AttributeType::kInts && a->ints == perm;
}

AttentionMatcher::AttentionMatcher(const Model& model, const GraphIndex& idx,
                                   const std::unordered_map<std::string, TypeInfo>& types)
    : g_(model.graph), idx_(idx), types_(types), opset_(model.OpsetVersion("")),
      sym_(model.graph, idx, types, model.OpsetVersion("")) {
  for (size_t i = 0; i < g_.nodes.size(); ++i) {
    for (const std::string& out : g_.nodes[i].outputs) {
      if (!out.empty()) producer_[out] = i;
    }
  }
}

std::optional<AttentionMatch> AttentionMatcher::Match(size_t softmax) {
  const Node& sm = g_.nodes[softmax];
  if (!IsOp(sm, "Softmax", 1) || !SoftmaxOnLastAxis(sm)) return std::nullopt;
  if (std::optional<AttentionMatch> m = MatchPacked(softmax)) return m;
  return MatchProjected(softmax);
}

std::optional<size_t> AttentionMatcher::Producer(const std::string& value) const {
  auto it = producer_.find(value);
  if (it == producer_.end()) return std::nullopt;
  return it->second;
}

std::optional<size_t> AttentionMatcher::ProducerOp(const std::string& value, const char* op, size_t inputs) const {
  const std::optional<size_t> p = Producer(value);
  if (!p || !IsOp(g_.nodes[*p], op, inputs)) return std::nullopt;
  return p;
}

std::optional<size_t> AttentionMatcher::OnlyConsumer(const std::string& value) const {
  auto users = idx_.consumers.find(value);
  if (users == idx_.consumers.end() || users->second.size() != 1 || idx_.outputs.count(value)) return std::nullopt;
  return users->second[0];
}

std::string AttentionMatcher::SkipScale(const std::string& value, AttentionMatch& m) {
  auto it = producer_.find(value);
  if (it == producer_.end()) return value;
  const Node& n = g_.nodes[it->second];
  if (!IsOp(n, "Mul", 2) && !IsOp(n, "Div", 2)) return value;
  for (int data = 0; data < 2; ++data) {
    if (n.op_type == "Div" && data == 1) break;  // c / x is no scale
    const std::optional<double> c = sym_.ScalarOf(n.inputs[1 - data]);
    if (!c || !std::isfinite(*c) || *c == 0) continue;
    // A single element of higher rank would broadcast the data up.
    const std::optional<SymShape> in = sym_.ShapeOf(n.inputs[data]);
    if (!in || sym_.ShapeOf(n.outputs[0]) != in) continue;
    m.scale *= n.op_type == "Mul" ? *c : 1.0 / *c;
    m.chain.push_back(it->second);
    return n.inputs[data];
  }
  return value;
}

bool AttentionMatcher::SoftmaxOnLastAxis(const Node& sm) {
  const Attribute* a = sm.FindAttribute("axis");
  if (a && a->type != AttributeType::kInt) return false;
  const int64_t axis = a ? a->i : (opset_ >= 13 ? -1 : 1);
  return axis == -1 || axis == 3;  // the scores have rank 4 (checked by the MatMuls)
}

std::optional<int64_t> AttentionMatcher::HeadSplit(const std::string& value, AttentionMatch& m, std::string* split,
                                                   std::optional<SymShape>* sbe) {
  const auto r4 = ProducerOp(value, "Reshape", 2);
  if (!r4) return std::nullopt;
  const auto t = producer_.find(g_.nodes[*r4].inputs[0]);
  if (t == producer_.end() || !HasPerm(g_.nodes[t->second], {1, 0, 2})) return std::nullopt;
  const auto r3 = ProducerOp(g_.nodes[t->second].inputs[0], "Reshape", 2);
  if (!r3) return std::nullopt;
  const auto gather = ProducerOp(g_.nodes[*r3].inputs[0], "Gather", 2);
  if (!gather) return std::nullopt;
  const Node& gn = g_.nodes[*gather];
  const Attribute* axis = gn.FindAttribute("axis");
  if (axis && (axis->type != AttributeType::kInt || axis->i != 0)) return std::nullopt;
  const std::optional<SymShape> index = sym_.ValueOf(gn.inputs[1]);
  if (!idx_.constants.count(gn.inputs[1]) || !index || index->size() != 1 || !(*index)[0].known()) return std::nullopt;
  const int64_t i = (*index)[0].coeff;
  if (i < -3 || i > 2) return std::nullopt;

  // q [S,B,E] -> [S,B*H,D] -> [B*H,S,D] -> [B,H,S,D], proven dim by dim.
  const std::optional<SymShape> q = sym_.ShapeOf(gn.outputs[0]);
  const std::optional<SymShape> heads = sym_.ShapeOf(g_.nodes[*r3].outputs[0]);
  const std::optional<SymShape> bhsd = sym_.ShapeOf(value);
  if (!q || q->size() != 3 || !(*q)[2].known() || !heads || heads->size() != 3 || !bhsd || bhsd->size() != 4) {
    return std::nullopt;
  }
  const SymDim &s = (*q)[0], &b = (*q)[1];
  const int64_t e = (*q)[2].coeff, d = (*heads)[2].coeff;
  if (!(*heads)[2].known() || d <= 0 || e <= 0 || e % d != 0) return std::nullopt;
  const int64_t h = e / d;
  if ((m.heads && (m.heads != h || m.head_dim != d))) return std::nullopt;
  const std::optional<SymDim> bh = MulDims(b, SymDim::Known(h));
  if (!bh || !((*heads)[0] == s) || !((*heads)[1] == *bh)) return std::nullopt;
  if (*bhsd != SymShape{b, SymDim::Known(h), s, SymDim::Known(d)}) return std::nullopt;
  m.heads = h;
  m.head_dim = d;
  if (*sbe && **sbe != *q) return std::nullopt;
  *sbe = q;
  if (!split->empty() && *split != gn.inputs[0]) return std::nullopt;
  *split = gn.inputs[0];
  m.chain.insert(m.chain.end(), {*r4, t->second, *r3, *gather});
  return i < 0 ? i + 3 : i;
}

bool AttentionMatcher::Split(const std::string& split, const SymShape& sbe, AttentionMatch& m) {
  const auto sq = ProducerOp(split, "Squeeze", 2);
  if (!sq) return false;
  const auto t = producer_.find(g_.nodes[*sq].inputs[0]);
  if (t == producer_.end() || !HasPerm(g_.nodes[t->second], {3, 1, 2, 0, 4})) return false;
  const auto un = ProducerOp(g_.nodes[t->second].inputs[0], "Unsqueeze", 2);
  if (!un) return false;
  const auto r = ProducerOp(g_.nodes[*un].inputs[0], "Reshape", 2);
  if (!r) return false;
  m.qkv = g_.nodes[*r].inputs[0];
  auto type = types_.find(m.qkv);
  if (type == types_.end() || type->second.kind != TypeInfo::Kind::kTensor || !type->second.shape.rank_known ||
      type->second.shape.dims.size() != 3) {
    return false;
  }
  const DataType dt = type->second.elem_type;
  if (dt != DataType::kFloat32 && dt != DataType::kFloat16 && dt != DataType::kBfloat16) return false;
  const SymDim &s = sbe[0], &b = sbe[1], &e = sbe[2], one = SymDim::Known(1), three = SymDim::Known(3);
  const std::optional<SymDim> e3 = MulDims(e, three);
  if (!e3 || sym_.ShapeOf(m.qkv) != SymShape{s, b, *e3}) return false;
  if (sym_.ShapeOf(g_.nodes[*r].outputs[0]) != SymShape{s, b, three, e}) return false;
  if (sym_.ShapeOf(g_.nodes[*un].outputs[0]) != SymShape{one, s, b, three, e}) return false;
  if (sym_.ShapeOf(split) != SymShape{three, s, b, e}) return false;
  m.chain.insert(m.chain.end(), {*sq, t->second, *un, *r});
  return true;
}

std::optional<AttentionMatch> AttentionMatcher::MatchPacked(size_t softmax) {
  const Node& sm = g_.nodes[softmax];
  AttentionMatch m;
  m.chain.push_back(softmax);
  const auto mm1 = ProducerOp(SkipScale(sm.inputs[0], m), "MatMul", 2);
  if (!mm1) return std::nullopt;
  m.chain.push_back(*mm1);
  const std::string q4 = SkipScale(g_.nodes[*mm1].inputs[0], m);
  const auto kt = producer_.find(SkipScale(g_.nodes[*mm1].inputs[1], m));
  if (kt == producer_.end() || !HasPerm(g_.nodes[kt->second], {0, 1, 3, 2})) return std::nullopt;
  m.chain.push_back(kt->second);
  const std::string k4 = SkipScale(g_.nodes[kt->second].inputs[0], m);

  auto users = idx_.consumers.find(sm.outputs[0]);
  if (users == idx_.consumers.end() || users->second.size() != 1) return std::nullopt;
  const size_t mm2 = users->second[0];
  if (!IsOp(g_.nodes[mm2], "MatMul", 2) || g_.nodes[mm2].inputs[0] != sm.outputs[0]) return std::nullopt;
  m.chain.push_back(mm2);
  users = idx_.consumers.find(g_.nodes[mm2].outputs[0]);
  if (users == idx_.consumers.end() || users->second.size() != 1) return std::nullopt;
  m.out_transpose = users->second[0];
  if (!HasPerm(g_.nodes[m.out_transpose], {2, 0, 1, 3})) return std::nullopt;
  m.chain.push_back(m.out_transpose);

  std::string split;
  std::optional<SymShape> sbe;
  if (HeadSplit(q4, m, &split, &sbe) != 0 || HeadSplit(k4, m, &split, &sbe) != 1 ||
      HeadSplit(g_.nodes[mm2].inputs[1], m, &split, &sbe) != 2) {
    return std::nullopt;
  }
  if (!Split(split, *sbe, m)) return std::nullopt;
  const SymDim &s = (*sbe)[0], &b = (*sbe)[1], h = SymDim::Known(m.heads), d = SymDim::Known(m.head_dim);
  if (sym_.ShapeOf(g_.nodes[m.out_transpose].outputs[0]) != SymShape{s, b, h, d}) return std::nullopt;
  if (!std::isfinite(m.scale) || m.scale == 0) return std::nullopt;
  return m;
}

// The constant initializer `name` of `g`, when its bytes are all there.
const Tensor* ConstantBytes(const Graph& g, const std::string& name) {
  for (const ValueInfo& v : g.inputs) {
    if (v.name == name) return nullptr;  // overridable at run time
  }
  for (const Tensor& t : g.initializers) {
    if (t.name == name) return t.HasDenseBytes() ? &t : nullptr;
  }
  return nullptr;
}

namespace {

// A name no value of `g` has, starting from `base`.
std::string FreshName(const std::unordered_set<std::string>& taken, const std::string& base) {
  std::string name = base;
  for (int k = 1; taken.count(name); ++k) name = base + "_" + std::to_string(k);
  return name;
}

// The int64 initializer [0, 0, H, D]: Y [S,B,E] viewed as [S,B,H,D].
Tensor HeadShape(const std::string& name, int64_t heads, int64_t head_dim) {
  auto data = std::make_shared<std::vector<int64_t>>(std::vector<int64_t>{0, 0, heads, head_dim});
  Tensor t;
  t.name = name;
  t.dtype = DataType::kInt64;
  t.dims = {4};
  t.storage = Tensor::Storage::kTypedDecoded;
  t.bytes = {reinterpret_cast<const uint8_t*>(data->data()), data->size() * sizeof(int64_t)};
  t.keep_alive = data;
  return t;
}

// The Attention node for `m`, reading qkv (and the mask); its name and
// output are the caller's.
Node AttentionNode(const AttentionMatch& m) {
  Node att;
  att.op_type = kAttentionOp;
  att.domain = kVigilDomain;
  att.inputs = {m.qkv};
  if (!m.mask.empty()) att.inputs.push_back(m.mask);
  Attribute heads, scale, layout;
  heads.name = "num_heads", heads.type = AttributeType::kInt, heads.i = m.heads;
  scale.name = "scale", scale.type = AttributeType::kFloat, scale.f = static_cast<float>(m.scale);
  layout.name = "layout", layout.type = AttributeType::kString, layout.s = m.batch_first ? "bse" : "sbe";
  att.attributes = {heads, scale, layout};
  if (m.zero_undefined_rows) {
    Attribute rows;
    rows.name = kAttentionUndefinedRows, rows.type = AttributeType::kString, rows.s = "zero";
    att.attributes.push_back(rows);
  }
  return att;
}

// The type of the packed projection of a projected match: q's, with 3E columns.
std::optional<TypeInfo> PackedType(const Graph& g, const AttentionMatch& m,
                                   const std::unordered_map<std::string, TypeInfo>& types) {
  auto q = types.find(g.nodes[m.projections[0]].outputs[0]);
  if (q == types.end() || !q->second.shape.rank_known || q->second.shape.dims.empty()) return std::nullopt;
  TypeInfo t = q->second;
  t.shape.dims.back() = Dim::Known(3 * m.heads * m.head_dim);
  return t;
}

// [rows, c0] ++ [rows, c1] ++ [rows, c2] along the columns (a bias is one
// row), as a new initializer; nullopt when a part is not a constant of
// `dtype` with `rows` rows of `cols` columns.
std::optional<Tensor> ConcatColumns(const Graph& g, const std::array<std::string, 3>& parts, DataType dtype,
                                    int64_t rows, int64_t cols, std::vector<int64_t> dims, std::string name) {
  std::array<const Tensor*, 3> t{};
  for (size_t i = 0; i < 3; ++i) {
    t[i] = ConstantBytes(g, parts[i]);
    if (!t[i] || t[i]->dtype != dtype || t[i]->ElementCount() != static_cast<uint64_t>(rows * cols)) {
      return std::nullopt;
    }
  }
  const size_t row_bytes = static_cast<size_t>(cols) * static_cast<size_t>(DataTypeBits(dtype) / 8);
  auto owned = std::shared_ptr<uint8_t[]>(new uint8_t[std::max<size_t>(1, 3 * row_bytes * rows)]);
  uint8_t* out = owned.get();
  for (int64_t r = 0; r < rows; ++r) {
    for (size_t i = 0; i < 3; ++i, out += row_bytes) std::memcpy(out, t[i]->bytes.data() + r * row_bytes, row_bytes);
  }
  Tensor c;
  c.name = std::move(name);
  c.dtype = dtype;
  c.dims = std::move(dims);
  c.storage = Tensor::Storage::kTypedDecoded;
  c.bytes = {owned.get(), 3 * row_bytes * static_cast<size_t>(rows)};
  c.keep_alive = std::shared_ptr<const void>(owned, owned.get());
  return c;
}

// A known-shape tensor type.
TypeInfo TensorTypeOf(DataType dtype, const std::vector<int64_t>& dims) {
  TypeInfo t;
  t.kind = TypeInfo::Kind::kTensor;
  t.elem_type = dtype;
  t.shape.rank_known = true;
  for (int64_t d : dims) t.shape.dims.push_back(Dim::Known(d));
  return t;
}

// The packed in-projection of a projected match: MatMulBias(x, [Wq Wk Wv],
// [bq bk bv]) writing `m.qkv`, with its two new initializers appended to
// `g` and their types recorded in `types` (a device places the node by
// them); nullopt (and nothing changed) when the weights cannot be packed.
std::optional<Node> PackedProjection(Graph& g, const AttentionMatch& m, std::unordered_set<std::string>& taken,
                                     std::unordered_map<std::string, TypeInfo>& types) {
  std::array<std::string, 3> w, b;
  for (size_t i = 0; i < 3; ++i) {
    const Node& p = g.nodes[m.projections[i]];
    w[i] = p.inputs[1];
    b[i] = p.inputs[2];
  }
  const Tensor* w0 = ConstantBytes(g, w[0]);
  if (!w0 || w0->dims.size() != 2) return std::nullopt;
  const int64_t k = w0->dims[0], e = m.heads * m.head_dim;
  const std::string base = g.nodes[m.projections[0]].name.empty() ? m.qkv : g.nodes[m.projections[0]].name;
  const std::string wname = FreshName(taken, base + "/packed_qkv_weight");
  const std::string bname = FreshName(taken, base + "/packed_qkv_bias");
  std::optional<Tensor> wt = ConcatColumns(g, w, w0->dtype, k, e, {k, 3 * e}, wname);
  std::optional<Tensor> bt = ConcatColumns(g, b, w0->dtype, 1, e, {3 * e}, bname);
  if (!wt || !bt) return std::nullopt;
  taken.insert(wname);
  taken.insert(bname);
  types[wname] = TensorTypeOf(wt->dtype, wt->dims);
  types[bname] = TensorTypeOf(bt->dtype, bt->dims);
  g.initializers.push_back(std::move(*wt));
  g.initializers.push_back(std::move(*bt));
  Node packed;
  packed.name = base + "/PackedQKV";
  packed.op_type = kMatMulBiasOp;
  packed.domain = kVigilDomain;
  packed.inputs = {m.x, wname, bname};
  packed.outputs = {m.qkv};
  return packed;
}

// The fused nodes for `m`: [the packed projection,] Attention, then the
// Reshape that writes the replaced Transpose's output. Records the new
// values' types.
Result<std::vector<Node>> Rewrite(Graph& g, AttentionMatch m, std::unordered_set<std::string>& taken,
                                  std::unordered_map<std::string, TypeInfo>& types) {
  std::vector<Node> nodes;
  const std::string out = g.nodes[m.out_transpose].outputs[0];
  if (m.projected) {
    std::optional<TypeInfo> qkv_type = PackedType(g, m, types);
    m.qkv = FreshName(taken, out + "/packed_qkv");
    std::optional<Node> packed = qkv_type ? PackedProjection(g, m, taken, types) : std::nullopt;
    // The matcher checked the types and the weights' bytes.
    if (!packed) return InternalError("attention fusion: the projections of '{}' cannot be packed", out);
    taken.insert(m.qkv);
    types[m.qkv] = *qkv_type;
    nodes.push_back(std::move(*packed));
  }
  const Node& tr = g.nodes[m.out_transpose];
  const std::string y = FreshName(taken, out + "/attention");
  taken.insert(y);
  const std::string shape = FreshName(taken, out + "/attention_heads");
  taken.insert(shape);
  g.initializers.push_back(HeadShape(shape, m.heads, m.head_dim));

  Node att = AttentionNode(m);
  att.name = (tr.name.empty() ? y : tr.name) + "/Attention";
  att.outputs = {y};

  Node view;
  view.name = tr.name;
  view.op_type = "Reshape";
  view.inputs = {y, shape};
  view.outputs = tr.outputs;

  TypeInfo yt = types.at(m.qkv);
  yt.shape.dims[2] = Dim::Known(m.heads * m.head_dim);
  types[y] = yt;
  types[shape] = TensorTypeOf(DataType::kInt64, {4});
  nodes.push_back(std::move(att));
  nodes.push_back(std::move(view));
  return nodes;
}

// The values the replacement of `m` reads: qkv (or x, for a projected
// match), and the mask.
std::vector<std::string> ReplacementInputs(const AttentionMatch& m) {
  std::vector<std::string> in = {m.projected ? m.x : m.qkv};
  if (!m.mask.empty()) in.push_back(m.mask);
  return in;
}

// The nodes still needed once the chains of `matches` are replaced: those
// with a path to a graph output, where a replaced chain reads only what
// ReplacementInputs names. When a needed node reads a value of a chain, that
// chain is dropped from `matches` (its values must stay) and the walk starts
// again.
std::vector<bool> LiveAfterRewrite(const Graph& g, std::vector<AttentionMatch>& matches) {
  std::unordered_map<std::string, size_t> producer;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    for (const std::string& out : g.nodes[i].outputs) {
      if (!out.empty()) producer[out] = i;
    }
  }
  for (;;) {
    std::unordered_map<size_t, size_t> owner;  // chain node -> match, out_transpose excluded
    std::unordered_map<size_t, std::vector<std::string>> replaced;  // out_transpose -> what its replacement reads
    for (size_t k = 0; k < matches.size(); ++k) {
      for (size_t j : matches[k].chain) owner[j] = k;
      owner.erase(matches[k].out_transpose);
      replaced[matches[k].out_transpose] = ReplacementInputs(matches[k]);
    }
    std::vector<bool> live(g.nodes.size(), false);
    std::vector<const std::string*> work;
    for (const ValueInfo& v : g.outputs) work.push_back(&v.name);
    std::optional<size_t> broken;
    while (!work.empty() && !broken) {
      auto p = producer.find(*work.back());
      work.pop_back();
      if (p == producer.end() || live[p->second]) continue;
      if (auto o = owner.find(p->second); o != owner.end()) {
        broken = o->second;
        break;
      }
      live[p->second] = true;
      if (auto r = replaced.find(p->second); r != replaced.end()) {
        for (const std::string& in : r->second) work.push_back(&in);
      } else {
        for (const std::string& in : g.nodes[p->second].inputs) work.push_back(&in);
      }
    }
    if (!broken) return live;
    matches.erase(matches.begin() + static_cast<long>(*broken));
  }
}

}  // namespace

Result<size_t> FuseAttention(Model& model, std::unordered_map<std::string, TypeInfo>& types,
                             const AttentionAcceptor& accept) {
  Graph& g = model.graph;
  std::vector<AttentionMatch> matches;
  {
    const GraphIndex idx = IndexGraph(g);
    AttentionMatcher matcher(model, idx, types);
    std::unordered_set<size_t> taken;
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      std::optional<AttentionMatch> m = matcher.Match(i);
      if (!m) continue;
      if (accept) {
        std::optional<TypeInfo> qkv;
        if (m->projected) {
          qkv = PackedType(g, *m, types);
        } else if (auto it = types.find(m->qkv); it != types.end()) {
          qkv = it->second;
        }
        if (!qkv) continue;
        std::vector<const TypeInfo*> inputs = {&*qkv};
        if (!m->mask.empty()) {
          auto mask = types.find(m->mask);
          inputs.push_back(mask == types.end() ? nullptr : &mask->second);
        }
        if (!accept(AttentionNode(*m), inputs)) continue;
      }
      bool overlap = false;
      for (size_t j : m->chain) overlap = overlap || taken.count(j);
      if (overlap) continue;
      taken.insert(m->chain.begin(), m->chain.end());
      matches.push_back(std::move(*m));
    }
  }
  const std::vector<bool> live = LiveAfterRewrite(g, matches);
  if (matches.empty()) return size_t{0};

  std::unordered_set<std::string> names;
  for (const Node& n : g.nodes) names.insert(n.outputs.begin(), n.outputs.end());
  for (const Tensor& t : g.initializers) names.insert(t.name);
  for (const ValueInfo& v : g.inputs) names.insert(v.name);
  std::unordered_map<size_t, std::vector<Node>> replacement;
  for (const AttentionMatch& m : matches) {
    VIGIL_ASSIGN_OR_RETURN(replacement[m.out_transpose], Rewrite(g, m, names, types));
  }
  // The chains go, and with them every node left without a path to an
  // output: their shape arithmetic (and nodes that were dead already).
  std::vector<Node> kept;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    auto r = replacement.find(i);
    if (r != replacement.end()) {
      for (Node& n : r->second) kept.push_back(std::move(n));
    } else if (live[i]) {
      kept.push_back(std::move(g.nodes[i]));
    }
  }
  g.nodes = std::move(kept);
  if (model.OpsetVersion(kVigilDomain) < 0) model.opset_imports.push_back({kVigilDomain, kVigilOpsetVersion});
  return matches.size();
}

}  // namespace vigil::ir
