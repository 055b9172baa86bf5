// Channels-last pools on the GPU; pool_nhwc.h describes the kernels. The
// window geometry (auto_pad, pads, ceil_mode) is resolved on the host by
// ops/conv_geometry, as the CPU kernels and shape inference do.
#include "backends/cuda/pool_nhwc.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "backends/cuda/device_common.cuh"
#include "ir/layout_nhwc.h"
#include "ops/attributes.h"
#include "ops/conv_geometry.h"

namespace vigil::cuda {
namespace {

enum class NhwcPool : int { kMax, kAverage };

// V consecutive elements, loaded and stored as one access.
template <typename T, int V>
struct alignas(sizeof(T) * V) Pack {
  T v[V];
};

// X [n, h, w, c] -> Y [n, oh, ow, c]; pads are top, left, bottom, right.
struct WindowArgs {
  int64_t n = 0, h = 0, w = 0, c = 0, oh = 0, ow = 0;
  int64_t kh = 1, kw = 1, sh = 1, sw = 1, dh = 1, dw = 1;
  int64_t pt = 0, pl = 0, pb = 0, pr = 0;
  bool include_pad = false;
};

// Taps k in [0, kernel) of one dim whose position start + k * dil lies in
// [lo, hi).
__device__ __forceinline__ int64_t TapsIn(int64_t start, int64_t kernel, int64_t dil, int64_t lo, int64_t hi) {
  int64_t n = 0;
  for (int64_t k = 0; k < kernel; ++k) {
    const int64_t p = start + k * dil;
    n += p >= lo && p < hi;
  }
  return n;
}

// One thread per (output pixel, V channels); I is the index type (int32
// where every offset fits, which keeps the divisions cheap).
template <typename T, int V, NhwcPool K, typename I>
__global__ void WindowPoolNhwcKernel(const T* __restrict__ x, T* __restrict__ y, WindowArgs a) {
  using P = Pack<T, V>;
  const I groups = static_cast<I>(a.c / V);
  const I ow = static_cast<I>(a.ow), oh = static_cast<I>(a.oh), h = static_cast<I>(a.h), w = static_cast<I>(a.w);
  const I c = static_cast<I>(a.c);
  const I total = static_cast<I>(a.n) * oh * ow * groups;
  const I step = static_cast<I>(gridDim.x) * static_cast<I>(blockDim.x);
  for (I idx = static_cast<I>(blockIdx.x) * static_cast<I>(blockDim.x) + threadIdx.x; idx < total; idx += step) {
    I rest = idx / groups;
    const I g = idx - rest * groups;
    const I ox = rest % ow;
    rest /= ow;
    const I oy = rest % oh;
    const I n = rest / oh;
    const I y0 = oy * static_cast<I>(a.sh) - static_cast<I>(a.pt);
    const I x0 = ox * static_cast<I>(a.sw) - static_cast<I>(a.pl);
    float acc[V];
#pragma unroll
    for (int j = 0; j < V; ++j) acc[j] = K == NhwcPool::kMax ? -INFINITY : 0.0f;
    bool found = false;
    int valid = 0;
    for (I ky = 0; ky < static_cast<I>(a.kh); ++ky) {
      const I iy = y0 + ky * static_cast<I>(a.dh);
      if (iy < 0 || iy >= h) continue;
      const T* row = x + ((n * h + iy) * w) * c + g * V;
      for (I kx = 0; kx < static_cast<I>(a.kw); ++kx) {
        const I ix = x0 + kx * static_cast<I>(a.dw);
        if (ix < 0 || ix >= w) continue;
        const P p = *reinterpret_cast<const P*>(row + ix * c);
#pragma unroll
        for (int j = 0; j < V; ++j) {
          const float v = ToFloat<T>(p.v[j]);
          if constexpr (K == NhwcPool::kMax) {
            // NaN wins over numbers (and stays), as on the CPU.
            if (!found || v > acc[j] || (isnan(v) && !isnan(acc[j]))) acc[j] = v;
          } else {
            acc[j] += v;
          }
        }
        found = true;
        ++valid;
      }
    }
    float divisor = static_cast<float>(valid);
    if constexpr (K == NhwcPool::kAverage) {
      if (a.include_pad) {
        divisor = static_cast<float>(TapsIn(y0, a.kh, a.dh, -a.pt, a.h + a.pb) *
                                     TapsIn(x0, a.kw, a.dw, -a.pl, a.w + a.pr));
      }
    }
    P out;
#pragma unroll
    for (int j = 0; j < V; ++j) {
      // A window wholly in the padding (only with dilations): -inf for a
      // max, 0 / 0 = NaN for an average.
      out.v[j] = FromFloat<T>(K == NhwcPool::kMax ? acc[j] : acc[j] / divisor);
    }
    *reinterpret_cast<P*>(y + idx * V) = out;
  }
}

// Block (32, rows): thread (tx, ty) sums channel vector blockIdx.x * 32 + tx
// over pixels ty, ty + rows, ... of image blockIdx.y (+ gridDim.y ...); the
// rows are then added in shared memory (rows * 32 * V floats).
template <typename T, int V>
__global__ void GlobalAveragePoolNhwcKernel(const T* __restrict__ x, T* __restrict__ y, int64_t n, int64_t hw,
                                            int64_t c) {
  using P = Pack<T, V>;
  extern __shared__ float partial[];
  const int64_t groups = c / V;
  const int64_t g = static_cast<int64_t>(blockIdx.x) * 32 + threadIdx.x;
  const int rows = blockDim.y;
  for (int64_t img = blockIdx.y; img < n; img += gridDim.y) {
    float acc[V];
#pragma unroll
    for (int j = 0; j < V; ++j) acc[j] = 0.0f;
    if (g < groups) {
      const T* base = x + img * hw * c + g * V;
      for (int64_t p = threadIdx.y; p < hw; p += rows) {
        const P v = *reinterpret_cast<const P*>(base + p * c);
#pragma unroll
        for (int j = 0; j < V; ++j) acc[j] += ToFloat<T>(v.v[j]);
      }
    }
    float* mine = partial + (threadIdx.y * 32 + threadIdx.x) * V;
#pragma unroll
    for (int j = 0; j < V; ++j) mine[j] = acc[j];
    __syncthreads();
    if (threadIdx.y == 0 && g < groups) {
      P out;
#pragma unroll
      for (int j = 0; j < V; ++j) {
        float s = 0.0f;
        for (int r = 0; r < rows; ++r) s += partial[(r * 32 + threadIdx.x) * V + j];
        out.v[j] = FromFloat<T>(s / static_cast<float>(hw));  // NaN for an empty image
      }
      *reinterpret_cast<P*>(y + img * c + g * V) = out;
    }
    __syncthreads();
  }
}

// --- host side ----------------------------------------------------------------------

bool Aligned(const void* p, size_t bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }

// The widest vector of T that C and both pointers allow: 16 bytes, 8 bytes,
// or one element.
template <typename T>
int VectorWidth(int64_t c, const void* x, const void* y) {
  for (int bytes : {16, 8}) {
    const int v = bytes / static_cast<int>(sizeof(T));
    if (v > 1 && c % v == 0 && Aligned(x, bytes) && Aligned(y, bytes)) return v;
  }
  return 1;
}

// Calls f(std::integral_constant<int, V>) for V = `v` (one of T's widths).
template <typename T, typename F>
void WithWidth(int v, F&& f) {
  constexpr int kWide = 16 / sizeof(T), kNarrow = 8 / sizeof(T);
  if (v == kWide) {
    f(std::integral_constant<int, kWide>{});
  } else if (v == kNarrow) {
    f(std::integral_constant<int, kNarrow>{});
  } else {
    f(std::integral_constant<int, 1>{});
  }
}

// With `int8` also int8_t (MaxPoolNhwc: the max of int8 values through
// float is exact; the int8 QDQ path pools its quantized tensors).
template <typename F>
Status WithFloatType(const CudaKernelContext& ctx, ir::DataType t, F&& f, bool int8 = false) {
  switch (t) {
    case ir::DataType::kInt8:
      if (int8) return f(int8_t{});
      return ctx.Unsupported("dtype int8 of input 0");
    case ir::DataType::kFloat32: return f(float{});
    case ir::DataType::kFloat16: return f(__half{});
    case ir::DataType::kBfloat16: return f(__nv_bfloat16{});
    default: return ctx.Unsupported("dtype {} of input 0", ir::DataTypeName(t));
  }
}

Result<const runtime::Tensor*> NhwcInput(const CudaKernelContext& ctx) {
  const runtime::Tensor* x = ctx.input(0);
  if (!x) return ctx.Fail("input 0 (X) is missing");
  if (x->rank() != 4) return ctx.Fail("input 0 (X) is {}, {} needs N x H x W x C", x->Describe(), ctx.node().op_type);
  return x;
}

// The window of the node over X [N, H, W, C] (its dims 1 and 2).
Result<WindowArgs> ResolveWindow(const CudaKernelContext& ctx, const runtime::Tensor& x) {
  ops::WindowOptions options;
  options.pooling = true;
  VIGIL_ASSIGN_OR_RETURN(ops::WindowAttrs w, ops::ReadWindowAttrs(ctx.node(), 2, std::nullopt, options));
  VIGIL_ASSIGN_OR_RETURN(ops::WindowExtent ey, ops::ForwardExtent(ctx.node(), w, 0, x.dim(1)));
  VIGIL_ASSIGN_OR_RETURN(ops::WindowExtent ex, ops::ForwardExtent(ctx.node(), w, 1, x.dim(2)));
  WindowArgs a;
  a.n = x.dim(0);
  a.h = x.dim(1);
  a.w = x.dim(2);
  a.c = x.dim(3);
  a.oh = ey.output;
  a.ow = ex.output;
  a.kh = w.kernel[0];
  a.kw = w.kernel[1];
  a.sh = w.strides[0];
  a.sw = w.strides[1];
  a.dh = w.dilations[0];
  a.dw = w.dilations[1];
  a.pt = ey.pad_begin;
  a.pb = ey.pad_end;
  a.pl = ex.pad_begin;
  a.pr = ex.pad_end;
  return a;
}

template <NhwcPool K>
Status WindowPoolNhwc(CudaKernelContext& ctx) {
  VIGIL_ASSIGN_OR_RETURN(const runtime::Tensor* xp, NhwcInput(ctx));
  const runtime::Tensor& x = *xp;
  VIGIL_ASSIGN_OR_RETURN(WindowArgs a, ResolveWindow(ctx, x));
  if constexpr (K == NhwcPool::kAverage) {
    VIGIL_ASSIGN_OR_RETURN(int64_t include_pad, ops::IntAttr(ctx.node(), "count_include_pad", 0));
    a.include_pad = include_pad != 0;
  }
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * y, ctx.Output(0, x.dtype(), {a.n, a.oh, a.ow, a.c}));
  const int64_t out_elements = a.n * a.oh * a.ow * a.c;
  if (out_elements == 0) return Status::Ok();
  // int32 index math where every offset fits with room to spare (the
  // grid-stride step added to an index must not overflow either).
  const bool narrow = std::max<int64_t>(static_cast<int64_t>(x.element_count()), out_elements) < (int64_t{1} << 30);
  return WithFloatType(ctx, x.dtype(), [&](auto tag) -> Status {
    using T = decltype(tag);
    const T* xd = static_cast<const T*>(x.raw_data());
    T* yd = static_cast<T*>(y->raw_data());
    WithWidth<T>(VectorWidth<T>(a.c, xd, yd), [&](auto width) {
      constexpr int V = decltype(width)::value;
      const unsigned blocks = BlocksFor(out_elements / V);
      if (narrow) {
        WindowPoolNhwcKernel<T, V, K, int32_t><<<blocks, 256, 0, ctx.stream()>>>(xd, yd, a);
      } else {
        WindowPoolNhwcKernel<T, V, K, int64_t><<<blocks, 256, 0, ctx.stream()>>>(xd, yd, a);
      }
    });
    VIGIL_CHECK_LAUNCH("WindowPoolNhwcKernel");
    return Status::Ok();
  }, K == NhwcPool::kMax);
}

Status GlobalAveragePoolNhwc(CudaKernelContext& ctx) {
  VIGIL_ASSIGN_OR_RETURN(const runtime::Tensor* xp, NhwcInput(ctx));
  const runtime::Tensor& x = *xp;
  const int64_t n = x.dim(0), hw = x.dim(1) * x.dim(2), c = x.dim(3);
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * y, ctx.Output(0, x.dtype(), {n, 1, 1, c}));
  if (n == 0 || c == 0) return Status::Ok();
  return WithFloatType(ctx, x.dtype(), [&](auto tag) -> Status {
    using T = decltype(tag);
    const T* xd = static_cast<const T*>(x.raw_data());
    T* yd = static_cast<T*>(y->raw_data());
    WithWidth<T>(VectorWidth<T>(c, xd, yd), [&](auto width) {
      constexpr int V = decltype(width)::value;
      const int64_t chunks = (c / V + 31) / 32;
      // More rows of threads per block when there are few blocks to spread.
      const int rows = chunks * n >= 264 ? 8 : 32;
      const dim3 grid(static_cast<unsigned>(chunks), static_cast<unsigned>(std::min<int64_t>(n, 65535)));
      const size_t shared = static_cast<size_t>(rows) * 32 * V * sizeof(float);
      GlobalAveragePoolNhwcKernel<T, V><<<grid, dim3(32, rows), shared, ctx.stream()>>>(xd, yd, n, hw, c);
    });
    VIGIL_CHECK_LAUNCH("GlobalAveragePoolNhwcKernel");
    return Status::Ok();
  });
}

// --- support predicate ----------------------------------------------------------------

bool SupportsPoolNhwcOf(const runtime::NodeTypes& types, std::string* why_not, bool int8) {
  const ir::DataType t = InputDtype(types, 0);
  if (!IsCudaFloat(t) && !(int8 && t == ir::DataType::kInt8)) {
    if (why_not) {
      *why_not = t == ir::DataType::kUndefined ? std::string("the dtype of input 0 is not known at load time")
                                               : fmt::format("dtype {} of input 0", ir::DataTypeName(t));
    }
    return false;
  }
  const ir::TypeInfo* x = types.inputs.empty() ? nullptr : types.inputs[0];
  if (!x || !x->shape.rank_known || x->shape.dims.size() != 4) {
    if (why_not) *why_not = "input 0 is not known to be N x H x W x C";
    return false;
  }
  return true;
}

bool SupportsPoolNhwc(const ir::Node&, const runtime::NodeTypes& types, std::string* why_not) {
  return SupportsPoolNhwcOf(types, why_not, false);
}

bool SupportsMaxPoolNhwc(const ir::Node&, const runtime::NodeTypes& types, std::string* why_not) {
  return SupportsPoolNhwcOf(types, why_not, true);
}

const CudaKernelDef kPoolNhwcKernels[] = {
    {ir::kVigilDomain, ir::kMaxPoolNhwcOp, 1, kLatest, WindowPoolNhwc<NhwcPool::kMax>, SupportsMaxPoolNhwc},
    {ir::kVigilDomain, ir::kAveragePoolNhwcOp, 1, kLatest, WindowPoolNhwc<NhwcPool::kAverage>, SupportsPoolNhwc},
    {ir::kVigilDomain, ir::kGlobalAveragePoolNhwcOp, 1, kLatest, GlobalAveragePoolNhwc, SupportsPoolNhwc},
};

}  // namespace

std::span<const CudaKernelDef> PoolNhwcCudaKernels() { return kPoolNhwcKernels; }

}  // namespace vigil::cuda
