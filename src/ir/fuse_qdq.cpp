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

// A new initializer owning a copy of `bytes` bytes at `data`.
Tensor NewInitializer(std::string name, DataType dtype, std::vector<int64_t> dims, const void* data, size_t bytes) {
  auto owned = std::shared_ptr<uint8_t[]>(new uint8_t[std::max<size_t>(1, bytes)]);
  std::memcpy(owned.get(), data, bytes);
  Tensor t;
  t.name = std::move(name);
  t.dtype = dtype;
  t.dims = std::move(dims);
  t.storage = Tensor::Storage::kTypedDecoded;
  t.bytes = {owned.get(), bytes};
  t.keep_alive = std::shared_ptr<const void>(owned, owned.get());
  return t;
}

Tensor FloatInitializer(std::string name, const std::vector<float>& v) {
  return NewInitializer(std::move(name), DataType::kFloat32, {static_cast<int64_t>(v.size())}, v.data(), v.size() * 4);
}

// The weight side of a fused product: a DequantizeLinear of a constant int8
// tensor with zero points 0 and a scale per tensor or per output channel.
struct QWeight {
  size_t dq = 0;              // the DequantizeLinear node
  const Tensor* q = nullptr;  // its int8 constant
  std::vector<double> scale;  // one value, or one per output channel
};

// A Conv, MatMul or Gemm whose inputs passed the checks, before its output
// side is looked at (FuseProduct).
struct ProductMatch {
  size_t node = 0;                  // the Conv, MatMul or Gemm
  std::optional<size_t> bias_add;   // MatMul's Add of the bias, replaced too
  std::string result;               // the float value a QuantizeLinear must read
  size_t x_dq = 0;                  // A's (X's) DequantizeLinear
  double sx = 0;                    // and its scale
  QWeight w;
  std::string w_int8;               // the int8 weight the fused node reads
  std::vector<int64_t> w_dims;      // its dims
  std::vector<double> bias;         // M (N) values, dequantized, or zeros
};

class QdqFuser {
 public:
  QdqFuser(Model& model, const std::unordered_map<std::string, TypeInfo>& types, const QdqAcceptor& accept)
      : model_(model), g_(model.graph), types_(types), accept_(accept) {}

  Result<QdqStats> Run();

 private:
  // The whole index, built once: afterwards Append keeps it up to date. New
  // initializers wait in new_initializers_ until the end, so that the
  // index's pointers into g_.initializers stay valid.
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
  // Adds a fused node; the nodes it replaces are already marked dead.
  void Append(Node fused) {
    const size_t i = g_.nodes.size();
    for (const std::string& in : fused.inputs) {
      if (!in.empty()) idx_.consumers[in].push_back(i);
    }
    for (const std::string& o : fused.outputs) {
      if (!o.empty()) producer_[o] = i;
    }
    g_.nodes.push_back(std::move(fused));
    dead_.push_back(false);
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
  // ScalarParams of Q/DQ node `node` when its integer side `int8_value` is
  // int8 and its zero point 0, or why not.
  std::optional<QParams> SymmetricInt8(size_t node, const std::string& int8_value, std::string* why) const;
  // DQ node producing `v` with scalar symmetric int8 parameters.
  std::optional<std::pair<size_t, QParams>> Int8Dq(const std::string& v, std::string* why) const;
  // Q node that is the sole reader of `v`, scalar symmetric int8.
  std::optional<std::pair<size_t, QParams>> Int8Q(const std::string& v, std::string* why) const;
  // After a fused node writing `out` (int8, scale `p`): the chain
  // DQ(p) -> Relu -> Q(p) that reads only it, as the three node indices.
  std::optional<std::array<size_t, 3>> ReluChain(const std::string& out, const QParams& p) const;

  // W of a Conv (`channel_axis` 0) or product (the axis of N): the DQ of a
  // constant int8 tensor of `rank` dims, zero points 0, one scale or one per
  // output channel along `channel_axis` (that DQ's axis attribute).
  std::optional<QWeight> Weight(const std::string& v, size_t rank, int64_t channel_axis, std::string* why) const;
  // A bias of `m` values: a constant float32 of m elements, or a
  // DequantizeLinear of a constant, as DequantizeLinear computes it; either
  // possibly behind Identity nodes.
  std::optional<std::vector<double>> Bias(const std::string& v, int64_t m) const;
  // The output side of a matched product: its result quantized to int8 by
  // a Q alone [then DQ -> Relu -> Q]. Folds the scales, asks the device
  // about `fused` (its op, name and attributes set; inputs and outputs are
  // filled here) and, when it takes it, replaces the chain. `extra` are new
  // initializers the fused node reads.
  bool FuseProduct(Node fused, const ProductMatch& match, std::vector<Tensor> extra, std::string* why);
  void TryConv(size_t c);
  void TryProduct(size_t p);
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
  std::vector<Tensor> new_initializers_;
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

std::optional<QParams> QdqFuser::SymmetricInt8(size_t node, const std::string& int8_value, std::string* why) const {
  std::optional<QParams> p = ScalarParams(node, why);
  if (!p) return std::nullopt;
  const Node& n = g_.nodes[node];
  if (!IsInt8(int8_value)) {
    if (why) *why = fmt::format("the integer side of {} is {}, not int8 (uint8 activations are not fused: "
                                "quantize with activation_type=QInt8)", n.Describe(node),
                                TypeOf(int8_value) ? TypeToString(*TypeOf(int8_value)) : "of an unknown type");
    return std::nullopt;
  }
  if (p->zero_point != 0) {
    if (why) *why = fmt::format("{} has zero point {}; int8 operators need 0 (quantize with "
                                "extra_options={{'ActivationSymmetric': True}})", n.Describe(node), p->zero_point);
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
  std::optional<QParams> p = SymmetricInt8(*d, g_.nodes[*d].inputs[0], why);
  if (!p) return std::nullopt;
  return std::make_pair(*d, *p);
}

std::optional<std::pair<size_t, QParams>> QdqFuser::Int8Q(const std::string& v, std::string* why) const {
  std::optional<size_t> q = SoleReader(v);
  if (!q || !IsOp(g_.nodes[*q], "QuantizeLinear")) {
    if (why) *why = fmt::format("its result '{}' is not read by one QuantizeLinear alone", v);
    return std::nullopt;
  }
  std::optional<QParams> p = SymmetricInt8(*q, g_.nodes[*q].outputs[0], why);
  if (!p) return std::nullopt;
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

std::optional<QWeight> QdqFuser::Weight(const std::string& v, size_t rank, int64_t channel_axis,
                                        std::string* why) const {
  const std::string what = rank == 4 ? "4-D" : "2-D";
  std::optional<size_t> wd = Producer(v);
  const Tensor* wq = wd && IsOp(g_.nodes[*wd], "DequantizeLinear") ? Constant(g_.nodes[*wd].inputs[0]) : nullptr;
  if (!wq || wq->dtype != DataType::kInt8 || wq->dims.size() != rank) {
    *why = fmt::format("W is not a DequantizeLinear of a constant {} int8 tensor", what);
    return std::nullopt;
  }
  const Node& wdq = g_.nodes[*wd];
  const int64_t m = wq->dims[static_cast<size_t>(channel_axis)];
  const Tensor* ws = wdq.inputs.size() > 1 ? Constant(wdq.inputs[1]) : nullptr;
  std::optional<std::vector<double>> wsv = ws && ws->dtype == DataType::kFloat32 ? Values(*ws) : std::nullopt;
  // A per-channel scale must be along the output channels; DequantizeLinear's default axis is 1.
  const Attribute* waxis = wdq.FindAttribute("axis");
  int64_t axis = waxis ? waxis->i : 1;
  if (axis < 0) axis += static_cast<int64_t>(rank);
  const bool per_channel = wsv && static_cast<int64_t>(wsv->size()) == m && m > 1;
  if (!wsv || (wsv->size() != 1 && !per_channel) || (per_channel && axis != channel_axis)) {
    *why = fmt::format("W's scale is neither one constant nor one per output channel (axis {})", channel_axis);
    return std::nullopt;
  }
  if (wdq.inputs.size() > 2 && !wdq.inputs[2].empty()) {
    const Tensor* wz = Constant(wdq.inputs[2]);
    std::optional<std::vector<double>> wzv = wz ? Values(*wz) : std::nullopt;
    bool zeros = wzv.has_value();
    for (double z : wzv.value_or(std::vector<double>{})) zeros = zeros && z == 0;
    if (!zeros) {
      *why = "W's zero points are not all 0 (quantize weights symmetrically)";
      return std::nullopt;
    }
  }
  return QWeight{*wd, wq, std::move(*wsv)};
}

std::optional<std::vector<double>> QdqFuser::Bias(const std::string& v, int64_t m) const {
  // Through an Identity: exporters alias equal initializers so (a ViT's zero biases share one tensor).
  if (std::optional<size_t> id = Producer(v); id && IsOp(g_.nodes[*id], "Identity") && !g_.nodes[*id].inputs.empty()) {
    return Bias(g_.nodes[*id].inputs[0], m);
  }
  const Tensor* bf = Constant(v);
  std::optional<std::vector<double>> bv;
  if (bf && bf->dtype == DataType::kFloat32) {
    bv = Values(*bf);
  } else if (std::optional<size_t> bd = Producer(v); bd && IsOp(g_.nodes[*bd], "DequantizeLinear")) {
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
  if (!bv || static_cast<int64_t>(bv->size()) != m) return std::nullopt;
  return bv;
}

bool QdqFuser::FuseProduct(Node fused, const ProductMatch& p, std::vector<Tensor> extra, std::string* why) {
  auto y = Int8Q(p.result, why);
  if (!y) return false;
  std::optional<std::array<size_t, 3>> relu = ReluChain(g_.nodes[y->first].outputs[0], y->second);
  const int64_t m = static_cast<int64_t>(p.bias.size());
  const double sy = y->second.scale;
  std::vector<float> scale(static_cast<size_t>(m)), shift(static_cast<size_t>(m));
  for (int64_t i = 0; i < m; ++i) {
    const double sw = p.w.scale[p.w.scale.size() == 1 ? 0 : static_cast<size_t>(i)];
    scale[i] = static_cast<float>(p.sx * sw / sy);
    shift[i] = static_cast<float>(p.bias[i] / sy);
  }
  const std::string scale_name = UniqueInitializer(fused.name + "/" + fused.op_type + "_scale");
  const std::string shift_name = UniqueInitializer(fused.name + "/" + fused.op_type + "_bias");
  fused.inputs = {g_.nodes[p.x_dq].inputs[0], p.w_int8, scale_name, shift_name};
  const std::string out = relu ? g_.nodes[(*relu)[2]].outputs[0] : g_.nodes[y->first].outputs[0];
  fused.outputs = {out};
  if (relu) fused.attributes.push_back(StringAttribute("activation", kConvNhwcRelu));
  // Asked with the node's types (W's from the constant).
  TypeInfo w_type;
  w_type.kind = TypeInfo::Kind::kTensor;
  w_type.elem_type = DataType::kInt8;
  w_type.shape.rank_known = true;
  for (int64_t d : p.w_dims) w_type.shape.dims.push_back(Dim::Known(d));
  TypeInfo vec = w_type;
  vec.elem_type = DataType::kFloat32;
  vec.shape.dims = {Dim::Known(m)};
  std::vector<const TypeInfo*> in_types = {TypeOf(fused.inputs[0]), &w_type, &vec, &vec};
  if (accept_ && !accept_(fused, in_types, {TypeOf(out)}, why)) {
    if (why->empty()) *why = "the device does not take it";
    return false;
  }
  new_initializers_.push_back(FloatInitializer(scale_name, scale));
  new_initializers_.push_back(FloatInitializer(shift_name, shift));
  for (Tensor& t : extra) new_initializers_.push_back(std::move(t));
  dead_[p.node] = true;
  if (p.bias_add) dead_[*p.bias_add] = true;
  dead_[y->first] = true;
  if (relu) {
    for (size_t k : *relu) dead_[k] = true;
    ++stats_.relus;
  }
  Append(std::move(fused));
  return true;
}

void QdqFuser::TryConv(size_t c) {
  const Node& conv = g_.nodes[c];
  const std::string label = conv.Describe(c);
  std::string why;
  auto note = [&](bool int8) { stats_.notes.push_back({"Conv", label, int8, int8 ? "" : why}); };
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
  ProductMatch p;
  p.node = c;
  p.result = conv.outputs[0];
  p.x_dq = x->first;
  p.sx = x->second.scale;
  // W: DQ of a constant int8 [M, C, kH, kW], zero points 0, scale per tensor or per M.
  std::optional<QWeight> w = Weight(conv.inputs[1], 4, 0, &why);
  if (!w) return note(false);
  p.w = std::move(*w);
  p.w_int8 = g_.nodes[p.w.dq].inputs[0];
  p.w_dims = p.w.q->dims;
  const int64_t m = p.w_dims[0];
  p.bias.assign(static_cast<size_t>(m), 0.0);
  if (conv.inputs.size() > 2 && !conv.inputs[2].empty()) {
    std::optional<std::vector<double>> bias = Bias(conv.inputs[2], m);
    if (!bias) {
      why = "B is neither a constant float32 [M] nor a DequantizeLinear of a constant";
      return note(false);
    }
    p.bias = std::move(*bias);
  }
  Node fused;
  fused.name = conv.name.empty() ? fmt::format("qconv{}", c) : conv.name;
  fused.domain = kVigilDomain;
  fused.op_type = kQConvOp;
  for (const Attribute& a : conv.attributes) {
    if (a.name != "group") fused.attributes.push_back(a);
  }
  if (!FuseProduct(std::move(fused), p, {}, &why)) return note(false);
  ++stats_.convs;
  note(true);
}

// DQ(a), DQ(W) -> MatMul [-> Add(bias)] -> Q, or -> Gemm -> Q: a QMatMul
// over A's rows, with W as [N, K].
void QdqFuser::TryProduct(size_t i) {
  const Node& node = g_.nodes[i];
  const bool gemm = node.op_type == "Gemm";
  const std::string op_type = node.op_type, label = node.Describe(i);
  std::string why;
  auto note = [&](bool int8) { stats_.notes.push_back({op_type, label, int8, int8 ? "" : why}); };
  if (node.inputs.size() < 2 || node.outputs.size() != 1) return;
  std::optional<size_t> ap = Producer(node.inputs[0]);
  if (!ap || !IsOp(g_.nodes[*ap], "DequantizeLinear")) return;  // not a QDQ chain
  auto a = Int8Dq(node.inputs[0], &why);
  if (!a) return note(false);
  const TypeInfo* at = TypeOf(node.inputs[0]);
  if (!at || !at->shape.rank_known || at->shape.dims.size() < (gemm ? 2u : 1u)) {
    why = "A's rank is unknown";
    return note(false);
  }
  bool trans_b = false;
  if (gemm) {
    const Attribute* ta = node.FindAttribute("transA");
    const Attribute* tb = node.FindAttribute("transB");
    const Attribute* alpha = node.FindAttribute("alpha");
    const Attribute* beta = node.FindAttribute("beta");
    trans_b = tb && tb->i != 0;
    if ((ta && ta->i != 0) || (alpha && alpha->f != 1.0f) || (beta && beta->f != 1.0f && node.inputs.size() > 2)) {
      why = "Gemm with transA, or alpha or beta other than 1";
      return note(false);
    }
  }
  ProductMatch p;
  p.node = i;
  p.x_dq = a->first;
  p.sx = a->second.scale;
  // W: [K, N] (MatMul, Gemm) or [N, K] (Gemm with transB), scales along N.
  const int64_t n_axis = trans_b ? 0 : 1;
  std::optional<QWeight> w = Weight(node.inputs[1], 2, n_axis, &why);
  if (!w) {
    std::optional<size_t> bp = Producer(node.inputs[1]);
    if (bp && IsOp(g_.nodes[*bp], "DequantizeLinear") && !Constant(g_.nodes[*bp].inputs[0])) {
      why = "B is an activation, not a constant: products of two activations stay in float";
    }
    return note(false);
  }
  p.w = std::move(*w);
  const Tensor& wq = *p.w.q;
  const int64_t n = wq.dims[static_cast<size_t>(n_axis)], k = wq.dims[static_cast<size_t>(1 - n_axis)];
  p.w_dims = {n, k};
  std::vector<Tensor> extra;
  if (trans_b) {
    p.w_int8 = g_.nodes[p.w.dq].inputs[0];
  } else {
    // The int8 weight transposed to [N, K], the layout of the int8 engines (K contiguous in both operands).
    const auto* src = reinterpret_cast<const int8_t*>(wq.bytes.data());
    std::vector<int8_t> t(static_cast<size_t>(n * k));
    for (int64_t r = 0; r < k; ++r) {
      for (int64_t c = 0; c < n; ++c) t[static_cast<size_t>(c * k + r)] = src[r * n + c];
    }
    p.w_int8 = UniqueInitializer(g_.nodes[p.w.dq].inputs[0] + "/nk");
    extra.push_back(NewInitializer(p.w_int8, DataType::kInt8, {n, k}, t.data(), t.size()));
  }
  p.bias.assign(static_cast<size_t>(n), 0.0);
  p.result = node.outputs[0];
  // A bias broadcast along the rows: [N], [1, N], [1, 1, N]... of no higher rank than the product's.
  auto row_vector = [&](const std::string& v) {
    const TypeInfo* t = TypeOf(v);
    if (!t || !t->shape.rank_known || t->shape.dims.empty() || t->shape.dims.size() > at->shape.dims.size()) {
      return false;
    }
    for (size_t d = 0; d < t->shape.dims.size(); ++d) {
      const Dim& dim = t->shape.dims[d];
      if (!dim.is_known() || *dim.value != (d + 1 == t->shape.dims.size() ? n : 1)) return false;
    }
    return true;
  };
  if (gemm && node.inputs.size() > 2 && !node.inputs[2].empty()) {
    if (!row_vector(node.inputs[2])) {
      why = fmt::format("C is not a row of {} values (a full matrix C is not folded)", n);
      return note(false);
    }
    std::optional<std::vector<double>> bias = Bias(node.inputs[2], n);
    if (!bias) {
      why = "C is neither a constant float32 [N] nor a DequantizeLinear of a constant";
      return note(false);
    }
    p.bias = std::move(*bias);
  } else if (!gemm && at->shape.dims.size() >= 2) {
    // MatMul's bias: an Add, the product's sole reader, of a constant [N].
    std::optional<size_t> add = SoleReader(node.outputs[0]);
    if (add && IsOp(g_.nodes[*add], "Add") && g_.nodes[*add].inputs.size() == 2) {
      const Node& an = g_.nodes[*add];
      const std::string& other = an.inputs[0] == node.outputs[0] ? an.inputs[1] : an.inputs[0];
      std::optional<std::vector<double>> bias = row_vector(other) ? Bias(other, n) : std::nullopt;
      if (bias) {
        p.bias = std::move(*bias);
        p.bias_add = *add;
        p.result = an.outputs[0];
      }
    }
  }
  Node fused;
  fused.name = node.name.empty() ? fmt::format("qmatmul{}", i) : node.name;
  fused.domain = kVigilDomain;
  fused.op_type = kQMatMulOp;
  if (!FuseProduct(std::move(fused), p, std::move(extra), &why)) return note(false);
  ++stats_.matmuls;
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
  Append(std::move(fused));
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
  Append(std::move(fused));
  ++(relu ? stats_.relus : stats_.pools);
}

// DequantizeLinear nodes whose results nobody reads any more.
void QdqFuser::RemoveDeadDq() {
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
  // Convolutions, products and adds first: their Relu chains fold into them.
  for (size_t i = 0; i < original; ++i) {
    if (!dead_[i] && IsOp(g_.nodes[i], "Conv")) {
      TryConv(i);
    }
  }
  for (size_t i = 0; i < original; ++i) {
    if (!dead_[i] && (IsOp(g_.nodes[i], "MatMul") || IsOp(g_.nodes[i], "Gemm"))) TryProduct(i);
  }
  for (size_t i = 0; i < original; ++i) {
    if (!dead_[i] && IsOp(g_.nodes[i], "Add")) {
      TryAdd(i);
    }
  }
  for (size_t i = 0; i < original; ++i) {
    if (dead_[i] || (!IsOp(g_.nodes[i], "Relu") && !IsOp(g_.nodes[i], "MaxPool"))) continue;
    TryOnInt8(i);
  }
  RemoveDeadDq();
  for (Tensor& t : new_initializers_) g_.initializers.push_back(std::move(t));
  // Fused nodes were appended; put them back in producer-before-consumer order.
  VIGIL_RETURN_IF_ERROR(RemoveDeadAndSort(g_, dead_));
  if ((stats_.convs > 0 || stats_.matmuls > 0 || stats_.adds > 0) && model_.OpsetVersion(kVigilDomain) < 0) {
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
