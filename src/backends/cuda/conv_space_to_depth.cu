// Space to depth for stride-2 stems (conv_space_to_depth.h): one thread per
// pixel of Z, which gathers its 2 x 2 x C bytes and stores 16; then the
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

// The 16 bytes of one pixel of Z (or one tap of W'): source rows 2u + p - top,
// columns 2v + q - left, of a [rows, cols, c] image at `src`.
__device__ int4 Gather(const int8_t* src, int64_t rows, int64_t cols, int64_t c, int64_t u, int64_t v, int64_t top,
                       int64_t left) {
  union {
    int4 v4;
    int8_t b[16];
  } out;
  out.v4 = make_int4(0, 0, 0, 0);
  for (int p = 0; p < 2; ++p) {
    const int64_t r = 2 * u + p - top;
    if (r < 0 || r >= rows) continue;
    for (int q = 0; q < 2; ++q) {
      const int64_t s = 2 * v + q - left;
      if (s < 0 || s >= cols) continue;
      const int8_t* at = src + (r * cols + s) * c;
      for (int k = 0; k < c; ++k) out.b[(2 * p + q) * 4 + k] = at[k];
    }
  }
  return out.v4;
}

// I: the index type, 32-bit where the pixel count fits (division is cheaper).
template <typename I>
__global__ void SpaceToDepthKernel(const int8_t* x, int4* z, I pixels, I zh, I zw, int64_t h, int64_t w, int64_t c,
                                   int64_t top, int64_t left) {
  for (I i = static_cast<I>(blockIdx.x) * blockDim.x + threadIdx.x; i < pixels;
       i += static_cast<I>(gridDim.x) * blockDim.x) {
    const I v = i % zw, rest = i / zw, u = rest % zh, n = rest / zh;
    z[i] = Gather(x + static_cast<int64_t>(n) * h * w * c, h, w, c, u, v, top, left);
  }
}

Status LaunchGather(const int8_t* src, int8_t* z, int64_t pixels, int64_t zh, int64_t zw, int64_t h, int64_t w,
                    int64_t c, int64_t top, int64_t left, cudaStream_t stream) {
  auto* out = reinterpret_cast<int4*>(z);
  if (pixels < (int64_t{1} << 31)) {
    SpaceToDepthKernel<uint32_t><<<BlocksFor(pixels, kThreads), kThreads, 0, stream>>>(
        src, out, static_cast<uint32_t>(pixels), static_cast<uint32_t>(zh), static_cast<uint32_t>(zw), h, w, c, top,
        left);
  } else {
    SpaceToDepthKernel<int64_t><<<BlocksFor(pixels, kThreads), kThreads, 0, stream>>>(src, out, pixels, zh, zw, h, w,
                                                                                       c, top, left);
  }
  return Status::Ok();
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
  if (g.c < 1 || g.c > 4) return InternalError("space to depth takes 1 to 4 channels, got {}", g.c);
  const int64_t pixels = g.n * g.zh() * g.zw();
  if (pixels == 0) return Status::Ok();
  VIGIL_RETURN_IF_ERROR(LaunchGather(x, z, pixels, g.zh(), g.zw(), g.h, g.w, g.c, g.pad_top, g.pad_left, stream));
  VIGIL_CHECK_LAUNCH("space to depth (int8)");
  return Status::Ok();
}

Status LaunchSpaceToDepthFilterInt8(const int8_t* w, int8_t* w2, const SpaceToDepthGeometry& g, cudaStream_t stream) {
  if (g.c < 1 || g.c > 4) return InternalError("space to depth takes 1 to 4 channels, got {}", g.c);
  // W [M, kH, kW, C] is an image per output channel: taps (a, b) gather rows 2a + p, columns 2b + q.
  const int64_t taps = g.m * ((g.kh + 1) / 2) * ((g.kw + 1) / 2);
  if (taps == 0) return Status::Ok();
  VIGIL_RETURN_IF_ERROR(LaunchGather(w, w2, taps, (g.kh + 1) / 2, (g.kw + 1) / 2, g.kh, g.kw, g.c, 0, 0, stream));
  VIGIL_CHECK_LAUNCH("space to depth of a filter (int8)");
  return Status::Ok();
}

}  // namespace vigil::cuda
