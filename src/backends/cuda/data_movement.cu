// CUDA kernels of the data-movement ops: Transpose, Concat, Split, Slice,
// Gather, GatherElements, Expand, Tile, Pad, DepthToSpace, SpaceToDepth and
// Trilu. They copy whole elements (DispatchBySize), so any dtype of 1, 2, 4
// or 8 bytes works. Shapes and parameters are worked out on the host exactly
// as the CPU kernels (backends/cpu/shape_ops_*.cpp) do; the device only maps
// each output element to the input element it copies.
//
// Gather and GatherElements read their indices on the device, where an index
// outside [-dim, dim-1] cannot be reported: its output elements are written
// as zero bytes (never read out of bounds). The CPU backend fails instead.
// fmt's constexpr formatting code mentions long double; with
// --expt-relaxed-constexpr nvcc warns about it (#20208) in any .cu file that
// formats a message, although none of it runs on the device.
#pragma nv_diag_suppress 20208

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include <fmt/ranges.h>

#include "backends/cuda/cuda_kernel.h"
#include "backends/cuda/device_common.cuh"
#include "base/float16.h"
#include "ops/op_params.h"
#include "ops/shape_ops_common.h"

namespace vigil::cuda {
namespace {

using Shape = std::vector<int64_t>;
constexpr int kThreads = 256;
// Below this many elements (output and input) indices are computed in int32:
// a grid-stride index then stays below 2^31.
constexpr uint64_t kNarrowLimit = uint64_t{1} << 30;

// ---------------------------------------------------------------- host helpers

size_t ElementBytes(ir::DataType t) {
  int bits = ir::DataTypeBits(t);
  return bits >= 8 && bits % 8 == 0 ? static_cast<size_t>(bits / 8) : 0;
}

Shape Strides(const Shape& shape) {
  Shape s(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;) s[i - 1] = s[i] * shape[i];
  return s;
}

int64_t Product(const Shape& s, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t i = from; i < to; ++i) p *= s[i];
  return p;
}

uint64_t Count(const Shape& s) { return static_cast<uint64_t>(Product(s, 0, s.size())); }

Status RequireInputs(const CudaKernelContext& ctx, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (!ctx.has_input(i)) return ctx.Fail("required input {} is missing", i);
  }
  return Status::Ok();
}

// A kernel whose first N inputs are required (a missing one is an error).
template <CudaKernelFn Fn, size_t N>
Status WithInputs(CudaKernelContext& ctx) {
  VIGIL_RETURN_IF_ERROR(RequireInputs(ctx, N));
  return Fn(ctx);
}

// A host-read integer input (int32 or int64) as int64 values.
Result<Shape> HostInts(const CudaKernelContext& ctx, size_t i, const char* what) {
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

Result<size_t> InputElementBytes(const CudaKernelContext& ctx, size_t i) {
  size_t eb = ElementBytes(ctx.input(i)->dtype());
  if (eb != 1 && eb != 2 && eb != 4 && eb != 8) return ctx.Unsupported("dtype {} of input {}", ir::DataTypeName(ctx.input(i)->dtype()), i);
  return eb;
}

// Calls f(Idx{}) with the element type of an int32 or int64 index tensor.
template <typename F>
Status ByIndexType(const CudaKernelContext& ctx, const runtime::Tensor& idx, F&& f) {
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

template <typename I, typename Idx>
struct GatherMap {  // output [outer, count, block] from data [outer, dim, block]
  const Idx* indices = nullptr;
  I count = 0, dim = 0, block = 0;
  __device__ I operator()(I i) const {
    I t = i / block;
    I r = i - t * block;
    I o = t / count;
    int64_t index = static_cast<int64_t>(indices[t - o * count]);
    if (index < 0) index += dim;
    if (index < 0 || index >= dim) return I(-1);
    return (o * dim + static_cast<I>(index)) * block + r;
  }
};

template <typename I, typename Idx>
struct GatherElementsMap {  // output shape = indices shape; the axis coordinate comes from indices
  const Idx* indices = nullptr;
  int rank = 0, axis = 0;
  I dims[kMaxRank] = {};
  I strides[kMaxRank] = {};  // data strides
  I axis_dim = 0;
  __device__ I operator()(I i) const {
    int64_t index = static_cast<int64_t>(indices[i]);
    if (index < 0) index += axis_dim;
    if (index < 0 || index >= axis_dim) return I(-1);
    I off = 0;
    for (int d = rank - 1; d >= 0; --d) {
      I q = i / dims[d];
      off += (d == axis ? static_cast<I>(index) : i - q * dims[d]) * strides[d];
      i = q;
    }
    return off;
  }
};

template <typename I>
struct TriluMap {  // kept where col - row >= k (upper) or <= k (lower); zero elsewhere
  I rows = 0, cols = 0;
  int64_t k = 0;
  bool upper = true;
  __device__ I operator()(I i) const {
    I t = i / cols;
    int64_t col = i - t * cols, row = t % rows;
    bool keep = upper ? col - row >= k : col - row <= k;
    return keep ? i : I(-1);
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

// dst[i] = src[map(i)] (or `fill` where the map gives -1) for i < total.
// `build(I{})` makes the map for index type I; src_count bounds its offsets.
template <typename Build>
Status LaunchMapCopy(CudaKernelContext& ctx, const char* name, size_t eb, const void* src, uint64_t src_count,
                     void* dst, uint64_t total, uint64_t fill_bits, Build&& build) {
  if (total == 0) return Status::Ok();
  bool narrow = total < kNarrowLimit && src_count < kNarrowLimit;
  unsigned blocks = BlocksFor(static_cast<int64_t>(total), kThreads);
  bool ok = DispatchBySize(eb, [&](auto w) {
    using W = decltype(w);
    W fill;
    std::memcpy(&fill, &fill_bits, sizeof(W));
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

// dst (contiguous, `shape`) = src[base + sum(coord * strides)]. Unit dims are
// dropped and dims that are contiguous in the source are merged first.
Status LaunchStrided(CudaKernelContext& ctx, const char* name, size_t eb, const void* src, uint64_t src_count,
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
  return LaunchMapCopy(ctx, name, eb, src, src_count, dst, Count(dims), 0, [&](auto tag) {
    using I = decltype(tag);
    StridedMap<I> m{static_cast<int>(dims.size()), {}, {}, I(base)};
    for (int d = 0; d < m.rank; ++d) m.dims[d] = I(dims[d]), m.strides[d] = I(st[d]);
    return m;
  });
}

// Copies `rows` rows of `len` elements between pitched buffers.
Status LaunchRowCopy(CudaKernelContext& ctx, const char* name, size_t eb, const void* src, int64_t src_pitch,
                     void* dst, int64_t dst_pitch, int64_t rows, int64_t len) {
  if (rows == 0 || len == 0) return Status::Ok();
  uint64_t total = static_cast<uint64_t>(rows * len);
  uint64_t span = static_cast<uint64_t>(rows * std::max(src_pitch, dst_pitch));
  bool narrow = span < kNarrowLimit;
  unsigned blocks = BlocksFor(static_cast<int64_t>(total), kThreads);
  bool ok = DispatchBySize(eb, [&](auto w) {
    using W = decltype(w);
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

// ---------------------------------------------------------------- kernels

Status Transpose(CudaKernelContext& ctx) {
  const runtime::Tensor& in = *ctx.input(0);
  VIGIL_ASSIGN_OR_RETURN(size_t eb, InputElementBytes(ctx, 0));
  size_t rank = in.rank();
  VIGIL_ASSIGN_OR_RETURN(Shape perm, ops::IntsAttr(ctx.node(), "perm"));
  if (!ops::HasAttr(ctx.node(), "perm")) {
    for (size_t i = 0; i < rank; ++i) perm.push_back(static_cast<int64_t>(rank - 1 - i));
  }
  if (perm.size() != rank) return ctx.Fail("perm has {} entries but the input is {}", perm.size(), in.Describe());
  std::vector<bool> seen(rank, false);
  Shape out_shape, src_strides, in_strides = Strides(in.shape());
  for (int64_t p : perm) {
    if (p < 0 || p >= static_cast<int64_t>(rank) || seen[p]) {
      return ctx.Fail("perm [{}] is not a permutation of 0..{}", fmt::join(perm, ","), rank - 1);
    }
    seen[p] = true;
    out_shape.push_back(in.dim(p));
    src_strides.push_back(in_strides[p]);
  }
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * out, ctx.Output(0, in.dtype(), out_shape));
  return LaunchStrided(ctx, "Transpose", eb, in.raw_data(), in.element_count(), out->raw_data(), out_shape,
                       src_strides, 0);
}

Status Concat(CudaKernelContext& ctx) {
  VIGIL_RETURN_IF_ERROR(RequireInputs(ctx, ctx.num_inputs()));
  if (ctx.num_inputs() == 0) return ctx.Fail("needs at least one input");
  const runtime::Tensor& first = *ctx.input(0);
  VIGIL_ASSIGN_OR_RETURN(size_t eb, InputElementBytes(ctx, 0));
  int64_t axis = 0;
  if (ctx.opset() < 4) {
    VIGIL_ASSIGN_OR_RETURN(axis, ops::IntAttr(ctx.node(), "axis", 1));
  } else {
    VIGIL_ASSIGN_OR_RETURN(axis, ops::RequiredIntAttr(ctx.node(), "axis"));
  }
  int64_t rank = static_cast<int64_t>(first.rank());
  if (axis < -rank || axis >= rank) return ctx.Fail("axis {} is out of range for input 0 {}", axis, first.Describe());
  if (axis < 0) axis += rank;
  Shape out_shape = first.shape();
  out_shape[axis] = 0;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    const runtime::Tensor& t = *ctx.input(i);
    if (t.dtype() != first.dtype() || t.rank() != first.rank()) {
      return ctx.Fail("input {} is {} but input 0 is {}; Concat needs one dtype and rank", i, t.Describe(),
                      first.Describe());
    }
    for (int64_t k = 0; k < rank; ++k) {
      if (k != axis && t.dim(k) != first.dim(k)) {
        return ctx.Fail("input {} is {} but input 0 is {}; only axis {} may differ", i, t.Describe(),
                        first.Describe(), axis);
      }
    }
    out_shape[axis] += t.dim(axis);
  }
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * out, ctx.Output(0, first.dtype(), out_shape));
  int64_t outer = Product(out_shape, 0, axis), inner = Product(out_shape, axis + 1, rank);
  int64_t out_row = out_shape[axis] * inner, offset = 0;
  auto* dst = static_cast<uint8_t*>(out->raw_data());
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    const runtime::Tensor& t = *ctx.input(i);
    int64_t row = t.dim(axis) * inner;
    VIGIL_RETURN_IF_ERROR(LaunchRowCopy(ctx, "Concat", eb, t.raw_data(), row, dst + offset * eb, out_row, outer, row));
    offset += row;
  }
  return Status::Ok();
}

// The sizes of Split's outputs along an axis of size `dim` (ops/op_params.h,
// shared with the CPU kernel).
Result<Shape> SplitSizes(CudaKernelContext& ctx, int64_t dim) {
  Shape split_input;
  if (ctx.has_input(1)) {
    VIGIL_ASSIGN_OR_RETURN(split_input, HostInts(ctx, 1, "split"));
  }
  return ops::ResolveSplitSizes(ctx.node(), ctx.opset(), ctx.num_outputs(), dim,
                                ctx.has_input(1) ? &split_input : nullptr);
}

Status Split(CudaKernelContext& ctx) {
  const runtime::Tensor& in = *ctx.input(0);
  VIGIL_ASSIGN_OR_RETURN(size_t eb, InputElementBytes(ctx, 0));
  VIGIL_ASSIGN_OR_RETURN(int64_t axis, ops::IntAttr(ctx.node(), "axis", 0));
  int64_t rank = static_cast<int64_t>(in.rank());
  if (axis < -rank || axis >= rank) return ctx.Fail("axis {} is out of range for input {}", axis, in.Describe());
  if (axis < 0) axis += rank;
  VIGIL_ASSIGN_OR_RETURN(Shape split, SplitSizes(ctx, in.dim(axis)));
  int64_t outer = Product(in.shape(), 0, axis), inner = Product(in.shape(), axis + 1, rank);
  int64_t in_row = in.dim(axis) * inner, offset = 0;
  for (size_t i = 0; i < split.size(); ++i) {
    Shape shape = in.shape();
    shape[axis] = split[i];
    VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * out, ctx.Output(i, in.dtype(), shape));
    VIGIL_RETURN_IF_ERROR(LaunchStrided(ctx, "Split", eb, in.raw_data(), in.element_count(), out->raw_data(),
                                        {outer, split[i] * inner}, {in_row, 1}, offset));
    offset += split[i] * inner;
  }
  return Status::Ok();
}

Status Slice(CudaKernelContext& ctx) {
  const runtime::Tensor& in = *ctx.input(0);
  VIGIL_ASSIGN_OR_RETURN(size_t eb, InputElementBytes(ctx, 0));
  int64_t rank = static_cast<int64_t>(in.rank());
  Shape starts, ends, axes, steps;
  bool has_axes = false;
  if (ctx.opset() < 10) {
    VIGIL_ASSIGN_OR_RETURN(starts, ops::RequiredIntsAttr(ctx.node(), "starts"));
    VIGIL_ASSIGN_OR_RETURN(ends, ops::RequiredIntsAttr(ctx.node(), "ends"));
    has_axes = ops::HasAttr(ctx.node(), "axes");
    VIGIL_ASSIGN_OR_RETURN(axes, ops::IntsAttr(ctx.node(), "axes"));
  } else {
    VIGIL_ASSIGN_OR_RETURN(starts, HostInts(ctx, 1, "starts"));
    VIGIL_ASSIGN_OR_RETURN(ends, HostInts(ctx, 2, "ends"));
    if ((has_axes = ctx.has_input(3))) {
      VIGIL_ASSIGN_OR_RETURN(axes, HostInts(ctx, 3, "axes"));
    }
    if (ctx.has_input(4)) {
      VIGIL_ASSIGN_OR_RETURN(steps, HostInts(ctx, 4, "steps"));
    }
  }
  size_t n = starts.size();
  if (!has_axes) {
    for (size_t i = 0; i < n; ++i) axes.push_back(static_cast<int64_t>(i));
  }
  if (steps.empty() && !(ctx.opset() >= 10 && ctx.has_input(4))) steps.assign(n, 1);
  if (ends.size() != n || axes.size() != n || steps.size() != n) {
    return ctx.Fail("starts, ends, axes and steps have {}, {}, {} and {} entries; they must be equal", n, ends.size(),
                    axes.size(), steps.size());
  }
  Shape in_strides = Strides(in.shape()), out_shape = in.shape(), src_strides = in_strides;
  std::vector<bool> sliced(rank, false);
  int64_t base = 0;
  for (size_t j = 0; j < n; ++j) {
    int64_t a = axes[j], step = steps[j];
    if (a < -rank || a >= rank) return ctx.Fail("axes [{}] has an axis out of range for rank {}", fmt::join(axes, ","), rank);
    if (a < 0) a += rank;
    if (sliced[a]) return ctx.Fail("axis {} is sliced twice", a);
    if (step == 0) return ctx.Fail("steps[{}] is 0", j);
    sliced[a] = true;
    ops::shape_family::SliceAxis s = ops::shape_family::ClampSlice(starts[j], ends[j], step, in.dim(a));
    out_shape[a] = s.count;
    if (s.count > 0) base += s.start * in_strides[a];
    // With one element taken the step is never applied (and may be huge).
    src_strides[a] = s.count > 1 ? step * in_strides[a] : 0;
  }
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * out, ctx.Output(0, in.dtype(), out_shape));
  return LaunchStrided(ctx, "Slice", eb, in.raw_data(), in.element_count(), out->raw_data(), out_shape, src_strides,
                       base);
}

Status Gather(CudaKernelContext& ctx) {
  const runtime::Tensor& data = *ctx.input(0);
  const runtime::Tensor& idx = *ctx.input(1);
  VIGIL_ASSIGN_OR_RETURN(size_t eb, InputElementBytes(ctx, 0));
  VIGIL_ASSIGN_OR_RETURN(int64_t axis, ops::IntAttr(ctx.node(), "axis", 0));
  int64_t rank = static_cast<int64_t>(data.rank());
  if (axis < -rank || axis >= rank) return ctx.Fail("axis {} is out of range for data {}", axis, data.Describe());
  if (axis < 0) axis += rank;
  Shape out_shape(data.shape().begin(), data.shape().begin() + axis);
  out_shape.insert(out_shape.end(), idx.shape().begin(), idx.shape().end());
  out_shape.insert(out_shape.end(), data.shape().begin() + axis + 1, data.shape().end());
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * out, ctx.Output(0, data.dtype(), out_shape));
  int64_t dim = data.dim(axis), count = static_cast<int64_t>(idx.element_count());
  int64_t block = Product(data.shape(), axis + 1, rank);
  return ByIndexType(ctx, idx, [&](auto idx_tag) {
    using Idx = decltype(idx_tag);
    return LaunchMapCopy(ctx, "Gather", eb, data.raw_data(), data.element_count(), out->raw_data(), Count(out_shape),
                         0, [&](auto tag) {
                           using I = decltype(tag);
                           return GatherMap<I, Idx>{static_cast<const Idx*>(idx.raw_data()), I(count), I(dim), I(block)};
                         });
  });
}

Status GatherElements(CudaKernelContext& ctx) {
  const runtime::Tensor& data = *ctx.input(0);
  const runtime::Tensor& idx = *ctx.input(1);
  VIGIL_ASSIGN_OR_RETURN(size_t eb, InputElementBytes(ctx, 0));
  VIGIL_ASSIGN_OR_RETURN(int64_t axis, ops::IntAttr(ctx.node(), "axis", 0));
  int64_t rank = static_cast<int64_t>(data.rank());
  if (axis < -rank || axis >= rank) return ctx.Fail("axis {} is out of range for data {}", axis, data.Describe());
  if (axis < 0) axis += rank;
  if (idx.rank() != data.rank()) return ctx.Fail("indices {} must have the rank of data {}", idx.Describe(), data.Describe());
  for (int64_t k = 0; k < rank; ++k) {
    if (k != axis && idx.dim(k) > data.dim(k)) {
      return ctx.Fail("indices {} is larger than data {} along axis {}", idx.Describe(), data.Describe(), k);
    }
  }
  if (rank > kMaxRank) return ctx.Unsupported("rank {} (at most {})", rank, kMaxRank);
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * out, ctx.Output(0, data.dtype(), idx.shape()));
  Shape strides = Strides(data.shape());
  return ByIndexType(ctx, idx, [&](auto idx_tag) {
    using Idx = decltype(idx_tag);
    return LaunchMapCopy(ctx, "GatherElements", eb, data.raw_data(), data.element_count(), out->raw_data(),
                         idx.element_count(), 0, [&](auto tag) {
                           using I = decltype(tag);
                           GatherElementsMap<I, Idx> m{static_cast<const Idx*>(idx.raw_data()), static_cast<int>(rank),
                                                       static_cast<int>(axis), {}, {}, I(data.dim(axis))};
                           for (int d = 0; d < m.rank; ++d) m.dims[d] = I(idx.dim(d)), m.strides[d] = I(strides[d]);
                           return m;
                         });
  });
}

Status Expand(CudaKernelContext& ctx) {
  const runtime::Tensor& in = *ctx.input(0);
  VIGIL_ASSIGN_OR_RETURN(size_t eb, InputElementBytes(ctx, 0));
  VIGIL_ASSIGN_OR_RETURN(Shape shape, HostInts(ctx, 1, "shape"));
  size_t rank = std::max(in.rank(), shape.size());
  Shape out(rank), src_strides(rank, 0), in_strides = Strides(in.shape());
  for (size_t i = 0; i < rank; ++i) {
    int64_t a = i + in.rank() >= rank ? in.dim(i + in.rank() - rank) : 1;
    int64_t b = i + shape.size() >= rank ? shape[i + shape.size() - rank] : 1;
    if (b < 0) return ctx.Fail("shape [{}] has a negative dim", fmt::join(shape, ","));
    if (a != b && a != 1 && b != 1) {
      return ctx.Fail("cannot expand {} to shape [{}]: dim {} vs {}", in.Describe(), fmt::join(shape, ","), a, b);
    }
    out[i] = a == 1 ? b : a;
    if (i + in.rank() >= rank && a != 1) src_strides[i] = in_strides[i + in.rank() - rank];
  }
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * t, ctx.Output(0, in.dtype(), out));
  return LaunchStrided(ctx, "Expand", eb, in.raw_data(), in.element_count(), t->raw_data(), out, src_strides, 0);
}

Status Tile(CudaKernelContext& ctx) {
  const runtime::Tensor& in = *ctx.input(0);
  VIGIL_ASSIGN_OR_RETURN(size_t eb, InputElementBytes(ctx, 0));
  VIGIL_ASSIGN_OR_RETURN(Shape repeats, HostInts(ctx, 1, "repeats"));
  if (repeats.size() != in.rank()) return ctx.Fail("repeats has {} entries but the input is {}", repeats.size(), in.Describe());
  if (in.rank() > static_cast<size_t>(kMaxRank)) return ctx.Unsupported("rank {} (at most {})", in.rank(), kMaxRank);
  Shape out, strides = Strides(in.shape());
  for (size_t a = 0; a < in.rank(); ++a) {
    int64_t n;
    if (repeats[a] < 0 || __builtin_mul_overflow(in.dim(a), repeats[a], &n)) {
      return ctx.Fail("repeats [{}] are invalid for input {}", fmt::join(repeats, ","), in.Describe());
    }
    out.push_back(n);
  }
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * t, ctx.Output(0, in.dtype(), out));
  return LaunchMapCopy(ctx, "Tile", eb, in.raw_data(), in.element_count(), t->raw_data(), Count(out), 0, [&](auto tag) {
    using I = decltype(tag);
    PadMap<I> m{static_cast<int>(in.rank()), PadMode::kWrap};
    for (int d = 0; d < m.rank; ++d) m.dims[d] = I(out[d]), m.len[d] = I(in.dim(d)), m.strides[d] = I(strides[d]);
    return m;
  });
}


// `v` stored as one element of `t` (integers round half to even and
// saturate, as the CPU kernel does), as the low bytes of a uint64.
template <typename T>
uint64_t IntBits(double v) {
  T r = 0;
  if (!std::isnan(v)) {
    double n = std::nearbyint(v);
    if (n <= static_cast<double>(std::numeric_limits<T>::min())) r = std::numeric_limits<T>::min();
    else if (n >= static_cast<double>(std::numeric_limits<T>::max())) r = std::numeric_limits<T>::max();
    else r = static_cast<T>(n);
  }
  uint64_t bits = 0;
  std::memcpy(&bits, &r, sizeof(T));
  return bits;
}

bool ValueBits(ir::DataType t, double v, uint64_t* bits) {
  using D = ir::DataType;
  *bits = 0;
  switch (t) {
    case D::kFloat32: { float f = static_cast<float>(v); std::memcpy(bits, &f, 4); return true; }
    case D::kFloat64: std::memcpy(bits, &v, 8); return true;
    case D::kFloat16: *bits = FloatToFloat16(static_cast<float>(v)); return true;
    case D::kBfloat16: *bits = FloatToBfloat16(static_cast<float>(v)); return true;
    case D::kInt8: *bits = IntBits<int8_t>(v); return true;
    case D::kInt16: *bits = IntBits<int16_t>(v); return true;
    case D::kInt32: *bits = IntBits<int32_t>(v); return true;
    case D::kInt64: *bits = IntBits<int64_t>(v); return true;
    case D::kUint8: *bits = IntBits<uint8_t>(v); return true;
    case D::kUint16: *bits = IntBits<uint16_t>(v); return true;
    case D::kUint32: *bits = IntBits<uint32_t>(v); return true;
    case D::kUint64: *bits = IntBits<uint64_t>(v); return true;
    case D::kBool: *bits = v != 0; return true;
    default: return false;
  }
}

Status Pad(CudaKernelContext& ctx) {
  const runtime::Tensor& data = *ctx.input(0);
  VIGIL_ASSIGN_OR_RETURN(size_t eb, InputElementBytes(ctx, 0));
  VIGIL_ASSIGN_OR_RETURN(PadMode mode, ops::ReadPadMode(ctx.node()));
  int64_t rank = static_cast<int64_t>(data.rank());
  if (rank > kMaxRank) return ctx.Unsupported("rank {} (at most {})", rank, kMaxRank);
  // Begin pads then end pads for every axis (ops/op_params.h, shared with the CPU kernel).
  Shape pads_input, axes_input;
  if (ctx.opset() >= 11) {
    VIGIL_ASSIGN_OR_RETURN(pads_input, HostInts(ctx, 1, "pads"));
  }
  const bool has_axes = ctx.opset() >= 18 && ctx.has_input(3);
  if (has_axes) {
    VIGIL_ASSIGN_OR_RETURN(axes_input, HostInts(ctx, 3, "axes"));
  }
  VIGIL_ASSIGN_OR_RETURN(Shape full, ops::ResolvePads(ctx.node(), ctx.opset(), rank,
                                                      ctx.opset() >= 11 ? &pads_input : nullptr,
                                                      has_axes ? &axes_input : nullptr));
  uint64_t fill = 0;
  if (ctx.opset() < 11) {
    VIGIL_ASSIGN_OR_RETURN(float v, ops::FloatAttr(ctx.node(), "value", 0.0f));
    if (!ValueBits(data.dtype(), v, &fill)) return ctx.Unsupported("dtype {} with a 'value' attribute", ir::DataTypeName(data.dtype()));
  } else if (const runtime::Tensor* c = ctx.input(2); c && c->element_count() > 0) {
    if (c->dtype() != data.dtype() || c->element_count() != 1) {
      return ctx.Fail("constant_value {} must be one element of the data's dtype {}", c->Describe(),
                      ir::DataTypeName(data.dtype()));
    }
    std::memcpy(&fill, c->raw_data(), eb);
  }
  constexpr int64_t kLimit = int64_t{1} << 32;
  Shape out, lead(rank), first(rank), len(rank);
  for (int64_t a = 0; a < rank; ++a) {
    int64_t before = full[a], after = full[a + rank];
    if (before > kLimit || before < -kLimit || after > kLimit || after < -kLimit) {
      return ctx.Fail("pads [{}] are too large", fmt::join(full, ","));
    }
    first[a] = std::max<int64_t>(-before, 0);
    len[a] = data.dim(a) - first[a] - std::max<int64_t>(-after, 0);
    if (len[a] < 0) return ctx.Fail("pads {} and {} crop axis {} of size {} below zero", before, after, a, data.dim(a));
    lead[a] = std::max<int64_t>(before, 0);
    out.push_back(data.dim(a) + before + after);
  }
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * t, ctx.Output(0, data.dtype(), out));
  for (int64_t a = 0; a < rank; ++a) {
    if (len[a] == 0 && out[a] > 0 && mode != PadMode::kConstant) {
      return ctx.Fail("cannot pad the empty axis {} in a non-constant mode", a);
    }
  }
  Shape strides = Strides(data.shape());
  return LaunchMapCopy(ctx, "Pad", eb, data.raw_data(), data.element_count(), t->raw_data(), Count(out), fill,
                       [&](auto tag) {
                         using I = decltype(tag);
                         PadMap<I> m{static_cast<int>(rank), mode};
                         for (int d = 0; d < m.rank; ++d) {
                           m.dims[d] = I(out[d]), m.strides[d] = I(strides[d]), m.lead[d] = I(lead[d]);
                           m.first[d] = I(first[d]), m.len[d] = I(len[d]);
                         }
                         return m;
                       });
}

// DepthToSpace / SpaceToDepth: the output is the 6-D view `src6` of the
// input transposed by `perm`.
Status BlockPermute(CudaKernelContext& ctx, bool to_space) {
  const runtime::Tensor& in = *ctx.input(0);
  VIGIL_ASSIGN_OR_RETURN(size_t eb, InputElementBytes(ctx, 0));
  VIGIL_ASSIGN_OR_RETURN(int64_t b, ops::RequiredIntAttr(ctx.node(), "blocksize"));
  if (b < 1 || b > (int64_t{1} << 20)) return ctx.Fail("blocksize is {}; it must be in [1, 2^20]", b);
  if (in.rank() != 4) return ctx.Fail("input {} must be 4-D (NCHW)", in.Describe());
  VIGIL_ASSIGN_OR_RETURN(std::string mode, ops::StringAttr(ctx.node(), "mode", "DCR"));
  if (mode != "DCR" && mode != "CRD") return ctx.Fail("mode '{}' is not DCR or CRD", mode);
  bool dcr = mode == "DCR";
  int64_t n = in.dim(0), c = in.dim(1), h = in.dim(2), w = in.dim(3);
  Shape src6, perm, out;
  if (to_space) {
    if (c % (b * b) != 0) return ctx.Fail("channels {} of {} are not divisible by blocksize² {}", c, in.Describe(), b * b);
    int64_t oc = c / (b * b);
    out = {n, oc, h * b, w * b};
    src6 = dcr ? Shape{n, b, b, oc, h, w} : Shape{n, oc, b, b, h, w};
    perm = dcr ? Shape{0, 3, 4, 1, 5, 2} : Shape{0, 1, 4, 2, 5, 3};
  } else {
    if (h % b != 0 || w % b != 0) return ctx.Fail("height and width of {} are not divisible by blocksize {}", in.Describe(), b);
    out = {n, c * b * b, h / b, w / b};
    src6 = {n, c, h / b, b, w / b, b};
    perm = dcr ? Shape{0, 3, 5, 1, 2, 4} : Shape{0, 1, 3, 5, 2, 4};
  }
  Shape strides6 = Strides(src6), out6, src_strides;
  for (int64_t p : perm) {
    out6.push_back(src6[p]);
    src_strides.push_back(strides6[p]);
  }
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * t, ctx.Output(0, in.dtype(), out));
  return LaunchStrided(ctx, to_space ? "DepthToSpace" : "SpaceToDepth", eb, in.raw_data(), in.element_count(),
                       t->raw_data(), out6, src_strides, 0);
}

Status DepthToSpace(CudaKernelContext& ctx) { return BlockPermute(ctx, true); }
Status SpaceToDepth(CudaKernelContext& ctx) { return BlockPermute(ctx, false); }

Status Trilu(CudaKernelContext& ctx) {
  const runtime::Tensor& in = *ctx.input(0);
  VIGIL_ASSIGN_OR_RETURN(size_t eb, InputElementBytes(ctx, 0));
  if (in.rank() < 2) return ctx.Fail("input {} must have rank >= 2", in.Describe());
  int64_t k = 0;
  if (ctx.has_input(1)) {
    VIGIL_ASSIGN_OR_RETURN(Shape kv, HostInts(ctx, 1, "k"));
    if (kv.size() != 1) return ctx.Fail("k must be a single value, got {} values", kv.size());
    k = kv[0];
  }
  VIGIL_ASSIGN_OR_RETURN(int64_t upper, ops::IntAttr(ctx.node(), "upper", 1));
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * out, ctx.Output(0, in.dtype(), in.shape()));
  int64_t rows = in.dim(in.rank() - 2), cols = in.dim(in.rank() - 1);
  return LaunchMapCopy(ctx, "Trilu", eb, in.raw_data(), in.element_count(), out->raw_data(), in.element_count(), 0,
                       [&](auto tag) {
                         using I = decltype(tag);
                         return TriluMap<I>{I(rows), I(cols), k, upper != 0};
                       });
}

// ---------------------------------------------------------------- support predicates

void Why(std::string* why_not, std::string text) {
  if (why_not) *why_not = std::move(text);
}

bool RankAtMost(const runtime::NodeTypes& types, size_t i, bool input, std::string* why_not) {
  const auto& list = input ? types.inputs : types.outputs;
  const ir::TypeInfo* t = i < list.size() ? list[i] : nullptr;
  if (t && t->shape.rank_known && t->shape.dims.size() > static_cast<size_t>(kMaxRank)) {
    Why(why_not, fmt::format("rank {} of {} {} (at most {})", t->shape.dims.size(), input ? "input" : "output", i, kMaxRank));
    return false;
  }
  return true;
}

bool IntIndices(const runtime::NodeTypes& types, size_t i, bool optional, std::string* why_not) {
  ir::DataType t = InputDtype(types, i);
  if (t == ir::DataType::kInt32 || t == ir::DataType::kInt64) return true;
  if (optional && (i >= types.inputs.size() || !types.inputs[i])) return true;
  Why(why_not, t == ir::DataType::kUndefined ? fmt::format("the dtype of input {} is not known at load time", i)
                                             : fmt::format("dtype {} of input {}", ir::DataTypeName(t), i));
  return false;
}

bool AttrIn(const ir::Node& node, const char* name, const char* def, std::initializer_list<const char*> allowed,
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

bool AnyMovable(const ir::Node&, const runtime::NodeTypes& types, std::string* why_not) {
  return FixedSizeInput(types, 0, why_not);
}
bool MovableRanked(const ir::Node&, const runtime::NodeTypes& types, std::string* why_not) {
  return FixedSizeInput(types, 0, why_not) && RankAtMost(types, 0, true, why_not) &&
         RankAtMost(types, 0, false, why_not);
}

bool SupportsConcat(const ir::Node& node, const runtime::NodeTypes& types, std::string* why_not) {
  if (node.inputs.empty()) return Why(why_not, "no inputs"), false;
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    if (!FixedSizeInput(types, i, why_not)) return false;
    if (InputDtype(types, i) != InputDtype(types, 0)) return Why(why_not, "inputs of mixed dtypes"), false;
  }
  return true;
}

bool SupportsSlice(const ir::Node& node, const runtime::NodeTypes& types, std::string* why_not) {
  if (!MovableRanked(node, types, why_not)) return false;
  for (size_t i = 1; i < node.inputs.size() && i <= 4; ++i) {
    if (!node.inputs[i].empty() && !IntIndices(types, i, true, why_not)) return false;
  }
  return true;
}

bool SupportsGather(const ir::Node& n, const runtime::NodeTypes& t, std::string* w) {
  return AnyMovable(n, t, w) && IntIndices(t, 1, false, w);
}
bool SupportsGatherElements(const ir::Node& n, const runtime::NodeTypes& t, std::string* w) {
  return MovableRanked(n, t, w) && IntIndices(t, 1, false, w);
}
bool SupportsPadMode(const ir::Node& n, std::string* w) {
  return AttrIn(n, "mode", "constant", {"constant", "reflect", "edge", "wrap"}, w);
}

bool SupportsPadOld(const ir::Node& node, const runtime::NodeTypes& types, std::string* why_not) {
  if (!MovableRanked(node, types, why_not) || !SupportsPadMode(node, why_not)) return false;
  uint64_t bits;
  ir::DataType t = InputDtype(types, 0);
  if (!ValueBits(t, 0.0, &bits)) {
    Why(why_not, fmt::format("dtype {} of input 0 (with the 'value' attribute)", ir::DataTypeName(t)));
    return false;
  }
  return true;
}

bool SupportsPad(const ir::Node& n, const runtime::NodeTypes& t, std::string* w) {
  return MovableRanked(n, t, w) && SupportsPadMode(n, w);
}
bool SupportsBlocks(const ir::Node& n, const runtime::NodeTypes& t, std::string* w) {
  return AnyMovable(n, t, w) && AttrIn(n, "mode", "DCR", {"DCR", "CRD"}, w);
}

const CudaKernelDef kDataMovementKernels[] = {
    {"", "Transpose", 1, kLatest, WithInputs<Transpose, 1>, MovableRanked},
    {"", "Concat", 1, kLatest, Concat, SupportsConcat},
    {"", "Split", 1, kLatest, WithInputs<Split, 1>, AnyMovable, HostInput(1)},
    {"", "Slice", 1, 9, WithInputs<Slice, 1>, MovableRanked},
    {"", "Slice", 10, kLatest, WithInputs<Slice, 1>, SupportsSlice, HostInput(1) | HostInput(2) | HostInput(3) | HostInput(4)},
    {"", "Gather", 1, kLatest, WithInputs<Gather, 2>, SupportsGather},
    {"", "GatherElements", 11, kLatest, WithInputs<GatherElements, 2>, SupportsGatherElements},
    {"", "Expand", 8, kLatest, WithInputs<Expand, 2>, MovableRanked, HostInput(1)},
    {"", "Tile", 6, kLatest, WithInputs<Tile, 2>, MovableRanked, HostInput(1)},
    {"", "Pad", 1, 10, WithInputs<Pad, 1>, SupportsPadOld},
    {"", "Pad", 11, kLatest, WithInputs<Pad, 1>, SupportsPad, HostInput(1) | HostInput(2) | HostInput(3)},
    {"", "DepthToSpace", 1, kLatest, WithInputs<DepthToSpace, 1>, SupportsBlocks},
    {"", "SpaceToDepth", 1, kLatest, WithInputs<SpaceToDepth, 1>, SupportsBlocks},
    {"", "Trilu", 14, kLatest, WithInputs<Trilu, 1>, AnyMovable, HostInput(1)},
};

}  // namespace

std::span<const CudaKernelDef> DataMovementCudaKernels() { return kDataMovementKernels; }

}  // namespace vigil::cuda
