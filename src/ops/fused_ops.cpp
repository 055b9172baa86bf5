// Schemas of vigil's own fused ops, in the domain "ai.vigil". They are not
// expected in model files: the session's fusion passes write them for a
// device backend (ir/fuse_matmul_bias.h documents MatMulBias, ir/fuse_gelu.h
// Gelu).
#include "ir/fuse_gelu.h"
#include "ir/fuse_matmul_bias.h"
#include "ir/layout_nhwc.h"  // kVigilDomain
#include "ops/schema.h"
#include "ops/shape_helpers.h"

namespace vigil::ops {
namespace {

// B against the product's last dim: the products's dtype, shape [N] or [1, N].
Status CheckBias(InferenceContext& ctx, const ir::TypeInfo& y) {
  const ir::TypeInfo* b = ctx.input_type(2);
  if (!b || b->kind != ir::TypeInfo::Kind::kTensor) return Status::Ok();
  if (b->elem_type != y.elem_type) {
    return ctx.Fail("input 2 (B) has dtype {}, the product has {}; they must match", ir::DataTypeName(b->elem_type),
                    ir::DataTypeName(y.elem_type));
  }
  if (!HasRank(b)) return Status::Ok();
  const auto& bd = b->shape.dims;
  const bool row = bd.size() == 1 || (bd.size() == 2 && bd[0].is_known() && *bd[0].value == 1);
  if (!row) return ctx.Fail("input 2 (B) has rank {}, MatMulBias needs [N] or [1, N]", bd.size());
  if (!HasRank(&y) || y.shape.dims.empty()) return Status::Ok();
  const ir::Dim& n = y.shape.dims.back();
  if (bd.back().is_known() && n.is_known() && *bd.back().value != *n.value) {
    return ctx.Fail("input 2 (B) has {} elements, the product has {} columns", *bd.back().value, *n.value);
  }
  return Status::Ok();
}

// MatMul's inference for (A, W), then the bias check; Y has MatMul's type.
Status InferMatMulBias(InferenceContext& ctx) {
  const ir::TypeInfo* a = ctx.input_type(0);
  if (HasRank(a) && a->shape.dims.size() < 2) {
    return ctx.Fail("input 0 (A) has rank {}, MatMulBias needs rank >= 2", a->shape.dims.size());
  }
  const OpSchema* matmul = FindSchema("", "MatMul", 13);
  if (!matmul) return InternalError("the MatMul schema is missing from the catalogue");
  VIGIL_RETURN_IF_ERROR(matmul->infer(ctx));
  if (ctx.outputs().empty() || ctx.outputs()[0].kind != ir::TypeInfo::Kind::kTensor) return Status::Ok();
  return CheckBias(ctx, ctx.outputs()[0]);
}

// ONNX Gelu-20's inference (approximate="none" when absent).
Status InferGelu(InferenceContext& ctx) {
  const OpSchema* gelu = FindSchema("", "Gelu", 20);
  if (!gelu) return InternalError("the Gelu schema is missing from the catalogue");
  return gelu->infer(ctx);
}

const OpSchema kFusedSchemas[] = {
    {ir::kVigilDomain, ir::kMatMulBiasOp, 1, kLatest, 3, 3, 1, 1, InferMatMulBias},
    {ir::kVigilDomain, ir::kGeluOp, 1, kLatest, 1, 1, 1, 1, InferGelu},
};

}  // namespace

std::span<const OpSchema> FusedSchemas() { return kFusedSchemas; }

}  // namespace vigil::ops
