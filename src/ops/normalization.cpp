// Schemas and shape inference of the normalisation ops (BatchNormalization,
// InstanceNormalization, LayerNormalization, RMSNormalization,
// GroupNormalization, LRN, MeanVarianceNormalization, LpNormalization) and of
// Softmax, LogSoftmax and Hardmax. All of them keep X's type and shape in Y;
// inference checks attributes and the parameter tensors' sizes where those
// are known.
#include <vector>

#include "ops/attributes.h"
#include "ops/schema.h"
#include "ops/shape_helpers.h"
#include "ops/families.h"

namespace vigil::ops {
namespace {

bool IsTensor(const ir::TypeInfo* t) { return t && t->kind == ir::TypeInfo::Kind::kTensor; }

// Y takes X's type. Returns X's dims when its rank is known (else nullopt),
// failing when the rank is below `min_rank`.
Result<std::optional<std::vector<ir::Dim>>> PropagateData(InferenceContext& ctx, size_t min_rank) {
  VIGIL_RETURN_IF_ERROR(PropagateFirstInput(ctx));
  const ir::TypeInfo* x = ctx.input_type(0);
  if (!HasRank(x)) return std::optional<std::vector<ir::Dim>>{};
  if (x->shape.dims.size() < min_rank) {
    return ctx.Fail("input 0 has rank {} ({}), {} needs rank >= {}", x->shape.dims.size(),
                    ir::ShapeToString(x->shape), ctx.node().op_type, min_rank);
  }
  return std::optional<std::vector<ir::Dim>>(x->shape.dims);
}

// Input `i` (a per-channel parameter), when its shape is known, must be 1-D
// with `expected` elements.
Status CheckVector(InferenceContext& ctx, size_t i, const char* name, const ir::Dim& expected, const char* per) {
  const ir::TypeInfo* t = ctx.has_input(i) ? ctx.input_type(i) : nullptr;
  if (!HasRank(t)) return Status::Ok();
  if (t->shape.dims.size() != 1) {
    return ctx.Fail("input {} ({}) has shape {}, expected a 1-D tensor with one value per {}", i, name,
                    ir::ShapeToString(t->shape), per);
  }
  const ir::Dim& d = t->shape.dims[0];
  if (d.is_known() && expected.is_known() && *d.value != *expected.value) {
    return ctx.Fail("input {} ({}) has {} elements, expected {} (one per {})", i, name, *d.value, *expected.value,
                    per);
  }
  return Status::Ok();
}

Status InferBatchNorm(InferenceContext& ctx) {
  VIGIL_ASSIGN_OR_RETURN(auto dims, PropagateData(ctx, 2));
  if (!dims) return Status::Ok();
  // Before opset 9, spatial=0 gives per-element (C x D1 x ...) parameters.
  VIGIL_ASSIGN_OR_RETURN(int64_t spatial, IntAttr(ctx.node(), "spatial", 1));
  const ir::Dim& c = (*dims)[1];
  if (ctx.opset() >= 9 || spatial != 0) {
    const char* names[] = {"", "scale", "B", "input_mean", "input_var"};
    for (size_t i = 1; i <= 4; ++i) VIGIL_RETURN_IF_ERROR(CheckVector(ctx, i, names[i], c, "channel"));
  }
  // Training outputs (running or saved statistics): one value per channel.
  for (size_t i = 1; i < ctx.num_outputs(); ++i) {
    const ir::TypeInfo* stat = ctx.opset() >= 14 ? ctx.input_type(3) : ctx.input_type(0);
    if (IsTensor(stat)) ctx.set_output(i, TensorType(stat->elem_type, std::vector<ir::Dim>{c}));
  }
  return Status::Ok();
}

Status InferInstanceNorm(InferenceContext& ctx) {
  VIGIL_ASSIGN_OR_RETURN(auto dims, PropagateData(ctx, 2));
  if (!dims) return Status::Ok();
  VIGIL_RETURN_IF_ERROR(CheckVector(ctx, 1, "scale", (*dims)[1], "channel"));
  return CheckVector(ctx, 2, "B", (*dims)[1], "channel");
}

// stash_type names the dtype of LayerNormalization's Mean and InvStdDev.
Result<ir::DataType> StashType(InferenceContext& ctx) {
  VIGIL_ASSIGN_OR_RETURN(int64_t stash, IntAttr(ctx.node(), "stash_type", 1));
  auto type = static_cast<ir::DataType>(stash);
  if (type != ir::DataType::kFloat32 && type != ir::DataType::kFloat64 && type != ir::DataType::kFloat16 &&
      type != ir::DataType::kBfloat16) {
    return ctx.Fail("stash_type is {}, expected a float dtype (1 float32, 10 float16, 11 float64, 16 bfloat16)",
                    stash);
  }
  return type;
}

Status InferLayerNorm(InferenceContext& ctx) {
  VIGIL_ASSIGN_OR_RETURN(ir::DataType stash, StashType(ctx));
  VIGIL_ASSIGN_OR_RETURN(auto dims, PropagateData(ctx, 1));
  const ir::TypeInfo* x = ctx.input_type(0);
  for (size_t i = 1; i < ctx.num_outputs() && IsTensor(x); ++i) {
    ctx.set_output(i, TensorTypeUnknownShape(stash));
  }
  if (!dims) return Status::Ok();
  VIGIL_ASSIGN_OR_RETURN(int64_t axis_attr, IntAttr(ctx.node(), "axis", -1));
  VIGIL_ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(ctx.node(), axis_attr, static_cast<int64_t>(dims->size())));
  // Mean and InvStdDev keep the leading dims and reduce the rest to 1.
  std::vector<ir::Dim> stat_dims(dims->begin(), dims->begin() + axis);
  stat_dims.resize(dims->size(), ir::Dim::Known(1));
  for (size_t i = 1; i < ctx.num_outputs(); ++i) ctx.set_output(i, TensorType(stash, stat_dims));
  return Status::Ok();
}

// Y keeps X's type and shape; Scale must broadcast to X's normalised dims
// (unidirectionally: it never grows Y).
Status InferRmsNorm(InferenceContext& ctx) {
  VIGIL_RETURN_IF_ERROR(StashType(ctx).status());
  VIGIL_ASSIGN_OR_RETURN(auto dims, PropagateData(ctx, 1));
  if (!dims) return Status::Ok();
  VIGIL_ASSIGN_OR_RETURN(int64_t axis_attr, IntAttr(ctx.node(), "axis", -1));
  VIGIL_RETURN_IF_ERROR(NormalizeAxis(ctx.node(), axis_attr, static_cast<int64_t>(dims->size())).status());
  const ir::TypeInfo* scale = ctx.input_type(1);
  if (!HasRank(scale)) return Status::Ok();
  const auto& sd = scale->shape.dims;
  bool fits = sd.size() <= dims->size();
  for (size_t i = 0; fits && i < sd.size(); ++i) {
    const ir::Dim& s = sd[sd.size() - 1 - i];
    const ir::Dim& x = (*dims)[dims->size() - 1 - i];
    fits = !s.is_known() || !x.is_known() || *s.value == 1 || *s.value == *x.value;
  }
  if (!fits) {
    return ctx.Fail("input 1 (scale) has shape {}, which does not broadcast to input 0 (X) {}",
                    ir::ShapeToString(scale->shape), ir::ShapeToString(ctx.input_type(0)->shape));
  }
  return Status::Ok();
}

Status InferGroupNorm(InferenceContext& ctx) {
  VIGIL_ASSIGN_OR_RETURN(int64_t groups, RequiredIntAttr(ctx.node(), "num_groups"));
  if (groups < 1) return ctx.Fail("num_groups is {}, must be at least 1", groups);
  if (ctx.opset() >= 21) VIGIL_RETURN_IF_ERROR(StashType(ctx).status());
  VIGIL_ASSIGN_OR_RETURN(auto dims, PropagateData(ctx, 2));
  if (!dims) return Status::Ok();
  const ir::Dim& c = (*dims)[1];
  if (c.is_known() && *c.value % groups != 0) {
    return ctx.Fail("input 0 has {} channels, not divisible by num_groups {}", *c.value, groups);
  }
  // Opset 18 scales and shifts per group, opset 21 per channel.
  if (ctx.opset() < 21) {
    VIGIL_RETURN_IF_ERROR(CheckVector(ctx, 1, "scale", ir::Dim::Known(groups), "group (opset 18)"));
    return CheckVector(ctx, 2, "bias", ir::Dim::Known(groups), "group (opset 18)");
  }
  VIGIL_RETURN_IF_ERROR(CheckVector(ctx, 1, "scale", c, "channel"));
  return CheckVector(ctx, 2, "bias", c, "channel");
}

Status InferLrn(InferenceContext& ctx) {
  VIGIL_ASSIGN_OR_RETURN(int64_t size, RequiredIntAttr(ctx.node(), "size"));
  if (size < 1) return ctx.Fail("size is {}, must be at least 1", size);
  return PropagateData(ctx, 2).status();
}

Status InferMeanVarianceNorm(InferenceContext& ctx) {
  VIGIL_ASSIGN_OR_RETURN(auto dims, PropagateData(ctx, 0));
  if (!dims) return Status::Ok();
  VIGIL_ASSIGN_OR_RETURN(std::vector<int64_t> axes, IntsAttr(ctx.node(), "axes", {0, 2, 3}));
  for (int64_t a : axes) VIGIL_RETURN_IF_ERROR(NormalizeAxis(ctx.node(), a, static_cast<int64_t>(dims->size()), "axes").status());
  return Status::Ok();
}

// Softmax, LogSoftmax, Hardmax: axis defaults to 1 before opset 13, -1 after.
Status InferSoftmax(InferenceContext& ctx) {
  VIGIL_ASSIGN_OR_RETURN(auto dims, PropagateData(ctx, 1));
  if (!dims) return Status::Ok();
  VIGIL_ASSIGN_OR_RETURN(int64_t axis, IntAttr(ctx.node(), "axis", ctx.opset() >= 13 ? -1 : 1));
  return NormalizeAxis(ctx.node(), axis, static_cast<int64_t>(dims->size())).status();
}

// LpNormalization: p is 1 or 2, axis (default -1) one of X's dims.
Status InferLpNorm(InferenceContext& ctx) {
  VIGIL_ASSIGN_OR_RETURN(int64_t p, IntAttr(ctx.node(), "p", 2));
  if (p != 1 && p != 2) return ctx.Fail("attribute p is {}, expected 1 or 2", p);
  VIGIL_ASSIGN_OR_RETURN(auto dims, PropagateData(ctx, 1));
  if (!dims) return Status::Ok();
  VIGIL_ASSIGN_OR_RETURN(int64_t axis, IntAttr(ctx.node(), "axis", -1));
  return NormalizeAxis(ctx.node(), axis, static_cast<int64_t>(dims->size())).status();
}

const OpSchema kNormalizationSchemas[] = {
    // Up to opset 13, training adds four statistics outputs; from 14, two.
    {"", "BatchNormalization", 1, 13, 5, 5, 1, 5, InferBatchNorm},
    {"", "BatchNormalization", 14, kLatest, 5, 5, 1, 3, InferBatchNorm},
    {"", "InstanceNormalization", 1, kLatest, 3, 3, 1, 1, InferInstanceNorm},
    {"", "LayerNormalization", 17, kLatest, 2, 3, 1, 3, InferLayerNorm},
    {"", "RMSNormalization", 23, kLatest, 2, 2, 1, 1, InferRmsNorm},
    {"", "GroupNormalization", 18, 20, 3, 3, 1, 1, InferGroupNorm},
    {"", "GroupNormalization", 21, kLatest, 3, 3, 1, 1, InferGroupNorm},
    {"", "LRN", 1, kLatest, 1, 1, 1, 1, InferLrn},
    {"", "MeanVarianceNormalization", 9, kLatest, 1, 1, 1, 1, InferMeanVarianceNorm},
    {"", "LpNormalization", 1, kLatest, 1, 1, 1, 1, InferLpNorm},
    // Before opset 13 these coerce X to 2-D at axis; from 13 they work along one axis.
    {"", "Softmax", 1, 12, 1, 1, 1, 1, InferSoftmax},
    {"", "Softmax", 13, kLatest, 1, 1, 1, 1, InferSoftmax},
    {"", "LogSoftmax", 1, 12, 1, 1, 1, 1, InferSoftmax},
    {"", "LogSoftmax", 13, kLatest, 1, 1, 1, 1, InferSoftmax},
    {"", "Hardmax", 1, 12, 1, 1, 1, 1, InferSoftmax},
    {"", "Hardmax", 13, kLatest, 1, 1, 1, 1, InferSoftmax},
};

}  // namespace

std::span<const OpSchema> NormalizationSchemas() { return kNormalizationSchemas; }

}  // namespace vigil::ops
