// The operand split of split_tf32.h: one thread per source element (four
// along a vector when its length allows), each written to its three
// segments.
#include <bit>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/device_common.cuh"
#include "backends/cuda/split_tf32.h"

namespace vigil::cuda {
namespace {

constexpr uint32_t kExponent = 0x7f800000u;
constexpr uint32_t kTf32Bits = 0xffffe000u;  // sign, exponent and TF32's 10 mantissa bits

// x rounded to TF32 (to nearest, ties away from zero); where that would
// overflow, truncated instead, so a finite value stays finite.
__host__ __device__ inline float RoundToTf32(float x) {
  const uint32_t u = std::bit_cast<uint32_t>(x);
  uint32_t r = (u + 0x1000u) & kTf32Bits;
  if ((r & kExponent) == kExponent) r = u & kTf32Bits;
  return std::bit_cast<float>(r);
}

__host__ __device__ inline void Split(float x, float& hi, float& lo) {
  if ((std::bit_cast<uint32_t>(x) & kExponent) == kExponent) {  // inf, NaN: carried by hi alone
    hi = x;
    lo = 0.0f;
    return;
  }
  hi = RoundToTf32(x);
  lo = RoundToTf32(x - hi);  // exact difference (Sterbenz), then rounded
}

// Source element (matrix b, vector o, position i) of `total` = batches *
// outer * inner, V at a time along the vector (inner % V == 0).
template <int V>
__global__ void SplitTf32Kernel(const float* __restrict__ src, float* __restrict__ dst, uint32_t total,
                                uint32_t outer, uint32_t inner, bool k_inner, int lo_segment) {
  const uint32_t per_matrix = outer * inner;
  for (uint32_t e = (blockIdx.x * blockDim.x + threadIdx.x) * V; e < total; e += gridDim.x * blockDim.x * V) {
    const uint32_t b = e / per_matrix, r = e - b * per_matrix;
    const uint32_t o = r / inner, i = r - o * inner;
    float x[V], hi[V], lo[V];
    if constexpr (V == 4) {
      const float4 v = *reinterpret_cast<const float4*>(src + e);
      x[0] = v.x, x[1] = v.y, x[2] = v.z, x[3] = v.w;
    } else {
      x[0] = src[e];
    }
#pragma unroll
    for (int j = 0; j < V; ++j) Split(x[j], hi[j], lo[j]);
    // Segment s of this element: k_inner, within its tripled vector;
    // otherwise, among the tripled vectors.
    const size_t base = size_t{b} * 3 * per_matrix;
#pragma unroll
    for (int s = 0; s < 3; ++s) {
      const float* part = s == lo_segment ? lo : hi;
      const size_t at = base + (k_inner ? size_t{o} * 3 * inner + static_cast<size_t>(s) * inner + i
                                        : static_cast<size_t>(s) * per_matrix + size_t{o} * inner + i);
      if constexpr (V == 4) {
        *reinterpret_cast<float4*>(dst + at) = make_float4(part[0], part[1], part[2], part[3]);
      } else {
        dst[at] = part[0];
      }
    }
  }
}

}  // namespace

void SplitTf32Host(float x, float* hi, float* lo) { Split(x, *hi, *lo); }

Status LaunchSplitTf32(const float* src, float* dst, int64_t batches, int64_t outer, int64_t inner, bool k_inner,
                       int lo_segment, cudaStream_t stream) {
  const int64_t total = batches * outer * inner;
  if (total == 0) return Status::Ok();
  // The grid-stride index stays below total + the grid's size.
  if (total >= (int64_t{1} << 30) || lo_segment < 0 || lo_segment > 2) {
    return InternalError("split of {} x {} x {} float32 values (lo segment {}) is out of the kernel's range", batches,
                         outer, inner, lo_segment);
  }
  const auto n = static_cast<uint32_t>(total);
  const bool vec = inner % 4 == 0 && reinterpret_cast<uintptr_t>(src) % 16 == 0 &&
                   reinterpret_cast<uintptr_t>(dst) % 16 == 0;
  if (vec) {
    SplitTf32Kernel<4><<<BlocksFor(total / 4), 256, 0, stream>>>(src, dst, n, static_cast<uint32_t>(outer),
                                                                 static_cast<uint32_t>(inner), k_inner, lo_segment);
  } else {
    SplitTf32Kernel<1><<<BlocksFor(total), 256, 0, stream>>>(src, dst, n, static_cast<uint32_t>(outer),
                                                             static_cast<uint32_t>(inner), k_inner, lo_segment);
  }
  VIGIL_CHECK_LAUNCH("SplitTf32");
  return Status::Ok();
}

}  // namespace vigil::cuda
