// ai.vigil.Attention's FlashAttention-2-style kernel for float16 / bfloat16
// (attention.h). Each warp owns 16 query rows of one (batch, head) and walks
// the keys 64 at a time with everything per row in registers:
//  - Q: loaded once as mma A fragments (ldmatrix from shared memory);
//  - S = Q K^T: mma.sync m16n8k16 with float accumulators, 8 n8 tiles of 4
//    floats per thread. The accumulator layout is fixed by PTX: thread
//    `lane` holds rows lane/4 and lane/4 + 8, columns 2*(lane%4) + {0, 1} of
//    each n8 tile, so a row's max and sum need only the 4 lanes of a quad;
//  - online softmax in the log2 domain (scale * log2(e) folded into exp2);
//  - P rounded to T straight into A fragments: the accumulators of n8 tiles
//    2k and 2k+1 are, element for element, the m16k16 A fragment of keys
//    [16k, 16k + 16), so P never touches shared memory;
//  - O += P V into D/8 n8 tiles of float accumulators, rescaled per row by
//    exp2(m_old - m_new) first; Y = O / l at the end, rounded once.
// K and V tiles arrive by cp.async (16-byte chunks, zero-filled past S) into
// two buffers, so the next tile loads while this one is multiplied. Shared
// rows are padded by 8 elements (16 bytes): the 8 rows an ldmatrix phase
// reads then start in 8 different 4-bank groups.
// A mask M whose rows are contiguous along keys and 16-byte aligned (BERT's
// [B, 1, S, S], a key-padding row [B, 1, 1, S]) is staged the same way: the
// block's rows of each tile's 64 key columns arrive by cp.async beside K and
// V, and each thread reads its score positions' pairs from shared memory
// (other masks are read from global memory element by element).
// Launch shapes (ChooseShape below): the query rows of one (batch, head)
// split over the fewest blocks of at most 8 warps ("whole"; S = 197: 2 x 7
// warps), so K and V are read twice per pair and at most 15 padding rows
// are computed; blocks of 4, 2 or 1 warps over fixed 64/32/16-row tiles
// ("tiles") only when forced (VIGIL_ATTENTION_SHAPE).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cmath>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "base/dev_switch.h"
#include "backends/cuda/attention.h"
#include "backends/cuda/attention_tiles.cuh"
#include "backends/cuda/cuda_kernel.h"
#include "backends/cuda/device_common.cuh"

namespace vigil::cuda {
namespace {

using namespace attention_tiles;  // NOLINT: the shared tiles, softmax and launch shapes

__device__ __forceinline__ void LoadMatrix4Trans(uint32_t (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(SharedAddress(p)));
}

// d += a (16x16, row) * b (16x8, col), float accumulators.
template <typename T>
__device__ __forceinline__ void Mma(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  if constexpr (std::is_same_v<T, __half>) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
}

// Two floats rounded to T, `lo` in the low half (the lower column).
template <typename T>
__device__ __forceinline__ uint32_t Pack(float lo, float hi) {
  if constexpr (std::is_same_v<T, __half>) {
    const __half2 v = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<const uint32_t*>(&v);
  } else {
    const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<const uint32_t*>(&v);
  }
}

// --- the kernel -------------------------------------------------------------------

// Shared memory, in elements of T: two K tiles, two V tiles, then the
// block's Q rows (16 per warp), rows kLd apart, then two staged mask tiles
// of `mask_rows` rows (the block's query rows; 1 for a mask that broadcasts
// over them), kMaskLd apart. Q goes after K and V so that their offsets do
// not depend on the block's warp count.
template <int D>
struct MmaLayout {
  static constexpr int kLd = D + 8;
  static constexpr int kTile = kKeys * kLd;
  static constexpr int kK = 0;
  static constexpr int kV = 2 * kTile;
  static constexpr int kQ = 4 * kTile;
  // Padded by 8 elements like K and V: the 8 rows one read of AddStagedMask
  // touches start 4 banks apart.
  static constexpr int kMaskLd = kKeys + 8;
  static constexpr size_t MaskOffset(int warps) { return size_t{kQ} + 16 * size_t(warps) * kLd; }
  static constexpr size_t Bytes(int warps, int mask_rows = 0) {
    return (MaskOffset(warps) + 2 * size_t(mask_rows) * kMaskLd) * 2;
  }
  static_assert(D % 16 == 0 && D <= 128, "head size must be a multiple of 16, at most 128");
};

// S = Q K^T for the warp's 16 rows and the tile's first `valid` keys (16-key
// pairs of n8 tiles wholly past `valid` are skipped; their scores are
// masked by the caller).
template <typename T, int D>
__device__ __forceinline__ void Scores(float (&s)[kKeys / 8][4], const uint32_t (&qf)[D / 16][4], const T* ks,
                                       int valid, int lane) {
#pragma unroll
  for (int j = 0; j < kKeys / 8; ++j) s[j][0] = s[j][1] = s[j][2] = s[j][3] = 0.0f;
  // ldmatrix x4 matrices: keys +0..7 / d +0..7, keys +0..7 / d +8..15,
  // keys +8..15 / d +0..7, keys +8..15 / d +8..15: the B fragments (b0b1,
  // b2b3) of two n8 tiles. K rows are B's columns, so no transpose.
  const T* row = ks + (lane % 8 + (lane / 16) * 8) * (D + 8) + ((lane / 8) % 2) * 8;
#pragma unroll
  for (int np = 0; np < kKeys / 16; ++np) {
    if (np * 16 >= valid) break;
#pragma unroll
    for (int k = 0; k < D / 16; ++k) {
      uint32_t b[4];
      LoadMatrix4(b, row + np * 16 * (D + 8) + k * 16);
      Mma<T>(s[2 * np], qf[k], b[0], b[1]);
      Mma<T>(s[2 * np + 1], qf[k], b[2], b[3]);
    }
  }
}

// O += P V over the tile's first `valid` keys (P in s, as float).
template <typename T, int D>
__device__ __forceinline__ void AccumulatePV(float (&o)[D / 8][4], const float (&s)[kKeys / 8][4], const T* vs,
                                             int valid, int lane) {
  // ldmatrix.trans x4 matrices: keys +0..7 / d +0..7, keys +8..15 / d +0..7,
  // keys +0..7 / d +8..15, keys +8..15 / d +8..15: V rows are B's rows, so
  // the transposed load gives the (b0b1, b2b3) fragments of two n8 tiles.
  const T* row = vs + (lane % 8 + ((lane / 8) % 2) * 8) * (D + 8) + (lane / 16) * 8;
#pragma unroll
  for (int kk = 0; kk < kKeys / 16; ++kk) {
    if (kk * 16 >= valid) break;
    const uint32_t p[4] = {Pack<T>(s[2 * kk][0], s[2 * kk][1]), Pack<T>(s[2 * kk][2], s[2 * kk][3]),
                           Pack<T>(s[2 * kk + 1][0], s[2 * kk + 1][1]), Pack<T>(s[2 * kk + 1][2], s[2 * kk + 1][3])};
#pragma unroll
    for (int np = 0; np < D / 16; ++np) {
      uint32_t b[4];
      LoadMatrix4Trans(b, row + kk * 16 * (D + 8) + np * 16);
      Mma<T>(o[2 * np], p, b[0], b[1]);
      Mma<T>(o[2 * np + 1], p, b[2], b[3]);
    }
  }
}

// Key columns [col0, col0 + kKeys) of mask rows [q0, q0 + count) of this
// (batch, head)'s M into shared memory rows kMaskLd apart, 16-byte chunks
// over the block's threads: columns at or past S, and rows at or past S,
// are zero-filled (cp.async's source size), never read. Part of the
// caller's current copy group; every thread calls it with the same
// arguments. (a.mask_i is 0 for a row that broadcasts: count is then 1.)
template <typename T, int kMaskLd>
__device__ __forceinline__ void IssueMaskTile(T* dst, const T* __restrict__ m, const AttentionShape& a, int q0,
                                              int count, int col0, int seq, int threads) {
  constexpr int kPer = 16 / static_cast<int>(sizeof(T));
  constexpr int kChunks = kKeys / kPer;
  const int step = threads / kChunks;
  const int c = (static_cast<int>(threadIdx.x) % kChunks) * kPer;
  const int left = seq - (col0 + c);  // columns of S from this chunk on
  const int bytes = left <= 0 ? 0 : left >= kPer ? 16 : left * static_cast<int>(sizeof(T));
#pragma unroll 1
  for (int r = static_cast<int>(threadIdx.x) / kChunks; r < count; r += step) {
    const bool in = q0 + r < seq && bytes > 0;
    CopyAsync16(dst + r * kMaskLd + c, in ? m + int64_t{q0 + r} * a.mask_i + col0 + c : m, in ? bytes : 0);
  }
}

// The scores into the log2 domain with the staged mask tile added (as
// AddMask, from shared memory): `mt` is the tile, `lrow0` the warp's first
// row in it (0 for a broadcast row, which every row reads).
template <typename T, int kMaskLd>
__device__ __forceinline__ void AddStagedMask(float (&s)[kKeys / 8][4], const T* mt, int lrow0, bool broadcast,
                                              float scale_log2, int lane) {
  constexpr float kLog2e = 1.4426950408889634f;
#pragma unroll
  for (int j = 0; j < kKeys / 8; ++j) {
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int r = broadcast ? 0 : lrow0 + lane / 4 + half * 8;
      const T* p = mt + r * kMaskLd + j * 8 + 2 * (lane % 4);
      float2 mv;
      if constexpr (std::is_same_v<T, __half>) {
        mv = __half22float2(*reinterpret_cast<const __half2*>(p));
      } else {
        mv = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(p));
      }
      s[j][2 * half] = fmaf(s[j][2 * half], scale_log2, kLog2e * mv.x);
      s[j][2 * half + 1] = fmaf(s[j][2 * half + 1], scale_log2, kLog2e * mv.y);
    }
  }
}

// Y = O / l for the warp's 16 rows, staged through the warp's own Q rows in
// shared memory (no longer read) so that global stores are whole 16-byte
// chunks of each row; rows at or past S are not written.
// With `zero_undefined`, a row whose sum l is not positive (every score
// -inf) or NaN is written as 0.
template <typename T, int D>
__device__ __forceinline__ void StoreRows(const float (&o)[D / 8][4], float (&l)[2], T* qs, T* __restrict__ out,
                                          int64_t out_row, int row0, int rows, bool zero_undefined, int lane) {
  float inv[2];
  bool zero[2];
  FinishRows(l, zero_undefined, inv, zero);
  const int r0 = lane / 4, c0 = 2 * (lane % 4);
#pragma unroll
  for (int n = 0; n < D / 8; ++n) {
    *reinterpret_cast<uint32_t*>(qs + r0 * (D + 8) + n * 8 + c0) =
        zero[0] ? 0u : Pack<T>(o[n][0] * inv[0], o[n][1] * inv[0]);
    *reinterpret_cast<uint32_t*>(qs + (r0 + 8) * (D + 8) + n * 8 + c0) =
        zero[1] ? 0u : Pack<T>(o[n][2] * inv[1], o[n][3] * inv[1]);
  }
  CopyRowsOut<T, D, D + 8>(qs, out, out_row, row0, rows, lane);
}

// Block x takes query block x % query_blocks (16 rows per warp) of the
// (batch, head) pair x / query_blocks: the query blocks of one pair are
// neighbours in launch order, so all but the first find the pair's K and V
// in L2 (with pairs on x and query blocks on y, a pair's second block ran a
// whole grid row later). The warp count is blockDim.x / 32, at most
// kMaxWarps (which ptxas sizes registers for). Every warp issues its share
// of every copy and reaches every barrier, but a warp whose 16 rows all lie
// at or past S (the tail of the last query block) does no math and stores
// nothing.
// kMasked: M (`mask`) is added to the scores (AddMask).
template <typename T, int D, int kMaxWarps, bool kMasked>
__global__ void __launch_bounds__(32 * kMaxWarps) AttentionMmaKernel(const T* __restrict__ qkv,
                                                                     const T* __restrict__ mask, T* __restrict__ y,
                                                                     AttentionShape a, unsigned query_blocks) {
  using L = MmaLayout<D>;
  extern __shared__ __align__(128) unsigned char smem_bytes[];
  T* smem = reinterpret_cast<T*>(smem_bytes);
  // Blocks of kMaxWarps <= 4 (the tiles) always have exactly kMaxWarps
  // warps: a constant there spares ptxas a register.
  const int threads = kMaxWarps <= 4 ? 32 * kMaxWarps : static_cast<int>(blockDim.x);
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int64_t pair = blockIdx.x / query_blocks;
  const int64_t b = pair / a.heads, h = pair % a.heads;
  // S < 2^31: attention.cu limits the 64-row tiles to 65535.
  const int seq = static_cast<int>(a.seq);
  const int block_rows = 16 * (threads / 32);
  const int q0 = static_cast<int>(blockIdx.x % query_blocks) * block_rows;
  const int row0 = q0 + warp * 16;  // the warp's first query row
  const bool active = row0 < seq;   // the same for the whole warp
  const T* base = qkv + b * a.in_batch + h * D;
  const T* kbase = base + a.embed;
  const T* vbase = base + 2 * a.embed;
  T* qs = smem + L::kQ + warp * 16 * L::kLd;  // the warp's Q rows
  // The staged mask (kMasked with a.mask_tile): its two tiles after Q.
  const bool staged = kMasked && a.mask_tile;
  const bool broadcast_row = a.mask_i == 0;
  const int mask_rows = broadcast_row ? 1 : block_rows;
  T* mts = smem + L::MaskOffset(threads / 32);
  const T* mbase = kMasked ? mask + b * a.mask_b + h * a.mask_h : nullptr;

  // Copy group 0: Q and the first K and V tiles (and mask tile).
  IssueRows<T, D, D + 8>(smem + L::kQ, base, a.in_row, q0, block_rows, seq, threads);
  IssueRows<T, D, D + 8>(smem + L::kK, kbase, a.in_row, 0, kKeys, seq, threads);
  IssueRows<T, D, D + 8>(smem + L::kV, vbase, a.in_row, 0, kKeys, seq, threads);
  if (staged) IssueMaskTile<T, L::kMaskLd>(mts, mbase, a, q0, mask_rows, 0, seq, threads);
  CommitCopies();

  uint32_t qf[D / 16][4];
  float o[D / 8][4];
#pragma unroll
  for (int n = 0; n < D / 8; ++n) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.0f;
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};

  const int tiles = (seq + kKeys - 1) / kKeys;
  for (int t = 0; t < tiles; ++t) {
    const int buf = t & 1;
    // The other buffers were last read in step t - 1, which ended with a
    // barrier: load tile t + 1 into them while tile t is multiplied.
    if (t + 1 < tiles) {
      IssueRows<T, D, D + 8>(smem + L::kK + (buf ^ 1) * L::kTile, kbase, a.in_row, (t + 1) * kKeys, kKeys, seq, threads);
      IssueRows<T, D, D + 8>(smem + L::kV + (buf ^ 1) * L::kTile, vbase, a.in_row, (t + 1) * kKeys, kKeys, seq, threads);
      if (staged) {
        IssueMaskTile<T, L::kMaskLd>(mts + (buf ^ 1) * mask_rows * L::kMaskLd, mbase, a, q0, mask_rows,
                                     (t + 1) * kKeys, seq, threads);
      }
      CommitCopies();
      WaitCopies<1>();
    } else {
      WaitCopies<0>();
    }
    __syncthreads();  // tile t (and at t = 0, Q) is in place for every warp
    if (active) {
      if (t == 0) {
        // A fragment matrices: rows +0..7 / cols +0..7, rows +8..15 / +0..7,
        // rows +0..7 / +8..15, rows +8..15 / +8..15 = a0a1, a2a3, a4a5, a6a7.
#pragma unroll
        for (int k = 0; k < D / 16; ++k) LoadMatrix4(qf[k], qs + (lane % 16) * L::kLd + k * 16 + (lane / 16) * 8);
      }
      const int valid = min(seq - t * kKeys, kKeys);
      float s[kKeys / 8][4];
      Scores<T, D>(s, qf, smem + L::kK + buf * L::kTile, valid, lane);
      if constexpr (kMasked) {
        if (staged) {
          AddStagedMask<T, L::kMaskLd>(s, mts + buf * mask_rows * L::kMaskLd, warp * 16, broadcast_row, a.scale_log2,
                                       lane);
        } else {
          AddMask<T>(s, mbase, a, row0, t * kKeys, valid, seq, lane);
        }
        Softmax<D>(s, o, m, l, valid, 1.0f, lane);  // s is in the log2 domain already
      } else {
        Softmax<D>(s, o, m, l, valid, a.scale_log2, lane);
      }
      AccumulatePV<T, D>(o, s, smem + L::kV + buf * L::kTile, valid, lane);
    }
    __syncthreads();  // no warp reads buffers `buf` any more
  }
  if (active) {
    StoreRows<T, D>(o, l, qs, y + b * a.out_batch + h * D, a.out_row, row0, seq, a.zero_undefined_rows, lane);
  }
}

// --- launch -----------------------------------------------------------------------

// Warps of the whole-sequence instance: 16 (256 query rows), but 8 for
// D = 128, whose ~170 registers a thread would not fit 16 warps in an SM's
// 64K registers (and __launch_bounds__(512) would cap them at 128).
template <int D>
constexpr int kWholeWarps = D == 128 ? 8 : 16;

template <typename T, int D, int kMaxWarps, bool kMasked = false>
Status Launch(const AttentionShape& a, const MmaShape& shape, const void* qkv, const void* mask, void* y,
              cudaStream_t stream) {
  using L = MmaLayout<D>;
  static std::atomic<uint64_t> smem_allowed{0};
  const int mask_rows = !a.mask_tile ? 0 : a.mask_i == 0 ? 1 : 16 * shape.warps;
  return LaunchAttentionBlocks<T>(AttentionMmaKernel<T, D, kMaxWarps, kMasked>, "AttentionMmaKernel", kMaxWarps,
                                  L::Bytes(kMaxWarps, kMasked ? 16 * kMaxWarps : 0), L::Bytes(shape.warps, mask_rows),
                                  smem_allowed, a, shape, qkv, mask, y, stream);
}

// Whether M can be staged in shared memory (AttentionShape::mask_tile):
// contiguous along keys, every row start 16-byte aligned. (A measurement
// switch, VIGIL_ATTENTION_MASK_TILE=0, reads it from global memory.)
bool MaskTileFits(const AttentionShape& a, const void* mask) {
  return DevSwitchOn("VIGIL_ATTENTION_MASK_TILE") && a.mask_j == 1 && a.mask_i % 8 == 0 && a.mask_b % 8 == 0 && a.mask_h % 8 == 0 && Aligned16(mask);
}

// A masked call always runs whole-sequence blocks (the tiles have no masked
// instance, to keep the instance count down): with the tiles forced, those
// of the default cap.
template <typename T, int D>
Status LaunchForHeadSize(const AttentionShape& a, const void* qkv, const void* mask, void* y, cudaStream_t stream) {
  VIGIL_ASSIGN_OR_RETURN(int sms, SmCount());
  MmaShape shape = ChooseShape(a, kWholeWarps<D>, sms);
  if (mask) {
    if (!shape.whole) shape = WholeShape(a, std::min(kDefaultWholeCap, kWholeWarps<D>));
    AttentionShape staged = a;
    staged.mask_tile = MaskTileFits(a, mask);
    return Launch<T, D, kWholeWarps<D>, true>(staged, shape, qkv, mask, y, stream);
  }
  if (shape.whole) return Launch<T, D, kWholeWarps<D>>(a, shape, qkv, nullptr, y, stream);
  switch (shape.warps) {
    case 1: return Launch<T, D, 1>(a, shape, qkv, nullptr, y, stream);
    case 2: return Launch<T, D, 2>(a, shape, qkv, nullptr, y, stream);
    default: return Launch<T, D, 4>(a, shape, qkv, nullptr, y, stream);
  }
}

template <typename T>
Status LaunchForType(const AttentionShape& a, const void* qkv, const void* mask, void* y, cudaStream_t stream) {
  switch (a.head_size) {
    case 16: return LaunchForHeadSize<T, 16>(a, qkv, mask, y, stream);
    case 32: return LaunchForHeadSize<T, 32>(a, qkv, mask, y, stream);
    case 64: return LaunchForHeadSize<T, 64>(a, qkv, mask, y, stream);
    case 128: return LaunchForHeadSize<T, 128>(a, qkv, mask, y, stream);
    default: return InternalError("attention mma kernel: head size {}", a.head_size);
  }
}

}  // namespace

std::string AttentionMmaWhyNot(const AttentionShape& a, ir::DataType dtype, const void* qkv, const void* mask,
                               const void* y) {
  if (dtype != ir::DataType::kFloat16 && dtype != ir::DataType::kBfloat16) {
    return fmt::format("dtype {} (the mma kernel takes float16 and bfloat16)", ir::DataTypeName(dtype));
  }
  const int64_t d = a.head_size;
  if (d != 16 && d != 32 && d != 64 && d != 128) return fmt::format("head size D={}", d);
  // cp.async and the output stores move 16-byte chunks (8 elements): every
  // row start must be 16-byte aligned.
  const bool strides = a.in_row % 8 == 0 && a.in_batch % 8 == 0 && a.embed % 8 == 0 && a.out_row % 8 == 0 &&
                       a.out_batch % 8 == 0;
  if (!strides || !Aligned16(qkv) || !Aligned16(y)) return "rows of QKV or Y are not 16-byte aligned";
  if (mask) {
    // Masked calls run whole-sequence blocks only (LaunchForHeadSize).
    const int cap = std::min(kDefaultWholeCap, a.head_size == 128 ? kWholeWarps<128> : kWholeWarps<64>);
    if (a.batch * a.heads * WholeShape(a, cap).query_blocks > INT32_MAX) {
      return fmt::format("batch {} x heads {} x sequence {}: too many blocks for the masked kernel", a.batch,
                         a.heads, a.seq);
    }
    return {};
  }
  // Unmasked, Softmax takes the row max before scaling (one FFMA per score
  // instead of a multiply and a subtraction), which needs scale > 0.
  if (!(a.scale_log2 > 0.0f)) return fmt::format("scale {} (the mma kernel takes scale > 0)", a.scale);
  return {};
}

Status LaunchAttentionMma(const AttentionShape& a, ir::DataType dtype, const void* qkv, const void* mask, void* y,
                          cudaStream_t stream) {
  if (dtype == ir::DataType::kFloat16) return LaunchForType<__half>(a, qkv, mask, y, stream);
  return LaunchForType<__nv_bfloat16>(a, qkv, mask, y, stream);
}

}  // namespace vigil::cuda
