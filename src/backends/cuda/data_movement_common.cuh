// Shared by the data-movement CUDA kernels (data_movement.cu,
// data_movement_spatial.cu): host helpers that read parameters, the index
// maps both use (strided, pad), the copy kernels and their launchers, and the
// support predicates. Internal to src/backends/cuda; .cu files only.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include <fmt/ranges.h>

#include "backends/cuda/cuda_kernel.h"
#include "backends/cuda/unknown_dtype.h"
#include "backends/cuda/device_common.cuh"
#include "ops/op_params.h"

namespace vigil::cuda::movement {

using Shape = std::vector<int64_t>;
constexpr int kThreads = 256;
// Below this many elements (output and input) indices are computed in int32:
// a grid-stride index then stays below 2^31.
constexpr uint64_t kNarrowLimit = uint64_t{1} << 30;

// ---------------------------------------------------------------- host helpers

inline size_t ElementBytes(ir::DataType t) {
  int bits = ir::DataTypeBits(t);
  return bits >= 8 && bits % 8 == 0 ? static_cast<size_t>(bits / 8) : 0;
}

inline Shape Strides(const Shape& shape) {
  Shape s(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;) s[i - 1] = s[i] * shape[i];
  return s;
}

inline int64_t Product(const Shape& s, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t i = from; i < to; ++i) p *= s[i];
  return p;
}

inline uint64_t Count(const Shape& s) { return static_cast<uint64_t>(Product(s, 0, s.size())); }

inline Status RequireInputs(const CudaKernelContext& ctx, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (!ctx.has_input(i)) return ctx.Fail("required input {} is missing", i);
  }
  return Status::Ok();
}

// A kernel whose first N inputs are required (a missing one is an error).
template <CudaKernelFn Fn, size_t N>
inline Status WithInputs(CudaKernelContext& ctx) {
  VIGIL_RETURN_IF_ERROR(RequireInputs(ctx, N));
  return Fn(ctx);
}

// A host-read integer input (int32 or int64) as int64 values.
inline Result<Shape> HostInts(const CudaKernelContext& ctx, size_t i, const char* what) {
  const runtime::Tensor* t = ctx.input(i);
  if (!t) return ctx.Fail("input {} ({}) is missing", i, what);
  Shape out(t->element_count());
  if (t->dtype() == ir::DataType::kInt64) {
    for (size_t k = 0; k < out.size(); ++k) out[k] = t->data<int64_t>()[k];
  } else if (t->dtype() == ir::DataType::kInt32) {
    for (size_t k = 0; k < out.size(); ++k) out[k] = t->data<int32_t>()[k];
  } else {
    return ctx.Fail("input {} ({}) has dtype {}; it must be int64 or int32", i, what, ir::DataTypeName(t->dtype()));
  }
  return out;
}

inline Result<size_t> InputElementBytes(const CudaKernelContext& ctx, size_t i) {
  size_t eb = ElementBytes(ctx.input(i)->dtype());
  if (eb != 1 && eb != 2 && eb != 4 && eb != 8) return ctx.Unsupported("dtype {} of input {}", ir::DataTypeName(ctx.input(i)->dtype()), i);
  return eb;
}

// Calls f(Idx{}) with the element type of an int32 or int64 index tensor.
template <typename F>
inline Status ByIndexType(const CudaKernelContext& ctx, const runtime::Tensor& idx, F&& f) {
  if (idx.dtype() == ir::DataType::kInt64) return f(int64_t{});
  if (idx.dtype() == ir::DataType::kInt32) return f(int32_t{});
  return ctx.Unsupported("indices of dtype {}", ir::DataTypeName(idx.dtype()));
}

// ---------------------------------------------------------------- device maps
// A map turns an output linear index into an input element offset, or -1 for
// "write the fill value". I is int32_t or int64_t.

template <typename I>
struct StridedMap {  // offset = base + sum(coord[d] * strides[d])
  int rank = 0;
  I dims[kMaxRank] = {};
  I strides[kMaxRank] = {};
  I base = 0;
  __device__ I operator()(I i) const {
    I off = base;
    for (int d = rank - 1; d >= 0; --d) {
      I q = i / dims[d];
      off += (i - q * dims[d]) * strides[d];
      i = q;
    }
    return off;
  }
};

using ops::PadMode;  // constant, reflect, edge, wrap

template <typename I>
struct PadMap {  // per axis: the input is cropped to [first, first+len), then padded by `lead` in front
                 // (Tile is a wrap-mode pad)
  int rank = 0;
  PadMode mode = PadMode::kConstant;
  I dims[kMaxRank] = {};
  I strides[kMaxRank] = {};
  I lead[kMaxRank] = {};
  I first[kMaxRank] = {};
  I len[kMaxRank] = {};
  __device__ I operator()(I i) const {
    I off = 0;
    bool fill = false;
    for (int d = rank - 1; d >= 0; --d) {
      I q = i / dims[d];
      I x = i - q * dims[d] - lead[d];
      i = q;
      I n = len[d];
      if (x < 0 || x >= n) {
        if (mode == PadMode::kConstant) {
          fill = true;
          continue;
        } else if (mode == PadMode::kEdge) {
          x = x < 0 ? 0 : n - 1;
        } else if (mode == PadMode::kWrap) {
          x = ((x % n) + n) % n;
        } else {  // reflect: mirror without repeating the edge, period 2(n-1)
          I period = 2 * (n - 1);
          if (period == 0) {
            x = 0;
          } else {
            x = ((x % period) + period) % period;
            if (x >= n) x = period - x;
          }
        }
      }
      off += (first[d] + x) * strides[d];
    }
    return fill ? I(-1) : off;
  }
};

template <typename W, typename I, typename Map>
__global__ void MapCopyKernel(const W* __restrict__ src, W* __restrict__ dst, I total, Map map, W fill) {
  const I stride = static_cast<I>(gridDim.x) * static_cast<I>(blockDim.x);
  for (I i = static_cast<I>(blockIdx.x) * static_cast<I>(blockDim.x) + static_cast<I>(threadIdx.x); i < total;
       i += stride) {
    I off = map(i);
    dst[i] = off < 0 ? fill : src[off];
  }
}

// dst[r * dst_pitch + c] = src[r * src_pitch + c] for r < rows, c < len.
template <typename W, typename I>
__global__ void RowCopyKernel(const W* __restrict__ src, I src_pitch, W* __restrict__ dst, I dst_pitch, I len,
                              I total) {
  const I stride = static_cast<I>(gridDim.x) * static_cast<I>(blockDim.x);
  for (I i = static_cast<I>(blockIdx.x) * static_cast<I>(blockDim.x) + static_cast<I>(threadIdx.x); i < total;
       i += stride) {
    I r = i / len;
    I c = i - r * len;
    dst[r * dst_pitch + c] = src[r * src_pitch + c];
  }
}

// ---------------------------------------------------------------- launchers

// Calls f(W{}) with W an unsigned word of `bytes` bytes (1, 2, 4, 8 or 16:
// rows whose size and start allow it move as 16-byte words).
template <typename F>
inline bool DispatchWord(size_t bytes, F&& f) {
  if (bytes == 16) {
    f(uint4{});
    return true;
  }
  return DispatchBySize(bytes, f);
}

inline bool AlignedTo(const void* p, size_t bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }

// The widest word (up to 16 bytes) that divides `eb` * every count in
// `counts` and aligns both pointers: rows of those sizes move in such words.
inline size_t WordBytes(size_t eb, const void* src, const void* dst, std::initializer_list<int64_t> counts) {
  for (size_t w = 16; w > eb; w /= 2) {
    bool ok = AlignedTo(src, w) && AlignedTo(dst, w);
    for (int64_t c : counts) ok = ok && (static_cast<uint64_t>(c) * eb) % w == 0;
    if (ok) return w;
  }
  return eb;
}

// dst[i] = src[map(i)] (or `fill` where the map gives -1) for i < total.
// `build(I{})` makes the map for index type I; src_count bounds its offsets.
template <typename Build>
inline Status LaunchMapCopy(CudaKernelContext& ctx, const char* name, size_t eb, const void* src, uint64_t src_count,
                     void* dst, uint64_t total, uint64_t fill_bits, Build&& build) {
  if (total == 0) return Status::Ok();
  bool narrow = total < kNarrowLimit && src_count < kNarrowLimit;
  unsigned blocks = BlocksFor(static_cast<int64_t>(total), kThreads);
  bool ok = DispatchWord(eb, [&](auto w) {
    using W = decltype(w);
    W fill{};  // 16-byte words (wide Gather rows) only ever fill zeros
    std::memcpy(&fill, &fill_bits, std::min(sizeof(W), sizeof(fill_bits)));
    const W* s = static_cast<const W*>(src);
    W* d = static_cast<W*>(dst);
    if (narrow) {
      MapCopyKernel<<<blocks, kThreads, 0, ctx.stream()>>>(s, d, static_cast<int32_t>(total), build(int32_t{}), fill);
    } else {
      MapCopyKernel<<<blocks, kThreads, 0, ctx.stream()>>>(s, d, static_cast<int64_t>(total), build(int64_t{}), fill);
    }
  });
  if (!ok) return ctx.Unsupported("elements of {} bytes", eb);
  VIGIL_CHECK_LAUNCH(name);
  return Status::Ok();
}

// The fast paths of LaunchStrided (strided_copy.cu) for merged dims
// (outermost first, none of size 0 or 1): contiguous rows copied in words of
// up to 16 bytes, a tiled transpose where the innermost dim moves, or a map
// with fast divisions. Sets *done = false (and launches nothing) where none
// applies: indices of 2^31 or more, negative strides.
Status FastStridedCopy(CudaKernelContext& ctx, const char* name, size_t eb, const void* src, uint64_t src_count,
                       void* dst, const Shape& dims, const Shape& strides, int64_t base, bool* done);

// dst (contiguous, `shape`) = src[base + sum(coord * strides)]. Unit dims are
// dropped and dims that are contiguous in the source are merged first.
inline Status LaunchStrided(CudaKernelContext& ctx, const char* name, size_t eb, const void* src, uint64_t src_count,
                     void* dst, const Shape& shape, const Shape& strides, int64_t base) {
  Shape dims, st;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 0) return Status::Ok();
    if (shape[d] == 1) continue;
    if (!dims.empty() && st.back() == strides[d] * shape[d]) {
      dims.back() *= shape[d];
      st.back() = strides[d];
    } else {
      dims.push_back(shape[d]);
      st.push_back(strides[d]);
    }
  }
  if (dims.size() > static_cast<size_t>(kMaxRank)) return ctx.Unsupported("more than {} non-mergeable dims", kMaxRank);
  bool done = false;
  VIGIL_RETURN_IF_ERROR(FastStridedCopy(ctx, name, eb, src, src_count, dst, dims, st, base, &done));
  if (done) return Status::Ok();
  return LaunchMapCopy(ctx, name, eb, src, src_count, dst, Count(dims), 0, [&](auto tag) {
    using I = decltype(tag);
    StridedMap<I> m{static_cast<int>(dims.size()), {}, {}, I(base)};
    for (int d = 0; d < m.rank; ++d) m.dims[d] = I(dims[d]), m.strides[d] = I(st[d]);
    return m;
  });
}

// Copies `rows` rows of `len` elements between pitched buffers.
inline Status LaunchRowCopy(CudaKernelContext& ctx, const char* name, size_t eb, const void* src, int64_t src_pitch,
                     void* dst, int64_t dst_pitch, int64_t rows, int64_t len) {
  if (rows == 0 || len == 0) return Status::Ok();
  // Move whole words where the pitches, the length and the pointers allow.
  const size_t w = WordBytes(eb, src, dst, {src_pitch, dst_pitch, len});
  const auto scale = static_cast<int64_t>(w / eb);
  eb = w;
  src_pitch /= scale;
  dst_pitch /= scale;
  len /= scale;
  uint64_t total = static_cast<uint64_t>(rows * len);
  uint64_t span = static_cast<uint64_t>(rows * std::max(src_pitch, dst_pitch));
  bool narrow = span < kNarrowLimit;
  unsigned blocks = BlocksFor(static_cast<int64_t>(total), kThreads);
  bool ok = DispatchWord(eb, [&](auto word) {
    using W = decltype(word);
    const W* s = static_cast<const W*>(src);
    W* d = static_cast<W*>(dst);
    auto launch = [&](auto tag) {
      using I = decltype(tag);
      RowCopyKernel<<<blocks, kThreads, 0, ctx.stream()>>>(s, I(src_pitch), d, I(dst_pitch), I(len), I(total));
    };
    narrow ? launch(int32_t{}) : launch(int64_t{});
  });
  if (!ok) return ctx.Unsupported("elements of {} bytes", eb);
  VIGIL_CHECK_LAUNCH(name);
  return Status::Ok();
}

// ---------------------------------------------------------------- support predicates

inline void Why(std::string* why_not, std::string text) {
  if (why_not) *why_not = std::move(text);
}

inline bool RankAtMost(const runtime::NodeTypes& types, size_t i, bool input, std::string* why_not) {
  const auto& list = input ? types.inputs : types.outputs;
  const ir::TypeInfo* t = i < list.size() ? list[i] : nullptr;
  if (t && t->shape.rank_known && t->shape.dims.size() > static_cast<size_t>(kMaxRank)) {
    Why(why_not, fmt::format("rank {} of {} {} (at most {})", t->shape.dims.size(), input ? "input" : "output", i, kMaxRank));
    return false;
  }
  return true;
}

inline bool IntIndices(const runtime::NodeTypes& types, size_t i, bool optional, std::string* why_not) {
  ir::DataType t = InputDtype(types, i);
  if (t == ir::DataType::kInt32 || t == ir::DataType::kInt64) return true;
  if (optional && (i >= types.inputs.size() || !types.inputs[i])) return true;
  Why(why_not, t == ir::DataType::kUndefined ? fmt::format("the dtype of input {} is not known at load time", i)
                                             : fmt::format("dtype {} of input {}", ir::DataTypeName(t), i));
  return false;
}

inline bool AttrIn(const ir::Node& node, const char* name, const char* def, std::initializer_list<const char*> allowed,
            std::string* why_not) {
  auto v = ops::StringAttr(node, name, def);
  if (v.ok()) {
    for (const char* a : allowed) {
      if (*v == a) return true;
    }
    Why(why_not, fmt::format("{} '{}' is not implemented", name, *v));
  } else {
    Why(why_not, fmt::format("attribute {} is malformed", name));
  }
  return false;
}

// Input 0 of 1, 2, 4 or 8 bytes, or of a dtype not known at load time
// (unknown_dtype.h): every kernel here checks the width when it runs
// (InputElementBytes).
inline bool AnyMovable(const ir::Node&, const runtime::NodeTypes& types, std::string* why_not) {
  return FixedSizeOrUnknownInput(types, 0, why_not);
}
inline bool MovableRanked(const ir::Node&, const runtime::NodeTypes& types, std::string* why_not) {
  return FixedSizeOrUnknownInput(types, 0, why_not) && RankAtMost(types, 0, true, why_not) &&
         RankAtMost(types, 0, false, why_not);
}

}  // namespace vigil::cuda::movement
