// Schemas of vigil's own layout ops, in the domain "ai.vigil": ConvNhwc and
// the channels-last pools. They are not
// expected in model files: the NHWC layout pass (ir/layout_nhwc.h, which
// documents the op) writes them when it moves convolutions to channels-last
// for a device backend.
#include "ir/layout_nhwc.h"

#include <optional>
#include <vector>

#include "ops/attributes.h"
#include "ops/conv_geometry.h"
#include "ops/schema.h"
#include "ops/shape_helpers.h"
#include "ops/families.h"

namespace vigil::ops {
namespace {

// W's kernel size [kH, kW] from its KRSC shape, when both are known.
std::optional<std::vector<int64_t>> KernelFromWeights(const ir::TypeInfo* w) {
  if (!HasRank(w) || w->shape.dims.size() != 4) return std::nullopt;
  const ir::Dim& kh = w->shape.dims[1];
  const ir::Dim& kw = w->shape.dims[2];
  if (!kh.is_known() || !kw.is_known()) return std::nullopt;
  return std::vector<int64_t>{*kh.value, *kw.value};
}

// `activation` and `input_activation`: each '', 'Relu' or 'Relu6'.
Status CheckActivation(InferenceContext& ctx) {
  for (const char* name : {"activation", ir::kConvNhwcInputActivation}) {
    VIGIL_ASSIGN_OR_RETURN(std::string act, StringAttr(ctx.node(), name, ""));
    if (!act.empty() && act != ir::kConvNhwcRelu && act != ir::kConvNhwcRelu6) {
      return ctx.Fail("{} is '{}', expected '', 'Relu' or 'Relu6'", name, act);
    }
  }
  return Status::Ok();
}

// W [M, kH, kW, C/group] and B [M] against X [N, H, W, C].
Status CheckWeightsAndBias(InferenceContext& ctx, int64_t group) {
  const ir::TypeInfo* x = ctx.input_type(0);
  const ir::TypeInfo* w = ctx.input_type(1);
  if (IsTensorType(w) && w->elem_type != x->elem_type) {
    return ctx.Fail("input 1 (W) has dtype {}, input 0 (X) has {}; they must match", ir::DataTypeName(w->elem_type),
                    ir::DataTypeName(x->elem_type));
  }
  if (!HasRank(w)) return Status::Ok();
  const auto& wd = w->shape.dims;
  if (wd.size() != 4) return ctx.Fail("input 1 (W) has rank {}, ConvNhwc needs [M, kH, kW, C/group]", wd.size());
  const ir::Dim& c = x->shape.dims[3];
  if (c.is_known() && wd[3].is_known() && *wd[3].value * group != *c.value) {
    return ctx.Fail("input 0 (X) has {} channels but input 1 (W) expects {} per group x group {}", *c.value,
                    *wd[3].value, group);
  }
  if (wd[0].is_known() && *wd[0].value % group != 0) {
    return ctx.Fail("input 1 (W) has {} output channels, not divisible by group {}", *wd[0].value, group);
  }
  const ir::TypeInfo* b = ctx.has_input(2) ? ctx.input_type(2) : nullptr;
  if (HasRank(b)) {
    if (b->shape.dims.size() != 1) return ctx.Fail("input 2 (B) has rank {}, expected 1", b->shape.dims.size());
    const ir::Dim& bd = b->shape.dims[0];
    if (bd.is_known() && wd[0].is_known() && *bd.value != *wd[0].value) {
      return ctx.Fail("input 2 (B) has {} elements, expected one per output channel ({})", *bd.value, *wd[0].value);
    }
  }
  return Status::Ok();
}

// Z (input 3) against Y's dims `y`: the same dtype, and the same shape where
// both dims are known (Z is added without broadcasting).
Status CheckResidual(InferenceContext& ctx, ir::DataType dtype, const std::vector<ir::Dim>& y) {
  const ir::TypeInfo* z = ctx.has_input(3) ? ctx.input_type(3) : nullptr;
  if (!IsTensorType(z)) return Status::Ok();
  if (z->elem_type != dtype) {
    return ctx.Fail("input 3 (Z) has dtype {}, input 0 (X) has {}; they must match", ir::DataTypeName(z->elem_type),
                    ir::DataTypeName(dtype));
  }
  if (!HasRank(z)) return Status::Ok();
  bool same = z->shape.dims.size() == y.size();
  for (size_t i = 0; same && i < y.size(); ++i) {
    const ir::Dim &a = z->shape.dims[i], &b = y[i];
    same = !a.is_known() || !b.is_known() || *a.value == *b.value;
  }
  if (!same) {
    return ctx.Fail("input 3 (Z) is {}, it must have the output's shape {}", ir::ShapeToString(z->shape),
                    ir::ShapeToString(ir::Shape{true, y}));
  }
  return Status::Ok();
}

// Conv's shape rule with the channel dim last: the window geometry is the
// one Conv uses (conv_geometry.h), on dims 1 and 2 instead of 2 and 3.
Status InferConvNhwc(InferenceContext& ctx) {
  const ir::TypeInfo* x = ctx.input_type(0);
  if (!IsTensorType(x)) return Status::Ok();
  if (!HasRank(x)) {
    ctx.set_output(0, TensorTypeUnknownShape(x->elem_type));
    return Status::Ok();
  }
  const auto& xd = x->shape.dims;
  if (xd.size() != 4) {
    return ctx.Fail("input 0 (X) has rank {} ({}), ConvNhwc takes 2D images N x H x W x C", xd.size(),
                    ir::ShapeToString(x->shape));
  }
  VIGIL_RETURN_IF_ERROR(CheckActivation(ctx));
  VIGIL_ASSIGN_OR_RETURN(int64_t group, IntAttr(ctx.node(), "group", 1));
  if (group < 1 || group > (int64_t{1} << 30)) return ctx.Fail("group is {}, must be in [1, 2^30]", group);
  if (xd[3].is_known() && *xd[3].value % group != 0) {
    return ctx.Fail("input 0 (X) has {} channels, not divisible by group {}", *xd[3].value, group);
  }
  VIGIL_RETURN_IF_ERROR(CheckWeightsAndBias(ctx, group));
  const ir::TypeInfo* w = ctx.input_type(1);
  VIGIL_ASSIGN_OR_RETURN(WindowAttrs wa, ReadWindowAttrs(ctx.node(), 2, KernelFromWeights(w), {}));
  std::vector<ir::Dim> out{CarryDim(ctx, xd[0])};
  for (size_t i = 0; i < 2; ++i) {
    if (wa.kernel.empty() || !xd[1 + i].is_known()) {
      out.push_back(ctx.NewSymbol());
      continue;
    }
    VIGIL_ASSIGN_OR_RETURN(WindowExtent e, ForwardExtent(ctx.node(), wa, i, *xd[1 + i].value));
    out.push_back(ir::Dim::Known(e.output));
  }
  out.push_back(HasRank(w) ? CarryDim(ctx, w->shape.dims[0]) : ctx.NewSymbol());
  VIGIL_RETURN_IF_ERROR(CheckResidual(ctx, x->elem_type, out));
  ctx.set_output(0, TensorType(x->elem_type, std::move(out)));
  return Status::Ok();
}

// X [N, H, W, C] of a channels-last pool, checked; nullptr when its shape is
// not known (Y is then set as far as known).
Result<const ir::TypeInfo*> PoolNhwcInput(InferenceContext& ctx) {
  const ir::TypeInfo* x = ctx.input_type(0);
  if (!IsTensorType(x)) return nullptr;
  if (!HasRank(x)) {
    ctx.set_output(0, TensorTypeUnknownShape(x->elem_type));
    return nullptr;
  }
  if (x->shape.dims.size() != 4) {
    return ctx.Fail("input 0 (X) has rank {} ({}), {} takes 2D images N x H x W x C", x->shape.dims.size(),
                    ir::ShapeToString(x->shape), ctx.node().op_type);
  }
  return x;
}

// MaxPoolNhwc and AveragePoolNhwc: the ONNX pools' window rule
// (conv_geometry.h) on dims 1 and 2, C carried.
Status InferPoolNhwc(InferenceContext& ctx) {
  VIGIL_ASSIGN_OR_RETURN(const ir::TypeInfo* x, PoolNhwcInput(ctx));
  if (!x) return Status::Ok();
  const auto& xd = x->shape.dims;
  WindowOptions options;
  options.pooling = true;
  VIGIL_ASSIGN_OR_RETURN(WindowAttrs wa, ReadWindowAttrs(ctx.node(), 2, std::nullopt, options));
  std::vector<ir::Dim> out{CarryDim(ctx, xd[0])};
  for (size_t i = 0; i < 2; ++i) {
    if (!xd[1 + i].is_known()) {
      out.push_back(ctx.NewSymbol());
      continue;
    }
    VIGIL_ASSIGN_OR_RETURN(WindowExtent e, ForwardExtent(ctx.node(), wa, i, *xd[1 + i].value));
    out.push_back(ir::Dim::Known(e.output));
  }
  out.push_back(CarryDim(ctx, xd[3]));
  ctx.set_output(0, TensorType(x->elem_type, std::move(out)));
  return Status::Ok();
}

// GlobalAveragePoolNhwc: [N, H, W, C] -> [N, 1, 1, C].
Status InferGlobalPoolNhwc(InferenceContext& ctx) {
  VIGIL_ASSIGN_OR_RETURN(const ir::TypeInfo* x, PoolNhwcInput(ctx));
  if (!x) return Status::Ok();
  const auto& xd = x->shape.dims;
  std::vector<ir::Dim> out{CarryDim(ctx, xd[0]), ir::Dim::Known(1), ir::Dim::Known(1), CarryDim(ctx, xd[3])};
  ctx.set_output(0, TensorType(x->elem_type, std::move(out)));
  return Status::Ok();
}

const OpSchema kLayoutSchemas[] = {
    {ir::kVigilDomain, ir::kConvNhwcOp, 1, kLatest, 2, 4, 1, 1, InferConvNhwc},
    {ir::kVigilDomain, ir::kMaxPoolNhwcOp, 1, kLatest, 1, 1, 1, 1, InferPoolNhwc},
    {ir::kVigilDomain, ir::kAveragePoolNhwcOp, 1, kLatest, 1, 1, 1, 1, InferPoolNhwc},
    {ir::kVigilDomain, ir::kGlobalAveragePoolNhwcOp, 1, kLatest, 1, 1, 1, 1, InferGlobalPoolNhwc},
};

}  // namespace

std::span<const OpSchema> LayoutSchemas() { return kLayoutSchemas; }

}  // namespace vigil::ops
