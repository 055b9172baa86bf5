// CPU kernels of the quantization ops: QuantizeLinear, DequantizeLinear
// (opsets 10, 13, 19, 21+) and DynamicQuantizeLinear (11).
//
// Integer targets only (uint8, int8, uint16, int16; int32 as a Dequantize
// input); the packed 4-bit and float8 types are refused as Unsupported.
// Arithmetic follows the ONNX reference: the quotient x / scale is formed in
// the type numpy would use, then rounded half to even and saturated.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>


#include "backends/cpu/kernel.h"
#include "ops/quant_layout.h"
#include "vigil/float16.h"
#include "backends/cpu/kernel_families.h"

namespace vigil::cpu {
namespace {

using ir::DataType;

// The scale layout, checked against x (ops/quant_layout.h, shared with the
// CUDA kernels).
Result<ops::QuantScaleLayout> ReadScaleLayout(const KernelContext& ctx) {
  const runtime::Tensor* zp = ctx.input(2);
  return ops::ReadQuantScaleLayout(ctx.node(), ctx.opset(), ctx.input(0)->shape(), ctx.input(0)->Describe(),
                                   ctx.input(1)->shape(), zp ? &zp->shape() : nullptr);
}

// A float-typed element as double (float16/bfloat16 widened exactly).
double FloatAt(const runtime::Tensor& t, size_t i) {
  switch (t.dtype()) {
    case DataType::kFloat32: return t.data<float>()[i];
    case DataType::kFloat64: return t.data<double>()[i];
    case DataType::kFloat16: return Float16ToFloat(t.data<uint16_t>()[i]);
    case DataType::kBfloat16: return Bfloat16ToFloat(t.data<uint16_t>()[i]);
    default: return 0;
  }
}

bool IsScaleType(DataType t) {
  return t == DataType::kFloat32 || t == DataType::kFloat16 || t == DataType::kBfloat16 || t == DataType::kFloat64;
}

// An integer-typed element as int64.
int64_t IntAt(const runtime::Tensor& t, size_t i) {
  switch (t.dtype()) {
    case DataType::kUint8: return t.data<uint8_t>()[i];
    case DataType::kInt8: return t.data<int8_t>()[i];
    case DataType::kUint16: return t.data<uint16_t>()[i];
    case DataType::kInt16: return t.data<int16_t>()[i];
    case DataType::kInt32: return t.data<int32_t>()[i];
    default: return 0;
  }
}

struct IntRange {
  int64_t lo, hi;
};

std::optional<IntRange> QuantRange(DataType t) {
  switch (t) {
    case DataType::kUint8: return IntRange{0, 255};
    case DataType::kInt8: return IntRange{-128, 127};
    case DataType::kUint16: return IntRange{0, 65535};
    case DataType::kInt16: return IntRange{-32768, 32767};
    default: return std::nullopt;
  }
}

void StoreInt(runtime::Tensor& t, size_t i, int64_t v) {
  switch (t.dtype()) {
    case DataType::kUint8: t.data<uint8_t>()[i] = static_cast<uint8_t>(v); break;
    case DataType::kInt8: t.data<int8_t>()[i] = static_cast<int8_t>(v); break;
    case DataType::kUint16: t.data<uint16_t>()[i] = static_cast<uint16_t>(v); break;
    case DataType::kInt16: t.data<int16_t>()[i] = static_cast<int16_t>(v); break;
    default: break;
  }
}

void StoreFloat(runtime::Tensor& t, size_t i, float v) {
  switch (t.dtype()) {
    case DataType::kFloat32: t.data<float>()[i] = v; break;
    case DataType::kFloat64: t.data<double>()[i] = v; break;
    case DataType::kFloat16: t.data<uint16_t>()[i] = FloatToFloat16(v); break;
    case DataType::kBfloat16: t.data<uint16_t>()[i] = FloatToBfloat16(v); break;
    default: break;
  }
}

// round-half-to-even(q) + zp, saturated to the target's range. NaN has no
// quantized value; it maps to the zero point (quantized 0).
int64_t Saturate(double q, int64_t zp, IntRange range) {
  double v = std::isnan(q) ? static_cast<double>(zp) : std::nearbyint(q) + static_cast<double>(zp);
  v = std::min(std::max(v, static_cast<double>(range.lo)), static_cast<double>(range.hi));
  return static_cast<int64_t>(v);
}

// x / scale in the precision numpy uses for the reference: float32 for
// float32 and 16-bit inputs (rounded to the 16-bit type when x and scale
// share it), float64 for float64 and int32 inputs.
double Quotient(DataType xt, DataType st, double x, double scale) {
  if (xt == DataType::kFloat64 || xt == DataType::kInt32 || st == DataType::kFloat64) return x / scale;
  const float q = static_cast<float>(x) / static_cast<float>(scale);
  if (xt == st && xt == DataType::kFloat16) return Float16ToFloat(FloatToFloat16(q));
  if (xt == st && xt == DataType::kBfloat16) return Bfloat16ToFloat(FloatToBfloat16(q));
  return q;
}

Result<DataType> QuantizeOutputType(const KernelContext& ctx) {
  DataType out = DataType::kUint8;
  int64_t output_dtype = 0;
  if (ctx.opset() >= 21) {
    VIGIL_ASSIGN_OR_RETURN(output_dtype, ops::IntAttr(ctx.node(), "output_dtype", 0));
    if (output_dtype != 0) out = static_cast<DataType>(output_dtype);
  }
  if (const runtime::Tensor* zp = ctx.input(2)) {
    if (output_dtype != 0 && zp->dtype() != out) {
      return ctx.Fail("output_dtype {} differs from the zero point's dtype {}", output_dtype,
                      ir::DataTypeName(zp->dtype()));
    }
    out = zp->dtype();
  }
  if (!QuantRange(out)) {
    return ctx.Unsupported("quantizing to {} is not supported by the CPU kernel (uint8, int8, uint16, int16 are)",
                           ir::DataTypeName(out));
  }
  return out;
}

Status QuantizeLinear(KernelContext& ctx) {
  if (!ctx.has_input(0) || !ctx.has_input(1)) return ctx.Fail("inputs x and y_scale are required");
  const runtime::Tensor& x = *ctx.input(0);
  const runtime::Tensor& scale = *ctx.input(1);
  if (!IsScaleType(x.dtype()) && x.dtype() != DataType::kInt32) return ctx.UnsupportedDtype(0);
  if (!IsScaleType(scale.dtype())) return ctx.UnsupportedDtype(1);
  VIGIL_ASSIGN_OR_RETURN(DataType out_type, QuantizeOutputType(ctx));
  VIGIL_ASSIGN_OR_RETURN(ops::QuantScaleLayout layout, ReadScaleLayout(ctx));
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * y, ctx.Output(0, out_type, x.shape()));
  const runtime::Tensor* zp = ctx.input(2);
  const IntRange range = *QuantRange(out_type);
  const size_t n = x.element_count();
  for (size_t i = 0; i < n; ++i) {
    const size_t k = static_cast<size_t>(ops::QuantScaleIndex(layout, static_cast<int64_t>(i)));
    const double xv = x.dtype() == DataType::kInt32 ? x.data<int32_t>()[i] : FloatAt(x, i);
    const double q = Quotient(x.dtype(), scale.dtype(), xv, FloatAt(scale, k));
    StoreInt(*y, i, Saturate(q, zp ? IntAt(*zp, k) : 0, range));
  }
  return Status::Ok();
}

Result<DataType> DequantizeOutputType(const KernelContext& ctx) {
  DataType out = ctx.opset() >= 19 ? ctx.input(1)->dtype() : DataType::kFloat32;
  if (ctx.opset() >= 23) {
    VIGIL_ASSIGN_OR_RETURN(int64_t output_dtype, ops::IntAttr(ctx.node(), "output_dtype", 0));
    if (output_dtype != 0) out = static_cast<DataType>(output_dtype);
  }
  if (!IsScaleType(out)) {
    return ctx.Unsupported("dequantizing to {} is not supported by the CPU kernel", ir::DataTypeName(out));
  }
  return out;
}

Status DequantizeLinear(KernelContext& ctx) {
  if (!ctx.has_input(0) || !ctx.has_input(1)) return ctx.Fail("inputs x and x_scale are required");
  const runtime::Tensor& x = *ctx.input(0);
  const runtime::Tensor& scale = *ctx.input(1);
  if (!QuantRange(x.dtype()) && x.dtype() != DataType::kInt32) return ctx.UnsupportedDtype(0);
  if (!IsScaleType(scale.dtype())) return ctx.UnsupportedDtype(1);
  const runtime::Tensor* zp = ctx.input(2);
  if (zp && zp->dtype() != x.dtype()) {
    return ctx.Fail("zero point has dtype {}, x has {}", ir::DataTypeName(zp->dtype()), ir::DataTypeName(x.dtype()));
  }
  VIGIL_ASSIGN_OR_RETURN(DataType out_type, DequantizeOutputType(ctx));
  VIGIL_ASSIGN_OR_RETURN(ops::QuantScaleLayout layout, ReadScaleLayout(ctx));
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * y, ctx.Output(0, out_type, x.shape()));
  const size_t n = x.element_count();
  for (size_t i = 0; i < n; ++i) {
    const size_t k = static_cast<size_t>(ops::QuantScaleIndex(layout, static_cast<int64_t>(i)));
    // float32 arithmetic, as the reference: (float(x) - zp) * scale.
    const float centered = static_cast<float>(IntAt(x, i)) - static_cast<float>(zp ? IntAt(*zp, k) : 0);
    StoreFloat(*y, i, centered * static_cast<float>(FloatAt(scale, k)));
  }
  return Status::Ok();
}

// uint8 with the range [min(0, min x), max(0, max x)] mapped onto [0, 255],
// computed in float32 as the reference does.
Status DynamicQuantizeLinear(KernelContext& ctx) {
  if (!ctx.has_input(0)) return ctx.Fail("input x is required");
  const runtime::Tensor& x = *ctx.input(0);
  if (x.dtype() != DataType::kFloat32) return ctx.UnsupportedDtype(0);
  const float* xv = x.data<float>();
  const size_t n = x.element_count();
  float lo = 0, hi = 0;
  for (size_t i = 0; i < n; ++i) {
    if (std::isnan(xv[i])) return ctx.Fail("x[{}] is NaN: no quantization range exists", i);
    lo = std::min(lo, xv[i]);
    hi = std::max(hi, xv[i]);
  }
  // An all-zero range would divide by zero; any scale quantizes zeros to the zero point.
  const float scale = (hi == lo ? 1.0f : hi - lo) / 255.0f;
  const float zp_real = std::min(std::max(0.0f - lo / scale, 0.0f), 255.0f);
  const float zp = std::nearbyint(zp_real);
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * y, ctx.Output(0, DataType::kUint8, x.shape()));
  for (size_t i = 0; i < n; ++i) {
    const float q = std::nearbyint(xv[i] / scale) + zp;
    y->data<uint8_t>()[i] = static_cast<uint8_t>(std::min(std::max(q, 0.0f), 255.0f));
  }
  if (ctx.num_outputs() > 1) {
    VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * s, ctx.Output(1, DataType::kFloat32, {}));
    s->data<float>()[0] = scale;
  }
  if (ctx.num_outputs() > 2) {
    VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * z, ctx.Output(2, DataType::kUint8, {}));
    z->data<uint8_t>()[0] = static_cast<uint8_t>(zp);
  }
  return Status::Ok();
}

const KernelDef kQuantizationKernels[] = {
    {"", "QuantizeLinear", 10, kLatest, QuantizeLinear},
    {"", "DequantizeLinear", 10, kLatest, DequantizeLinear},
    {"", "DynamicQuantizeLinear", 11, kLatest, DynamicQuantizeLinear},
};

}  // namespace

std::span<const KernelDef> QuantizationKernels() { return kQuantizationKernels; }

}  // namespace vigil::cpu
