#include "backends/cuda/epilogue.h"
#include "backends/cuda/cuda_check.h"
#include "backends/cuda/device_common.cuh"
#include "backends/cuda/fast_divmod.cuh"

namespace vigil::cuda {
namespace {

// Channels-first epilogue: y [N, C, spatial] = act(y + bias[c] + z), bias
// and z each optional, in float32 (one rounding to T). act: 0 none, 1 Relu,
// 2 Relu6 (NhwcActivation); NaN stays NaN.
template <typename T>
__device__ __forceinline__ void ChannelEpilogueAt(T* y, const T* bias, const T* z, int64_t i, int64_t c, int act) {
  float v = ToFloat(y[i]);
  if (bias) v += ToFloat(bias[c]);
  if (z) v += ToFloat(z[i]);
  if (act != 0) v = v < 0.f ? 0.f : v;
  if (act == 2) v = v > 6.f ? 6.f : v;
  y[i] = FromFloat<T>(v);
}

template <typename T>
__global__ void ChannelEpilogue(T* y, const T* bias, const T* z, int64_t total, int64_t channels, int64_t spatial,
                                int act) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    ChannelEpilogueAt(y, bias, z, i, (i / spatial) % channels, act);
  }
}

// The same for tensors below 2^30 elements, the channel found with two
// multiply-high divisions instead of two 64-bit divisions: those made the
// bias pass 96 us a call against NhwcBiasActivation's 58, which does more
// (ResNet-50 float32 at batch 64 on NCHW, bench/results/exact_conv_measure_h200.md).
// On an H200, --layout nchw float32: ResNet-50 batch 64 21.96 -> 20.25 ms,
// MobileNetV2 batch 64 6.62 -> 5.58 ms, batch 1 0.568 -> 0.531 ms
// (tools/device/module_ab.sh).
template <typename T>
__global__ void ChannelEpilogue32(T* y, const T* bias, const T* z, uint32_t total, FastDivmod spatial,
                                  FastDivmod channels, int act) {
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += gridDim.x * blockDim.x) {
    ChannelEpilogueAt(y, bias, z, i, channels.Mod(spatial.Div(i)), act);
  }
}

// Index type I: 32-bit where the tensor allows, since 64-bit division is
// several times slower on the GPU.
// act: 0 none, 1 Relu, 2 Relu6 (NhwcActivation).
template <typename T, typename I>
__global__ void NhwcBiasActivation(T* y, const T* bias, const T* z, I total, I channels, int act) {
  for (I i = blockIdx.x * static_cast<I>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<I>(gridDim.x) * blockDim.x) {
    float v = ToFloat(y[i]);
    if (bias) v += ToFloat(bias[i % channels]);
    if (z) v += ToFloat(z[i]);
    if (act != 0) v = v < 0.f ? 0.f : v;  // NaN stays NaN
    if (act == 2) v = v > 6.f ? 6.f : v;
    y[i] = FromFloat<T>(v);
  }
}

// out[n, a, b] = in[n, b, a] for in [n, rows, cols]: a batched 2-D transpose
// (NHWC -> NCHW is rows = HW, cols = C), through a shared-memory tile so
// that both the reads and the writes are coalesced.
constexpr int kTile = 32;
template <typename T>
__global__ void BatchedTranspose(T* out, const T* in, int64_t rows, int64_t cols) {
  __shared__ T tile[kTile][kTile + 1];
  const int64_t n = blockIdx.z;
  const int64_t r0 = static_cast<int64_t>(blockIdx.y) * kTile, c0 = static_cast<int64_t>(blockIdx.x) * kTile;
  const T* src = in + n * rows * cols;
  T* dst = out + n * rows * cols;
  for (int k = threadIdx.y; k < kTile; k += blockDim.y) {
    int64_t r = r0 + k, c = c0 + threadIdx.x;
    if (r < rows && c < cols) tile[k][threadIdx.x] = src[r * cols + c];
  }
  __syncthreads();
  for (int k = threadIdx.y; k < kTile; k += blockDim.y) {
    int64_t c = c0 + k, r = r0 + threadIdx.x;
    if (r < rows && c < cols) dst[c * rows + r] = tile[threadIdx.x][k];
  }
}

// The same when one side is short (`rows` <= kShortSide, e.g. the 3 colour
// planes of an image): a 32x32 tile would be mostly empty, so each thread
// moves one column: reads one element per row (coalesced across the warp)
// and writes the column's `rows` elements, which are contiguous.
constexpr int64_t kShortSide = 16;
template <typename T>
__global__ void ShortRowsTranspose(T* out, const T* in, int64_t n, int64_t rows, int64_t cols) {
  const int64_t total = n * cols;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t b = i / cols, c = i - b * cols;
    const T* src = in + b * rows * cols + c;
    T* dst = out + i * rows;
    for (int64_t r = 0; r < rows; ++r) dst[r] = src[r * cols];
  }
}
// ... and when the short side is the columns: each thread reads a row's
// `cols` contiguous elements and writes one element per column plane.
template <typename T>
__global__ void ShortColsTranspose(T* out, const T* in, int64_t n, int64_t rows, int64_t cols) {
  const int64_t total = n * rows;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t b = i / rows, r = i - b * rows;
    const T* src = in + i * cols;
    T* dst = out + b * rows * cols + r;
    for (int64_t c = 0; c < cols; ++c) dst[c * rows] = src[c];
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

Status LaunchChannelEpilogue(void* y, const void* bias, const void* z, ir::DataType dtype, int64_t batch,
                             int64_t channels, int64_t spatial, NhwcActivation act, cudaStream_t stream) {
  const int64_t total = batch * channels * spatial;
  if (total == 0 || (!bias && !z && act == NhwcActivation::kNone)) return Status::Ok();
  const int a = static_cast<int>(act);
  bool ok = DispatchFloat(dtype, [&](auto t) {
    using T = decltype(t);
    T* yp = static_cast<T*>(y);
    const T* bp = static_cast<const T*>(bias);
    const T* zp = static_cast<const T*>(z);
    // The grid-stride index stays below total + grid size: within 2^31.
    if (total < (int64_t{1} << 30)) {
      ChannelEpilogue32<T><<<BlocksFor(total), 256, 0, stream>>>(
          yp, bp, zp, static_cast<uint32_t>(total), FastDivmod(static_cast<uint32_t>(spatial)),
          FastDivmod(static_cast<uint32_t>(channels)), a);
    } else {
      ChannelEpilogue<T><<<BlocksFor(total), 256, 0, stream>>>(yp, bp, zp, total, channels, spatial, a);
    }
  });
  if (!ok) return InternalError("channel epilogue: dtype {} is not a float dtype", ir::DataTypeName(dtype));
  VIGIL_CHECK_LAUNCH("ChannelEpilogue");
  return Status::Ok();
}

Status LaunchNhwcBiasActivation(void* y, const void* bias, const void* z, ir::DataType dtype, int64_t rows,
                                int64_t channels, NhwcActivation act, cudaStream_t stream) {
  int64_t total = rows * channels;
  if (total == 0 || (!bias && !z && act == NhwcActivation::kNone)) return Status::Ok();
  const int a = static_cast<int>(act);
  bool ok = DispatchFloat(dtype, [&](auto t) {
    using T = decltype(t);
    T* yp = static_cast<T*>(y);
    const T* bp = static_cast<const T*>(bias);
    const T* zp = static_cast<const T*>(z);
    // 2^30 keeps the grid-stride index (below total + grid size) within int32.
    if (total < (int64_t{1} << 30)) {
      NhwcBiasActivation<T, int32_t><<<BlocksFor(total), 256, 0, stream>>>(yp, bp, zp, static_cast<int32_t>(total),
                                                                           static_cast<int32_t>(channels), a);
    } else {
      NhwcBiasActivation<T, int64_t><<<BlocksFor(total), 256, 0, stream>>>(yp, bp, zp, total, channels, a);
    }
  });
  if (!ok) return InternalError("NHWC bias: dtype {} is not a float dtype", ir::DataTypeName(dtype));
  VIGIL_CHECK_LAUNCH("NhwcBiasActivation");
  return Status::Ok();
}

Status LaunchBatchedTranspose(void* dst, const void* src, size_t element_bytes, int64_t n, int64_t rows,
                              int64_t cols, cudaStream_t stream) {
  if (n == 0 || rows == 0 || cols == 0) return Status::Ok();
  if (rows <= kShortSide || cols <= kShortSide) {
    const bool short_rows = rows <= cols;
    const int64_t threads = n * (short_rows ? cols : rows);
    const auto blocks = static_cast<unsigned>(std::min<int64_t>((threads + 255) / 256, 65535 * 8));
    bool ok = DispatchBySize(element_bytes, [&](auto t) {
      using T = decltype(t);
      if (short_rows) {
        ShortRowsTranspose<T><<<blocks, 256, 0, stream>>>(static_cast<T*>(dst), static_cast<const T*>(src), n, rows,
                                                         cols);
      } else {
        ShortColsTranspose<T><<<blocks, 256, 0, stream>>>(static_cast<T*>(dst), static_cast<const T*>(src), n, rows,
                                                         cols);
      }
    });
    if (!ok) return InternalError("batched transpose: {}-byte elements", element_bytes);
    VIGIL_CHECK_LAUNCH("ShortSideTranspose");
    return Status::Ok();
  }
  if (n > 65535 || (rows + kTile - 1) / kTile > 65535) {
    return UnsupportedError("batched transpose of [{}, {}, {}] exceeds the launch grid", n, rows, cols);
  }
  dim3 grid(static_cast<unsigned>((cols + kTile - 1) / kTile), static_cast<unsigned>((rows + kTile - 1) / kTile),
            static_cast<unsigned>(n));
  dim3 block(kTile, 8);
  bool ok = DispatchBySize(element_bytes, [&](auto t) {
    using T = decltype(t);
    BatchedTranspose<T><<<grid, block, 0, stream>>>(static_cast<T*>(dst), static_cast<const T*>(src), rows, cols);
  });
  if (!ok) return InternalError("batched transpose: {}-byte elements", element_bytes);
  VIGIL_CHECK_LAUNCH("BatchedTranspose");
  return Status::Ok();
}

Status LaunchLayoutTranspose(void* dst, const void* src, ir::DataType dtype, int64_t n, int64_t c, int64_t hw,
                             bool to_nchw, cudaStream_t stream) {
  // NHWC -> NCHW transposes each image's [HW, C] matrix; NCHW -> NHWC its [C, HW].
  return LaunchBatchedTranspose(dst, src, static_cast<size_t>(ir::DataTypeBits(dtype) / 8), n, to_nchw ? hw : c,
                                to_nchw ? c : hw, stream);
}

}  // namespace vigil::cuda
