// The in-memory model: graphs of nodes connected by value names, as in ONNX.
// Produced by the ONNX reader (src/onnx), checked by ir::ValidateModel.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ir/tensor.h"
#include "ir/types.h"

namespace vigil {
class MappedFile;
}

namespace vigil::ir {

struct Graph;

// Numbering follows ONNX's AttributeProto.AttributeType.
enum class AttributeType : int32_t {
  kUndefined = 0,
  kFloat = 1,
  kInt = 2,
  kString = 3,
  kTensor = 4,
  kGraph = 5,
  kFloats = 6,
  kInts = 7,
  kStrings = 8,
  kTensors = 9,
  kGraphs = 10,
  kSparseTensor = 11,
  kSparseTensors = 12,
  kTypeProto = 13,
  kTypeProtos = 14,
};

std::string_view AttributeTypeName(AttributeType type);

struct Attribute {
  std::string name;
  AttributeType type = AttributeType::kUndefined;
  std::string ref_attr_name;  // inside functions: refers to the caller's attribute
  std::string doc_string;

  float f = 0;
  int64_t i = 0;
  std::string s;  // bytes, not necessarily UTF-8
  Tensor t;
  std::shared_ptr<Graph> g;
  SparseTensor sparse_tensor;
  TypeInfo tp;
  std::vector<float> floats;
  std::vector<int64_t> ints;
  std::vector<std::string> strings;
  std::vector<Tensor> tensors;
  std::vector<std::shared_ptr<Graph>> graphs;
  std::vector<SparseTensor> sparse_tensors;
  std::vector<TypeInfo> type_protos;
};

// Attributes of one value, for passes that write nodes.
Attribute IntAttribute(std::string name, int64_t v);
Attribute IntsAttribute(std::string name, std::vector<int64_t> v);
Attribute FloatAttribute(std::string name, float v);
Attribute StringAttribute(std::string name, std::string v);

struct Node {
  std::string name;
  std::string op_type;
  std::string domain;    // "" and "ai.onnx" are the default domain
  std::string overload;  // for model-local functions
  std::vector<std::string> inputs;   // "" marks an omitted optional input
  std::vector<std::string> outputs;  // "" marks an omitted optional output
  std::vector<Attribute> attributes;
  std::string doc_string;

  const Attribute* FindAttribute(std::string_view attr_name) const;
  // "Conv 'conv1'" or "Conv (node #3)" when unnamed; used in messages.
  std::string Describe(size_t index) const;
};

struct ValueInfo {
  std::string name;
  bool has_type = false;
  TypeInfo type;
  std::string doc_string;
};

struct Graph {
  std::string name;
  std::vector<Node> nodes;
  std::vector<Tensor> initializers;
  std::vector<SparseTensor> sparse_initializers;
  std::vector<ValueInfo> inputs;
  std::vector<ValueInfo> outputs;
  std::vector<ValueInfo> value_infos;
  std::string doc_string;
};

struct OpsetImport {
  std::string domain;  // "" is the default ONNX domain
  int64_t version = 0;
};

// A model-local function (FunctionProto).
struct Function {
  std::string name;
  std::string domain;
  std::string overload;
  std::vector<std::string> inputs;
  std::vector<std::string> outputs;
  std::vector<std::string> attributes;        // attribute names without defaults
  std::vector<Attribute> attribute_defaults;  // attribute_proto
  std::vector<Node> nodes;
  std::vector<OpsetImport> opset_imports;
  std::vector<ValueInfo> value_infos;
  std::string doc_string;
};

struct Model {
  int64_t ir_version = 0;
  std::vector<OpsetImport> opset_imports;
  std::string producer_name;
  std::string producer_version;
  std::string domain;
  int64_t model_version = 0;
  std::string doc_string;
  std::vector<std::pair<std::string, std::string>> metadata_props;
  Graph graph;
  std::vector<Function> functions;

  std::string path;  // the file it was read from, for messages
  // The mapped model file; initializers may point into it.
  std::shared_ptr<const MappedFile> file;

  // Version imported for `domain` ("" and "ai.onnx" are the same), or -1.
  int64_t OpsetVersion(std::string_view domain) const;
};

}  // namespace vigil::ir
