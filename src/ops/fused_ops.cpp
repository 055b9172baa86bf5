// Schemas of vigil's own fused ops, in the domain "ai.vigil". They are not
// expected in model files: the session's fusion passes write them for a
// device backend (ir/fuse_matmul_bias.h documents MatMulBias, ir/fuse_gelu.h
// Gelu, ir/fuse_attention.h Attention).
#include <cmath>

#include "ir/fuse_attention.h"
#include "ir/fuse_gelu.h"
#include "ir/fuse_hardswish.h"
#include "ir/fuse_silu.h"
#include "ir/fuse_matmul_bias.h"
#include "ir/layout_nhwc.h"  // kVigilDomain
#include "ops/attributes.h"
#include "ops/schema.h"
#include "ops/shape_helpers.h"
#include "ops/families.h"

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

// The optional residual R against Y: Y's dtype and exactly Y's shape (no
// broadcast). Dims that are not both numbers are left to the run.
Status CheckResidual(InferenceContext& ctx, const ir::TypeInfo& y) {
  const ir::TypeInfo* r = ctx.input_type(3);
  if (!r || r->kind != ir::TypeInfo::Kind::kTensor) return Status::Ok();
  if (r->elem_type != y.elem_type) {
    return ctx.Fail("input 3 (R) has dtype {}, expected {} (the dtype of Y)", ir::DataTypeName(r->elem_type),
                    ir::DataTypeName(y.elem_type));
  }
  if (!HasRank(r) || !HasRank(&y)) return Status::Ok();
  const auto& rd = r->shape.dims;
  const auto& yd = y.shape.dims;
  bool same = rd.size() == yd.size();
  for (size_t i = 0; same && i < rd.size(); ++i) {
    same = !rd[i].is_known() || !yd[i].is_known() || *rd[i].value == *yd[i].value;
  }
  if (!same) {
    return ctx.Fail("input 3 (R) has shape {}, expected {} (the shape of Y; R is not broadcast)",
                    ir::ShapeToString(r->shape), ir::ShapeToString(y.shape));
  }
  return Status::Ok();
}

// MatMul's inference for (A, W), then the bias and residual checks; Y has
// MatMul's type. With an activation (a GELU), A is a float tensor and there
// is no residual.
Status InferMatMulBias(InferenceContext& ctx) {
  const ir::TypeInfo* a = ctx.input_type(0);
  if (HasRank(a) && a->shape.dims.size() < 2) {
    return ctx.Fail("input 0 (A) has rank {}, MatMulBias needs rank >= 2", a->shape.dims.size());
  }
  VIGIL_ASSIGN_OR_RETURN(ir::MatMulBiasAct act, ir::MatMulBiasActivationOf(ctx.node()));
  if (act != ir::MatMulBiasAct::kNone) {
    if (ctx.input_type(3)) return ctx.Fail("has an activation and input 3 (R); MatMulBias takes one or the other");
    const auto t = a && a->kind == ir::TypeInfo::Kind::kTensor ? a->elem_type : ir::DataType::kUndefined;
    if (t != ir::DataType::kUndefined && !ir::IsFloatingPoint(t)) {
      return ctx.Fail("input 0 (A) has dtype {}; a GELU activation needs a float dtype",
                      ir::DataTypeName(t));
    }
  }
  const OpSchema* matmul = FindSchema("", "MatMul", 13);
  if (!matmul) return InternalError("the MatMul schema is missing from the catalogue");
  VIGIL_RETURN_IF_ERROR(matmul->infer(ctx));
  if (ctx.outputs().empty() || ctx.outputs()[0].kind != ir::TypeInfo::Kind::kTensor) return Status::Ok();
  VIGIL_RETURN_IF_ERROR(CheckBias(ctx, ctx.outputs()[0]));
  return CheckResidual(ctx, ctx.outputs()[0]);
}

// ONNX Gelu-20's inference (approximate="none" when absent).
Status InferGelu(InferenceContext& ctx) {
  const OpSchema* gelu = FindSchema("", "Gelu", 20);
  if (!gelu) return InternalError("the Gelu schema is missing from the catalogue");
  return gelu->infer(ctx);
}

Status InferSilu(InferenceContext& ctx) {
  const OpSchema* sigmoid = FindSchema("", "Sigmoid", 13);
  if (!sigmoid) return InternalError("the Sigmoid schema is missing from the catalogue");
  return sigmoid->infer(ctx);
}

// HardSwishChain: Y of X's float dtype and shape (as Sigmoid's), and its
// four float attributes present.
Status InferHardSwishChain(InferenceContext& ctx) {
  for (const char* a : {"add", "min", "max", "div"}) {
    if (!HasAttr(ctx.node(), a)) return ctx.Fail("HardSwishChain needs the attribute {}", a);
  }
  return InferSilu(ctx);
}

// Attention's attributes: num_heads >= 1 and scale (both required), layout
// "sbe" or "bse".
Status CheckAttentionAttributes(InferenceContext& ctx, int64_t* heads) {
  const ir::Node& n = ctx.node();
  if (!HasAttr(n, "num_heads") || !HasAttr(n, "scale")) {
    return ctx.Fail("Attention needs the attributes num_heads and scale");
  }
  VIGIL_ASSIGN_OR_RETURN(*heads, IntAttr(n, "num_heads", 0));
  if (*heads < 1) return ctx.Fail("num_heads is {}; it must be at least 1", *heads);
  VIGIL_ASSIGN_OR_RETURN(float scale, FloatAttr(n, "scale", 0.0f));
  if (!std::isfinite(scale)) return ctx.Fail("scale is {}; it must be finite", scale);
  VIGIL_ASSIGN_OR_RETURN(std::string layout, StringAttr(n, "layout", "sbe"));
  if (layout != "sbe" && layout != "bse") return ctx.Fail("layout is '{}'; it must be 'sbe' or 'bse'", layout);
  VIGIL_ASSIGN_OR_RETURN(std::string rows, StringAttr(n, ir::kAttentionUndefinedRows, "nan"));
  if (rows != "nan" && rows != "zero") return ctx.Fail("undefined_rows is '{}'; it must be 'nan' or 'zero'", rows);
  return Status::Ok();
}

// QKV [S, B, 3E] (or [B, S, 3E]) of a float dtype -> Y [S, B, E] (or [B, S, E]).
Status InferAttention(InferenceContext& ctx) {
  int64_t heads = 0;
  VIGIL_RETURN_IF_ERROR(CheckAttentionAttributes(ctx, &heads));
  const ir::TypeInfo* qkv = ctx.input_type(0);
  if (!qkv || qkv->kind != ir::TypeInfo::Kind::kTensor) return Status::Ok();
  const ir::DataType dt = qkv->elem_type;
  if (dt != ir::DataType::kFloat32 && dt != ir::DataType::kFloat16 && dt != ir::DataType::kBfloat16) {
    return ctx.Fail("input 0 (QKV) has dtype {}; Attention needs float32, float16 or bfloat16",
                    ir::DataTypeName(dt));
  }
  if (!HasRank(qkv)) {
    ctx.set_output(0, TensorTypeUnknownShape(dt));
    return Status::Ok();
  }
  const std::vector<ir::Dim>& d = qkv->shape.dims;
  if (d.size() != 3) return ctx.Fail("input 0 (QKV) has rank {}; Attention needs rank 3", d.size());
  ir::Dim e = ctx.NewSymbol();
  if (d[2].is_known()) {
    if (*d[2].value % (3 * heads) != 0) {
      return ctx.Fail("input 0 (QKV) has {} columns, not a multiple of 3 * num_heads = {}", *d[2].value, 3 * heads);
    }
    e = ir::Dim::Known(*d[2].value / 3);
  }
  ctx.set_output(0, TensorType(dt, {d[0], d[1], e}));
  // The mask: QKV's dtype, rank <= 4 (it broadcasts to [B, H, S, S]).
  if (const ir::TypeInfo* m = ctx.input_type(1); m && m->kind == ir::TypeInfo::Kind::kTensor) {
    if (m->elem_type != ir::DataType::kUndefined && m->elem_type != dt) {
      return ctx.Fail("input 1 (the mask) has dtype {}; it must be QKV's, {}", ir::DataTypeName(m->elem_type),
                      ir::DataTypeName(dt));
    }
    if (HasRank(m) && m->shape.dims.size() > 4) {
      return ctx.Fail("input 1 (the mask) has rank {}; it must broadcast to [B, num_heads, S, S]",
                      m->shape.dims.size());
    }
  }
  return Status::Ok();
}

const OpSchema kFusedSchemas[] = {
    {ir::kVigilDomain, ir::kMatMulBiasOp, 1, kLatest, 3, 4, 1, 1, InferMatMulBias},
    {ir::kVigilDomain, ir::kGeluOp, 1, kLatest, 1, 1, 1, 1, InferGelu},
    {ir::kVigilDomain, ir::kSiluOp, 1, kLatest, 1, 1, 1, 1, InferSilu},
    {ir::kVigilDomain, ir::kHardSwishChainOp, 1, kLatest, 1, 1, 1, 1, InferHardSwishChain},
    {ir::kVigilDomain, ir::kAttentionOp, 1, kLatest, 1, 2, 1, 1, InferAttention},
};

}  // namespace

std::span<const OpSchema> FusedSchemas() { return kFusedSchemas; }

}  // namespace vigil::ops
