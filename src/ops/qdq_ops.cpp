// Schemas of vigil's int8 ops, in the domain "ai.vigil": QConv, QConvNhwc,
// QMatMul and QAdd. They are not expected in model files: the QDQ fusion pass
// (ir/fuse_qdq.h, which documents them) writes them for a device backend.
#include <optional>
#include <vector>

#include "ir/fuse_qdq.h"
#include "ir/layout_nhwc.h"  // kVigilDomain
#include "ops/attributes.h"
#include "ops/conv_geometry.h"
#include "ops/families.h"
#include "ops/schema.h"
#include "ops/shape_helpers.h"

namespace vigil::ops {
namespace {

Status CheckDtype(InferenceContext& ctx, size_t i, const char* name, ir::DataType want) {
  const ir::TypeInfo* t = ctx.input_type(i);
  if (IsTensorType(t) && t->elem_type != want) {
    return ctx.Fail("input {} ({}) has dtype {}, expected {}", i, name, ir::DataTypeName(t->elem_type),
                    ir::DataTypeName(want));
  }
  return Status::Ok();
}

Status CheckActivation(InferenceContext& ctx) {
  VIGIL_ASSIGN_OR_RETURN(std::string act, StringAttr(ctx.node(), "activation", ""));
  if (!act.empty() && act != ir::kConvNhwcRelu) return ctx.Fail("activation is '{}', expected '' or 'Relu'", act);
  return Status::Ok();
}

// QConv (channels at dim 1) and QConvNhwc (channels last): X and W int8 of
// rank 4, scale and bias float32 [M], group 1; Y int8 with Conv's shape rule.
Status InferQConv(InferenceContext& ctx, bool nhwc) {
  VIGIL_RETURN_IF_ERROR(CheckDtype(ctx, 0, "X", ir::DataType::kInt8));
  VIGIL_RETURN_IF_ERROR(CheckDtype(ctx, 1, "W", ir::DataType::kInt8));
  VIGIL_RETURN_IF_ERROR(CheckDtype(ctx, 2, "scale", ir::DataType::kFloat32));
  VIGIL_RETURN_IF_ERROR(CheckDtype(ctx, 3, "bias", ir::DataType::kFloat32));
  VIGIL_RETURN_IF_ERROR(CheckActivation(ctx));
  VIGIL_ASSIGN_OR_RETURN(int64_t group, IntAttr(ctx.node(), "group", 1));
  if (group != 1) return ctx.Fail("group is {}, {} takes group 1 only", group, ctx.node().op_type);
  const ir::TypeInfo* x = ctx.input_type(0);
  const ir::TypeInfo* w = ctx.input_type(1);
  if (!IsTensorType(x)) return Status::Ok();
  if (!HasRank(x) || !HasRank(w)) {
    ctx.set_output(0, TensorTypeUnknownShape(ir::DataType::kInt8));
    return Status::Ok();
  }
  const auto& xd = x->shape.dims;
  const auto& wd = w->shape.dims;
  if (xd.size() != 4 || wd.size() != 4) {
    return ctx.Fail("X has rank {} and W rank {}, {} takes 2D convolutions (rank 4)", xd.size(), wd.size(),
                    ctx.node().op_type);
  }
  const size_t c_dim = nhwc ? 3 : 1, h_dim = nhwc ? 1 : 2;
  if (xd[c_dim].is_known() && wd[c_dim].is_known() && *xd[c_dim].value != *wd[c_dim].value) {
    return ctx.Fail("input 0 (X) has {} channels, input 1 (W) expects {}", *xd[c_dim].value, *wd[c_dim].value);
  }
  for (size_t i : {size_t{2}, size_t{3}}) {
    const ir::TypeInfo* v = ctx.input_type(i);
    if (HasRank(v) && (v->shape.dims.size() != 1 ||
                       (v->shape.dims[0].is_known() && wd[0].is_known() && *v->shape.dims[0].value != *wd[0].value))) {
      return ctx.Fail("input {} is {}, expected one value per output channel", i, ir::ShapeToString(v->shape));
    }
  }
  std::optional<std::vector<int64_t>> kernel;
  if (wd[h_dim].is_known() && wd[h_dim + 1].is_known()) kernel = std::vector<int64_t>{*wd[h_dim].value, *wd[h_dim + 1].value};
  VIGIL_ASSIGN_OR_RETURN(WindowAttrs wa, ReadWindowAttrs(ctx.node(), 2, kernel, {}));
  std::vector<ir::Dim> spatial;
  for (size_t i = 0; i < 2; ++i) {
    const ir::Dim& in = xd[h_dim + i];
    if (wa.kernel.empty() || !in.is_known()) {
      spatial.push_back(ctx.NewSymbol());
      continue;
    }
    VIGIL_ASSIGN_OR_RETURN(WindowExtent e, ForwardExtent(ctx.node(), wa, i, *in.value));
    spatial.push_back(ir::Dim::Known(e.output));
  }
  const ir::Dim m = CarryDim(ctx, wd[0]);
  std::vector<ir::Dim> out{CarryDim(ctx, xd[0])};
  if (!nhwc) out.push_back(m);
  out.insert(out.end(), spatial.begin(), spatial.end());
  if (nhwc) out.push_back(m);
  ctx.set_output(0, TensorType(ir::DataType::kInt8, std::move(out)));
  return Status::Ok();
}

Status InferQConvNchw(InferenceContext& ctx) { return InferQConv(ctx, false); }
Status InferQConvNhwc(InferenceContext& ctx) { return InferQConv(ctx, true); }

// QMatMul: A int8 [..., K], W int8 [N, K], scale and bias float32 [N]; Y
// int8 [..., N].
Status InferQMatMul(InferenceContext& ctx) {
  VIGIL_RETURN_IF_ERROR(CheckDtype(ctx, 0, "A", ir::DataType::kInt8));
  VIGIL_RETURN_IF_ERROR(CheckDtype(ctx, 1, "W", ir::DataType::kInt8));
  VIGIL_RETURN_IF_ERROR(CheckDtype(ctx, 2, "scale", ir::DataType::kFloat32));
  VIGIL_RETURN_IF_ERROR(CheckDtype(ctx, 3, "bias", ir::DataType::kFloat32));
  VIGIL_RETURN_IF_ERROR(CheckActivation(ctx));
  const ir::TypeInfo* a = ctx.input_type(0);
  const ir::TypeInfo* w = ctx.input_type(1);
  if (!IsTensorType(a)) return Status::Ok();
  if (!HasRank(a) || !HasRank(w)) {
    ctx.set_output(0, TensorTypeUnknownShape(ir::DataType::kInt8));
    return Status::Ok();
  }
  const auto& ad = a->shape.dims;
  const auto& wd = w->shape.dims;
  if (ad.empty() || wd.size() != 2) {
    return ctx.Fail("A has rank {} and W rank {}; QMatMul takes A of rank >= 1 and W [N, K]", ad.size(), wd.size());
  }
  if (ad.back().is_known() && wd[1].is_known() && *ad.back().value != *wd[1].value) {
    return ctx.Fail("input 0 (A) has {} columns, input 1 (W [N, K]) expects K = {}", *ad.back().value,
                    *wd[1].value);
  }
  for (size_t i : {size_t{2}, size_t{3}}) {
    const ir::TypeInfo* v = ctx.input_type(i);
    if (HasRank(v) && (v->shape.dims.size() != 1 ||
                       (v->shape.dims[0].is_known() && wd[0].is_known() && *v->shape.dims[0].value != *wd[0].value))) {
      return ctx.Fail("input {} is {}, expected one value per output column", i, ir::ShapeToString(v->shape));
    }
  }
  std::vector<ir::Dim> out;
  for (size_t i = 0; i + 1 < ad.size(); ++i) out.push_back(CarryDim(ctx, ad[i]));
  out.push_back(CarryDim(ctx, wd[0]));
  ctx.set_output(0, TensorType(ir::DataType::kInt8, std::move(out)));
  return Status::Ok();
}

// QAdd: A and B int8 of one shape, three float32 scalar scales.
Status InferQAdd(InferenceContext& ctx) {
  VIGIL_RETURN_IF_ERROR(CheckDtype(ctx, 0, "A", ir::DataType::kInt8));
  VIGIL_RETURN_IF_ERROR(CheckDtype(ctx, 2, "B", ir::DataType::kInt8));
  for (size_t i : {size_t{1}, size_t{3}, size_t{4}}) {
    VIGIL_RETURN_IF_ERROR(CheckDtype(ctx, i, "scale", ir::DataType::kFloat32));
  }
  VIGIL_RETURN_IF_ERROR(CheckActivation(ctx));
  const ir::TypeInfo* a = ctx.input_type(0);
  const ir::TypeInfo* b = ctx.input_type(2);
  if (HasRank(a) && HasRank(b)) {
    const auto& ad = a->shape.dims;
    const auto& bd = b->shape.dims;
    bool same = ad.size() == bd.size();
    for (size_t i = 0; same && i < ad.size(); ++i) {
      same = !ad[i].is_known() || !bd[i].is_known() || *ad[i].value == *bd[i].value;
    }
    if (!same) {
      return ctx.Fail("A is {} and B is {}; QAdd does not broadcast", ir::ShapeToString(a->shape),
                      ir::ShapeToString(b->shape));
    }
  }
  if (IsTensorType(a)) {
    ir::TypeInfo y = *a;
    y.elem_type = ir::DataType::kInt8;
    ctx.set_output(0, std::move(y));
  }
  return Status::Ok();
}

const OpSchema kQdqSchemas[] = {
    {ir::kVigilDomain, ir::kQConvOp, 1, kLatest, 4, 4, 1, 1, InferQConvNchw},
    {ir::kVigilDomain, ir::kQConvNhwcOp, 1, kLatest, 4, 4, 1, 1, InferQConvNhwc},
    {ir::kVigilDomain, ir::kQMatMulOp, 1, kLatest, 4, 4, 1, 1, InferQMatMul},
    {ir::kVigilDomain, ir::kQAddOp, 1, kLatest, 5, 5, 1, 1, InferQAdd},
};

}  // namespace

std::span<const OpSchema> QdqSchemas() { return kQdqSchemas; }

}  // namespace vigil::ops
