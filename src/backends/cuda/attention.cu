// ai.vigil.Attention on the GPU (attention.h; the op is specified with the
// graph pass that writes it). Q, K and V are read in place from the packed
// QKV tensor through per-layout strides and Y is written in place, so the
// transposes, gathers, two batched products and the Softmax of the unfused
// chain become one kernel that never stores the [S, S] scores.
//
// float16 / bfloat16 run attention_mma.cu's FlashAttention-2-style kernel
// (mma.sync, everything per row in registers) wherever it applies: head
// sizes 16..128 with 16-byte aligned rows. Otherwise, or with the
// environment variable VIGIL_ATTENTION_KERNEL=wmma (for comparisons), they
// run the wmma kernel below; VIGIL_ATTENTION_KERNEL=mma makes a case the mma
// kernel cannot take an Unsupported error instead (tests use it to know
// which kernel ran).
//
// The wmma kernel: one block of 4 warps takes 64 query rows of one
// (batch, head) and walks the keys 64 at a time (flash attention's one pass
// with an online softmax). Each warp owns 16 query rows: tensor cores (wmma
// 16x16x16, float accumulators) give its 16x64 score tile; the softmax runs
// in float on that tile (running max m and sum l per row), P is rounded to
// the input dtype, and P.V goes back through the tensor cores into the
// warp's float output rows in shared memory, rescaled by exp(m_old - m_new)
// first. Y = O / l at the end, rounded once. K and V tiles arrive by
// asynchronous copies (sm_80+), each overlapping half of a step's math.
//
// float32: attention_tf32.cu's kernel on TF32 tensor cores where the
// options allow TF32 or 3xTF32; else a simple CUDA-core kernel, one warp
// per query row (speed is not a goal there: the session keeps such float32
// chains unfused, AttentionWorthIt).
#include "backends/cuda/attention.h"

#include <mma.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "backends/cuda/cuda_kernel.h"
#include "backends/cuda/shared_memory_optin.h"
#include "backends/cuda/device_common.cuh"
#include "ir/fuse_attention.h"
#include "ir/layout_nhwc.h"  // kVigilDomain
#include "ops/attention_params.h"  // AttentionMaskStrides

namespace vigil::cuda {
namespace {

namespace wmma = nvcuda::wmma;

// --- tensor-core kernel (float16, bfloat16) -----------------------------------

constexpr int kTileRows = 64;  // query rows per block, and key rows per step
constexpr int kWarps = 4;      // each owns 16 query rows
constexpr int kThreads = 32 * kWarps;
constexpr int kFrag = 16;      // wmma tile edge

// Shared-memory layout of one block, in bytes from the base. Rows are padded
// (8 elements of T, 4 floats) so that the 16 rows a wmma load reads fall in
// different banks; every region and every 16-row fragment stays 32-byte
// aligned, as wmma loads and stores require.
template <int D>
struct TileLayout {
  static constexpr int kLdT = D + 8;                // Q, K, V rows (T)
  static constexpr int kLdS = kTileRows + 4;        // score rows (float)
  static constexpr int kLdP = kTileRows + 8;        // probability rows (T)
  static constexpr int kLdO = D + 4;                // output rows (float)
  static constexpr size_t kTileBytes = size_t{kTileRows} * kLdT * 2;
  static constexpr size_t kQ = 0;
  static constexpr size_t kK = kQ + kTileBytes;
  static constexpr size_t kV = kK + kTileBytes;
  static constexpr size_t kS = kV + kTileBytes;
  static constexpr size_t kP = kS + size_t{kTileRows} * kLdS * 4;
  static constexpr size_t kO = kP + size_t{kTileRows} * kLdP * 2;
  static constexpr size_t kRowScale = kO + size_t{kTileRows} * kLdO * 4;  // one float per row
  static constexpr size_t kBytes = kRowScale + kTileRows * 4;
  static_assert(D % kFrag == 0 && D <= 128, "head size must be a multiple of 16, at most 128");
  static_assert(kK % 128 == 0 && kS % 128 == 0 && kP % 128 == 0 && kO % 128 == 0 && kRowScale % 128 == 0);
};

// Rows [row0, row0 + 64) of one [S, D] matrix (rows `row_stride` apart,
// columns contiguous) into shared memory (rows `ld` apart); rows at or past
// `rows` become zeros, so that padded keys add 0 * 0 to P.V. `vec`: the
// source rows are 16-byte aligned, so whole 16-byte chunks are copied.
template <typename T, int D>
__device__ __forceinline__ void LoadTile(T* dst, int ld, const T* __restrict__ src, int64_t row_stride, int64_t row0,
                                         int64_t rows, bool vec) {
  if (vec) {
    constexpr int kPer = 16 / sizeof(T);
    constexpr int kChunks = D / kPer;
    for (int i = threadIdx.x; i < kTileRows * kChunks; i += kThreads) {
      const int r = i / kChunks, c = (i % kChunks) * kPer;
      int4 v = make_int4(0, 0, 0, 0);
      if (row0 + r < rows) v = *reinterpret_cast<const int4*>(src + (row0 + r) * row_stride + c);
      *reinterpret_cast<int4*>(dst + r * ld + c) = v;
    }
  } else {
    for (int i = threadIdx.x; i < kTileRows * D; i += kThreads) {
      const int r = i / D, c = i % D;
      dst[r * ld + c] = row0 + r < rows ? src[(row0 + r) * row_stride + c] : FromFloat<T>(0.0f);
    }
  }
}

// The same tile without waiting: with `vec` (sm_80+), each 16-byte chunk is
// an asynchronous copy (cp.async, L2 only: the other query tiles of this
// head read the same keys), waited for by WaitCopies; rows past `rows` are
// zeroed with plain stores. Either way the tile is complete for the block
// after WaitCopies and a barrier.
template <typename T, int D>
__device__ __forceinline__ void IssueTile(T* dst, const T* __restrict__ src, int64_t row_stride, int64_t row0,
                                          int64_t rows, bool vec) {
  constexpr int kLd = TileLayout<D>::kLdT;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  if (vec) {
    constexpr int kPer = 16 / sizeof(T);
    constexpr int kChunks = D / kPer;
    for (int i = threadIdx.x; i < kTileRows * kChunks; i += kThreads) {
      const int r = i / kChunks, c = (i % kChunks) * kPer;
      T* d = dst + r * kLd + c;
      if (row0 + r < rows) {
        const unsigned shared = static_cast<unsigned>(__cvta_generic_to_shared(d));
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(shared), "l"(src + (row0 + r) * row_stride + c)
                     : "memory");
      } else {
        *reinterpret_cast<int4*>(d) = make_int4(0, 0, 0, 0);
      }
    }
    asm volatile("cp.async.commit_group;\n" ::: "memory");
    return;
  }
#endif
  LoadTile<T, D>(dst, kLd, src, row_stride, row0, rows, vec);
}

// Waits for this thread's asynchronous copies (IssueTile).
__device__ __forceinline__ void WaitCopies() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group 0;\n" ::: "memory");
#endif
}

__device__ __forceinline__ float WarpMax(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
__device__ __forceinline__ float WarpSum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// Scores of the warp's 16 query rows against the first `key_tiles` * 16 keys
// of the tile, as float into its rows of `ss`.
template <typename T, int D>
__device__ __forceinline__ void WarpScores(const wmma::fragment<wmma::matrix_a, kFrag, kFrag, kFrag, T, wmma::row_major> (&qf)[D / kFrag],
                                           const T* ks, float* ss, int key_tiles) {
  using L = TileLayout<D>;
  for (int n = 0; n < key_tiles; ++n) {
    wmma::fragment<wmma::accumulator, kFrag, kFrag, kFrag, float> sf;
    wmma::fill_fragment(sf, 0.0f);
#pragma unroll
    for (int k = 0; k < D / kFrag; ++k) {
      // K^T as a column-major [D, 64] matrix is K's rows read as columns.
      wmma::fragment<wmma::matrix_b, kFrag, kFrag, kFrag, T, wmma::col_major> kf;
      wmma::load_matrix_sync(kf, ks + n * kFrag * L::kLdT + k * kFrag, L::kLdT);
      wmma::mma_sync(sf, qf[k], kf, sf);
    }
    wmma::store_matrix_sync(ss + n * kFrag, sf, L::kLdS, wmma::mem_row_major);
  }
}

// The online-softmax step of the warp's 16 rows over one key tile with
// `valid` real keys. Two lanes per row: lane 2r + half takes columns
// [32 * half, 32 * half + 32) of row r, so a row needs one shuffle, not ten.
// Each lane starts its columns at its own rotation (r + 16 * half), which
// puts the 32 lanes' reads in 32 different banks (rows are 68 floats apart).
// Updates the row's running max m (log2 domain) and the lane's share of the
// running sum l, writes P (rounded to T) for the first `cols` columns and the
// row's factor exp(m_old - m_new) into `row_scale`.
// `mrow`, with a mask, points at M of the row's first column of this tile
// (null for rows past S and without a mask); `mask_j` is M's column stride.
template <typename T, int D>
__device__ __forceinline__ void WarpSoftmax(const float* ss, T* ps, float* row_scale, float& m, float& l, int valid,
                                            int cols, float scale_log2, const T* mrow, int64_t mask_j) {
  using L = TileLayout<D>;
  constexpr float kLog2e = 1.4426950408889634f;
  const int lane = threadIdx.x % 32;
  const int r = lane / 2, first = (lane % 2) * 32, rot = r + (lane % 2) * 16;
  const float* srow = ss + r * L::kLdS + first;
  T* prow = ps + r * L::kLdP + first;
  // Keys past S are -inf, so they get probability 0. The row is read twice
  // (max, then exponentials) and the loops unrolled only 8 deep: holding the
  // row, or all 32 addresses, in registers pushed ptxas past the 168
  // registers that 3 blocks per SM allow (spills).
  auto score = [&](int c) {
    if (first + c >= valid) return -INFINITY;
    const float x = srow[c] * scale_log2;
    return mrow ? fmaf(kLog2e, ToFloat(mrow[(first + c) * mask_j]), x) : x;
  };
  float mx = -INFINITY;
#pragma unroll 8
  for (int j = 0; j < 32; ++j) mx = fmaxf(mx, score((j + rot) % 32));
  mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
  // valid >= 1, so without a mask m_new is finite (for finite inputs) and
  // the first tile's factor is exp2(-inf) = 0; a masked row may stay -inf,
  // and the guard keeps inf - inf = NaN out of it.
  const float m_new = fmaxf(m, mx);
  const float ref = m_new == -INFINITY ? 0.0f : m_new;
  const float alpha = exp2f(m - ref);
  float sum = 0.0f;
#pragma unroll 8
  for (int j = 0; j < 32; ++j) {
    const int c = (j + rot) % 32;
    const float p = exp2f(score(c) - ref);
    sum += p;
    if (first + c < cols) prow[c] = FromFloat<T>(p);
  }
  m = m_new;
  l = l * alpha + sum;
  if (first == 0) row_scale[r] = alpha;
}

// O = O * row_scale + P.V for the warp's 16 rows (O float in shared memory).
template <typename T, int D>
__device__ __forceinline__ void WarpAccumulate(const T* ps, const T* vs, float* os, const float* row_scale,
                                               int key_tiles) {
  using L = TileLayout<D>;
  const int lane = threadIdx.x % 32;
  for (int i = lane; i < kFrag * D; i += 32) os[(i / D) * L::kLdO + i % D] *= row_scale[i / D];
  __syncwarp();
  // P's fragments are loaded once and used for every 16 output columns.
  wmma::fragment<wmma::matrix_a, kFrag, kFrag, kFrag, T, wmma::row_major> pf[kTileRows / kFrag];
#pragma unroll
  for (int k = 0; k < kTileRows / kFrag; ++k) {
    if (k < key_tiles) wmma::load_matrix_sync(pf[k], ps + k * kFrag, L::kLdP);
  }
#pragma unroll
  for (int n = 0; n < D / kFrag; ++n) {
    wmma::fragment<wmma::accumulator, kFrag, kFrag, kFrag, float> of;
    wmma::load_matrix_sync(of, os + n * kFrag, L::kLdO, wmma::mem_row_major);
#pragma unroll
    for (int k = 0; k < kTileRows / kFrag; ++k) {
      if (k < key_tiles) {
        wmma::fragment<wmma::matrix_b, kFrag, kFrag, kFrag, T, wmma::row_major> vf;
        wmma::load_matrix_sync(vf, vs + k * kFrag * L::kLdT + n * kFrag, L::kLdT);
        wmma::mma_sync(of, pf[k], vf, of);
      }
    }
    wmma::store_matrix_sync(os + n * kFrag, of, L::kLdO, wmma::mem_row_major);
  }
}

// Blocks per SM the shared memory allows on sm_80/sm_90 (about 70 KB a
// block for D = 64, 110 KB for D = 128); registers are capped to match, so
// that they do not become the tighter limit.
constexpr int BlocksPerSm(int d) { return d <= 64 ? 3 : 2; }

// Grid: x = batch * heads, y = query tiles of 64 rows.
template <typename T, int D>
__global__ void __launch_bounds__(kThreads, BlocksPerSm(D)) AttentionTensorCoreKernel(const T* __restrict__ qkv,
                                                                      const T* __restrict__ mask, T* __restrict__ y,
                                                                      AttentionShape a, bool vec) {
  using L = TileLayout<D>;
  extern __shared__ __align__(128) unsigned char smem[];
  T* qs = reinterpret_cast<T*>(smem + L::kQ);
  T* ks = reinterpret_cast<T*>(smem + L::kK);
  T* vs = reinterpret_cast<T*>(smem + L::kV);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int row0 = warp * kFrag;  // the warp's first row in the tile
  float* ss = reinterpret_cast<float*>(smem + L::kS) + row0 * L::kLdS;
  T* ps = reinterpret_cast<T*>(smem + L::kP) + row0 * L::kLdP;
  float* os = reinterpret_cast<float*>(smem + L::kO) + row0 * L::kLdO;
  float* row_scale = reinterpret_cast<float*>(smem + L::kRowScale) + row0;

  const int64_t b = blockIdx.x / a.heads, h = blockIdx.x % a.heads;
  const int64_t q0 = int64_t{blockIdx.y} * kTileRows;
  const T* base = qkv + b * a.in_batch + h * D;

  LoadTile<T, D>(qs, L::kLdT, base, a.in_row, q0, a.seq, vec);
  for (int i = lane; i < kFrag * L::kLdO; i += 32) os[i] = 0.0f;
  IssueTile<T, D>(ks, base + a.embed, a.in_row, 0, a.seq, vec);
  WaitCopies();
  __syncthreads();  // Q and the first K tile are in place

  // Warps whose rows all lie past S (the last tile) only help load.
  const bool active = q0 + row0 < a.seq;
  wmma::fragment<wmma::matrix_a, kFrag, kFrag, kFrag, T, wmma::row_major> qf[D / kFrag];
  if (active) {
#pragma unroll
    for (int k = 0; k < D / kFrag; ++k) wmma::load_matrix_sync(qf[k], qs + row0 * L::kLdT + k * kFrag, L::kLdT);
  }
  // Row lane / 2's running max and this lane's half of its running sum.
  float m = -INFINITY, l = 0.0f;

  // Two barriers per key tile. Each load runs while the other half of the
  // step computes: V during the scores and softmax, the next K during P.V.
  for (int64_t k0 = 0; k0 < a.seq; k0 += kTileRows) {
    // Here K(k0) is in place and no warp reads the V buffer any more.
    IssueTile<T, D>(vs, base + 2 * a.embed, a.in_row, k0, a.seq, vec);
    // Only the 16-key sub-tiles holding real keys are multiplied.
    const int valid = static_cast<int>(a.seq - k0 < kTileRows ? a.seq - k0 : kTileRows);
    const int key_tiles = (valid + kFrag - 1) / kFrag;
    if (active) {
      WarpScores<T, D>(qf, ks, ss, key_tiles);
      __syncwarp();
      const int64_t q_row = q0 + row0 + lane / 2;  // WarpSoftmax's row
      const T* mrow = mask && q_row < a.seq ? mask + b * a.mask_b + h * a.mask_h + q_row * a.mask_i + k0 * a.mask_j
                                            : nullptr;
      WarpSoftmax<T, D>(ss, ps, row_scale, m, l, valid, key_tiles * kFrag, a.scale_log2, mrow, a.mask_j);
      __syncwarp();
    }
    WaitCopies();
    __syncthreads();  // V(k0) is in place; no warp reads K(k0) any more
    if (k0 + kTileRows < a.seq) IssueTile<T, D>(ks, base + a.embed, a.in_row, k0 + kTileRows, a.seq, vec);
    if (active) {
      WarpAccumulate<T, D>(ps, vs, os, row_scale, key_tiles);
      __syncwarp();
    }
    WaitCopies();
    __syncthreads();  // the next K tile is in place; no warp reads V(k0) any more
  }
  if (!active) return;

  const float sum = l + __shfl_xor_sync(0xffffffffu, l, 1);
  // undefined_rows "zero": a row without a positive sum is written as 0.
  // -1 marks such a row (1 / sum is never negative: +inf, NaN or positive).
  if (lane % 2 == 0) row_scale[lane / 2] = a.zero_undefined_rows && !(sum > 0.0f) ? -1.0f : 1.0f / sum;
  __syncwarp();
  T* out = y + b * a.out_batch + h * D;
  for (int i = lane; i < kFrag * D; i += 32) {
    const int r = i / D, c = i % D;
    const int64_t s = q0 + row0 + r;
    const float inv = row_scale[r];
    if (s < a.seq) out[s * a.out_row + c] = FromFloat<T>(inv < 0.0f ? 0.0f : os[r * L::kLdO + c] * inv);
  }
}


template <typename T, int D>
Status LaunchTensorCore(const AttentionShape& a, const T* qkv, const T* mask, T* y, cudaStream_t stream) {
  constexpr size_t kSmem = TileLayout<D>::kBytes;
  static std::atomic<uint64_t> smem_allowed{0};
  auto kernel = AttentionTensorCoreKernel<T, D>;
  VIGIL_RETURN_IF_ERROR(AllowSharedMemory(kernel, kSmem, smem_allowed));
  // 16-byte loads need every row start 16-byte aligned: the base pointer and
  // every stride and offset a multiple of 16 bytes.
  const auto aligned = [](int64_t elements) { return (elements * static_cast<int64_t>(sizeof(T))) % 16 == 0; };
  const bool vec = reinterpret_cast<uintptr_t>(qkv) % 16 == 0 && aligned(a.in_row) && aligned(a.in_batch) &&
                   aligned(a.embed) && aligned(D);
  const dim3 grid(static_cast<unsigned>(a.batch * a.heads), static_cast<unsigned>((a.seq + kTileRows - 1) / kTileRows));
  kernel<<<grid, kThreads, kSmem, stream>>>(qkv, mask, y, a, vec);
  VIGIL_CHECK_LAUNCH("AttentionTensorCoreKernel");
  return Status::Ok();
}

// --- CUDA-core kernel (float32) --------------------------------------------------

constexpr int kRowWarps = 4;
constexpr int kMaxHeadSize = 128;

// One warp per query row (rows linear over batch, head, sequence), keys 32
// at a time: lane j scores key t0 + j with a full dot product, then the warp
// folds the 32 probabilities into its running max and sum and into the
// output columns each lane owns (lane, lane + 32, ...).
template <typename T>
__global__ void __launch_bounds__(32 * kRowWarps) AttentionRowKernel(const T* __restrict__ qkv,
                                                                     const T* __restrict__ mask, T* __restrict__ y,
                                                                     AttentionShape a) {
  __shared__ float q_shared[kRowWarps][kMaxHeadSize];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int64_t row = int64_t{blockIdx.x} * kRowWarps + warp;
  if (row >= a.batch * a.heads * a.seq) return;
  const int64_t s = row % a.seq, bh = row / a.seq;
  const int64_t b = bh / a.heads, h = bh % a.heads;
  const int d = static_cast<int>(a.head_size);
  const T* base = qkv + b * a.in_batch + h * d;
  float* q = q_shared[warp];
  for (int i = lane; i < d; i += 32) q[i] = ToFloat(base[s * a.in_row + i]);
  __syncwarp();

  float m = -INFINITY, l = 0.0f;
  float o[kMaxHeadSize / 32] = {};
  for (int64_t t0 = 0; t0 < a.seq; t0 += 32) {
    const int64_t t = t0 + lane;
    float x = -INFINITY;
    if (t < a.seq) {
      const T* k = base + a.embed + t * a.in_row;
      float dot = 0.0f;
      for (int j = 0; j < d; ++j) dot += q[j] * ToFloat(k[j]);
      x = dot * a.scale;
      if (mask) x += ToFloat(mask[b * a.mask_b + h * a.mask_h + s * a.mask_i + t * a.mask_j]);
    }
    const float m_new = fmaxf(m, WarpMax(x));
    const float ref = m_new == -INFINITY ? 0.0f : m_new;  // a masked row may stay -inf
    const float alpha = expf(m - ref);
    const float p = expf(x - ref);
    l = l * alpha + WarpSum(p);
    m = m_new;
#pragma unroll
    for (int i = 0; i < kMaxHeadSize / 32; ++i) o[i] *= alpha;
    const int n = static_cast<int>(a.seq - t0 < 32 ? a.seq - t0 : 32);
    for (int j = 0; j < n; ++j) {
      const float pj = __shfl_sync(0xffffffffu, p, j);
      const T* v = base + 2 * a.embed + (t0 + j) * a.in_row;
#pragma unroll
      for (int i = 0; i < kMaxHeadSize / 32; ++i) {
        if (lane + 32 * i < d) o[i] += pj * ToFloat(v[lane + 32 * i]);
      }
    }
  }
  T* out = y + b * a.out_batch + s * a.out_row + h * d;
#pragma unroll
  for (int i = 0; i < kMaxHeadSize / 32; ++i) {
    if (lane + 32 * i < d) out[lane + 32 * i] = FromFloat<T>(a.zero_undefined_rows && !(l > 0.0f) ? 0.0f : o[i] / l);
  }
}

template <typename T>
Status LaunchRows(const AttentionShape& a, const T* qkv, const T* mask, T* y, cudaStream_t stream) {
  const int64_t blocks = (a.batch * a.heads * a.seq + kRowWarps - 1) / kRowWarps;
  AttentionRowKernel<T><<<static_cast<unsigned>(blocks), 32 * kRowWarps, 0, stream>>>(qkv, mask, y, a);
  VIGIL_CHECK_LAUNCH("AttentionRowKernel");
  return Status::Ok();
}

// --- the op -------------------------------------------------------------------

bool SupportedHeadSize(int64_t d) { return d == 16 || d == 32 || d == 64 || d == 128; }

std::string HeadSizeWhyNot(int64_t d) { return fmt::format("head size D={} (supported: 16, 32, 64, 128)", d); }

// The shape and strides of the node's input, or an error naming what is wrong.
Result<AttentionShape> ReadShape(const CudaKernelContext& ctx, const runtime::Tensor& x) {
  const ir::Node& node = ctx.node();
  if (x.rank() != 3) return ctx.Fail("input 0 (QKV) has rank {}, Attention takes rank 3", x.rank());
  if (!ops::HasAttr(node, "num_heads")) return ctx.Fail("attribute num_heads is missing");
  if (!ops::HasAttr(node, "scale")) return ctx.Fail("attribute scale is missing");
  VIGIL_ASSIGN_OR_RETURN(int64_t heads, ops::IntAttr(node, "num_heads", 0));
  VIGIL_ASSIGN_OR_RETURN(float scale, ops::FloatAttr(node, "scale", 0.0f));
  VIGIL_ASSIGN_OR_RETURN(std::string layout, ops::StringAttr(node, "layout", "sbe"));
  if (layout != "sbe" && layout != "bse") return ctx.Fail("layout \"{}\" (expected \"sbe\" or \"bse\")", layout);
  VIGIL_ASSIGN_OR_RETURN(std::string rows, ops::StringAttr(node, ir::kAttentionUndefinedRows, "nan"));
  if (rows != "nan" && rows != "zero") return ctx.Fail("undefined_rows \"{}\" (expected \"nan\" or \"zero\")", rows);
  const int64_t three_e = x.dim(2);
  if (heads < 1) return ctx.Fail("num_heads is {}, must be at least 1", heads);
  if (three_e % 3 != 0 || (three_e / 3) % heads != 0) {
    return ctx.Fail("the last dim of QKV ({}) is not 3 * E with E divisible by num_heads ({})", three_e, heads);
  }
  AttentionShape a;
  const bool sbe = layout == "sbe";
  a.sbe = sbe;
  a.seq = sbe ? x.dim(0) : x.dim(1);
  a.batch = sbe ? x.dim(1) : x.dim(0);
  a.heads = heads;
  a.embed = three_e / 3;
  a.head_size = a.embed / heads;
  a.in_row = sbe ? a.batch * three_e : three_e;
  a.in_batch = sbe ? three_e : a.seq * three_e;
  a.out_row = sbe ? a.batch * a.embed : a.embed;
  a.out_batch = sbe ? a.embed : a.seq * a.embed;
  a.scale = scale;
  a.scale_log2 = static_cast<float>(static_cast<double>(scale) * 1.4426950408889634);
  a.zero_undefined_rows = rows == "zero";
  if (const runtime::Tensor* m = ctx.input(1)) {
    VIGIL_ASSIGN_OR_RETURN(auto strides, ops::AttentionMaskStrides(node, m->shape(), m->dtype(), x.dtype(), a.batch,
                                                                   a.heads, a.seq, m->Describe()));
    a.mask_b = strides[0];
    a.mask_h = strides[1];
    a.mask_i = strides[2];
    a.mask_j = strides[3];
  }
  return a;
}

template <typename T>
Status LaunchFor(const AttentionShape& a, const void* qkv_bytes, const void* mask_bytes, void* y_bytes,
                 cudaStream_t stream) {
  const T* qkv = static_cast<const T*>(qkv_bytes);
  const T* mask = static_cast<const T*>(mask_bytes);
  T* y = static_cast<T*>(y_bytes);
  if constexpr (std::is_same_v<T, float>) {
    return LaunchRows<T>(a, qkv, mask, y, stream);
  } else {
    switch (a.head_size) {
      case 16: return LaunchTensorCore<T, 16>(a, qkv, mask, y, stream);
      case 32: return LaunchTensorCore<T, 32>(a, qkv, mask, y, stream);
      case 64: return LaunchTensorCore<T, 64>(a, qkv, mask, y, stream);
      default: return LaunchTensorCore<T, 128>(a, qkv, mask, y, stream);
    }
  }
}

// Whether the options let float32 attention use TF32 tensor cores (one
// product, or three of split operands); the fusion is worth it only then.
bool Float32OnTensorCores(const CudaOptions& o) { return o.allow_tf32 || o.allow_tf32x3; }

Status AttentionKernel(CudaKernelContext& ctx) {
  const runtime::Tensor* x = ctx.input(0);
  if (!x) return ctx.Fail("input 0 (QKV) is missing");
  VIGIL_ASSIGN_OR_RETURN(AttentionShape a, ReadShape(ctx, *x));
  std::vector<int64_t> out_shape = a.sbe ? std::vector<int64_t>{a.seq, a.batch, a.embed}
                                       : std::vector<int64_t>{a.batch, a.seq, a.embed};
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * y, ctx.Output(0, x->dtype(), std::move(out_shape)));
  if (y->element_count() == 0) return Status::Ok();
  if (!SupportedHeadSize(a.head_size)) return ctx.Unsupported("{}", HeadSizeWhyNot(a.head_size));
  // Grid limits: batch * heads blocks on x, query tiles on y (at most 65535).
  if (a.batch * a.heads > INT32_MAX || (a.seq + kTileRows - 1) / kTileRows > 65535 ||
      (a.batch * a.heads * a.seq + kRowWarps - 1) / kRowWarps > INT32_MAX) {
    return ctx.Unsupported("batch {} x heads {} x sequence {} exceeds the kernel's grid", a.batch, a.heads, a.seq);
  }
  const void* mask = ctx.input(1) ? ctx.input(1)->raw_data() : nullptr;
  const char* env = std::getenv("VIGIL_ATTENTION_KERNEL");
  const std::string_view choice = env ? env : "";
  if (x->dtype() == ir::DataType::kFloat32) {
    // TF32 tensor cores where the options allow them (attention_tf32.cu),
    // else, or with VIGIL_ATTENTION_KERNEL=rows, the CUDA-core kernel below;
    // =tf32 makes a case the tf32 kernel cannot take an Unsupported error.
    const CudaOptions& o = ctx.options();
    std::string why = Float32OnTensorCores(o) ? "" : "allow_tf32 and allow_tf32x3 are both off";
    if (choice != "rows") {
      if (why.empty()) why = AttentionTf32WhyNot(a, x->raw_data(), mask, y->raw_data());
      if (why.empty()) {
        return LaunchAttentionTf32(a, /*split=*/!o.allow_tf32, x->raw_data(), mask, y->raw_data(), ctx.stream());
      }
      if (choice == "tf32") return ctx.Unsupported("VIGIL_ATTENTION_KERNEL=tf32, but the tf32 kernel cannot run: {}", why);
    }
  } else if (choice != "wmma") {
    const std::string why = AttentionMmaWhyNot(a, x->dtype(), x->raw_data(), mask, y->raw_data());
    if (why.empty()) return LaunchAttentionMma(a, x->dtype(), x->raw_data(), mask, y->raw_data(), ctx.stream());
    if (choice == "mma") return ctx.Unsupported("VIGIL_ATTENTION_KERNEL=mma, but the mma kernel cannot run: {}", why);
  }
  switch (x->dtype()) {
    case ir::DataType::kFloat32: return LaunchFor<float>(a, x->raw_data(), mask, y->raw_data(), ctx.stream());
    case ir::DataType::kFloat16: return LaunchFor<__half>(a, x->raw_data(), mask, y->raw_data(), ctx.stream());
    case ir::DataType::kBfloat16:
      return LaunchFor<__nv_bfloat16>(a, x->raw_data(), mask, y->raw_data(), ctx.stream());
    default: return ctx.Unsupported("dtype {} of input 0", ir::DataTypeName(x->dtype()));
  }
}

bool SupportsAttention(const ir::Node& node, const runtime::NodeTypes& types, std::string* why_not) {
  const ir::DataType t = InputDtype(types, 0);
  if (!IsCudaFloat(t)) {
    if (why_not) {
      *why_not = t == ir::DataType::kUndefined ? std::string("the dtype of input 0 is not known at load time")
                                               : fmt::format("dtype {} of input 0", ir::DataTypeName(t));
    }
    return false;
  }
  if (types.inputs.size() > 1 && types.inputs[1] && types.inputs[1]->kind == ir::TypeInfo::Kind::kTensor &&
      types.inputs[1]->elem_type != t) {
    if (why_not) *why_not = fmt::format("the mask's dtype {} is not QKV's", ir::DataTypeName(types.inputs[1]->elem_type));
    return false;
  }
  const ir::TypeInfo* type = types.inputs[0];
  if (!type->shape.rank_known) return true;  // checked again at run time
  if (type->shape.dims.size() != 3) {
    if (why_not) *why_not = fmt::format("rank {} of input 0 (Attention takes rank 3)", type->shape.dims.size());
    return false;
  }
  const ir::Dim& last = type->shape.dims[2];
  auto heads = ops::IntAttr(node, "num_heads", 0);
  if (!last.is_known() || !heads.ok() || *heads < 1) return true;  // the kernel reports these at run time
  const int64_t d = *last.value / 3 / *heads;
  if (*last.value % 3 == 0 && (*last.value / 3) % *heads == 0 && !SupportedHeadSize(d)) {
    if (why_not) *why_not = HeadSizeWhyNot(d);
    return false;
  }
  return true;
}

// float32 attention is fused only onto TF32 tensor cores: without them the
// unfused chain's cuBLASLt products beat a fused CUDA-core kernel (five
// versions of one were measured; bench/results/tf32x3_h200.md).
bool AttentionWorthIt(const CudaOptions& options, const runtime::NodeTypes& types, std::string* why_not) {
  if (InputDtype(types, 0) != ir::DataType::kFloat32 || Float32OnTensorCores(options)) return true;
  if (why_not) {
    *why_not = "float32 attention runs unfused without TF32 tensor cores (allow_tf32 and allow_tf32x3 are off)";
  }
  return false;
}

const CudaKernelDef kAttentionKernels[] = {
    {ir::kVigilDomain, ir::kAttentionOp, 1, kLatest, AttentionKernel, SupportsAttention, 0, AttentionWorthIt},
};

}  // namespace

std::span<const CudaKernelDef> AttentionCudaKernels() { return kAttentionKernels; }

}  // namespace vigil::cuda
