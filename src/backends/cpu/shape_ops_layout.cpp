// CPU kernels that rearrange a tensor without looking at its values:
// Reshape, Flatten, Squeeze, Unsqueeze (views of the input, no copy),
// Transpose, Concat, Split, Expand, Tile.
#include <algorithm>
#include <cstring>
#include <vector>

#include <fmt/ranges.h>

#include "backends/cpu/parallel.h"
#include "backends/cpu/shape_ops_common.h"
#include "ops/op_params.h"

namespace vigil::cpu::shape_family {
namespace {

using Shape = std::vector<int64_t>;

std::string ShapeText(const Shape& s) { return fmt::format("[{}]", fmt::join(s, ",")); }

Result<Shape> ReshapeTarget(KernelContext& ctx, const runtime::Tensor& in) {
  Shape shape;
  if (ctx.opset() < 5) {
    VIGIL_ASSIGN_OR_RETURN(shape, ops::RequiredIntsAttr(ctx.node(), "shape"));
  } else {
    VIGIL_ASSIGN_OR_RETURN(shape, ReadInts(ctx, 1, "shape"));
  }
  VIGIL_ASSIGN_OR_RETURN(int64_t allowzero, ops::IntAttr(ctx.node(), "allowzero", 0));
  if (ctx.opset() < 14) allowzero = 0;
  std::optional<size_t> minus_one;
  uint64_t known = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    int64_t& v = shape[i];
    if (v == 0 && !allowzero) {
      if (i >= in.rank()) return ctx.Fail("shape[{}] is 0 (copy the input dim) but the input is {}", i, in.Describe());
      v = in.dim(i);
    }
    if (v == -1) {
      if (minus_one) return ctx.Fail("shape {} has more than one -1", ShapeText(shape));
      minus_one = i;
      continue;
    }
    if (v < 0) return ctx.Fail("shape {} has dim {}; dims must be >= -1", ShapeText(shape), v);
    if (v != 0 && known > UINT64_MAX / static_cast<uint64_t>(v)) return ctx.Fail("shape {} overflows", ShapeText(shape));
    known *= static_cast<uint64_t>(v);
  }
  uint64_t count = in.element_count();
  if (minus_one) {
    if (known == 0 || count % known != 0) {
      return ctx.Fail("cannot reshape {} to {}: {} elements do not divide into the other dims", in.Describe(),
                      ShapeText(shape), count);
    }
    shape[*minus_one] = static_cast<int64_t>(count / known);
  } else if (known != count) {
    return ctx.Fail("cannot reshape {} ({} elements) to {} ({} elements)", in.Describe(), count, ShapeText(shape),
                    known);
  }
  return shape;
}

Status Reshape(KernelContext& ctx) {
  const runtime::Tensor& in = *ctx.input(0);
  VIGIL_ASSIGN_OR_RETURN(Shape shape, ReshapeTarget(ctx, in));
  return ctx.SetOutput(0, ViewWithShape(in, std::move(shape)));
}

Status Flatten(KernelContext& ctx) {
  const runtime::Tensor& in = *ctx.input(0);
  VIGIL_ASSIGN_OR_RETURN(int64_t axis, ops::IntAttr(ctx.node(), "axis", 1));
  int64_t rank = static_cast<int64_t>(in.rank());
  if (axis < -rank || axis > rank) return ctx.Fail("axis {} is out of range for input {}", axis, in.Describe());
  if (axis < 0) axis += rank;
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < rank; ++i) (i < axis ? outer : inner) *= in.dim(i);
  return ctx.SetOutput(0, ViewWithShape(in, {outer, inner}));
}

// Squeeze/Unsqueeze axes: attribute before opset 13, optional input from 13.
Result<std::vector<int64_t>> SqueezeAxes(KernelContext& ctx) {
  if (ctx.opset() < 13) return ops::IntsAttr(ctx.node(), "axes");
  if (!ctx.has_input(1)) return std::vector<int64_t>{};
  return ReadInts(ctx, 1, "axes");
}

// Normalised axes as a membership mask over `rank`.
Result<std::vector<bool>> AxisMask(KernelContext& ctx, const std::vector<int64_t>& axes, int64_t rank) {
  std::vector<bool> mask(rank, false);
  for (int64_t a : axes) {
    if (a < -rank || a >= rank) return ctx.Fail("axis {} is out of range for rank {}", a, rank);
    int64_t n = a < 0 ? a + rank : a;
    if (mask[n]) return ctx.Fail("axes [{}] repeats axis {}", fmt::join(axes, ","), n);
    mask[n] = true;
  }
  return mask;
}

Status Squeeze(KernelContext& ctx) {
  const runtime::Tensor& in = *ctx.input(0);
  VIGIL_ASSIGN_OR_RETURN(std::vector<int64_t> axes, SqueezeAxes(ctx));
  Shape out;
  if (axes.empty()) {
    for (int64_t d : in.shape()) {
      if (d != 1) out.push_back(d);
    }
  } else {
    VIGIL_ASSIGN_OR_RETURN(std::vector<bool> mask, AxisMask(ctx, axes, static_cast<int64_t>(in.rank())));
    for (size_t i = 0; i < in.rank(); ++i) {
      if (mask[i] && in.dim(i) != 1) return ctx.Fail("cannot squeeze axis {} of {}: its size is not 1", i, in.Describe());
      if (!mask[i]) out.push_back(in.dim(i));
    }
  }
  return ctx.SetOutput(0, ViewWithShape(in, std::move(out)));
}

Status Unsqueeze(KernelContext& ctx) {
  const runtime::Tensor& in = *ctx.input(0);
  VIGIL_ASSIGN_OR_RETURN(std::vector<int64_t> axes, SqueezeAxes(ctx));
  int64_t out_rank = static_cast<int64_t>(in.rank() + axes.size());
  VIGIL_ASSIGN_OR_RETURN(std::vector<bool> mask, AxisMask(ctx, axes, out_rank));
  Shape out;
  size_t next = 0;
  for (int64_t i = 0; i < out_rank; ++i) out.push_back(mask[i] ? 1 : in.dim(next++));
  return ctx.SetOutput(0, ViewWithShape(in, std::move(out)));
}

Status Transpose(KernelContext& ctx) {
  const runtime::Tensor& in = *ctx.input(0);
  VIGIL_ASSIGN_OR_RETURN(size_t eb, MovableElementBytes(ctx, 0));
  size_t rank = in.rank();
  VIGIL_ASSIGN_OR_RETURN(std::vector<int64_t> perm, ops::IntsAttr(ctx.node(), "perm"));
  if (!ops::HasAttr(ctx.node(), "perm")) {
    for (size_t i = 0; i < rank; ++i) perm.push_back(static_cast<int64_t>(rank - 1 - i));
  }
  if (perm.size() != rank) return ctx.Fail("perm has {} entries but the input is {}", perm.size(), in.Describe());
  std::vector<bool> seen(rank, false);
  Shape out_shape, src_strides;
  Shape in_strides = Strides(in.shape());
  for (int64_t p : perm) {
    if (p < 0 || p >= static_cast<int64_t>(rank) || seen[p]) {
      return ctx.Fail("perm [{}] is not a permutation of 0..{}", fmt::join(perm, ","), rank - 1);
    }
    seen[p] = true;
    out_shape.push_back(in.dim(p));
    src_strides.push_back(in_strides[p]);
  }
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * out, ctx.Output(0, in.dtype(), out_shape));
  StridedCopy(eb, out_shape, in.raw_data(), src_strides, out->raw_data());
  return Status::Ok();
}

Status Concat(KernelContext& ctx) {
  const runtime::Tensor& first = *ctx.input(0);
  VIGIL_ASSIGN_OR_RETURN(size_t eb, MovableElementBytes(ctx, 0));
  int64_t rank = static_cast<int64_t>(first.rank());
  VIGIL_ASSIGN_OR_RETURN(int64_t axis, ops::ResolveConcatAxis(ctx.node(), ctx.opset(), rank, first.Describe()));
  Shape out_shape = first.shape();
  out_shape[axis] = 0;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    const runtime::Tensor* t = ctx.input(i);
    if (!t) return ctx.Fail("input {} is missing", i);
    if (t->dtype() != first.dtype() || t->rank() != first.rank()) {
      return ctx.Fail("input {} is {} but input 0 is {}; Concat needs one dtype and rank", i, t->Describe(),
                      first.Describe());
    }
    for (int64_t k = 0; k < rank; ++k) {
      if (k != axis && t->dim(k) != first.dim(k)) {
        return ctx.Fail("input {} is {} but input 0 is {}; only axis {} may differ", i, t->Describe(),
                        first.Describe(), axis);
      }
    }
    out_shape[axis] += t->dim(axis);
  }
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * out, ctx.Output(0, first.dtype(), out_shape));
  int64_t outer = 1, inner = 1;
  for (int64_t k = 0; k < rank; ++k) {
    if (k < axis) outer *= out_shape[k];
    if (k > axis) inner *= out_shape[k];
  }
  // Each input's block per outer position, in output order.
  auto for_each_block = [&](auto&& fn) {
    auto* dst = static_cast<uint8_t*>(out->raw_data());
    for (int64_t o = 0; o < outer; ++o) {
      for (size_t i = 0; i < ctx.num_inputs(); ++i) {
        const runtime::Tensor& t = *ctx.input(i);
        const size_t block = static_cast<size_t>(t.dim(axis) * inner) * eb;
        fn(dst, static_cast<const uint8_t*>(t.raw_data()) + o * block, block);
        dst += block;
      }
    }
  };
  // Small (shape vectors): copied here. Large: cut into pieces of at most
  // kPiece bytes, split across the pool's threads (parallel.h).
  constexpr size_t kPiece = 4 * kParallelGrain;
  if (out->byte_size() < 2 * kPiece) {
    for_each_block([](uint8_t* d, const uint8_t* s, size_t n) { if (n) std::memcpy(d, s, n); });
    return Status::Ok();
  }
  // Rows of the output smaller than a piece (a channels-last Concat: a few
  // hundred bytes per pixel): whole rows split across the threads.
  const size_t out_row = out->byte_size() / static_cast<size_t>(outer);
  if (out_row < kPiece) {
    ParallelFor(outer, ItemsPerGrain(static_cast<int64_t>(out_row)), [&](int64_t first, int64_t last) {
      auto* dst = static_cast<uint8_t*>(out->raw_data()) + static_cast<size_t>(first) * out_row;
      for (int64_t o = first; o < last; ++o) {
        for (size_t i = 0; i < ctx.num_inputs(); ++i) {
          const runtime::Tensor& t = *ctx.input(i);
          const size_t block = static_cast<size_t>(t.dim(axis) * inner) * eb;
          if (block) std::memcpy(dst, static_cast<const uint8_t*>(t.raw_data()) + o * block, block);
          dst += block;
        }
      }
    });
    return Status::Ok();
  }
  struct Piece {
    uint8_t* dst;
    const uint8_t* src;
    size_t bytes;
  };
  std::vector<Piece> pieces;
  for_each_block([&](uint8_t* d, const uint8_t* s, size_t n) {
    for (size_t at = 0; at < n; at += kPiece) pieces.push_back({d + at, s + at, std::min(kPiece, n - at)});
  });
  ParallelFor(static_cast<int64_t>(pieces.size()), 1, [&](int64_t first, int64_t last) {
    for (int64_t k = first; k < last; ++k) {
      const Piece& p = pieces[static_cast<size_t>(k)];
      std::memcpy(p.dst, p.src, p.bytes);
    }
  });
  return Status::Ok();
}

// The sizes of Split's outputs along `dim` (ops/op_params.h, shared with
// the other backends).
Result<std::vector<int64_t>> SplitSizes(KernelContext& ctx, int64_t dim) {
  std::vector<int64_t> split_input;
  if (ctx.has_input(1)) {
    VIGIL_ASSIGN_OR_RETURN(split_input, ReadInts(ctx, 1, "split"));
  }
  return ops::ResolveSplitSizes(ctx.node(), ctx.opset(), ctx.num_outputs(), dim,
                                ctx.has_input(1) ? &split_input : nullptr);
}

Status Split(KernelContext& ctx) {
  const runtime::Tensor& in = *ctx.input(0);
  VIGIL_ASSIGN_OR_RETURN(size_t eb, MovableElementBytes(ctx, 0));
  VIGIL_ASSIGN_OR_RETURN(int64_t axis, ops::IntAttr(ctx.node(), "axis", 0));
  int64_t rank = static_cast<int64_t>(in.rank());
  if (axis < -rank || axis >= rank) return ctx.Fail("axis {} is out of range for input {}", axis, in.Describe());
  if (axis < 0) axis += rank;
  VIGIL_ASSIGN_OR_RETURN(std::vector<int64_t> split, SplitSizes(ctx, in.dim(axis)));
  int64_t outer = 1, inner = 1;
  for (int64_t k = 0; k < rank; ++k) {
    if (k < axis) outer *= in.dim(k);
    if (k > axis) inner *= in.dim(k);
  }
  size_t in_row = static_cast<size_t>(in.dim(axis) * inner) * eb;
  size_t offset = 0;  // bytes into each input row where this output's part starts
  for (size_t i = 0; i < split.size(); ++i) {
    Shape shape = in.shape();
    shape[axis] = split[i];
    VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * out, ctx.Output(i, in.dtype(), shape));
    size_t block = static_cast<size_t>(split[i] * inner) * eb;
    auto* dst = static_cast<uint8_t*>(out->raw_data());
    const auto* src = static_cast<const uint8_t*>(in.raw_data()) + offset;
    for (int64_t o = 0; o < outer && block; ++o) std::memcpy(dst + o * block, src + o * in_row, block);
    offset += block;
  }
  return Status::Ok();
}

Status Expand(KernelContext& ctx) {
  const runtime::Tensor& in = *ctx.input(0);
  VIGIL_ASSIGN_OR_RETURN(size_t eb, MovableElementBytes(ctx, 0));
  VIGIL_ASSIGN_OR_RETURN(Shape shape, ReadInts(ctx, 1, "shape"));
  size_t rank = std::max(in.rank(), shape.size());
  Shape out(rank), src_strides(rank, 0);
  Shape in_strides = Strides(in.shape());
  for (size_t i = 0; i < rank; ++i) {
    int64_t a = i + in.rank() >= rank ? in.dim(i + in.rank() - rank) : 1;
    int64_t b = i + shape.size() >= rank ? shape[i + shape.size() - rank] : 1;
    if (b < 0) return ctx.Fail("shape {} has a negative dim", ShapeText(shape));
    if (a != b && a != 1 && b != 1) {
      return ctx.Fail("cannot expand {} to shape {}: dim {} vs {}", in.Describe(), ShapeText(shape), a, b);
    }
    out[i] = a == 1 ? b : a;
    if (i + in.rank() >= rank && a != 1) src_strides[i] = in_strides[i + in.rank() - rank];
  }
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * t, ctx.Output(0, in.dtype(), out));
  StridedCopy(eb, out, in.raw_data(), src_strides, t->raw_data());
  return Status::Ok();
}

Status Tile(KernelContext& ctx) {
  const runtime::Tensor& in = *ctx.input(0);
  VIGIL_ASSIGN_OR_RETURN(size_t eb, MovableElementBytes(ctx, 0));
  VIGIL_ASSIGN_OR_RETURN(Shape repeats, ReadInts(ctx, 1, "repeats"));
  if (repeats.size() != in.rank()) {
    return ctx.Fail("repeats has {} entries but the input is {}", repeats.size(), in.Describe());
  }
  // Output [r0*d0, r1*d1, ...] in row-major order is [r0, d0, r1, d1, ...]:
  // a strided copy that reads each repeat axis with stride 0.
  Shape out, interleaved, src_strides, in_strides = Strides(in.shape());
  for (size_t a = 0; a < in.rank(); ++a) {
    int64_t n;
    if (repeats[a] < 0 || __builtin_mul_overflow(in.dim(a), repeats[a], &n)) {
      return ctx.Fail("repeats {} are invalid for input {}", ShapeText(repeats), in.Describe());
    }
    out.push_back(n);
    interleaved.insert(interleaved.end(), {repeats[a], in.dim(a)});
    src_strides.insert(src_strides.end(), {0, in_strides[a]});
  }
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * t, ctx.Output(0, in.dtype(), out));
  StridedCopy(eb, interleaved, in.raw_data(), src_strides, t->raw_data());
  return Status::Ok();
}

const KernelDef kLayoutKernels[] = {
    {"", "Reshape", 1, kLatest, WithInputs<Reshape, 1>},
    {"", "Flatten", 1, kLatest, WithInputs<Flatten, 1>},
    {"", "Squeeze", 1, kLatest, WithInputs<Squeeze, 1>},
    {"", "Unsqueeze", 1, kLatest, WithInputs<Unsqueeze, 1>},
    {"", "Transpose", 1, kLatest, WithInputs<Transpose, 1>},
    {"", "Concat", 1, kLatest, WithInputs<Concat, 1>},
    {"", "Split", 1, kLatest, WithInputs<Split, 1>},
    {"", "Expand", 8, kLatest, WithInputs<Expand, 1>},
    {"", "Tile", 6, kLatest, WithInputs<Tile, 1>},
};

}  // namespace

std::span<const KernelDef> LayoutKernels() { return kLayoutKernels; }

}  // namespace vigil::cpu::shape_family
