// CPU kernels of the tensor generators: Constant, ConstantOfShape, Range,
// Shape, Size, EyeLike.
#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <vector>

#include <fmt/ranges.h>

#include "backends/cpu/shape_ops_common.h"
#include "ops/op_params.h"
#include "backends/cpu/kernel_families.h"

namespace vigil::cpu {
namespace {

using namespace shape_family;  // NOLINT: this family's own helpers
using Shape = std::vector<int64_t>;

// Copies a constant tensor's bytes into output 0. The output gets its own
// aligned buffer: raw_data in a model file has no alignment guarantee.
Status OutputConstant(KernelContext& ctx, const ir::Tensor& t) {
  if (t.storage == ir::Tensor::Storage::kStrings || ElementBytes(t.dtype) == 0) {
    return ctx.Unsupported("constants of dtype {} are not supported", ir::DataTypeName(t.dtype));
  }
  auto count = t.ElementCount();
  auto bytes = count ? ir::DataTypeStorageBytes(t.dtype, *count) : std::nullopt;
  if (!bytes || t.bytes.size() < *bytes) {
    return ctx.Fail("the constant value has {} bytes, its shape [{}] of {} needs {}", t.bytes.size(),
                    fmt::join(t.dims, ","), ir::DataTypeName(t.dtype), bytes.value_or(0));
  }
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * out, ctx.Output(0, t.dtype, t.dims));
  if (*bytes) std::memcpy(out->raw_data(), t.bytes.data(), *bytes);
  return Status::Ok();
}

template <typename T>
Status OutputValues(KernelContext& ctx, ir::DataType dtype, Shape shape, const std::vector<T>& values) {
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * out, ctx.Output(0, dtype, std::move(shape)));
  if (!values.empty()) std::memcpy(out->raw_data(), values.data(), values.size() * sizeof(T));
  return Status::Ok();
}

Status Constant(KernelContext& ctx) {
  const ir::Node& node = ctx.node();
  if (ops::HasAttr(node, "value")) {
    VIGIL_ASSIGN_OR_RETURN(const ir::Tensor* t, ops::TensorAttr(node, "value"));
    return OutputConstant(ctx, *t);
  }
  if (ops::HasAttr(node, "value_float")) {
    VIGIL_ASSIGN_OR_RETURN(float v, ops::FloatAttr(node, "value_float", 0));
    return OutputValues(ctx, ir::DataType::kFloat32, {}, std::vector<float>{v});
  }
  if (ops::HasAttr(node, "value_floats")) {
    VIGIL_ASSIGN_OR_RETURN(std::vector<float> v, ops::FloatsAttr(node, "value_floats"));
    return OutputValues(ctx, ir::DataType::kFloat32, {static_cast<int64_t>(v.size())}, v);
  }
  if (ops::HasAttr(node, "value_int")) {
    VIGIL_ASSIGN_OR_RETURN(int64_t v, ops::IntAttr(node, "value_int", 0));
    return OutputValues(ctx, ir::DataType::kInt64, {}, std::vector<int64_t>{v});
  }
  if (ops::HasAttr(node, "value_ints")) {
    VIGIL_ASSIGN_OR_RETURN(std::vector<int64_t> v, ops::IntsAttr(node, "value_ints"));
    return OutputValues(ctx, ir::DataType::kInt64, {static_cast<int64_t>(v.size())}, v);
  }
  if (ops::HasAttr(node, "value_string") || ops::HasAttr(node, "value_strings") ||
      ops::HasAttr(node, "sparse_value")) {
    return ctx.Unsupported("string and sparse constants are not supported");
  }
  return ctx.Fail("has no value attribute");
}

Status ConstantOfShape(KernelContext& ctx) {
  VIGIL_ASSIGN_OR_RETURN(Shape shape, ReadInts(ctx, 0, "shape"));
  VIGIL_ASSIGN_OR_RETURN(const ir::Tensor* value, ops::TensorAttr(ctx.node(), "value"));
  ir::DataType dtype = value ? value->dtype : ir::DataType::kFloat32;
  size_t eb = ElementBytes(dtype);
  if (eb == 0) return ctx.Unsupported("a value of dtype {} is not supported", ir::DataTypeName(dtype));
  std::vector<uint8_t> element(eb, 0);  // default: float32 zero
  if (value) {
    if (value->ElementCount().value_or(0) != 1 || value->bytes.size() < eb) {
      return ctx.Fail("attribute 'value' must hold exactly one element");
    }
    std::memcpy(element.data(), value->bytes.data(), eb);
  }
  for (int64_t d : shape) {
    if (d < 0) return ctx.Fail("shape [{}] has a negative dim", fmt::join(shape, ","));
  }
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * out, ctx.Output(0, dtype, shape));
  auto* dst = static_cast<uint8_t*>(out->raw_data());
  for (uint64_t i = 0; i < out->element_count(); ++i) std::memcpy(dst + i * eb, element.data(), eb);
  return Status::Ok();
}

// max(ceil((limit - start) / delta), 0), computed exactly for integers.
template <typename T>
Result<int64_t> RangeLength(const KernelContext& ctx, T start, T limit, T delta) {
  if (delta == 0) return ctx.Fail("delta is 0");
  if constexpr (std::is_integral_v<T>) {
    __int128 span = static_cast<__int128>(limit) - start;
    __int128 n = span / delta + ((span % delta != 0 && ((span > 0) == (delta > 0))) ? 1 : 0);
    if (n > static_cast<__int128>(INT64_MAX)) return ctx.Fail("the range has more than 2^63 elements");
    return static_cast<int64_t>(std::max<__int128>(n, 0));
  } else {
    double n = std::ceil((static_cast<double>(limit) - start) / delta);
    if (!std::isfinite(n) || n > 9.0e15) return ctx.Fail("Range({}, {}, {}) has no finite length", start, limit, delta);
    return static_cast<int64_t>(std::max(n, 0.0));
  }
}

template <typename T>
Status RangeOf(KernelContext& ctx) {
  for (size_t i = 0; i < 3; ++i) {
    const runtime::Tensor* t = ctx.input(i);
    if (t->dtype() != ctx.input(0)->dtype() || t->element_count() != 1) {
      return ctx.Fail("start, limit and delta must be scalars of one dtype; input {} is {}", i, t->Describe());
    }
  }
  T start = ctx.input(0)->data<T>()[0], limit = ctx.input(1)->data<T>()[0], delta = ctx.input(2)->data<T>()[0];
  VIGIL_ASSIGN_OR_RETURN(int64_t n, RangeLength(ctx, start, limit, delta));
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * out, ctx.Output(0, ctx.input(0)->dtype(), {n}));
  T* dst = out->data<T>();
  for (int64_t i = 0; i < n; ++i) {
    // In the element type, as numpy.arange and ONNX Runtime do; integers
    // stay within [start, limit) so they cannot overflow.
    if constexpr (std::is_integral_v<T>) {
      dst[i] = static_cast<T>(static_cast<uint64_t>(start) + static_cast<uint64_t>(i) * static_cast<uint64_t>(delta));
    } else {
      dst[i] = static_cast<T>(start + static_cast<T>(i) * delta);
    }
  }
  return Status::Ok();
}

// float16/bfloat16 (Range-27): computed in float, or double when stash_type
// is 11, then rounded once to the element type.
template <typename Tr>
Status RangeLowPrecision(KernelContext& ctx) {
  for (size_t i = 0; i < 3; ++i) {
    const runtime::Tensor* t = ctx.input(i);
    if (t->dtype() != ctx.input(0)->dtype() || t->element_count() != 1) {
      return ctx.Fail("start, limit and delta must be scalars of one dtype; input {} is {}", i, t->Describe());
    }
  }
  VIGIL_ASSIGN_OR_RETURN(int64_t stash, ops::IntAttr(ctx.node(), "stash_type", 1));
  if (stash != 1 && stash != 11) return ctx.Fail("stash_type {} is not 1 (float) or 11 (double)", stash);
  double start = Tr::ToDouble(ctx.input(0)->data<uint16_t>()[0]);
  double limit = Tr::ToDouble(ctx.input(1)->data<uint16_t>()[0]);
  double delta = Tr::ToDouble(ctx.input(2)->data<uint16_t>()[0]);
  VIGIL_ASSIGN_OR_RETURN(int64_t n, RangeLength(ctx, start, limit, delta));
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * out, ctx.Output(0, ctx.input(0)->dtype(), {n}));
  uint16_t* dst = out->data<uint16_t>();
  for (int64_t i = 0; i < n; ++i) {
    double v = stash == 1 ? static_cast<double>(static_cast<float>(start) + static_cast<float>(i) * static_cast<float>(delta))
                          : start + static_cast<double>(i) * delta;
    dst[i] = Tr::FromDouble(v);
  }
  return Status::Ok();
}

Status Range(KernelContext& ctx) {
  switch (ctx.input(0)->dtype()) {
    case ir::DataType::kFloat16: return RangeLowPrecision<Float16Traits>(ctx);
    case ir::DataType::kBfloat16: return RangeLowPrecision<Bfloat16Traits>(ctx);
    case ir::DataType::kFloat32: return RangeOf<float>(ctx);
    case ir::DataType::kFloat64: return RangeOf<double>(ctx);
    case ir::DataType::kInt16: return RangeOf<int16_t>(ctx);
    case ir::DataType::kInt32: return RangeOf<int32_t>(ctx);
    case ir::DataType::kInt64: return RangeOf<int64_t>(ctx);
    default: return ctx.UnsupportedDtype(0);
  }
}

Status ShapeKernel(KernelContext& ctx) {
  const Shape& dims = ctx.input(0)->shape();
  int64_t rank = static_cast<int64_t>(dims.size());
  VIGIL_ASSIGN_OR_RETURN(ops::ShapeRange range, ops::ResolveShapeRange(ctx.node(), ctx.opset(), rank));
  std::vector<int64_t> values(dims.begin() + range.start, dims.begin() + range.end);
  return OutputValues(ctx, ir::DataType::kInt64, {range.end - range.start}, values);
}

Status Size(KernelContext& ctx) {
  int64_t n = static_cast<int64_t>(ctx.input(0)->element_count());
  return OutputValues(ctx, ir::DataType::kInt64, {}, std::vector<int64_t>{n});
}

Status EyeLike(KernelContext& ctx) {
  const runtime::Tensor& in = *ctx.input(0);
  if (in.rank() != 2) return ctx.Fail("input {} must be 2-D", in.Describe());
  ir::DataType dtype = in.dtype();
  if (ops::HasAttr(ctx.node(), "dtype")) {
    VIGIL_ASSIGN_OR_RETURN(int64_t d, ops::IntAttr(ctx.node(), "dtype", 0));
    if (d < 0 || d > INT32_MAX || !ir::IsKnownDataType(static_cast<int32_t>(d))) {
      return ctx.Fail("dtype {} is not a known data type", d);
    }
    dtype = static_cast<ir::DataType>(d);
  }
  VIGIL_ASSIGN_OR_RETURN(int64_t k, ops::IntAttr(ctx.node(), "k", 0));
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * out, ctx.Output(0, dtype, in.shape()));
  int64_t rows = in.dim(0), cols = in.dim(1);
  return VisitNumeric(ctx, 0, dtype, true, [&](auto traits) {
    using Tr = decltype(traits);
    typename Tr::Storage* dst = out->data<typename Tr::Storage>();
    typename Tr::Storage zero = Tr::FromDouble(0.0), one = Tr::FromDouble(1.0);
    for (int64_t i = 0; i < rows; ++i) {
      for (int64_t j = 0; j < cols; ++j) dst[i * cols + j] = j - i == k ? one : zero;
    }
    return Status::Ok();
  });
}

const KernelDef kTensorGenKernels[] = {
    {"", "Constant", 1, kLatest, Constant},
    {"", "ConstantOfShape", 9, kLatest, ConstantOfShape},
    {"", "Range", 11, kLatest, WithInputs<Range, 3>},
    {"", "Shape", 1, kLatest, WithInputs<ShapeKernel, 1>},
    {"", "Size", 1, kLatest, WithInputs<Size, 1>},
    {"", "EyeLike", 9, kLatest, WithInputs<EyeLike, 1>},
};

}  // namespace

std::span<const KernelDef> TensorGenKernels() { return kTensorGenKernels; }

}  // namespace vigil::cpu
