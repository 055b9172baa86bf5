// GraphProto, NodeProto and AttributeProto. Graphs nest through attributes
// (If, Loop, Scan bodies), which is the reader's one deep recursion, so
// ReadGraph counts graph depth against ReadLimits::max_nesting_depth on top of
// the message depth every Scope counts.
#include <array>

#include "onnx/readers.h"

namespace vigil::onnx {
namespace {

using ir::Attribute;
using ir::AttributeType;
using wire::Field;
using wire::WireType;

// AttributeProto field numbers and the attribute type each one implies.
struct AttributeField {
  uint32_t number;
  AttributeType implies;
};
constexpr std::array<AttributeField, 14> kAttributeFields = {{
    {2, AttributeType::kFloat},         {3, AttributeType::kInt},
    {4, AttributeType::kString},        {5, AttributeType::kTensor},
    {6, AttributeType::kGraph},         {22, AttributeType::kSparseTensor},
    {14, AttributeType::kTypeProto},    {7, AttributeType::kFloats},
    {8, AttributeType::kInts},          {9, AttributeType::kStrings},
    {10, AttributeType::kTensors},      {11, AttributeType::kGraphs},
    {23, AttributeType::kSparseTensors}, {15, AttributeType::kTypeProtos},
}};

AttributeType ImpliedType(uint32_t number) {
  for (const AttributeField& af : kAttributeFields) {
    if (af.number == number) return af.implies;
  }
  return AttributeType::kUndefined;
}

// The value fields of AttributeProto.
Status ReadAttributeValue(ReadContext& ctx, const Field& f, Attribute* out) {
  switch (f.number) {
    case 2: return ReadFloat(ctx, f, "f", &out->f);
    case 3: return ReadInt64(ctx, f, "i", &out->i);
    case 4: return ReadString(ctx, f, "s", &out->s);
    case 5: out->t = ir::Tensor(); return ReadMessage(ctx, f, "t", &out->t, ReadTensor);
    case 6: return ReadMessage(ctx, f, "g", &out->g, ReadSharedGraph);
    case 22:
      out->sparse_tensor = ir::SparseTensor();
      return ReadMessage(ctx, f, "sparse_tensor", &out->sparse_tensor, ReadSparseTensor);
    case 14: out->tp = ir::TypeInfo(); return ReadMessage(ctx, f, "tp", &out->tp, ReadTypeProto);
    case 7: return AppendFloats(ctx, f, "floats", &out->floats);
    case 8: return AppendInt64s(ctx, f, "ints", ctx.limits.max_repeated, &out->ints);
    case 9: return AppendString(ctx, f, "strings", &out->strings);
    case 10: return ReadRepeatedMessage(ctx, f, "tensors", &out->tensors, ReadTensor);
    case 11: return ReadRepeatedMessage(ctx, f, "graphs", &out->graphs, ReadSharedGraph);
    case 23: return ReadRepeatedMessage(ctx, f, "sparse_tensors", &out->sparse_tensors, ReadSparseTensor);
    case 15: return ReadRepeatedMessage(ctx, f, "type_protos", &out->type_protos, ReadTypeProto);
  }
  return Status::Ok();
}

// Files from before IR version 2 may omit `type`; it is then the one value
// field that is set. With none set the type stays undefined (an empty list
// is indistinguishable from no value), with two it is ambiguous.
Status InferAttributeType(const ReadContext& ctx, uint64_t offset, uint32_t seen_fields_mask, Attribute* out) {
  AttributeType inferred = AttributeType::kUndefined;
  for (size_t i = 0; i < kAttributeFields.size(); ++i) {
    if ((seen_fields_mask & (1u << i)) == 0) continue;
    if (inferred != AttributeType::kUndefined) {
      return ctx.Error(offset, "attribute '{}' has no type and sets values of both type {} and {}", out->name,
                       ir::AttributeTypeName(inferred), ir::AttributeTypeName(kAttributeFields[i].implies));
    }
    inferred = kAttributeFields[i].implies;
  }
  out->type = inferred;
  return Status::Ok();
}

uint32_t FieldBit(uint32_t number) {
  for (size_t i = 0; i < kAttributeFields.size(); ++i) {
    if (kAttributeFields[i].number == number) return 1u << i;
  }
  return 0;
}

Status ReadAttributeType(const ReadContext& ctx, const Field& f, Attribute* out) {
  int32_t v = 0;
  VIGIL_RETURN_IF_ERROR(ReadInt32(ctx, f, "type", &v));
  if (v < 0 || v > static_cast<int32_t>(AttributeType::kTypeProtos)) {
    return ctx.Error(f.offset, "attribute '{}' has type {}, which is not an AttributeProto type", out->name, v);
  }
  out->type = static_cast<AttributeType>(v);
  return Status::Ok();
}

}  // namespace

Status ReadAttribute(ReadContext& ctx, Bytes bytes, Attribute* out) {
  const uint64_t offset = ctx.OffsetOf(bytes);
  bool has_type = false;
  uint32_t seen = 0;
  wire::FieldReader r = ctx.Reader(bytes);
  while (!r.done()) {
    Field f;
    VIGIL_RETURN_IF_ERROR(ctx.Wrap(r.Next(&f)));
    switch (f.number) {
      case 1: VIGIL_RETURN_IF_ERROR(ReadString(ctx, f, "name", &out->name)); break;
      case 13: VIGIL_RETURN_IF_ERROR(ReadString(ctx, f, "doc_string", &out->doc_string)); break;
      case 20:
        VIGIL_RETURN_IF_ERROR(ReadAttributeType(ctx, f, out));
        has_type = true;
        break;
      case 21: VIGIL_RETURN_IF_ERROR(ReadString(ctx, f, "ref_attr_name", &out->ref_attr_name)); break;
      default:
        if (ImpliedType(f.number) == AttributeType::kUndefined) break;  // unknown field: skipped
        seen |= FieldBit(f.number);
        VIGIL_RETURN_IF_ERROR(ReadAttributeValue(ctx, f, out));
        break;
    }
  }
  if (!has_type || out->type == AttributeType::kUndefined) {
    VIGIL_RETURN_IF_ERROR(InferAttributeType(ctx, offset, seen, out));
  }
  return Status::Ok();
}

Status ReadNode(ReadContext& ctx, Bytes bytes, ir::Node* out) {
  wire::FieldReader r = ctx.Reader(bytes);
  while (!r.done()) {
    Field f;
    VIGIL_RETURN_IF_ERROR(ctx.Wrap(r.Next(&f)));
    switch (f.number) {
      case 1: VIGIL_RETURN_IF_ERROR(AppendString(ctx, f, "input", &out->inputs)); break;
      case 2: VIGIL_RETURN_IF_ERROR(AppendString(ctx, f, "output", &out->outputs)); break;
      case 3: VIGIL_RETURN_IF_ERROR(ReadString(ctx, f, "name", &out->name)); break;
      case 4: VIGIL_RETURN_IF_ERROR(ReadString(ctx, f, "op_type", &out->op_type)); break;
      case 5: VIGIL_RETURN_IF_ERROR(ReadRepeatedMessage(ctx, f, "attribute", &out->attributes, ReadAttribute)); break;
      case 6: VIGIL_RETURN_IF_ERROR(ReadString(ctx, f, "doc_string", &out->doc_string)); break;
      case 7: VIGIL_RETURN_IF_ERROR(ReadString(ctx, f, "domain", &out->domain)); break;
      case 8: VIGIL_RETURN_IF_ERROR(ReadString(ctx, f, "overload", &out->overload)); break;
      default: break;  // metadata_props, device_configurations, newer fields
    }
  }
  return Status::Ok();
}

Status ReadGraph(ReadContext& ctx, Bytes bytes, ir::Graph* out) {
  // Depth of graphs only: a subgraph holds its own nodes, attributes and
  // tensors, so this bounds the reader's largest recursion unit.
  if (ctx.graph_depth >= ctx.limits.max_nesting_depth) {
    return ctx.Error(ctx.OffsetOf(bytes), "graphs nest deeper than {} levels", ctx.limits.max_nesting_depth);
  }
  ++ctx.graph_depth;
  struct DepthExit {
    ReadContext& ctx;
    ~DepthExit() { --ctx.graph_depth; }
  } depth_exit{ctx};

  wire::FieldReader r = ctx.Reader(bytes);
  while (!r.done()) {
    Field f;
    VIGIL_RETURN_IF_ERROR(ctx.Wrap(r.Next(&f)));
    switch (f.number) {
      case 1: VIGIL_RETURN_IF_ERROR(ReadRepeatedMessage(ctx, f, "node", &out->nodes, ReadNode)); break;
      case 2: VIGIL_RETURN_IF_ERROR(ReadString(ctx, f, "name", &out->name)); break;
      case 5:
        VIGIL_RETURN_IF_ERROR(ReadRepeatedMessage(ctx, f, "initializer", &out->initializers, ReadTensor));
        break;
      case 10: VIGIL_RETURN_IF_ERROR(ReadString(ctx, f, "doc_string", &out->doc_string)); break;
      case 11: VIGIL_RETURN_IF_ERROR(ReadRepeatedMessage(ctx, f, "input", &out->inputs, ReadValueInfo)); break;
      case 12: VIGIL_RETURN_IF_ERROR(ReadRepeatedMessage(ctx, f, "output", &out->outputs, ReadValueInfo)); break;
      case 13:
        VIGIL_RETURN_IF_ERROR(ReadRepeatedMessage(ctx, f, "value_info", &out->value_infos, ReadValueInfo));
        break;
      case 15:
        VIGIL_RETURN_IF_ERROR(
            ReadRepeatedMessage(ctx, f, "sparse_initializer", &out->sparse_initializers, ReadSparseTensor));
        break;
      default: break;  // quantization_annotation, metadata_props, newer fields
    }
  }
  return Status::Ok();
}

Status ReadSharedGraph(ReadContext& ctx, Bytes bytes, std::shared_ptr<ir::Graph>* out) {
  auto graph = std::make_shared<ir::Graph>();
  VIGIL_RETURN_IF_ERROR(ReadGraph(ctx, bytes, graph.get()));
  *out = std::move(graph);
  return Status::Ok();
}

}  // namespace vigil::onnx
