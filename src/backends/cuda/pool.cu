// CUDA kernels of the pooling ops, with the semantics of the CPU kernels
// (backends/cpu/pool.cpp): MaxPool (without its Indices output), AveragePool,
// LpPool over 1 to 3 spatial dims, and GlobalAveragePool, GlobalMaxPool,
// GlobalLpPool over any rank. The window geometry (auto_pad, pads, strides,
// dilations, ceil_mode) is resolved on the host by ops/conv_geometry, as the
// CPU and shape inference do; a window at output o of a dim reads input
// positions o * stride - pad_begin + k * dilation that lie in the image, and
// count_include_pad counts its taps inside [-pad_begin, size + pad_end).
// Windowed pools run one thread per output element; global pools one block
// per (n, c) plane. Sums accumulate in float.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <type_traits>
#include <vector>

#include "backends/cuda/cuda_kernel.h"
#include "backends/cuda/device_common.cuh"
#include "ops/conv_geometry.h"

namespace vigil::cuda {
namespace {

enum class PoolKind : int { kMax, kAverage, kLp };

constexpr int kMaxSpatial = 3;

// The window, padded at the front to 3 spatial dims (size 1, kernel 1).
struct PoolArgs {
  int64_t planes = 0;
  int64_t in[kMaxSpatial], out[kMaxSpatial], kernel[kMaxSpatial], stride[kMaxSpatial], dilation[kMaxSpatial],
      pad_begin[kMaxSpatial], pad_end[kMaxSpatial];
  int64_t in_size = 1, out_size = 1;  // elements per plane
  bool include_pad = false;
  float p = 2;  // LpPool
};

template <typename T>
__device__ __forceinline__ T LowestValue() {
  if constexpr (std::is_same_v<T, int8_t>) {
    return INT8_MIN;
  } else if constexpr (std::is_same_v<T, uint8_t>) {
    return 0;
  } else {
    return FromFloat<T>(-INFINITY);
  }
}

template <typename T>
__device__ __forceinline__ float Load(T v) {
  if constexpr (std::is_integral_v<T>) {
    return static_cast<float>(v);
  } else {
    return ToFloat<T>(v);
  }
}
template <typename T>
__device__ __forceinline__ T Store(float v) {
  if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(v);  // only exact values of T (MaxPool)
  } else {
    return FromFloat<T>(v);
  }
}

__device__ __forceinline__ float LpTerm(float v, float p) {
  const float a = fabsf(v);
  if (p == 1.0f) return a;
  if (p == 2.0f) return a * a;
  return powf(a, p);
}
__device__ __forceinline__ float LpFinish(float sum, float p) {
  if (p == 1.0f) return sum;
  if (p == 2.0f) return sqrtf(sum);
  return powf(sum, 1.0f / p);
}

template <typename T, PoolKind K>
__global__ void PoolKernel(const T* __restrict__ x, T* __restrict__ y, PoolArgs a) {
  const int64_t total = a.planes * a.out_size;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t idx = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; idx < total; idx += step) {
    const int64_t plane = idx / a.out_size;
    int64_t rest = idx - plane * a.out_size;
    int64_t start[kMaxSpatial];
    int64_t valid = 1, padded = 1;
    for (int d = kMaxSpatial - 1; d >= 0; --d) {
      const int64_t q = rest / a.out[d];
      const int64_t o = rest - q * a.out[d];
      rest = q;
      start[d] = o * a.stride[d] - a.pad_begin[d];
      int64_t v = 0, pc = 0;
      for (int64_t k = 0; k < a.kernel[d]; ++k) {
        const int64_t pos = start[d] + k * a.dilation[d];
        v += pos >= 0 && pos < a.in[d];
        pc += pos >= -a.pad_begin[d] && pos < a.in[d] + a.pad_end[d];
      }
      valid *= v;
      padded *= pc;
    }
    const T* xp = x + plane * a.in_size;
    float acc = K == PoolKind::kMax ? -INFINITY : 0.0f;
    bool found = false;
    for (int64_t k0 = 0; k0 < a.kernel[0]; ++k0) {
      const int64_t p0 = start[0] + k0 * a.dilation[0];
      if (p0 < 0 || p0 >= a.in[0]) continue;
      for (int64_t k1 = 0; k1 < a.kernel[1]; ++k1) {
        const int64_t p1 = start[1] + k1 * a.dilation[1];
        if (p1 < 0 || p1 >= a.in[1]) continue;
        const T* row = xp + (p0 * a.in[1] + p1) * a.in[2];
        for (int64_t k2 = 0; k2 < a.kernel[2]; ++k2) {
          const int64_t p2 = start[2] + k2 * a.dilation[2];
          if (p2 < 0 || p2 >= a.in[2]) continue;
          const float v = Load(row[p2]);
          if constexpr (K == PoolKind::kMax) {
            // NaN wins over numbers (and stays).
            if (!found || v > acc || (isnan(v) && !isnan(acc))) acc = v;
            found = true;
          } else if constexpr (K == PoolKind::kAverage) {
            acc += v;
          } else {
            acc += LpTerm(v, a.p);
          }
        }
      }
    }
    if constexpr (K == PoolKind::kMax) {
      // A window wholly in the padding (only with dilations): the lowest value.
      y[idx] = found ? Store<T>(acc) : LowestValue<T>();
    } else if constexpr (K == PoolKind::kAverage) {
      y[idx] = Store<T>(acc / static_cast<float>(a.include_pad ? padded : valid));  // 0 / 0 = NaN
    } else {
      y[idx] = Store<T>(LpFinish(acc, a.p));
    }
  }
}

// --- global pools -------------------------------------------------------------------

__device__ __forceinline__ float NanMax(float a, float b) { return isnan(a) || isnan(b) ? a + b : fmaxf(a, b); }

// The reduction of v over the block (blockDim a multiple of 32); every
// thread gets the result. `shared` holds 32 floats.
template <PoolKind K>
__device__ float BlockAll(float v, float* shared) {
  auto op = [](float a, float b) { return K == PoolKind::kMax ? NanMax(a, b) : a + b; };
  for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
  const int warps = blockDim.x / 32;
  if (warps == 1) return v;
  if (threadIdx.x % 32 == 0) shared[threadIdx.x / 32] = v;
  __syncthreads();
  float r = shared[0];
  for (int w = 1; w < warps; ++w) r = op(r, shared[w]);
  __syncthreads();
  return r;
}

template <typename T, PoolKind K>
__global__ void GlobalPoolKernel(const T* __restrict__ x, T* __restrict__ y, int64_t planes, int64_t size, float p) {
  __shared__ float shared[32];
  for (int64_t plane = blockIdx.x; plane < planes; plane += gridDim.x) {
    const T* xp = x + plane * size;
    float acc = K == PoolKind::kMax ? -INFINITY : 0.0f;
    for (int64_t i = threadIdx.x; i < size; i += blockDim.x) {
      const float v = ToFloat(xp[i]);
      if constexpr (K == PoolKind::kMax) {
        acc = NanMax(acc, v);
      } else if constexpr (K == PoolKind::kAverage) {
        acc += v;
      } else {
        acc += LpTerm(v, p);
      }
    }
    acc = BlockAll<K>(acc, shared);
    if (threadIdx.x == 0) {
      if constexpr (K == PoolKind::kAverage) {
        acc /= static_cast<float>(size);  // NaN for an empty plane
      } else if constexpr (K == PoolKind::kLp) {
        acc = LpFinish(acc, p);
      }
      y[plane] = FromFloat<T>(acc);
    }
  }
}

// --- host side ----------------------------------------------------------------------

template <typename F, typename G>
Status PoolDispatch(ir::DataType t, bool bytes, F&& f, G&& otherwise) {
  switch (t) {
    case ir::DataType::kFloat32: return f(float{});
    case ir::DataType::kFloat16: return f(__half{});
    case ir::DataType::kBfloat16: return f(__nv_bfloat16{});
    case ir::DataType::kInt8: return bytes ? f(int8_t{}) : otherwise();
    case ir::DataType::kUint8: return bytes ? f(uint8_t{}) : otherwise();
    default: return otherwise();
  }
}

// LpPool's p: a float attribute in opset 1, an int from opset 2.
Result<float> ReadP(const CudaKernelContext& ctx) {
  const ir::Attribute* attr = ctx.node().FindAttribute("p");
  double p = 2;
  if (attr && attr->type == ir::AttributeType::kFloat) {
    p = attr->f;
  } else {
    VIGIL_ASSIGN_OR_RETURN(int64_t pi, ops::IntAttr(ctx.node(), "p", 2));
    p = static_cast<double>(pi);
  }
  if (!(p > 0)) return ctx.Fail("p is {}, must be positive", p);
  return static_cast<float>(p);
}

template <PoolKind K>
Status WindowPool(CudaKernelContext& ctx) {
  const runtime::Tensor* xp = ctx.input(0);
  if (!xp) return ctx.Fail("input 0 (X) is missing");
  const runtime::Tensor& x = *xp;
  if (x.rank() < 3 || x.rank() > 2 + kMaxSpatial) {
    return ctx.Unsupported("input 0 (X) is {}; only 1 to 3 spatial dims are implemented", x.Describe());
  }
  if constexpr (K == PoolKind::kMax) {
    if (ctx.num_outputs() > 1 && ctx.output_wanted(1)) return ctx.Unsupported("the Indices output is not supported");
  }
  const size_t nd = x.rank() - 2;
  ops::WindowOptions options;
  options.pooling = true;
  VIGIL_ASSIGN_OR_RETURN(ops::WindowAttrs w, ops::ReadWindowAttrs(ctx.node(), nd, std::nullopt, options));
  PoolArgs a;
  for (int d = 0; d < kMaxSpatial; ++d) {
    a.in[d] = a.out[d] = a.kernel[d] = a.stride[d] = a.dilation[d] = 1;
    a.pad_begin[d] = a.pad_end[d] = 0;
  }
  std::vector<int64_t> out_shape{x.dim(0), x.dim(1)};
  for (size_t i = 0; i < nd; ++i) {
    const int d = kMaxSpatial - static_cast<int>(nd) + static_cast<int>(i);
    VIGIL_ASSIGN_OR_RETURN(ops::WindowExtent e, ops::ForwardExtent(ctx.node(), w, i, x.dim(2 + i)));
    a.in[d] = x.dim(2 + i);
    a.out[d] = e.output;
    a.kernel[d] = w.kernel[i];
    a.stride[d] = w.strides[i];
    a.dilation[d] = w.dilations[i];
    a.pad_begin[d] = e.pad_begin;
    a.pad_end[d] = e.pad_end;
    a.in_size *= a.in[d];
    a.out_size *= a.out[d];
    out_shape.push_back(e.output);
  }
  a.planes = x.dim(0) * x.dim(1);
  if constexpr (K == PoolKind::kAverage) {
    VIGIL_ASSIGN_OR_RETURN(int64_t include_pad, ops::IntAttr(ctx.node(), "count_include_pad", 0));
    a.include_pad = include_pad != 0;
  }
  if constexpr (K == PoolKind::kLp) {
    VIGIL_ASSIGN_OR_RETURN(a.p, ReadP(ctx));
  }
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * y, ctx.Output(0, x.dtype(), out_shape));
  const int64_t total = a.planes * a.out_size;
  if (total == 0) return Status::Ok();
  return PoolDispatch(
      x.dtype(), K == PoolKind::kMax,
      [&](auto tag) -> Status {
        using T = decltype(tag);
        PoolKernel<T, K><<<BlocksFor(total), 256, 0, ctx.stream()>>>(static_cast<const T*>(x.raw_data()),
                                                                    static_cast<T*>(y->raw_data()), a);
        VIGIL_CHECK_LAUNCH("PoolKernel");
        return Status::Ok();
      },
      [&] { return ctx.Unsupported("dtype {} of input 0", ir::DataTypeName(x.dtype())); });
}

int BlockSizeFor(int64_t n) {
  if (n <= 256) return 32;
  if (n <= 2048) return 128;
  if (n <= 16384) return 256;
  return 512;
}

template <PoolKind K>
Status GlobalPool(CudaKernelContext& ctx) {
  const runtime::Tensor* xp = ctx.input(0);
  if (!xp || xp->rank() < 2) return ctx.Fail("input 0 (X) must be present with rank >= 2 (N x C x D1 x ...)");
  const runtime::Tensor& x = *xp;
  float p = 2;
  if constexpr (K == PoolKind::kLp) {
    VIGIL_ASSIGN_OR_RETURN(p, ReadP(ctx));
  }
  std::vector<int64_t> shape(x.rank(), 1);
  shape[0] = x.dim(0);
  shape[1] = x.dim(1);
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * y, ctx.Output(0, x.dtype(), shape));
  const int64_t planes = x.dim(0) * x.dim(1);
  const int64_t size = planes == 0 ? 0 : static_cast<int64_t>(x.element_count()) / planes;
  if (planes == 0) return Status::Ok();
  return PoolDispatch(
      x.dtype(), false,
      [&](auto tag) -> Status {
        using T = decltype(tag);
        const unsigned blocks = static_cast<unsigned>(std::min<int64_t>(planes, 65535LL * 32));
        GlobalPoolKernel<T, K><<<blocks, BlockSizeFor(size), 0, ctx.stream()>>>(
            static_cast<const T*>(x.raw_data()), static_cast<T*>(y->raw_data()), planes, size, p);
        VIGIL_CHECK_LAUNCH("GlobalPoolKernel");
        return Status::Ok();
      },
      [&] { return ctx.Unsupported("dtype {} of input 0", ir::DataTypeName(x.dtype())); });
}

// --- support predicates ---------------------------------------------------------------

bool DtypeOk(const runtime::NodeTypes& types, bool bytes, std::string* why_not) {
  const ir::DataType t = InputDtype(types, 0);
  if (IsCudaFloat(t) || (bytes && (t == ir::DataType::kInt8 || t == ir::DataType::kUint8))) return true;
  if (why_not) {
    *why_not = t == ir::DataType::kUndefined ? std::string("the dtype of input 0 is not known at load time")
                                             : fmt::format("dtype {} of input 0", ir::DataTypeName(t));
  }
  return false;
}

template <PoolKind K>
bool SupportsWindowPool(const ir::Node& node, const runtime::NodeTypes& types, std::string* why_not) {
  if (!DtypeOk(types, K == PoolKind::kMax, why_not)) return false;
  if (K == PoolKind::kMax && node.outputs.size() > 1 && !node.outputs[1].empty()) {
    if (why_not) *why_not = "the Indices output is not supported";
    return false;
  }
  const ir::TypeInfo* t = types.inputs.empty() ? nullptr : types.inputs[0];
  if (!t || !t->shape.rank_known || t->shape.dims.size() < 3 || t->shape.dims.size() > 2 + kMaxSpatial) {
    if (why_not) {
      *why_not = t && t->shape.rank_known ? fmt::format("{} spatial dims (1 to 3 are implemented)",
                                                        static_cast<int>(t->shape.dims.size()) - 2)
                                          : std::string("the rank of input 0 is not known at load time");
    }
    return false;
  }
  return true;
}

bool SupportsGlobalPool(const ir::Node&, const runtime::NodeTypes& types, std::string* why_not) {
  return DtypeOk(types, false, why_not);
}

const CudaKernelDef kPoolKernels[] = {
    {"", "MaxPool", 1, kLatest, WindowPool<PoolKind::kMax>, SupportsWindowPool<PoolKind::kMax>},
    {"", "AveragePool", 1, kLatest, WindowPool<PoolKind::kAverage>, SupportsWindowPool<PoolKind::kAverage>},
    {"", "LpPool", 1, kLatest, WindowPool<PoolKind::kLp>, SupportsWindowPool<PoolKind::kLp>},
    {"", "GlobalAveragePool", 1, kLatest, GlobalPool<PoolKind::kAverage>, SupportsGlobalPool},
    {"", "GlobalMaxPool", 1, kLatest, GlobalPool<PoolKind::kMax>, SupportsGlobalPool},
    {"", "GlobalLpPool", 1, kLatest, GlobalPool<PoolKind::kLp>, SupportsGlobalPool},
};

}  // namespace

std::span<const CudaKernelDef> PoolCudaKernels() { return kPoolKernels; }

}  // namespace vigil::cuda
