#include "ir/fuse_qdq.h"

#include <array>
#include <cmath>
#include <cstring>
#include <memory>
#include <optional>
#include <string_view>
#include <unordered_set>

#include <fmt/format.h>

#include "ir/graph_index.h"
#include "ir/layout_nhwc.h"  // kVigilDomain, kConvNhwcRelu
#include "ir/validate.h"

namespace vigil::ir {
namespace {

bool IsDefaultDomain(std::string_view d) { return d.empty() || d == "ai.onnx"; }

bool IsOp(const Node& n, std::string_view op) { return n.op_type == op && IsDefaultDomain(n.domain); }

// The quantization parameters of a DequantizeLinear or QuantizeLinear whose
// scale is a constant float32 scalar (one element) and whose zero point is a
// constant one-element tensor (or absent).
struct QParams {
  float scale = 0;
  int64_t zero_point = 0;
  DataType zp_type = DataType::kUndefined;  // kUndefined: no zero point input
  bool operator==(const QParams& o) const { return scale == o.scale && zero_point == o.zero_point; }
};

// Every element of a constant integer or float32 tensor, as double.
std::optional<std::vector<double>> Values(const Tensor& t) {
  std::optional<uint64_t> count = t.ElementCount();
  if (!count) return std::nullopt;
  const size_t bytes = static_cast<size_t>(DataTypeBits(t.dtype) / 8);
  if (bytes == 0 || t.bytes.size() != *count * bytes || t.storage == Tensor::Storage::kStrings) return std::nullopt;
  std::vector<double> out(*count);
  const uint8_t* p = t.bytes.data();
  for (size_t i = 0; i < out.size(); ++i, p += bytes) {
    switch (t.dtype) {
      case DataType::kFloat32: { float v; std::memcpy(&v, p, 4); out[i] = v; break; }
      case DataType::kInt8: out[i] = static_cast<int8_t>(*p); break;
      case DataType::kUint8: out[i] = *p; break;
      case DataType::kInt32: { int32_t v; std::memcpy(&v, p, 4); out[i] = v; break; }
      default: return std::nullopt;
    }
  }
  return out;
}

Tensor FloatInitializer(std::string name, const std::vector<float>& v) {
  auto owned = std::shared_ptr<uint8_t[]>(new uint8_t[std::max<size_t>(1, v.size() * 4)]);
  std::memcpy(owned.get(), v.data(), v.size() * 4);
  Tensor t;
  t.name = std::move(name);
  t.dtype = DataType::kFloat32;
  t.dims = {static_cast<int64_t>(v.size())};
  t.storage = Tensor::Storage::kTypedDecoded;
  t.bytes = {owned.get(), v.size() * 4};
  t.keep_alive = std::shared_ptr<const void>(owned, owned.get());
  return t;
}

class QdqFuser {
 public:
  QdqFuser(Model& model, const std::unordered_map<std::string, TypeInfo>& types, const QdqAcceptor& accept)
      : model_(model), g_(model.graph), types_(types), accept_(accept) {}

  Result<QdqStats> Run();

 private:
  void Reindex() {
    idx_ = IndexGraph(g_);
    producer_.clear();
    for (size_t i = 0; i < g_.nodes.size(); ++i) {
      if (dead_[i]) continue;
      for (const std::string& o : g_.nodes[i].outputs) {
        if (!o.empty()) producer_[o] = i;
      }
    }
  }
  const TypeInfo* TypeOf(const std::string& v) const {
    auto it = types_.find(v);
    return v.empty() || it == types_.end() ? nullptr : &it->second;
  }
  bool IsInt8(const std::string& v) const {
    const TypeInfo* t = TypeOf(v);
    return t && t->kind == TypeInfo::Kind::kTensor && t->elem_type == DataType::kInt8;
  }
  const Tensor* Constant(const std::string& v) const {
    auto it = idx_.constants.find(v);
    return it == idx_.constants.end() ? nullptr : it->second;
  }
  // The live readers of `v`.
  std::vector<size_t> Readers(const std::string& v) const {
    std::vector<size_t> r;
    auto it = idx_.consumers.find(v);
    if (it == idx_.consumers.end()) return r;
    for (size_t i : it->second) {
      if (!dead_[i]) r.push_back(i);
    }
    return r;
  }
  // The one live reader of `v`, when it has exactly one and is no graph output.
  std::optional<size_t> SoleReader(const std::string& v) const {
    std::vector<size_t> r = Readers(v);
    if (r.size() != 1 || idx_.outputs.count(v)) return std::nullopt;
    return r[0];
  }
  std::optional<size_t> Producer(const std::string& v) const {
    auto it = producer_.find(v);
    if (it == producer_.end() || dead_[it->second]) return std::nullopt;
    return it->second;
  }
  // Scalar parameters of Q/DQ node `n` (inputs 1 and 2), or why not.
  std::optional<QParams> ScalarParams(size_t node, std::string* why) const;
  // DQ node producing `v` with scalar symmetric int8 parameters.
  std::optional<std::pair<size_t, QParams>> Int8Dq(const std::string& v, std::string* why) const;
  // Q node that is the sole reader of `v`, scalar symmetric int8.
  std::optional<std::pair<size_t, QParams>> Int8Q(const std::string& v, std::string* why) const;
  // After a fused node writing `out` (int8, scale `p`): the chain
  // DQ(p) -> Relu -> Q(p) that reads only it, as the three node indices.
  std::optional<std::array<size_t, 3>> ReluChain(const std::string& out, const QParams& p) const;

  void TryConv(size_t c);
  void TryAdd(size_t a);
  void TryOnInt8(size_t i);
  void RemoveDeadDq();
  std::string UniqueInitializer(const std::string& base);

  Model& model_;
  Graph& g_;
  const std::unordered_map<std::string, TypeInfo>& types_;
  const QdqAcceptor& accept_;
  GraphIndex idx_;
  std::unordered_map<std::string, size_t> producer_;
  std::vector<bool> dead_;
  std::unordered_set<std::string> names_;
  QdqStats stats_;
};

std::optional<QParams> QdqFuser::ScalarParams(size_t node, std::string* why) const {
  const Node& n = g_.nodes[node];
  if (n.inputs.size() < 2 || n.outputs.size() != 1) return std::nullopt;
  const Tensor* s = Constant(n.inputs[1]);
  std::optional<std::vector<double>> sv;
  if (!s || s->dtype != DataType::kFloat32 || !(sv = Values(*s)) || sv->size() != 1) {
    if (why) *why = fmt::format("the scale of {} is not a constant float32 scalar", n.Describe(node));
    return std::nullopt;
  }
  QParams p;
  p.scale = static_cast<float>((*sv)[0]);
  if (n.inputs.size() > 2 && !n.inputs[2].empty()) {
    const Tensor* z = Constant(n.inputs[2]);
    std::optional<std::vector<double>> zv;
    if (!z || !(zv = Values(*z)) || zv->size() != 1) {
      if (why) *why = fmt::format("the zero point of {} is not a constant scalar", n.Describe(node));
      return std::nullopt;
    }
    p.zero_point = static_cast<int64_t>((*zv)[0]);
    p.zp_type = z->dtype;
  }
  if (const Attribute* b = n.FindAttribute("block_size"); b && b->i != 0) return std::nullopt;
  if (!(p.scale > 0) || !std::isfinite(p.scale)) {
    if (why) *why = fmt::format("the scale of {} is {} (not a positive finite number)", n.Describe(node), p.scale);
    return std::nullopt;
  }
  return p;
}

std::optional<std::pair<size_t, QParams>> QdqFuser::Int8Dq(const std::string& v, std::string* why) const {
  std::optional<size_t> d = Producer(v);
  if (!d || !IsOp(g_.nodes[*d], "DequantizeLinear")) {
    if (why) *why = fmt::format("'{}' does not come from a DequantizeLinear", v);
    return std::nullopt;
  }
  const size_t node_index = *d;
  const Node& n = g_.nodes[*d];
  std::optional<QParams> p = ScalarParams(node_index, why);
  if (!p) return std::nullopt;
  if (!IsInt8(n.inputs[0])) {
    if (why) *why = fmt::format("{} dequantizes {}, not int8 (uint8 activations are not fused: quantize with "
                                "activation_type=QInt8)", n.Describe(*d),
                                TypeOf(n.inputs[0]) ? TypeToString(*TypeOf(n.inputs[0])) : "an unknown type");
    return std::nullopt;
  }
  if (p->zero_point != 0) {
    if (why) *why = fmt::format("{} has zero point {}; int8 convolutions need 0 (quantize with "
                                "extra_options={{'ActivationSymmetric': True}})", n.Describe(*d), p->zero_point);
    return std::nullopt;
  }
  return std::make_pair(*d, *p);
}

std::optional<std::pair<size_t, QParams>> QdqFuser::Int8Q(const std::string& v, std::string* why) const {
  std::optional<size_t> q = SoleReader(v);
  if (!q || !IsOp(g_.nodes[*q], "QuantizeLinear")) {
    if (why) *why = fmt::format("its result '{}' is not read by one QuantizeLinear alone", v);
    return std::nullopt;
  }
  const size_t node_index = *q;
  const Node& n = g_.nodes[*q];
  std::optional<QParams> p = ScalarParams(node_index, why);
  if (!p) return std::nullopt;
  if (!IsInt8(n.outputs[0]) || p->zero_point != 0) {
    if (why) *why = fmt::format("{} does not quantize to int8 with zero point 0", n.Describe(*q));
    return std::nullopt;
  }
  return std::make_pair(*q, *p);
}

std::optional<std::array<size_t, 3>> QdqFuser::ReluChain(const std::string& out, const QParams& p) const {
  std::optional<size_t> dq = SoleReader(out);
  if (!dq || !IsOp(g_.nodes[*dq], "DequantizeLinear") || g_.nodes[*dq].inputs[0] != out) return std::nullopt;
  std::optional<QParams> dp = ScalarParams(*dq, nullptr);
  if (!dp || !(*dp == p)) return std::nullopt;
  std::optional<size_t> relu = SoleReader(g_.nodes[*dq].outputs[0]);
  if (!relu || !IsOp(g_.nodes[*relu], "Relu")) return std::nullopt;
  std::optional<std::pair<size_t, QParams>> q = Int8Q(g_.nodes[*relu].outputs[0], nullptr);
  if (!q || !(q->second == p)) return std::nullopt;
  return std::array<size_t, 3>{*dq, *relu, q->first};
}

std::string QdqFuser::UniqueInitializer(const std::string& base) {
  std::string name = base;
  for (int k = 1; names_.count(name); ++k) name = fmt::format("{}_{}", base, k);
  names_.insert(name);
  return name;
}

Attribute StringAttribute(std::string name, std::string value) {
  Attribute a;
  a.name = std::move(name);
  a.type = AttributeType::kString;
  a.s = std::move(value);
  return a;
}

void QdqFuser::TryConv(size_t c) {
  const Node& conv = g_.nodes[c];
  const std::string label = conv.Describe(c);
  std::string why;
  auto note = [&](bool int8) {
    stats_.conv_notes.push_back({label, int8, int8 ? "" : why});
  };
  if (conv.inputs.size() < 2 || conv.outputs.size() != 1) return;
  // Only Convs of a QDQ chain are noted.
  std::optional<size_t> xp = Producer(conv.inputs[0]);
  if (!xp || !IsOp(g_.nodes[*xp], "DequantizeLinear")) return;
  auto x = Int8Dq(conv.inputs[0], &why);
  if (!x) return note(false);
  const Attribute* group = conv.FindAttribute("group");
  if (group && group->i != 1) {
    why = fmt::format("group {} (int8 convolutions are fused for group 1 only)", group->i);
    return note(false);
  }
  // W: DQ of a constant int8 [M, C, kH, kW], zero points 0, scale per tensor or per M.
  std::optional<size_t> wd = Producer(conv.inputs[1]);
  const Tensor* wq = wd && IsOp(g_.nodes[*wd], "DequantizeLinear") ? Constant(g_.nodes[*wd].inputs[0]) : nullptr;
  if (!wq || wq->dtype != DataType::kInt8 || wq->dims.size() != 4) {
    why = "W is not a DequantizeLinear of a constant 4-D int8 tensor";
    return note(false);
  }
  const Node& wdq = g_.nodes[*wd];
  const int64_t m = wq->dims[0];
  const Tensor* ws = wdq.inputs.size() > 1 ? Constant(wdq.inputs[1]) : nullptr;
  std::optional<std::vector<double>> wsv = ws && ws->dtype == DataType::kFloat32 ? Values(*ws) : std::nullopt;
  // A per-channel scale must be along axis 0 (M); DequantizeLinear's default axis is 1.
  const Attribute* waxis = wdq.FindAttribute("axis");
  const bool per_channel = wsv && static_cast<int64_t>(wsv->size()) == m && m > 1;
  const bool axis_m = waxis && (waxis->i == 0 || waxis->i == -4);
  if (!wsv || (wsv->size() != 1 && !per_channel) || (per_channel && !axis_m)) {
    why = "W's scale is neither one constant nor one per output channel (axis 0)";
    return note(false);
  }
  if (wdq.inputs.size() > 2 && !wdq.inputs[2].empty()) {
    const Tensor* wz = Constant(wdq.inputs[2]);
    std::optional<std::vector<double>> wzv = wz ? Values(*wz) : std::nullopt;
    bool zeros = wzv.has_value();
    for (double v : wzv.value_or(std::vector<double>{})) zeros = zeros && v == 0;
    if (!zeros) {
      why = "W's zero points are not all 0 (quantize weights symmetrically)";
      return note(false);
    }
  }
  // The bias, dequantized (in double), or zeros.
  std::vector<double> bias(static_cast<size_t>(m), 0.0);
  if (conv.inputs.size() > 2 && !conv.inputs[2].empty()) {
    const Tensor* bf = Constant(conv.inputs[2]);
    std::optional<std::vector<double>> bv;
    if (bf && bf->dtype == DataType::kFloat32) {
      bv = Values(*bf);
    } else if (std::optional<size_t> bd = Producer(conv.inputs[2]); bd && IsOp(g_.nodes[*bd], "DequantizeLinear")) {
      const Node& n = g_.nodes[*bd];
      const Tensor* bq = Constant(n.inputs[0]);
      const Tensor* bs = n.inputs.size() > 1 ? Constant(n.inputs[1]) : nullptr;
      const Tensor* bz = n.inputs.size() > 2 && !n.inputs[2].empty() ? Constant(n.inputs[2]) : nullptr;
      std::optional<std::vector<double>> q = bq ? Values(*bq) : std::nullopt;
      std::optional<std::vector<double>> s = bs && bs->dtype == DataType::kFloat32 ? Values(*bs) : std::nullopt;
      std::optional<std::vector<double>> z = bz ? Values(*bz) : std::nullopt;
      if (q && s && (s->size() == 1 || s->size() == q->size()) && (!bz || (z && z->size() == s->size()))) {
        bv.emplace(q->size());
        for (size_t i = 0; i < q->size(); ++i) {
          const size_t k = s->size() == 1 ? 0 : i;
          // float32, as DequantizeLinear computes it: (float(q) - zp) * scale.
          const float centered = static_cast<float>((*q)[i]) - static_cast<float>(z ? (*z)[k] : 0.0);
          (*bv)[i] = static_cast<double>(centered * static_cast<float>((*s)[k]));
        }
      }
    }
    if (!bv || static_cast<int64_t>(bv->size()) != m) {
      why = "B is neither a constant float32 [M] nor a DequantizeLinear of a constant";
      return note(false);
    }
    bias = *bv;
  }
  auto y = Int8Q(conv.outputs[0], &why);
  if (!y) return note(false);
  std::optional<std::array<size_t, 3>> relu = ReluChain(g_.nodes[y->first].outputs[0], y->second);

  const double sx = x->second.scale, sy = y->second.scale;
  std::vector<float> scale(static_cast<size_t>(m)), shift(static_cast<size_t>(m));
  for (int64_t i = 0; i < m; ++i) {
    const double sw = (*wsv)[wsv->size() == 1 ? 0 : static_cast<size_t>(i)];
    scale[i] = static_cast<float>(sx * sw / sy);
    shift[i] = static_cast<float>(bias[i] / sy);
  }
  Node fused;
  fused.name = conv.name.empty() ? fmt::format("qconv{}", c) : conv.name;
  fused.domain = kVigilDomain;
  fused.op_type = kQConvOp;
  const std::string base = conv.name.empty() ? fmt::format("qconv{}", c) : conv.name;
  const std::string scale_name = UniqueInitializer(base + "/qconv_scale");
  const std::string shift_name = UniqueInitializer(base + "/qconv_bias");
  fused.inputs = {g_.nodes[x->first].inputs[0], wdq.inputs[0], scale_name, shift_name};
  const std::string out = relu ? g_.nodes[(*relu)[2]].outputs[0] : g_.nodes[y->first].outputs[0];
  fused.outputs = {out};
  for (const Attribute& a : conv.attributes) {
    if (a.name != "group") fused.attributes.push_back(a);
  }
  if (relu) fused.attributes.push_back(StringAttribute("activation", kConvNhwcRelu));
  // Asked with the node's types (W's from the constant).
  TypeInfo w_type;
  w_type.kind = TypeInfo::Kind::kTensor;
  w_type.elem_type = DataType::kInt8;
  w_type.shape.rank_known = true;
  for (int64_t d : wq->dims) w_type.shape.dims.push_back(Dim::Known(d));
  TypeInfo vec = w_type;
  vec.elem_type = DataType::kFloat32;
  vec.shape.dims = {Dim::Known(m)};
  std::vector<const TypeInfo*> in_types = {TypeOf(fused.inputs[0]), &w_type, &vec, &vec};
  std::vector<const TypeInfo*> out_types = {TypeOf(out)};
  if (accept_ && !accept_(fused, in_types, out_types, &why)) {
    if (why.empty()) why = "the device does not take it";
    return note(false);
  }
  g_.initializers.push_back(FloatInitializer(scale_name, scale));
  g_.initializers.push_back(FloatInitializer(shift_name, shift));
  dead_[c] = true;
  dead_[y->first] = true;
  if (relu) {
    for (size_t k : *relu) dead_[k] = true;
    ++stats_.relus;
  }
  g_.nodes.push_back(std::move(fused));
  dead_.push_back(false);
  ++stats_.convs;
  note(true);
}

void QdqFuser::TryAdd(size_t a) {
  const Node& add = g_.nodes[a];
  if (add.inputs.size() != 2 || add.outputs.size() != 1) return;
  auto l = Int8Dq(add.inputs[0], nullptr);
  auto r = Int8Dq(add.inputs[1], nullptr);
  if (!l || !r) return;
  const TypeInfo* lt = TypeOf(g_.nodes[l->first].inputs[0]);
  const TypeInfo* rt = TypeOf(g_.nodes[r->first].inputs[0]);
  // Same shape, dim by dim known or the same named symbol: no broadcasting.
  if (!lt || !rt || !lt->shape.rank_known || !rt->shape.rank_known || lt->shape.dims.size() != rt->shape.dims.size()) {
    return;
  }
  for (size_t i = 0; i < lt->shape.dims.size(); ++i) {
    const Dim &p = lt->shape.dims[i], &q = rt->shape.dims[i];
    const bool same = (p.is_known() && q.is_known() && *p.value == *q.value) ||
                      (p.is_symbolic() && q.is_symbolic() && p.param == q.param);
    if (!same) return;
  }
  auto y = Int8Q(add.outputs[0], nullptr);
  if (!y) return;
  std::optional<std::array<size_t, 3>> relu = ReluChain(g_.nodes[y->first].outputs[0], y->second);
  Node fused;
  fused.name = add.name.empty() ? fmt::format("qadd{}", a) : add.name;
  fused.domain = kVigilDomain;
  fused.op_type = kQAddOp;
  const Node& ldq = g_.nodes[l->first];
  const Node& rdq = g_.nodes[r->first];
  const Node& q = g_.nodes[y->first];
  fused.inputs = {ldq.inputs[0], ldq.inputs[1], rdq.inputs[0], rdq.inputs[1], q.inputs[1]};
  const std::string out = relu ? g_.nodes[(*relu)[2]].outputs[0] : q.outputs[0];
  fused.outputs = {out};
  if (relu) fused.attributes.push_back(StringAttribute("activation", kConvNhwcRelu));
  std::vector<const TypeInfo*> in_types;
  for (const std::string& v : fused.inputs) in_types.push_back(TypeOf(v));
  if (accept_ && !accept_(fused, in_types, {TypeOf(out)}, nullptr)) return;
  dead_[a] = true;
  dead_[y->first] = true;
  if (relu) {
    for (size_t k : *relu) dead_[k] = true;
    ++stats_.relus;
  }
  g_.nodes.push_back(std::move(fused));
  dead_.push_back(false);
  ++stats_.adds;
}

// DQ(s, z) -> op -> Q(s, z)  =>  op on the int8 values, for the ops that
// commute with the quantization maps: MaxPool (opset 12+: max is monotone)
// and Relu (opset 14+, zero point 0: Q(max(v, 0)) is max(Q(v), 0)); Q(DQ(q))
// is q. A MaxPool whose Indices are read is left alone.
void QdqFuser::TryOnInt8(size_t i) {
  const Node& node = g_.nodes[i];
  const bool relu = node.op_type == "Relu";
  if (node.inputs.size() != 1 || node.outputs.empty() || model_.OpsetVersion("") < (relu ? 14 : 12)) return;
  if (node.outputs.size() > 1 && !node.outputs[1].empty()) return;
  auto x = Int8Dq(node.inputs[0], nullptr);  // zero point 0, which Relu needs
  if (!x) return;
  auto y = Int8Q(node.outputs[0], nullptr);
  if (!y || !(y->second == x->second)) return;
  Node fused = node;
  fused.inputs = {g_.nodes[x->first].inputs[0]};
  fused.outputs = {g_.nodes[y->first].outputs[0]};
  if (accept_ && !accept_(fused, {TypeOf(fused.inputs[0])}, {TypeOf(fused.outputs[0])}, nullptr)) return;
  dead_[i] = true;
  dead_[y->first] = true;
  g_.nodes.push_back(std::move(fused));
  dead_.push_back(false);
  ++(relu ? stats_.relus : stats_.pools);
}

// DequantizeLinear nodes whose results nobody reads any more.
void QdqFuser::RemoveDeadDq() {
  Reindex();
  for (size_t i = 0; i < g_.nodes.size(); ++i) {
    const Node& n = g_.nodes[i];
    if (dead_[i] || !IsOp(n, "DequantizeLinear") || n.outputs.size() != 1) continue;
    if (Readers(n.outputs[0]).empty() && !idx_.outputs.count(n.outputs[0])) dead_[i] = true;
  }
}

Result<QdqStats> QdqFuser::Run() {
  bool any_dq = false;
  for (const Node& n : g_.nodes) any_dq = any_dq || IsOp(n, "DequantizeLinear");
  if (!any_dq) return stats_;
  for (const Tensor& t : g_.initializers) names_.insert(t.name);
  for (const Node& n : g_.nodes) {
    for (const std::string& v : n.outputs) names_.insert(v);
  }
  dead_.assign(g_.nodes.size(), false);
  Reindex();
  const size_t original = g_.nodes.size();
  // Convolutions and adds first: their Relu chains fold into them.
  for (size_t i = 0; i < original; ++i) {
    if (!dead_[i] && IsOp(g_.nodes[i], "Conv")) {
      TryConv(i);
      Reindex();
    }
  }
  for (size_t i = 0; i < original; ++i) {
    if (!dead_[i] && IsOp(g_.nodes[i], "Add")) {
      TryAdd(i);
      Reindex();
    }
  }
  for (size_t i = 0; i < original; ++i) {
    if (dead_[i] || (!IsOp(g_.nodes[i], "Relu") && !IsOp(g_.nodes[i], "MaxPool"))) continue;
    TryOnInt8(i);
    Reindex();
  }
  RemoveDeadDq();
  std::vector<Node> kept;
  for (size_t i = 0; i < g_.nodes.size(); ++i) {
    if (!dead_[i]) kept.push_back(std::move(g_.nodes[i]));
  }
  g_.nodes = std::move(kept);
  // Fused nodes were appended; put them back in producer-before-consumer order.
  VIGIL_ASSIGN_OR_RETURN(std::vector<size_t> order, TopologicalOrder(g_, {}));
  std::vector<Node> sorted;
  sorted.reserve(order.size());
  for (size_t i : order) sorted.push_back(std::move(g_.nodes[i]));
  g_.nodes = std::move(sorted);
  if ((stats_.convs > 0 || stats_.adds > 0) && model_.OpsetVersion(kVigilDomain) < 0) {
    model_.opset_imports.push_back({kVigilDomain, kVigilOpsetVersion});
  }
  return stats_;
}

}  // namespace

Result<QdqStats> FuseQdq(Model& model, const std::unordered_map<std::string, TypeInfo>& types,
                         const QdqAcceptor& accept) {
  QdqFuser fuser(model, types, accept);
  return fuser.Run();
}

}  // namespace vigil::ir
