// The fast paths of LaunchStrided (data_movement_common.cuh), the copy
// behind Transpose, Slice, Split, Expand, DepthToSpace and SpaceToDepth:
//  - rows: the innermost dim is contiguous in the source; each thread copies
//    a word of up to 16 bytes of a row, the row's source offset found with
//    fast divisions. Bandwidth-bound, no shared memory.
//  - tiles: the innermost output dim is strided in the source but another
//    dim is contiguous there (a transpose that moves the innermost dim):
//    32x32 tiles through shared memory, so that both the reads and the
//    writes are coalesced, batched over the remaining dims.
//  - any other map of fewer than 2^31 elements: one element per thread, with
//    fast divisions.
// All of them copy bytes, so the results are bit-identical to the generic
// map copy they replace.
#pragma nv_diag_suppress 20208

#include <algorithm>
#include <cstdint>
#include <vector>

#include "backends/cuda/data_movement_common.cuh"
#include "backends/cuda/fast_divmod.cuh"

namespace vigil::cuda::movement {
namespace {

constexpr int kTile = 32;
constexpr int kTileRows = 8;  // a tile block is kTile x kTileRows threads
// Tiles pay off only when both swapped dims fill a good part of a tile.
constexpr int64_t kMinTileDim = 8;

// Source offset of row r over the outer dims (outermost first), with fast
// divisions. Dim 0 needs no division: r < dims[0] there.
struct RowMap {
  int rank = 0;
  uint32_t base = 0;
  FastDivmod dims[kMaxRank];
  uint32_t strides[kMaxRank] = {};
  __device__ __forceinline__ uint32_t operator()(uint32_t r) const {
    uint32_t off = base;
    for (int d = rank - 1; d > 0; --d) {
      uint32_t q, rem;
      dims[d].DivMod(r, &q, &rem);
      off += rem * strides[d];
      r = q;
    }
    return rank > 0 ? off + r * strides[0] : off;
  }
};

// dst[i] = src[rows(i / len) + (i % len) * last_stride] for i < total.
template <typename W>
__global__ void RowGatherKernel(const W* __restrict__ src, W* __restrict__ dst, RowMap rows, FastDivmod len,
                                uint32_t last_stride, uint32_t total) {
  const uint32_t step = gridDim.x * blockDim.x;
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += step) {
    uint32_t r, c;
    len.DivMod(i, &r, &c);
    dst[i] = src[rows(r) + c * last_stride];
  }
}

// The tiled transpose of dims k (contiguous in the source) and l (the
// innermost output dim) of each batch, where batch b starts at
// batch_src(b) in the source and batch_dst(b) in the output.
struct TilePlan {
  uint32_t k = 0, l = 0;   // sizes of the two dims
  uint32_t src_l = 0;      // source stride of l (k's is 1)
  uint32_t dst_k = 0;      // output stride of k (l's is 1)
  FastDivmod tiles_per_batch, tiles_l;
  uint32_t tiles = 0;      // in all batches
  RowMap batch_src, batch_dst;
};

template <typename W>
__global__ void TiledTransposeKernel(const W* __restrict__ src, W* __restrict__ dst, TilePlan p) {
  __shared__ W tile[kTile][kTile + 1];  // +1: column reads hit distinct banks
  for (uint32_t t = blockIdx.x; t < p.tiles; t += gridDim.x) {
    uint32_t b, rest, tk, tl;
    p.tiles_per_batch.DivMod(t, &b, &rest);
    p.tiles_l.DivMod(rest, &tk, &tl);
    const uint32_t k0 = tk * kTile, l0 = tl * kTile;
    const W* s = src + p.batch_src(b);
    W* d = dst + p.batch_dst(b);
    // Read along k (contiguous in the source): tile[l][k].
    const uint32_t k = k0 + threadIdx.x;
    for (uint32_t y = threadIdx.y; y < kTile; y += kTileRows) {
      const uint32_t l = l0 + y;
      if (k < p.k && l < p.l) tile[y][threadIdx.x] = s[k + l * p.src_l];
    }
    __syncthreads();
    // Write along l (contiguous in the output).
    const uint32_t l = l0 + threadIdx.x;
    for (uint32_t y = threadIdx.y; y < kTile; y += kTileRows) {
      const uint32_t kk = k0 + y;
      if (kk < p.k && l < p.l) d[kk * p.dst_k + l] = tile[threadIdx.x][y];
    }
    __syncthreads();
  }
}

// The row map of dims[0..n) with source strides `st` (in words).
RowMap MakeRowMap(const Shape& dims, const Shape& st, size_t n, int64_t base) {
  RowMap m;
  m.rank = static_cast<int>(n);
  m.base = static_cast<uint32_t>(base);
  for (size_t d = 0; d < n; ++d) {
    m.dims[d] = FastDivmod(static_cast<uint32_t>(dims[d]));
    m.strides[d] = static_cast<uint32_t>(st[d]);
  }
  return m;
}

// The widest word (up to 16 bytes) in which every row start, the row length
// and both pointers are aligned, for rows of `len` elements of `eb` bytes.
int64_t RowWordBytes(size_t eb, const void* src, const void* dst, const Shape& st, int64_t len, int64_t base) {
  const auto e = static_cast<int64_t>(eb);
  for (int64_t w = 16; w > e; w /= 2) {
    bool ok = (len * e) % w == 0 && (base * e) % w == 0 && AlignedTo(src, static_cast<size_t>(w)) && AlignedTo(dst, static_cast<size_t>(w));
    for (size_t d = 0; ok && d + 1 < st.size(); ++d) ok = (st[d] * e) % w == 0;
    if (ok) return w;
  }
  return e;
}

Status LaunchRows(CudaKernelContext& ctx, const char* name, size_t eb, const void* src, void* dst,
                  const Shape& dims, const Shape& st, int64_t base) {
  const size_t outer = dims.size() - 1;
  const bool contiguous_rows = st.back() == 1;
  const int64_t w = contiguous_rows ? RowWordBytes(eb, src, dst, st, dims.back(), base) : static_cast<int64_t>(eb);
  const int64_t scale = w / static_cast<int64_t>(eb);  // elements per word
  Shape st_words(st.size());
  for (size_t d = 0; d < outer; ++d) st_words[d] = st[d] / scale;
  const int64_t len = dims.back() / scale;
  const RowMap rows = MakeRowMap(dims, st_words, outer, base / scale);
  const auto last_stride = static_cast<uint32_t>(contiguous_rows ? 1 : st.back());
  const auto total = static_cast<uint32_t>(Count(dims) / static_cast<uint64_t>(scale));
  const unsigned blocks = BlocksFor(total, kThreads);
  const bool ok = DispatchWord(static_cast<size_t>(w), [&](auto word) {
    using W = decltype(word);
    RowGatherKernel<W><<<blocks, kThreads, 0, ctx.stream()>>>(static_cast<const W*>(src), static_cast<W*>(dst), rows,
                                                             FastDivmod(static_cast<uint32_t>(len)), last_stride,
                                                             total);
  });
  if (!ok) return ctx.Unsupported("elements of {} bytes", eb);
  VIGIL_CHECK_LAUNCH(name);
  return Status::Ok();
}

Status LaunchTiles(CudaKernelContext& ctx, const char* name, size_t eb, const void* src, void* dst,
                   const Shape& dims, const Shape& st, int64_t base, size_t k) {
  const size_t l = dims.size() - 1;
  const Shape dst_st = Strides(dims);
  Shape batch, batch_src, batch_dst;
  for (size_t d = 0; d < l; ++d) {
    if (d == k) continue;
    batch.push_back(dims[d]);
    batch_src.push_back(st[d]);
    batch_dst.push_back(dst_st[d]);
  }
  TilePlan p;
  p.k = static_cast<uint32_t>(dims[k]);
  p.l = static_cast<uint32_t>(dims[l]);
  p.src_l = static_cast<uint32_t>(st[l]);
  p.dst_k = static_cast<uint32_t>(dst_st[k]);
  const int64_t tiles_k = (dims[k] + kTile - 1) / kTile, tiles_l = (dims[l] + kTile - 1) / kTile;
  p.tiles_per_batch = FastDivmod(static_cast<uint32_t>(tiles_k * tiles_l));
  p.tiles_l = FastDivmod(static_cast<uint32_t>(tiles_l));
  p.tiles = static_cast<uint32_t>(tiles_k * tiles_l * Product(batch, 0, batch.size()));
  p.batch_src = MakeRowMap(batch, batch_src, batch.size(), base);
  p.batch_dst = MakeRowMap(batch, batch_dst, batch.size(), 0);
  const unsigned blocks = std::min<uint32_t>(p.tiles, 65535u * 32u);
  const bool ok = DispatchBySize(eb, [&](auto word) {
    using W = decltype(word);
    TiledTransposeKernel<W><<<blocks, dim3(kTile, kTileRows), 0, ctx.stream()>>>(static_cast<const W*>(src),
                                                                                 static_cast<W*>(dst), p);
  });
  if (!ok) return ctx.Unsupported("elements of {} bytes", eb);
  VIGIL_CHECK_LAUNCH(name);
  return Status::Ok();
}

}  // namespace

Status FastStridedCopy(CudaKernelContext& ctx, const char* name, size_t eb, const void* src, uint64_t src_count,
                       void* dst, const Shape& dims, const Shape& strides, int64_t base, bool* done) {
  *done = false;
  if (dims.empty() || dims.size() != strides.size() || dims.size() > static_cast<size_t>(kMaxRank)) {
    return Status::Ok();
  }
  // 32-bit offsets: every output index and every source offset below 2^31.
  if (Count(dims) >= kFastDivmodLimit || src_count >= kFastDivmodLimit || base < 0) return Status::Ok();
  for (int64_t s : strides) {
    if (s < 0) return Status::Ok();
  }
  *done = true;
  const size_t l = dims.size() - 1;
  if (strides[l] != 1) {
    for (size_t k = 0; k < l; ++k) {
      if (strides[k] == 1 && dims[k] >= kMinTileDim && dims[l] >= kMinTileDim) {
        return LaunchTiles(ctx, name, eb, src, dst, dims, strides, base, k);
      }
    }
  }
  return LaunchRows(ctx, name, eb, src, dst, dims, strides, base);
}

}  // namespace vigil::cuda::movement
