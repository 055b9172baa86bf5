// CUDA kernels of Softmax and LogSoftmax, with the semantics of the CPU
// kernels (backends/cpu/softmax.cpp): [outer, n, inner] around the axis
// (opset < 13: 2-D coercion, inner = 1); when inner == 1 one warp per line of
// up to 1024 elements (held in registers) or one block per longer line, else
// one thread per line; max-subtracted, NaN-propagating.
#include "backends/cuda/normalization_common.cuh"
#include "backends/cuda/softmax.h"

namespace vigil::cuda {
namespace {

// --- Softmax / LogSoftmax ------------------------------------------------------------

struct Lines {
  int64_t outer = 1, n = 1, inner = 1;
};

template <bool kLog>
__device__ __forceinline__ float SoftmaxValue(float v, float max, float sum) {
  if constexpr (kLog) {
    return v - max - logf(sum);
  } else {
    return expf(v - max) / sum;
  }
}

// One block per line of n contiguous elements (inner == 1).
template <typename T, bool kLog>
__global__ void SoftmaxRowKernel(const T* __restrict__ x, T* __restrict__ y, Lines l) {
  __shared__ float shared[32];
  for (int64_t row = blockIdx.x; row < l.outer; row += gridDim.x) {
    const T* xr = x + row * l.n;
    T* yr = y + row * l.n;
    float m = -INFINITY;
    for (int64_t k = threadIdx.x; k < l.n; k += blockDim.x) m = NanMax(m, ToFloat(xr[k]));
    m = BlockAll(m, MaxOp{}, shared);
    float s = 0.0f;
    for (int64_t k = threadIdx.x; k < l.n; k += blockDim.x) s += expf(ToFloat(xr[k]) - m);
    s = BlockAll(s, SumOp{}, shared);
    for (int64_t k = threadIdx.x; k < l.n; k += blockDim.x) yr[k] = FromFloat<T>(SoftmaxValue<kLog>(ToFloat(xr[k]), m, s));
  }
}

// Rows of at most 32 * kPerLane contiguous elements (inner == 1): one warp
// per row, several rows per block, the row read once into registers. Rows
// this short (attention scores: 197 in ViT-B/16) would leave a block per row
// mostly idle.
template <typename T, bool kLog, int kPerLane>
__global__ void SoftmaxWarpKernel(const T* __restrict__ x, T* __restrict__ y, Lines l) {
  const int lane = threadIdx.x % 32;
  const int64_t warps_per_block = blockDim.x / 32;
  const int64_t step = static_cast<int64_t>(gridDim.x) * warps_per_block;
  for (int64_t row = blockIdx.x * warps_per_block + threadIdx.x / 32; row < l.outer; row += step) {
    const T* xr = x + row * l.n;
    T* yr = y + row * l.n;
    float v[kPerLane];
    float m = -INFINITY;
#pragma unroll
    for (int j = 0; j < kPerLane; ++j) {
      const int64_t k = lane + j * 32;
      v[j] = k < l.n ? ToFloat(xr[k]) : -INFINITY;
      m = NanMax(m, v[j]);
    }
    for (int o = 16; o > 0; o >>= 1) m = NanMax(m, __shfl_xor_sync(0xffffffffu, m, o));
    float s = 0.0f;
#pragma unroll
    for (int j = 0; j < kPerLane; ++j) {
      if (lane + j * 32 < l.n) s += expf(v[j] - m);
    }
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
#pragma unroll
    for (int j = 0; j < kPerLane; ++j) {
      const int64_t k = lane + j * 32;
      if (k < l.n) yr[k] = FromFloat<T>(SoftmaxValue<kLog>(v[j], m, s));
    }
  }
}


template <typename T, bool kLog, int kPerLane>
void LaunchSoftmaxWarp(const T* x, T* y, const Lines& l, cudaStream_t stream) {
  const int64_t blocks = (l.outer + kWarpRowsPerBlock - 1) / kWarpRowsPerBlock;
  SoftmaxWarpKernel<T, kLog, kPerLane><<<GridFor(blocks), 32 * kWarpRowsPerBlock, 0, stream>>>(x, y, l);
}

// One thread per line of n elements `inner` apart.
template <typename T, bool kLog>
__global__ void SoftmaxColumnKernel(const T* __restrict__ x, T* __restrict__ y, Lines l) {
  const int64_t total = l.outer * l.inner;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t t = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; t < total; t += step) {
    const int64_t o = t / l.inner, i = t - o * l.inner;
    const int64_t base = o * l.n * l.inner + i;
    float m = -INFINITY;
    for (int64_t k = 0; k < l.n; ++k) m = NanMax(m, ToFloat(x[base + k * l.inner]));
    float s = 0.0f;
    for (int64_t k = 0; k < l.n; ++k) s += expf(ToFloat(x[base + k * l.inner]) - m);
    for (int64_t k = 0; k < l.n; ++k) {
      y[base + k * l.inner] = FromFloat<T>(SoftmaxValue<kLog>(ToFloat(x[base + k * l.inner]), m, s));
    }
  }
}

template <bool kLog>
Status SoftmaxKernel(CudaKernelContext& ctx) {
  const runtime::Tensor* x = ctx.input(0);
  if (!x) return ctx.Fail("input 0 is missing");
  const bool single_axis = ctx.opset() >= 13;
  VIGIL_ASSIGN_OR_RETURN(int64_t attr, ops::IntAttr(ctx.node(), "axis", single_axis ? -1 : 1));
  VIGIL_ASSIGN_OR_RETURN(int64_t axis, ops::NormalizeAxis(ctx.node(), attr, static_cast<int64_t>(x->rank())));
  Lines l;
  for (int64_t d = 0; d < static_cast<int64_t>(x->rank()); ++d) {
    if (d < axis) {
      l.outer *= x->dim(d);
    } else if (d == axis || !single_axis) {
      l.n *= x->dim(d);
    } else {
      l.inner *= x->dim(d);
    }
  }
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * y, ctx.Output(0, x->dtype(), x->shape()));
  if (x->element_count() == 0) return Status::Ok();
  return FloatDispatch(
      x->dtype(),
      [&](auto tag) -> Status {
        using T = decltype(tag);
        const T* xs = static_cast<const T*>(x->raw_data());
        T* ys = static_cast<T*>(y->raw_data());
        if (l.inner == 1 && l.n <= kMaxWarpRow) {
          if (l.n <= 128) {
            LaunchSoftmaxWarp<T, kLog, 4>(xs, ys, l, ctx.stream());
          } else if (l.n <= 256) {
            LaunchSoftmaxWarp<T, kLog, 8>(xs, ys, l, ctx.stream());
          } else if (l.n <= 512) {
            LaunchSoftmaxWarp<T, kLog, 16>(xs, ys, l, ctx.stream());
          } else {
            LaunchSoftmaxWarp<T, kLog, 32>(xs, ys, l, ctx.stream());
          }
          VIGIL_CHECK_LAUNCH("SoftmaxWarpKernel");
        } else if (l.inner == 1) {
          SoftmaxRowKernel<T, kLog><<<GridFor(l.outer), BlockSizeFor(l.n), 0, ctx.stream()>>>(xs, ys, l);
          VIGIL_CHECK_LAUNCH("SoftmaxRowKernel");
        } else {
          SoftmaxColumnKernel<T, kLog><<<BlocksFor(l.outer * l.inner), 256, 0, ctx.stream()>>>(xs, ys, l);
          VIGIL_CHECK_LAUNCH("SoftmaxColumnKernel");
        }
        return Status::Ok();
      },
      [&] { return BadDtype(ctx, 0); });
}

bool SupportsSoftmax(const ir::Node& node, const runtime::NodeTypes& types, std::string* why_not) {
  return FloatInputs(node, types, why_not, 0);
}

const CudaKernelDef kSoftmaxKernels[] = {
    {"", "Softmax", 1, 12, SoftmaxKernel<false>, SupportsSoftmax},
    {"", "Softmax", 13, kLatest, SoftmaxKernel<false>, SupportsSoftmax},
    {"", "LogSoftmax", 1, 12, SoftmaxKernel<true>, SupportsSoftmax},
    {"", "LogSoftmax", 13, kLatest, SoftmaxKernel<true>, SupportsSoftmax},
};

}  // namespace

std::span<const CudaKernelDef> SoftmaxCudaKernels() { return kSoftmaxKernels; }

}  // namespace vigil::cuda
