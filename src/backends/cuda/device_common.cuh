// Device-side helpers shared by our CUDA kernels (.cu files only): dtype
// conversion, dtype dispatch, broadcast index maps and launch sizes.
#pragma once

#include <cstdint>
#include <vector>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "ir/dtype.h"
#include "runtime/tensor.h"

namespace vigil::cuda {

// Arithmetic happens in float for every float dtype.
template <typename T>
__device__ __forceinline__ float ToFloat(T v) { return static_cast<float>(v); }
template <>
__device__ __forceinline__ float ToFloat<__half>(__half v) { return __half2float(v); }
template <>
__device__ __forceinline__ float ToFloat<__nv_bfloat16>(__nv_bfloat16 v) { return __bfloat162float(v); }

template <typename T>
__device__ __forceinline__ T FromFloat(float v) { return static_cast<T>(v); }
template <>
__device__ __forceinline__ __half FromFloat<__half>(float v) { return __float2half_rn(v); }
template <>
__device__ __forceinline__ __nv_bfloat16 FromFloat<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }

// Calls f(T{}) with T the element type of a float dtype; returns false for
// other dtypes.
template <typename F>
bool DispatchFloat(ir::DataType t, F&& f) {
  switch (t) {
    case ir::DataType::kFloat32: f(float{}); return true;
    case ir::DataType::kFloat16: f(__half{}); return true;
    case ir::DataType::kBfloat16: f(__nv_bfloat16{}); return true;
    default: return false;
  }
}

// An unsigned integer type of the same size as the element: data movement
// copies elements as these.
template <typename F>
bool DispatchBySize(size_t element_bytes, F&& f) {
  switch (element_bytes) {
    case 1: f(uint8_t{}); return true;
    case 2: f(uint16_t{}); return true;
    case 4: f(uint32_t{}); return true;
    case 8: f(uint64_t{}); return true;
    default: return false;
  }
}

inline constexpr int kMaxRank = 8;

// Up to 8 dims and per-dim strides, passed to kernels by value. With strides
// of 0 on broadcast dims, Offset() maps an output linear index to an input
// element.
struct IndexMap {
  int rank = 0;
  int64_t dims[kMaxRank] = {};     // output dims
  int64_t strides[kMaxRank] = {};  // input strides in elements (0 = broadcast)

  __device__ __forceinline__ int64_t Offset(int64_t linear) const {
    int64_t off = 0;
    for (int d = rank - 1; d >= 0; --d) {
      int64_t q = linear / dims[d];
      off += (linear - q * dims[d]) * strides[d];
      linear = q;
    }
    return off;
  }
};

// The map from an output of shape `out` to an input of shape `in` broadcast
// to it (numpy rules; `in` right-aligned). False when rank > kMaxRank.
inline bool BroadcastMap(const std::vector<int64_t>& in, const std::vector<int64_t>& out, IndexMap* map) {
  if (out.size() > static_cast<size_t>(kMaxRank) || in.size() > out.size()) return false;
  map->rank = static_cast<int>(out.size());
  int64_t stride = 1;
  for (int d = map->rank - 1; d >= 0; --d) {
    map->dims[d] = out[d];
    int k = d - (map->rank - static_cast<int>(in.size()));
    int64_t in_dim = k >= 0 ? in[k] : 1;
    map->strides[d] = in_dim == 1 ? 0 : stride;
    stride *= in_dim;
  }
  return true;
}

inline unsigned BlocksFor(int64_t n, int threads = 256) {
  int64_t b = (n + threads - 1) / threads;
  if (b < 1) b = 1;
  if (b > 65535LL * 64) b = 65535LL * 64;  // grid-stride loops cover the rest
  return static_cast<unsigned>(b);
}

}  // namespace vigil::cuda
