// CUDA kernels of the data-movement ops: Transpose, Concat, Split, Slice,
// Gather, GatherElements, Expand and Tile (Pad, DepthToSpace, SpaceToDepth
// and Trilu are in data_movement_spatial.cu). They copy whole elements
// (DispatchBySize), so any dtype of 1, 2, 4 or 8 bytes works; an input whose
// dtype is not known at load time is taken, and its width checked when the
// kernel runs (unknown_dtype.h, InputElementBytes). Shapes and
// parameters are worked out on the host as the CPU kernels
// (backends/cpu/shape_ops_*.cpp) do, through src/ops where shared; the
// device only maps each output element to the input element it copies.
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
#include <optional>
#include <string>
#include <vector>
#include <fmt/ranges.h>
#include "backends/cuda/cuda_kernel.h"
#include "backends/cuda/device_common.cuh"
#include "backends/cuda/epilogue.h"
#include "vigil/float16.h"
#include "ops/op_params.h"
#include "ops/shape_ops_common.h"
#include "backends/cuda/data_movement_common.cuh"

namespace vigil::cuda {
namespace {

using namespace movement;

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

// ---------------------------------------------------------------- kernels

// When `perm` on `dims`, with runs of consecutive axes merged, swaps two
// blocks: [A, B, C] -> [A, C, B] (or [B, C] -> [C, B]): the sizes n = A,
// rows = B, cols = C of that batched 2-D transpose. NCHW <-> NHWC are such.
struct BatchedSwap {
  int64_t n, rows, cols;
};
std::optional<BatchedSwap> AsBatchedSwap(const Shape& dims, const Shape& perm) {
  // Output axes in order, runs whose source axes are consecutive and
  // ascending merged into one group; unit axes are left out (they do not
  // move data). Groups are disjoint runs of source axes, so their order in
  // the source is the order of their last source axis.
  struct Group {
    int64_t last_axis, size;
  };
  std::vector<Group> g;
  for (int64_t axis : perm) {
    if (dims[axis] == 1) continue;
    if (!g.empty() && axis == g.back().last_axis + 1) {
      g.back() = {axis, g.back().size * dims[axis]};
    } else {
      g.push_back({axis, dims[axis]});
    }
  }
  // out [G0, G1] from source [G1, G0]: source [rows, cols] = [G1, G0].
  if (g.size() == 2 && g[1].last_axis < g[0].last_axis) return BatchedSwap{1, g[1].size, g[0].size};
  // out [G0, G1, G2] from source [G0, G2, G1]: n = G0, rows = G2, cols = G1.
  if (g.size() == 3 && g[0].last_axis < g[2].last_axis && g[2].last_axis < g[1].last_axis) {
    return BatchedSwap{g[0].size, g[2].size, g[1].size};
  }
  return std::nullopt;
}

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
  // A swap of two blocks of axes (NCHW <-> NHWC) through a tiled kernel: the
  // strided copy's index arithmetic made ViT's input NCHW -> NHWC (fp16,
  // [64,3,224,224]) take 0.41 ms on an H100.
  if (auto swap = AsBatchedSwap(in.shape(), perm); swap && out->element_count() > 0) {
    Status done = LaunchBatchedTranspose(out->raw_data(), in.raw_data(), eb, swap->n, swap->rows, swap->cols,
                                         ctx.stream());
    if (done.code() != ErrorCode::kUnsupported) return done;  // else (grid limits) the strided copy
  }
  return LaunchStrided(ctx, "Transpose", eb, in.raw_data(), in.element_count(), out->raw_data(), out_shape,
                       src_strides, 0);
}

Status Concat(CudaKernelContext& ctx) {
  VIGIL_RETURN_IF_ERROR(RequireInputs(ctx, ctx.num_inputs()));
  if (ctx.num_inputs() == 0) return ctx.Fail("needs at least one input");
  const runtime::Tensor& first = *ctx.input(0);
  VIGIL_ASSIGN_OR_RETURN(size_t eb, InputElementBytes(ctx, 0));
  int64_t rank = static_cast<int64_t>(first.rank());
  VIGIL_ASSIGN_OR_RETURN(int64_t axis, ops::ResolveConcatAxis(ctx.node(), ctx.opset(), rank, first.Describe()));
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
  // Blocks (the rows gathered) move as words of up to 16 bytes where their
  // size and the pointers allow: a gathered row is then one load per word.
  const size_t w = WordBytes(eb, data.raw_data(), out->raw_data(), {block});
  const auto scale = static_cast<int64_t>(w / eb);
  block /= scale;
  return ByIndexType(ctx, idx, [&](auto idx_tag) {
    using Idx = decltype(idx_tag);
    return LaunchMapCopy(ctx, "Gather", w, data.raw_data(), data.element_count() / scale, out->raw_data(),
                         Count(out_shape) / scale, 0, [&](auto tag) {
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


// Inputs of one dtype of 1, 2, 4 or 8 bytes; those whose dtype is not known
// at load time are taken too (the kernel checks every input's dtype and
// width when it runs).
bool SupportsConcat(const ir::Node& node, const runtime::NodeTypes& types, std::string* why_not) {
  if (node.inputs.empty()) return Why(why_not, "no inputs"), false;
  ir::DataType known = ir::DataType::kUndefined;
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    if (!FixedSizeOrUnknownInput(types, i, why_not)) return false;
    const ir::DataType t = InputDtype(types, i);
    if (t == ir::DataType::kUndefined) continue;
    if (known != ir::DataType::kUndefined && t != known) return Why(why_not, "inputs of mixed dtypes"), false;
    known = t;
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
};

}  // namespace

std::span<const CudaKernelDef> DataMovementCudaKernels() { return kDataMovementKernels; }

}  // namespace vigil::cuda
