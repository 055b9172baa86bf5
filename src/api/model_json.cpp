#include "api/model_json.h"

#include <unordered_set>

namespace vigil::api {

using nlohmann::json;

static json ShapeJson(const ir::Shape& shape) {
  if (!shape.rank_known) return nullptr;
  json dims = json::array();
  for (const ir::Dim& d : shape.dims) {
    if (d.value) dims.push_back(*d.value);
    else if (!d.param.empty()) dims.push_back(d.param);
    else dims.push_back(nullptr);
  }
  return dims;
}

static std::string KindName(ir::TypeInfo::Kind kind) {
  switch (kind) {
    case ir::TypeInfo::Kind::kTensor: return "tensor";
    case ir::TypeInfo::Kind::kSparseTensor: return "sparse_tensor";
    case ir::TypeInfo::Kind::kSequence: return "sequence";
    case ir::TypeInfo::Kind::kOptional: return "optional";
    case ir::TypeInfo::Kind::kMap: return "map";
    case ir::TypeInfo::Kind::kUnknown: break;
  }
  return "unknown";
}

json ValueInfoToJson(const ir::ValueInfo& vi) {
  json j = {{"name", vi.name}};
  if (!vi.has_type) {
    j["type"] = "unknown";
    j["dtype"] = nullptr;
    j["shape"] = nullptr;
    return j;
  }
  j["type"] = KindName(vi.type.kind);
  j["type_text"] = ir::TypeToString(vi.type);  // "float32[N,3,224,224]", as text output shows it
  const ir::TypeInfo* t = &vi.type;
  if (t->kind == ir::TypeInfo::Kind::kTensor || t->kind == ir::TypeInfo::Kind::kSparseTensor) {
    j["dtype"] = std::string(ir::DataTypeName(t->elem_type));
    j["shape"] = ShapeJson(t->shape);
  } else {
    j["dtype"] = nullptr;
    j["shape"] = nullptr;
    j["element_type"] = ir::TypeToString(*t);
  }
  return j;
}

json ModelInterfaceJson(const ir::Model& model) {
  json j;
  std::unordered_set<std::string> initialized;
  for (const ir::Tensor& t : model.graph.initializers) initialized.insert(t.name);
  json inputs = json::array();
  for (const ir::ValueInfo& vi : model.graph.inputs) {
    json in = ValueInfoToJson(vi);
    if (initialized.count(vi.name)) in["has_initializer"] = true;
    inputs.push_back(in);
  }
  json outputs = json::array();
  for (const ir::ValueInfo& vi : model.graph.outputs) outputs.push_back(ValueInfoToJson(vi));
  json opsets = json::object();
  for (const ir::OpsetImport& o : model.opset_imports) opsets[o.domain] = o.version;
  j["inputs"] = inputs;
  j["outputs"] = outputs;
  j["opsets"] = opsets;
  j["ir_version"] = model.ir_version;
  j["producer"] = model.producer_name;
  j["producer_version"] = model.producer_version;
  j["graph_name"] = model.graph.name;
  return j;
}

}  // namespace vigil::api
