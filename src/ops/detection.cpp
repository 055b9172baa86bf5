// Schemas and shape inference of the object-detection ops: NonMaxSuppression
// (its output's length depends on the scores, so it is a fresh symbol) and
// RoiAlign.
#include "ops/detection.h"

#include <string>
#include <vector>

#include "ops/attributes.h"
#include "ops/schema.h"
#include "ops/shape_helpers.h"
#include "ops/families.h"

namespace vigil::ops {

Status CheckNmsShapes(const ir::Node& node, const std::vector<int64_t>& boxes, std::string_view boxes_text,
                      const std::vector<int64_t>& scores, std::string_view scores_text) {
  if (boxes.size() != 3 || boxes[2] != 4) {
    return InvalidInputError("{}: input 0 (boxes) is {}, expected [num_batches, num_boxes, 4]", NodeLabel(node),
                             boxes_text);
  }
  if (scores.size() != 3) {
    return InvalidInputError("{}: input 1 (scores) is {}, expected [num_batches, num_classes, num_boxes]",
                             NodeLabel(node), scores_text);
  }
  if (scores[0] != boxes[0] || scores[2] != boxes[1]) {
    return InvalidInputError("{}: input 1 (scores) is {} but boxes {} need [{}, num_classes, {}]", NodeLabel(node),
                             scores_text, boxes_text, boxes[0], boxes[1]);
  }
  return Status::Ok();
}
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

// The dim `d` of input i when its rank is known, else a fresh symbol.
ir::Dim DimOr(InferenceContext& ctx, size_t i, size_t d) {
  const Dims* dims = RankedDims(ctx, i);
  if (dims && d < dims->size() && (dims->at(d).is_known() || dims->at(d).is_symbolic())) return dims->at(d);
  return ctx.NewSymbol();
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

// X [N, C, H, W], rois [R, 4], batch_indices [R] -> Y [R, C, oh, ow].
Status InferRoiAlign(InferenceContext& ctx) {
  VIGIL_RETURN_IF_ERROR(CheckRank(ctx, 0, "X", 4, "N x C x H x W"));
  VIGIL_RETURN_IF_ERROR(CheckRank(ctx, 1, "rois", 2, "num_rois x 4"));
  VIGIL_RETURN_IF_ERROR(CheckRank(ctx, 2, "batch_indices", 1, "num_rois"));
  if (const Dims* rois = RankedDims(ctx, 1); rois && (*rois)[1].is_known() && *(*rois)[1].value != 4) {
    return ctx.Fail("input 1 (rois) is {}; its last dim must be 4 (x1, y1, x2, y2)",
                    ir::ShapeToString(ctx.input_type(1)->shape));
  }
  VIGIL_RETURN_IF_ERROR(CheckSameDim(ctx, 1, "rois", 0, 2, "batch_indices", 0));
  VIGIL_ASSIGN_OR_RETURN(int64_t height, IntAttr(ctx.node(), "output_height", 1));
  VIGIL_ASSIGN_OR_RETURN(int64_t width, IntAttr(ctx.node(), "output_width", 1));
  VIGIL_ASSIGN_OR_RETURN(int64_t sampling_ratio, IntAttr(ctx.node(), "sampling_ratio", 0));
  VIGIL_ASSIGN_OR_RETURN(std::string mode, StringAttr(ctx.node(), "mode", "avg"));
  constexpr int64_t kMaxSize = int64_t{1} << 20;  // keeps the output's size arithmetic in range
  if (height < 1 || height > kMaxSize || width < 1 || width > kMaxSize) {
    return ctx.Fail("output_height {} and output_width {} must be in [1, 2^20]", height, width);
  }
  if (sampling_ratio < 0) return ctx.Fail("sampling_ratio is {}; it must be >= 0 (0: adaptive)", sampling_ratio);
  if (mode != "avg" && mode != "max") return ctx.Fail("mode is '{}', expected 'avg' or 'max'", mode);
  if (ctx.opset() >= 16) {
    VIGIL_ASSIGN_OR_RETURN(std::string coords,
                           StringAttr(ctx.node(), "coordinate_transformation_mode", "half_pixel"));
    if (coords != "half_pixel" && coords != "output_half_pixel") {
      return ctx.Fail("coordinate_transformation_mode is '{}', expected 'half_pixel' or 'output_half_pixel'", coords);
    }
  }
  const ir::TypeInfo* x = ctx.input_type(0);
  if (!x || x->kind != ir::TypeInfo::Kind::kTensor) return Status::Ok();
  const Dims* rois = RankedDims(ctx, 1);
  // The number of rois, from rois or else from batch_indices.
  ir::Dim count = rois && ((*rois)[0].is_known() || (*rois)[0].is_symbolic()) ? (*rois)[0] : DimOr(ctx, 2, 0);
  ctx.set_output(0, TensorType(x->elem_type, Dims{count, DimOr(ctx, 0, 1), ir::Dim::Known(height),
                                                  ir::Dim::Known(width)}));
  return Status::Ok();
}

// NonMaxSuppression 10 and 11 differ only in documentation. RoiAlign 16
// added coordinate_transformation_mode (opset 10 behaves as
// output_half_pixel); 22 added bfloat16.
const OpSchema kDetectionSchemas[] = {
    {"", "NonMaxSuppression", 10, kLatest, 2, 5, 1, 1, InferNonMaxSuppression},
    {"", "RoiAlign", 10, 15, 3, 3, 1, 1, InferRoiAlign},
    {"", "RoiAlign", 16, kLatest, 3, 3, 1, 1, InferRoiAlign},
};

}  // namespace

std::span<const OpSchema> DetectionSchemas() { return kDetectionSchemas; }

}  // namespace vigil::ops
