// TypeProto, TensorShapeProto and ValueInfoProto. TypeProto nests (a sequence
// of maps of optionals...), so every level enters a Scope, which bounds the
// recursion by ReadLimits::max_message_depth.
#include "onnx/readers.h"

namespace vigil::onnx {
namespace {

using ir::TypeInfo;
using wire::Field;
using wire::WireType;

// Element types are stored as written; ir::ValidateModel reports unknown ones
// with the value name, which the reader does not know.
Status ReadElemType(const ReadContext& ctx, const Field& f, std::string_view name, ir::DataType* out) {
  int32_t v = 0;
  VIGIL_RETURN_IF_ERROR(ReadInt32(ctx, f, name, &v));
  *out = static_cast<ir::DataType>(v);
  return Status::Ok();
}

Status ReadDim(ReadContext& ctx, Bytes bytes, ir::Dim* out) {
  wire::FieldReader r = ctx.Reader(bytes);
  while (!r.done()) {
    Field f;
    VIGIL_RETURN_IF_ERROR(ctx.Wrap(r.Next(&f)));
    if (f.number == 1) {
      int64_t v = 0;
      VIGIL_RETURN_IF_ERROR(ReadInt64(ctx, f, "dim_value", &v));
      // Some exporters write -1 for "unknown"; keep it as an unknown dim
      // rather than a size, so nothing downstream computes with it.
      out->value = v >= 0 ? std::optional<int64_t>(v) : std::nullopt;
      out->param.clear();
    } else if (f.number == 2) {
      VIGIL_RETURN_IF_ERROR(ReadString(ctx, f, "dim_param", &out->param));
      out->value.reset();  // a oneof: the last one set wins
      // "?" and the like mean "any size", not a size shared with every
      // other "?": keep the dim unnamed.
      if (ir::IsUnknownDimName(out->param)) out->param.clear();
    } else if (f.number == 3) {
      VIGIL_RETURN_IF_ERROR(ReadString(ctx, f, "denotation", &out->denotation));
    }
  }
  return Status::Ok();
}

Status ReadShape(ReadContext& ctx, Bytes bytes, ir::Shape* out) {
  out->rank_known = true;
  out->dims.clear();
  wire::FieldReader r = ctx.Reader(bytes);
  while (!r.done()) {
    Field f;
    VIGIL_RETURN_IF_ERROR(ctx.Wrap(r.Next(&f)));
    if (f.number != 1) continue;
    if (out->dims.size() >= static_cast<size_t>(ctx.limits.max_rank)) {
      return ctx.Error(f.offset, "shape has more than {} dims", ctx.limits.max_rank);
    }
    VIGIL_RETURN_IF_ERROR(ReadRepeatedMessage(ctx, f, "dim", &out->dims, ReadDim));
  }
  return Status::Ok();
}

// TypeProto.Tensor and TypeProto.SparseTensor: elem_type = 1, shape = 2.
Status ReadTensorLike(ReadContext& ctx, Bytes bytes, TypeInfo* out) {
  wire::FieldReader r = ctx.Reader(bytes);
  while (!r.done()) {
    Field f;
    VIGIL_RETURN_IF_ERROR(ctx.Wrap(r.Next(&f)));
    if (f.number == 1) {
      VIGIL_RETURN_IF_ERROR(ReadElemType(ctx, f, "elem_type", &out->elem_type));
    } else if (f.number == 2) {
      VIGIL_RETURN_IF_ERROR(ReadMessage(ctx, f, "shape", &out->shape, ReadShape));
    }
  }
  return Status::Ok();
}

Status ReadInner(ReadContext& ctx, const Field& f, std::string_view name, TypeInfo* out) {
  auto inner = std::make_shared<TypeInfo>();
  VIGIL_RETURN_IF_ERROR(ReadMessage(ctx, f, name, inner.get(), ReadTypeProto));
  out->inner = std::move(inner);
  return Status::Ok();
}

// TypeProto.Sequence and TypeProto.Optional: elem_type = 1 (a TypeProto).
Status ReadWrapper(ReadContext& ctx, Bytes bytes, TypeInfo* out) {
  wire::FieldReader r = ctx.Reader(bytes);
  while (!r.done()) {
    Field f;
    VIGIL_RETURN_IF_ERROR(ctx.Wrap(r.Next(&f)));
    if (f.number == 1) VIGIL_RETURN_IF_ERROR(ReadInner(ctx, f, "elem_type", out));
  }
  return Status::Ok();
}

// TypeProto.Map: key_type = 1 (an element type), value_type = 2 (a TypeProto).
Status ReadMap(ReadContext& ctx, Bytes bytes, TypeInfo* out) {
  wire::FieldReader r = ctx.Reader(bytes);
  while (!r.done()) {
    Field f;
    VIGIL_RETURN_IF_ERROR(ctx.Wrap(r.Next(&f)));
    if (f.number == 1) {
      VIGIL_RETURN_IF_ERROR(ReadElemType(ctx, f, "key_type", &out->elem_type));
    } else if (f.number == 2) {
      VIGIL_RETURN_IF_ERROR(ReadInner(ctx, f, "value_type", out));
    }
  }
  return Status::Ok();
}

// Switches *out to another member of TypeProto's oneof, dropping the old one.
void Become(TypeInfo* out, TypeInfo::Kind kind) {
  std::string denotation = std::move(out->denotation);
  *out = TypeInfo();
  out->kind = kind;
  out->denotation = std::move(denotation);
}

}  // namespace

Status ReadTypeProto(ReadContext& ctx, Bytes bytes, TypeInfo* out) {
  wire::FieldReader r = ctx.Reader(bytes);
  while (!r.done()) {
    Field f;
    VIGIL_RETURN_IF_ERROR(ctx.Wrap(r.Next(&f)));
    switch (f.number) {
      case 1:
        Become(out, TypeInfo::Kind::kTensor);
        VIGIL_RETURN_IF_ERROR(ReadMessage(ctx, f, "tensor_type", out, ReadTensorLike));
        break;
      case 4:
        Become(out, TypeInfo::Kind::kSequence);
        VIGIL_RETURN_IF_ERROR(ReadMessage(ctx, f, "sequence_type", out, ReadWrapper));
        break;
      case 5:
        Become(out, TypeInfo::Kind::kMap);
        VIGIL_RETURN_IF_ERROR(ReadMessage(ctx, f, "map_type", out, ReadMap));
        break;
      case 6: VIGIL_RETURN_IF_ERROR(ReadString(ctx, f, "denotation", &out->denotation)); break;
      case 7:  // opaque_type: nothing vigil can run; leave the kind unknown
        Become(out, TypeInfo::Kind::kUnknown);
        VIGIL_RETURN_IF_ERROR(ExpectWireType(ctx, f, WireType::kLen, "opaque_type"));
        break;
      case 8:
        Become(out, TypeInfo::Kind::kSparseTensor);
        VIGIL_RETURN_IF_ERROR(ReadMessage(ctx, f, "sparse_tensor_type", out, ReadTensorLike));
        break;
      case 9:
        Become(out, TypeInfo::Kind::kOptional);
        VIGIL_RETURN_IF_ERROR(ReadMessage(ctx, f, "optional_type", out, ReadWrapper));
        break;
      default: break;
    }
  }
  return Status::Ok();
}

Status ReadValueInfo(ReadContext& ctx, Bytes bytes, ir::ValueInfo* out) {
  wire::FieldReader r = ctx.Reader(bytes);
  while (!r.done()) {
    Field f;
    VIGIL_RETURN_IF_ERROR(ctx.Wrap(r.Next(&f)));
    switch (f.number) {
      case 1: VIGIL_RETURN_IF_ERROR(ReadString(ctx, f, "name", &out->name)); break;
      case 2:
        out->type = ir::TypeInfo();
        VIGIL_RETURN_IF_ERROR(ReadMessage(ctx, f, "type", &out->type, ReadTypeProto));
        out->has_type = true;
        break;
      case 3: VIGIL_RETURN_IF_ERROR(ReadString(ctx, f, "doc_string", &out->doc_string)); break;
      default: break;
    }
  }
  return Status::Ok();
}

}  // namespace vigil::onnx
