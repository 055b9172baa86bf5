// Common-subexpression elimination (see eliminate_common.h).
#include "ir/eliminate_common.h"

#include <cstring>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "ir/extract_subgraph.h"  // ImplicitInputs
#include "ir/validate.h"          // TopologicalOrder, RemoveDeadAndSort

namespace vigil::ir {
namespace {

constexpr size_t kMaxComparedBytes = 256;

bool IsRandomOrDropout(const Node& n) {
  static const std::unordered_set<std::string_view> kOps = {"RandomNormal",     "RandomUniform", "RandomNormalLike",
                                                            "RandomUniformLike", "Multinomial",   "Bernoulli",
                                                            "Dropout"};
  return (n.domain.empty() || n.domain == "ai.onnx") && kOps.count(n.op_type) > 0;
}

// Appends `s` with its length, so that no two sequences of fields run
// together into the same key.
void Field(std::string& key, std::string_view s) {
  key += std::to_string(s.size());
  key += ':';
  key += s;
}

template <typename T>
void Bits(std::string& key, const T& v) {
  Field(key, std::string_view(reinterpret_cast<const char*>(&v), sizeof v));
}

// A small constant's identity: dtype, dims and bytes; false when it is too
// large (or not dense) to compare.
bool ConstantKey(const Tensor& t, std::string& key) {
  if (!t.HasDenseBytes() || t.bytes.size() > kMaxComparedBytes) return false;
  Bits(key, static_cast<int32_t>(t.dtype));
  Bits(key, t.dims.size());
  for (int64_t d : t.dims) Bits(key, d);
  Field(key, std::string_view(reinterpret_cast<const char*>(t.bytes.data()), t.bytes.size()));
  return true;
}

// The attributes as a key (in the node's order, which exporters keep
// stable); false when one cannot be compared (a subgraph, a large tensor).
bool AttributesKey(const Node& n, std::string& key) {
  Bits(key, n.attributes.size());
  for (const Attribute& a : n.attributes) {
    Field(key, a.name);
    Bits(key, static_cast<int32_t>(a.type));
    if (!a.ref_attr_name.empty() || a.g || !a.graphs.empty() || !a.tensors.empty() || !a.sparse_tensors.empty() ||
        !a.type_protos.empty() || a.type == AttributeType::kSparseTensor || a.type == AttributeType::kTypeProto) {
      return false;
    }
    switch (a.type) {
      case AttributeType::kFloat: Bits(key, a.f); break;
      case AttributeType::kInt: Bits(key, a.i); break;
      case AttributeType::kString: Field(key, a.s); break;
      case AttributeType::kTensor:
        if (!ConstantKey(a.t, key)) return false;
        break;
      case AttributeType::kFloats:
        Bits(key, a.floats.size());
        for (float f : a.floats) Bits(key, f);
        break;
      case AttributeType::kInts:
        Bits(key, a.ints.size());
        for (int64_t i : a.ints) Bits(key, i);
        break;
      case AttributeType::kStrings:
        Bits(key, a.strings.size());
        for (const std::string& s : a.strings) Field(key, s);
        break;
      default: return false;
    }
  }
  return true;
}

}  // namespace

Result<size_t> EliminateCommonSubexpressions(Model& model) {
  Graph& g = model.graph;
  // Small constants stand for their contents: the first initializer with
  // given contents names them all.
  std::unordered_set<std::string> graph_inputs;
  for (const ValueInfo& v : g.inputs) graph_inputs.insert(v.name);
  std::unordered_map<std::string, std::string> alias;  // small constant -> the first equal one
  {
    std::unordered_map<std::string, std::string> first_with;
    for (const Tensor& t : g.initializers) {
      std::string key;
      if (graph_inputs.count(t.name) || !ConstantKey(t, key)) continue;
      auto [it, fresh] = first_with.emplace(std::move(key), t.name);
      if (!fresh) alias.emplace(t.name, it->second);
    }
  }
  std::unordered_set<std::string> pinned;  // graph outputs and values read inside subgraphs
  for (const ValueInfo& v : g.outputs) pinned.insert(v.name);
  for (const Node& n : g.nodes) {
    for (const std::string& v : ImplicitInputs(n)) pinned.insert(v);
  }
  auto canonical = [&](const std::string& v) -> const std::string& {
    auto it = alias.find(v);
    return it == alias.end() ? v : it->second;
  };
  std::unordered_map<std::string, std::string> renamed;  // a dropped node's output -> the kept one

  VIGIL_ASSIGN_OR_RETURN(std::vector<size_t> order, TopologicalOrder(g));
  std::unordered_map<std::string, size_t> first_node;  // key -> node index
  std::vector<bool> remove(g.nodes.size(), false);
  size_t dropped = 0;
  for (size_t i : order) {
    Node& n = g.nodes[i];
    // Reads of dropped nodes' outputs go to the nodes they duplicated.
    for (std::string& in : n.inputs) {
      auto it = renamed.find(in);
      if (it != renamed.end()) in = it->second;
    }
    if (n.outputs.empty() || IsRandomOrDropout(n)) continue;
    std::string key;
    Field(key, n.domain);
    Field(key, n.op_type);
    Bits(key, n.inputs.size());
    for (const std::string& in : n.inputs) Field(key, canonical(in));
    Bits(key, n.outputs.size());
    for (const std::string& out : n.outputs) key += out.empty() ? '-' : '+';
    if (!AttributesKey(n, key)) continue;
    auto [it, fresh] = first_node.emplace(std::move(key), i);
    if (fresh) continue;
    bool keep = false;
    for (const std::string& out : n.outputs) keep = keep || (!out.empty() && pinned.count(out));
    if (keep) continue;
    const Node& earlier = g.nodes[it->second];
    for (size_t k = 0; k < n.outputs.size(); ++k) {
      if (!n.outputs[k].empty()) renamed.emplace(n.outputs[k], earlier.outputs[k]);
    }
    remove[i] = true;
    ++dropped;
  }
  if (dropped > 0) VIGIL_RETURN_IF_ERROR(RemoveDeadAndSort(g, remove));
  return dropped;
}

}  // namespace vigil::ir
