// Schemas and shape inference of the elementwise family: unary math,
// activations, SwiGLU, Clip, Identity, broadcasting binary and variadic ops, Where,
// PRelu, Cast, CastLike and BitCast.
//
// Inference checks what must hold between inputs (equal dtypes, bool where
// the op is logical, broadcastable shapes, valid attributes) and leaves which
// dtypes a backend implements to the backend, which reports Unsupported.
// Each op has one schema over all the opsets where only its type lists
// changed; Clip has two (attributes until 10, inputs from 11). Binary ops
// reach back to their opset-6 (or -1) versions, whose `broadcast`/`axis`
// attributes shape inference and the CPU kernels honour below opset 7.
#include <climits>
#include <initializer_list>
#include <string>
#include <vector>

#include "ops/attributes.h"
#include "ops/schema.h"
#include "ops/shape_helpers.h"
#include "ops/families.h"

namespace vigil::ops {
namespace {

using ir::DataType;
using ir::TypeInfo;

// Input i's type when it is a tensor type, else null.
const TypeInfo* TensorInput(const InferenceContext& ctx, size_t i) {
  const TypeInfo* t = ctx.input_type(i);
  return t && t->kind == TypeInfo::Kind::kTensor ? t : nullptr;
}

bool KnownDtype(const TypeInfo* t) { return t && t->elem_type != DataType::kUndefined; }

// Fails when inputs `a` and `b` both have known, different dtypes.
Status CheckSameDtype(const InferenceContext& ctx, size_t a, size_t b) {
  const TypeInfo* ta = TensorInput(ctx, a);
  const TypeInfo* tb = TensorInput(ctx, b);
  if (KnownDtype(ta) && KnownDtype(tb) && ta->elem_type != tb->elem_type) {
    return ctx.Fail("input {} has dtype {} but input {} has dtype {}; {} needs them equal", b,
                    ir::DataTypeName(tb->elem_type), a, ir::DataTypeName(ta->elem_type), ctx.node().op_type);
  }
  return Status::Ok();
}

// Fails when input i has a known dtype other than bool.
Status CheckBool(const InferenceContext& ctx, size_t i) {
  const TypeInfo* t = TensorInput(ctx, i);
  if (KnownDtype(t) && t->elem_type != DataType::kBool) {
    return ctx.Fail("input {} has dtype {}, {} needs bool", i, ir::DataTypeName(t->elem_type),
                    ctx.node().op_type);
  }
  return Status::Ok();
}

// The first known dtype among `inputs`, or undefined.
DataType FirstDtype(const InferenceContext& ctx, std::initializer_list<size_t> inputs) {
  for (size_t i : inputs) {
    const TypeInfo* t = TensorInput(ctx, i);
    if (KnownDtype(t)) return t->elem_type;
  }
  return DataType::kUndefined;
}

// Sets output 0 to `dtype` with the broadcast shape of `inputs`; unknown
// shape when any input's rank is unknown.
Status SetBroadcastOutput(InferenceContext& ctx, const std::vector<size_t>& inputs, DataType dtype) {
  std::vector<ir::Dim> dims;
  for (size_t i : inputs) {
    const TypeInfo* t = TensorInput(ctx, i);
    if (!HasRank(t)) {
      ctx.set_output(0, TensorTypeUnknownShape(dtype));
      return Status::Ok();
    }
    VIGIL_ASSIGN_OR_RETURN(dims, BroadcastDims(ctx, dims, t->shape.dims));
  }
  ctx.set_output(0, TensorType(dtype, std::move(dims)));
  return Status::Ok();
}

// Output 0: `dtype` with input 0's shape (unknown shape when input 0's is).
void SetShapeOfInput0(InferenceContext& ctx, DataType dtype) {
  const TypeInfo* t = TensorInput(ctx, 0);
  if (HasRank(t)) {
    ctx.set_output(0, TensorType(dtype, t->shape.dims));
  } else {
    ctx.set_output(0, TensorTypeUnknownShape(dtype));
  }
}

// --- Unary ------------------------------------------------------------------

Status InferUnary(InferenceContext& ctx) { return PropagateFirstInput(ctx); }

// IsNaN, IsInf: bool of input 0's shape.
Status InferUnaryToBool(InferenceContext& ctx) {
  SetShapeOfInput0(ctx, DataType::kBool);
  return Status::Ok();
}

Status InferNot(InferenceContext& ctx) {
  VIGIL_RETURN_IF_ERROR(CheckBool(ctx, 0));
  SetShapeOfInput0(ctx, DataType::kBool);
  return Status::Ok();
}

Status InferGelu(InferenceContext& ctx) {
  VIGIL_ASSIGN_OR_RETURN(std::string approximate, StringAttr(ctx.node(), "approximate", "none"));
  if (approximate != "none" && approximate != "tanh") {
    return ctx.Fail("attribute approximate is '{}', expected 'none' or 'tanh'", approximate);
  }
  return PropagateFirstInput(ctx);
}

// SwiGLU: A * sigmoid(alpha * A) * B, with A and B of one float dtype and one
// shape (no broadcasting).
Status InferSwiGLU(InferenceContext& ctx) {
  VIGIL_RETURN_IF_ERROR(CheckSameDtype(ctx, 0, 1));
  const TypeInfo* a = TensorInput(ctx, 0);
  const TypeInfo* b = TensorInput(ctx, 1);
  for (const TypeInfo* t : {a, b}) {
    if (KnownDtype(t) && t->elem_type != DataType::kFloat32 && t->elem_type != DataType::kFloat64 &&
        t->elem_type != DataType::kFloat16 && t->elem_type != DataType::kBfloat16) {
      return ctx.Fail("input {} is {}, expected a float type", t == a ? "A" : "B", ir::DataTypeName(t->elem_type));
    }
  }
  if (HasRank(a) && HasRank(b)) {
    const auto& ad = a->shape.dims;
    const auto& bd = b->shape.dims;
    bool same = ad.size() == bd.size();
    for (size_t i = 0; same && i < ad.size(); ++i) same = !(ad[i].value && bd[i].value && *ad[i].value != *bd[i].value);
    if (!same) {
      return ctx.Fail("inputs A {} and B {} differ in shape; SwiGLU does not broadcast", ir::ShapeToString(a->shape),
                      ir::ShapeToString(b->shape));
    }
  }
  return PropagateFirstInput(ctx);
}

Status InferCelu(InferenceContext& ctx) {
  VIGIL_ASSIGN_OR_RETURN(float alpha, FloatAttr(ctx.node(), "alpha", 1.0f));
  if (alpha == 0) return ctx.Fail("attribute alpha must not be 0 (Celu divides by it)");
  return PropagateFirstInput(ctx);
}

// Clip 11+: min and max, when given, are scalars of input 0's dtype.
Status InferClip11(InferenceContext& ctx) {
  for (size_t i : {size_t{1}, size_t{2}}) {
    if (!ctx.has_input(i)) continue;
    VIGIL_RETURN_IF_ERROR(CheckSameDtype(ctx, 0, i));
    auto dims = KnownDims(TensorInput(ctx, i));
    if (dims) {
      int64_t n = 1;
      for (int64_t d : *dims) n *= d;
      if (n != 1) {
        return ctx.Fail("input {} ({}) must be a scalar, got shape {}", i, i == 1 ? "min" : "max",
                        ir::ShapeToString(TensorInput(ctx, i)->shape));
      }
    }
  }
  return PropagateFirstInput(ctx);
}

// --- Binary and variadic ------------------------------------------------------

// Before opset 7, binary ops broadcast only with attribute broadcast=1, and
// then B onto A from `axis` (default: A's trailing dims); the output has A's
// shape. Without it the shapes must be equal.
Status SetLegacyBinaryOutput(InferenceContext& ctx, DataType dtype) {
  const TypeInfo* a = TensorInput(ctx, 0);
  const TypeInfo* b = TensorInput(ctx, 1);
  VIGIL_ASSIGN_OR_RETURN(int64_t broadcast, IntAttr(ctx.node(), "broadcast", 0));
  if (!HasRank(a)) {
    ctx.set_output(0, broadcast == 0 && HasRank(b) ? TensorType(dtype, b->shape.dims) : TensorTypeUnknownShape(dtype));
    return Status::Ok();
  }
  if (HasRank(b)) {
    const auto& da = a->shape.dims;
    const auto& db = b->shape.dims;
    const int64_t ra = static_cast<int64_t>(da.size()), rb = static_cast<int64_t>(db.size());
    VIGIL_ASSIGN_OR_RETURN(int64_t axis, IntAttr(ctx.node(), "axis", ra - rb));
    if (axis < 0) axis += ra;
    if (broadcast == 0) axis = 0;
    bool fits = broadcast == 0 ? ra == rb : axis >= 0 && axis + rb <= ra;
    for (int64_t i = 0; fits && i < rb; ++i) {
      const ir::Dim& x = da[static_cast<size_t>(axis + i)];
      const ir::Dim& y = db[static_cast<size_t>(i)];
      if (x.value && y.value) fits = *x.value == *y.value || (broadcast != 0 && *y.value == 1);
    }
    if (!fits) {
      return ctx.Fail("input 1 of shape {} does not {} input 0 of shape {} (opset {} broadcast={})",
                      ir::ShapeToString(b->shape), broadcast ? "broadcast onto" : "equal", ir::ShapeToString(a->shape),
                      ctx.opset(), broadcast);
    }
  }
  ctx.set_output(0, TensorType(dtype, a->shape.dims));
  return Status::Ok();
}

// Output 0 of a two-input op: numpy broadcasting from opset 7, the legacy
// rule before.
Status SetBinaryOutput(InferenceContext& ctx, DataType dtype) {
  if (ctx.opset() < 7) return SetLegacyBinaryOutput(ctx, dtype);
  return SetBroadcastOutput(ctx, {0, 1}, dtype);
}

// Add, Sub, Mul, Div, Bitwise*: equal dtypes, broadcast shapes.
Status InferBinary(InferenceContext& ctx) {
  VIGIL_RETURN_IF_ERROR(CheckSameDtype(ctx, 0, 1));
  return SetBinaryOutput(ctx, FirstDtype(ctx, {0, 1}));
}

Status InferMod(InferenceContext& ctx) {
  VIGIL_ASSIGN_OR_RETURN(int64_t fmod, IntAttr(ctx.node(), "fmod", 0));
  if (fmod != 0 && fmod != 1) return ctx.Fail("attribute fmod is {}, expected 0 or 1", fmod);
  return InferBinary(ctx);
}

Status InferBitShift(InferenceContext& ctx) {
  VIGIL_ASSIGN_OR_RETURN(std::string direction, StringAttr(ctx.node(), "direction", ""));
  if (direction != "LEFT" && direction != "RIGHT") {
    return ctx.Fail("attribute direction is '{}', expected 'LEFT' or 'RIGHT'", direction);
  }
  return InferBinary(ctx);
}

// Pow: the exponent may have another dtype (opset 12+); output is the base's.
Status InferPow(InferenceContext& ctx) { return SetBinaryOutput(ctx, FirstDtype(ctx, {0})); }

// Comparisons: equal dtypes, bool output.
Status InferCompare(InferenceContext& ctx) {
  VIGIL_RETURN_IF_ERROR(CheckSameDtype(ctx, 0, 1));
  return SetBinaryOutput(ctx, DataType::kBool);
}

// And, Or, Xor: bool inputs, bool output.
Status InferLogical(InferenceContext& ctx) {
  VIGIL_RETURN_IF_ERROR(CheckBool(ctx, 0));
  VIGIL_RETURN_IF_ERROR(CheckBool(ctx, 1));
  return SetBinaryOutput(ctx, DataType::kBool);
}

// Max, Min, Sum, Mean: any number of inputs of one dtype, broadcast.
Status InferVariadic(InferenceContext& ctx) {
  std::vector<size_t> inputs;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    if (!ctx.has_input(i)) return ctx.Fail("input {} is empty; {} takes no optional inputs", i, ctx.node().op_type);
    VIGIL_RETURN_IF_ERROR(CheckSameDtype(ctx, 0, i));
    inputs.push_back(i);
  }
  DataType dtype = DataType::kUndefined;
  for (size_t i = 0; i < inputs.size() && dtype == DataType::kUndefined; ++i) dtype = FirstDtype(ctx, {i});
  return SetBroadcastOutput(ctx, inputs, dtype);
}

Status InferWhere(InferenceContext& ctx) {
  VIGIL_RETURN_IF_ERROR(CheckBool(ctx, 0));
  VIGIL_RETURN_IF_ERROR(CheckSameDtype(ctx, 1, 2));
  return SetBroadcastOutput(ctx, {0, 1, 2}, FirstDtype(ctx, {1, 2}));
}

// PRelu: slope broadcasts onto X (unidirectionally; a 1-D slope matching
// exactly one of X's dims is accepted too, as the ONNX reference does, and
// before opset 7 a 1-D slope is per channel); the output is X's type.
Status InferPRelu(InferenceContext& ctx) {
  VIGIL_RETURN_IF_ERROR(CheckSameDtype(ctx, 0, 1));
  auto x = KnownDims(TensorInput(ctx, 0));
  auto s = KnownDims(TensorInput(ctx, 1));
  if (x && s) {
    bool ok = s->size() <= x->size();
    if (ctx.opset() < 7 && s->size() == 1 && x->size() >= 2 && (*x)[1] == (*s)[0]) ok = true;
    for (size_t i = 0; ok && i < s->size(); ++i) {
      int64_t sd = (*s)[s->size() - 1 - i], xd = (*x)[x->size() - 1 - i];
      ok = sd == 1 || sd == xd;
    }
    if (!ok && s->size() == 1) {
      int matches = 0;
      for (int64_t d : *x) matches += d == (*s)[0];
      ok = matches == 1;
    }
    if (!ok) {
      return ctx.Fail("slope of shape {} does not broadcast to X of shape {}",
                      ir::ShapeToString(TensorInput(ctx, 1)->shape), ir::ShapeToString(TensorInput(ctx, 0)->shape));
    }
  }
  return PropagateFirstInput(ctx);
}

// --- Cast ---------------------------------------------------------------------

Status InferCast(InferenceContext& ctx) {
  VIGIL_ASSIGN_OR_RETURN(int64_t to, RequiredIntAttr(ctx.node(), "to"));
  if (to < 0 || to > INT32_MAX || !ir::IsKnownDataType(static_cast<int32_t>(to))) {
    return ctx.Fail("attribute to is {}, which is not an ONNX dtype", to);
  }
  SetShapeOfInput0(ctx, static_cast<DataType>(to));
  return Status::Ok();
}

// BitCast: `to` is a dtype of input 0's bit width (string has none); the
// shape is unchanged.
Status InferBitCast(InferenceContext& ctx) {
  VIGIL_ASSIGN_OR_RETURN(int64_t to, RequiredIntAttr(ctx.node(), "to"));
  if (to < 0 || to > INT32_MAX || !ir::IsKnownDataType(static_cast<int32_t>(to))) {
    return ctx.Fail("attribute to is {}, which is not an ONNX dtype that vigil knows", to);
  }
  const auto out = static_cast<DataType>(to);
  if (out == DataType::kString) return ctx.Fail("attribute to is string; BitCast takes no strings");
  const TypeInfo* x = TensorInput(ctx, 0);
  if (KnownDtype(x)) {
    if (x->elem_type == DataType::kString) return ctx.Fail("input 0 has dtype string; BitCast takes no strings");
    if (ir::DataTypeBits(x->elem_type) != ir::DataTypeBits(out)) {
      return ctx.Fail("input 0 has dtype {} ({} bits) but attribute to is {} ({} bits); BitCast needs equal widths",
                      ir::DataTypeName(x->elem_type), ir::DataTypeBits(x->elem_type), ir::DataTypeName(out),
                      ir::DataTypeBits(out));
    }
  }
  SetShapeOfInput0(ctx, out);
  return Status::Ok();
}

Status InferCastLike(InferenceContext& ctx) {
  DataType to = FirstDtype(ctx, {1});
  if (to == DataType::kUndefined) return Status::Ok();  // dtype known only at run time
  SetShapeOfInput0(ctx, to);
  return Status::Ok();
}

// Schema rows: {domain, name, since, until, min in, max in, min out, max out, infer}.
#define VIGIL_UNARY_(name, since, infer) {"", name, since, kLatest, 1, 1, 1, 1, infer}
#define VIGIL_BINARY_(name, since, infer) {"", name, since, kLatest, 2, 2, 1, 1, infer}

const OpSchema kElementwiseSchemas[] = {
    // Unary math.
    VIGIL_UNARY_("Abs", 6, InferUnary),
    VIGIL_UNARY_("Neg", 6, InferUnary),
    VIGIL_UNARY_("Sign", 9, InferUnary),
    VIGIL_UNARY_("Reciprocal", 6, InferUnary),
    VIGIL_UNARY_("Floor", 6, InferUnary),
    VIGIL_UNARY_("Ceil", 6, InferUnary),
    VIGIL_UNARY_("Round", 11, InferUnary),
    VIGIL_UNARY_("Sqrt", 6, InferUnary),
    VIGIL_UNARY_("Exp", 6, InferUnary),
    VIGIL_UNARY_("Log", 6, InferUnary),
    VIGIL_UNARY_("Sin", 7, InferUnary),
    VIGIL_UNARY_("Cos", 7, InferUnary),
    VIGIL_UNARY_("Tan", 7, InferUnary),
    VIGIL_UNARY_("Asin", 7, InferUnary),
    VIGIL_UNARY_("Acos", 7, InferUnary),
    VIGIL_UNARY_("Atan", 7, InferUnary),
    VIGIL_UNARY_("Sinh", 9, InferUnary),
    VIGIL_UNARY_("Cosh", 9, InferUnary),
    VIGIL_UNARY_("Asinh", 9, InferUnary),
    VIGIL_UNARY_("Acosh", 9, InferUnary),
    VIGIL_UNARY_("Atanh", 9, InferUnary),
    VIGIL_UNARY_("Erf", 9, InferUnary),
    VIGIL_UNARY_("IsNaN", 9, InferUnaryToBool),
    VIGIL_UNARY_("IsInf", 10, InferUnaryToBool),
    VIGIL_UNARY_("Not", 1, InferNot),
    VIGIL_UNARY_("BitwiseNot", 18, InferUnary),
    // Activations.
    VIGIL_UNARY_("Relu", 6, InferUnary),
    VIGIL_UNARY_("LeakyRelu", 6, InferUnary),
    VIGIL_UNARY_("ThresholdedRelu", 10, InferUnary),
    VIGIL_UNARY_("Elu", 6, InferUnary),
    VIGIL_UNARY_("Selu", 6, InferUnary),
    VIGIL_UNARY_("Celu", 12, InferCelu),
    VIGIL_UNARY_("Sigmoid", 6, InferUnary),
    VIGIL_UNARY_("HardSigmoid", 6, InferUnary),
    VIGIL_UNARY_("HardSwish", 14, InferUnary),
    VIGIL_UNARY_("Swish", 24, InferUnary),
    VIGIL_UNARY_("Softplus", 1, InferUnary),
    VIGIL_UNARY_("Softsign", 1, InferUnary),
    VIGIL_UNARY_("Tanh", 6, InferUnary),
    VIGIL_UNARY_("Mish", 18, InferUnary),
    VIGIL_UNARY_("Gelu", 20, InferGelu),
    VIGIL_UNARY_("Shrink", 9, InferUnary),
    VIGIL_BINARY_("SwiGLU", 28, InferSwiGLU),
    {"", "Clip", 6, 10, 1, 1, 1, 1, InferUnary},
    {"", "Clip", 11, kLatest, 1, 3, 1, 1, InferClip11},
    VIGIL_UNARY_("Identity", 1, InferUnary),
    // Broadcasting binary.
    VIGIL_BINARY_("Add", 6, InferBinary),
    VIGIL_BINARY_("Sub", 6, InferBinary),
    VIGIL_BINARY_("Mul", 6, InferBinary),
    VIGIL_BINARY_("Div", 6, InferBinary),
    VIGIL_BINARY_("Mod", 10, InferMod),
    VIGIL_BINARY_("Pow", 1, InferPow),
    VIGIL_BINARY_("BitShift", 11, InferBitShift),
    VIGIL_BINARY_("BitwiseAnd", 18, InferBinary),
    VIGIL_BINARY_("BitwiseOr", 18, InferBinary),
    VIGIL_BINARY_("BitwiseXor", 18, InferBinary),
    VIGIL_BINARY_("And", 1, InferLogical),
    VIGIL_BINARY_("Or", 1, InferLogical),
    VIGIL_BINARY_("Xor", 1, InferLogical),
    VIGIL_BINARY_("Equal", 1, InferCompare),
    VIGIL_BINARY_("Less", 1, InferCompare),
    VIGIL_BINARY_("LessOrEqual", 12, InferCompare),
    VIGIL_BINARY_("Greater", 1, InferCompare),
    VIGIL_BINARY_("GreaterOrEqual", 12, InferCompare),
    VIGIL_BINARY_("PRelu", 6, InferPRelu),
    // Variadic and ternary.
    {"", "Max", 6, kLatest, 1, kVariadic, 1, 1, InferVariadic},
    {"", "Min", 6, kLatest, 1, kVariadic, 1, 1, InferVariadic},
    {"", "Sum", 6, kLatest, 1, kVariadic, 1, 1, InferVariadic},
    {"", "Mean", 6, kLatest, 1, kVariadic, 1, 1, InferVariadic},
    {"", "Where", 9, kLatest, 3, 3, 1, 1, InferWhere},
    // Cast.
    VIGIL_UNARY_("Cast", 6, InferCast),
    VIGIL_BINARY_("CastLike", 15, InferCastLike),
    VIGIL_UNARY_("BitCast", 26, InferBitCast),
};

#undef VIGIL_UNARY_
#undef VIGIL_BINARY_

}  // namespace

std::span<const OpSchema> ElementwiseSchemas() { return kElementwiseSchemas; }

}  // namespace vigil::ops
