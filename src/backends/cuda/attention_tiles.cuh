// What ai.vigil.Attention's two tensor-core kernels share: attention_mma.cu
// (float16 / bfloat16, mma.sync m16n8k16) and attention_tf32.cu (float32,
// mma.sync m16n8k8 on TF32). Both give each warp 16 query rows of one
// (batch, head), walk the keys kKeys at a time through double-buffered
// cp.async tiles, and hold the scores in mma's float accumulator layout
// (thread `lane`: rows lane/4 and lane/4 + 8, columns 2*(lane%4) + {0, 1}
// of each n8 tile), so the mask, the online softmax and the launch shapes
// below serve both.
#pragma once

#include <algorithm>
#include <atomic>
#include <charconv>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "backends/cuda/attention.h"
#include "backends/cuda/cuda_kernel.h"
#include "backends/cuda/device_common.cuh"
#include "backends/cuda/shared_memory_optin.h"

namespace vigil::cuda::attention_tiles {

constexpr int kKeys = 64;  // keys per step (one shared K or V tile)

// --- PTX wrappers (sm_80+; the module is built for 80, 86 and 90) -------------

__device__ __forceinline__ unsigned SharedAddress(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// 16 bytes global -> shared, asynchronously; `bytes` = 0 writes zeros and
// reads nothing (rows past S).
__device__ __forceinline__ void CopyAsync16(void* dst, const void* src, int bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(SharedAddress(dst)), "l"(src), "r"(bytes)
               : "memory");
}
__device__ __forceinline__ void CommitCopies() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int kPending>
__device__ __forceinline__ void WaitCopies() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending) : "memory");
}

// 2^x by the SFU alone (ex2.approx.ftz: relative error about 2^-22, results
// below 2^-126 flushed to 0, exp2(-inf) = 0). exp2f adds four instructions
// around it to keep subnormal results, which a softmax weight never needs.
__device__ __forceinline__ float Exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

// Rows [row0, row0 + count) of an [S, D] matrix (rows `stride` apart) into
// shared memory rows kLd elements apart, 16-byte chunks spread over the
// block's `threads` threads; rows at or past `rows` become zeros. Part of the caller's current copy
// group. Every thread of the block calls it, with the same arguments.
template <typename T, int D, int kLd>
__device__ __forceinline__ void IssueRows(T* dst, const T* __restrict__ src, int64_t stride, int row0, int count,
                                          int rows, int threads) {
  constexpr int kPer = 16 / static_cast<int>(sizeof(T));  // elements per chunk
  constexpr int kChunks = D / kPer;  // divides 32, so every block size
  const int step = threads / kChunks;  // rows apart of a thread's chunks
  const int c = (static_cast<int>(threadIdx.x) % kChunks) * kPer;
  // Not unrolled: unrolled, ptxas keeps every iteration's row offset in
  // registers across the key loop.
#pragma unroll 1
  for (int r = static_cast<int>(threadIdx.x) / kChunks; r < count; r += step) {
    const bool in = row0 + r < rows;
    CopyAsync16(dst + r * kLd + c, in ? src + int64_t{row0 + r} * stride + c : src, in ? 16 : 0);
  }
}

// ldmatrix x4: four 8x8 matrices of 16-bit elements (8 rows of 16 bytes),
// lane i giving the address of row i % 8 of matrix i / 8; lane l receives
// 32-bit word l % 4 of row l / 4 of each. For 32-bit elements that is the
// (g, t) element of four 8x4 blocks: TF32 A and B fragments too.
__device__ __forceinline__ void LoadMatrix4(uint32_t (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(SharedAddress(p)));
}

// With a mask: the scores into the log2 domain with the mask added,
// s = scale * log2(e) * s + log2(e) * M[row, col0 + col], for the thread's
// accumulator elements (rows row0 + lane/4 and + 8, columns as Softmax
// says); M is not read for rows at or past S nor columns at or past `valid`
// (Softmax masks those). `mask` points at this (batch, head)'s M. Its two
// row pointers and the column step are set up once per tile, not per
// element (which took 15-20 instructions a load).
template <typename T>
__device__ __forceinline__ void AddMask(float (&s)[kKeys / 8][4], const T* __restrict__ mask, const AttentionShape& a,
                                        int row0, int col0, int valid, int seq, int lane) {
  constexpr float kLog2e = 1.4426950408889634f;
  const int64_t mj = a.mask_j;
  const int c0 = 2 * (lane % 4);
  const int r0 = row0 + lane / 4;
  const T* rows[2] = {mask + int64_t{r0} * a.mask_i + (col0 + c0) * mj,
                      mask + int64_t{r0 + 8} * a.mask_i + (col0 + c0) * mj};
  const bool in[2] = {r0 < seq, r0 + 8 < seq};
#pragma unroll
  for (int j = 0; j < kKeys / 8; ++j) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int c = j * 8 + c0 + e % 2;
      const float mv = in[e / 2] && c < valid ? ToFloat(rows[e / 2][(j * 8 + e % 2) * mj]) : 0.0f;
      s[j][e] = fmaf(s[j][e], a.scale_log2, kLog2e * mv);
    }
  }
}

// The online-softmax step: masks the scores (keys >= `valid` to -inf),
// updates the running max m (log2 domain, scale included) and this thread's
// partial sums l of its two rows, rescales O, and leaves P = exp2(scale *
// log2(e) * score - m) in s.
template <int D>
__device__ __forceinline__ void Softmax(float (&s)[kKeys / 8][4], float (&o)[D / 8][4], float (&m)[2], float (&l)[2],
                                        int valid, float scale_log2, int lane) {
  // The scale is positive (AttentionMmaWhyNot), so the max of the scaled
  // scores is the scaled max and the scale goes into the exponent's FFMA
  // instead of a multiply per score.
  const float sc = scale_log2;
  if (valid < kKeys) {  // the last tile only
#pragma unroll
    for (int j = 0; j < kKeys / 8; ++j) {
      const int col = j * 8 + 2 * (lane % 4);
      if (col >= valid) s[j][0] = s[j][2] = -INFINITY;
      if (col + 1 >= valid) s[j][1] = s[j][3] = -INFINITY;
    }
  }
  float mx[2] = {-INFINITY, -INFINITY};
#pragma unroll
  for (int j = 0; j < kKeys / 8; ++j) {
    mx[0] = fmaxf(mx[0], fmaxf(s[j][0], s[j][1]));
    mx[1] = fmaxf(mx[1], fmaxf(s[j][2], s[j][3]));
  }
  float alpha[2], sum[2] = {0.0f, 0.0f};
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 1));
    mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 2));
    const float m_new = fmaxf(m[r], mx[r] * sc);
    // Every tile holds a real key, so m_new is finite for finite inputs; the
    // guard keeps an all -inf row from producing inf - inf = NaN. The first
    // tile's factor is exp2(-inf) = 0.
    const float ref = m_new == -INFINITY ? 0.0f : m_new;
    alpha[r] = Exp2(m[r] - ref);
    m[r] = m_new;
    mx[r] = ref;
  }
#pragma unroll
  for (int j = 0; j < kKeys / 8; ++j) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      s[j][e] = Exp2(fmaf(s[j][e], sc, -mx[e / 2]));
      sum[e / 2] += s[j][e];
    }
  }
#pragma unroll
  for (int r = 0; r < 2; ++r) l[r] = l[r] * alpha[r] + sum[r];
#pragma unroll
  for (int n = 0; n < D / 8; ++n) {
    o[n][0] *= alpha[0];
    o[n][1] *= alpha[0];
    o[n][2] *= alpha[1];
    o[n][3] *= alpha[1];
  }
}

// The end of a warp's rows: this thread's two row sums l completed over its
// quad, and per row 1 / l and whether the row is written as 0 (with
// `zero_undefined`: l not positive, every score -inf, or NaN).
__device__ __forceinline__ void FinishRows(float (&l)[2], bool zero_undefined, float (&inv)[2], bool (&zero)[2]) {
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    l[r] += __shfl_xor_sync(0xffffffffu, l[r], 1);
    l[r] += __shfl_xor_sync(0xffffffffu, l[r], 2);
    inv[r] = 1.0f / l[r];
    zero[r] = zero_undefined && !(l[r] > 0.0f);
  }
}

// The warp's 16 staged rows (`qs`, kLd elements apart) to Y in whole
// 16-byte chunks; rows at or past `rows` are not written.
template <typename T, int D, int kLd>
__device__ __forceinline__ void CopyRowsOut(const T* qs, T* __restrict__ out, int64_t out_row, int row0, int rows,
                                            int lane) {
  __syncwarp();
  constexpr int kPer = 16 / static_cast<int>(sizeof(T));
  constexpr int kChunks = D / kPer;
#pragma unroll
  for (int i = lane; i < 16 * kChunks; i += 32) {
    const int r = i / kChunks, c = (i % kChunks) * kPer;
    if (row0 + r < rows) {
      *reinterpret_cast<int4*>(out + int64_t{row0 + r} * out_row + c) =
          *reinterpret_cast<const int4*>(qs + r * kLd + c);
    }
  }
}

// --- launch shapes ------------------------------------------------------------------

// How a launch covers the query rows: blocks of `warps` warps (16 rows
// each), `query_blocks` of them per (batch, head); `whole` picks the
// whole-sequence kernel instance, else the one of exactly `warps` warps.
struct MmaShape {
  int warps = 4;
  int64_t query_blocks = 1;
  bool whole = false;
};

// One block per (batch, head) holding all ceil(S / 16) row tiles when they
// fit in `max_warps` warps, so K and V are read once per (batch, head) and
// at most 15 padding rows are computed (S = 197: 13 warps, 208 rows; the
// 4-warp tiles compute 256). Longer S: the fewest query blocks that fit, the
// tiles spread evenly over them (S = 300, 19 tiles: 2 x 10 warps, not
// 16 + 3).
inline MmaShape WholeShape(const AttentionShape& a, int max_warps) {
  const int64_t tiles = (a.seq + 15) / 16;
  const int64_t query_blocks = (tiles + max_warps - 1) / max_warps;
  return {static_cast<int>((tiles + query_blocks - 1) / query_blocks), query_blocks, true};
}

// The current device's SM count, asked once per device.
inline Result<int> SmCount() {
  static std::atomic<int> cached[64] = {};
  int device = 0;
  VIGIL_CUDA_CALL(cudaGetDevice(&device));
  if (device >= 0 && device < 64) {
    if (const int n = cached[device].load(std::memory_order_relaxed); n > 0) return n;
  }
  int n = 0;
  VIGIL_CUDA_CALL(cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, device));
  if (device >= 0 && device < 64) cached[device].store(n, std::memory_order_relaxed);
  return n < 1 ? 1 : n;
}

// Tiles of 4 warps (64 query rows) when that grid has at least two blocks
// per SM, else fewer rows per block so that more SMs get work (small batch).
inline MmaShape TileShape(const AttentionShape& a, int sms) {
  const auto query_blocks = [&](int warps) { return (a.seq + 16 * warps - 1) / (16 * warps); };
  const auto blocks = [&](int warps) { return a.batch * a.heads * query_blocks(warps); };
  const auto fits = [&](int warps) { return blocks(warps) <= INT32_MAX; };  // a 1-D grid (Launch)
  int warps = 1;
  if (blocks(4) >= 2 * int64_t{sms} || !fits(2)) {
    warps = 4;
  } else if (blocks(2) >= 2 * int64_t{sms} || !fits(1)) {
    warps = 2;
  }
  return {warps, query_blocks(warps), false};
}

// Whole-sequence blocks hold at most this many warps by default: ptxas gives
// D = 64 ~128 registers a thread, so a 13-warp block (S = 197) fills an
// SM's 64K registers alone, while 8 leave room for two blocks.
constexpr int kDefaultWholeCap = 8;

// The rule: the whole-sequence shape with blocks of at most 8 warps (S = 197:
// two query blocks of 7 warps per (batch, head)). Measured on an H100 with
// ViT-B/16 float16 (`vigil bench` p50, the whole model; 2026-11-22), against
// uncapped whole blocks (13 warps) and the 1/2/4-warp tiles:
//   batch  1: 0.570 ms (tiles 0.614, 13 warps 0.620)
//   batch  2: 0.583 ms (tiles 0.635)
//   batch  8: 0.950 ms (tiles 0.938-0.953: within the noise)
//   batch 64: 5.721 ms (13 warps 5.818-5.831, tiles 5.777)
// so one shape for every grid. The tiles stay for the environment switch
// and for grids of over 2^31 - 1 whole blocks.
// The environment variable VIGIL_ATTENTION_SHAPE=whole or =tiles forces
// one (=whole: blocks up to the instance's 16 warps, 8 for D = 128); =whole:N
// caps the whole-sequence blocks at N warps instead of 8 (measurements).
inline MmaShape ChooseShape(const AttentionShape& a, int max_warps, int sms) {
  const char* env = std::getenv("VIGIL_ATTENTION_SHAPE");
  const std::string_view forced = env ? env : "";
  int cap = forced == "whole" ? max_warps : std::min(kDefaultWholeCap, max_warps);
  if (forced.starts_with("whole:")) {
    const char* end = forced.data() + forced.size();
    int n = 0;
    const auto [stop, error] = std::from_chars(forced.data() + 6, end, n);
    if (error == std::errc() && stop == end && n >= 1) cap = std::min(n, max_warps);
  }
  const MmaShape whole = WholeShape(a, cap);
  // Over 2^31 - 1 blocks (whole:1 with a huge S) does not launch.
  if (forced == "tiles" || a.batch * a.heads * whole.query_blocks > INT32_MAX) return TileShape(a, sms);
  return whole;
}

// Launches `kernel`, one of the two attention kernels, over a 1-D grid of
// batch x heads x shape.query_blocks blocks of shape.warps warps (the query
// blocks of one (batch, head) neighbours in launch order), with `bytes` of
// dynamic shared memory. Its largest block (`max_warps`) needs `max_bytes`,
// allowed once per device (`allowed`). A 1-D grid: pairs x query blocks
// < 2^31 holds wherever QKV fits in memory (at D = 16, 2^31 blocks of 16
// rows would be 3 TB of QKV).
template <typename T, typename Kernel>
Status LaunchAttentionBlocks(Kernel kernel, const char* name, int max_warps, size_t max_bytes, size_t bytes,
                             std::atomic<uint64_t>& allowed, const AttentionShape& a, const MmaShape& shape,
                             const void* qkv, const void* mask, void* y, cudaStream_t stream) {
  VIGIL_RETURN_IF_ERROR(AllowSharedMemory(kernel, max_bytes, allowed));
  const int64_t blocks = a.batch * a.heads * shape.query_blocks;
  if (shape.warps < 1 || shape.warps > max_warps || shape.query_blocks < 1 || blocks > INT32_MAX) {
    return InternalError("{}: {} warps x {} query blocks x {} (batch, head) pairs", name, shape.warps,
                         shape.query_blocks, a.batch * a.heads);
  }
  kernel<<<static_cast<unsigned>(blocks), 32 * shape.warps, bytes, stream>>>(
      static_cast<const T*>(qkv), static_cast<const T*>(mask), static_cast<T*>(y), a,
      static_cast<unsigned>(shape.query_blocks));
  VIGIL_CHECK_LAUNCH(name);
  return Status::Ok();
}

inline bool Aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

}  // namespace vigil::cuda::attention_tiles
