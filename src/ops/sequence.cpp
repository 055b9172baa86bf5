// Sequence and optional ops: SequenceEmpty, SequenceConstruct,
// SequenceInsert, SequenceAt, SequenceErase, SequenceLength,
// SplitToSequence, ConcatFromSequence, SequenceMap, Optional,
// OptionalHasElement and OptionalGetElement. Their values are not dense
// tensors; they run on the host, in the session's control-flow backend
// (runtime/sequence_ops.cpp). Here are their counts and output types.
#include "ops/sequence.h"

#include <memory>

#include "ops/attributes.h"
#include "ops/families.h"
#include "ops/schema.h"
#include "ops/shape_helpers.h"

namespace vigil::ops {

bool IsSequenceOp(const ir::Node& node) {
  if (!IsDefaultDomain(node.domain)) return false;
  static const char* const kOps[] = {"SequenceEmpty",      "SequenceConstruct", "SequenceInsert",
                                     "SequenceAt",         "SequenceErase",     "SequenceLength",
                                     "SplitToSequence",    "ConcatFromSequence", "Optional",
                                     "OptionalHasElement", "OptionalGetElement"};
  for (const char* op : kOps) {
    if (node.op_type == op) return true;
  }
  return false;
}

ir::TypeInfo SequenceOf(ir::TypeInfo element) {
  ir::TypeInfo t;
  t.kind = ir::TypeInfo::Kind::kSequence;
  t.inner = std::make_shared<const ir::TypeInfo>(std::move(element));
  return t;
}

namespace {

using Kind = ir::TypeInfo::Kind;

bool IsKind(const ir::TypeInfo* t, Kind k) { return t && t->kind == k; }

// What a sequence input holds, or an unknown type.
ir::TypeInfo ElementOf(const ir::TypeInfo* seq) {
  if (IsKind(seq, Kind::kOptional) && seq->inner) seq = seq->inner.get();
  if (IsKind(seq, Kind::kSequence) && seq->inner) return *seq->inner;
  return {};
}

Status RequireSequence(const InferenceContext& ctx, size_t i) {
  const ir::TypeInfo* t = ctx.input_type(i);
  if (!t || t->kind == Kind::kUnknown || t->kind == Kind::kSequence) return Status::Ok();
  return ctx.Fail("input {} must be a sequence of tensors, is {}", i, ir::TypeToString(*t));
}

Status RequireTensor(const InferenceContext& ctx, size_t i) {
  const ir::TypeInfo* t = ctx.input_type(i);
  if (!t || t->kind == Kind::kUnknown || t->kind == Kind::kTensor) return Status::Ok();
  return ctx.Fail("input {} must be a tensor, is {}", i, ir::TypeToString(*t));
}

// The common type of two elements: the dtype they share and, where their
// ranks agree, the dims they agree on.
ir::TypeInfo Join(const ir::TypeInfo& a, const ir::TypeInfo& b) {
  if (a.kind != Kind::kTensor) return b;
  if (b.kind != Kind::kTensor) return a;
  ir::TypeInfo t = a;
  if (a.elem_type != b.elem_type) t.elem_type = ir::DataType::kUndefined;
  if (!a.shape.rank_known || !b.shape.rank_known || a.shape.dims.size() != b.shape.dims.size()) {
    t.shape = {};
    return t;
  }
  for (size_t d = 0; d < t.shape.dims.size(); ++d) {
    const ir::Dim& x = a.shape.dims[d];
    const ir::Dim& y = b.shape.dims[d];
    bool same = (x.value && y.value && *x.value == *y.value) || (x.is_symbolic() && x.param == y.param);
    if (!same) t.shape.dims[d] = ir::Dim{};
  }
  return t;
}

Status CheckSameDtype(const InferenceContext& ctx, const ir::TypeInfo& element, const ir::TypeInfo* t, size_t i) {
  if (!t || t->kind != Kind::kTensor || element.kind != Kind::kTensor) return Status::Ok();
  if (element.elem_type == ir::DataType::kUndefined || t->elem_type == ir::DataType::kUndefined) return Status::Ok();
  if (element.elem_type != t->elem_type) {
    return ctx.Fail("input {} is {}, but the sequence holds {}; a sequence's tensors share one dtype", i,
                    ir::DataTypeName(t->elem_type), ir::DataTypeName(element.elem_type));
  }
  return Status::Ok();
}

Status InferSequenceEmpty(InferenceContext& ctx) {
  VIGIL_ASSIGN_OR_RETURN(int64_t dtype, IntAttr(ctx.node(), "dtype", static_cast<int64_t>(ir::DataType::kFloat32)));
  if (!ir::IsKnownDataType(static_cast<int32_t>(dtype))) return ctx.Fail("attribute 'dtype' {} is not a dtype", dtype);
  ctx.set_output(0, SequenceOf(TensorTypeUnknownShape(static_cast<ir::DataType>(dtype))));
  return Status::Ok();
}

Status InferSequenceConstruct(InferenceContext& ctx) {
  ir::TypeInfo element;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    VIGIL_RETURN_IF_ERROR(RequireTensor(ctx, i));
    const ir::TypeInfo* t = ctx.input_type(i);
    VIGIL_RETURN_IF_ERROR(CheckSameDtype(ctx, element, t, i));
    if (t) element = i == 0 ? *t : Join(element, *t);
  }
  ctx.set_output(0, SequenceOf(std::move(element)));
  return Status::Ok();
}

Status InferSequenceInsert(InferenceContext& ctx) {
  VIGIL_RETURN_IF_ERROR(RequireSequence(ctx, 0));
  VIGIL_RETURN_IF_ERROR(RequireTensor(ctx, 1));
  ir::TypeInfo element = ElementOf(ctx.input_type(0));
  const ir::TypeInfo* t = ctx.input_type(1);
  VIGIL_RETURN_IF_ERROR(CheckSameDtype(ctx, element, t, 1));
  if (t) element = Join(element, *t);
  ctx.set_output(0, SequenceOf(std::move(element)));
  return Status::Ok();
}

Status InferSequenceAt(InferenceContext& ctx) {
  VIGIL_RETURN_IF_ERROR(RequireSequence(ctx, 0));
  ir::TypeInfo element = ElementOf(ctx.input_type(0));
  if (element.kind == Kind::kTensor) ctx.set_output(0, std::move(element));
  return Status::Ok();
}

Status InferSequenceErase(InferenceContext& ctx) {
  VIGIL_RETURN_IF_ERROR(RequireSequence(ctx, 0));
  if (const ir::TypeInfo* t = ctx.input_type(0)) ctx.set_output(0, *t);
  return Status::Ok();
}

Status InferSequenceLength(InferenceContext& ctx) {
  VIGIL_RETURN_IF_ERROR(RequireSequence(ctx, 0));
  ctx.set_output(0, TensorType(ir::DataType::kInt64, std::vector<int64_t>{}));
  return Status::Ok();
}

// SplitToSequence: the parts' rank is the input's (less the axis without
// keepdims when there is no split input).
Status InferSplitToSequence(InferenceContext& ctx) {
  VIGIL_RETURN_IF_ERROR(RequireTensor(ctx, 0));
  const ir::TypeInfo* x = ctx.input_type(0);
  ir::TypeInfo element = TensorTypeUnknownShape(x ? x->elem_type : ir::DataType::kUndefined);
  if (HasRank(x)) {
    int64_t rank = static_cast<int64_t>(x->shape.dims.size());
    VIGIL_ASSIGN_OR_RETURN(int64_t axis, IntAttr(ctx.node(), "axis", 0));
    VIGIL_ASSIGN_OR_RETURN(axis, NormalizeAxis(ctx.node(), axis, rank));
    VIGIL_ASSIGN_OR_RETURN(int64_t keepdims, IntAttr(ctx.node(), "keepdims", 1));
    std::vector<ir::Dim> dims = x->shape.dims;
    dims[static_cast<size_t>(axis)] = ir::Dim{};
    if (!ctx.has_input(1) && keepdims == 0) dims.erase(dims.begin() + axis);
    else if (!ctx.has_input(1)) dims[static_cast<size_t>(axis)] = ir::Dim::Known(1);
    element = TensorType(x->elem_type, std::move(dims));
  }
  ctx.set_output(0, SequenceOf(std::move(element)));
  return Status::Ok();
}

// ConcatFromSequence: the elements' rank, or one more with new_axis.
Status InferConcatFromSequence(InferenceContext& ctx) {
  VIGIL_RETURN_IF_ERROR(RequireSequence(ctx, 0));
  VIGIL_RETURN_IF_ERROR(RequiredIntAttr(ctx.node(), "axis").status());
  ir::TypeInfo element = ElementOf(ctx.input_type(0));
  if (element.kind != Kind::kTensor) return Status::Ok();
  VIGIL_ASSIGN_OR_RETURN(int64_t new_axis, IntAttr(ctx.node(), "new_axis", 0));
  if (!element.shape.rank_known) {
    ctx.set_output(0, TensorTypeUnknownShape(element.elem_type));
    return Status::Ok();
  }
  size_t rank = element.shape.dims.size() + (new_axis ? 1 : 0);
  ctx.set_output(0, TensorType(element.elem_type, std::vector<ir::Dim>(rank)));
  return Status::Ok();
}

Status InferOptional(InferenceContext& ctx) {
  ir::TypeInfo t;
  t.kind = Kind::kOptional;
  if (const ir::TypeInfo* in = ctx.input_type(0); ctx.has_input(0) && in) {
    t.inner = std::make_shared<const ir::TypeInfo>(*in);
  } else if (const ir::Attribute* a = ctx.node().FindAttribute("type");
             a && a->type == ir::AttributeType::kTypeProto) {
    t.inner = std::make_shared<const ir::TypeInfo>(a->tp);
  } else if (!ctx.has_input(0)) {
    return ctx.Fail("has no input, so attribute 'type' must give the optional's type");
  }
  ctx.set_output(0, std::move(t));
  return Status::Ok();
}

Status InferOptionalHasElement(InferenceContext& ctx) {
  ctx.set_output(0, TensorType(ir::DataType::kBool, std::vector<int64_t>{}));
  return Status::Ok();
}

Status InferOptionalGetElement(InferenceContext& ctx) {
  const ir::TypeInfo* t = ctx.input_type(0);
  if (IsKind(t, Kind::kOptional)) t = t->inner.get();
  if (t && t->kind != Kind::kUnknown) ctx.set_output(0, *t);
  return Status::Ok();
}

// SequenceMap: each output is a sequence of what the body's output is.
Status InferSequenceMap(InferenceContext& ctx) {
  const ir::Attribute* a = ctx.node().FindAttribute("body");
  if (!a || a->type != ir::AttributeType::kGraph || !a->g) return ctx.Fail("attribute 'body' must be a graph");
  const ir::Graph& body = *a->g;
  if (body.outputs.size() != ctx.num_outputs()) {
    return ctx.Fail("has {} outputs, its body {}; they must agree", ctx.num_outputs(), body.outputs.size());
  }
  for (size_t i = 0; i < ctx.num_outputs(); ++i) {
    ir::TypeInfo element;
    if (body.outputs[i].has_type) element = body.outputs[i].type;
    for (ir::Dim& d : element.shape.dims) {
      if (!d.value) d = ir::Dim{};
    }
    ctx.set_output(i, SequenceOf(std::move(element)));
  }
  return Status::Ok();
}

// SequenceMap's inputs are variadic because sessions append the implicit
// ones (the values its body reads from enclosing graphs).
const OpSchema kSequenceSchemas[] = {
    {"", "SequenceEmpty", 11, kLatest, 0, 0, 1, 1, InferSequenceEmpty},
    {"", "SequenceConstruct", 11, kLatest, 1, kVariadic, 1, 1, InferSequenceConstruct},
    {"", "SequenceInsert", 11, kLatest, 2, 3, 1, 1, InferSequenceInsert},
    {"", "SequenceAt", 11, kLatest, 2, 2, 1, 1, InferSequenceAt},
    {"", "SequenceErase", 11, kLatest, 1, 2, 1, 1, InferSequenceErase},
    {"", "SequenceLength", 11, kLatest, 1, 1, 1, 1, InferSequenceLength},
    {"", "SplitToSequence", 11, kLatest, 1, 2, 1, 1, InferSplitToSequence},
    {"", "ConcatFromSequence", 11, kLatest, 1, 1, 1, 1, InferConcatFromSequence},
    {"", "SequenceMap", 17, kLatest, 1, kVariadic, 1, kVariadic, InferSequenceMap},
    {"", "Optional", 15, kLatest, 0, 1, 1, 1, InferOptional},
    {"", "OptionalHasElement", 15, kLatest, 0, 1, 1, 1, InferOptionalHasElement},
    {"", "OptionalGetElement", 15, kLatest, 1, 1, 1, 1, InferOptionalGetElement},
};

}  // namespace

std::span<const OpSchema> SequenceSchemas() { return kSequenceSchemas; }

}  // namespace vigil::ops
