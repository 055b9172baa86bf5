// Symbolic shape arithmetic (see symbolic_shapes.h).
#include "ir/symbolic_shapes.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "ir/fuse_matmul_bias.h"  // kMatMulBiasOp
#include "ir/layout_nhwc.h"       // kVigilDomain
#include "vigil/float16.h"

namespace vigil::ir {
namespace {

// Deep enough for any real shape chain, shallow enough for the stack.
constexpr int kMaxDepth = 256;

bool IsDefault(const Node& n) { return n.domain.empty() || n.domain == "ai.onnx"; }

std::optional<int64_t> IntAttr(const Node& n, const char* name) {
  const Attribute* a = n.FindAttribute(name);
  if (!a) return std::nullopt;
  if (a->type != AttributeType::kInt) return std::nullopt;
  return a->i;
}

// The elements of an int64/int32 constant, or of a float one (as doubles).
std::optional<std::vector<double>> ConstantNumbers(const Tensor& t) {
  std::optional<uint64_t> n = t.ElementCount();
  if (!n || *n > 64) return std::nullopt;
  std::vector<double> out(*n);
  auto read = [&](size_t width, auto decode) -> bool {
    if (t.bytes.size() != *n * width) return false;
    for (size_t i = 0; i < *n; ++i) out[i] = decode(t.bytes.data() + i * width);
    return true;
  };
  bool ok = false;
  switch (t.dtype) {
    case DataType::kInt64:
      ok = read(8, [](const uint8_t* p) { int64_t v; std::memcpy(&v, p, 8); return static_cast<double>(v); });
      break;
    case DataType::kInt32:
      ok = read(4, [](const uint8_t* p) { int32_t v; std::memcpy(&v, p, 4); return static_cast<double>(v); });
      break;
    case DataType::kFloat32:
      ok = read(4, [](const uint8_t* p) { float v; std::memcpy(&v, p, 4); return static_cast<double>(v); });
      break;
    case DataType::kFloat64:
      ok = read(8, [](const uint8_t* p) { double v; std::memcpy(&v, p, 8); return v; });
      break;
    case DataType::kFloat16:
      ok = read(2, [](const uint8_t* p) { uint16_t v; std::memcpy(&v, p, 2); return double{Float16ToFloat(v)}; });
      break;
    case DataType::kBfloat16:
      ok = read(2, [](const uint8_t* p) { uint16_t v; std::memcpy(&v, p, 2); return double{Bfloat16ToFloat(v)}; });
      break;
    default: break;
  }
  return ok ? std::optional(out) : std::nullopt;
}

bool IsIntType(DataType t) { return t == DataType::kInt64 || t == DataType::kInt32; }

// The elements of an int64/int32 constant, exactly (INT64_MAX, torch's "to
// the end", does not survive a trip through double).
std::optional<std::vector<int64_t>> ConstantInts(const Tensor& t) {
  std::optional<uint64_t> n = t.ElementCount();
  const size_t width = t.dtype == DataType::kInt64 ? 8 : 4;
  if (!n || *n > 64 || !IsIntType(t.dtype) || t.bytes.size() != *n * width) return std::nullopt;
  std::vector<int64_t> out(*n);
  for (size_t i = 0; i < *n; ++i) {
    if (width == 8) {
      std::memcpy(&out[i], t.bytes.data() + i * 8, 8);
    } else {
      int32_t v;
      std::memcpy(&v, t.bytes.data() + i * 4, 4);
      out[i] = v;
    }
  }
  return out;
}

// Elementwise a op b with numpy broadcasting of a single element.
template <typename F>
std::optional<SymShape> Broadcast(const std::optional<SymShape>& a, const std::optional<SymShape>& b, F op) {
  if (!a || !b) return std::nullopt;
  if (a->size() != b->size() && a->size() != 1 && b->size() != 1) return std::nullopt;
  const size_t n = std::max(a->size(), b->size());
  SymShape out;
  for (size_t i = 0; i < n; ++i) {
    std::optional<SymDim> d = op((*a)[a->size() == 1 ? 0 : i], (*b)[b->size() == 1 ? 0 : i]);
    if (!d) return std::nullopt;
    out.push_back(*d);
  }
  return out;
}

// a + b or a - b (sign -1) for like monomials.
std::optional<SymDim> AddDims(const SymDim& a, const SymDim& b, int sign) {
  if (a.syms != b.syms) return std::nullopt;
  return SymDim{a.coeff + sign * b.coeff, a.syms};
}

// ONNX's normalisation of a possibly negative axis into [0, rank).
std::optional<size_t> NormAxis(int64_t axis, size_t rank) {
  const int64_t r = static_cast<int64_t>(rank);
  if (axis < -r || axis >= r) return std::nullopt;
  return static_cast<size_t>(axis < 0 ? axis + r : axis);
}

}  // namespace

std::optional<SymDim> MulDims(const SymDim& a, const SymDim& b) {
  int64_t c;
  if (__builtin_mul_overflow(a.coeff, b.coeff, &c)) return std::nullopt;
  SymDim out{c, a.syms};
  out.syms.insert(out.syms.end(), b.syms.begin(), b.syms.end());
  std::sort(out.syms.begin(), out.syms.end());
  return out;
}

std::optional<SymDim> DivDims(const SymDim& a, const SymDim& b) {
  if (b.coeff == 0 || a.coeff % b.coeff != 0) return std::nullopt;
  SymDim out{a.coeff / b.coeff, a.syms};
  for (const std::string& s : b.syms) {
    auto it = std::find(out.syms.begin(), out.syms.end(), s);
    if (it == out.syms.end()) return std::nullopt;
    out.syms.erase(it);
  }
  return out;
}

SymbolicShapes::SymbolicShapes(const Graph& g, const GraphIndex& idx,
                               const std::unordered_map<std::string, TypeInfo>& types, int64_t default_opset)
    : g_(g), idx_(idx), types_(types), opset_(default_opset) {
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    for (const std::string& out : g.nodes[i].outputs) {
      if (!out.empty()) producer_[out] = i;
    }
  }
}

const Node* SymbolicShapes::Producer(const std::string& value) const {
  auto it = producer_.find(value);
  return it == producer_.end() ? nullptr : &g_.nodes[it->second];
}

std::optional<SymShape> SymbolicShapes::ShapeFromType(const std::string& value) const {
  auto c = idx_.constants.find(value);
  if (c != idx_.constants.end()) {
    SymShape s;
    for (int64_t d : c->second->dims) s.push_back(SymDim::Known(d));
    return s;
  }
  auto it = types_.find(value);
  if (it == types_.end() || it->second.kind != TypeInfo::Kind::kTensor || !it->second.shape.rank_known) {
    return std::nullopt;
  }
  SymShape s;
  const std::vector<Dim>& dims = it->second.shape.dims;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i].is_known()) {
      s.push_back(SymDim::Known(*dims[i].value));
    } else {
      // An unnamed dim equals nothing else: a name of its own.
      s.push_back(SymDim{1, {dims[i].param.empty() ? "?" + value + "#" + std::to_string(i) : dims[i].param}});
    }
  }
  return s;
}

std::optional<SymShape> SymbolicShapes::ShapeOf(const std::string& value) {
  auto memo = shapes_.find(value);
  if (memo != shapes_.end()) return memo->second;
  std::optional<SymShape> s;
  const Node* n = Producer(value);
  if (n && depth_ < kMaxDepth) {
    ++depth_;
    s = ComputeShape(*n);
    --depth_;
  }
  if (!s) s = ShapeFromType(value);
  shapes_[value] = s;
  return s;
}

std::optional<SymShape> SymbolicShapes::ValueOf(const std::string& value) {
  auto memo = values_.find(value);
  if (memo != values_.end()) return memo->second;
  std::optional<SymShape> v;
  auto c = idx_.constants.find(value);
  if (c != idx_.constants.end()) {
    if (auto ints = ConstantInts(*c->second)) {
      v = SymShape{};
      for (int64_t d : *ints) v->push_back(SymDim::Known(d));
    }
  } else if (const Node* n = Producer(value); n && depth_ < kMaxDepth) {
    ++depth_;
    v = ComputeValue(*n);
    --depth_;
  }
  values_[value] = v;
  return v;
}

std::optional<std::vector<int64_t>> SymbolicShapes::KnownInts(const std::string& value) {
  std::optional<SymShape> v = ValueOf(value);
  if (!v) return std::nullopt;
  std::vector<int64_t> out;
  for (const SymDim& d : *v) {
    if (!d.known()) return std::nullopt;
    out.push_back(d.coeff);
  }
  return out;
}

// Squeeze/Unsqueeze axes: input 1 from opset 13, the attribute before.
std::optional<std::vector<int64_t>> SymbolicShapes::Axes(const Node& n) {
  if (n.inputs.size() >= 2 && !n.inputs[1].empty()) return KnownInts(n.inputs[1]);
  const Attribute* a = n.FindAttribute("axes");
  if (a && a->type == AttributeType::kInts) return a->ints;
  return std::vector<int64_t>{};
}

std::optional<SymShape> SymbolicShapes::ComputeShape(const Node& n) {
  if (n.domain == kVigilDomain && n.op_type == kMatMulBiasOp && n.inputs.size() >= 2 && n.outputs.size() == 1) {
    // ai.vigil.MatMulBias (ir/fuse_matmul_bias.h): MatMul(A, W) with W
    // [K, N]; the bias and the residual leave the shape as it is. A BERT
    // out-projection reads a Reshape to a run-time target, so its output
    // has no inferred shape, and its residual Add needs this one.
    std::optional<SymShape> a = ShapeOf(n.inputs[0]), w = ShapeOf(n.inputs[1]);
    if (!a || !w || a->size() < 2 || w->size() != 2 || !(a->back() == (*w)[0])) return std::nullopt;
    SymShape out(a->begin(), a->end() - 1);
    out.push_back((*w)[1]);
    return out;
  }
  if (!IsDefault(n) || n.inputs.empty() || n.outputs.size() != 1) return std::nullopt;
  const std::string& op = n.op_type;
  if (op == "Reshape" && n.inputs.size() == 2) {
    std::optional<SymShape> in = ShapeOf(n.inputs[0]);
    std::optional<SymShape> target = ValueOf(n.inputs[1]);
    if (!in || !target) return std::nullopt;
    const bool allowzero = IntAttr(n, "allowzero").value_or(0) != 0;
    std::optional<size_t> infer;
    for (size_t i = 0; i < target->size(); ++i) {
      SymDim& d = (*target)[i];
      if (d.known() && d.coeff == 0 && !allowzero) {
        if (i >= in->size()) return std::nullopt;
        d = (*in)[i];
      } else if (d.known() && d.coeff == -1) {
        if (infer) return std::nullopt;
        infer = i;
      } else if (d.coeff <= 0) {
        return std::nullopt;
      }
    }
    if (infer) {
      std::optional<SymDim> total = SymDim::Known(1), rest = SymDim::Known(1);
      for (const SymDim& d : *in) total = total ? MulDims(*total, d) : std::nullopt;
      for (size_t i = 0; i < target->size(); ++i) {
        if (i != *infer) rest = rest ? MulDims(*rest, (*target)[i]) : std::nullopt;
      }
      std::optional<SymDim> q = total && rest ? DivDims(*total, *rest) : std::nullopt;
      if (!q) return std::nullopt;
      (*target)[*infer] = *q;
    }
    return target;
  }
  if (op == "Transpose") {
    std::optional<SymShape> in = ShapeOf(n.inputs[0]);
    if (!in) return std::nullopt;
    const Attribute* a = n.FindAttribute("perm");
    std::vector<int64_t> perm;
    if (a && a->type == AttributeType::kInts) {
      perm = a->ints;
    } else {
      for (size_t i = in->size(); i-- > 0;) perm.push_back(static_cast<int64_t>(i));
    }
    if (perm.size() != in->size()) return std::nullopt;
    SymShape out;
    for (int64_t p : perm) {
      if (p < 0 || p >= static_cast<int64_t>(in->size())) return std::nullopt;
      out.push_back((*in)[static_cast<size_t>(p)]);
    }
    return out;
  }
  if (op == "Unsqueeze" || op == "Squeeze") {
    std::optional<SymShape> in = ShapeOf(n.inputs[0]);
    std::optional<std::vector<int64_t>> axes = Axes(n);
    if (!in || !axes) return std::nullopt;
    if (op == "Unsqueeze") {
      const size_t rank = in->size() + axes->size();
      std::vector<bool> inserted(rank, false);
      for (int64_t a : *axes) {
        std::optional<size_t> k = NormAxis(a, rank);
        if (!k || inserted[*k]) return std::nullopt;
        inserted[*k] = true;
      }
      SymShape out;
      size_t j = 0;
      for (size_t k = 0; k < rank; ++k) out.push_back(inserted[k] ? SymDim::Known(1) : (*in)[j++]);
      return out;
    }
    std::vector<bool> drop(in->size(), false);
    for (int64_t a : *axes) {
      std::optional<size_t> k = NormAxis(a, in->size());
      if (!k || !((*in)[*k] == SymDim::Known(1))) return std::nullopt;
      drop[*k] = true;
    }
    if (axes->empty()) return std::nullopt;  // squeeze-all needs every dim known
    SymShape out;
    for (size_t k = 0; k < in->size(); ++k) {
      if (!drop[k]) out.push_back((*in)[k]);
    }
    return out;
  }
  if (op == "Gather" && n.inputs.size() == 2) {
    std::optional<SymShape> data = ShapeOf(n.inputs[0]), indices = ShapeOf(n.inputs[1]);
    if (!data || !indices) return std::nullopt;
    std::optional<size_t> axis = NormAxis(IntAttr(n, "axis").value_or(0), data->size());
    if (!axis) return std::nullopt;
    SymShape out(data->begin(), data->begin() + static_cast<long>(*axis));
    out.insert(out.end(), indices->begin(), indices->end());
    out.insert(out.end(), data->begin() + static_cast<long>(*axis) + 1, data->end());
    return out;
  }
  if (op == "MatMul" && n.inputs.size() == 2) {
    std::optional<SymShape> a = ShapeOf(n.inputs[0]), b = ShapeOf(n.inputs[1]);
    if (!a || !b || a->size() < 2 || a->size() != b->size()) return std::nullopt;
    const size_t r = a->size();
    if (!((*a)[r - 1] == (*b)[r - 2])) return std::nullopt;
    for (size_t k = 0; k + 2 < r; ++k) {
      if (!((*a)[k] == (*b)[k])) return std::nullopt;
    }
    SymShape out(a->begin(), a->end() - 1);
    out.push_back((*b)[r - 1]);
    return out;
  }
  if (op == "Mul" || op == "Div" || op == "Add" || op == "Sub") {
    if (n.inputs.size() != 2) return std::nullopt;
    std::optional<SymShape> a = ShapeOf(n.inputs[0]), b = ShapeOf(n.inputs[1]);
    if (!a || !b) return std::nullopt;
    auto single = [](const SymShape& s) {
      return std::all_of(s.begin(), s.end(), [](const SymDim& d) { return d == SymDim::Known(1); });
    };
    if (single(*b) && a->size() >= b->size()) return a;
    if (single(*a) && b->size() >= a->size()) return b;
    return *a == *b ? a : std::nullopt;
  }
  if (op == "Where" && n.inputs.size() == 3) {
    // The inputs that are not single elements must agree; they give the shape.
    std::optional<SymShape> out;
    size_t rank = 0;
    for (const std::string& in : n.inputs) {
      std::optional<SymShape> s = ShapeOf(in);
      if (!s) return std::nullopt;
      rank = std::max(rank, s->size());
      if (std::all_of(s->begin(), s->end(), [](const SymDim& d) { return d == SymDim::Known(1); })) continue;
      if (out && *out != *s) return std::nullopt;
      out = s;
    }
    return out && out->size() == rank ? out : std::nullopt;
  }
  if (op == "Softmax" || op == "Identity" || op == "Cast" || op == "IsNaN") return ShapeOf(n.inputs[0]);
  return std::nullopt;
}

void SymbolicShapes::AssumeShape(const std::string& value, SymShape shape) { shapes_[value] = std::move(shape); }

std::optional<SymShape> SymbolicShapes::ComputeValue(const Node& n) {
  if (!IsDefault(n) || n.outputs.size() != 1) return std::nullopt;
  const std::string& op = n.op_type;
  if (op == "Shape" && n.inputs.size() == 1) {
    std::optional<SymShape> s = ShapeOf(n.inputs[0]);
    if (!s) return std::nullopt;
    const int64_t r = static_cast<int64_t>(s->size());
    int64_t start = IntAttr(n, "start").value_or(0), end = IntAttr(n, "end").value_or(r);
    start = std::clamp(start < 0 ? start + r : start, int64_t{0}, r);
    end = std::clamp(end < 0 ? end + r : end, int64_t{0}, r);
    if (start >= end) return SymShape{};
    return SymShape(s->begin() + start, s->begin() + end);
  }
  if (n.inputs.empty()) return std::nullopt;
  if (op == "Gather" && n.inputs.size() == 2) {
    std::optional<SymShape> data = ValueOf(n.inputs[0]);
    std::optional<std::vector<int64_t>> indices = KnownInts(n.inputs[1]);
    if (!data || !indices || IntAttr(n, "axis").value_or(0) != 0) return std::nullopt;
    SymShape out;
    for (int64_t i : *indices) {
      std::optional<size_t> k = NormAxis(i, data->size());
      if (!k) return std::nullopt;
      out.push_back((*data)[*k]);
    }
    return out;
  }
  if (op == "Slice" && n.inputs.size() >= 3) {
    std::optional<SymShape> data = ValueOf(n.inputs[0]);
    std::optional<std::vector<int64_t>> starts = KnownInts(n.inputs[1]), ends = KnownInts(n.inputs[2]);
    if (!data || !starts || !ends || starts->size() != 1 || ends->size() != 1) return std::nullopt;
    if (n.inputs.size() >= 4 && !n.inputs[3].empty()) {
      std::optional<std::vector<int64_t>> axes = KnownInts(n.inputs[3]);
      if (!axes || axes->size() != 1 || ((*axes)[0] != 0 && (*axes)[0] != -1)) return std::nullopt;
    }
    if (n.inputs.size() >= 5 && !n.inputs[4].empty()) {
      std::optional<std::vector<int64_t>> steps = KnownInts(n.inputs[4]);
      if (!steps || *steps != std::vector<int64_t>{1}) return std::nullopt;
    }
    const int64_t r = static_cast<int64_t>(data->size());
    int64_t s = (*starts)[0], e = (*ends)[0];
    s = std::clamp(s < 0 ? s + r : s, int64_t{0}, r);
    e = std::clamp(e < 0 ? e + r : e, int64_t{0}, r);
    if (s >= e) return SymShape{};
    return SymShape(data->begin() + s, data->begin() + e);
  }
  if (op == "Concat") {
    if (IntAttr(n, "axis").value_or(0) != 0 && IntAttr(n, "axis").value_or(0) != -1) return std::nullopt;
    SymShape out;
    for (const std::string& in : n.inputs) {
      std::optional<SymShape> part = ValueOf(in);
      if (!part) return std::nullopt;
      out.insert(out.end(), part->begin(), part->end());
    }
    return out;
  }
  if (op == "Unsqueeze" || op == "Squeeze" || op == "Identity") return ValueOf(n.inputs[0]);
  if (op == "Cast") {
    std::optional<int64_t> to = IntAttr(n, "to");
    if (!to || !IsIntType(static_cast<DataType>(*to))) return std::nullopt;
    return ValueOf(n.inputs[0]);
  }
  if (n.inputs.size() == 2 && (op == "Mul" || op == "Div" || op == "Add" || op == "Sub")) {
    std::optional<SymShape> a = ValueOf(n.inputs[0]), b = ValueOf(n.inputs[1]);
    if (op == "Mul") return Broadcast(a, b, MulDims);
    if (op == "Div") return Broadcast(a, b, DivDims);
    const int sign = op == "Add" ? 1 : -1;
    return Broadcast(a, b, [sign](const SymDim& x, const SymDim& y) { return AddDims(x, y, sign); });
  }
  return std::nullopt;
}

std::optional<double> SymbolicShapes::ScalarOf(const std::string& value) {
  auto c = idx_.constants.find(value);
  if (c != idx_.constants.end()) {
    std::optional<std::vector<double>> nums = ConstantNumbers(*c->second);
    if (!nums || nums->size() != 1) return std::nullopt;
    return (*nums)[0];
  }
  const Node* n = Producer(value);
  if (n && depth_ < kMaxDepth) {
    ++depth_;
    std::optional<double> v = ComputeScalar(*n);
    --depth_;
    if (v) return v;
  }
  std::optional<SymShape> ints = ValueOf(value);
  if (ints && ints->size() == 1 && (*ints)[0].known()) return static_cast<double>((*ints)[0].coeff);
  return std::nullopt;
}

std::optional<double> SymbolicShapes::ComputeScalar(const Node& n) {
  if (!IsDefault(n) || n.outputs.size() != 1 || n.inputs.empty()) return std::nullopt;
  const std::string& op = n.op_type;
  if (op == "Cast" && n.inputs.size() == 1) {
    std::optional<double> v = ScalarOf(n.inputs[0]);
    std::optional<int64_t> to = IntAttr(n, "to");
    if (!v || !to) return std::nullopt;
    switch (static_cast<DataType>(*to)) {
      case DataType::kFloat64: return v;
      case DataType::kFloat32: return static_cast<double>(static_cast<float>(*v));
      case DataType::kFloat16: return double{Float16ToFloat(FloatToFloat16(static_cast<float>(*v)))};
      case DataType::kBfloat16: return double{Bfloat16ToFloat(FloatToBfloat16(static_cast<float>(*v)))};
      case DataType::kInt64:
      case DataType::kInt32: return std::trunc(*v);
      default: return std::nullopt;
    }
  }
  if (op == "Sqrt" && n.inputs.size() == 1) {
    std::optional<double> v = ScalarOf(n.inputs[0]);
    return v && *v >= 0 ? std::optional(std::sqrt(*v)) : std::nullopt;
  }
  if ((op == "Mul" || op == "Div") && n.inputs.size() == 2) {
    // Integer arithmetic truncates: ValueOf evaluates it exactly.
    auto t = types_.find(n.outputs[0]);
    if (t != types_.end() && IsIntType(t->second.elem_type)) return std::nullopt;
    std::optional<double> a = ScalarOf(n.inputs[0]), b = ScalarOf(n.inputs[1]);
    if (!a || !b) return std::nullopt;
    if (op == "Mul") return *a * *b;
    return *b != 0 ? std::optional(*a / *b) : std::nullopt;
  }
  return std::nullopt;
}

}  // namespace vigil::ir
