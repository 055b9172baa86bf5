// Schemas and shape inference of the tensor generators: Constant,
// ConstantOfShape, Range, Shape, Size, EyeLike.
#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <vector>

#include <fmt/ranges.h>

#include "ops/op_params.h"
#include "ops/shape_ops_common.h"
#include "ops/families.h"

namespace vigil::ops {
namespace {

using namespace shape_family;  // NOLINT: this family's own helpers
using Dims = std::vector<ir::Dim>;

// Constant's value attributes: exactly one must be set.
constexpr const char* kConstantAttrs[] = {"value",        "value_float", "value_floats",  "value_int",
                                          "value_ints",   "value_string", "value_strings", "sparse_value"};

Status InferConstant(InferenceContext& ctx) {
  const ir::Node& node = ctx.node();
  const char* which = nullptr;
  for (const char* name : kConstantAttrs) {
    if (!HasAttr(node, name)) continue;
    if (which) return ctx.Fail("sets both '{}' and '{}'; a Constant has exactly one value", which, name);
    which = name;
  }
  if (!which) return ctx.Fail("has no value attribute");
  std::string_view w = which;
  if (w == "sparse_value") return UnsupportedError("{}: sparse_value constants are not supported", NodeLabel(node));
  if (w == "value") {
    VIGIL_ASSIGN_OR_RETURN(const ir::Tensor* t, TensorAttr(node, "value"));
    ctx.set_output(0, TensorType(t->dtype, t->dims));
  } else if (w == "value_float" || w == "value_int" || w == "value_string") {
    ir::DataType dt = w == "value_float" ? ir::DataType::kFloat32
                      : w == "value_int" ? ir::DataType::kInt64
                                         : ir::DataType::kString;
    ctx.set_output(0, TensorType(dt, std::vector<int64_t>{}));
  } else if (w == "value_floats") {
    VIGIL_ASSIGN_OR_RETURN(std::vector<float> v, FloatsAttr(node, w));
    ctx.set_output(0, TensorType(ir::DataType::kFloat32, std::vector<int64_t>{static_cast<int64_t>(v.size())}));
  } else if (w == "value_ints") {
    VIGIL_ASSIGN_OR_RETURN(std::vector<int64_t> v, IntsAttr(node, w));
    ctx.set_output(0, TensorType(ir::DataType::kInt64, std::vector<int64_t>{static_cast<int64_t>(v.size())}));
  } else {
    VIGIL_ASSIGN_OR_RETURN(std::vector<std::string> v, StringsAttr(node, w));
    ctx.set_output(0, TensorType(ir::DataType::kString, std::vector<int64_t>{static_cast<int64_t>(v.size())}));
  }
  return Status::Ok();
}

Status InferConstantOfShape(InferenceContext& ctx) {
  VIGIL_ASSIGN_OR_RETURN(const ir::Tensor* value, TensorAttr(ctx.node(), "value"));
  ir::DataType dtype = ir::DataType::kFloat32;
  if (value) {
    if (value->ElementCount().value_or(0) != 1) {
      return ctx.Fail("attribute 'value' has {} elements; it must have exactly one",
                      value->ElementCount().value_or(0));
    }
    dtype = value->dtype;
  }
  if (const std::vector<ir::Dim>* s = InputDims(ctx, 0); s && s->size() != 1) {
    return ctx.Fail("input has rank {}; the shape must be 1-D", s->size());
  }
  VIGIL_ASSIGN_OR_RETURN(auto shape, KnownInts(ctx, 0));
  if (shape) {
    for (int64_t d : *shape) {
      if (d < 0) return ctx.Fail("shape [{}] has a negative dim", fmt::join(*shape, ","));
    }
    SetTensor(ctx, 0, dtype, ToDims(*shape));
  } else if (std::optional<int64_t> n = KnownLength(ctx, 0)) {
    SetTensor(ctx, 0, dtype, Symbols(ctx, *n));
  } else {
    SetUnknownShape(ctx, 0, dtype);
  }
  return Status::Ok();
}

// A scalar integer value (int16, int32, int64).
Result<int64_t> ScalarInt(const InferenceContext& ctx, const ir::Tensor& t) {
  if (t.ElementCount().value_or(0) != 1) return ctx.Fail("start, limit and delta must be scalars");
  if (t.dtype == ir::DataType::kInt16) {
    if (t.bytes.size() < 2) return ctx.Fail("constant input '{}' has too few bytes", t.name);
    int16_t v;
    std::memcpy(&v, t.bytes.data(), 2);
    return int64_t{v};
  }
  VIGIL_ASSIGN_OR_RETURN(std::vector<int64_t> v, ReadInt64s(ctx, t));
  return v[0];
}

Result<double> ScalarDouble(const InferenceContext& ctx, const ir::Tensor& t) {
  if (t.ElementCount().value_or(0) != 1) return ctx.Fail("start, limit and delta must be scalars");
  VIGIL_ASSIGN_OR_RETURN(std::vector<double> v, ReadDoubles(ctx, t));
  return v[0];
}

// max(ceil((limit - start) / delta), 0), exactly for integers.
Result<int64_t> RangeCount(const InferenceContext& ctx, ir::DataType dtype, const ir::Tensor& start,
                           const ir::Tensor& limit, const ir::Tensor& delta) {
  if (dtype == ir::DataType::kInt16 || dtype == ir::DataType::kInt32 || dtype == ir::DataType::kInt64) {
    VIGIL_ASSIGN_OR_RETURN(int64_t s, ScalarInt(ctx, start));
    VIGIL_ASSIGN_OR_RETURN(int64_t l, ScalarInt(ctx, limit));
    VIGIL_ASSIGN_OR_RETURN(int64_t d, ScalarInt(ctx, delta));
    if (d == 0) return ctx.Fail("delta is 0");
    __int128 span = static_cast<__int128>(l) - s;
    __int128 n = span / d + ((span % d != 0 && ((span > 0) == (d > 0))) ? 1 : 0);
    if (n > static_cast<__int128>(INT64_MAX)) return ctx.Fail("the range has more than 2^63 elements");
    return static_cast<int64_t>(std::max<__int128>(n, 0));
  }
  VIGIL_ASSIGN_OR_RETURN(double s, ScalarDouble(ctx, start));
  VIGIL_ASSIGN_OR_RETURN(double l, ScalarDouble(ctx, limit));
  VIGIL_ASSIGN_OR_RETURN(double d, ScalarDouble(ctx, delta));
  if (d == 0) return ctx.Fail("delta is 0");
  double n = std::ceil((l - s) / d);
  if (!std::isfinite(n) || n > 9.0e15) return ctx.Fail("Range({}, {}, {}) has no finite length", s, l, d);
  return static_cast<int64_t>(std::max(n, 0.0));
}

Status InferRange(InferenceContext& ctx) {
  ir::DataType dtype = ElemType(ctx, 0);
  for (size_t i = 1; i < 3; ++i) {
    ir::DataType other = ElemType(ctx, i);
    if (dtype != ir::DataType::kUndefined && other != ir::DataType::kUndefined && other != dtype) {
      return ctx.Fail("input {} has dtype {} but start has {}; Range needs one dtype", i, ir::DataTypeName(other),
                      ir::DataTypeName(dtype));
    }
  }
  const ir::Tensor* s = ctx.input_value(0);
  const ir::Tensor* l = ctx.input_value(1);
  const ir::Tensor* d = ctx.input_value(2);
  if (s && l && d) {
    VIGIL_ASSIGN_OR_RETURN(int64_t n, RangeCount(ctx, dtype, *s, *l, *d));
    SetTensor(ctx, 0, dtype, {ir::Dim::Known(n)});
  } else {
    SetTensor(ctx, 0, dtype, {ctx.NewSymbol()});
  }
  return Status::Ok();
}

Status InferShape(InferenceContext& ctx) {
  const std::vector<ir::Dim>* in = InputDims(ctx, 0);
  if (!in) {
    SetTensor(ctx, 0, ir::DataType::kInt64, {ctx.NewSymbol()});
    return Status::Ok();
  }
  int64_t rank = static_cast<int64_t>(in->size());
  // The same range the kernels resolve (ops/op_params.h).
  VIGIL_ASSIGN_OR_RETURN(ShapeRange range, ResolveShapeRange(ctx.node(), ctx.opset(), rank));
  SetTensor(ctx, 0, ir::DataType::kInt64, {ir::Dim::Known(range.end - range.start)});
  return Status::Ok();
}

Status InferSize(InferenceContext& ctx) {
  SetTensor(ctx, 0, ir::DataType::kInt64, {});
  return Status::Ok();
}

Status InferEyeLike(InferenceContext& ctx) {
  ir::DataType dtype = ElemType(ctx, 0);
  if (HasAttr(ctx.node(), "dtype")) {
    VIGIL_ASSIGN_OR_RETURN(int64_t d, IntAttr(ctx.node(), "dtype", 0));
    if (d > INT32_MAX || !ir::IsKnownDataType(static_cast<int32_t>(d))) return ctx.Fail("dtype {} is not a known data type", d);
    dtype = static_cast<ir::DataType>(d);
  }
  const std::vector<ir::Dim>* in = InputDims(ctx, 0);
  if (in && in->size() != 2) return ctx.Fail("input has rank {}; EyeLike needs rank 2", in->size());
  if (in) SetTensor(ctx, 0, dtype, *in);
  else SetTensor(ctx, 0, dtype, Symbols(ctx, 2));
  return Status::Ok();
}

const OpSchema kTensorGenSchemas[] = {
    {"", "Constant", 1, kLatest, 0, 0, 1, 1, InferConstant},
    {"", "ConstantOfShape", 9, kLatest, 1, 1, 1, 1, InferConstantOfShape},
    {"", "Range", 11, kLatest, 3, 3, 1, 1, InferRange},
    {"", "Shape", 1, kLatest, 1, 1, 1, 1, InferShape},
    {"", "Size", 1, kLatest, 1, 1, 1, 1, InferSize},
    {"", "EyeLike", 9, kLatest, 1, 1, 1, 1, InferEyeLike},
};

}  // namespace

std::span<const OpSchema> TensorGenSchemas() { return kTensorGenSchemas; }

}  // namespace vigil::ops
