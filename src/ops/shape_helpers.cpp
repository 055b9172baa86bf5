#include "ops/shape_helpers.h"

#include <algorithm>
#include <cstring>

#include "vigil/float16.h"

namespace vigil::ops {

ir::TypeInfo TensorType(ir::DataType dtype, std::vector<ir::Dim> dims) {
  ir::TypeInfo t;
  t.kind = ir::TypeInfo::Kind::kTensor;
  t.elem_type = dtype;
  t.shape.rank_known = true;
  t.shape.dims = std::move(dims);
  return t;
}

ir::TypeInfo TensorType(ir::DataType dtype, const std::vector<int64_t>& dims) {
  std::vector<ir::Dim> d;
  d.reserve(dims.size());
  for (int64_t v : dims) d.push_back(ir::Dim::Known(v));
  return TensorType(dtype, std::move(d));
}

ir::TypeInfo TensorTypeUnknownShape(ir::DataType dtype) {
  ir::TypeInfo t;
  t.kind = ir::TypeInfo::Kind::kTensor;
  t.elem_type = dtype;
  return t;
}

bool IsTensorType(const ir::TypeInfo* t) { return t && t->kind == ir::TypeInfo::Kind::kTensor; }

ir::Dim CarryDim(InferenceContext& ctx, const ir::Dim& d) {
  if (d.is_known() || d.is_symbolic()) return d;
  return ctx.NewSymbol();
}

bool HasRank(const ir::TypeInfo* t) { return t && t->kind == ir::TypeInfo::Kind::kTensor && t->shape.rank_known; }

std::optional<std::vector<int64_t>> KnownDims(const ir::TypeInfo* t) {
  if (!HasRank(t)) return std::nullopt;
  std::vector<int64_t> out;
  for (const ir::Dim& d : t->shape.dims) {
    if (!d.value) return std::nullopt;
    out.push_back(*d.value);
  }
  return out;
}

Result<std::vector<ir::Dim>> BroadcastDims(InferenceContext& ctx, const std::vector<ir::Dim>& a,
                                           const std::vector<ir::Dim>& b) {
  size_t rank = std::max(a.size(), b.size());
  std::vector<ir::Dim> out(rank);
  for (size_t i = 0; i < rank; ++i) {
    const ir::Dim* da = i + a.size() >= rank ? &a[i + a.size() - rank] : nullptr;
    const ir::Dim* db = i + b.size() >= rank ? &b[i + b.size() - rank] : nullptr;
    if (!da) { out[i] = *db; continue; }
    if (!db) { out[i] = *da; continue; }
    if (da->value && db->value) {
      int64_t x = *da->value, y = *db->value;
      if (x != y && x != 1 && y != 1) {
        return ctx.Fail("cannot broadcast dim {} against {} (shapes {} and {})", x, y,
                        ir::ShapeToString({true, a}), ir::ShapeToString({true, b}));
      }
      out[i] = ir::Dim::Known(x == 1 ? y : x);
    } else if (da->value && *da->value == 1) {
      out[i] = *db;
    } else if (db->value && *db->value == 1) {
      out[i] = *da;
    } else if (da->value) {
      out[i] = *da;  // the symbol must equal it (or be 1) at run time
    } else if (db->value) {
      out[i] = *db;
    } else if (!da->param.empty() && da->param == db->param) {
      out[i] = *da;
    } else {
      out[i] = ctx.NewSymbol();
    }
  }
  return out;
}

Result<std::vector<int64_t>> ReadInt64s(const InferenceContext& ctx, const ir::Tensor& t) {
  auto count = t.ElementCount();
  if (!count) return ctx.Fail("constant input '{}' has an invalid shape", t.name);
  std::vector<int64_t> out(*count);
  if (t.dtype == ir::DataType::kInt64 && t.bytes.size() >= *count * 8) {
    if (*count) std::memcpy(out.data(), t.bytes.data(), *count * 8);
  } else if (t.dtype == ir::DataType::kInt32 && t.bytes.size() >= *count * 4) {
    for (uint64_t i = 0; i < *count; ++i) {
      int32_t v;
      std::memcpy(&v, t.bytes.data() + i * 4, 4);
      out[i] = v;
    }
  } else {
    return ctx.Fail("input '{}' must be an int64 or int32 tensor, got {}", t.name, ir::DataTypeName(t.dtype));
  }
  return out;
}

Result<std::vector<double>> ReadDoubles(const InferenceContext& ctx, const ir::Tensor& t) {
  auto count = t.ElementCount();
  auto bytes = count ? ir::DataTypeStorageBytes(t.dtype, *count) : std::nullopt;
  if (!bytes || t.bytes.size() < *bytes) return ctx.Fail("constant input '{}' has too few bytes", t.name);
  std::vector<double> out(*count);
  const uint8_t* p = t.bytes.data();
  for (uint64_t i = 0; i < *count; ++i) {
    switch (t.dtype) {
      case ir::DataType::kFloat32: { float v; std::memcpy(&v, p + i * 4, 4); out[i] = v; break; }
      case ir::DataType::kFloat64: { double v; std::memcpy(&v, p + i * 8, 8); out[i] = v; break; }
      case ir::DataType::kFloat16: { uint16_t v; std::memcpy(&v, p + i * 2, 2); out[i] = Float16ToFloat(v); break; }
      case ir::DataType::kBfloat16: { uint16_t v; std::memcpy(&v, p + i * 2, 2); out[i] = Bfloat16ToFloat(v); break; }
      case ir::DataType::kInt64: { int64_t v; std::memcpy(&v, p + i * 8, 8); out[i] = static_cast<double>(v); break; }
      case ir::DataType::kInt32: { int32_t v; std::memcpy(&v, p + i * 4, 4); out[i] = v; break; }
      default: return ctx.Fail("input '{}' has dtype {}, expected a number type", t.name, ir::DataTypeName(t.dtype));
    }
  }
  return out;
}

Status PropagateFirstInput(InferenceContext& ctx) {
  const ir::TypeInfo* t = ctx.input_type(0);
  if (t) ctx.set_output(0, *t);
  return Status::Ok();
}

}  // namespace vigil::ops
