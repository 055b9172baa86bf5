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
// One thread per element, or four (16-byte loads or stores) for the common
// case of a QDQ model's activations: float32 data, one float32 scale, 8-bit
// integers. The scale and zero point are read on the device, so nothing
// waits for the host and a run can be recorded as a CUDA graph.
// Where the CPU fails DynamicQuantizeLinear (x holds NaN: no range exists),
// the GPU cannot report an error without synchronising; it writes a NaN
// scale and zero point 0, so that everything dequantized from it is NaN.
#pragma nv_diag_suppress 20208

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>

#include "backends/cuda/device_common.cuh"
#include "backends/cuda/quantize_linear.h"
#include "ir/fuse_qdq.h"
#include "ir/layout_nhwc.h"  // kVigilDomain
#include "ops/attributes.h"
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

// The 8-bit fast path: four elements a thread, float32 arithmetic only. The
// same integers as QuantizeKernel's double arithmetic: rintf(q) + zp is
// exact in float32 wherever the result lies inside [lo, hi], and rounds to a
// value still beyond the bound where it does not (the bounds are integers).
template <typename Q>
using Int8x4 = std::conditional_t<std::is_signed_v<Q>, char4, uchar4>;

template <typename Q>
__device__ __forceinline__ Q Quantize8(float x, float s, float zp) {
  constexpr float lo = std::numeric_limits<Q>::min(), hi = std::numeric_limits<Q>::max();
  const float q = __fdiv_rn(x, s);
  return static_cast<Q>(static_cast<int>(isnan(q) ? zp : fminf(fmaxf(__fadd_rn(rintf(q), zp), lo), hi)));
}

template <typename Q>
__global__ void QuantizeTensor4Kernel(const float4* x, const float* scale, const Q* zero_point, Int8x4<Q>* y,
                                      int64_t n4) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n4) return;
  const float s = *scale, zp = zero_point ? static_cast<float>(*zero_point) : 0.0f;
  const float4 v = x[i];
  y[i] = Int8x4<Q>{Quantize8<Q>(v.x, s, zp), Quantize8<Q>(v.y, s, zp), Quantize8<Q>(v.z, s, zp),
                   Quantize8<Q>(v.w, s, zp)};
}

template <typename Q>
__global__ void DequantizeTensor4Kernel(const Int8x4<Q>* x, const float* scale, const Q* zero_point, float4* y,
                                        int64_t n4) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n4) return;
  const float s = *scale, zp = zero_point ? static_cast<float>(*zero_point) : 0.0f;
  const Int8x4<Q> v = x[i];
  y[i] = make_float4(__fmul_rn(__fsub_rn(static_cast<float>(v.x), zp), s),
                     __fmul_rn(__fsub_rn(static_cast<float>(v.y), zp), s),
                     __fmul_rn(__fsub_rn(static_cast<float>(v.z), zp), s),
                     __fmul_rn(__fsub_rn(static_cast<float>(v.w), zp), s));
}

// Whether the 8-bit fast path takes a node: float32 data and scale, one
// scale, 8-bit integers, and the float data 16-byte aligned (the integers
// then are 4-byte aligned when their buffer is).
bool FastPath(const ops::QuantScaleLayout& layout, DataType f, DataType scale, DataType q, const void* fp,
              const void* qp) {
  return layout.mode == ops::QuantScaleLayout::Mode::kPerTensor && f == DataType::kFloat32 &&
         scale == DataType::kFloat32 && (q == DataType::kInt8 || q == DataType::kUint8) &&
         reinterpret_cast<uintptr_t>(fp) % 16 == 0 && reinterpret_cast<uintptr_t>(qp) % 4 == 0;
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
  // The fast path's groups of four, then the rest (and every other case) one element a thread.
  const int64_t n4 = FastPath(layout, x.dtype(), scale.dtype(), y->dtype(), x.raw_data(), y->raw_data()) ? n / 4 : 0;
  DispatchFloat(x.dtype(), [&](auto xt) {
    using X = decltype(xt);
    DispatchFloat(scale.dtype(), [&](auto st) {
      using S = decltype(st);
      DispatchQuantized(y->dtype(), false, [&](auto qt) {
        using Q = decltype(qt);
        if constexpr (std::is_same_v<X, float> && sizeof(Q) == 1) {
          if (n4 > 0) {
            QuantizeTensor4Kernel<Q><<<BlocksFor(n4, kThreads), kThreads, 0, ctx.stream()>>>(
                static_cast<const float4*>(x.raw_data()), static_cast<const float*>(scale.raw_data()),
                zp ? static_cast<const Q*>(zp->raw_data()) : nullptr, static_cast<Int8x4<Q>*>(y->raw_data()), n4);
          }
        }
        if (n > 4 * n4) {
          QuantizeKernel<X, S, Q><<<BlocksFor(n - 4 * n4, kThreads), kThreads, 0, ctx.stream()>>>(
              static_cast<const X*>(x.raw_data()) + 4 * n4, static_cast<const S*>(scale.raw_data()),
              zp ? static_cast<const Q*>(zp->raw_data()) : nullptr, static_cast<Q*>(y->raw_data()) + 4 * n4,
              n - 4 * n4, layout, rounding, static_cast<double>(std::numeric_limits<Q>::min()),
              static_cast<double>(std::numeric_limits<Q>::max()));
        }
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
  const int64_t n4 = FastPath(layout, y->dtype(), scale.dtype(), x.dtype(), y->raw_data(), x.raw_data()) ? n / 4 : 0;
  DispatchQuantized(x.dtype(), true, [&](auto qt) {
    using Q = decltype(qt);
    DispatchFloat(scale.dtype(), [&](auto st) {
      using S = decltype(st);
      DispatchFloat(y->dtype(), [&](auto yt) {
        using Y = decltype(yt);
        if constexpr (std::is_same_v<Y, float> && sizeof(Q) == 1) {
          if (n4 > 0) {
            DequantizeTensor4Kernel<Q><<<BlocksFor(n4, kThreads), kThreads, 0, ctx.stream()>>>(
                static_cast<const Int8x4<Q>*>(x.raw_data()), static_cast<const float*>(scale.raw_data()),
                zp ? static_cast<const Q*>(zp->raw_data()) : nullptr, static_cast<float4*>(y->raw_data()), n4);
          }
        }
        if (n > 4 * n4) {
          DequantizeKernel<Q, S, Y><<<BlocksFor(n - 4 * n4, kThreads), kThreads, 0, ctx.stream()>>>(
              static_cast<const Q*>(x.raw_data()) + 4 * n4, static_cast<const S*>(scale.raw_data()),
              zp ? static_cast<const Q*>(zp->raw_data()) : nullptr, static_cast<Y*>(y->raw_data()) + 4 * n4,
              n - 4 * n4, layout);
        }
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

// ai.vigil.QAdd (ir/fuse_qdq.h): the unfused DequantizeLinear -> Add ->
// QuantizeLinear chain's float32 steps, each rounded as the CPU kernels
// round them (the _rn intrinsics keep nvcc from contracting them into a
// fused multiply-add), so that the result is the chain's bit for bit.
__device__ __forceinline__ int8_t QAddOne(int8_t a, int8_t b, float sa, float sb, float sy, bool relu) {
  const float sum = __fadd_rn(__fmul_rn(static_cast<float>(a), sa), __fmul_rn(static_cast<float>(b), sb));
  const float q = __fdiv_rn(sum, sy);
  float r = isnan(q) ? 0.0f : fminf(fmaxf(rintf(q), -128.0f), 127.0f);
  if (relu) r = fmaxf(r, 0.0f);
  return static_cast<int8_t>(r);
}

// Four elements per thread (char4 loads) where n is a multiple of 4.
__global__ void QAddKernel4(const char4* a, const char4* b, char4* y, int64_t n4, const float* sa, const float* sb,
                            const float* sy, bool relu) {
  const float fa = *sa, fb = *sb, fy = *sy;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n4;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const char4 u = a[i], v = b[i];
    y[i] = make_char4(QAddOne(u.x, v.x, fa, fb, fy, relu), QAddOne(u.y, v.y, fa, fb, fy, relu),
                      QAddOne(u.z, v.z, fa, fb, fy, relu), QAddOne(u.w, v.w, fa, fb, fy, relu));
  }
}

// Sixteen per thread (16-byte loads) where n is a multiple of 16 and the pointers are aligned.
__global__ void QAddKernel16(const int4* a, const int4* b, int4* y, int64_t n16, const float* sa, const float* sb,
                             const float* sy, bool relu) {
  const float fa = *sa, fb = *sb, fy = *sy;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n16;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    int4 u = a[i], v = b[i], r;
    const int8_t* pu = reinterpret_cast<const int8_t*>(&u);
    const int8_t* pv = reinterpret_cast<const int8_t*>(&v);
    int8_t* pr = reinterpret_cast<int8_t*>(&r);
#pragma unroll
    for (int k = 0; k < 16; ++k) pr[k] = QAddOne(pu[k], pv[k], fa, fb, fy, relu);
    y[i] = r;
  }
}

__global__ void QAddKernel1(const int8_t* a, const int8_t* b, int8_t* y, int64_t n, const float* sa, const float* sb,
                            const float* sy, bool relu) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    y[i] = QAddOne(a[i], b[i], *sa, *sb, *sy, relu);
  }
}

Status QAdd(CudaKernelContext& ctx) {
  const runtime::Tensor& a = *ctx.input(0);
  const runtime::Tensor& b = *ctx.input(2);
  for (size_t i : {size_t{1}, size_t{3}, size_t{4}}) {
    const runtime::Tensor* s = ctx.input(i);
    if (!s || s->dtype() != DataType::kFloat32 || s->element_count() != 1) {
      return ctx.Fail("input {} must be one float32 scale", i);
    }
  }
  if (a.dtype() != DataType::kInt8 || b.dtype() != DataType::kInt8 || a.shape() != b.shape()) {
    return ctx.Fail("A ({}) and B ({}) must be int8 of one shape", a.Describe(), b.Describe());
  }
  VIGIL_ASSIGN_OR_RETURN(std::string act, ops::StringAttr(ctx.node(), "activation", ""));
  const bool relu = !act.empty();
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * y, ctx.Output(0, DataType::kInt8, a.shape()));
  const int64_t n = static_cast<int64_t>(a.element_count());
  if (n == 0) return Status::Ok();
  const auto* sa = static_cast<const float*>(ctx.input(1)->raw_data());
  const auto* sb = static_cast<const float*>(ctx.input(3)->raw_data());
  const auto* sy = static_cast<const float*>(ctx.input(4)->raw_data());
  auto aligned = [](const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; };
  if (n % 16 == 0 && aligned(a.raw_data()) && aligned(b.raw_data()) && aligned(y->raw_data())) {
    QAddKernel16<<<BlocksFor(n / 16, kThreads), kThreads, 0, ctx.stream()>>>(
        static_cast<const int4*>(a.raw_data()), static_cast<const int4*>(b.raw_data()),
        static_cast<int4*>(y->raw_data()), n / 16, sa, sb, sy, relu);
  } else if (n % 4 == 0) {
    QAddKernel4<<<BlocksFor(n / 4, kThreads), kThreads, 0, ctx.stream()>>>(
        static_cast<const char4*>(a.raw_data()), static_cast<const char4*>(b.raw_data()),
        static_cast<char4*>(y->raw_data()), n / 4, sa, sb, sy, relu);
  } else {
    QAddKernel1<<<BlocksFor(n, kThreads), kThreads, 0, ctx.stream()>>>(
        static_cast<const int8_t*>(a.raw_data()), static_cast<const int8_t*>(b.raw_data()),
        static_cast<int8_t*>(y->raw_data()), n, sa, sb, sy, relu);
  }
  VIGIL_CHECK_LAUNCH("QAdd");
  return Status::Ok();
}

bool QAddSupports(const ir::Node& node, const runtime::NodeTypes& types, std::string* why_not) {
  auto is = [&](size_t i, DataType d) {
    const ir::TypeInfo* t = i < types.inputs.size() ? types.inputs[i] : nullptr;
    return !t || (t->kind == ir::TypeInfo::Kind::kTensor && t->elem_type == d);
  };
  if (!is(0, DataType::kInt8) || !is(2, DataType::kInt8) || !is(1, DataType::kFloat32) ||
      !is(3, DataType::kFloat32) || !is(4, DataType::kFloat32)) {
    if (why_not) *why_not = "QAdd takes int8 A and B and float32 scales";
    return false;
  }
  Result<std::string> act = ops::StringAttr(node, "activation", "");
  if (!act.ok() || (!act->empty() && *act != "Relu")) {
    if (why_not) *why_not = "activation other than Relu";
    return false;
  }
  return true;
}

template <typename A>
__global__ void RequantizeRowsKernel(const A* acc, const float* scale, const float* bias, int8_t* y, int64_t n,
                                     int64_t m, bool relu) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t c = i % m;
    float v = __fadd_rn(__fmul_rn(static_cast<float>(acc[i]), scale[c]), bias[c]);
    if (relu) v = fmaxf(v, 0.0f);
    y[i] = static_cast<int8_t>(isnan(v) ? 0.0f : fminf(fmaxf(rintf(v), -128.0f), 127.0f));
  }
}

const CudaKernelDef kQuantizeLinearKernels[] = {
    {"", "QuantizeLinear", 10, kLatest, QuantizeLinear, QuantizeSupports},
    {"", "DequantizeLinear", 10, kLatest, DequantizeLinear, DequantizeSupports},
    {"", "DynamicQuantizeLinear", 11, kLatest, DynamicQuantizeLinear, DynamicQuantizeSupports},
    {ir::kVigilDomain, ir::kQAddOp, 1, kLatest, QAdd, QAddSupports},
};

}  // namespace

std::span<const CudaKernelDef> QuantizeLinearCudaKernels() { return kQuantizeLinearKernels; }

Status LaunchRequantizeRows(const void* acc, bool float_acc, const float* scale, const float* bias, int8_t* y,
                            int64_t rows, int64_t m, bool relu, cudaStream_t stream) {
  const int64_t n = rows * m;
  if (n == 0) return Status::Ok();
  if (float_acc) {
    RequantizeRowsKernel<float><<<BlocksFor(n, kThreads), kThreads, 0, stream>>>(static_cast<const float*>(acc), scale,
                                                                                bias, y, n, m, relu);
  } else {
    RequantizeRowsKernel<int32_t><<<BlocksFor(n, kThreads), kThreads, 0, stream>>>(static_cast<const int32_t*>(acc),
                                                                                  scale, bias, y, n, m, relu);
  }
  VIGIL_CHECK_LAUNCH("QConvNhwc requantization");
  return Status::Ok();
}

template <typename F>
__global__ void Int8ToFloatKernel(const int8_t* x, F* y, int64_t n, int64_t c, int64_t cp) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t r = i / cp, k = i - r * cp;
    y[i] = FromFloat<F>(k < c ? static_cast<float>(x[r * c + k]) : 0.0f);
  }
}

Status LaunchInt8ToFloat(const int8_t* x, void* y, bool half, int64_t rows, int64_t c, int64_t cp,
                         cudaStream_t stream) {
  const int64_t n = rows * cp;
  if (n == 0) return Status::Ok();
  if (half) {
    Int8ToFloatKernel<__half><<<BlocksFor(n, kThreads), kThreads, 0, stream>>>(x, static_cast<__half*>(y), n, c, cp);
  } else {
    Int8ToFloatKernel<float><<<BlocksFor(n, kThreads), kThreads, 0, stream>>>(x, static_cast<float*>(y), n, c, cp);
  }
  VIGIL_CHECK_LAUNCH("QConvNhwc int8 to float32");
  return Status::Ok();
}

}  // namespace vigil::cuda
