// Schemas and shape inference of the reductions: ReduceSum ... ReduceSumSquare
// (axes as an attribute before opset 13 for ReduceSum and 18 for the others,
// as an input after), ArgMax/ArgMin, CumSum, CumProd and TopK.
#include <algorithm>
#include <optional>
#include <vector>

#include "ops/attributes.h"
#include "ops/schema.h"
#include "ops/shape_helpers.h"
#include "ops/families.h"

namespace vigil::ops {
namespace {

ir::Dim Carry(InferenceContext& ctx, const ir::Dim& d) {
  if (d.is_known() || d.is_symbolic()) return d;
  return ctx.NewSymbol();
}

// The reduced shape, given normalised axes (empty = all dims).
std::vector<ir::Dim> ReducedDims(InferenceContext& ctx, const std::vector<ir::Dim>& dims,
                                 const std::vector<int64_t>& axes, bool keepdims) {
  std::vector<ir::Dim> out;
  for (size_t i = 0; i < dims.size(); ++i) {
    const bool reduced = axes.empty() || std::find(axes.begin(), axes.end(), static_cast<int64_t>(i)) != axes.end();
    if (!reduced) {
      out.push_back(Carry(ctx, dims[i]));
    } else if (keepdims) {
      out.push_back(ir::Dim::Known(1));
    }
  }
  return out;
}

Status InferReduce(InferenceContext& ctx, bool axes_from_input) {
  const ir::TypeInfo* x = ctx.input_type(0);
  if (!x || x->elem_type == ir::DataType::kUndefined) return Status::Ok();
  const ir::Node& node = ctx.node();
  VIGIL_ASSIGN_OR_RETURN(int64_t keepdims, IntAttr(node, "keepdims", 1));
  int64_t noop = 0;
  std::optional<std::vector<int64_t>> axes;
  if (axes_from_input) {
    if (HasAttr(node, "axes")) return ctx.Fail("axes is an input from this opset, not an attribute");
    VIGIL_ASSIGN_OR_RETURN(noop, IntAttr(node, "noop_with_empty_axes", 0));
    if (!ctx.has_input(1)) {
      axes = std::vector<int64_t>{};
    } else if (const ir::Tensor* v = ctx.input_value(1)) {
      VIGIL_ASSIGN_OR_RETURN(axes, ReadInt64s(ctx, *v));
    } else if (const ir::TypeInfo* t = ctx.input_type(1); HasRank(t) && t->shape.dims.size() == 1 &&
                                                          t->shape.dims[0].value == 0) {
      axes = std::vector<int64_t>{};  // statically empty
    }
  } else {
    VIGIL_ASSIGN_OR_RETURN(axes, IntsAttr(node, "axes"));
  }
  if (!HasRank(x)) {
    ctx.set_output(0, TensorTypeUnknownShape(x->elem_type));
    return Status::Ok();
  }
  const std::vector<ir::Dim>& dims = x->shape.dims;
  const int64_t rank = static_cast<int64_t>(dims.size());
  if (!axes) {
    // Axes known only at run time: with keepdims the rank stays, but any dim
    // may become 1.
    if (!keepdims) {
      ctx.set_output(0, TensorTypeUnknownShape(x->elem_type));
      return Status::Ok();
    }
    std::vector<ir::Dim> out;
    for (int64_t i = 0; i < rank; ++i) {
      out.push_back(dims[i].value == 1 ? dims[i] : ctx.NewSymbol());
    }
    ctx.set_output(0, TensorType(x->elem_type, std::move(out)));
    return Status::Ok();
  }
  if (axes->empty() && noop) {
    ctx.set_output(0, *x);
    return Status::Ok();
  }
  for (int64_t& a : *axes) {
    VIGIL_ASSIGN_OR_RETURN(a, NormalizeAxis(node, a, rank, "axes entry"));
  }
  ctx.set_output(0, TensorType(x->elem_type, ReducedDims(ctx, dims, *axes, keepdims != 0)));
  return Status::Ok();
}

Status InferReduceAttrAxes(InferenceContext& ctx) { return InferReduce(ctx, false); }
Status InferReduceInputAxes(InferenceContext& ctx) { return InferReduce(ctx, true); }

Status InferArgReduce(InferenceContext& ctx) {
  const ir::TypeInfo* x = ctx.input_type(0);
  VIGIL_ASSIGN_OR_RETURN(int64_t axis, IntAttr(ctx.node(), "axis", 0));
  VIGIL_ASSIGN_OR_RETURN(int64_t keepdims, IntAttr(ctx.node(), "keepdims", 1));
  if (!HasRank(x)) {
    ctx.set_output(0, TensorTypeUnknownShape(ir::DataType::kInt64));
    return Status::Ok();
  }
  const int64_t rank = static_cast<int64_t>(x->shape.dims.size());
  VIGIL_ASSIGN_OR_RETURN(axis, NormalizeAxis(ctx.node(), axis, rank));
  if (x->shape.dims[axis].value == 0) {
    return ctx.Fail("axis {} has size 0; there is no index to return", axis);
  }
  ctx.set_output(0, TensorType(ir::DataType::kInt64, ReducedDims(ctx, x->shape.dims, {axis}, keepdims != 0)));
  return Status::Ok();
}

// CumSum, CumProd.
Status InferCumulative(InferenceContext& ctx) {
  const ir::TypeInfo* axis = ctx.input_type(1);
  if (HasRank(axis) && axis->shape.dims.size() > 1) {
    return ctx.Fail("input axis has rank {}; it must be a scalar", axis->shape.dims.size());
  }
  if (axis && axis->elem_type != ir::DataType::kUndefined && axis->elem_type != ir::DataType::kInt32 &&
      axis->elem_type != ir::DataType::kInt64) {
    return ctx.Fail("input axis has dtype {}; it must be int32 or int64", ir::DataTypeName(axis->elem_type));
  }
  const ir::TypeInfo* x = ctx.input_type(0);
  if (HasRank(x) && ctx.input_value(1)) {
    VIGIL_ASSIGN_OR_RETURN(std::vector<int64_t> v, ReadInt64s(ctx, *ctx.input_value(1)));
    if (v.size() != 1) return ctx.Fail("input axis has {} values; it must hold one", v.size());
    VIGIL_RETURN_IF_ERROR(NormalizeAxis(ctx.node(), v[0], static_cast<int64_t>(x->shape.dims.size())).status());
  }
  return PropagateFirstInput(ctx);
}

Status InferTopK(InferenceContext& ctx) {
  const ir::TypeInfo* x = ctx.input_type(0);
  if (!x || x->elem_type == ir::DataType::kUndefined) return Status::Ok();
  VIGIL_ASSIGN_OR_RETURN(int64_t axis, IntAttr(ctx.node(), "axis", -1));
  std::optional<int64_t> k;
  if (ctx.opset() < 10) {
    VIGIL_ASSIGN_OR_RETURN(k, RequiredIntAttr(ctx.node(), "k"));
  } else if (const ir::Tensor* v = ctx.input_value(1)) {
    VIGIL_ASSIGN_OR_RETURN(std::vector<int64_t> kv, ReadInt64s(ctx, *v));
    if (kv.size() != 1) return ctx.Fail("input K has {} values; it must hold one", kv.size());
    k = kv[0];
  }
  if (k && *k < 0) return ctx.Fail("k is {}; it must not be negative", *k);
  if (!HasRank(x)) {
    ctx.set_output(0, TensorTypeUnknownShape(x->elem_type));
    ctx.set_output(1, TensorTypeUnknownShape(ir::DataType::kInt64));
    return Status::Ok();
  }
  std::vector<ir::Dim> dims;
  for (const ir::Dim& d : x->shape.dims) dims.push_back(Carry(ctx, d));
  VIGIL_ASSIGN_OR_RETURN(axis, NormalizeAxis(ctx.node(), axis, static_cast<int64_t>(dims.size())));
  if (k && dims[axis].value && *k > *dims[axis].value) {
    return ctx.Fail("k is {} but axis {} has only {} elements", *k, axis, *dims[axis].value);
  }
  dims[axis] = k ? ir::Dim::Known(*k) : ctx.NewSymbol();
  ctx.set_output(0, TensorType(x->elem_type, dims));
  ctx.set_output(1, TensorType(ir::DataType::kInt64, dims));
  return Status::Ok();
}

// The reductions whose axes became an input at opset 18 (ReduceSum: 13).
#define VIGIL_REDUCE_SCHEMAS(name, input_since)                                    \
  {"", name, 1, input_since - 1, 1, 1, 1, 1, InferReduceAttrAxes},                \
  {"", name, input_since, kLatest, 1, 2, 1, 1, InferReduceInputAxes}

const OpSchema kReductionSchemas[] = {
    VIGIL_REDUCE_SCHEMAS("ReduceSum", 13),
    VIGIL_REDUCE_SCHEMAS("ReduceMean", 18),
    VIGIL_REDUCE_SCHEMAS("ReduceMax", 18),
    VIGIL_REDUCE_SCHEMAS("ReduceMin", 18),
    VIGIL_REDUCE_SCHEMAS("ReduceProd", 18),
    VIGIL_REDUCE_SCHEMAS("ReduceL1", 18),
    VIGIL_REDUCE_SCHEMAS("ReduceL2", 18),
    VIGIL_REDUCE_SCHEMAS("ReduceLogSum", 18),
    VIGIL_REDUCE_SCHEMAS("ReduceLogSumExp", 18),
    VIGIL_REDUCE_SCHEMAS("ReduceSumSquare", 18),
    // select_last_index (12) changes no shapes.
    {"", "ArgMax", 1, kLatest, 1, 1, 1, 1, InferArgReduce},
    {"", "ArgMin", 1, kLatest, 1, 1, 1, 1, InferArgReduce},
    {"", "CumSum", 11, kLatest, 2, 2, 1, 1, InferCumulative},
    {"", "CumProd", 26, kLatest, 2, 2, 1, 1, InferCumulative},
    // k is an attribute before opset 10, an input from 10; 11 added largest,
    // sorted and negative axes.
    {"", "TopK", 1, 9, 1, 1, 2, 2, InferTopK},
    {"", "TopK", 10, kLatest, 2, 2, 2, 2, InferTopK},
};

#undef VIGIL_REDUCE_SCHEMAS

}  // namespace

std::span<const OpSchema> ReductionSchemas() { return kReductionSchemas; }

}  // namespace vigil::ops
