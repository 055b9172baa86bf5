#include "backends/cuda/conv_depthwise.h"

#include <cmath>
#include <cstdlib>
#include <string_view>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/device_common.cuh"

namespace vigil::cuda {
namespace {

// Channels per thread where C allows: 4 (8-byte loads of 16-bit types,
// 16-byte loads of float32); otherwise 1. MobileNet-like models have C a
// multiple of 8, so the scalar variant is for odd channel counts only.
constexpr int kVector = 4;
constexpr int kThreads = 256;
// Blocks per SM the 3x3 kernel is compiled for (__launch_bounds__): 4 caps
// it at 64 registers a thread (ptxas, sm_90: 96 for stride 1 and 88 for
// stride 2 unbounded, which let only 3 blocks of ~250 threads in an SM;
// bounded, the stride-1 instance spills ~160 bytes to L1). The kernel is
// bound by load latency, not bandwidth (ncu, H100, MobileNetV2 batch 64:
// 20-27% of DRAM bandwidth at 33% occupancy), so more resident warps pay:
// MobileNetV2 fp16 on an H100, `vigil bench` p50, one call: batch 64
// 1.774 -> 1.482 ms; batch 1 0.264 -> 0.271 ms. Keeping the weights in shared
// memory instead (58 and 48 registers, no spills) measured slower: 1.884 ms.
constexpr int kMinBlocks3x3 = 4;
// Output pixels along W per thread in the 3x3 kernel: with stride 1, four
// outputs read 6 input columns per row instead of 12; with stride 2, two
// read 5 instead of 6. More would cost registers (and occupancy) for little.
constexpr int kRunStride1 = 4, kRunStride2 = 2;

template <typename T, int V>
struct alignas(sizeof(T) * V) Vec {
  T v[V];
};

template <typename T, int V>
__device__ __forceinline__ void LoadFloats(const T* p, float (&out)[V]) {
  const Vec<T, V> r = *reinterpret_cast<const Vec<T, V>*>(p);
#pragma unroll
  for (int i = 0; i < V; ++i) out[i] = ToFloat(r.v[i]);
}

template <typename T, int V>
__device__ __forceinline__ void StoreFloats(T* p, const float (&in)[V]) {
  Vec<T, V> r;
#pragma unroll
  for (int i = 0; i < V; ++i) r.v[i] = FromFloat<T>(in[i]);
  *reinterpret_cast<Vec<T, V>*>(p) = r;
}

// Kernel arguments: the geometry in 32-bit (DepthwiseShapeOf checks that it
// fits; memory offsets are computed in 64-bit), plus the epilogue.
struct Args {
  int h, w, c, oh, ow, kh, kw, sh, sw, pt, pl, dh, dw;
  int run;         // output pixels along W per thread
  int runs_per_row;  // ceil(ow / run)
  int runs;        // batch * oh * runs_per_row
  int act;         // NhwcActivation as int
  float in_hi;     // with the input activation: its upper bound (6 for Relu6, +inf for Relu)
};

// The input activation on V loaded values (ClipIn: Relu or Relu6, a
// template flag so that the kernels without one are unchanged): max(v, 0),
// then min(v, hi), NaN kept as the activations after the convolution do.
template <bool ClipIn, int V>
__device__ __forceinline__ void ActivateInput(float (&v)[V], float hi) {
  if constexpr (ClipIn) {
#pragma unroll
    for (int i = 0; i < V; ++i) {
      v[i] = v[i] < 0.f ? 0.f : v[i];
      v[i] = v[i] > hi ? hi : v[i];
    }
  }
}

template <typename T, int V>
__device__ __forceinline__ void LoadBias(const T* bias, int c0, float (&b)[V]) {
  if (bias) {
    LoadFloats<T, V>(bias + c0, b);
  } else {
#pragma unroll
    for (int i = 0; i < V; ++i) b[i] = 0.f;
  }
}

// y[off..off+V) = act(acc + b + z[off..off+V)), as ConvNhwc defines it.
template <typename T, int V>
__device__ __forceinline__ void Finish(float (&acc)[V], const float (&b)[V], const T* z, T* y, int64_t off,
                                       int act) {
  float zv[V];
  if (z) LoadFloats<T, V>(z + off, zv);
#pragma unroll
  for (int i = 0; i < V; ++i) {
    float v = acc[i] + b[i];
    if (z) v += zv[i];
    if (act != 0) v = v < 0.f ? 0.f : v;  // NaN stays NaN
    if (act == 2) v = v > 6.f ? 6.f : v;
    acc[i] = v;
  }
  StoreFloats<T, V>(y + off, acc);
}

// The run index of thread (threadIdx.y, blockIdx.x), split into image n,
// output row oh and first output column ow0.
__device__ __forceinline__ void SplitRun(const Args& a, int g, int& n, int& oh, int& ow0) {
  const int t = g / a.runs_per_row;
  ow0 = (g - t * a.runs_per_row) * a.run;
  n = t / a.oh;
  oh = t - n * a.oh;
}

// 3x3, dilation 1, stride S: each thread owns channels [c0, c0 + V) (its
// weights stay in registers) and computes R outputs along W per step,
// loading each input column they share once.
template <typename T, int V, int S, int R, bool ClipIn>
__global__ void __launch_bounds__(kThreads, kMinBlocks3x3) Depthwise3x3(const T* __restrict__ x, const T* __restrict__ w,
                                                        const T* __restrict__ bias, const T* __restrict__ z,
                                                        T* __restrict__ y, Args a) {
  constexpr int K = 3, kCols = (R - 1) * S + K;
  const int c0 = (blockIdx.y * blockDim.x + threadIdx.x) * V;
  if (c0 >= a.c) return;
  // W [C, 3, 3, 1]: the V channels' 9 taps each are V * 9 contiguous values
  // (flat index channel * 9 + tap), read as 9 vectors.
  float wr[K * K][V];
#pragma unroll
  for (int j = 0; j < K * K; ++j) {
    float f[V];
    LoadFloats<T, V>(w + static_cast<int64_t>(c0) * K * K + j * V, f);
#pragma unroll
    for (int i = 0; i < V; ++i) wr[(j * V + i) % (K * K)][(j * V + i) / (K * K)] = f[i];
  }
  float b[V];
  LoadBias<T, V>(bias, c0, b);
  for (int g = blockIdx.x * blockDim.y + threadIdx.y; g < a.runs; g += gridDim.x * blockDim.y) {
    int n, oh, ow0;
    SplitRun(a, g, n, oh, ow0);
    float acc[R][V];
#pragma unroll
    for (int r = 0; r < R; ++r) {
#pragma unroll
      for (int i = 0; i < V; ++i) acc[r][i] = 0.f;
    }
    const int iw0 = ow0 * S - a.pl;
#pragma unroll
    for (int ky = 0; ky < K; ++ky) {
      const int ih = oh * S - a.pt + ky;
      if (static_cast<unsigned>(ih) >= static_cast<unsigned>(a.h)) continue;  // zero padding
      const T* row = x + static_cast<int64_t>(n * a.h + ih) * a.w * a.c + c0;
#pragma unroll
      for (int j = 0; j < kCols; ++j) {
        const int iw = iw0 + j;
        if (static_cast<unsigned>(iw) >= static_cast<unsigned>(a.w)) continue;
        float in[V];
        LoadFloats<T, V>(row + static_cast<int64_t>(iw) * a.c, in);
        ActivateInput<ClipIn, V>(in, a.in_hi);
#pragma unroll
        for (int r = 0; r < R; ++r) {
          const int kx = j - r * S;  // a constant once unrolled
          if (kx < 0 || kx >= K) continue;
#pragma unroll
          for (int i = 0; i < V; ++i) acc[r][i] = fmaf(in[i], wr[ky * K + kx][i], acc[r][i]);
        }
      }
    }
    const int64_t out_row = static_cast<int64_t>(n * a.oh + oh) * a.ow;
#pragma unroll
    for (int r = 0; r < R; ++r) {
      if (ow0 + r >= a.ow) break;
      Finish<T, V>(acc[r], b, z, y, (out_row + ow0 + r) * a.c + c0, a.act);
    }
  }
}

// Any kernel size, stride and dilation: one output pixel per step, the
// weights read per tap (they stay in L1 across the thread's pixels).
template <typename T, int V, bool ClipIn>
__global__ void __launch_bounds__(kThreads) DepthwiseAny(const T* __restrict__ x, const T* __restrict__ w,
                                                        const T* __restrict__ bias, const T* __restrict__ z,
                                                        T* __restrict__ y, Args a) {
  const int c0 = (blockIdx.y * blockDim.x + threadIdx.x) * V;
  if (c0 >= a.c) return;
  const int taps = a.kh * a.kw;
  const T* wc = w + static_cast<int64_t>(c0) * taps;
  float b[V];
  LoadBias<T, V>(bias, c0, b);
  for (int g = blockIdx.x * blockDim.y + threadIdx.y; g < a.runs; g += gridDim.x * blockDim.y) {
    int n, oh, ow;
    SplitRun(a, g, n, oh, ow);
    float acc[V];
#pragma unroll
    for (int i = 0; i < V; ++i) acc[i] = 0.f;
    for (int ky = 0; ky < a.kh; ++ky) {
      const int ih = oh * a.sh - a.pt + ky * a.dh;
      if (static_cast<unsigned>(ih) >= static_cast<unsigned>(a.h)) continue;
      const T* row = x + static_cast<int64_t>(n * a.h + ih) * a.w * a.c + c0;
      for (int kx = 0; kx < a.kw; ++kx) {
        const int iw = ow * a.sw - a.pl + kx * a.dw;
        if (static_cast<unsigned>(iw) >= static_cast<unsigned>(a.w)) continue;
        float in[V];
        LoadFloats<T, V>(row + static_cast<int64_t>(iw) * a.c, in);
        ActivateInput<ClipIn, V>(in, a.in_hi);
        const int tap = ky * a.kw + kx;
#pragma unroll
        for (int i = 0; i < V; ++i) acc[i] = fmaf(in[i], ToFloat(wc[i * taps + tap]), acc[i]);
      }
    }
    Finish<T, V>(acc, b, z, y, (static_cast<int64_t>(n * a.oh + oh) * a.ow + ow) * a.c + c0, a.act);
  }
}

// The largest count of runs (and of N*H, N*OH) the 32-bit indexing allows,
// with room for the grid-stride increment.
constexpr int64_t kMaxIndex = int64_t{1} << 30;

bool Is3x3Fast(const DepthwiseConvShape& s) {
  return s.kernel_h == 3 && s.kernel_w == 3 && s.dilation_h == 1 && s.dilation_w == 1 && s.stride_h == s.stride_w &&
         (s.stride_h == 1 || s.stride_h == 2);
}

int RunLength(const DepthwiseConvShape& s) {
  if (!Is3x3Fast(s)) return 1;
  return s.stride_h == 1 ? kRunStride1 : kRunStride2;
}

// Blocks per SM the grid-stride loop is sized for: enough to hide memory
// latency, few enough that each thread's register weights serve several
// steps on large tensors.
constexpr int kBlocksPerSm = 8;

Result<int> SmCount() {
  int device = 0, sms = 0;
  VIGIL_CUDA_CALL(cudaGetDevice(&device));
  VIGIL_CUDA_CALL(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  return sms > 0 ? sms : 1;
}

template <typename T, int V, bool ClipIn>
Status Launch(const DepthwiseConvShape& s, const Args& a, const void* x, const void* w, const void* bias,
              const void* z, void* y, cudaStream_t stream) {
  // Threads along x cover channel vectors, along y runs of output pixels.
  const int vectors = (a.c + V - 1) / V;
  const int tx = vectors <= kThreads ? vectors : 128;
  const int ty = kThreads / tx;
  const unsigned grid_y = static_cast<unsigned>((vectors + tx - 1) / tx);
  VIGIL_ASSIGN_OR_RETURN(int sms, SmCount());
  int64_t cap = static_cast<int64_t>(sms) * kBlocksPerSm / grid_y;
  if (cap < 1) cap = 1;
  int64_t need = (a.runs + ty - 1) / ty;
  const dim3 grid(static_cast<unsigned>(need < cap ? need : cap), grid_y), block(tx, ty);
  const T* xp = static_cast<const T*>(x);
  const T* wp = static_cast<const T*>(w);
  const T* bp = static_cast<const T*>(bias);
  const T* zp = static_cast<const T*>(z);
  T* yp = static_cast<T*>(y);
  if (Is3x3Fast(s) && s.stride_h == 1) {
    Depthwise3x3<T, V, 1, kRunStride1, ClipIn><<<grid, block, 0, stream>>>(xp, wp, bp, zp, yp, a);
  } else if (Is3x3Fast(s)) {
    Depthwise3x3<T, V, 2, kRunStride2, ClipIn><<<grid, block, 0, stream>>>(xp, wp, bp, zp, yp, a);
  } else {
    DepthwiseAny<T, V, ClipIn><<<grid, block, 0, stream>>>(xp, wp, bp, zp, yp, a);
  }
  VIGIL_CHECK_LAUNCH("DepthwiseConvNhwc");
  return Status::Ok();
}

template <typename T>
Status LaunchTyped(bool vector, bool clip_in, const DepthwiseConvShape& s, const Args& a, const void* x,
                   const void* w, const void* bias, const void* z, void* y, cudaStream_t stream) {
  if (clip_in) {
    return vector ? Launch<T, kVector, true>(s, a, x, w, bias, z, y, stream)
                  : Launch<T, 1, true>(s, a, x, w, bias, z, y, stream);
  }
  return vector ? Launch<T, kVector, false>(s, a, x, w, bias, z, y, stream)
                : Launch<T, 1, false>(s, a, x, w, bias, z, y, stream);
}

bool Aligned(const void* p, size_t bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }

bool FitsIndexing(const DepthwiseConvShape& s) {
  auto positive = [](int64_t v) { return v > 0 && v < kMaxIndex; };
  if (!positive(s.batch) || !positive(s.in_h) || !positive(s.in_w) || !positive(s.channels) || !positive(s.out_h) ||
      !positive(s.out_w) || !positive(s.kernel_h) || !positive(s.kernel_w) || !positive(s.stride_h) ||
      !positive(s.stride_w) || !positive(s.dilation_h) || !positive(s.dilation_w)) {
    return false;
  }
  if (s.pad_top < 0 || s.pad_left < 0 || s.pad_top >= kMaxIndex || s.pad_left >= kMaxIndex) return false;
  const int64_t run = RunLength(s);
  const int64_t runs = s.batch * s.out_h * ((s.out_w + run - 1) / run);
  // Input coordinates (up to (out - 1) * stride + (kernel - 1) * dilation) stay in int32 too.
  const int64_t far_h = (s.out_h - 1) * s.stride_h + (s.kernel_h - 1) * s.dilation_h;
  const int64_t far_w = (s.out_w - 1) * s.stride_w + (s.kernel_w - 1) * s.dilation_w;
  return runs < kMaxIndex && s.batch * s.in_h < kMaxIndex && s.batch * s.out_h < kMaxIndex && far_h < kMaxIndex &&
         far_w < kMaxIndex && s.kernel_h * s.kernel_w < kMaxIndex / s.channels;
}

}  // namespace

bool DepthwiseForcedToCudnn() {
  const char* v = std::getenv("VIGIL_DEPTHWISE");
  return v != nullptr && std::string_view(v) == "cudnn";
}

std::optional<DepthwiseConvShape> DepthwiseShapeOf(const std::vector<int64_t>& x, const std::vector<int64_t>& w,
                                                   const std::vector<int64_t>& y, int64_t group,
                                                   const std::vector<int64_t>& strides,
                                                   const std::vector<int64_t>& pads_begin,
                                                   const std::vector<int64_t>& dilations) {
  if (x.size() != 4 || w.size() != 4 || y.size() != 4 || strides.size() != 2 || pads_begin.size() != 2 ||
      dilations.size() != 2) {
    return std::nullopt;
  }
  const int64_t c = x[3];
  if (group <= 1 || group != c || w[0] != c || w[3] != 1 || y[3] != c || y[0] != x[0]) return std::nullopt;
  if (DepthwiseForcedToCudnn()) return std::nullopt;
  DepthwiseConvShape s{x[0], x[1], x[2], c, y[1], y[2], w[1], w[2], strides[0], strides[1], pads_begin[0],
                       pads_begin[1], dilations[0], dilations[1]};
  if (!FitsIndexing(s)) return std::nullopt;
  return s;
}

Status LaunchDepthwiseConvNhwc(const DepthwiseConvShape& s, ir::DataType dtype, const void* x, const void* w,
                               const void* bias, const void* z, void* y, NhwcActivation act,
                               NhwcActivation input_act, cudaStream_t stream) {
  if (!FitsIndexing(s)) {
    return InternalError("depthwise convolution: X [{}, {}, {}, {}] -> Y [{}, {}] is outside the kernel's range",
                         s.batch, s.in_h, s.in_w, s.channels, s.out_h, s.out_w);
  }
  const int run = RunLength(s);
  const int64_t runs_per_row = (s.out_w + run - 1) / run;
  Args a{static_cast<int>(s.in_h),     static_cast<int>(s.in_w),       static_cast<int>(s.channels),
         static_cast<int>(s.out_h),    static_cast<int>(s.out_w),      static_cast<int>(s.kernel_h),
         static_cast<int>(s.kernel_w), static_cast<int>(s.stride_h),   static_cast<int>(s.stride_w),
         static_cast<int>(s.pad_top),  static_cast<int>(s.pad_left),   static_cast<int>(s.dilation_h),
         static_cast<int>(s.dilation_w), run,                          static_cast<int>(runs_per_row),
         static_cast<int>(s.batch * s.out_h * runs_per_row),           static_cast<int>(act),
         input_act == NhwcActivation::kRelu6 ? 6.f : INFINITY};
  const bool clip_in = input_act != NhwcActivation::kNone;
  // Vector loads need C a multiple of the vector and every pointer aligned to it.
  const size_t vec_bytes = static_cast<size_t>(ir::DataTypeBits(dtype) / 8) * kVector;
  const bool vector = s.channels % kVector == 0 && Aligned(x, vec_bytes) && Aligned(w, vec_bytes) &&
                      Aligned(y, vec_bytes) && Aligned(bias, vec_bytes) && Aligned(z, vec_bytes);
  switch (dtype) {
    case ir::DataType::kFloat32: return LaunchTyped<float>(vector, clip_in, s, a, x, w, bias, z, y, stream);
    case ir::DataType::kFloat16: return LaunchTyped<__half>(vector, clip_in, s, a, x, w, bias, z, y, stream);
    case ir::DataType::kBfloat16:
      return LaunchTyped<__nv_bfloat16>(vector, clip_in, s, a, x, w, bias, z, y, stream);
    default: return InternalError("depthwise convolution: dtype {} is not a float dtype", ir::DataTypeName(dtype));
  }
}

}  // namespace vigil::cuda
