#include "ir/graph_index.h"

#include <cstring>

#include "vigil/float16.h"
#include "ir/layout_nhwc.h"  // kVigilDomain, kVigilOpsetVersion

namespace vigil::ir {

GraphIndex IndexGraph(const Graph& g) {
  GraphIndex idx;
  std::unordered_set<std::string> inputs;
  for (const ValueInfo& v : g.inputs) inputs.insert(v.name);
  for (const Tensor& t : g.initializers) {
    if (!inputs.count(t.name)) idx.constants[t.name] = &t;
  }
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    for (const std::string& in : g.nodes[i].inputs) {
      if (!in.empty()) idx.consumers[in].push_back(i);
    }
  }
  for (const ValueInfo& v : g.outputs) idx.outputs.insert(v.name);
  return idx;
}

bool IsDefaultOp(const Node& n, const char* op, size_t inputs) {
  return n.op_type == op && (n.domain.empty() || n.domain == "ai.onnx") && n.inputs.size() == inputs &&
         n.outputs.size() == 1;
}

long SoleConsumer(const GraphIndex& idx, const std::string& value) {
  if (idx.outputs.count(value)) return -1;
  auto it = idx.consumers.find(value);
  return it == idx.consumers.end() || it->second.size() != 1 ? -1 : static_cast<long>(it->second[0]);
}

const std::string* OtherOperand(const Node& n, const std::string& value) {
  if (n.inputs[0] == value) return &n.inputs[1];
  if (n.inputs[1] == value) return &n.inputs[0];
  return nullptr;
}

bool IsClipZeroSix(const Node& clip, int64_t opset,
                   const std::function<std::optional<double>(const std::string&)>& scalar) {
  if (clip.op_type != "Clip" || !(clip.domain.empty() || clip.domain == "ai.onnx") || clip.outputs.size() != 1) {
    return false;
  }
  std::optional<double> lo, hi;
  if (opset < 11) {
    const Attribute* mn = clip.FindAttribute("min");
    const Attribute* mx = clip.FindAttribute("max");
    if (mn && mn->type == AttributeType::kFloat) lo = mn->f;
    if (mx && mx->type == AttributeType::kFloat) hi = mx->f;
  } else if (clip.inputs.size() == 3 && !clip.inputs[1].empty() && !clip.inputs[2].empty()) {
    lo = scalar(clip.inputs[1]);
    hi = scalar(clip.inputs[2]);
  }
  return lo && hi && *lo == 0.0 && *hi == 6.0;
}

void DropFusedNodes(Model& model, const std::vector<bool>& remove) {
  Graph& g = model.graph;
  std::vector<Node> kept;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (i >= remove.size() || !remove[i]) kept.push_back(std::move(g.nodes[i]));
  }
  g.nodes = std::move(kept);
  if (model.OpsetVersion(kVigilDomain) < 0) model.opset_imports.push_back({kVigilDomain, kVigilOpsetVersion});
}

std::optional<double> FloatConstant(const GraphIndex& idx, const std::string& name) {
  auto it = idx.constants.find(name);
  if (it == idx.constants.end()) return std::nullopt;
  const Tensor& t = *it->second;
  if (t.ElementCount() != 1u) return std::nullopt;
  switch (t.dtype) {
    case DataType::kFloat32: {
      if (t.bytes.size() != 4) return std::nullopt;
      float v;
      std::memcpy(&v, t.bytes.data(), 4);
      return v;
    }
    case DataType::kFloat64: {
      if (t.bytes.size() != 8) return std::nullopt;
      double v;
      std::memcpy(&v, t.bytes.data(), 8);
      return v;
    }
    case DataType::kFloat16:
    case DataType::kBfloat16: {
      if (t.bytes.size() != 2) return std::nullopt;
      uint16_t h;
      std::memcpy(&h, t.bytes.data(), 2);
      return t.dtype == DataType::kFloat16 ? Float16ToFloat(h) : Bfloat16ToFloat(h);
    }
    default: return std::nullopt;
  }
}

}  // namespace vigil::ir
