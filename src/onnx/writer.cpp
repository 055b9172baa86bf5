// The ONNX writer: each ONNX message is encoded into its own string, which
// its parent appends as a length-delimited field. Field numbers are those of
// onnx.proto, as the readers (read_*.cpp, reader.cpp) use them.
#include "onnx/writer.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <new>
#include <string_view>

#include "onnx/read_context.h"  // DimsToString
#include "onnx/tensor_proto.h"

namespace vigil::onnx {
namespace {

using ir::AttributeType;
using ir::DataType;

// Deeper nesting than any real model; also stops a cyclic hand-built graph.
constexpr int kMaxDepth = 1000;

constexpr uint32_t kVarint = 0, kFixed32 = 5, kLen = 2;

void PutVarint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7F) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

void PutTag(std::string& out, uint32_t field, uint32_t wire_type) { PutVarint(out, (uint64_t{field} << 3) | wire_type); }

// int32 and int64 fields: negative values are sign-extended to 64 bits.
void PutInt(std::string& out, uint32_t field, int64_t v) {
  PutTag(out, field, kVarint);
  PutVarint(out, static_cast<uint64_t>(v));
}

void PutLen(std::string& out, uint32_t field, std::string_view bytes) {
  PutTag(out, field, kLen);
  PutVarint(out, bytes.size());
  out.append(bytes);
}

// A string field, omitted when empty (proto2 default).
void PutString(std::string& out, uint32_t field, const std::string& s) {
  if (!s.empty()) PutLen(out, field, s);
}

void PutFixed32Bits(std::string& out, float f) {
  uint32_t bits = 0;
  std::memcpy(&bits, &f, 4);
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>(bits >> (8 * i)));
}

void PutFloat(std::string& out, uint32_t field, float f) {
  PutTag(out, field, kFixed32);
  PutFixed32Bits(out, f);
}

void PutPackedInts(std::string& out, uint32_t field, const std::vector<int64_t>& values) {
  if (values.empty()) return;
  std::string packed;
  for (int64_t v : values) PutVarint(packed, static_cast<uint64_t>(v));
  PutLen(out, field, packed);
}

void PutPackedFloats(std::string& out, uint32_t field, const std::vector<float>& values) {
  if (values.empty()) return;
  std::string packed;
  packed.reserve(4 * values.size());
  for (float v : values) PutFixed32Bits(packed, v);
  PutLen(out, field, packed);
}

std::string Describe(const ir::Tensor& t) { return t.name.empty() ? "unnamed tensor" : fmt::format("tensor '{}'", t.name); }

// ---- TensorProto and SparseTensorProto ----

Status EncodeTensor(const ir::Tensor& t, std::string* out) {
  const int32_t dtype = static_cast<int32_t>(t.dtype);
  if (t.dtype == DataType::kUndefined || !ir::IsKnownDataType(dtype)) {
    return InvalidInputError("cannot write {}: its data type ({}) is undefined or unknown", Describe(t), dtype);
  }
  for (int64_t d : t.dims) {
    if (d < 0) return InvalidInputError("cannot write {}: negative dim {}", Describe(t), d);
  }
  std::optional<uint64_t> n = t.ElementCount();
  if (!n) return InvalidInputError("cannot write {}: the product of its dims overflows", Describe(t));
  if (t.dtype == DataType::kString) {
    if (t.strings.size() != *n) {
      return InvalidInputError("cannot write {}: it has {} strings but its dims hold {} elements", Describe(t),
                               t.strings.size(), *n);
    }
    out->clear();
    PutPackedInts(*out, 1, t.dims);
    PutInt(*out, 2, dtype);
    for (const std::string& s : t.strings) PutLen(*out, 6, s);
    PutString(*out, 8, t.name);
    return Status::Ok();
  }
  std::optional<uint64_t> need = ir::DataTypeStorageBytes(t.dtype, *n);
  if (!need) return InvalidInputError("cannot write {}: its size overflows", Describe(t));
  if (t.bytes.size() != *need) {
    if (t.storage == ir::Tensor::Storage::kExternal) {
      return InvalidInputError("cannot write {}: its external data ('{}') was not loaded ({} of {} bytes present)",
                               Describe(t), t.external_location, t.bytes.size(), *need);
    }
    return InvalidInputError("cannot write {}: it holds {} bytes but dims {} of {} need {}", Describe(t),
                             t.bytes.size(), DimsToString(t.dims), ir::DataTypeName(t.dtype), *need);
  }
  *out = EncodeTensorProto(t.name, t.dtype, t.dims, t.bytes);
  return Status::Ok();
}

Status EncodeSparseTensor(const ir::SparseTensor& st, std::string* out) {
  std::string values, indices;
  VIGIL_RETURN_IF_ERROR(EncodeTensor(st.values, &values));
  VIGIL_RETURN_IF_ERROR(EncodeTensor(st.indices, &indices));
  out->clear();
  PutLen(*out, 1, values);
  PutLen(*out, 2, indices);
  PutPackedInts(*out, 3, st.dims);
  return Status::Ok();
}

// ---- TypeProto and ValueInfoProto ----

std::string EncodeShape(const ir::Shape& shape) {
  std::string out;
  for (const ir::Dim& d : shape.dims) {
    std::string dim;
    if (d.value) {
      PutInt(dim, 1, *d.value);
    } else if (!d.param.empty()) {
      PutLen(dim, 2, d.param);
    }
    PutString(dim, 3, d.denotation);
    PutLen(out, 1, dim);
  }
  return out;
}

// TypeProto.Tensor and TypeProto.SparseTensor.
std::string EncodeTensorType(const ir::TypeInfo& type) {
  std::string out;
  if (type.elem_type != DataType::kUndefined) PutInt(out, 1, static_cast<int32_t>(type.elem_type));
  if (type.shape.rank_known) PutLen(out, 2, EncodeShape(type.shape));
  return out;
}

Status EncodeType(const ir::TypeInfo& type, int depth, std::string* out) {
  if (depth > kMaxDepth) return InvalidInputError("cannot write a type nested deeper than {} levels", kMaxDepth);
  using Kind = ir::TypeInfo::Kind;
  std::string inner;
  if (type.inner && (type.kind == Kind::kSequence || type.kind == Kind::kOptional || type.kind == Kind::kMap)) {
    VIGIL_RETURN_IF_ERROR(EncodeType(*type.inner, depth + 1, &inner));
  }
  out->clear();
  std::string body;
  switch (type.kind) {
    case Kind::kUnknown: break;
    case Kind::kTensor: PutLen(*out, 1, EncodeTensorType(type)); break;
    case Kind::kSparseTensor: PutLen(*out, 8, EncodeTensorType(type)); break;
    case Kind::kSequence:
    case Kind::kOptional:
      if (type.inner) PutLen(body, 1, inner);
      PutLen(*out, type.kind == Kind::kSequence ? 4 : 9, body);
      break;
    case Kind::kMap:
      if (type.elem_type != DataType::kUndefined) PutInt(body, 1, static_cast<int32_t>(type.elem_type));
      if (type.inner) PutLen(body, 2, inner);
      PutLen(*out, 5, body);
      break;
  }
  PutString(*out, 6, type.denotation);
  return Status::Ok();
}

Status EncodeValueInfo(const ir::ValueInfo& vi, std::string* out) {
  out->clear();
  PutString(*out, 1, vi.name);
  if (vi.has_type) {
    std::string type;
    Status s = EncodeType(vi.type, 0, &type);
    if (!s.ok()) return s.WithContext(fmt::format("value '{}'", vi.name));
    PutLen(*out, 2, type);
  }
  PutString(*out, 3, vi.doc_string);
  return Status::Ok();
}

// ---- GraphProto, NodeProto, AttributeProto ----

Status EncodeGraph(const ir::Graph& graph, int depth, std::string* out);

Status EncodeSubgraph(const std::shared_ptr<ir::Graph>& g, int depth, std::string* out) {
  if (!g) {  // a hand-built attribute without a graph: write an empty one
    out->clear();
    return Status::Ok();
  }
  return EncodeGraph(*g, depth + 1, out);
}

Status EncodeAttributeValue(const ir::Attribute& a, int depth, std::string& out) {
  std::string msg;
  switch (a.type) {
    case AttributeType::kUndefined: break;
    case AttributeType::kFloat: PutFloat(out, 2, a.f); break;
    case AttributeType::kInt: PutInt(out, 3, a.i); break;
    case AttributeType::kString: PutLen(out, 4, a.s); break;
    case AttributeType::kTensor:
      VIGIL_RETURN_IF_ERROR(EncodeTensor(a.t, &msg));
      PutLen(out, 5, msg);
      break;
    case AttributeType::kGraph:
      VIGIL_RETURN_IF_ERROR(EncodeSubgraph(a.g, depth, &msg));
      PutLen(out, 6, msg);
      break;
    case AttributeType::kFloats: PutPackedFloats(out, 7, a.floats); break;
    case AttributeType::kInts: PutPackedInts(out, 8, a.ints); break;
    case AttributeType::kStrings:
      for (const std::string& s : a.strings) PutLen(out, 9, s);
      break;
    case AttributeType::kTensors:
      for (const ir::Tensor& t : a.tensors) {
        VIGIL_RETURN_IF_ERROR(EncodeTensor(t, &msg));
        PutLen(out, 10, msg);
      }
      break;
    case AttributeType::kGraphs:
      for (const std::shared_ptr<ir::Graph>& g : a.graphs) {
        VIGIL_RETURN_IF_ERROR(EncodeSubgraph(g, depth, &msg));
        PutLen(out, 11, msg);
      }
      break;
    case AttributeType::kSparseTensor:
      VIGIL_RETURN_IF_ERROR(EncodeSparseTensor(a.sparse_tensor, &msg));
      PutLen(out, 22, msg);
      break;
    case AttributeType::kSparseTensors:
      for (const ir::SparseTensor& st : a.sparse_tensors) {
        VIGIL_RETURN_IF_ERROR(EncodeSparseTensor(st, &msg));
        PutLen(out, 23, msg);
      }
      break;
    case AttributeType::kTypeProto:
      VIGIL_RETURN_IF_ERROR(EncodeType(a.tp, 0, &msg));
      PutLen(out, 14, msg);
      break;
    case AttributeType::kTypeProtos:
      for (const ir::TypeInfo& tp : a.type_protos) {
        VIGIL_RETURN_IF_ERROR(EncodeType(tp, 0, &msg));
        PutLen(out, 15, msg);
      }
      break;
    default:
      return InvalidInputError("attribute type {} is not an AttributeProto type", static_cast<int32_t>(a.type));
  }
  return Status::Ok();
}

Status EncodeAttribute(const ir::Attribute& a, int depth, std::string* out) {
  out->clear();
  PutString(*out, 1, a.name);
  // A reference to the caller's attribute (inside functions) has no value.
  // A tensor-valued attribute read without its tensor has none either.
  const bool absent_tensor = a.type == AttributeType::kTensor && a.t.dtype == DataType::kUndefined &&
                             a.t.dims.empty() && a.t.bytes.empty() && a.t.strings.empty();
  if (a.ref_attr_name.empty() && !absent_tensor) {
    Status s = EncodeAttributeValue(a, depth, *out);
    if (!s.ok()) return s.WithContext(fmt::format("attribute '{}'", a.name));
  }
  PutString(*out, 13, a.doc_string);
  PutInt(*out, 20, static_cast<int32_t>(a.type));
  PutString(*out, 21, a.ref_attr_name);
  return Status::Ok();
}

Status EncodeNode(const ir::Node& node, size_t index, int depth, std::string* out) {
  out->clear();
  for (const std::string& s : node.inputs) PutLen(*out, 1, s);
  for (const std::string& s : node.outputs) PutLen(*out, 2, s);
  PutString(*out, 3, node.name);
  PutString(*out, 4, node.op_type);
  std::string msg;
  for (const ir::Attribute& a : node.attributes) {
    Status s = EncodeAttribute(a, depth, &msg);
    if (!s.ok()) return s.WithContext(fmt::format("node {}", node.Describe(index)));
    PutLen(*out, 5, msg);
  }
  PutString(*out, 6, node.doc_string);
  PutString(*out, 7, node.domain);
  PutString(*out, 8, node.overload);
  return Status::Ok();
}

Status EncodeGraph(const ir::Graph& graph, int depth, std::string* out) {
  if (depth > kMaxDepth) {
    return InvalidInputError("cannot write graphs nested deeper than {} levels (is a graph its own subgraph?)",
                             kMaxDepth);
  }
  std::string body, msg;
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    VIGIL_RETURN_IF_ERROR(EncodeNode(graph.nodes[i], i, depth, &msg));
    PutLen(body, 1, msg);
  }
  PutString(body, 2, graph.name);
  for (const ir::Tensor& t : graph.initializers) {
    Status s = EncodeTensor(t, &msg);
    if (!s.ok()) return s.WithContext(fmt::format("graph '{}': initializer", graph.name));
    PutLen(body, 5, msg);
  }
  PutString(body, 10, graph.doc_string);
  for (const ir::ValueInfo& vi : graph.inputs) {
    VIGIL_RETURN_IF_ERROR(EncodeValueInfo(vi, &msg));
    PutLen(body, 11, msg);
  }
  for (const ir::ValueInfo& vi : graph.outputs) {
    VIGIL_RETURN_IF_ERROR(EncodeValueInfo(vi, &msg));
    PutLen(body, 12, msg);
  }
  for (const ir::ValueInfo& vi : graph.value_infos) {
    VIGIL_RETURN_IF_ERROR(EncodeValueInfo(vi, &msg));
    PutLen(body, 13, msg);
  }
  for (const ir::SparseTensor& st : graph.sparse_initializers) {
    Status s = EncodeSparseTensor(st, &msg);
    if (!s.ok()) return s.WithContext(fmt::format("graph '{}': sparse initializer", graph.name));
    PutLen(body, 15, msg);
  }
  *out = std::move(body);
  return Status::Ok();
}

// ---- ModelProto, FunctionProto ----

std::string EncodeOpsetImport(const ir::OpsetImport& op) {
  std::string out;
  PutString(out, 1, op.domain);
  PutInt(out, 2, op.version);
  return out;
}

Status EncodeFunction(const ir::Function& fn, std::string* out) {
  out->clear();
  PutString(*out, 1, fn.name);
  for (const std::string& s : fn.inputs) PutLen(*out, 4, s);
  for (const std::string& s : fn.outputs) PutLen(*out, 5, s);
  for (const std::string& s : fn.attributes) PutLen(*out, 6, s);
  std::string msg;
  for (size_t i = 0; i < fn.nodes.size(); ++i) {
    VIGIL_RETURN_IF_ERROR(EncodeNode(fn.nodes[i], i, 0, &msg));
    PutLen(*out, 7, msg);
  }
  PutString(*out, 8, fn.doc_string);
  for (const ir::OpsetImport& op : fn.opset_imports) PutLen(*out, 9, EncodeOpsetImport(op));
  PutString(*out, 10, fn.domain);
  for (const ir::Attribute& a : fn.attribute_defaults) {
    VIGIL_RETURN_IF_ERROR(EncodeAttribute(a, 0, &msg));
    PutLen(*out, 11, msg);
  }
  for (const ir::ValueInfo& vi : fn.value_infos) {
    VIGIL_RETURN_IF_ERROR(EncodeValueInfo(vi, &msg));
    PutLen(*out, 12, msg);
  }
  PutString(*out, 13, fn.overload);
  return Status::Ok();
}

Result<std::string> EncodeModel(const ir::Model& model) {
  std::string out, msg;
  PutInt(out, 1, model.ir_version);
  PutString(out, 2, model.producer_name);
  PutString(out, 3, model.producer_version);
  PutString(out, 4, model.domain);
  if (model.model_version != 0) PutInt(out, 5, model.model_version);
  PutString(out, 6, model.doc_string);
  VIGIL_RETURN_IF_ERROR(EncodeGraph(model.graph, 0, &msg));
  PutLen(out, 7, msg);
  msg = std::string();
  for (const ir::OpsetImport& op : model.opset_imports) PutLen(out, 8, EncodeOpsetImport(op));
  for (const auto& [key, value] : model.metadata_props) {
    std::string entry;
    PutString(entry, 1, key);
    PutString(entry, 2, value);
    PutLen(out, 14, entry);
  }
  for (const ir::Function& fn : model.functions) {
    Status s = EncodeFunction(fn, &msg);
    if (!s.ok()) return s.WithContext(fmt::format("function '{}'", fn.name));
    PutLen(out, 25, msg);
  }
  return out;
}

std::string DisplayName(const ir::Model& model) { return model.path.empty() ? "model" : model.path; }

}  // namespace

Result<std::string> WriteModelToBytes(const ir::Model& model) {
  try {
    Result<std::string> bytes = EncodeModel(model);
    if (!bytes.ok()) {
      Status s = bytes.status();
      s.WithContext(fmt::format("cannot write {}", DisplayName(model)));
      return s;
    }
    return bytes;
  } catch (const std::bad_alloc&) {
    return OutOfMemoryError("cannot write {}: out of memory while encoding", DisplayName(model));
  } catch (const std::exception& e) {
    return InternalError("cannot write {}: {}", DisplayName(model), e.what());
  }
}

Status WriteModel(const ir::Model& model, const std::string& path) {
  VIGIL_ASSIGN_OR_RETURN(std::string bytes, WriteModelToBytes(model));
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  if (!file) return EnvironmentError("cannot open '{}' for writing: {}", path, std::strerror(errno));
  file.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  file.close();
  if (!file) return EnvironmentError("cannot write '{}' ({} bytes): {}", path, bytes.size(), std::strerror(errno));
  return Status::Ok();
}

}  // namespace vigil::onnx
