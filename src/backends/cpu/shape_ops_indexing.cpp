// CPU kernels of the indexing ops: Slice, Gather, GatherElements, GatherND,
// ScatterND, ScatterElements (and Scatter), TensorScatter, NonZero, OneHot,
// Trilu. Every index read from data is checked against the axis it indexes.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include <fmt/ranges.h>

#include "backends/cpu/shape_ops_common.h"
#include "ops/shape_ops_common.h"

namespace vigil::cpu::shape_family {
namespace {

using Shape = std::vector<int64_t>;

int64_t Product(const Shape& s, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t i = from; i < to; ++i) p *= s[i];
  return p;
}

// An index from data checked against [-dim, dim-1] and made non-negative.
Result<int64_t> CheckIndex(const KernelContext& ctx, int64_t index, int64_t dim, const char* what, size_t axis) {
  if (index < -dim || index >= dim) {
    return ctx.Fail("{} value {} is out of range for axis {} of size {} (allowed: {} to {})", what, index, axis, dim,
                    -dim, dim - 1);
  }
  return index < 0 ? index + dim : index;
}

struct SliceParams {
  Shape starts, ends, axes, steps;
};

Result<SliceParams> ReadSliceParams(KernelContext& ctx, int64_t rank) {
  SliceParams p;
  bool has_axes = false;
  if (ctx.opset() < 10) {
    VIGIL_ASSIGN_OR_RETURN(p.starts, ops::RequiredIntsAttr(ctx.node(), "starts"));
    VIGIL_ASSIGN_OR_RETURN(p.ends, ops::RequiredIntsAttr(ctx.node(), "ends"));
    has_axes = ops::HasAttr(ctx.node(), "axes");
    VIGIL_ASSIGN_OR_RETURN(p.axes, ops::IntsAttr(ctx.node(), "axes"));
  } else {
    VIGIL_ASSIGN_OR_RETURN(p.starts, ReadInts(ctx, 1, "starts"));
    VIGIL_ASSIGN_OR_RETURN(p.ends, ReadInts(ctx, 2, "ends"));
    if ((has_axes = ctx.has_input(3))) {
      VIGIL_ASSIGN_OR_RETURN(p.axes, ReadInts(ctx, 3, "axes"));
    }
    if (ctx.has_input(4)) {
      VIGIL_ASSIGN_OR_RETURN(p.steps, ReadInts(ctx, 4, "steps"));
    }
  }
  size_t n = p.starts.size();
  if (!has_axes) {
    for (size_t i = 0; i < n; ++i) p.axes.push_back(static_cast<int64_t>(i));
  }
  if (p.steps.empty() && !(ctx.opset() >= 10 && ctx.has_input(4))) p.steps.assign(n, 1);
  if (p.ends.size() != n || p.axes.size() != n || p.steps.size() != n) {
    return ctx.Fail("starts, ends, axes and steps have {}, {}, {} and {} entries; they must be equal", n,
                    p.ends.size(), p.axes.size(), p.steps.size());
  }
  for (int64_t& a : p.axes) {
    if (a < -rank || a >= rank) return ctx.Fail("axes [{}] has an axis out of range for rank {}", fmt::join(p.axes, ","), rank);
    if (a < 0) a += rank;
  }
  return p;
}

Status Slice(KernelContext& ctx) {
  const runtime::Tensor& in = *ctx.input(0);
  VIGIL_ASSIGN_OR_RETURN(size_t eb, MovableElementBytes(ctx, 0));
  VIGIL_ASSIGN_OR_RETURN(SliceParams p, ReadSliceParams(ctx, static_cast<int64_t>(in.rank())));
  std::vector<std::vector<int64_t>> maps(in.rank());
  std::vector<bool> sliced(in.rank(), false);
  for (size_t j = 0; j < p.axes.size(); ++j) {
    int64_t a = p.axes[j], step = p.steps[j];
    if (sliced[a]) return ctx.Fail("axis {} is sliced twice", a);
    if (step == 0) return ctx.Fail("steps[{}] is 0", j);
    sliced[a] = true;
    ops::shape_family::SliceAxis s = ops::shape_family::ClampSlice(p.starts[j], p.ends[j], step, in.dim(a));
    for (int64_t k = 0; k < s.count; ++k) maps[a].push_back(s.start + k * step);
  }
  Shape out;
  for (size_t a = 0; a < in.rank(); ++a) {
    if (!sliced[a]) {
      for (int64_t k = 0; k < in.dim(a); ++k) maps[a].push_back(k);
    }
    out.push_back(static_cast<int64_t>(maps[a].size()));
  }
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * t, ctx.Output(0, in.dtype(), out));
  AxisMapCopy(eb, in.raw_data(), in.shape(), maps, nullptr, t->raw_data());
  return Status::Ok();
}

Status Gather(KernelContext& ctx) {
  const runtime::Tensor& data = *ctx.input(0);
  VIGIL_ASSIGN_OR_RETURN(size_t eb, MovableElementBytes(ctx, 0));
  VIGIL_ASSIGN_OR_RETURN(Shape indices, ReadInts(ctx, 1, "indices"));
  VIGIL_ASSIGN_OR_RETURN(int64_t axis, ops::IntAttr(ctx.node(), "axis", 0));
  int64_t rank = static_cast<int64_t>(data.rank());
  if (axis < -rank || axis >= rank) return ctx.Fail("axis {} is out of range for data {}", axis, data.Describe());
  if (axis < 0) axis += rank;
  int64_t dim = data.dim(axis);
  for (int64_t& i : indices) {
    VIGIL_ASSIGN_OR_RETURN(i, CheckIndex(ctx, i, dim, "indices", axis));
  }
  Shape out(data.shape().begin(), data.shape().begin() + axis);
  const Shape& ishape = ctx.input(1)->shape();
  out.insert(out.end(), ishape.begin(), ishape.end());
  out.insert(out.end(), data.shape().begin() + axis + 1, data.shape().end());
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * t, ctx.Output(0, data.dtype(), out));
  int64_t outer = Product(data.shape(), 0, axis);
  size_t block = static_cast<size_t>(Product(data.shape(), axis + 1, rank)) * eb;
  const auto* src = static_cast<const uint8_t*>(data.raw_data());
  auto* dst = static_cast<uint8_t*>(t->raw_data());
  for (int64_t o = 0; o < outer && block; ++o) {
    for (int64_t i : indices) {
      std::memcpy(dst, src + (o * dim + i) * block, block);
      dst += block;
    }
  }
  return Status::Ok();
}

// For GatherElements and ScatterElements: indices (and updates) have data's
// rank and no dim larger than data's, except along `axis` where values index.
Status CheckElementsShapes(const KernelContext& ctx, const runtime::Tensor& data, const runtime::Tensor& indices,
                           int64_t axis) {
  if (indices.rank() != data.rank()) {
    return ctx.Fail("indices {} must have the rank of data {}", indices.Describe(), data.Describe());
  }
  for (size_t k = 0; k < data.rank(); ++k) {
    if (static_cast<int64_t>(k) != axis && indices.dim(k) > data.dim(k)) {
      return ctx.Fail("indices {} is larger than data {} along axis {}", indices.Describe(), data.Describe(), k);
    }
  }
  return Status::Ok();
}

// Visits every position of `shape` (row-major) with the element offset it
// has in a tensor of `strides`, with the coordinate along `axis` replaced by
// index(position). Returns the first error of `index`.
template <typename IndexFn, typename Fn>
Status ForEachElementsPosition(const Shape& shape, const Shape& strides, int64_t axis, IndexFn&& index, Fn&& fn) {
  uint64_t total = runtime::ElementCount(shape).value_or(0);
  std::vector<int64_t> pos(shape.size(), 0);
  for (uint64_t n = 0; n < total; ++n) {
    VIGIL_ASSIGN_OR_RETURN(int64_t i, index(n));
    int64_t offset = 0;
    for (size_t k = 0; k < shape.size(); ++k) offset += (static_cast<int64_t>(k) == axis ? i : pos[k]) * strides[k];
    fn(n, offset);
    for (size_t k = shape.size(); k-- > 0;) {
      if (++pos[k] < shape[k]) break;
      pos[k] = 0;
    }
  }
  return Status::Ok();
}

Status GatherElements(KernelContext& ctx) {
  const runtime::Tensor& data = *ctx.input(0);
  const runtime::Tensor& idx_t = *ctx.input(1);
  VIGIL_ASSIGN_OR_RETURN(size_t eb, MovableElementBytes(ctx, 0));
  VIGIL_ASSIGN_OR_RETURN(Shape indices, ReadInts(ctx, 1, "indices"));
  VIGIL_ASSIGN_OR_RETURN(int64_t axis, ops::IntAttr(ctx.node(), "axis", 0));
  int64_t rank = static_cast<int64_t>(data.rank());
  if (axis < -rank || axis >= rank) return ctx.Fail("axis {} is out of range for data {}", axis, data.Describe());
  if (axis < 0) axis += rank;
  VIGIL_RETURN_IF_ERROR(CheckElementsShapes(ctx, data, idx_t, axis));
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * t, ctx.Output(0, data.dtype(), idx_t.shape()));
  const auto* src = static_cast<const uint8_t*>(data.raw_data());
  auto* dst = static_cast<uint8_t*>(t->raw_data());
  auto index = [&](uint64_t n) { return CheckIndex(ctx, indices[n], data.dim(axis), "indices", axis); };
  return ForEachElementsPosition(idx_t.shape(), Strides(data.shape()), axis, index, [&](uint64_t n, int64_t off) {
    std::memcpy(dst + n * eb, src + off * eb, eb);
  });
}

// The element offset into data of each index tuple in the last dim of
// `indices` (GatherND/ScatterND), `k` coordinates each, after `batch_dims`.
Result<std::vector<int64_t>> TupleOffsets(const KernelContext& ctx, const runtime::Tensor& data,
                                          const runtime::Tensor& idx_t, int64_t batch_dims) {
  VIGIL_ASSIGN_OR_RETURN(Shape indices, ReadInts(ctx, 1, "indices"));
  int64_t r = static_cast<int64_t>(data.rank()), q = static_cast<int64_t>(idx_t.rank());
  if (q < 1) return ctx.Fail("indices must have rank >= 1, got {}", idx_t.Describe());
  int64_t k = idx_t.dim(q - 1);
  if (batch_dims < 0 || batch_dims >= std::min(r, q)) {
    return ctx.Fail("batch_dims {} must be in [0, {})", batch_dims, std::min(r, q));
  }
  if (k < 1 || k > r - batch_dims) {
    return ctx.Fail("indices {} has tuples of {} coordinates; data {} takes 1 to {}", idx_t.Describe(), k,
                    data.Describe(), r - batch_dims);
  }
  for (int64_t b = 0; b < batch_dims; ++b) {
    if (data.dim(b) != idx_t.dim(b)) {
      return ctx.Fail("batch dim {} is {} in data but {} in indices", b, data.dim(b), idx_t.dim(b));
    }
  }
  Shape strides = Strides(data.shape());
  int64_t batch = Product(data.shape(), 0, batch_dims);
  int64_t per_batch = batch == 0 ? 0 : static_cast<int64_t>(indices.size()) / k / batch;
  std::vector<int64_t> offsets;
  for (int64_t n = 0; n * k < static_cast<int64_t>(indices.size()); ++n) {
    int64_t b = per_batch == 0 ? 0 : n / per_batch;
    int64_t off = b * (batch_dims > 0 ? strides[batch_dims - 1] : 0);
    for (int64_t j = 0; j < k; ++j) {
      size_t axis = static_cast<size_t>(batch_dims + j);
      VIGIL_ASSIGN_OR_RETURN(int64_t i, CheckIndex(ctx, indices[n * k + j], data.dim(axis), "indices", axis));
      off += i * strides[axis];
    }
    offsets.push_back(off);
  }
  return offsets;
}

Status GatherND(KernelContext& ctx) {
  const runtime::Tensor& data = *ctx.input(0);
  const runtime::Tensor& idx_t = *ctx.input(1);
  VIGIL_ASSIGN_OR_RETURN(size_t eb, MovableElementBytes(ctx, 0));
  VIGIL_ASSIGN_OR_RETURN(int64_t batch_dims, ops::IntAttr(ctx.node(), "batch_dims", 0));
  VIGIL_ASSIGN_OR_RETURN(std::vector<int64_t> offsets, TupleOffsets(ctx, data, idx_t, batch_dims));
  int64_t k = idx_t.dim(idx_t.rank() - 1);
  Shape out(idx_t.shape().begin(), idx_t.shape().end() - 1);
  out.insert(out.end(), data.shape().begin() + batch_dims + k, data.shape().end());
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * t, ctx.Output(0, data.dtype(), out));
  size_t block = static_cast<size_t>(Product(data.shape(), batch_dims + k, data.rank())) * eb;
  const auto* src = static_cast<const uint8_t*>(data.raw_data());
  auto* dst = static_cast<uint8_t*>(t->raw_data());
  for (int64_t off : offsets) {
    if (block) std::memcpy(dst, src + off * eb, block);
    dst += block;
  }
  return Status::Ok();
}

enum class Reduction { kNone, kAdd, kMul, kMax, kMin };

Result<Reduction> ReadReduction(const KernelContext& ctx) {
  VIGIL_ASSIGN_OR_RETURN(std::string r, ops::StringAttr(ctx.node(), "reduction", "none"));
  if (r == "none") return Reduction::kNone;
  if (r == "add") return Reduction::kAdd;
  if (r == "mul") return Reduction::kMul;
  if (r == "max") return Reduction::kMax;
  if (r == "min") return Reduction::kMin;
  return ctx.Fail("reduction '{}' is not one of none, add, mul, max, min", r);
}

// a (op) b in the compute type; integers wrap instead of overflowing, and
// max/min propagate NaN like numpy's maximum/minimum.
template <typename C>
C Combine(Reduction r, C a, C b) {
  if constexpr (std::is_integral_v<C>) {
    using U = uint64_t;
    if (r == Reduction::kAdd) return static_cast<C>(static_cast<U>(a) + static_cast<U>(b));
    if (r == Reduction::kMul) return static_cast<C>(static_cast<U>(a) * static_cast<U>(b));
  } else {
    if (r == Reduction::kAdd) return a + b;
    if (r == Reduction::kMul) return a * b;
    if (a != a || b != b) return a != a ? a : b;
  }
  if (r == Reduction::kMax) return a < b ? b : a;
  if (r == Reduction::kMin) return b < a ? b : a;
  return b;
}

// out[offset(n) + s] = out[...] (op) updates[n * block + s] for every update.
Status ApplyUpdates(KernelContext& ctx, runtime::Tensor& out, const runtime::Tensor& updates,
                    const std::vector<int64_t>& offsets, size_t block, Reduction reduction) {
  if (reduction == Reduction::kNone) {  // plain copies: any dtype, last write wins
    size_t eb = ElementBytes(out.dtype());
    auto* dst = static_cast<uint8_t*>(out.raw_data());
    const auto* src = static_cast<const uint8_t*>(updates.raw_data());
    for (size_t n = 0; n < offsets.size(); ++n) std::memcpy(dst + offsets[n] * eb, src + n * block * eb, block * eb);
    return Status::Ok();
  }
  return VisitNumeric(ctx, 0, out.dtype(), true, [&](auto traits) {
    using Tr = decltype(traits);
    using S = typename Tr::Storage;
    S* dst = out.data<S>();
    const S* src = updates.data<S>();
    for (size_t n = 0; n < offsets.size(); ++n) {
      for (size_t s = 0; s < block; ++s) {
        S& o = dst[offsets[n] + s];
        o = Tr::Store(Combine(reduction, Tr::Load(o), Tr::Load(src[n * block + s])));
      }
    }
    return Status::Ok();
  });
}

// The output starts as a copy of data.
Result<runtime::Tensor*> CopyOfData(KernelContext& ctx) {
  const runtime::Tensor& data = *ctx.input(0);
  VIGIL_RETURN_IF_ERROR(MovableElementBytes(ctx, 0).status());
  if (ctx.input(2)->dtype() != data.dtype()) {
    return ctx.Fail("updates {} must have the dtype of data {}", ctx.input(2)->Describe(), data.Describe());
  }
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * out, ctx.Output(0, data.dtype(), data.shape()));
  if (data.byte_size()) std::memcpy(out->raw_data(), data.raw_data(), data.byte_size());
  return out;
}

Status ScatterND(KernelContext& ctx) {
  const runtime::Tensor& data = *ctx.input(0);
  const runtime::Tensor& idx_t = *ctx.input(1);
  const runtime::Tensor& updates = *ctx.input(2);
  VIGIL_ASSIGN_OR_RETURN(Reduction reduction, ReadReduction(ctx));
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * out, CopyOfData(ctx));
  VIGIL_ASSIGN_OR_RETURN(std::vector<int64_t> offsets, TupleOffsets(ctx, data, idx_t, 0));
  int64_t k = idx_t.dim(idx_t.rank() - 1);
  Shape want(idx_t.shape().begin(), idx_t.shape().end() - 1);
  want.insert(want.end(), data.shape().begin() + k, data.shape().end());
  if (updates.shape() != want) {
    return ctx.Fail("updates is {} but indices {} and data {} need [{}]", updates.Describe(), idx_t.Describe(),
                    data.Describe(), fmt::join(want, ","));
  }
  size_t block = static_cast<size_t>(Product(data.shape(), k, data.rank()));
  return ApplyUpdates(ctx, *out, updates, offsets, block, reduction);
}

Status ScatterElements(KernelContext& ctx) {
  const runtime::Tensor& data = *ctx.input(0);
  const runtime::Tensor& idx_t = *ctx.input(1);
  const runtime::Tensor& updates = *ctx.input(2);
  VIGIL_ASSIGN_OR_RETURN(Reduction reduction, ReadReduction(ctx));
  VIGIL_ASSIGN_OR_RETURN(int64_t axis, ops::IntAttr(ctx.node(), "axis", 0));
  int64_t rank = static_cast<int64_t>(data.rank());
  if (axis < -rank || axis >= rank) return ctx.Fail("axis {} is out of range for data {}", axis, data.Describe());
  if (axis < 0) axis += rank;
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * out, CopyOfData(ctx));
  VIGIL_ASSIGN_OR_RETURN(Shape indices, ReadInts(ctx, 1, "indices"));
  VIGIL_RETURN_IF_ERROR(CheckElementsShapes(ctx, data, idx_t, axis));
  if (updates.shape() != idx_t.shape()) {
    return ctx.Fail("updates {} must have the shape of indices {}", updates.Describe(), idx_t.Describe());
  }
  std::vector<int64_t> offsets(indices.size());
  auto index = [&](uint64_t n) { return CheckIndex(ctx, indices[n], data.dim(axis), "indices", axis); };
  VIGIL_RETURN_IF_ERROR(ForEachElementsPosition(idx_t.shape(), Strides(data.shape()), axis, index,
                                                [&](uint64_t n, int64_t off) { offsets[n] = off; }));
  return ApplyUpdates(ctx, *out, updates, offsets, 1, reduction);
}

// present_cache = past_cache with update's rows written along the sequence
// axis from write_indices[b] (0 without the input) in every batch b: in
// "linear" mode they must fit ([w, w + seq) within max_sequence_length), in
// "circular" mode positions wrap modulo max_sequence_length (negative
// indices too, as Python's % does).
Status TensorScatter(KernelContext& ctx) {
  const runtime::Tensor& past = *ctx.input(0);
  const runtime::Tensor& update = *ctx.input(1);
  VIGIL_ASSIGN_OR_RETURN(std::string mode, ops::StringAttr(ctx.node(), "mode", "linear"));
  if (mode != "linear" && mode != "circular") {
    return ctx.Fail("attribute mode is '{}', expected 'linear' or 'circular'", mode);
  }
  const bool circular = mode == "circular";
  VIGIL_ASSIGN_OR_RETURN(size_t elem, MovableElementBytes(ctx, 0));
  if (update.dtype() != past.dtype()) {
    return ctx.Fail("update {} must have the dtype of past_cache {}", update.Describe(), past.Describe());
  }
  const size_t rank = past.rank();
  if (rank < 2) return ctx.Fail("past_cache is {}; TensorScatter needs rank >= 2", past.Describe());
  VIGIL_ASSIGN_OR_RETURN(int64_t axis_attr, ops::IntAttr(ctx.node(), "axis", -2));
  VIGIL_ASSIGN_OR_RETURN(int64_t axis, ops::NormalizeAxis(ctx.node(), axis_attr, static_cast<int64_t>(rank)));
  if (axis == 0) return ctx.Fail("attribute axis is {}, the batch axis; the sequence axis cannot be 0", axis_attr);
  bool fits = update.rank() == rank;
  for (size_t i = 0; fits && i < rank; ++i) {
    fits = static_cast<int64_t>(i) == axis ? update.dim(i) <= past.dim(i) : update.dim(i) == past.dim(i);
  }
  if (!fits) {
    return ctx.Fail("update {} does not fit past_cache {}: all dims but axis {} must be equal, and that one no "
                    "larger",
                    update.Describe(), past.Describe(), axis);
  }
  const int64_t batch = past.dim(0), max_seq = past.dim(axis), seq = update.dim(axis);
  std::vector<int64_t> starts(static_cast<size_t>(batch), 0);
  if (ctx.has_input(2)) {
    const runtime::Tensor& w = *ctx.input(2);
    if (w.rank() != 1 || w.dim(0) != batch) {
      return ctx.Fail("write_indices is {}; it must be [{}], one index per batch of past_cache {}", w.Describe(),
                      batch, past.Describe());
    }
    VIGIL_ASSIGN_OR_RETURN(starts, ReadInts(ctx, 2, "write_indices"));
  }
  for (int64_t b = 0; b < batch; ++b) {
    int64_t& start = starts[static_cast<size_t>(b)];
    if (circular) {
      if (max_seq > 0) start = ((start % max_seq) + max_seq) % max_seq;
    } else if (start < 0 || start > max_seq - seq) {
      return ctx.Fail("write_indices[{}] is {}; in linear mode it must be in [0, {}] (max_sequence_length {} minus "
                      "sequence_length {})",
                      b, start, max_seq - seq, max_seq, seq);
    }
  }
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * out, ctx.Output(0, past.dtype(), past.shape()));
  if (past.byte_size()) std::memcpy(out->raw_data(), past.raw_data(), past.byte_size());
  // [batch, mid, seq or max_seq, row] with rows of `row_bytes` contiguous bytes.
  const int64_t mid = Product(past.shape(), 1, static_cast<size_t>(axis));
  const size_t row_bytes = static_cast<size_t>(Product(past.shape(), static_cast<size_t>(axis) + 1, rank)) * elem;
  const auto* src = static_cast<const uint8_t*>(update.raw_data());
  auto* dst = static_cast<uint8_t*>(out->raw_data());
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t m = 0; m < mid; ++m) {
      const int64_t block = b * mid + m;
      for (int64_t s = 0; s < seq; ++s) {
        int64_t at = starts[static_cast<size_t>(b)] + s;
        if (circular) at %= max_seq;
        std::memcpy(dst + static_cast<size_t>(block * max_seq + at) * row_bytes,
                    src + static_cast<size_t>(block * seq + s) * row_bytes, row_bytes);
      }
    }
  }
  return Status::Ok();
}

Status NonZero(KernelContext& ctx) {
  const runtime::Tensor& in = *ctx.input(0);
  std::vector<uint64_t> hits;  // flat positions of the non-zero elements
  VIGIL_RETURN_IF_ERROR(VisitNumeric(ctx, 0, in.dtype(), true, [&](auto traits) {
    using Tr = decltype(traits);
    const auto* p = in.data<typename Tr::Storage>();
    for (uint64_t i = 0; i < in.element_count(); ++i) {
      if (Tr::Load(p[i]) != 0) hits.push_back(i);
    }
    return Status::Ok();
  }));
  int64_t rank = static_cast<int64_t>(in.rank()), n = static_cast<int64_t>(hits.size());
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * out, ctx.Output(0, ir::DataType::kInt64, {rank, n}));
  int64_t* dst = out->data<int64_t>();
  for (int64_t j = 0; j < n; ++j) {
    uint64_t rest = hits[j];
    for (int64_t a = rank; a-- > 0;) {
      dst[a * n + j] = static_cast<int64_t>(rest % static_cast<uint64_t>(in.dim(a)));
      rest /= static_cast<uint64_t>(in.dim(a));
    }
  }
  return Status::Ok();
}

// OneHot's indices may be of any numeric type; they are truncated to int64.
Result<std::vector<int64_t>> ReadAnyIndices(const KernelContext& ctx, size_t input) {
  const runtime::Tensor& t = *ctx.input(input);
  std::vector<int64_t> out(t.element_count());
  VIGIL_RETURN_IF_ERROR(VisitNumeric(ctx, input, t.dtype(), false, [&](auto traits) {
    using Tr = decltype(traits);
    const auto* p = t.data<typename Tr::Storage>();
    for (size_t i = 0; i < out.size(); ++i) {
      double v = Tr::ToDouble(p[i]);
      out[i] = std::isfinite(v) && std::fabs(v) < 9.0e18 ? static_cast<int64_t>(v) : INT64_MIN;
    }
    return Status::Ok();
  }));
  return out;
}

Status OneHot(KernelContext& ctx) {
  const runtime::Tensor& idx_t = *ctx.input(0);
  const runtime::Tensor& values = *ctx.input(2);
  VIGIL_ASSIGN_OR_RETURN(size_t eb, MovableElementBytes(ctx, 2));
  if (values.element_count() != 2) return ctx.Fail("values {} must hold [off_value, on_value]", values.Describe());
  if (ctx.input(1)->element_count() != 1) return ctx.Fail("depth {} must be a single value", ctx.input(1)->Describe());
  VIGIL_ASSIGN_OR_RETURN(double depth_value, ElementAsDouble(ctx, 1, 0));
  if (!(depth_value >= 1) || depth_value > 1e9) return ctx.Fail("depth is {}; it must be in [1, 1e9]", depth_value);
  int64_t depth = static_cast<int64_t>(depth_value);
  VIGIL_ASSIGN_OR_RETURN(int64_t axis, ops::IntAttr(ctx.node(), "axis", -1));
  int64_t out_rank = static_cast<int64_t>(idx_t.rank()) + 1;
  if (axis < -out_rank || axis >= out_rank) return ctx.Fail("axis {} is out of range for output rank {}", axis, out_rank);
  if (axis < 0) axis += out_rank;
  VIGIL_ASSIGN_OR_RETURN(std::vector<int64_t> indices, ReadAnyIndices(ctx, 0));
  Shape out = idx_t.shape();
  out.insert(out.begin() + axis, depth);
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * t, ctx.Output(0, values.dtype(), out));
  int64_t outer = Product(idx_t.shape(), 0, axis), inner = Product(idx_t.shape(), axis, idx_t.rank());
  const auto* off_on = static_cast<const uint8_t*>(values.raw_data());
  auto* dst = static_cast<uint8_t*>(t->raw_data());
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t d = 0; d < depth; ++d) {
      for (int64_t i = 0; i < inner; ++i) {
        int64_t index = indices[o * inner + i];
        if (index < 0 && index >= -depth) index += depth;  // negative indices count from the end
        std::memcpy(dst, off_on + (index == d ? eb : 0), eb);
        dst += eb;
      }
    }
  }
  return Status::Ok();
}

Status Trilu(KernelContext& ctx) {
  const runtime::Tensor& in = *ctx.input(0);
  VIGIL_ASSIGN_OR_RETURN(size_t eb, MovableElementBytes(ctx, 0));
  if (in.rank() < 2) return ctx.Fail("input {} must have rank >= 2", in.Describe());
  int64_t k = 0;
  if (ctx.has_input(1)) {
    VIGIL_ASSIGN_OR_RETURN(Shape kv, ReadInts(ctx, 1, "k"));
    if (kv.size() != 1) return ctx.Fail("k must be a single value, got {} values", kv.size());
    k = kv[0];
  }
  VIGIL_ASSIGN_OR_RETURN(int64_t upper, ops::IntAttr(ctx.node(), "upper", 1));
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * out, ctx.Output(0, in.dtype(), in.shape()));
  int64_t rows = in.dim(in.rank() - 2), cols = in.dim(in.rank() - 1);
  int64_t matrices = rows * cols == 0 ? 0 : static_cast<int64_t>(in.element_count()) / (rows * cols);
  const auto* src = static_cast<const uint8_t*>(in.raw_data());
  auto* dst = static_cast<uint8_t*>(out->raw_data());
  // Kept: j - i >= k (upper) or j - i <= k (lower). Zero is all-zero bytes
  // for every supported dtype.
  for (int64_t m = 0; m < matrices * rows; ++m) {
    int64_t i = m % rows;
    for (int64_t j = 0; j < cols; ++j) {
      size_t at = static_cast<size_t>(m * cols + j) * eb;
      bool keep = upper ? j - i >= k : j - i <= k;
      if (keep) std::memcpy(dst + at, src + at, eb);
      else std::memset(dst + at, 0, eb);
    }
  }
  return Status::Ok();
}

const KernelDef kIndexingKernels[] = {
    {"", "Slice", 1, kLatest, WithInputs<Slice, 1>},
    {"", "Gather", 1, kLatest, WithInputs<Gather, 2>},
    {"", "GatherElements", 11, kLatest, WithInputs<GatherElements, 2>},
    {"", "GatherND", 11, kLatest, WithInputs<GatherND, 2>},
    {"", "ScatterND", 11, kLatest, WithInputs<ScatterND, 3>},
    {"", "ScatterElements", 11, kLatest, WithInputs<ScatterElements, 3>},
    {"", "Scatter", 9, 10, WithInputs<ScatterElements, 3>},
    {"", "TensorScatter", 24, kLatest, WithInputs<TensorScatter, 2>},
    {"", "NonZero", 9, kLatest, WithInputs<NonZero, 1>},
    {"", "OneHot", 9, kLatest, WithInputs<OneHot, 3>},
    {"", "Trilu", 14, kLatest, WithInputs<Trilu, 1>},
};

}  // namespace

std::span<const KernelDef> IndexingKernels() { return kIndexingKernels; }

}  // namespace vigil::cpu::shape_family
