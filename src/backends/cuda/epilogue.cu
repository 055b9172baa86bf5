#include "backends/cuda/epilogue.h"
#include "backends/cuda/cuda_check.h"
#include "backends/cuda/device_common.cuh"

namespace vigil::cuda {
namespace {

template <typename T>
__global__ void ChannelBiasAdd(T* y, const T* bias, int64_t total, int64_t channels, int64_t spatial) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    int64_t c = (i / spatial) % channels;
    y[i] = FromFloat<T>(ToFloat(y[i]) + ToFloat(bias[c]));
  }
}

template <typename T>
__global__ void BroadcastCopy(T* dst, const T* src, int64_t total, IndexMap map) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    dst[i] = src[map.Offset(i)];
  }
}

}  // namespace

Status LaunchBroadcastCopy(void* dst, const void* src, ir::DataType dtype, const std::vector<int64_t>& src_shape,
                           const std::vector<int64_t>& dst_shape, cudaStream_t stream) {
  IndexMap map;
  if (!BroadcastMap(src_shape, dst_shape, &map)) return UnsupportedError("broadcast copy of rank > {}", kMaxRank);
  int64_t total = 1;
  for (int64_t d : dst_shape) total *= d;
  if (total == 0) return Status::Ok();
  bool ok = DispatchBySize(static_cast<size_t>(ir::DataTypeBits(dtype) / 8), [&](auto t) {
    using T = decltype(t);
    BroadcastCopy<T><<<BlocksFor(total), 256, 0, stream>>>(static_cast<T*>(dst), static_cast<const T*>(src), total, map);
  });
  if (!ok) return InternalError("broadcast copy: dtype {} has no fixed size", ir::DataTypeName(dtype));
  VIGIL_CHECK_LAUNCH("BroadcastCopy");
  return Status::Ok();
}

Status LaunchChannelBiasAdd(void* y, const void* bias, ir::DataType dtype, int64_t batch, int64_t channels,
                            int64_t spatial, cudaStream_t stream) {
  int64_t total = batch * channels * spatial;
  if (total == 0) return Status::Ok();
  bool ok = DispatchFloat(dtype, [&](auto t) {
    using T = decltype(t);
    ChannelBiasAdd<T><<<BlocksFor(total), 256, 0, stream>>>(static_cast<T*>(y), static_cast<const T*>(bias), total,
                                                             channels, spatial);
  });
  if (!ok) return InternalError("channel bias: dtype {} is not a float dtype", ir::DataTypeName(dtype));
  VIGIL_CHECK_LAUNCH("ChannelBiasAdd");
  return Status::Ok();
}

}  // namespace vigil::cuda
