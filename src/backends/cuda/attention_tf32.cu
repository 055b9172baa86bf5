// ai.vigil.Attention's float32 kernel on tensor cores (attention.h): the
// FlashAttention-2 scheme of attention_mma.cu with mma.sync m16n8k8 on TF32
// operands. Each warp owns 16 query rows of one (batch, head) and walks the
// keys 64 at a time, scores, online softmax and output in registers.
//
// Precision follows the session's float32 options (cuda_kernel.h):
//  - allow_tf32: every operand (Q, K, P, V) rounded to TF32 once, one mma
//    per product, as cuBLASLt's TF32 products do;
//  - allow_tf32x3 (TF32 off): each operand x split into big = x with its
//    low 13 bits cleared (TF32, one instruction) and small = x - big (exact
//    in float32, below 2^-10 |x|; the mma reads its top 19 bits, so x is
//    kept to about 2^-20 of itself), and each product computed as
//    small.big + big.small + big.big: three mmas, near float32's accuracy
//    (split_tf32.h does the same for the large matrix products, rounding
//    big: there the split runs once per operand, here once per warp).
// Scores, softmax, the running max and sum, and the output accumulate in
// float32 either way.
//
// Fragments (PTX's m16n8k8 .tf32 layout; g = lane / 4, t = lane % 4):
//  - A (16x8): a0 = (g, t), a1 = (g + 8, t), a2 = (g, t + 4), a3 = (g + 8, t + 4);
//  - B (8x8):  b0 = (t, g), b1 = (t + 4, g);
//  - C (16x8): c0, c1 = (g, 2t), (g, 2t + 1); c2, c3 = (g + 8, 2t), (g + 8, 2t + 1).
// S = Q K^T reads A from Q and B from K's rows (B's columns). For P.V, the
// scores of n8 tile j are an A fragment once the keys of that k-step are
// taken in the order 2t, 2t + 1 (A's columns t and t + 4): a = (c0, c2, c1,
// c3), and B's rows t and t + 4 are then V's rows 8j + 2t and 8j + 2t + 1.
// No shuffle and no shared-memory round trip for P.
//
// Q and K fragments come by ldmatrix (Scores). Shared rows are D + 4 floats
// apart: the 8 rows of an ldmatrix phase then start in 8 different 4-bank
// groups, and the 32 lanes of a V fragment load ((8j + 2t) * ld + g) hit 32
// different banks.
#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstdint>
#include <string>

#include "backends/cuda/attention.h"
#include "backends/cuda/attention_tiles.cuh"
#include "backends/cuda/cuda_kernel.h"

namespace vigil::cuda {
namespace {

using namespace attention_tiles;  // NOLINT: the shared tiles, softmax and launch shapes

// x rounded to TF32 (to nearest, ties away from zero), as the mma reads it.
__device__ __forceinline__ uint32_t RoundTf32(float x) {
  uint32_t r;
  asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(r) : "f"(x));
  return r;
}

// d += a (16x8, row) * b (8x8, col): TF32 operands, float accumulators.
__device__ __forceinline__ void MmaTf32(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// An operand as the mmas take it: `big` alone (kSplit false: x as it is,
// already rounded to TF32 by RoundRows or the caller), or big = x truncated
// to TF32 and small = x - big (kSplit true; NaN stays NaN in both).
template <bool kSplit>
struct Operand {
  uint32_t big, small;
  __device__ __forceinline__ explicit Operand(float x) : big(std::bit_cast<uint32_t>(x)), small(0) {
    if constexpr (kSplit) {
      big &= 0xffffe000u;
      small = std::bit_cast<uint32_t>(x - std::bit_cast<float>(big));
    }
  }
  // From the bits ldmatrix loaded.
  __device__ __forceinline__ explicit Operand(uint32_t bits) : Operand(std::bit_cast<float>(bits)) {}
};

// x as an Operand's input: rounded to TF32 without the split (a value no
// RoundRows pass has rounded: P), else as it is.
template <bool kSplit>
__device__ __forceinline__ float Rounded(float x) {
  if constexpr (kSplit) return x;
  return std::bit_cast<float>(RoundTf32(x));
}

// Rounds the chunks this thread copied with IssueRows<float, D, kLd>(dst,
// ..., count, ..., threads) to TF32 in place, once its copies have landed:
// each element once per block instead of once per warp that reads it.
template <int D, int kLd>
__device__ __forceinline__ void RoundRows(float* dst, int count, int threads) {
  constexpr int kChunks = D / 4;
  const int step = threads / kChunks;
  const int c = (static_cast<int>(threadIdx.x) % kChunks) * 4;
#pragma unroll 1
  for (int r = static_cast<int>(threadIdx.x) / kChunks; r < count; r += step) {
    float4* p = reinterpret_cast<float4*>(dst + r * kLd + c);
    float4 v = *p;
    v.x = std::bit_cast<float>(RoundTf32(v.x));
    v.y = std::bit_cast<float>(RoundTf32(v.y));
    v.z = std::bit_cast<float>(RoundTf32(v.z));
    v.w = std::bit_cast<float>(RoundTf32(v.w));
    *p = v;
  }
}

// d += a * b: one mma, or three (the small products first).
template <bool kSplit>
__device__ __forceinline__ void Product(float (&d)[4], const Operand<kSplit> (&a)[4], const Operand<kSplit>& b0,
                                        const Operand<kSplit>& b1) {
  const uint32_t big[4] = {a[0].big, a[1].big, a[2].big, a[3].big};
  if constexpr (kSplit) {
    const uint32_t small[4] = {a[0].small, a[1].small, a[2].small, a[3].small};
    MmaTf32(d, small, b0.big, b1.big);
    MmaTf32(d, big, b0.small, b1.small);
  }
  MmaTf32(d, big, b0.big, b1.big);
}

// Shared memory, in floats: two K tiles, two V tiles, then the block's Q
// rows (16 per warp), rows kLd apart.
template <int D>
struct Tf32Layout {
  static constexpr int kLd = D + 4;
  static constexpr int kTile = kKeys * kLd;
  static constexpr int kK = 0;
  static constexpr int kV = 2 * kTile;
  static constexpr int kQ = 4 * kTile;
  static constexpr size_t Bytes(int warps) { return (size_t{kQ} + 16 * size_t(warps) * kLd) * sizeof(float); }
  static_assert(D % 8 == 0 && D <= 128, "head size must be a multiple of 8, at most 128");
};

// S = Q K^T for the warp's 16 rows (`qs`, shared) and the tile's first
// `valid` keys (16-key pairs of n8 tiles wholly past `valid` are skipped;
// the caller masks their scores). Fragments by ldmatrix (LoadMatrix4), one
// per k-step for Q and one per k-step and pair of n8 tiles for K:
//  - Q: matrices rows +0..7 / dims +0..3, rows +8..15 / +0..3, rows +0..7 /
//    +4..7, rows +8..15 / +4..7 = a0, a1, a2, a3;
//  - K: keys +0..7 / dims +0..3, keys +0..7 / +4..7, keys +8..15 / +0..3,
//    keys +8..15 / +4..7 = b0, b1 of tile 2p, b0, b1 of tile 2p + 1.
// Q's fragments are read from shared memory at each k-step: held in
// registers they cost 32 a thread (D = 64), and two blocks an SM need at
// most 128. Rows kLd = D + 4 floats apart put the 8 rows of each matrix in 8
// different 4-bank groups.
template <int D, bool kSplit>
__device__ __forceinline__ void Scores(float (&s)[kKeys / 8][4], const float* qs, const float* ks, int valid,
                                       int lane) {
  constexpr int kLd = Tf32Layout<D>::kLd;
#pragma unroll
  for (int j = 0; j < kKeys / 8; ++j) s[j][0] = s[j][1] = s[j][2] = s[j][3] = 0.0f;
  const int m = lane / 8;
  const float* qrow = qs + ((m % 2) * 8 + lane % 8) * kLd + (m / 2) * 4;
  const float* krow = ks + ((m / 2) * 8 + lane % 8) * kLd + (m % 2) * 4;
#pragma unroll
  for (int k = 0; k < D / 8; ++k) {
    uint32_t qf[4];
    LoadMatrix4(qf, qrow + k * 8);
    const Operand<kSplit> a[4] = {Operand<kSplit>(qf[0]), Operand<kSplit>(qf[1]), Operand<kSplit>(qf[2]),
                                  Operand<kSplit>(qf[3])};
#pragma unroll
    for (int p = 0; p < kKeys / 16; ++p) {
      if (p * 16 >= valid) break;
      uint32_t b[4];
      LoadMatrix4(b, krow + p * 16 * kLd + k * 8);
      Product<kSplit>(s[2 * p], a, Operand<kSplit>(b[0]), Operand<kSplit>(b[1]));
      Product<kSplit>(s[2 * p + 1], a, Operand<kSplit>(b[2]), Operand<kSplit>(b[3]));
    }
  }
}

// O += P V over the tile's first `valid` keys (P in s; V's rows past S are
// zeros and their P is 0).
template <int D, bool kSplit>
__device__ __forceinline__ void AccumulatePV(float (&o)[D / 8][4], const float (&s)[kKeys / 8][4], const float* vs,
                                             int valid, int lane) {
  constexpr int kLd = Tf32Layout<D>::kLd;
  const float* row = vs + 2 * (lane % 4) * kLd + lane / 4;  // key 2t, dimension g
#pragma unroll
  for (int j = 0; j < kKeys / 8; ++j) {
    if (j * 8 >= valid) break;
    const Operand<kSplit> p[4] = {Operand<kSplit>(Rounded<kSplit>(s[j][0])), Operand<kSplit>(Rounded<kSplit>(s[j][2])),
                                  Operand<kSplit>(Rounded<kSplit>(s[j][1])), Operand<kSplit>(Rounded<kSplit>(s[j][3]))};
    const float* vr = row + j * 8 * kLd;
#pragma unroll
    for (int n = 0; n < D / 8; ++n) {
      Product<kSplit>(o[n], p, Operand<kSplit>(vr[n * 8]), Operand<kSplit>(vr[kLd + n * 8]));
    }
  }
}

// Y = O / l for the warp's 16 rows, staged through the warp's own Q rows in
// shared memory (no longer read) so that global stores are whole 16-byte
// chunks; rows at or past S are not written. With `zero_undefined`, a row
// whose sum l is not positive (every score -inf) or NaN is written as 0.
template <int D>
__device__ __forceinline__ void StoreRows(const float (&o)[D / 8][4], float (&l)[2], float* qs,
                                          float* __restrict__ out, int64_t out_row, int row0, int rows,
                                          bool zero_undefined, int lane) {
  constexpr int kLd = Tf32Layout<D>::kLd;
  float inv[2];
  bool zero[2];
  FinishRows(l, zero_undefined, inv, zero);
  const int r0 = lane / 4, c0 = 2 * (lane % 4);
#pragma unroll
  for (int n = 0; n < D / 8; ++n) {
    *reinterpret_cast<float2*>(qs + r0 * kLd + n * 8 + c0) =
        zero[0] ? make_float2(0.0f, 0.0f) : make_float2(o[n][0] * inv[0], o[n][1] * inv[0]);
    *reinterpret_cast<float2*>(qs + (r0 + 8) * kLd + n * 8 + c0) =
        zero[1] ? make_float2(0.0f, 0.0f) : make_float2(o[n][2] * inv[1], o[n][3] * inv[1]);
  }
  CopyRowsOut<float, D, kLd>(qs, out, out_row, row0, rows, lane);
}

// Blocks, copies and barriers as AttentionMmaKernel's (attention_mma.cu):
// block x takes query block x % query_blocks of the (batch, head) pair
// x / query_blocks; a warp whose rows all lie past S does no math.
template <int D, bool kSplit, bool kMasked>
__global__ void __launch_bounds__(32 * kDefaultWholeCap, D == 128 ? 1 : 2)
    AttentionTf32Kernel(const float* __restrict__ qkv, const float* __restrict__ mask, float* __restrict__ y,
                        AttentionShape a, unsigned query_blocks) {
  using L = Tf32Layout<D>;
  extern __shared__ __align__(128) unsigned char smem_bytes[];
  float* smem = reinterpret_cast<float*>(smem_bytes);
  const int threads = static_cast<int>(blockDim.x);
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int64_t pair = blockIdx.x / query_blocks;
  const int64_t b = pair / a.heads, h = pair % a.heads;
  const int seq = static_cast<int>(a.seq);  // < 2^31 (AttentionTf32WhyNot)
  const int block_rows = 16 * (threads / 32);
  const int q0 = static_cast<int>(blockIdx.x % query_blocks) * block_rows;
  const int row0 = q0 + warp * 16;
  const bool active = row0 < seq;
  const float* base = qkv + b * a.in_batch + h * D;
  const float* kbase = base + a.embed;
  const float* vbase = base + 2 * a.embed;
  float* qs = smem + L::kQ + warp * 16 * L::kLd;
  const float* mbase = kMasked ? mask + b * a.mask_b + h * a.mask_h : nullptr;

  IssueRows<float, D, L::kLd>(smem + L::kQ, base, a.in_row, q0, block_rows, seq, threads);
  IssueRows<float, D, L::kLd>(smem + L::kK, kbase, a.in_row, 0, kKeys, seq, threads);
  IssueRows<float, D, L::kLd>(smem + L::kV, vbase, a.in_row, 0, kKeys, seq, threads);
  CommitCopies();

  float o[D / 8][4];
#pragma unroll
  for (int n = 0; n < D / 8; ++n) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.0f;
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};

  const int tiles = (seq + kKeys - 1) / kKeys;
  for (int t = 0; t < tiles; ++t) {
    const int buf = t & 1;
    if (t + 1 < tiles) {
      IssueRows<float, D, L::kLd>(smem + L::kK + (buf ^ 1) * L::kTile, kbase, a.in_row, (t + 1) * kKeys, kKeys, seq,
                                  threads);
      IssueRows<float, D, L::kLd>(smem + L::kV + (buf ^ 1) * L::kTile, vbase, a.in_row, (t + 1) * kKeys, kKeys, seq,
                                  threads);
      CommitCopies();
      WaitCopies<1>();
    } else {
      WaitCopies<0>();
    }
    if constexpr (!kSplit) {  // this thread's chunks of tile t (and at t = 0, Q) to TF32
      if (t == 0) RoundRows<D, L::kLd>(smem + L::kQ, block_rows, threads);
      RoundRows<D, L::kLd>(smem + L::kK + buf * L::kTile, kKeys, threads);
      RoundRows<D, L::kLd>(smem + L::kV + buf * L::kTile, kKeys, threads);
    }
    __syncthreads();
    if (active) {
      // One step over tile t's first `valid` keys; inlined twice, so that
      // every tile but a partial last one runs without the per-n8-tile
      // checks (`valid` a constant there).
      const auto step = [&](int valid) {
        float s[kKeys / 8][4];
        Scores<D, kSplit>(s, qs, smem + L::kK + buf * L::kTile, valid, lane);
        if constexpr (kMasked) {
          AddMask<float>(s, mbase, a, row0, t * kKeys, valid, seq, lane);
          Softmax<D>(s, o, m, l, valid, 1.0f, lane);
        } else {
          Softmax<D>(s, o, m, l, valid, a.scale_log2, lane);
        }
        AccumulatePV<D, kSplit>(o, s, smem + L::kV + buf * L::kTile, valid, lane);
      };
      const int valid = min(seq - t * kKeys, kKeys);
      if (valid == kKeys) {
        step(kKeys);
      } else {
        step(valid);
      }
    }
    __syncthreads();
  }
  if (active) {
    StoreRows<D>(o, l, qs, y + b * a.out_batch + h * D, a.out_row, row0, seq, a.zero_undefined_rows, lane);
  }
}

// --- launch -----------------------------------------------------------------------

// Whole-sequence blocks only, at most kDefaultWholeCap warps (ChooseShape's
// default; VIGIL_ATTENTION_SHAPE=whole:N caps them lower). The 1/2/4-warp
// tiles have no float32 instances, so "tiles" gets the default.
MmaShape Tf32Shape(const AttentionShape& a) {
  const MmaShape shape = ChooseShape(a, kDefaultWholeCap, /*sms=*/1);
  return shape.whole ? shape : WholeShape(a, kDefaultWholeCap);
}

template <int D, bool kSplit, bool kMasked>
Status Launch(const AttentionShape& a, const MmaShape& shape, const void* qkv, const void* mask, void* y,
              cudaStream_t stream) {
  using L = Tf32Layout<D>;
  static std::atomic<uint64_t> smem_allowed{0};
  return LaunchAttentionBlocks<float>(AttentionTf32Kernel<D, kSplit, kMasked>, "AttentionTf32Kernel", kDefaultWholeCap,
                                      L::Bytes(kDefaultWholeCap), L::Bytes(shape.warps), smem_allowed, a, shape, qkv,
                                      mask, y, stream);
}

template <int D, bool kSplit>
Status LaunchForSplit(const AttentionShape& a, const void* qkv, const void* mask, void* y, cudaStream_t stream) {
  const MmaShape shape = Tf32Shape(a);
  if (mask) return Launch<D, kSplit, true>(a, shape, qkv, mask, y, stream);
  return Launch<D, kSplit, false>(a, shape, qkv, nullptr, y, stream);
}

template <int D>
Status LaunchForHeadSize(const AttentionShape& a, bool split, const void* qkv, const void* mask, void* y,
                         cudaStream_t stream) {
  if (split) return LaunchForSplit<D, true>(a, qkv, mask, y, stream);
  return LaunchForSplit<D, false>(a, qkv, mask, y, stream);
}

}  // namespace

std::string AttentionTf32WhyNot(const AttentionShape& a, const void* qkv, const void* mask, const void* y) {
  const int64_t d = a.head_size;
  if (d != 16 && d != 32 && d != 64 && d != 128) return fmt::format("head size D={}", d);
  // cp.async and the output stores move 16-byte chunks (4 floats).
  const bool strides = a.in_row % 4 == 0 && a.in_batch % 4 == 0 && a.embed % 4 == 0 && a.out_row % 4 == 0 &&
                       a.out_batch % 4 == 0;
  if (!strides || !Aligned16(qkv) || !Aligned16(y)) return "rows of QKV or Y are not 16-byte aligned";
  if (a.seq > INT32_MAX || a.batch * a.heads * WholeShape(a, kDefaultWholeCap).query_blocks > INT32_MAX) {
    return fmt::format("batch {} x heads {} x sequence {}: too many blocks", a.batch, a.heads, a.seq);
  }
  // Unmasked, Softmax takes the row max before scaling (attention_mma.cu).
  if (!mask && !(a.scale_log2 > 0.0f)) return fmt::format("scale {} (the tf32 kernel takes scale > 0)", a.scale);
  return {};
}

Status LaunchAttentionTf32(const AttentionShape& a, bool split, const void* qkv, const void* mask, void* y,
                           cudaStream_t stream) {
  switch (a.head_size) {
    case 16: return LaunchForHeadSize<16>(a, split, qkv, mask, y, stream);
    case 32: return LaunchForHeadSize<32>(a, split, qkv, mask, y, stream);
    case 64: return LaunchForHeadSize<64>(a, split, qkv, mask, y, stream);
    case 128: return LaunchForHeadSize<128>(a, split, qkv, mask, y, stream);
    default: return InternalError("attention tf32 kernel: head size {}", a.head_size);
  }
}

}  // namespace vigil::cuda
