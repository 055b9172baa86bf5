// CUDA kernels of QuantizeLinear and DequantizeLinear (opsets 10 to latest)
// and DynamicQuantizeLinear (11):
// per-tensor, per-axis and blocked scales (ops/quant_layout.h, the layout
// the CPU kernels use), float32/float16/bfloat16 data and scales, and the
// 8- and 16-bit integer types (int32 too as a DequantizeLinear input). The
// packed 4-bit and float8 types, float64 and int32 QuantizeLinear inputs
// stay on the CPU, with the reason.
//
// Both follow the CPU kernels (backends/cpu/quantization.cpp) operation for
// operation, so that the integers are the same bit for bit:
//   QuantizeLinear:   q = x / scale in float32 (rounded to float16/bfloat16
//                     when x and the scale share that type), then
//                     round half to even, + zero point, saturate; NaN gives
//                     the zero point.
//   DequantizeLinear: (float(x) - float(zero point)) * scale in float32,
//                     rounded once to the output type.
//   DynamicQuantizeLinear: the range [min(0, min x), max(0, max x)] found by
//                     one block, then the scale, zero point and every
//                     element in float32 as the CPU kernel computes them.
// One thread per element; the scale and zero point are read on the device,
// so nothing waits for the host and a run can be recorded as a CUDA graph.
// Where the CPU fails DynamicQuantizeLinear (x holds NaN: no range exists),
// the GPU cannot report an error without synchronising; it writes a NaN
// scale and zero point 0, so that everything dequantized from it is NaN.
#pragma nv_diag_suppress 20208

#include <cmath>
#include <limits>
#include <string>

#include "backends/cuda/device_common.cuh"
#include "backends/cuda/quantize_linear.h"
#include "ops/quant_layout.h"

namespace vigil::cuda {
namespace {

using ir::DataType;
constexpr int kThreads = 256;

// How a float16/bfloat16 quotient is rounded before it is quantized.
enum class QuotientRounding { kNone, kHalf, kBfloat16 };

template <typename X, typename S, typename Q>
__global__ void QuantizeKernel(const X* x, const S* scale, const Q* zero_point, Q* y, int64_t n,
                               ops::QuantScaleLayout layout, QuotientRounding rounding, double lo, double hi) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const int64_t k = ops::QuantScaleIndex(layout, i);
  float q = __fdiv_rn(ToFloat(x[i]), ToFloat(scale[k]));
  if (rounding == QuotientRounding::kHalf) q = __half2float(__float2half_rn(q));
  if (rounding == QuotientRounding::kBfloat16) q = __bfloat162float(__float2bfloat16_rn(q));
  const double zp = zero_point ? static_cast<double>(zero_point[k]) : 0.0;
  double v = isnan(q) ? zp : static_cast<double>(rintf(q)) + zp;
  v = fmin(fmax(v, lo), hi);
  y[i] = static_cast<Q>(static_cast<int64_t>(v));
}

template <typename Q, typename S, typename Y>
__global__ void DequantizeKernel(const Q* x, const S* scale, const Q* zero_point, Y* y, int64_t n,
                                 ops::QuantScaleLayout layout) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const int64_t k = ops::QuantScaleIndex(layout, i);
  const float zp = zero_point ? static_cast<float>(zero_point[k]) : 0.0f;
  const float centered = __fsub_rn(static_cast<float>(x[i]), zp);
  y[i] = FromFloat<Y>(__fmul_rn(centered, ToFloat(scale[k])));
}

constexpr int kRangeThreads = 1024;

// One block: lo = min(0, min x), hi = max(0, max x), compared as the CPU's
// std::min/std::max do; then the scale and zero point, in float32 as the
// CPU computes them.
__global__ void DynamicRangeKernel(const float* x, int64_t n, float* scale_out, uint8_t* zp_out) {
  __shared__ float lo_s[kRangeThreads], hi_s[kRangeThreads];
  __shared__ int nan_s[kRangeThreads];
  float lo = 0.0f, hi = 0.0f;
  int nan = 0;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    const float v = x[i];
    if (isnan(v)) nan = 1;
    lo = v < lo ? v : lo;
    hi = hi < v ? v : hi;
  }
  lo_s[threadIdx.x] = lo;
  hi_s[threadIdx.x] = hi;
  nan_s[threadIdx.x] = nan;
  __syncthreads();
  for (int half = blockDim.x / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) {
      const int o = threadIdx.x + half;
      lo_s[threadIdx.x] = lo_s[o] < lo_s[threadIdx.x] ? lo_s[o] : lo_s[threadIdx.x];
      hi_s[threadIdx.x] = hi_s[threadIdx.x] < hi_s[o] ? hi_s[o] : hi_s[threadIdx.x];
      nan_s[threadIdx.x] |= nan_s[o];
    }
    __syncthreads();
  }
  if (threadIdx.x != 0) return;
  lo = lo_s[0];
  hi = hi_s[0];
  if (nan_s[0]) {
    *scale_out = NAN;
    *zp_out = 0;
    return;
  }
  const float scale = __fdiv_rn(hi == lo ? 1.0f : __fsub_rn(hi, lo), 255.0f);
  const float zp_real = fminf(fmaxf(__fsub_rn(0.0f, __fdiv_rn(lo, scale)), 0.0f), 255.0f);
  *scale_out = scale;
  *zp_out = static_cast<uint8_t>(rintf(zp_real));
}

__global__ void DynamicQuantizeKernel(const float* x, int64_t n, const float* scale, const uint8_t* zp, uint8_t* y) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float q = __fadd_rn(rintf(__fdiv_rn(x[i], *scale)), static_cast<float>(*zp));
  y[i] = static_cast<uint8_t>(fminf(fmaxf(q, 0.0f), 255.0f));
}

// Calls f(T{}) with T the element type of a quantized integer dtype (int32
// only where `with_int32`).
template <typename F>
bool DispatchQuantized(DataType t, bool with_int32, F&& f) {
  switch (t) {
    case DataType::kUint8: f(uint8_t{}); return true;
    case DataType::kInt8: f(int8_t{}); return true;
    case DataType::kUint16: f(uint16_t{}); return true;
    case DataType::kInt16: f(int16_t{}); return true;
    case DataType::kInt32:
      if (!with_int32) return false;
      f(int32_t{});
      return true;
    default: return false;
  }
}

bool IsQuantizedType(DataType t, bool with_int32) {
  return DispatchQuantized(t, with_int32, [](auto) {});
}

DataType OutputDtype(const runtime::NodeTypes& types) {
  if (types.outputs.empty() || !types.outputs[0] || types.outputs[0]->kind != ir::TypeInfo::Kind::kTensor) {
    return DataType::kUndefined;
  }
  return types.outputs[0]->elem_type;
}

bool Refuse(std::string* why_not, std::string text) {
  if (why_not) *why_not = std::move(text);
  return false;
}

std::string Named(DataType t) {
  return t == DataType::kUndefined ? std::string("a dtype not known at load time") : std::string(ir::DataTypeName(t));
}

bool QuantizeSupports(const ir::Node& node, const runtime::NodeTypes& types, std::string* why_not) {
  if (node.inputs.size() < 2 || node.inputs[0].empty() || node.inputs[1].empty()) {
    return Refuse(why_not, "inputs x and y_scale are required");
  }
  const DataType x = InputDtype(types, 0), s = InputDtype(types, 1), y = OutputDtype(types);
  if (!IsCudaFloat(x)) return Refuse(why_not, "dtype " + Named(x) + " of input 0 (x); float32, float16, bfloat16 run here");
  if (!IsCudaFloat(s)) return Refuse(why_not, "dtype " + Named(s) + " of input 1 (y_scale)");
  if (!IsQuantizedType(y, false)) {
    return Refuse(why_not, "output dtype " + Named(y) + "; uint8, int8, uint16, int16 run here");
  }
  return true;
}

bool DequantizeSupports(const ir::Node& node, const runtime::NodeTypes& types, std::string* why_not) {
  if (node.inputs.size() < 2 || node.inputs[0].empty() || node.inputs[1].empty()) {
    return Refuse(why_not, "inputs x and x_scale are required");
  }
  const DataType x = InputDtype(types, 0), s = InputDtype(types, 1), y = OutputDtype(types);
  if (!IsQuantizedType(x, true)) {
    return Refuse(why_not, "dtype " + Named(x) + " of input 0 (x); uint8, int8, uint16, int16, int32 run here");
  }
  if (!IsCudaFloat(s)) return Refuse(why_not, "dtype " + Named(s) + " of input 1 (x_scale)");
  if (!IsCudaFloat(y)) return Refuse(why_not, "output dtype " + Named(y) + "; float32, float16, bfloat16 run here");
  return true;
}

Result<ops::QuantScaleLayout> ScaleLayout(CudaKernelContext& ctx) {
  if (!ctx.has_input(0) || !ctx.has_input(1)) return ctx.Fail("inputs x and the scale are required");
  const runtime::Tensor* zp = ctx.input(2);
  return ops::ReadQuantScaleLayout(ctx.node(), ctx.opset(), ctx.input(0)->shape(), ctx.input(0)->Describe(),
                                   ctx.input(1)->shape(), zp ? &zp->shape() : nullptr);
}

Status QuantizeLinear(CudaKernelContext& ctx) {
  VIGIL_ASSIGN_OR_RETURN(ops::QuantScaleLayout layout, ScaleLayout(ctx));
  const runtime::Tensor& x = *ctx.input(0);
  const runtime::Tensor& scale = *ctx.input(1);
  const runtime::Tensor* zp = ctx.input(2);
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * y, ctx.Output(0));
  if (zp && zp->dtype() != y->dtype()) {
    return ctx.Fail("zero point has dtype {}, the output {}", ir::DataTypeName(zp->dtype()),
                    ir::DataTypeName(y->dtype()));
  }
  const int64_t n = static_cast<int64_t>(x.element_count());
  if (n == 0) return Status::Ok();
  QuotientRounding rounding = QuotientRounding::kNone;
  if (x.dtype() == scale.dtype() && x.dtype() == DataType::kFloat16) rounding = QuotientRounding::kHalf;
  if (x.dtype() == scale.dtype() && x.dtype() == DataType::kBfloat16) rounding = QuotientRounding::kBfloat16;
  bool launched = false;
  DispatchFloat(x.dtype(), [&](auto xt) {
    using X = decltype(xt);
    DispatchFloat(scale.dtype(), [&](auto st) {
      using S = decltype(st);
      DispatchQuantized(y->dtype(), false, [&](auto qt) {
        using Q = decltype(qt);
        QuantizeKernel<X, S, Q><<<BlocksFor(n, kThreads), kThreads, 0, ctx.stream()>>>(
            static_cast<const X*>(x.raw_data()), static_cast<const S*>(scale.raw_data()),
            zp ? static_cast<const Q*>(zp->raw_data()) : nullptr, static_cast<Q*>(y->raw_data()), n, layout, rounding,
            static_cast<double>(std::numeric_limits<Q>::min()), static_cast<double>(std::numeric_limits<Q>::max()));
        launched = true;
      });
    });
  });
  if (!launched) {
    return ctx.Unsupported("QuantizeLinear from {} with a {} scale to {} has no CUDA kernel",
                           ir::DataTypeName(x.dtype()), ir::DataTypeName(scale.dtype()),
                           ir::DataTypeName(y->dtype()));
  }
  VIGIL_CHECK_LAUNCH("QuantizeLinear");
  return Status::Ok();
}

Status DequantizeLinear(CudaKernelContext& ctx) {
  VIGIL_ASSIGN_OR_RETURN(ops::QuantScaleLayout layout, ScaleLayout(ctx));
  const runtime::Tensor& x = *ctx.input(0);
  const runtime::Tensor& scale = *ctx.input(1);
  const runtime::Tensor* zp = ctx.input(2);
  if (zp && zp->dtype() != x.dtype()) {
    return ctx.Fail("zero point has dtype {}, x has {}", ir::DataTypeName(zp->dtype()), ir::DataTypeName(x.dtype()));
  }
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * y, ctx.Output(0));
  const int64_t n = static_cast<int64_t>(x.element_count());
  if (n == 0) return Status::Ok();
  bool launched = false;
  DispatchQuantized(x.dtype(), true, [&](auto qt) {
    using Q = decltype(qt);
    DispatchFloat(scale.dtype(), [&](auto st) {
      using S = decltype(st);
      DispatchFloat(y->dtype(), [&](auto yt) {
        using Y = decltype(yt);
        DequantizeKernel<Q, S, Y><<<BlocksFor(n, kThreads), kThreads, 0, ctx.stream()>>>(
            static_cast<const Q*>(x.raw_data()), static_cast<const S*>(scale.raw_data()),
            zp ? static_cast<const Q*>(zp->raw_data()) : nullptr, static_cast<Y*>(y->raw_data()), n, layout);
        launched = true;
      });
    });
  });
  if (!launched) {
    return ctx.Unsupported("DequantizeLinear from {} with a {} scale to {} has no CUDA kernel",
                           ir::DataTypeName(x.dtype()), ir::DataTypeName(scale.dtype()),
                           ir::DataTypeName(y->dtype()));
  }
  VIGIL_CHECK_LAUNCH("DequantizeLinear");
  return Status::Ok();
}

bool DynamicQuantizeSupports(const ir::Node& node, const runtime::NodeTypes& types, std::string* why_not) {
  if (node.inputs.empty() || node.inputs[0].empty()) return Refuse(why_not, "input x is required");
  const DataType x = InputDtype(types, 0);
  if (x != DataType::kFloat32) return Refuse(why_not, "dtype " + Named(x) + " of input 0 (x); float32 runs here");
  return true;
}

Status DynamicQuantizeLinear(CudaKernelContext& ctx) {
  if (!ctx.has_input(0)) return ctx.Fail("input x is required");
  const runtime::Tensor& x = *ctx.input(0);
  if (x.dtype() != DataType::kFloat32) return ctx.Unsupported("dtype {} of input 0", ir::DataTypeName(x.dtype()));
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * y, ctx.Output(0, DataType::kUint8, x.shape()));
  // The scale and zero point go to the outputs when they are wanted, else to
  // the stream's workspace (the quantizing kernel reads them there).
  float* scale = nullptr;
  uint8_t* zp = nullptr;
  void* scratch = nullptr;
  if (!ctx.output_wanted(1) || !ctx.output_wanted(2)) {
    VIGIL_ASSIGN_OR_RETURN(scratch, ctx.stream_context().Workspace(2 * sizeof(float)));
  }
  if (ctx.output_wanted(1)) {
    VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * s, ctx.Output(1, DataType::kFloat32, {}));
    scale = static_cast<float*>(s->raw_data());
  } else {
    scale = static_cast<float*>(scratch);
  }
  if (ctx.output_wanted(2)) {
    VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * z, ctx.Output(2, DataType::kUint8, {}));
    zp = static_cast<uint8_t*>(z->raw_data());
  } else {
    zp = reinterpret_cast<uint8_t*>(static_cast<float*>(scratch) + 1);
  }
  const int64_t n = static_cast<int64_t>(x.element_count());
  const float* xp = static_cast<const float*>(x.raw_data());
  DynamicRangeKernel<<<1, kRangeThreads, 0, ctx.stream()>>>(xp, n, scale, zp);
  VIGIL_CHECK_LAUNCH("DynamicQuantizeLinear (range)");
  if (n == 0) return Status::Ok();
  DynamicQuantizeKernel<<<BlocksFor(n, kThreads), kThreads, 0, ctx.stream()>>>(xp, n, scale, zp,
                                                                               static_cast<uint8_t*>(y->raw_data()));
  VIGIL_CHECK_LAUNCH("DynamicQuantizeLinear");
  return Status::Ok();
}

const CudaKernelDef kQuantizeLinearKernels[] = {
    {"", "QuantizeLinear", 10, kLatest, QuantizeLinear, QuantizeSupports},
    {"", "DequantizeLinear", 10, kLatest, DequantizeLinear, DequantizeSupports},
    {"", "DynamicQuantizeLinear", 11, kLatest, DynamicQuantizeLinear, DynamicQuantizeSupports},
};

}  // namespace

std::span<const CudaKernelDef> QuantizeLinearCudaKernels() { return kQuantizeLinearKernels; }

}  // namespace vigil::cuda
