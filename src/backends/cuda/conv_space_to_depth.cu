// Space to depth for stride-2 stems (conv_space_to_depth.h): one thread per
// pixel of Z, which gathers its 2 x 2 x C elements and stores 16; then the
// stride-1 convolution over Z as a matrix product on int8 tensor cores
// (mma.sync m16n8k32, int32 accumulation, exact), requantized as
// RequantizeRowsKernel (quantize_linear.cu) does it.
//
// The product: rows are output pixels, K = taps x 16 (a tap's 16 channels
// are 16 contiguous bytes of Z, and a row of taps 16 x kW' contiguous ones),
// columns are the M <= 64 output channels. A block keeps all of W' (at most
// 64 x 256 bytes) in shared memory and walks tiles of 64 output pixels: it
// gathers a tile's rows of Z, each of 4 warps multiplies 16 of them by W',
// and the int8 results go out through shared memory in 16-byte stores.
#include "backends/cuda/conv_space_to_depth.h"
#include "backends/cuda/cuda_check.h"
#include "backends/cuda/device_common.cuh"

namespace vigil::cuda {
namespace {

constexpr int kThreads = 256;

// One thread per pixel of Z (or tap of W'): its 16 elements T (int8,
// float16/bfloat16 or float32 bits) gathered from source rows 2u + p - top,
// columns 2v + q - left of a [rows, cols, c] image, zeros elsewhere, and
// stored as 1, 2 or 4 vectors of 16 bytes. I: the index type, 32-bit where
// the pixel count fits (division is cheaper).
template <typename T, typename I>
__global__ void SpaceToDepthWideKernel(const T* x, int4* z, I pixels, I zh, I zw, int64_t h, int64_t w, int64_t c,
                                       int64_t top, int64_t left) {
  constexpr int kVectors = kSpaceToDepthChannels * sizeof(T) / 16;
  for (I i = static_cast<I>(blockIdx.x) * blockDim.x + threadIdx.x; i < pixels;
       i += static_cast<I>(gridDim.x) * blockDim.x) {
    const I v = i % zw, rest = i / zw, u = rest % zh, n = rest / zh;
    const T* src = x + static_cast<int64_t>(n) * h * w * c;
    union {
      int4 v4[kVectors];
      T e[kSpaceToDepthChannels];
    } out;
    for (int k = 0; k < kVectors; ++k) out.v4[k] = make_int4(0, 0, 0, 0);
    for (int p = 0; p < 2; ++p) {
      const int64_t r = 2 * static_cast<int64_t>(u) + p - top;
      if (r < 0 || r >= h) continue;
      for (int q = 0; q < 2; ++q) {
        const int64_t s = 2 * static_cast<int64_t>(v) + q - left;
        if (s < 0 || s >= w) continue;
        const T* at = src + (r * w + s) * c;
        for (int k = 0; k < c; ++k) out.e[(2 * p + q) * 4 + k] = at[k];
      }
    }
    for (int k = 0; k < kVectors; ++k) z[static_cast<int64_t>(i) * kVectors + k] = out.v4[k];
  }
}

template <typename T>
Status LaunchWideGather(const void* src, void* z, int64_t pixels, int64_t zh, int64_t zw, int64_t h, int64_t w,
                        int64_t c, int64_t top, int64_t left, cudaStream_t stream) {
  const T* in = static_cast<const T*>(src);
  auto* out = static_cast<int4*>(z);
  if (pixels < (int64_t{1} << 31)) {
    SpaceToDepthWideKernel<T, uint32_t><<<BlocksFor(pixels, kThreads), kThreads, 0, stream>>>(
        in, out, static_cast<uint32_t>(pixels), static_cast<uint32_t>(zh), static_cast<uint32_t>(zw), h, w, c, top,
        left);
  } else {
    SpaceToDepthWideKernel<T, int64_t><<<BlocksFor(pixels, kThreads), kThreads, 0, stream>>>(in, out, pixels, zh, zw,
                                                                                             h, w, c, top, left);
  }
  return Status::Ok();
}

// Either element size, or an error.
Status LaunchGatherOfSize(const void* src, void* z, int element_bytes, int64_t pixels, int64_t zh, int64_t zw,
                          int64_t h, int64_t w, int64_t c, int64_t top, int64_t left, cudaStream_t stream) {
  if (c < 1 || c > 4) return InternalError("space to depth takes 1 to 4 channels, got {}", c);
  if (pixels == 0) return Status::Ok();
  if (element_bytes == 1) return LaunchWideGather<uint8_t>(src, z, pixels, zh, zw, h, w, c, top, left, stream);
  if (element_bytes == 2) return LaunchWideGather<uint16_t>(src, z, pixels, zh, zw, h, w, c, top, left, stream);
  if (element_bytes == 4) return LaunchWideGather<uint32_t>(src, z, pixels, zh, zw, h, w, c, top, left, stream);
  return InternalError("space to depth takes 1-, 2- or 4-byte elements, got {}", element_bytes);
}

constexpr int kTile = 64;          // output pixels per tile
constexpr int kConvThreads = 128;  // 4 warps x 16 pixels
constexpr int kRowBytes = kSpaceToDepthMaxK + 16;  // shared rows padded: conflict-free fragment reads

__device__ __forceinline__ uint32_t Load4(const int8_t* p) { return *reinterpret_cast<const uint32_t*>(p); }

__global__ void __launch_bounds__(kConvThreads)
    SpaceToDepthConvKernel(const int8_t* __restrict__ z, const int8_t* __restrict__ w2, const float* __restrict__ scale,
                           const float* __restrict__ bias, int8_t* __restrict__ y, int64_t pixels, int64_t zh,
                           int64_t zw, int64_t oh, int64_t ow, int tw, int k, int m, bool relu) {
  __shared__ alignas(16) int8_t as[kTile * kRowBytes];
  __shared__ alignas(16) int8_t bs[kSpaceToDepthMaxM * kRowBytes];
  __shared__ const int8_t* row_at[kTile];
  __shared__ int64_t tap_at[kSpaceToDepthMaxK / 16];
  const int kp = (k + 31) / 32 * 32;  // K padded with zeros to whole mma steps
  const int chunks = kp / 16, taps = k / 16;
  // Tap (a, b) of a window: 16 bytes at (a * zw + b) * 16 past its start.
  for (int i = threadIdx.x; i < taps; i += blockDim.x) tap_at[i] = ((i / tw) * zw + i % tw) * kSpaceToDepthChannels;
  for (int i = threadIdx.x; i < kSpaceToDepthMaxM * chunks; i += blockDim.x) {
    const int row = i / chunks, chunk = i % chunks;
    int4 v = make_int4(0, 0, 0, 0);
    if (row < m && chunk * 16 < k) v = *reinterpret_cast<const int4*>(w2 + static_cast<int64_t>(row) * k + chunk * 16);
    *reinterpret_cast<int4*>(bs + row * kRowBytes + chunk * 16) = v;
  }
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const int64_t tiles = (pixels + kTile - 1) / kTile;
  for (int64_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    const int64_t p0 = tile * kTile;
    __syncthreads();  // W' stored; the previous tile's output copied out
    if (threadIdx.x < kTile) {
      // Where each output pixel's window starts in Z (null past the end).
      const int64_t p = p0 + threadIdx.x;
      const int64_t ox = p % ow, rest = p / ow, oy = rest % oh, n = rest / oh;
      row_at[threadIdx.x] = p < pixels ? z + ((n * zh + oy) * zw + ox) * kSpaceToDepthChannels : nullptr;
    }
    __syncthreads();
    for (int i = threadIdx.x; i < kTile * chunks; i += blockDim.x) {
      const int row = i / chunks, chunk = i % chunks;
      int4 v = make_int4(0, 0, 0, 0);
      if (row_at[row] && chunk < taps) v = *reinterpret_cast<const int4*>(row_at[row] + tap_at[chunk]);
      *reinterpret_cast<int4*>(as + row * kRowBytes + chunk * 16) = v;
    }
    __syncthreads();
    int acc[kSpaceToDepthMaxM / 8][4] = {};
    const int8_t* a_lo = as + (warp * 16 + g) * kRowBytes + t * 4;
    const int8_t* a_hi = a_lo + 8 * kRowBytes;
    for (int kk = 0; kk < kp; kk += 32) {
      const uint32_t a0 = Load4(a_lo + kk), a1 = Load4(a_hi + kk), a2 = Load4(a_lo + kk + 16),
                     a3 = Load4(a_hi + kk + 16);
#pragma unroll
      for (int nt = 0; nt < kSpaceToDepthMaxM / 8; ++nt) {
        if (nt * 8 >= m) break;
        const int8_t* b_at = bs + (nt * 8 + g) * kRowBytes + t * 4 + kk;
        const uint32_t b0 = Load4(b_at), b1 = Load4(b_at + 16);
        asm volatile(
            "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
            "{%0, %1, %2, %3};\n"
            : "+r"(acc[nt][0]), "+r"(acc[nt][1]), "+r"(acc[nt][2]), "+r"(acc[nt][3])
            : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
      }
    }
    __syncthreads();  // every warp done with `as`: it now stages the int8 output, [kTile, m]
#pragma unroll
    for (int nt = 0; nt < kSpaceToDepthMaxM / 8; ++nt) {
      if (nt * 8 >= m) break;
      for (int i = 0; i < 4; ++i) {
        const int row = warp * 16 + g + (i >= 2 ? 8 : 0), col = nt * 8 + t * 2 + (i & 1);
        float v = __fadd_rn(__fmul_rn(static_cast<float>(acc[nt][i]), scale[col]), bias[col]);
        if (relu) v = fmaxf(v, 0.0f);
        as[row * m + col] = static_cast<int8_t>(isnan(v) ? 0.0f : fminf(fmaxf(rintf(v), -128.0f), 127.0f));
      }
    }
    __syncthreads();
    // The tile's rows are contiguous in Y: m bytes each (m a multiple of 16).
    const int64_t rows = pixels - p0 < kTile ? pixels - p0 : kTile;
    const int vectors = static_cast<int>(rows * m / 16);
    for (int i = threadIdx.x; i < vectors; i += blockDim.x) {
      reinterpret_cast<int4*>(y + p0 * m)[i] = reinterpret_cast<const int4*>(as)[i];
    }
  }
}

}  // namespace

bool SpaceToDepthConvSupported(const SpaceToDepthGeometry& g) {
  const int64_t taps = ((g.kh + 1) / 2) * ((g.kw + 1) / 2);
  return g.c >= 1 && g.c <= 4 && g.m >= 16 && g.m <= kSpaceToDepthMaxM && g.m % 16 == 0 &&
         taps * kSpaceToDepthChannels <= kSpaceToDepthMaxK;
}

Status LaunchSpaceToDepthConvInt8(const int8_t* z, const int8_t* w2, const float* scale, const float* bias, int8_t* y,
                                  const SpaceToDepthGeometry& g, bool relu, cudaStream_t stream) {
  if (!SpaceToDepthConvSupported(g)) return InternalError("space-to-depth convolution: unsupported geometry");
  const int64_t pixels = g.n * g.oh * g.ow;
  if (pixels == 0) return Status::Ok();
  static int sms = [] {
    int device = 0, n = 0;
    if (cudaGetDevice(&device) != cudaSuccess ||
        cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, device) != cudaSuccess) {
      return 132;
    }
    return n > 0 ? n : 132;
  }();
  const int64_t tiles = (pixels + kTile - 1) / kTile;
  const int64_t blocks = tiles < static_cast<int64_t>(sms) * 6 ? tiles : static_cast<int64_t>(sms) * 6;
  const int tw = static_cast<int>((g.kw + 1) / 2);
  const int k = static_cast<int>(((g.kh + 1) / 2) * tw * kSpaceToDepthChannels);
  SpaceToDepthConvKernel<<<static_cast<unsigned>(blocks), kConvThreads, 0, stream>>>(
      z, w2, scale, bias, y, pixels, g.zh(), g.zw(), g.oh, g.ow, tw, k, static_cast<int>(g.m), relu);
  VIGIL_CHECK_LAUNCH("space-to-depth convolution (int8 tensor cores)");
  return Status::Ok();
}

Status LaunchSpaceToDepthInt8(const int8_t* x, int8_t* z, const SpaceToDepthGeometry& g, cudaStream_t stream) {
  return LaunchSpaceToDepth(x, z, g, 1, stream);
}

Status LaunchSpaceToDepthFilterInt8(const int8_t* w, int8_t* w2, const SpaceToDepthGeometry& g, cudaStream_t stream) {
  return LaunchSpaceToDepthFilter(w, w2, g, 1, stream);
}

Status LaunchSpaceToDepth(const void* x, void* z, const SpaceToDepthGeometry& g, int element_bytes,
                          cudaStream_t stream) {
  VIGIL_RETURN_IF_ERROR(LaunchGatherOfSize(x, z, element_bytes, g.n * g.zh() * g.zw(), g.zh(), g.zw(), g.h, g.w, g.c,
                                           g.pad_top, g.pad_left, stream));
  VIGIL_CHECK_LAUNCH("space to depth");
  return Status::Ok();
}

Status LaunchSpaceToDepthFilter(const void* w, void* w2, const SpaceToDepthGeometry& g, int element_bytes,
                                cudaStream_t stream) {
  const int64_t th = (g.kh + 1) / 2, tw = (g.kw + 1) / 2;
  VIGIL_RETURN_IF_ERROR(LaunchGatherOfSize(w, w2, element_bytes, g.m * th * tw, th, tw, g.kh, g.kw, g.c, 0, 0, stream));
  VIGIL_CHECK_LAUNCH("space to depth of a filter");
  return Status::Ok();
}

}  // namespace vigil::cuda
