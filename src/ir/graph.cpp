#include "ir/graph.h"

#include <fmt/format.h>

namespace vigil::ir {

Attribute IntAttribute(std::string name, int64_t v) {
  Attribute a;
  a.name = std::move(name);
  a.type = AttributeType::kInt;
  a.i = v;
  return a;
}

Attribute IntsAttribute(std::string name, std::vector<int64_t> v) {
  Attribute a;
  a.name = std::move(name);
  a.type = AttributeType::kInts;
  a.ints = std::move(v);
  return a;
}

Attribute FloatAttribute(std::string name, float v) {
  Attribute a;
  a.name = std::move(name);
  a.type = AttributeType::kFloat;
  a.f = v;
  return a;
}

Attribute StringAttribute(std::string name, std::string v) {
  Attribute a;
  a.name = std::move(name);
  a.type = AttributeType::kString;
  a.s = std::move(v);
  return a;
}

std::string_view AttributeTypeName(AttributeType type) {
  switch (type) {
    case AttributeType::kUndefined: return "UNDEFINED";
    case AttributeType::kFloat: return "FLOAT";
    case AttributeType::kInt: return "INT";
    case AttributeType::kString: return "STRING";
    case AttributeType::kTensor: return "TENSOR";
    case AttributeType::kGraph: return "GRAPH";
    case AttributeType::kFloats: return "FLOATS";
    case AttributeType::kInts: return "INTS";
    case AttributeType::kStrings: return "STRINGS";
    case AttributeType::kTensors: return "TENSORS";
    case AttributeType::kGraphs: return "GRAPHS";
    case AttributeType::kSparseTensor: return "SPARSE_TENSOR";
    case AttributeType::kSparseTensors: return "SPARSE_TENSORS";
    case AttributeType::kTypeProto: return "TYPE_PROTO";
    case AttributeType::kTypeProtos: return "TYPE_PROTOS";
  }
  return "UNKNOWN";
}

const Attribute* Node::FindAttribute(std::string_view attr_name) const {
  for (const Attribute& a : attributes) {
    if (a.name == attr_name) return &a;
  }
  return nullptr;
}

std::string Node::Describe(size_t index) const {
  if (!name.empty()) return fmt::format("{} '{}'", op_type, name);
  return fmt::format("{} (node #{})", op_type, index);
}

static bool IsDefaultDomain(std::string_view d) { return d.empty() || d == "ai.onnx"; }

int64_t Model::OpsetVersion(std::string_view domain) const {
  for (const OpsetImport& o : opset_imports) {
    if (o.domain == domain || (IsDefaultDomain(o.domain) && IsDefaultDomain(domain))) return o.version;
  }
  return -1;
}

}  // namespace vigil::ir
