// Test-only encoder for ONNX model bytes: a tiny protobuf wire-format writer
// plus builders for the ONNX messages tests need. Header-only, no protobuf
// library. Every builder returns the *serialized message body* (a
// std::string of bytes), so messages nest by passing one builder's result to
// another, and a test can splice in arbitrary (even malformed) bytes.
//
//   using namespace vigil::testing;
//   std::string graph = MakeGraph("g", {MakeNode("Relu", {"x"}, {"y"})},
//                                 {MakeValueInfo("x", 1, {1, "N"})},
//                                 {MakeValueInfo("y", 1, {1, "N"})});
//   std::string model = MakeModel(graph, {{"", 17}});
//   WriteFile(dir / "m.onnx", model);
//
// Field numbers are those of onnx/onnx.proto; they are listed in the `field`
// namespaces below so tests can also write fields by hand.
#pragma once

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace vigil::testing {

// Protobuf wire types.
enum class Wire : uint32_t { kVarint = 0, kFixed64 = 1, kLen = 2, kStartGroup = 3, kEndGroup = 4, kFixed32 = 5 };

// Field numbers from onnx.proto.
namespace field {
namespace model {
inline constexpr uint32_t kIrVersion = 1, kProducerName = 2, kProducerVersion = 3, kDomain = 4,
                          kModelVersion = 5, kDocString = 6, kGraph = 7, kOpsetImport = 8,
                          kMetadataProps = 14, kFunctions = 25;
}
namespace opset {
inline constexpr uint32_t kDomain = 1, kVersion = 2;
}
namespace entry {  // StringStringEntryProto
inline constexpr uint32_t kKey = 1, kValue = 2;
}
namespace graph {
inline constexpr uint32_t kNode = 1, kName = 2, kInitializer = 5, kDocString = 10, kInput = 11,
                          kOutput = 12, kValueInfo = 13, kSparseInitializer = 15;
}
namespace node {
inline constexpr uint32_t kInput = 1, kOutput = 2, kName = 3, kOpType = 4, kAttribute = 5,
                          kDocString = 6, kDomain = 7, kOverload = 8;
}
namespace attr {
inline constexpr uint32_t kName = 1, kF = 2, kI = 3, kS = 4, kT = 5, kG = 6, kFloats = 7, kInts = 8,
                          kStrings = 9, kTensors = 10, kGraphs = 11, kDocString = 13, kTp = 14,
                          kTypeProtos = 15, kType = 20, kRefAttrName = 21, kSparseTensor = 22,
                          kSparseTensors = 23;
}
namespace tensor {
inline constexpr uint32_t kDims = 1, kDataType = 2, kSegment = 3, kFloatData = 4, kInt32Data = 5,
                          kStringData = 6, kInt64Data = 7, kName = 8, kRawData = 9, kDoubleData = 10,
                          kUint64Data = 11, kDocString = 12, kExternalData = 13, kDataLocation = 14;
}
namespace sparse {
inline constexpr uint32_t kValues = 1, kIndices = 2, kDims = 3;
}
namespace value_info {
inline constexpr uint32_t kName = 1, kType = 2, kDocString = 3;
}
namespace type {
inline constexpr uint32_t kTensorType = 1, kSequenceType = 4, kMapType = 5, kDenotation = 6,
                          kSparseTensorType = 8, kOptionalType = 9;
// Inside TypeProto.Tensor / SparseTensor: elem_type = 1, shape = 2.
// Inside Sequence / Optional: elem_type = 1. Inside Map: key_type = 1, value_type = 2.
}
namespace shape {
inline constexpr uint32_t kDim = 1;  // TensorShapeProto
inline constexpr uint32_t kDimValue = 1, kDimParam = 2, kDenotation = 3;  // Dimension
}
namespace function {
inline constexpr uint32_t kName = 1, kInput = 4, kOutput = 5, kAttribute = 6, kNode = 7,
                          kDocString = 8, kOpsetImport = 9, kDomain = 10, kAttributeProto = 11,
                          kValueInfo = 12, kOverload = 13;
}
}  // namespace field

// Appends protobuf fields to a byte string. Methods return *this to chain.
class ProtoWriter {
 public:
  ProtoWriter& RawVarint(uint64_t v) {
    while (v >= 0x80) {
      buf_.push_back(static_cast<char>((v & 0x7F) | 0x80));
      v >>= 7;
    }
    buf_.push_back(static_cast<char>(v));
    return *this;
  }
  ProtoWriter& Tag(uint32_t field_number, Wire wire) {
    return RawVarint((uint64_t{field_number} << 3) | static_cast<uint32_t>(wire));
  }
  // Appends bytes verbatim (for hand-made malformed input).
  ProtoWriter& Raw(std::string_view bytes) {
    buf_.append(bytes);
    return *this;
  }
  // int32/int64/enum/bool fields; negative values take 10 bytes as in protobuf.
  ProtoWriter& Varint(uint32_t f, int64_t v) { return Tag(f, Wire::kVarint).RawVarint(static_cast<uint64_t>(v)); }
  ProtoWriter& Fixed32(uint32_t f, uint32_t v) {
    Tag(f, Wire::kFixed32);
    for (int i = 0; i < 4; ++i) buf_.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
    return *this;
  }
  ProtoWriter& Fixed64(uint32_t f, uint64_t v) {
    Tag(f, Wire::kFixed64);
    for (int i = 0; i < 8; ++i) buf_.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
    return *this;
  }
  ProtoWriter& Float(uint32_t f, float v) {
    uint32_t u;
    std::memcpy(&u, &v, 4);
    return Fixed32(f, u);
  }
  ProtoWriter& Double(uint32_t f, double v) {
    uint64_t u;
    std::memcpy(&u, &v, 8);
    return Fixed64(f, u);
  }
  // string, bytes and embedded messages (pass another builder's result).
  ProtoWriter& Bytes(uint32_t f, std::string_view v) {
    Tag(f, Wire::kLen).RawVarint(v.size());
    buf_.append(v);
    return *this;
  }
  ProtoWriter& Message(uint32_t f, const std::string& body) { return Bytes(f, body); }
  // Repeated scalars, packed (one length-delimited field) ...
  ProtoWriter& PackedVarints(uint32_t f, const std::vector<int64_t>& v) {
    ProtoWriter inner;
    for (int64_t x : v) inner.RawVarint(static_cast<uint64_t>(x));
    return Bytes(f, inner.str());
  }
  ProtoWriter& PackedFloats(uint32_t f, const std::vector<float>& v) {
    std::string b(v.size() * 4, '\0');
    if (!v.empty()) std::memcpy(b.data(), v.data(), b.size());  // test hosts are little-endian
    return Bytes(f, b);
  }
  ProtoWriter& PackedDoubles(uint32_t f, const std::vector<double>& v) {
    std::string b(v.size() * 8, '\0');
    if (!v.empty()) std::memcpy(b.data(), v.data(), b.size());
    return Bytes(f, b);
  }
  // ... or unpacked (one field per element), which protobuf readers must accept too.
  ProtoWriter& UnpackedVarints(uint32_t f, const std::vector<int64_t>& v) {
    for (int64_t x : v) Varint(f, x);
    return *this;
  }
  ProtoWriter& UnpackedFloats(uint32_t f, const std::vector<float>& v) {
    for (float x : v) Float(f, x);
    return *this;
  }
  ProtoWriter& UnpackedDoubles(uint32_t f, const std::vector<double>& v) {
    for (double x : v) Double(f, x);
    return *this;
  }
  ProtoWriter& Strings(uint32_t f, const std::vector<std::string>& v) {
    for (const auto& s : v) Bytes(f, s);
    return *this;
  }
  ProtoWriter& Messages(uint32_t f, const std::vector<std::string>& v) { return Strings(f, v); }

  const std::string& str() const { return buf_; }
  operator const std::string&() const { return buf_; }  // NOLINT: builders nest freely

 private:
  std::string buf_;
};

// ---- Tensors -------------------------------------------------------------

// TensorProto header: name, data_type (TensorProto.DataType number), dims.
// Append a data field (raw_data, float_data, ...) to the result.
inline ProtoWriter MakeTensorHeader(const std::string& name, int32_t dtype, const std::vector<int64_t>& dims) {
  ProtoWriter w;
  w.UnpackedVarints(field::tensor::kDims, dims);
  w.Varint(field::tensor::kDataType, dtype);
  if (!name.empty()) w.Bytes(field::tensor::kName, name);
  return w;
}

// TensorProto with raw_data (little-endian element bytes).
inline std::string MakeTensor(const std::string& name, int32_t dtype, const std::vector<int64_t>& dims,
                              std::string_view raw) {
  return MakeTensorHeader(name, dtype, dims).Bytes(field::tensor::kRawData, raw);
}

// Raw little-endian bytes of a vector of trivially copyable values.
template <typename T>
std::string RawBytes(const std::vector<T>& v) {
  std::string b(v.size() * sizeof(T), '\0');
  if (!v.empty()) std::memcpy(b.data(), v.data(), b.size());
  return b;
}

// float32 tensor with raw_data.
inline std::string MakeFloatTensor(const std::string& name, const std::vector<int64_t>& dims,
                                   const std::vector<float>& values) {
  return MakeTensor(name, 1, dims, RawBytes(values));
}

// TensorProto whose data lives in an external file.
inline std::string MakeExternalTensor(const std::string& name, int32_t dtype, const std::vector<int64_t>& dims,
                                      const std::vector<std::pair<std::string, std::string>>& entries) {
  ProtoWriter w = MakeTensorHeader(name, dtype, dims);
  for (const auto& [k, v] : entries) {
    w.Message(field::tensor::kExternalData,
              ProtoWriter().Bytes(field::entry::kKey, k).Bytes(field::entry::kValue, v));
  }
  return w.Varint(field::tensor::kDataLocation, 1);
}

inline std::string MakeSparseTensor(const std::string& values, const std::string& indices,
                                    const std::vector<int64_t>& dims) {
  return ProtoWriter()
      .Message(field::sparse::kValues, values)
      .Message(field::sparse::kIndices, indices)
      .UnpackedVarints(field::sparse::kDims, dims);
}

// ---- Types ---------------------------------------------------------------

// One dimension: a size, or a symbolic name.
using DimSpec = std::variant<int64_t, std::string>;

struct Dims {
  std::vector<DimSpec> dims;
  Dims() = default;                                     // {}: a scalar
  Dims(std::initializer_list<DimSpec> d) : dims(d) {}  // NOLINT: {1, "N", 224}
  Dims(std::vector<DimSpec> d) : dims(std::move(d)) {}  // NOLINT
  Dims(std::initializer_list<int> d) {                  // NOLINT: {1, 3, 224}
    for (int x : d) dims.emplace_back(int64_t{x});
  }
};

inline std::string MakeShape(const Dims& d) {
  ProtoWriter shape;
  for (const auto& dim : d.dims) {
    ProtoWriter dw;
    if (std::holds_alternative<int64_t>(dim)) {
      dw.Varint(field::shape::kDimValue, std::get<int64_t>(dim));
    } else {
      dw.Bytes(field::shape::kDimParam, std::get<std::string>(dim));
    }
    shape.Message(field::shape::kDim, dw);
  }
  return shape;
}

// TypeProto for a tensor; `rank_known == false` omits the shape.
inline std::string MakeTensorType(int32_t elem, const Dims& dims, bool rank_known = true) {
  ProtoWriter t;
  t.Varint(1, elem);
  if (rank_known) t.Message(2, MakeShape(dims));
  return ProtoWriter().Message(field::type::kTensorType, t);
}
inline std::string MakeSequenceType(const std::string& elem_type) {
  return ProtoWriter().Message(field::type::kSequenceType, ProtoWriter().Message(1, elem_type));
}
inline std::string MakeOptionalType(const std::string& elem_type) {
  return ProtoWriter().Message(field::type::kOptionalType, ProtoWriter().Message(1, elem_type));
}
inline std::string MakeMapType(int32_t key_elem, const std::string& value_type) {
  return ProtoWriter().Message(field::type::kMapType, ProtoWriter().Varint(1, key_elem).Message(2, value_type));
}
inline std::string MakeSparseTensorType(int32_t elem, const Dims& dims) {
  return ProtoWriter().Message(field::type::kSparseTensorType,
                               ProtoWriter().Varint(1, elem).Message(2, MakeShape(dims)));
}

inline std::string MakeValueInfoOfType(const std::string& name, const std::string& type_proto) {
  return ProtoWriter().Bytes(field::value_info::kName, name).Message(field::value_info::kType, type_proto);
}
// ValueInfoProto of a tensor: MakeValueInfo("x", 1 /*float*/, {"N", 3, 224, 224}).
inline std::string MakeValueInfo(const std::string& name, int32_t elem, const Dims& dims) {
  return MakeValueInfoOfType(name, MakeTensorType(elem, dims));
}

// ---- Attributes ----------------------------------------------------------

inline ProtoWriter AttrHeader(const std::string& name, int32_t type) {
  ProtoWriter w;
  w.Bytes(field::attr::kName, name);
  if (type != 0) w.Varint(field::attr::kType, type);
  return w;
}
inline std::string AttrFloat(const std::string& n, float v) { return AttrHeader(n, 1).Float(field::attr::kF, v); }
inline std::string AttrInt(const std::string& n, int64_t v) { return AttrHeader(n, 2).Varint(field::attr::kI, v); }
inline std::string AttrString(const std::string& n, const std::string& v) {
  return AttrHeader(n, 3).Bytes(field::attr::kS, v);
}
inline std::string AttrTensor(const std::string& n, const std::string& t) {
  return AttrHeader(n, 4).Message(field::attr::kT, t);
}
inline std::string AttrGraph(const std::string& n, const std::string& g) {
  return AttrHeader(n, 5).Message(field::attr::kG, g);
}
// Lists are written unpacked, as protobuf's proto2 serializer does for ONNX.
inline std::string AttrFloats(const std::string& n, const std::vector<float>& v) {
  return AttrHeader(n, 6).UnpackedFloats(field::attr::kFloats, v);
}
inline std::string AttrInts(const std::string& n, const std::vector<int64_t>& v) {
  return AttrHeader(n, 7).UnpackedVarints(field::attr::kInts, v);
}
inline std::string AttrStrings(const std::string& n, const std::vector<std::string>& v) {
  return AttrHeader(n, 8).Strings(field::attr::kStrings, v);
}
inline std::string AttrTensors(const std::string& n, const std::vector<std::string>& v) {
  return AttrHeader(n, 9).Messages(field::attr::kTensors, v);
}
inline std::string AttrGraphs(const std::string& n, const std::vector<std::string>& v) {
  return AttrHeader(n, 10).Messages(field::attr::kGraphs, v);
}
inline std::string AttrSparseTensor(const std::string& n, const std::string& st) {
  return AttrHeader(n, 11).Message(field::attr::kSparseTensor, st);
}
inline std::string AttrSparseTensors(const std::string& n, const std::vector<std::string>& v) {
  return AttrHeader(n, 12).Messages(field::attr::kSparseTensors, v);
}
inline std::string AttrTypeProto(const std::string& n, const std::string& tp) {
  return AttrHeader(n, 13).Message(field::attr::kTp, tp);
}
inline std::string AttrTypeProtos(const std::string& n, const std::vector<std::string>& v) {
  return AttrHeader(n, 14).Messages(field::attr::kTypeProtos, v);
}
// Inside a function body: refers to the caller's attribute `ref`.
inline std::string AttrRef(const std::string& n, int32_t type, const std::string& ref) {
  return AttrHeader(n, type).Bytes(field::attr::kRefAttrName, ref);
}

// ---- Nodes, graphs, functions, models ------------------------------------

struct NodeOptions {
  std::string name;
  std::string domain;
  std::string overload;
  std::string doc_string;
};

inline std::string MakeNode(const std::string& op, const std::vector<std::string>& inputs,
                            const std::vector<std::string>& outputs, const std::vector<std::string>& attrs = {},
                            const NodeOptions& opt = {}) {
  ProtoWriter w;
  w.Strings(field::node::kInput, inputs).Strings(field::node::kOutput, outputs);
  if (!opt.name.empty()) w.Bytes(field::node::kName, opt.name);
  w.Bytes(field::node::kOpType, op);
  w.Messages(field::node::kAttribute, attrs);
  if (!opt.doc_string.empty()) w.Bytes(field::node::kDocString, opt.doc_string);
  if (!opt.domain.empty()) w.Bytes(field::node::kDomain, opt.domain);
  if (!opt.overload.empty()) w.Bytes(field::node::kOverload, opt.overload);
  return w;
}

struct GraphParts {
  std::vector<std::string> initializers;         // TensorProto bodies
  std::vector<std::string> sparse_initializers;  // SparseTensorProto bodies
  std::vector<std::string> value_infos;          // ValueInfoProto bodies
  std::string doc_string;
};

inline std::string MakeGraph(const std::string& name, const std::vector<std::string>& nodes,
                             const std::vector<std::string>& inputs, const std::vector<std::string>& outputs,
                             const GraphParts& parts = {}) {
  ProtoWriter w;
  w.Messages(field::graph::kNode, nodes).Bytes(field::graph::kName, name);
  w.Messages(field::graph::kInitializer, parts.initializers);
  if (!parts.doc_string.empty()) w.Bytes(field::graph::kDocString, parts.doc_string);
  w.Messages(field::graph::kInput, inputs).Messages(field::graph::kOutput, outputs);
  w.Messages(field::graph::kValueInfo, parts.value_infos);
  w.Messages(field::graph::kSparseInitializer, parts.sparse_initializers);
  return w;
}

using Opsets = std::vector<std::pair<std::string, int64_t>>;

inline std::string MakeOpset(const std::string& domain, int64_t version) {
  ProtoWriter w;
  if (!domain.empty()) w.Bytes(field::opset::kDomain, domain);
  return w.Varint(field::opset::kVersion, version);
}

struct FunctionParts {
  std::vector<std::string> attributes;        // names without defaults
  std::vector<std::string> attribute_protos;  // AttributeProto bodies (defaults)
  std::vector<std::string> value_infos;
  std::string overload;
  std::string doc_string;
};

inline std::string MakeFunction(const std::string& name, const std::string& domain,
                                const std::vector<std::string>& inputs, const std::vector<std::string>& outputs,
                                const std::vector<std::string>& nodes, const Opsets& opsets,
                                const FunctionParts& parts = {}) {
  ProtoWriter w;
  w.Bytes(field::function::kName, name)
      .Strings(field::function::kInput, inputs)
      .Strings(field::function::kOutput, outputs)
      .Strings(field::function::kAttribute, parts.attributes)
      .Messages(field::function::kNode, nodes);
  if (!parts.doc_string.empty()) w.Bytes(field::function::kDocString, parts.doc_string);
  for (const auto& [d, v] : opsets) w.Message(field::function::kOpsetImport, MakeOpset(d, v));
  w.Bytes(field::function::kDomain, domain);
  w.Messages(field::function::kAttributeProto, parts.attribute_protos);
  w.Messages(field::function::kValueInfo, parts.value_infos);
  if (!parts.overload.empty()) w.Bytes(field::function::kOverload, parts.overload);
  return w;
}

struct ModelParts {
  int64_t ir_version = 9;
  std::string producer_name = "vigil-tests";
  std::string producer_version;
  std::string domain;
  int64_t model_version = 0;
  std::string doc_string;
  std::vector<std::pair<std::string, std::string>> metadata_props;
  std::vector<std::string> functions;  // FunctionProto bodies
};

inline std::string MakeModel(const std::string& graph, const Opsets& opsets = {{"", 17}},
                             const ModelParts& parts = {}) {
  ProtoWriter w;
  w.Varint(field::model::kIrVersion, parts.ir_version);
  if (!parts.producer_name.empty()) w.Bytes(field::model::kProducerName, parts.producer_name);
  if (!parts.producer_version.empty()) w.Bytes(field::model::kProducerVersion, parts.producer_version);
  if (!parts.domain.empty()) w.Bytes(field::model::kDomain, parts.domain);
  if (parts.model_version != 0) w.Varint(field::model::kModelVersion, parts.model_version);
  if (!parts.doc_string.empty()) w.Bytes(field::model::kDocString, parts.doc_string);
  w.Message(field::model::kGraph, graph);
  for (const auto& [d, v] : opsets) w.Message(field::model::kOpsetImport, MakeOpset(d, v));
  for (const auto& [k, v] : parts.metadata_props) {
    w.Message(field::model::kMetadataProps, ProtoWriter().Bytes(field::entry::kKey, k).Bytes(field::entry::kValue, v));
  }
  w.Messages(field::model::kFunctions, parts.functions);
  return w;
}

// A small valid model: y = Relu(x) with x, y float32[1, "N"] and one initializer.
inline std::string MakeTinyModel() {
  std::string g = MakeGraph("tiny", {MakeNode("Add", {"x", "w"}, {"s"}, {}, {.name = "add"}),
                                     MakeNode("Relu", {"s"}, {"y"}, {AttrInt("unused", 1)})},
                            {MakeValueInfo("x", 1, {1, "N"})}, {MakeValueInfo("y", 1, {1, "N"})},
                            {.initializers = {MakeFloatTensor("w", {1, 2}, {0.5f, -1.0f})}});
  return MakeModel(g);
}

// ---- Files ---------------------------------------------------------------

inline std::span<const uint8_t> AsBytes(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

// Writes `bytes` to `path` (creating parent directories); throws on failure,
// which GoogleTest reports as a test error.
inline void WriteFile(const std::filesystem::path& path, std::string_view bytes) {
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

}  // namespace vigil::testing
