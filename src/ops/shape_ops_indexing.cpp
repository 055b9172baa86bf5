// Shape inference of the indexing ops: Slice, Gather, GatherElements,
// GatherND, ScatterND, ScatterElements (and the older Scatter), TensorScatter,
// NonZero, OneHot, Trilu.
#include <algorithm>
#include <climits>
#include <cmath>
#include <vector>

#include <fmt/ranges.h>

#include "ops/shape_ops_common.h"

namespace vigil::ops::shape_family {

SliceAxis ClampSlice(int64_t start, int64_t end, int64_t step, int64_t dim) {
  // Negative positions count from the end; then clamp as the spec says:
  // [0, dim] for a forward slice, [0, dim-1] and [-1, dim-1] backwards.
  if (start < 0) start += dim;
  if (end < 0) end += dim;
  if (step > 0) {
    start = std::min(std::max<int64_t>(start, 0), dim);
    end = std::min(std::max<int64_t>(end, 0), dim);
    if (end <= start) return {start, 0};
    return {start, (end - start - 1) / step + 1};
  }
  start = std::min(std::max<int64_t>(start, 0), dim - 1);
  end = std::min(std::max<int64_t>(end, -1), dim - 1);
  if (start <= end) return {start, 0};
  // -step overflows for INT64_MIN; such a step takes one element.
  uint64_t magnitude = step == INT64_MIN ? uint64_t{1} << 63 : static_cast<uint64_t>(-step);
  return {start, static_cast<int64_t>(static_cast<uint64_t>(start - end - 1) / magnitude + 1)};
}

namespace {

using Dims = std::vector<ir::Dim>;

// Whether a slice surely takes the whole axis, whatever its size (so a
// symbolic dim survives): [0 or very negative, very large) with step 1, or
// the reverse with step -1.
bool TakesWholeAxis(int64_t start, int64_t end, int64_t step) {
  if (step == 1) return (start == 0 || start <= INT32_MIN) && end >= INT32_MAX;
  if (step == -1) return start >= INT32_MAX && end <= INT32_MIN;
  return false;
}

struct SliceParams {
  std::optional<std::vector<int64_t>> starts, ends, axes, steps;
};

Result<SliceParams> ReadSliceParams(InferenceContext& ctx) {
  SliceParams p;
  if (ctx.opset() < 10) {
    VIGIL_ASSIGN_OR_RETURN(p.starts, RequiredIntsAttr(ctx.node(), "starts"));
    VIGIL_ASSIGN_OR_RETURN(p.ends, RequiredIntsAttr(ctx.node(), "ends"));
    if (HasAttr(ctx.node(), "axes")) {
      VIGIL_ASSIGN_OR_RETURN(p.axes, IntsAttr(ctx.node(), "axes"));
    }
    return p;
  }
  VIGIL_ASSIGN_OR_RETURN(p.starts, KnownInts(ctx, 1));
  VIGIL_ASSIGN_OR_RETURN(p.ends, KnownInts(ctx, 2));
  VIGIL_ASSIGN_OR_RETURN(p.axes, KnownInts(ctx, 3));
  VIGIL_ASSIGN_OR_RETURN(p.steps, KnownInts(ctx, 4));
  return p;
}

Status InferSlice(InferenceContext& ctx) {
  ir::DataType dtype = ElemType(ctx, 0);
  const Dims* in = InputDims(ctx, 0);
  VIGIL_ASSIGN_OR_RETURN(SliceParams p, ReadSliceParams(ctx));
  if (!in) {
    SetUnknownShape(ctx, 0, dtype);
    return Status::Ok();
  }
  int64_t rank = static_cast<int64_t>(in->size());
  bool axes_given = ctx.opset() < 10 ? p.axes.has_value() : ctx.has_input(3);
  bool steps_given = ctx.opset() >= 10 && ctx.has_input(4);
  if (p.starts && p.ends && p.starts->size() != p.ends->size()) {
    return ctx.Fail("starts has {} entries but ends has {}", p.starts->size(), p.ends->size());
  }
  std::optional<int64_t> count = p.starts ? std::optional<int64_t>(p.starts->size())
                                 : p.ends ? std::optional<int64_t>(p.ends->size())
                                          : KnownLength(ctx, 1);
  std::optional<std::vector<int64_t>> axes = p.axes;
  if (!axes_given && count) {
    axes.emplace(*count);
    for (int64_t i = 0; i < *count; ++i) (*axes)[i] = i;
  }
  if (!axes) {  // which axes are sliced is unknown: every dim may change
    SetTensor(ctx, 0, dtype, Symbols(ctx, in->size()));
    return Status::Ok();
  }
  if (count && static_cast<int64_t>(axes->size()) != *count) {
    return ctx.Fail("axes has {} entries but starts/ends have {}", axes->size(), *count);
  }
  if (p.steps && p.steps->size() != axes->size()) {
    return ctx.Fail("steps has {} entries but axes has {}", p.steps->size(), axes->size());
  }
  Dims out = *in;
  std::vector<bool> seen(rank, false);
  for (size_t j = 0; j < axes->size(); ++j) {
    VIGIL_ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(ctx.node(), (*axes)[j], rank, "axes entry"));
    if (seen[axis]) return ctx.Fail("axis {} is sliced twice", axis);
    seen[axis] = true;
    std::optional<int64_t> step = steps_given ? (p.steps ? std::optional<int64_t>((*p.steps)[j]) : std::nullopt)
                                              : std::optional<int64_t>(1);
    if (step && *step == 0) return ctx.Fail("steps[{}] is 0", j);
    if (!p.starts || !p.ends || !step) {
      out[axis] = ctx.NewSymbol();
      continue;
    }
    int64_t start = (*p.starts)[j], end = (*p.ends)[j];
    const ir::Dim& d = (*in)[axis];
    if (d.value) out[axis] = ir::Dim::Known(ClampSlice(start, end, *step, *d.value).count);
    else if (!TakesWholeAxis(start, end, *step)) out[axis] = ctx.NewSymbol();
  }
  SetTensor(ctx, 0, dtype, std::move(out));
  return Status::Ok();
}

Status InferGather(InferenceContext& ctx) {
  ir::DataType dtype = ElemType(ctx, 0);
  const Dims* data = InputDims(ctx, 0);
  const Dims* indices = InputDims(ctx, 1);
  VIGIL_ASSIGN_OR_RETURN(int64_t axis, IntAttr(ctx.node(), "axis", 0));
  if (!data || !indices) {
    SetUnknownShape(ctx, 0, dtype);
    return Status::Ok();
  }
  if (data->empty()) return ctx.Fail("data is a scalar; Gather needs rank >= 1");
  VIGIL_ASSIGN_OR_RETURN(axis, NormalizeAxis(ctx.node(), axis, data->size()));
  Dims out(data->begin(), data->begin() + axis);
  out.insert(out.end(), indices->begin(), indices->end());
  out.insert(out.end(), data->begin() + axis + 1, data->end());
  SetTensor(ctx, 0, dtype, std::move(out));
  return Status::Ok();
}

Status InferGatherElements(InferenceContext& ctx) {
  ir::DataType dtype = ElemType(ctx, 0);
  const Dims* data = InputDims(ctx, 0);
  const Dims* indices = InputDims(ctx, 1);
  VIGIL_ASSIGN_OR_RETURN(int64_t axis, IntAttr(ctx.node(), "axis", 0));
  if (data && indices && data->size() != indices->size()) {
    return ctx.Fail("indices has rank {} but data has rank {}; they must be equal", indices->size(), data->size());
  }
  if (data) {
    VIGIL_ASSIGN_OR_RETURN(axis, NormalizeAxis(ctx.node(), axis, data->size()));
  }
  if (!indices) SetUnknownShape(ctx, 0, dtype);
  else SetTensor(ctx, 0, dtype, *indices);
  return Status::Ok();
}

Status InferGatherND(InferenceContext& ctx) {
  ir::DataType dtype = ElemType(ctx, 0);
  const Dims* data = InputDims(ctx, 0);
  const Dims* indices = InputDims(ctx, 1);
  VIGIL_ASSIGN_OR_RETURN(int64_t batch_dims, IntAttr(ctx.node(), "batch_dims", 0));
  if (!data || !indices) {
    SetUnknownShape(ctx, 0, dtype);
    return Status::Ok();
  }
  int64_t r = static_cast<int64_t>(data->size()), q = static_cast<int64_t>(indices->size());
  if (r < 1 || q < 1) return ctx.Fail("data (rank {}) and indices (rank {}) need rank >= 1", r, q);
  if (batch_dims < 0 || batch_dims >= std::min(r, q)) {
    return ctx.Fail("batch_dims {} must be in [0, {})", batch_dims, std::min(r, q));
  }
  const ir::Dim& last = indices->back();
  if (!last.value) {
    SetUnknownShape(ctx, 0, dtype);
    return Status::Ok();
  }
  int64_t k = *last.value;
  if (k < 1 || k > r - batch_dims) {
    return ctx.Fail("the last dim of indices is {}; it must be in [1, {}] (data rank {} minus batch_dims {})", k,
                    r - batch_dims, r, batch_dims);
  }
  Dims out(indices->begin(), indices->end() - 1);
  out.insert(out.end(), data->begin() + batch_dims + k, data->end());
  SetTensor(ctx, 0, dtype, std::move(out));
  return Status::Ok();
}

Status InferScatterND(InferenceContext& ctx) {
  const Dims* data = InputDims(ctx, 0);
  const Dims* indices = InputDims(ctx, 1);
  const Dims* updates = InputDims(ctx, 2);
  if (data && indices && updates && !indices->empty() && indices->back().value) {
    int64_t k = *indices->back().value, r = static_cast<int64_t>(data->size());
    if (k < 1 || k > r) return ctx.Fail("the last dim of indices is {}; it must be in [1, {}]", k, r);
    size_t want = indices->size() - 1 + static_cast<size_t>(r - k);
    if (updates->size() != want) {
      return ctx.Fail("updates has rank {}, expected {} (indices rank {} - 1 + data rank {} - {})", updates->size(),
                      want, indices->size(), r, k);
    }
  }
  return PropagateFirstInput(ctx);
}

Status InferScatterElements(InferenceContext& ctx) {
  const Dims* data = InputDims(ctx, 0);
  const Dims* indices = InputDims(ctx, 1);
  const Dims* updates = InputDims(ctx, 2);
  if (data && indices && data->size() != indices->size()) {
    return ctx.Fail("indices has rank {} but data has rank {}; they must be equal", indices->size(), data->size());
  }
  if (indices && updates && indices->size() != updates->size()) {
    return ctx.Fail("updates has rank {} but indices has rank {}; they must be equal", updates->size(),
                    indices->size());
  }
  if (data) {
    VIGIL_ASSIGN_OR_RETURN(int64_t axis, IntAttr(ctx.node(), "axis", 0));
    VIGIL_RETURN_IF_ERROR(NormalizeAxis(ctx.node(), axis, data->size()).status());
  }
  return PropagateFirstInput(ctx);
}

// TensorScatter: update is past_cache with a sequence axis (not 0, the
// batch) no longer than past_cache's; write_indices holds one int64 per batch.
Status InferTensorScatter(InferenceContext& ctx) {
  VIGIL_ASSIGN_OR_RETURN(std::string mode, StringAttr(ctx.node(), "mode", "linear"));
  if (mode != "linear" && mode != "circular") {
    return ctx.Fail("attribute mode is '{}', expected 'linear' or 'circular'", mode);
  }
  const ir::DataType past_type = ElemType(ctx, 0), update_type = ElemType(ctx, 1);
  if (past_type != ir::DataType::kUndefined && update_type != ir::DataType::kUndefined && past_type != update_type) {
    return ctx.Fail("update has dtype {} but past_cache has dtype {}; they must be equal",
                    ir::DataTypeName(update_type), ir::DataTypeName(past_type));
  }
  const ir::DataType index_type = ElemType(ctx, 2);
  if (ctx.has_input(2) && index_type != ir::DataType::kUndefined && index_type != ir::DataType::kInt64) {
    return ctx.Fail("write_indices has dtype {}; it must be int64", ir::DataTypeName(index_type));
  }
  const Dims* past = InputDims(ctx, 0);
  const Dims* update = InputDims(ctx, 1);
  if (past) {
    if (past->size() < 2) return ctx.Fail("past_cache has rank {}; TensorScatter needs rank >= 2", past->size());
    VIGIL_ASSIGN_OR_RETURN(int64_t axis_attr, IntAttr(ctx.node(), "axis", -2));
    VIGIL_ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(ctx.node(), axis_attr, static_cast<int64_t>(past->size())));
    if (axis == 0) return ctx.Fail("attribute axis is {}, the batch axis; the sequence axis cannot be 0", axis_attr);
    if (update) {
      if (update->size() != past->size()) {
        return ctx.Fail("update has rank {} but past_cache has rank {}; they must be equal", update->size(),
                        past->size());
      }
      for (size_t i = 0; i < past->size(); ++i) {
        const ir::Dim &p = (*past)[i], &u = (*update)[i];
        if (!p.value || !u.value) continue;
        if (static_cast<int64_t>(i) == axis ? *u.value > *p.value : *u.value != *p.value) {
          return ctx.Fail("update of shape {} does not fit past_cache of shape {} along axis {}",
                          ir::ShapeToString(ctx.input_type(1)->shape), ir::ShapeToString(ctx.input_type(0)->shape),
                          i);
        }
      }
    }
    const Dims* indices = InputDims(ctx, 2);
    if (ctx.has_input(2) && indices) {
      const ir::Dim& batch = (*past)[0];
      if (indices->size() != 1 || (batch.value && (*indices)[0].value && *(*indices)[0].value != *batch.value)) {
        return ctx.Fail("write_indices has shape {}; it must be [batch_size] of past_cache {}",
                        ir::ShapeToString(ctx.input_type(2)->shape), ir::ShapeToString(ctx.input_type(0)->shape));
      }
    }
  }
  return PropagateFirstInput(ctx);
}

Status InferNonZero(InferenceContext& ctx) {
  const Dims* in = InputDims(ctx, 0);
  ir::Dim rows = in ? ir::Dim::Known(static_cast<int64_t>(in->size())) : ctx.NewSymbol();
  SetTensor(ctx, 0, ir::DataType::kInt64, {rows, ctx.NewSymbol()});
  return Status::Ok();
}

Status InferOneHot(InferenceContext& ctx) {
  ir::DataType dtype = ElemType(ctx, 2);
  const Dims* indices = InputDims(ctx, 0);
  VIGIL_ASSIGN_OR_RETURN(int64_t axis, IntAttr(ctx.node(), "axis", -1));
  std::optional<int64_t> values_len = KnownLength(ctx, 2);
  if (values_len && *values_len != 2) return ctx.Fail("values has {} elements; it must be [off_value, on_value]", *values_len);
  ir::Dim depth = ctx.NewSymbol();
  const ir::Tensor* t = ctx.input_value(1);
  // depth may have any numeric type; ReadDoubles reads the common ones and
  // the rest stay symbolic.
  using D = ir::DataType;
  if (t && (t->dtype == D::kFloat32 || t->dtype == D::kFloat64 || t->dtype == D::kFloat16 ||
            t->dtype == D::kBfloat16 || t->dtype == D::kInt32 || t->dtype == D::kInt64)) {
    VIGIL_ASSIGN_OR_RETURN(std::vector<double> d, ReadDoubles(ctx, *t));
    if (d.size() != 1) return ctx.Fail("depth has {} elements; it must be a single value", d.size());
    if (!(d[0] >= 1) || d[0] > 1e9) return ctx.Fail("depth is {}; it must be in [1, 1e9]", d[0]);
    depth = ir::Dim::Known(static_cast<int64_t>(d[0]));
  }
  if (!indices) {
    SetUnknownShape(ctx, 0, dtype);
    return Status::Ok();
  }
  int64_t out_rank = static_cast<int64_t>(indices->size()) + 1;
  VIGIL_ASSIGN_OR_RETURN(axis, NormalizeAxis(ctx.node(), axis, out_rank));
  Dims out = *indices;
  out.insert(out.begin() + axis, depth);
  SetTensor(ctx, 0, dtype, std::move(out));
  return Status::Ok();
}

Status InferTrilu(InferenceContext& ctx) {
  const Dims* in = InputDims(ctx, 0);
  if (in && in->size() < 2) return ctx.Fail("input has rank {}; Trilu needs rank >= 2", in->size());
  if (const ir::Tensor* k = ctx.input_value(1)) {
    VIGIL_ASSIGN_OR_RETURN(std::vector<int64_t> kv, ReadInt64s(ctx, *k));
    if (kv.size() != 1) return ctx.Fail("k has {} elements; it must be a scalar", kv.size());
  }
  return PropagateFirstInput(ctx);
}

const OpSchema kIndexingSchemas[] = {
    {"", "Slice", 1, 9, 1, 1, 1, 1, InferSlice},
    {"", "Slice", 10, kLatest, 3, 5, 1, 1, InferSlice},
    {"", "Gather", 1, kLatest, 2, 2, 1, 1, InferGather},
    {"", "GatherElements", 11, kLatest, 2, 2, 1, 1, InferGatherElements},
    {"", "GatherND", 11, kLatest, 2, 2, 1, 1, InferGatherND},
    {"", "ScatterND", 11, kLatest, 3, 3, 1, 1, InferScatterND},
    {"", "ScatterElements", 11, kLatest, 3, 3, 1, 1, InferScatterElements},
    {"", "Scatter", 9, 10, 3, 3, 1, 1, InferScatterElements},
    {"", "TensorScatter", 24, kLatest, 2, 3, 1, 1, InferTensorScatter},
    {"", "NonZero", 9, kLatest, 1, 1, 1, 1, InferNonZero},
    {"", "OneHot", 9, kLatest, 3, 3, 1, 1, InferOneHot},
    {"", "Trilu", 14, kLatest, 1, 2, 1, 1, InferTrilu},
};

}  // namespace

std::span<const OpSchema> IndexingSchemas() { return kIndexingSchemas; }

}  // namespace vigil::ops::shape_family
