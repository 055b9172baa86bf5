// Schemas and shape inference of the com.microsoft quantized ops that
// onnxruntime.quantization emits in QOperator format (opset 1 of that
// domain): QLinearAdd, QLinearMul (numpy broadcasting), QLinearSigmoid,
// QLinearLeakyRelu (same shape), QLinearGlobalAveragePool, QLinearAveragePool
// (channels_last picks NCHW or NHWC), QLinearConcat and QLinearSoftmax. Data
// and zero points are int8 or uint8, scales float32, all per tensor (one
// element). Also QGemm (B's scale and zero point per tensor or per column)
// and DynamicQuantizeLSTM (an LSTM with int8/uint8 W and R, per-direction or
// per-column scales and zero points).
#include <optional>
#include <string>
#include <vector>

#include "ops/attributes.h"
#include "ops/families.h"
#include "ops/qlinear_pool_geometry.h"
#include "ops/schema.h"
#include "ops/shape_helpers.h"

namespace vigil::ops {
namespace {

using ir::DataType;

constexpr const char kMsDomain[] = "com.microsoft";

const ir::TypeInfo* TensorInput(const InferenceContext& ctx, size_t i) {
  const ir::TypeInfo* t = ctx.has_input(i) ? ctx.input_type(i) : nullptr;
  return t && t->kind == ir::TypeInfo::Kind::kTensor && t->elem_type != DataType::kUndefined ? t : nullptr;
}

// Input i (named `name`), where its dtype is known, is int8 or uint8.
Status CheckData(InferenceContext& ctx, size_t i, const char* name) {
  const ir::TypeInfo* t = TensorInput(ctx, i);
  if (!t || t->elem_type == DataType::kInt8 || t->elem_type == DataType::kUint8) return Status::Ok();
  return ctx.Fail("input {} ({}) has dtype {}, expected int8 or uint8", i, name, ir::DataTypeName(t->elem_type));
}

// Input i, where its shape is known, holds one element.
Status CheckOneElement(InferenceContext& ctx, size_t i, const char* name) {
  const ir::TypeInfo* t = TensorInput(ctx, i);
  if (!HasRank(t)) return Status::Ok();
  for (const ir::Dim& d : t->shape.dims) {
    if (d.value && *d.value != 1) {
      return ctx.Fail("input {} ({}) has shape {}, expected a scalar (one value per tensor)", i, name,
                      ir::ShapeToString(t->shape));
    }
  }
  return Status::Ok();
}

// A scale: a float32 scalar.
Status CheckScale(InferenceContext& ctx, size_t i, const char* name) {
  const ir::TypeInfo* t = TensorInput(ctx, i);
  if (t && t->elem_type != DataType::kFloat32) {
    return ctx.Fail("input {} ({}) has dtype {}, expected a float32 scalar", i, name, ir::DataTypeName(t->elem_type));
  }
  return CheckOneElement(ctx, i, name);
}

// A zero point (optional where the op allows): a scalar of data input x's dtype.
Status CheckZeroPoint(InferenceContext& ctx, size_t i, const char* name, size_t x, const char* x_name) {
  const ir::TypeInfo* z = TensorInput(ctx, i);
  const ir::TypeInfo* t = TensorInput(ctx, x);
  if (z && t && z->elem_type != t->elem_type) {
    return ctx.Fail("input {} ({}) has dtype {}, expected {} like input {} ({})", i, name,
                    ir::DataTypeName(z->elem_type), ir::DataTypeName(t->elem_type), x, x_name);
  }
  return CheckOneElement(ctx, i, name);
}

// X, X_scale, X_zero_point?, Y_scale, Y_zero_point? (the unary ops and pools).
Status CheckUnaryParams(InferenceContext& ctx) {
  VIGIL_RETURN_IF_ERROR(CheckData(ctx, 0, "X"));
  VIGIL_RETURN_IF_ERROR(CheckScale(ctx, 1, "X_scale"));
  VIGIL_RETURN_IF_ERROR(CheckZeroPoint(ctx, 2, "X_zero_point", 0, "X"));
  VIGIL_RETURN_IF_ERROR(CheckScale(ctx, 3, "Y_scale"));
  return CheckZeroPoint(ctx, 4, "Y_zero_point", 0, "X");
}

// QLinearAdd, QLinearMul: A, A_scale, A_zero_point?, B, B_scale,
// B_zero_point?, C_scale, C_zero_point? -> C, the broadcast of A and B.
Status InferQLinearBinary(InferenceContext& ctx) {
  VIGIL_RETURN_IF_ERROR(CheckData(ctx, 0, "A"));
  VIGIL_RETURN_IF_ERROR(CheckData(ctx, 3, "B"));
  VIGIL_RETURN_IF_ERROR(CheckScale(ctx, 1, "A_scale"));
  VIGIL_RETURN_IF_ERROR(CheckScale(ctx, 4, "B_scale"));
  VIGIL_RETURN_IF_ERROR(CheckScale(ctx, 6, "C_scale"));
  VIGIL_RETURN_IF_ERROR(CheckZeroPoint(ctx, 2, "A_zero_point", 0, "A"));
  VIGIL_RETURN_IF_ERROR(CheckZeroPoint(ctx, 5, "B_zero_point", 3, "B"));
  VIGIL_RETURN_IF_ERROR(CheckZeroPoint(ctx, 7, "C_zero_point", 0, "A"));
  const ir::TypeInfo* a = TensorInput(ctx, 0);
  const ir::TypeInfo* b = TensorInput(ctx, 3);
  if (a && b && a->elem_type != b->elem_type) {
    return ctx.Fail("input 3 (B) has dtype {}, expected {} like input 0 (A)", ir::DataTypeName(b->elem_type),
                    ir::DataTypeName(a->elem_type));
  }
  if (!a) return Status::Ok();
  if (!HasRank(a) || !HasRank(b)) {
    ctx.set_output(0, TensorTypeUnknownShape(a->elem_type));
    return Status::Ok();
  }
  VIGIL_ASSIGN_OR_RETURN(std::vector<ir::Dim> dims, BroadcastDims(ctx, a->shape.dims, b->shape.dims));
  ctx.set_output(0, TensorType(a->elem_type, std::move(dims)));
  return Status::Ok();
}

// QLinearSigmoid, QLinearLeakyRelu: the output is X's type and shape.
Status InferQLinearUnary(InferenceContext& ctx) {
  VIGIL_RETURN_IF_ERROR(CheckUnaryParams(ctx));
  if (const ir::TypeInfo* x = TensorInput(ctx, 0)) ctx.set_output(0, *x);
  return Status::Ok();
}

// The channel and spatial dim positions of a rank-`rank` pool input.
Result<bool> ChannelsLast(const InferenceContext& ctx) {
  VIGIL_ASSIGN_OR_RETURN(int64_t cl, IntAttr(ctx.node(), "channels_last", 0));
  if (cl != 0 && cl != 1) return ctx.Fail("attribute channels_last is {}, expected 0 or 1", cl);
  return cl == 1;
}

// QLinearGlobalAveragePool: X [N,C,spatial...] (or [N,spatial...,C] with
// channels_last) -> spatial dims 1.
Status InferQLinearGlobalAveragePool(InferenceContext& ctx) {
  VIGIL_RETURN_IF_ERROR(CheckUnaryParams(ctx));
  VIGIL_ASSIGN_OR_RETURN(bool channels_last, ChannelsLast(ctx));
  const ir::TypeInfo* x = TensorInput(ctx, 0);
  if (!x) return Status::Ok();
  if (!HasRank(x)) {
    ctx.set_output(0, TensorTypeUnknownShape(x->elem_type));
    return Status::Ok();
  }
  const size_t rank = x->shape.dims.size();
  if (rank < 3) {
    return ctx.Fail("input 0 (X) has shape {}, expected rank >= 3 ([N,C,spatial...] or, channels_last, "
                    "[N,spatial...,C])",
                    ir::ShapeToString(x->shape));
  }
  std::vector<ir::Dim> dims = x->shape.dims;
  for (size_t i = channels_last ? 1 : 2; i < (channels_last ? rank - 1 : rank); ++i) dims[i] = ir::Dim::Known(1);
  ctx.set_output(0, TensorType(x->elem_type, std::move(dims)));
  return Status::Ok();
}

// QLinearAveragePool: AveragePool's geometry on the spatial dims of X.
Status InferQLinearAveragePool(InferenceContext& ctx) {
  VIGIL_RETURN_IF_ERROR(CheckUnaryParams(ctx));
  VIGIL_ASSIGN_OR_RETURN(bool channels_last, ChannelsLast(ctx));
  VIGIL_ASSIGN_OR_RETURN(std::vector<int64_t> kernel, RequiredIntsAttr(ctx.node(), "kernel_shape"));
  VIGIL_ASSIGN_OR_RETURN(std::vector<int64_t> strides, IntsAttr(ctx.node(), "strides", {}));
  VIGIL_ASSIGN_OR_RETURN(std::vector<int64_t> pads, IntsAttr(ctx.node(), "pads", {}));
  VIGIL_ASSIGN_OR_RETURN(std::string auto_pad, StringAttr(ctx.node(), "auto_pad", "NOTSET"));
  VIGIL_ASSIGN_OR_RETURN(int64_t ceil_mode, IntAttr(ctx.node(), "ceil_mode", 0));
  VIGIL_ASSIGN_OR_RETURN(int64_t cip, IntAttr(ctx.node(), "count_include_pad", 0));
  if (cip != 0 && cip != 1) return ctx.Fail("attribute count_include_pad is {}, expected 0 or 1", cip);
  const ir::TypeInfo* x = TensorInput(ctx, 0);
  if (!x) return Status::Ok();
  if (!HasRank(x)) {
    ctx.set_output(0, TensorTypeUnknownShape(x->elem_type));
    return Status::Ok();
  }
  const size_t rank = x->shape.dims.size();
  if (rank != kernel.size() + 2) {
    return ctx.Fail("input 0 (X) has shape {}, expected rank {} (N, C and {} spatial dims of kernel_shape)",
                    ir::ShapeToString(x->shape), kernel.size() + 2, kernel.size());
  }
  const size_t first = channels_last ? 1 : 2;
  std::vector<ir::Dim> dims = x->shape.dims;
  std::vector<int64_t> spatial;
  for (size_t i = 0; i < kernel.size(); ++i) {
    const ir::Dim& d = x->shape.dims[first + i];
    if (!d.value) break;
    spatial.push_back(*d.value);
  }
  if (spatial.size() != kernel.size()) {
    for (size_t i = 0; i < kernel.size(); ++i) dims[first + i] = ctx.NewSymbol();
  } else {
    QLinearPoolGeometry g;
    std::string why;
    if (!ComputeQLinearPoolGeometry(spatial, kernel, strides, pads, auto_pad, ceil_mode != 0, &g, &why)) {
      return ctx.Fail("{} (input 0 (X) has shape {})", why, ir::ShapeToString(x->shape));
    }
    for (size_t i = 0; i < kernel.size(); ++i) dims[first + i] = ir::Dim::Known(g.out[i]);
  }
  ctx.set_output(0, TensorType(x->elem_type, std::move(dims)));
  return Status::Ok();
}

// QLinearConcat: Y_scale, Y_zero_point, then (X, X_scale, X_zero_point) per
// input -> the inputs joined along `axis`, of Y_zero_point's dtype.
Status InferQLinearConcat(InferenceContext& ctx) {
  VIGIL_RETURN_IF_ERROR(CheckScale(ctx, 0, "Y_scale"));
  VIGIL_RETURN_IF_ERROR(CheckData(ctx, 1, "Y_zero_point"));
  VIGIL_RETURN_IF_ERROR(CheckOneElement(ctx, 1, "Y_zero_point"));
  const size_t n = ctx.num_inputs();
  if (n < 5 || (n - 2) % 3 != 0) {
    return ctx.Fail("has {} inputs, expected Y_scale, Y_zero_point and then (X, X_scale, X_zero_point) triples "
                    "(2 + 3k, k >= 1)",
                    n);
  }
  VIGIL_ASSIGN_OR_RETURN(int64_t axis, RequiredIntAttr(ctx.node(), "axis"));
  const ir::TypeInfo* yzp = TensorInput(ctx, 1);
  std::optional<std::vector<ir::Dim>> dims;
  bool shape_known = true;
  int64_t ax = 0;
  for (size_t k = 2; k < n; k += 3) {
    VIGIL_RETURN_IF_ERROR(CheckData(ctx, k, "X"));
    VIGIL_RETURN_IF_ERROR(CheckScale(ctx, k + 1, "X_scale"));
    VIGIL_RETURN_IF_ERROR(CheckZeroPoint(ctx, k + 2, "X_zero_point", k, "X"));
    const ir::TypeInfo* x = TensorInput(ctx, k);
    if (x && yzp && x->elem_type != yzp->elem_type) {
      return ctx.Fail("input {} (X) has dtype {}, expected {} like input 1 (Y_zero_point)", k,
                      ir::DataTypeName(x->elem_type), ir::DataTypeName(yzp->elem_type));
    }
    if (!HasRank(x)) {
      shape_known = false;
      continue;
    }
    const auto& xd = x->shape.dims;
    if (!dims) {
      VIGIL_ASSIGN_OR_RETURN(ax, NormalizeAxis(ctx.node(), axis, static_cast<int64_t>(xd.size())));
      dims = xd;
      continue;
    }
    if (xd.size() != dims->size()) {
      return ctx.Fail("input {} (X) has rank {}, the first input has rank {}", k, xd.size(), dims->size());
    }
    for (size_t i = 0; i < xd.size(); ++i) {
      ir::Dim& o = (*dims)[i];
      if (static_cast<int64_t>(i) == ax) {
        o = o.value && xd[i].value ? ir::Dim::Known(*o.value + *xd[i].value) : ctx.NewSymbol();
      } else if (o.value && xd[i].value && *o.value != *xd[i].value) {
        return ctx.Fail("input {} (X) has shape {}; it differs from the first input's off axis {}", k,
                        ir::ShapeToString(x->shape), ax);
      } else if (!o.value && xd[i].value) {
        o = xd[i];
      }
    }
  }
  if (!yzp) return Status::Ok();
  if (!dims || !shape_known) {
    ctx.set_output(0, TensorTypeUnknownShape(yzp->elem_type));
    return Status::Ok();
  }
  ctx.set_output(0, TensorType(yzp->elem_type, std::move(*dims)));
  return Status::Ok();
}

// QLinearSoftmax: as QLinearSigmoid, plus the required attribute opset (of
// the ONNX Softmax it mimics: < 13 coerces X to 2-D at axis, 13 reduces one
// axis) and axis (default -1 for every opset, as onnxruntime's schema has it).
Status InferQLinearSoftmax(InferenceContext& ctx) {
  VIGIL_RETURN_IF_ERROR(CheckUnaryParams(ctx));
  VIGIL_ASSIGN_OR_RETURN(int64_t opset, RequiredIntAttr(ctx.node(), "opset"));
  if (opset < 1) return ctx.Fail("attribute opset is {}, expected the ONNX Softmax opset (>= 1)", opset);
  VIGIL_ASSIGN_OR_RETURN(int64_t axis, IntAttr(ctx.node(), "axis", -1));
  const ir::TypeInfo* x = TensorInput(ctx, 0);
  if (!x) return Status::Ok();
  if (HasRank(x)) {
    if (x->shape.dims.empty()) return ctx.Fail("input 0 (X) is a scalar, expected rank >= 1");
    VIGIL_RETURN_IF_ERROR(NormalizeAxis(ctx.node(), axis, static_cast<int64_t>(x->shape.dims.size())).status());
  }
  ctx.set_output(0, *x);
  return Status::Ok();
}

// DynamicQuantizeLSTM: input i, where its dtype is known, is `want`.
Status CheckDtype(InferenceContext& ctx, size_t i, const char* name, DataType want) {
  const ir::TypeInfo* t = TensorInput(ctx, i);
  if (!t || t->elem_type == want) return Status::Ok();
  return ctx.Fail("input {} ({}) has dtype {}, expected {}", i, name, ir::DataTypeName(t->elem_type),
                  ir::DataTypeName(want));
}

// Input i, where its shape is known, has rank want.size() and the known
// values of `want` (nullopt: any).
Status CheckDims(InferenceContext& ctx, size_t i, const char* name, const std::vector<std::optional<int64_t>>& want,
                 const char* what) {
  const ir::TypeInfo* t = TensorInput(ctx, i);
  if (!HasRank(t)) return Status::Ok();
  bool ok = t->shape.dims.size() == want.size();
  for (size_t k = 0; ok && k < want.size(); ++k) {
    ok = !want[k] || !t->shape.dims[k].value || *t->shape.dims[k].value == *want[k];
  }
  if (ok) return Status::Ok();
  return ctx.Fail("input {} ({}) has shape {}, expected {}", i, name, ir::ShapeToString(t->shape), what);
}

// A weight's scale or zero point: [num_dir] or [num_dir, 4*hidden].
Status CheckWeightParam(InferenceContext& ctx, size_t i, const char* name, int64_t nd, std::optional<int64_t> gh) {
  const ir::TypeInfo* t = TensorInput(ctx, i);
  if (!HasRank(t) || t->shape.dims.size() == 1) {
    return CheckDims(ctx, i, name, {nd}, "[num_directions] (per direction) or [num_directions, 4*hidden_size]");
  }
  return CheckDims(ctx, i, name, {nd, gh}, "[num_directions] (per direction) or [num_directions, 4*hidden_size]");
}

std::optional<int64_t> Known(const ir::TypeInfo* t, size_t i) {
  if (!HasRank(t) || i >= t->shape.dims.size()) return std::nullopt;
  return t->shape.dims[i].value;
}

std::optional<int64_t> Times(std::optional<int64_t> v, int64_t k) {
  return v ? std::optional<int64_t>(*v * k) : std::nullopt;
}

// DynamicQuantizeLSTM: X float32 [seq, batch, input]; W int8/uint8
// [num_dir, input, 4*hidden]; R of W's dtype [num_dir, hidden, 4*hidden];
// B [num_dir, 8*hidden]; sequence_lens int32 [batch]; initial_h, initial_c
// [num_dir, batch, hidden]; P [num_dir, 3*hidden]; W_scale, R_scale float32
// and W_zero_point, R_zero_point of W's dtype, each [num_dir] or
// [num_dir, 4*hidden] -> Y [seq, num_dir, batch, hidden], Y_h, Y_c
// [num_dir, batch, hidden], float32.
Status InferDynamicQuantizeLstm(InferenceContext& ctx) {
  VIGIL_ASSIGN_OR_RETURN(std::string direction, StringAttr(ctx.node(), "direction", "forward"));
  if (direction != "forward" && direction != "reverse" && direction != "bidirectional") {
    return ctx.Fail("attribute direction is '{}', expected forward, reverse or bidirectional", direction);
  }
  const int64_t nd = direction == "bidirectional" ? 2 : 1;
  VIGIL_ASSIGN_OR_RETURN(int64_t hidden_attr, IntAttr(ctx.node(), "hidden_size", 0));
  if (HasAttr(ctx.node(), "hidden_size") && hidden_attr <= 0) {
    return ctx.Fail("attribute hidden_size is {}, expected a positive size", hidden_attr);
  }
  for (size_t i : {0, 3, 5, 6, 7, 8, 10}) {
    static const char* const kNames[] = {"X", "", "", "B", "", "initial_h", "initial_c", "P", "W_scale", "",
                                         "R_scale"};
    VIGIL_RETURN_IF_ERROR(CheckDtype(ctx, i, kNames[i], DataType::kFloat32));
  }
  VIGIL_RETURN_IF_ERROR(CheckDtype(ctx, 4, "sequence_lens", DataType::kInt32));
  VIGIL_RETURN_IF_ERROR(CheckData(ctx, 1, "W"));
  const ir::TypeInfo* w = TensorInput(ctx, 1);
  for (size_t i : {2, 9, 11}) {
    const ir::TypeInfo* t = TensorInput(ctx, i);
    if (w && t && t->elem_type != w->elem_type) {
      return ctx.Fail("input {} ({}) has dtype {}, expected {} like input 1 (W)", i,
                      i == 2 ? "R" : (i == 9 ? "W_zero_point" : "R_zero_point"), ir::DataTypeName(t->elem_type),
                      ir::DataTypeName(w->elem_type));
    }
  }
  const ir::TypeInfo* x = TensorInput(ctx, 0);
  const ir::TypeInfo* r = TensorInput(ctx, 2);
  std::optional<int64_t> hidden = hidden_attr > 0 ? std::optional<int64_t>(hidden_attr) : Known(r, 1);
  const std::optional<int64_t> batch = Known(x, 1);
  VIGIL_RETURN_IF_ERROR(CheckDims(ctx, 0, "X", {std::nullopt, std::nullopt, std::nullopt}, "[seq, batch, input] (rank 3)"));
  VIGIL_RETURN_IF_ERROR(CheckDims(ctx, 1, "W", {nd, Known(x, 2), Times(hidden, 4)},
                                  "[num_directions, input_size, 4*hidden_size]"));
  VIGIL_RETURN_IF_ERROR(CheckDims(ctx, 2, "R", {nd, hidden, Times(hidden, 4)},
                                  "[num_directions, hidden_size, 4*hidden_size]"));
  VIGIL_RETURN_IF_ERROR(CheckDims(ctx, 3, "B", {nd, Times(hidden, 8)}, "[num_directions, 8*hidden_size]"));
  VIGIL_RETURN_IF_ERROR(CheckDims(ctx, 4, "sequence_lens", {batch}, "[batch]"));
  VIGIL_RETURN_IF_ERROR(CheckDims(ctx, 5, "initial_h", {nd, batch, hidden}, "[num_directions, batch, hidden_size]"));
  VIGIL_RETURN_IF_ERROR(CheckDims(ctx, 6, "initial_c", {nd, batch, hidden}, "[num_directions, batch, hidden_size]"));
  VIGIL_RETURN_IF_ERROR(CheckDims(ctx, 7, "P", {nd, Times(hidden, 3)}, "[num_directions, 3*hidden_size]"));
  VIGIL_RETURN_IF_ERROR(CheckWeightParam(ctx, 8, "W_scale", nd, Times(hidden, 4)));
  VIGIL_RETURN_IF_ERROR(CheckWeightParam(ctx, 9, "W_zero_point", nd, Times(hidden, 4)));
  VIGIL_RETURN_IF_ERROR(CheckWeightParam(ctx, 10, "R_scale", nd, Times(hidden, 4)));
  VIGIL_RETURN_IF_ERROR(CheckWeightParam(ctx, 11, "R_zero_point", nd, Times(hidden, 4)));
  auto dim = [&](std::optional<int64_t> v) { return v ? ir::Dim::Known(*v) : ctx.NewSymbol(); };
  const ir::Dim seq = HasRank(x) ? x->shape.dims[0] : ctx.NewSymbol();
  const ir::Dim b = HasRank(x) ? x->shape.dims[1] : ctx.NewSymbol();
  const ir::Dim h = dim(hidden);
  if (ctx.num_outputs() > 0) {
    ctx.set_output(0, TensorType(DataType::kFloat32, std::vector<ir::Dim>{seq, ir::Dim::Known(nd), b, h}));
  }
  for (size_t i = 1; i < ctx.num_outputs(); ++i) {
    ctx.set_output(i, TensorType(DataType::kFloat32, std::vector<ir::Dim>{ir::Dim::Known(nd), b, h}));
  }
  return Status::Ok();
}

// QGemm: A [M,K] ([K,M] with transA), B [K,N] ([N,K] with transB), int8 or
// uint8 each; a_scale, y_scale float32 scalars; a_zero_point and
// y_zero_point scalars of A's dtype; b_scale (float32) and b_zero_point
// (B's dtype) one element or [N]; C int32 broadcastable to [M,N] -> Y [M,N]
// of A's dtype with y_zero_point, float32 without.
Status InferQGemm(InferenceContext& ctx) {
  VIGIL_RETURN_IF_ERROR(CheckData(ctx, 0, "A"));
  VIGIL_RETURN_IF_ERROR(CheckData(ctx, 3, "B"));
  VIGIL_RETURN_IF_ERROR(CheckScale(ctx, 1, "a_scale"));
  VIGIL_RETURN_IF_ERROR(CheckZeroPoint(ctx, 2, "a_zero_point", 0, "A"));
  VIGIL_RETURN_IF_ERROR(CheckScale(ctx, 7, "y_scale"));
  VIGIL_RETURN_IF_ERROR(CheckZeroPoint(ctx, 8, "y_zero_point", 0, "A"));
  VIGIL_RETURN_IF_ERROR(CheckDtype(ctx, 4, "b_scale", DataType::kFloat32));
  VIGIL_RETURN_IF_ERROR(CheckDtype(ctx, 6, "C", DataType::kInt32));
  const ir::TypeInfo* bz = TensorInput(ctx, 5);
  const ir::TypeInfo* b = TensorInput(ctx, 3);
  if (bz && b && bz->elem_type != b->elem_type) {
    return ctx.Fail("input 5 (b_zero_point) has dtype {}, expected {} like input 3 (B)", ir::DataTypeName(bz->elem_type),
                    ir::DataTypeName(b->elem_type));
  }
  if (ctx.has_input(8) && !ctx.has_input(7)) return ctx.Fail("input 8 (y_zero_point) is given without input 7 (y_scale)");
  VIGIL_ASSIGN_OR_RETURN(int64_t trans_a, IntAttr(ctx.node(), "transA", 0));
  VIGIL_ASSIGN_OR_RETURN(int64_t trans_b, IntAttr(ctx.node(), "transB", 0));
  const ir::TypeInfo* a = TensorInput(ctx, 0);
  VIGIL_RETURN_IF_ERROR(CheckDims(ctx, 0, "A", {std::nullopt, std::nullopt}, "a matrix (rank 2)"));
  VIGIL_RETURN_IF_ERROR(CheckDims(ctx, 3, "B", {std::nullopt, std::nullopt}, "a matrix (rank 2)"));
  const std::optional<int64_t> k = Known(a, trans_a ? 0 : 1), kb = Known(b, trans_b ? 1 : 0);
  if (k && kb && *k != *kb) {
    return ctx.Fail("inputs 0 (A) {} and 3 (B) {} do not multiply (transA {}, transB {})",
                    ir::ShapeToString(a->shape), ir::ShapeToString(b->shape), trans_a, trans_b);
  }
  const std::optional<int64_t> n = Known(b, trans_b ? 0 : 1);
  for (size_t i : {4, 5}) {
    const ir::TypeInfo* t = TensorInput(ctx, i);
    if (!HasRank(t)) continue;
    int64_t count = 1;
    bool known = true;
    for (const ir::Dim& d : t->shape.dims) {
      if (!d.value) known = false;
      else count *= *d.value;
    }
    const bool per_column = t->shape.dims.size() == 1 && (!t->shape.dims[0].value || !n || *t->shape.dims[0].value == *n);
    if (known && count != 1 && !per_column) {
      return ctx.Fail("input {} ({}) has shape {}, expected one element or [N] (N = {})", i,
                      i == 4 ? "b_scale" : "b_zero_point", ir::ShapeToString(t->shape),
                      n ? std::to_string(*n) : std::string("B's columns"));
    }
  }
  auto dim = [&](const ir::TypeInfo* t, size_t i) {
    return HasRank(t) && t->shape.dims.size() == 2 ? t->shape.dims[i] : ctx.NewSymbol();
  };
  const ir::Dim dm = dim(a, trans_a ? 1 : 0), dn = dim(b, trans_b ? 0 : 1);
  if (ctx.has_input(8) && !a) return Status::Ok();  // the output has A's dtype, not known yet
  const DataType out = ctx.has_input(8) ? a->elem_type : DataType::kFloat32;
  ctx.set_output(0, TensorType(out, std::vector<ir::Dim>{dm, dn}));
  return Status::Ok();
}

const OpSchema kQuantizedContribSchemas[] = {
    {kMsDomain, "QLinearAdd", 1, kLatest, 5, 8, 1, 1, InferQLinearBinary},
    {kMsDomain, "QLinearMul", 1, kLatest, 5, 8, 1, 1, InferQLinearBinary},
    {kMsDomain, "QLinearSigmoid", 1, kLatest, 4, 5, 1, 1, InferQLinearUnary},
    {kMsDomain, "QLinearLeakyRelu", 1, kLatest, 4, 5, 1, 1, InferQLinearUnary},
    {kMsDomain, "QLinearGlobalAveragePool", 1, kLatest, 5, 5, 1, 1, InferQLinearGlobalAveragePool},
    {kMsDomain, "QLinearAveragePool", 1, kLatest, 4, 5, 1, 1, InferQLinearAveragePool},
    {kMsDomain, "QLinearConcat", 1, kLatest, 5, kVariadic, 1, 1, InferQLinearConcat},
    {kMsDomain, "QLinearSoftmax", 1, kLatest, 4, 5, 1, 1, InferQLinearSoftmax},
    {kMsDomain, "DynamicQuantizeLSTM", 1, kLatest, 12, 12, 0, 3, InferDynamicQuantizeLstm},
    {kMsDomain, "QGemm", 1, kLatest, 6, 9, 1, 1, InferQGemm},
};

}  // namespace

std::span<const OpSchema> QuantizedContribSchemas() { return kQuantizedContribSchemas; }

}  // namespace vigil::ops
