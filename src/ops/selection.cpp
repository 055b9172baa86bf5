// Schemas and shape inference of the selection ops: Unique (the distinct
// values or slices of a tensor, with where they first occur, where each
// input element went and how often each occurs), Compress (the slices along
// an axis whose condition is true) and ReverseSequence (reverse the first
// sequence_lens[b] steps of every batch entry along the time axis). Unique's
// and Compress's output sizes depend on the data: they get fresh symbols.
#include <vector>

#include "ops/attributes.h"
#include "ops/families.h"
#include "ops/schema.h"
#include "ops/shape_helpers.h"

namespace vigil::ops {
namespace {

// A dim carried over to an output: an unnamed unknown dim becomes a fresh
// symbol so that later nodes can still relate them.
ir::Dim Carry(InferenceContext& ctx, const ir::Dim& d) {
  if (d.is_known() || d.is_symbolic()) return d;
  return ctx.NewSymbol();
}

Status InferUnique(InferenceContext& ctx) {
  const ir::TypeInfo* x = ctx.input_type(0);
  VIGIL_ASSIGN_OR_RETURN(int64_t sorted, IntAttr(ctx.node(), "sorted", 1));
  if (sorted != 0 && sorted != 1) return ctx.Fail("attribute sorted is {}, expected 0 or 1", sorted);
  const bool has_axis = HasAttr(ctx.node(), "axis");
  if (!x) return Status::Ok();
  const ir::Dim count = ctx.NewSymbol();  // the number of unique values or slices
  ir::Dim inverse = ctx.NewSymbol();      // one entry per element or slice of the input
  if (has_axis && HasRank(x)) {
    VIGIL_ASSIGN_OR_RETURN(int64_t raw, IntAttr(ctx.node(), "axis", 0));
    const int64_t rank = static_cast<int64_t>(x->shape.dims.size());
    if (rank == 0) return ctx.Fail("input X is a scalar; Unique with an axis needs rank 1 or more");
    VIGIL_ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(ctx.node(), raw, rank));
    std::vector<ir::Dim> dims;
    for (const ir::Dim& d : x->shape.dims) dims.push_back(Carry(ctx, d));
    inverse = dims[static_cast<size_t>(axis)];
    dims[static_cast<size_t>(axis)] = count;
    ctx.set_output(0, TensorType(x->elem_type, std::move(dims)));
  } else if (has_axis) {
    ctx.set_output(0, TensorTypeUnknownShape(x->elem_type));
  } else {
    if (auto known = KnownDims(x)) {
      int64_t n = 1;
      for (int64_t d : *known) n *= d;
      inverse = ir::Dim::Known(n);
    }
    ctx.set_output(0, TensorType(x->elem_type, std::vector<ir::Dim>{count}));
  }
  if (ctx.num_outputs() > 1) ctx.set_output(1, TensorType(ir::DataType::kInt64, std::vector<ir::Dim>{count}));
  if (ctx.num_outputs() > 2) ctx.set_output(2, TensorType(ir::DataType::kInt64, std::vector<ir::Dim>{inverse}));
  if (ctx.num_outputs() > 3) ctx.set_output(3, TensorType(ir::DataType::kInt64, std::vector<ir::Dim>{count}));
  return Status::Ok();
}

Status InferCompress(InferenceContext& ctx) {
  const ir::TypeInfo* x = ctx.input_type(0);
  const ir::TypeInfo* cond = ctx.input_type(1);
  if (cond && cond->elem_type != ir::DataType::kBool && cond->elem_type != ir::DataType::kUndefined) {
    return ctx.Fail("input 1 (condition) is {}, expected bool", ir::DataTypeName(cond->elem_type));
  }
  if (HasRank(cond) && cond->shape.dims.size() != 1) {
    return ctx.Fail("input 1 (condition) has rank {}, expected 1", cond->shape.dims.size());
  }
  if (!x) return Status::Ok();
  if (!HasAttr(ctx.node(), "axis")) {
    ctx.set_output(0, TensorType(x->elem_type, std::vector<ir::Dim>{ctx.NewSymbol()}));
    return Status::Ok();
  }
  if (!HasRank(x)) {
    ctx.set_output(0, TensorTypeUnknownShape(x->elem_type));
    return Status::Ok();
  }
  VIGIL_ASSIGN_OR_RETURN(int64_t raw, IntAttr(ctx.node(), "axis", 0));
  const int64_t rank = static_cast<int64_t>(x->shape.dims.size());
  if (ctx.opset() < 11 && raw < 0) return ctx.Fail("attribute axis is {}; before opset 11 it must be >= 0", raw);
  VIGIL_ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(ctx.node(), raw, rank));
  const ir::Dim& along = x->shape.dims[static_cast<size_t>(axis)];
  if (HasRank(cond) && cond->shape.dims[0].value && along.value && *cond->shape.dims[0].value > *along.value) {
    return ctx.Fail("input 1 (condition) has {} entries but axis {} of input 0 has only {}",
                    *cond->shape.dims[0].value, axis, *along.value);
  }
  std::vector<ir::Dim> dims;
  for (const ir::Dim& d : x->shape.dims) dims.push_back(Carry(ctx, d));
  dims[static_cast<size_t>(axis)] = ctx.NewSymbol();
  ctx.set_output(0, TensorType(x->elem_type, std::move(dims)));
  return Status::Ok();
}

Status InferReverseSequence(InferenceContext& ctx) {
  VIGIL_ASSIGN_OR_RETURN(int64_t batch_axis, IntAttr(ctx.node(), "batch_axis", 1));
  VIGIL_ASSIGN_OR_RETURN(int64_t time_axis, IntAttr(ctx.node(), "time_axis", 0));
  if ((batch_axis != 0 && batch_axis != 1) || (time_axis != 0 && time_axis != 1) || batch_axis == time_axis) {
    return ctx.Fail("attributes batch_axis {} and time_axis {}: expected one to be 0 and the other 1", batch_axis,
                    time_axis);
  }
  const ir::TypeInfo* x = ctx.input_type(0);
  const ir::TypeInfo* lens = ctx.input_type(1);
  if (lens && lens->elem_type != ir::DataType::kInt64 && lens->elem_type != ir::DataType::kUndefined) {
    return ctx.Fail("input 1 (sequence_lens) is {}, expected int64", ir::DataTypeName(lens->elem_type));
  }
  if (HasRank(lens) && lens->shape.dims.size() != 1) {
    return ctx.Fail("input 1 (sequence_lens) has rank {}, expected 1", lens->shape.dims.size());
  }
  if (!x) return Status::Ok();
  if (HasRank(x)) {
    if (x->shape.dims.size() < 2) return ctx.Fail("input 0 has rank {}, expected at least 2", x->shape.dims.size());
    const ir::Dim& batch = x->shape.dims[static_cast<size_t>(batch_axis)];
    if (HasRank(lens) && lens->shape.dims[0].value && batch.value && *lens->shape.dims[0].value != *batch.value) {
      return ctx.Fail("input 1 (sequence_lens) has {} entries, expected {} (the batch dim {} of input 0)",
                      *lens->shape.dims[0].value, *batch.value, batch_axis);
    }
  }
  ctx.set_output(0, *x);
  return Status::Ok();
}

const OpSchema kSelectionSchemas[] = {
    {"", "Unique", 11, kLatest, 1, 1, 1, 4, InferUnique},
    // Compress 11 allows a negative axis.
    {"", "Compress", 9, 10, 2, 2, 1, 1, InferCompress},
    {"", "Compress", 11, kLatest, 2, 2, 1, 1, InferCompress},
    {"", "ReverseSequence", 10, kLatest, 2, 2, 1, 1, InferReverseSequence},
};

}  // namespace

std::span<const OpSchema> SelectionSchemas() { return kSelectionSchemas; }

}  // namespace vigil::ops
