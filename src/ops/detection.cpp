// Schemas and shape inference of the object-detection ops: NonMaxSuppression
// (its output's length depends on the scores, so it is a fresh symbol).
#include <vector>

#include "ops/attributes.h"
#include "ops/schema.h"
#include "ops/shape_helpers.h"

namespace vigil::ops {
namespace {

using Dims = std::vector<ir::Dim>;

// Input i's dims when its rank is known, else null.
const Dims* RankedDims(const InferenceContext& ctx, size_t i) {
  const ir::TypeInfo* t = ctx.input_type(i);
  return HasRank(t) ? &t->shape.dims : nullptr;
}

// Fails when the input's rank is known and differs from `rank`.
Status CheckRank(const InferenceContext& ctx, size_t i, const char* name, size_t rank, const char* layout) {
  const Dims* d = RankedDims(ctx, i);
  if (d && d->size() != rank) {
    return ctx.Fail("input {} ({}) has rank {} ({}), expected rank {} ({})", i, name, d->size(),
                    ir::ShapeToString(ctx.input_type(i)->shape), rank, layout);
  }
  return Status::Ok();
}

// Fails when dim `da` of input a and dim `db` of input b are both known and
// differ.
Status CheckSameDim(const InferenceContext& ctx, size_t a, const char* a_name, size_t da, size_t b,
                    const char* b_name, size_t db) {
  const Dims* x = RankedDims(ctx, a);
  const Dims* y = RankedDims(ctx, b);
  if (!x || !y || da >= x->size() || db >= y->size()) return Status::Ok();
  const ir::Dim &p = (*x)[da], &q = (*y)[db];
  if (p.is_known() && q.is_known() && *p.value != *q.value) {
    return ctx.Fail("dim {} of input {} ({}) is {} but dim {} of input {} ({}) is {}; they must be equal", da, a,
                    a_name, *p.value, db, b, b_name, *q.value);
  }
  return Status::Ok();
}

// boxes [batches, boxes, 4], scores [batches, classes, boxes]; the output
// lists one (batch, class, box) row per selected box.
Status InferNonMaxSuppression(InferenceContext& ctx) {
  VIGIL_RETURN_IF_ERROR(CheckRank(ctx, 0, "boxes", 3, "batches x boxes x 4"));
  VIGIL_RETURN_IF_ERROR(CheckRank(ctx, 1, "scores", 3, "batches x classes x boxes"));
  if (const Dims* boxes = RankedDims(ctx, 0); boxes && (*boxes)[2].is_known() && *(*boxes)[2].value != 4) {
    return ctx.Fail("input 0 (boxes) is {}; its last dim must be 4 (the box coordinates)",
                    ir::ShapeToString(ctx.input_type(0)->shape));
  }
  VIGIL_RETURN_IF_ERROR(CheckSameDim(ctx, 0, "boxes", 0, 1, "scores", 0));
  VIGIL_RETURN_IF_ERROR(CheckSameDim(ctx, 0, "boxes", 1, 1, "scores", 2));
  VIGIL_ASSIGN_OR_RETURN(int64_t center_point_box, IntAttr(ctx.node(), "center_point_box", 0));
  if (center_point_box != 0 && center_point_box != 1) {
    return ctx.Fail("center_point_box is {}, expected 0 (corners) or 1 (center and size)", center_point_box);
  }
  ctx.set_output(0, TensorType(ir::DataType::kInt64, Dims{ctx.NewSymbol(), ir::Dim::Known(3)}));
  return Status::Ok();
}

// NonMaxSuppression 10 and 11 differ only in documentation.
const OpSchema kDetectionSchemas[] = {
    {"", "NonMaxSuppression", 10, kLatest, 2, 5, 1, 1, InferNonMaxSuppression},
};

}  // namespace

std::span<const OpSchema> DetectionSchemas() { return kDetectionSchemas; }

}  // namespace vigil::ops
