// The loss operators: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss
// (opsets 12, 13 and 22, which differ only in the types allowed). Both take
// scores [N, C, d1, ..., dk] and class indices [N, d1, ..., dk]; the loss is
// [N, d1, ..., dk] with reduction 'none', a scalar with 'sum' or 'mean'.
// SoftmaxCrossEntropyLoss may also give the log-probabilities, shaped like
// the scores.
#include <vector>

#include "ops/attributes.h"
#include "ops/schema.h"
#include "ops/shape_helpers.h"
#include "ops/families.h"

namespace vigil::ops {
namespace {

Status InferLoss(InferenceContext& ctx) {
  const ir::TypeInfo* scores = ctx.input_type(0);
  const ir::TypeInfo* target = ctx.input_type(1);
  VIGIL_ASSIGN_OR_RETURN(std::string reduction, StringAttr(ctx.node(), "reduction", "mean"));
  if (reduction != "none" && reduction != "sum" && reduction != "mean") {
    return ctx.Fail("reduction is '{}', expected 'none', 'sum' or 'mean'", reduction);
  }
  if (!scores) return Status::Ok();
  if (!ir::IsFloatingPoint(scores->elem_type)) {
    return ctx.Fail("input 0 (scores) is {}, expected a float type", ir::DataTypeName(scores->elem_type));
  }
  if (target && target->elem_type != ir::DataType::kInt32 && target->elem_type != ir::DataType::kInt64) {
    return ctx.Fail("input 1 (target) is {}, expected int32 or int64", ir::DataTypeName(target->elem_type));
  }
  if (HasRank(scores) && scores->shape.dims.size() < 2) {
    return ctx.Fail("input 0 (scores) has rank {}, expected at least 2 ([N, C, ...])", scores->shape.dims.size());
  }
  if (HasRank(scores) && HasRank(target) && target->shape.dims.size() + 1 != scores->shape.dims.size()) {
    return ctx.Fail("input 1 (target) has rank {}, expected {} (the rank of the scores without C)",
                    target->shape.dims.size(), scores->shape.dims.size() - 1);
  }
  if (reduction != "none") {
    ctx.set_output(0, TensorType(scores->elem_type, std::vector<ir::Dim>{}));
  } else if (HasRank(scores)) {
    std::vector<ir::Dim> dims = scores->shape.dims;
    dims.erase(dims.begin() + 1);
    ctx.set_output(0, TensorType(scores->elem_type, std::move(dims)));
  } else {
    ctx.set_output(0, TensorTypeUnknownShape(scores->elem_type));
  }
  if (ctx.num_outputs() > 1) ctx.set_output(1, *scores);
  return Status::Ok();
}

const OpSchema kLossSchemas[] = {
    {"", "NegativeLogLikelihoodLoss", 12, kLatest, 2, 3, 1, 1, InferLoss},
    {"", "SoftmaxCrossEntropyLoss", 12, kLatest, 2, 3, 1, 2, InferLoss},
};

}  // namespace

std::span<const OpSchema> LossSchemas() { return kLossSchemas; }

}  // namespace vigil::ops
