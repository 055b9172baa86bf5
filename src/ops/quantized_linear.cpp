// Schemas and shape inference of the integer and quantized linear ops:
// MatMulInteger and ConvInteger (opset 10; int32 output), QLinearMatMul
// (opsets 10 and 21) and QLinearConv (opset 10; output of y_zero_point's
// dtype). The output shapes are MatMul's and Conv's (linear_shapes.h); this
// file checks the dtypes and the layouts of the scales and zero points.
#include <initializer_list>
#include <optional>
#include <vector>

#include "ops/families.h"
#include "ops/linear_shapes.h"
#include "ops/schema.h"
#include "ops/shape_helpers.h"

namespace vigil::ops {
namespace {

using ir::DataType;

const ir::TypeInfo* TensorInput(const InferenceContext& ctx, size_t i) {
  const ir::TypeInfo* t = ctx.has_input(i) ? ctx.input_type(i) : nullptr;
  return t && t->kind == ir::TypeInfo::Kind::kTensor && t->elem_type != DataType::kUndefined ? t : nullptr;
}

bool IsInt8Type(DataType t) { return t == DataType::kInt8 || t == DataType::kUint8; }
bool IsFloat8Type(DataType t) {
  return t == DataType::kFloat8E4M3FN || t == DataType::kFloat8E4M3FNUZ || t == DataType::kFloat8E5M2 ||
         t == DataType::kFloat8E5M2FNUZ;
}

// Input i (named `name`), where its dtype is known, is int8 or uint8 (or, at
// `float8` opsets, a float8 type).
Status CheckQuantType(InferenceContext& ctx, size_t i, const char* name, bool float8 = false) {
  const ir::TypeInfo* t = TensorInput(ctx, i);
  if (!t || IsInt8Type(t->elem_type) || (float8 && IsFloat8Type(t->elem_type))) return Status::Ok();
  return ctx.Fail("input {} ({}) has dtype {}, expected int8 or uint8{}", i, name, ir::DataTypeName(t->elem_type),
                  float8 ? " (or a float8 type)" : "");
}

// The zero point (input zp) has the dtype of the tensor it belongs to (input x).
Status CheckSameType(InferenceContext& ctx, size_t zp, const char* zp_name, size_t x, const char* x_name) {
  const ir::TypeInfo* z = TensorInput(ctx, zp);
  const ir::TypeInfo* t = TensorInput(ctx, x);
  if (!z || !t || z->elem_type == t->elem_type) return Status::Ok();
  return ctx.Fail("input {} ({}) has dtype {}, expected {} like input {} ({})", zp, zp_name,
                  ir::DataTypeName(z->elem_type), ir::DataTypeName(t->elem_type), x, x_name);
}

// A per-tensor parameter: one element (a scalar or a 1-element tensor).
Status CheckPerTensor(InferenceContext& ctx, size_t i, const char* name) {
  const ir::TypeInfo* t = TensorInput(ctx, i);
  if (!HasRank(t)) return Status::Ok();
  for (const ir::Dim& d : t->shape.dims) {
    if (d.value && *d.value != 1) {
      return ctx.Fail("input {} ({}) has shape {}, expected a scalar (per-tensor)", i, name,
                      ir::ShapeToString(t->shape));
    }
  }
  return Status::Ok();
}

// A per-tensor or 1-D per-output-channel parameter of a conv (`channels`:
// W's dim 0 where known).
Status CheckPerChannel(InferenceContext& ctx, size_t i, const char* name, size_t w) {
  const ir::TypeInfo* t = TensorInput(ctx, i);
  if (!HasRank(t)) return Status::Ok();
  if (t->shape.dims.size() > 1) {
    return ctx.Fail("input {} ({}) has shape {}, expected a scalar or a 1-D tensor (per output channel)", i, name,
                    ir::ShapeToString(t->shape));
  }
  const ir::TypeInfo* wt = TensorInput(ctx, w);
  if (t->shape.dims.size() == 1 && HasRank(wt) && !wt->shape.dims.empty()) {
    const ir::Dim& n = t->shape.dims[0];
    const ir::Dim& m = wt->shape.dims[0];
    if (n.value && m.value && *n.value != 1 && *n.value != *m.value) {
      return ctx.Fail("input {} ({}) has {} values, expected 1 or one per output channel ({})", i, name, *n.value,
                      *m.value);
    }
  }
  return Status::Ok();
}

// A matmul operand's quantization parameter: per tensor, 1-D (one value per
// row of A / column of B), or N-D with a 1 in place of A's columns
// ([..., M, 1]) / B's rows ([..., 1, N]).
Status CheckMatMulParam(InferenceContext& ctx, size_t i, const char* name, bool per_row) {
  const ir::TypeInfo* t = TensorInput(ctx, i);
  if (!HasRank(t) || t->shape.dims.size() < 2) return Status::Ok();
  const ir::Dim& d = t->shape.dims[t->shape.dims.size() - (per_row ? 1 : 2)];
  if (d.value && *d.value != 1) {
    return ctx.Fail("input {} ({}) has shape {}; an N-D {} needs shape {}", i, name, ir::ShapeToString(t->shape),
                    per_row ? "per-row parameter of A" : "per-column parameter of B",
                    per_row ? "[..., M, 1]" : "[..., 1, N]");
  }
  return Status::Ok();
}

// The scales of QLinear ops: float32 (opset 10); float32, float16 or
// bfloat16, all alike (QLinearMatMul 21).
Status CheckScales(InferenceContext& ctx, std::initializer_list<size_t> scales, bool any_float) {
  std::optional<DataType> first;
  for (size_t i : scales) {
    const ir::TypeInfo* t = TensorInput(ctx, i);
    if (!t) continue;
    const DataType d = t->elem_type;
    const bool ok = d == DataType::kFloat32 || (any_float && (d == DataType::kFloat16 || d == DataType::kBfloat16));
    if (!ok) {
      return ctx.Fail("input {} (a scale) has dtype {}, expected {}", i, ir::DataTypeName(d),
                      any_float ? "float32, float16 or bfloat16" : "float32");
    }
    if (first && *first != d) {
      return ctx.Fail("input {} (a scale) has dtype {}, another scale has {}; they must match", i, ir::DataTypeName(d),
                      ir::DataTypeName(*first));
    }
    first = d;
  }
  return Status::Ok();
}

Status SetMatMulOutput(InferenceContext& ctx, size_t a, size_t b, DataType out) {
  VIGIL_ASSIGN_OR_RETURN(std::optional<std::vector<ir::Dim>> dims, MatMulOutputDims(ctx, a, b));
  ctx.set_output(0, dims ? TensorType(out, std::move(*dims)) : TensorTypeUnknownShape(out));
  return Status::Ok();
}

// MatMulInteger: A, B, a_zero_point?, b_zero_point? -> int32.
Status InferMatMulInteger(InferenceContext& ctx) {
  VIGIL_RETURN_IF_ERROR(CheckQuantType(ctx, 0, "A"));
  VIGIL_RETURN_IF_ERROR(CheckQuantType(ctx, 1, "B"));
  VIGIL_RETURN_IF_ERROR(CheckSameType(ctx, 2, "a_zero_point", 0, "A"));
  VIGIL_RETURN_IF_ERROR(CheckSameType(ctx, 3, "b_zero_point", 1, "B"));
  VIGIL_RETURN_IF_ERROR(CheckMatMulParam(ctx, 2, "a_zero_point", true));
  VIGIL_RETURN_IF_ERROR(CheckMatMulParam(ctx, 3, "b_zero_point", false));
  return SetMatMulOutput(ctx, 0, 1, DataType::kInt32);
}

// QLinearMatMul: a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale,
// y_zero_point -> y of y_zero_point's dtype.
Status InferQLinearMatMul(InferenceContext& ctx) {
  const bool v21 = ctx.opset() >= 21;
  VIGIL_RETURN_IF_ERROR(CheckQuantType(ctx, 0, "a", v21));
  VIGIL_RETURN_IF_ERROR(CheckQuantType(ctx, 3, "b", v21));
  VIGIL_RETURN_IF_ERROR(CheckQuantType(ctx, 7, "y_zero_point", v21));
  VIGIL_RETURN_IF_ERROR(CheckSameType(ctx, 2, "a_zero_point", 0, "a"));
  VIGIL_RETURN_IF_ERROR(CheckSameType(ctx, 5, "b_zero_point", 3, "b"));
  VIGIL_RETURN_IF_ERROR(CheckScales(ctx, {1, 4, 6}, v21));
  VIGIL_RETURN_IF_ERROR(CheckMatMulParam(ctx, 1, "a_scale", true));
  VIGIL_RETURN_IF_ERROR(CheckMatMulParam(ctx, 2, "a_zero_point", true));
  VIGIL_RETURN_IF_ERROR(CheckMatMulParam(ctx, 4, "b_scale", false));
  VIGIL_RETURN_IF_ERROR(CheckMatMulParam(ctx, 5, "b_zero_point", false));
  VIGIL_RETURN_IF_ERROR(CheckPerTensor(ctx, 6, "y_scale"));
  VIGIL_RETURN_IF_ERROR(CheckPerTensor(ctx, 7, "y_zero_point"));
  const ir::TypeInfo* yzp = TensorInput(ctx, 7);
  if (!yzp) return Status::Ok();
  return SetMatMulOutput(ctx, 0, 3, yzp->elem_type);
}

// ConvInteger: x, w, x_zero_point?, w_zero_point? -> int32.
Status InferConvInteger(InferenceContext& ctx) {
  VIGIL_RETURN_IF_ERROR(CheckQuantType(ctx, 0, "x"));
  VIGIL_RETURN_IF_ERROR(CheckQuantType(ctx, 1, "w"));
  VIGIL_RETURN_IF_ERROR(CheckSameType(ctx, 2, "x_zero_point", 0, "x"));
  VIGIL_RETURN_IF_ERROR(CheckSameType(ctx, 3, "w_zero_point", 1, "w"));
  VIGIL_RETURN_IF_ERROR(CheckPerTensor(ctx, 2, "x_zero_point"));
  VIGIL_RETURN_IF_ERROR(CheckPerChannel(ctx, 3, "w_zero_point", 1));
  return InferConvOutput(ctx, ConvOperands{1, std::nullopt, false}, DataType::kInt32);
}

// QLinearConv: x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale,
// y_zero_point, B? -> y of y_zero_point's dtype.
Status InferQLinearConv(InferenceContext& ctx) {
  VIGIL_RETURN_IF_ERROR(CheckQuantType(ctx, 0, "x"));
  VIGIL_RETURN_IF_ERROR(CheckQuantType(ctx, 3, "w"));
  VIGIL_RETURN_IF_ERROR(CheckQuantType(ctx, 7, "y_zero_point"));
  VIGIL_RETURN_IF_ERROR(CheckSameType(ctx, 2, "x_zero_point", 0, "x"));
  VIGIL_RETURN_IF_ERROR(CheckSameType(ctx, 5, "w_zero_point", 3, "w"));
  VIGIL_RETURN_IF_ERROR(CheckScales(ctx, {1, 4, 6}, false));
  VIGIL_RETURN_IF_ERROR(CheckPerTensor(ctx, 1, "x_scale"));
  VIGIL_RETURN_IF_ERROR(CheckPerTensor(ctx, 2, "x_zero_point"));
  VIGIL_RETURN_IF_ERROR(CheckPerChannel(ctx, 4, "w_scale", 3));
  VIGIL_RETURN_IF_ERROR(CheckPerChannel(ctx, 5, "w_zero_point", 3));
  VIGIL_RETURN_IF_ERROR(CheckPerTensor(ctx, 6, "y_scale"));
  VIGIL_RETURN_IF_ERROR(CheckPerTensor(ctx, 7, "y_zero_point"));
  if (const ir::TypeInfo* b = TensorInput(ctx, 8); b && b->elem_type != DataType::kInt32) {
    return ctx.Fail("input 8 (B) has dtype {}, expected int32", ir::DataTypeName(b->elem_type));
  }
  const ir::TypeInfo* yzp = TensorInput(ctx, 7);
  return InferConvOutput(ctx, ConvOperands{3, 8, false}, yzp ? yzp->elem_type : DataType::kUndefined);
}

const OpSchema kQuantizedLinearSchemas[] = {
    {"", "MatMulInteger", 10, kLatest, 2, 4, 1, 1, InferMatMulInteger},
    {"", "ConvInteger", 10, kLatest, 2, 4, 1, 1, InferConvInteger},
    // 21 adds float16/bfloat16 scales and float8 operands.
    {"", "QLinearMatMul", 10, 20, 8, 8, 1, 1, InferQLinearMatMul},
    {"", "QLinearMatMul", 21, kLatest, 8, 8, 1, 1, InferQLinearMatMul},
    {"", "QLinearConv", 10, kLatest, 8, 9, 1, 1, InferQLinearConv},
};

}  // namespace

std::span<const OpSchema> QuantizedLinearSchemas() { return kQuantizedLinearSchemas; }

}  // namespace vigil::ops
