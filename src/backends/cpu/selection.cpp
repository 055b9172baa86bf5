// CPU kernels of the selection ops (ops/selection.cpp): Unique, Compress and
// ReverseSequence. Compress and ReverseSequence only move elements, so they
// take any dtype of whole bytes; Unique compares values (floats as numbers,
// so 0 and -0 are one value and NaNs are all one value, sorted last, as
// numpy's unique in the ONNX reference).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <type_traits>
#include <vector>

#include "backends/cpu/element_codec.h"
#include "backends/cpu/kernel_families.h"
#include "backends/cpu/shape_ops_common.h"

namespace vigil::cpu {
namespace {

using ir::DataType;

// The input viewed as [outer, n, inner] around `axis`.
struct AxisView {
  int64_t outer = 1, n = 1, inner = 1;
};

AxisView ViewAround(const std::vector<int64_t>& shape, size_t axis) {
  AxisView v;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i < axis) v.outer *= shape[i];
    if (i == axis) v.n = shape[i];
    if (i > axis) v.inner *= shape[i];
  }
  return v;
}

// Copies slices [outer, 1, inner] of `src` (viewed as `from`) to `dst`
// (viewed as [outer, picks.size(), inner]): slice k of dst is slice picks[k]
// of src.
void CopySlices(size_t elem, const void* src, const AxisView& from, const std::vector<int64_t>& picks, void* dst) {
  const auto* s = static_cast<const uint8_t*>(src);
  auto* d = static_cast<uint8_t*>(dst);
  const size_t block = static_cast<size_t>(from.inner) * elem;
  const int64_t out_n = static_cast<int64_t>(picks.size());
  for (int64_t o = 0; o < from.outer; ++o) {
    for (int64_t k = 0; k < out_n; ++k) {
      std::memcpy(d + static_cast<size_t>(o * out_n + k) * block,
                  s + static_cast<size_t>(o * from.n + picks[static_cast<size_t>(k)]) * block, block);
    }
  }
}

// --- Unique ------------------------------------------------------------------------

// A total order on values: numbers in their usual order (0 == -0), NaN
// after every number and equal to every NaN.
template <typename T>
int CompareValues(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    const bool na = std::isnan(a), nb = std::isnan(b);
    if (na || nb) return na == nb ? 0 : (na ? 1 : -1);
  }
  return a < b ? -1 : (b < a ? 1 : 0);
}

Status Unique(KernelContext& ctx) {
  VIGIL_RETURN_IF_ERROR(RequireInputs(ctx, 1));
  const runtime::Tensor& x = *ctx.input(0);
  VIGIL_ASSIGN_OR_RETURN(size_t elem, shape_family::MovableElementBytes(ctx, 0));
  VIGIL_ASSIGN_OR_RETURN(int64_t sorted, ops::IntAttr(ctx.node(), "sorted", 1));
  if (sorted != 0 && sorted != 1) return AttributeError(ctx, "attribute sorted is {}, expected 0 or 1", sorted);
  const bool has_axis = ops::HasAttr(ctx.node(), "axis");
  std::vector<int64_t> shape = x.shape();
  size_t axis = 0;
  if (has_axis) {
    if (x.rank() == 0) return ctx.Fail("input X is a scalar; Unique with an axis needs rank 1 or more");
    VIGIL_ASSIGN_OR_RETURN(int64_t raw, ops::IntAttr(ctx.node(), "axis", 0));
    VIGIL_ASSIGN_OR_RETURN(int64_t a, ops::NormalizeAxis(ctx.node(), raw, static_cast<int64_t>(x.rank())));
    axis = static_cast<size_t>(a);
  } else {
    shape = {static_cast<int64_t>(x.element_count())};  // flattened
  }
  const AxisView v = ViewAround(shape, axis);
  // Slice j (of v.n) is the elements (o, j, i) in (o, i) order; slices are
  // compared lexicographically by value.
  std::vector<int64_t> order(static_cast<size_t>(v.n));
  std::iota(order.begin(), order.end(), int64_t{0});
  std::vector<int64_t> group_of(order.size());  // slice -> its group (in sorted order)
  std::vector<int64_t> first, counts;          // per group, in sorted order
  VIGIL_RETURN_IF_ERROR(shape_family::VisitNumeric(ctx, 0, x.dtype(), true, [&](auto traits) -> Status {
    using Tr = decltype(traits);
    using S = typename Tr::Storage;
    const S* xs = x.data<S>();
    auto compare = [&](int64_t a, int64_t b) {
      for (int64_t o = 0; o < v.outer; ++o) {
        for (int64_t i = 0; i < v.inner; ++i) {
          const int c = CompareValues(Tr::Load(xs[(o * v.n + a) * v.inner + i]),
                                      Tr::Load(xs[(o * v.n + b) * v.inner + i]));
          if (c != 0) return c;
        }
      }
      return 0;
    };
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return compare(a, b) < 0; });
    for (size_t k = 0; k < order.size(); ++k) {
      if (k == 0 || compare(order[k - 1], order[k]) != 0) {
        first.push_back(order[k]);  // stable: the earliest slice of its group
        counts.push_back(0);
      }
      group_of[static_cast<size_t>(order[k])] = static_cast<int64_t>(first.size()) - 1;
      ++counts.back();
    }
    return Status::Ok();
  }));
  // The output order of the groups: sorted, or by first occurrence.
  const size_t groups = first.size();
  std::vector<int64_t> out_group(groups);  // output position -> group
  std::iota(out_group.begin(), out_group.end(), int64_t{0});
  if (!sorted) {
    std::sort(out_group.begin(), out_group.end(),
              [&](int64_t a, int64_t b) { return first[static_cast<size_t>(a)] < first[static_cast<size_t>(b)]; });
  }
  std::vector<int64_t> position(groups);  // group -> output position
  for (size_t p = 0; p < groups; ++p) position[static_cast<size_t>(out_group[p])] = static_cast<int64_t>(p);
  std::vector<int64_t> picks(groups);
  for (size_t p = 0; p < groups; ++p) picks[p] = first[static_cast<size_t>(out_group[p])];

  std::vector<int64_t> y_shape = shape;
  y_shape[axis] = static_cast<int64_t>(groups);
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * y, ctx.Output(0, x.dtype(), y_shape));
  CopySlices(elem, x.raw_data(), v, picks, y->raw_data());
  auto write = [&](size_t i, size_t n, auto value_of) -> Status {
    if (!ctx.output_wanted(i)) return Status::Ok();
    VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * t, ctx.Output(i, DataType::kInt64, {static_cast<int64_t>(n)}));
    int64_t* out = t->data<int64_t>();
    for (size_t k = 0; k < n; ++k) out[k] = value_of(k);
    return Status::Ok();
  };
  VIGIL_RETURN_IF_ERROR(write(1, groups, [&](size_t p) { return picks[p]; }));
  VIGIL_RETURN_IF_ERROR(
      write(2, order.size(), [&](size_t j) { return position[static_cast<size_t>(group_of[j])]; }));
  VIGIL_RETURN_IF_ERROR(write(3, groups, [&](size_t p) { return counts[static_cast<size_t>(out_group[p])]; }));
  return Status::Ok();
}

// --- Compress ------------------------------------------------------------------------

Status Compress(KernelContext& ctx) {
  VIGIL_RETURN_IF_ERROR(RequireInputs(ctx, 2));
  const runtime::Tensor& x = *ctx.input(0);
  const runtime::Tensor& cond = *ctx.input(1);
  VIGIL_ASSIGN_OR_RETURN(size_t elem, shape_family::MovableElementBytes(ctx, 0));
  if (cond.dtype() != DataType::kBool) {
    return ctx.Fail("input 1 (condition) is {}, expected bool", ir::DataTypeName(cond.dtype()));
  }
  if (cond.rank() != 1) return ctx.Fail("input 1 (condition) is {}, expected rank 1", cond.Describe());
  std::vector<int64_t> shape = x.shape();
  size_t axis = 0;
  if (ops::HasAttr(ctx.node(), "axis")) {
    VIGIL_ASSIGN_OR_RETURN(int64_t raw, ops::IntAttr(ctx.node(), "axis", 0));
    if (ctx.opset() < 11 && raw < 0) {
      return AttributeError(ctx, "attribute axis is {}; before opset 11 it must be >= 0", raw);
    }
    VIGIL_ASSIGN_OR_RETURN(int64_t a, ops::NormalizeAxis(ctx.node(), raw, static_cast<int64_t>(x.rank())));
    axis = static_cast<size_t>(a);
  } else {
    shape = {static_cast<int64_t>(x.element_count())};  // flattened
  }
  const AxisView v = ViewAround(shape, axis);
  if (cond.dim(0) > v.n) {
    return ctx.Fail("input 1 (condition) has {} entries but {} has only {}", cond.dim(0),
                    ops::HasAttr(ctx.node(), "axis") ? fmt::format("axis {} of input 0", axis)
                                                     : std::string("the flattened input 0"),
                    v.n);
  }
  // Entries past the condition's end count as false.
  const uint8_t* c = cond.data<uint8_t>();
  std::vector<int64_t> picks;
  for (int64_t j = 0; j < cond.dim(0); ++j) {
    if (c[j]) picks.push_back(j);
  }
  shape[axis] = static_cast<int64_t>(picks.size());
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * y, ctx.Output(0, x.dtype(), shape));
  CopySlices(elem, x.raw_data(), v, picks, y->raw_data());
  return Status::Ok();
}

// --- ReverseSequence ---------------------------------------------------------------

Status ReverseSequence(KernelContext& ctx) {
  VIGIL_RETURN_IF_ERROR(RequireInputs(ctx, 2));
  const runtime::Tensor& x = *ctx.input(0);
  const runtime::Tensor& lens_t = *ctx.input(1);
  VIGIL_ASSIGN_OR_RETURN(size_t elem, shape_family::MovableElementBytes(ctx, 0));
  VIGIL_ASSIGN_OR_RETURN(int64_t batch_axis, ops::IntAttr(ctx.node(), "batch_axis", 1));
  VIGIL_ASSIGN_OR_RETURN(int64_t time_axis, ops::IntAttr(ctx.node(), "time_axis", 0));
  if ((batch_axis != 0 && batch_axis != 1) || (time_axis != 0 && time_axis != 1) || batch_axis == time_axis) {
    return AttributeError(ctx, "attributes batch_axis {} and time_axis {}: expected one to be 0 and the other 1",
                          batch_axis, time_axis);
  }
  if (x.rank() < 2) return ctx.Fail("input 0 is {}, expected rank 2 or more", x.Describe());
  if (lens_t.dtype() != DataType::kInt64) {
    return ctx.Fail("input 1 (sequence_lens) is {}, expected int64", ir::DataTypeName(lens_t.dtype()));
  }
  const int64_t batch = x.dim(static_cast<size_t>(batch_axis)), steps = x.dim(static_cast<size_t>(time_axis));
  if (lens_t.rank() != 1 || lens_t.dim(0) != batch) {
    return ctx.Fail("input 1 (sequence_lens) is {}, expected [{}] (the batch dim {} of input 0 {})",
                    lens_t.Describe(), batch, batch_axis, x.Describe());
  }
  const int64_t* lens = lens_t.data<int64_t>();
  for (int64_t b = 0; b < batch; ++b) {
    if (lens[b] < 0 || lens[b] > steps) {
      return ctx.Fail("input 1 (sequence_lens) is {} for batch entry {}, expected 0 to {} (the time dim {})",
                      lens[b], b, steps, time_axis);
    }
  }
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * y, ctx.Output(0, x.dtype(), x.shape()));
  int64_t inner = 1;
  for (size_t i = 2; i < x.rank(); ++i) inner *= x.dim(i);
  const size_t block = static_cast<size_t>(inner) * elem;
  // Strides of the batch and time axes, in blocks.
  const int64_t batch_stride = batch_axis == 0 ? steps : 1, time_stride = time_axis == 0 ? batch : 1;
  const auto* src = static_cast<const uint8_t*>(x.raw_data());
  auto* dst = static_cast<uint8_t*>(y->raw_data());
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t t = 0; t < steps; ++t) {
      const int64_t from = t < lens[b] ? lens[b] - 1 - t : t;
      std::memcpy(dst + static_cast<size_t>(b * batch_stride + t * time_stride) * block,
                  src + static_cast<size_t>(b * batch_stride + from * time_stride) * block, block);
    }
  }
  return Status::Ok();
}

const KernelDef kSelectionKernels[] = {
    {"", "Unique", 11, kLatest, Unique},
    {"", "Compress", 9, kLatest, Compress},
    {"", "ReverseSequence", 10, kLatest, ReverseSequence},
};

}  // namespace

std::span<const KernelDef> SelectionKernels() { return kSelectionKernels; }

}  // namespace vigil::cpu
