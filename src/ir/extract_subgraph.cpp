#include "ir/extract_subgraph.h"

#include <set>
#include <unordered_set>

#include <fmt/format.h>

namespace vigil::ir {
namespace {

using NameSet = std::unordered_set<std::string>;

void CollectGraphFreeNames(const Graph& g, std::vector<std::string>& out, NameSet& seen);

void CollectNodeFreeNames(const Node& node, std::vector<std::string>& out, NameSet& seen) {
  for (const Attribute& a : node.attributes) {
    if (a.g) CollectGraphFreeNames(*a.g, out, seen);
    for (const auto& sub : a.graphs) {
      if (sub) CollectGraphFreeNames(*sub, out, seen);
    }
  }
}

// Names a subgraph uses but does not define, in order of first use.
void CollectGraphFreeNames(const Graph& g, std::vector<std::string>& out, NameSet& seen) {
  NameSet local;
  for (const ValueInfo& vi : g.inputs) local.insert(vi.name);
  for (const Tensor& t : g.initializers) local.insert(t.name);
  for (const SparseTensor& t : g.sparse_initializers) local.insert(t.values.name);
  for (const Node& n : g.nodes) {
    for (const std::string& o : n.outputs) local.insert(o);
  }
  std::vector<std::string> used;
  NameSet used_seen;
  for (const Node& n : g.nodes) {
    for (const std::string& i : n.inputs) {
      if (!i.empty() && used_seen.insert(i).second) used.push_back(i);
    }
    CollectNodeFreeNames(n, used, used_seen);
  }
  for (const ValueInfo& vi : g.outputs) {
    if (used_seen.insert(vi.name).second) used.push_back(vi.name);
  }
  for (const std::string& name : used) {
    if (!local.count(name) && seen.insert(name).second) out.push_back(name);
  }
}

// Every name `node` reads: its explicit inputs, then its implicit ones.
std::vector<std::string> ReadNames(const Node& node) {
  std::vector<std::string> names;
  for (const std::string& in : node.inputs) {
    if (!in.empty()) names.push_back(in);
  }
  for (std::string& in : ImplicitInputs(node)) names.push_back(std::move(in));
  return names;
}

const ValueInfo* FindInfo(const std::vector<ValueInfo>& infos, const std::string& name) {
  for (const ValueInfo& vi : infos) {
    if (vi.name == name && vi.has_type) return &vi;
  }
  return nullptr;
}

// The type of `name` from the given map, else from the original's graph
// inputs, outputs or value_info.
const TypeInfo* TypeOf(const std::string& name, const Graph& g,
                       const std::unordered_map<std::string, TypeInfo>& types) {
  if (auto it = types.find(name); it != types.end()) return &it->second;
  for (const auto* list : {&g.inputs, &g.outputs, &g.value_infos}) {
    if (const ValueInfo* vi = FindInfo(*list, name)) return &vi->type;
  }
  return nullptr;
}

ValueInfo MakeInfo(const std::string& name, const TypeInfo* type) {
  ValueInfo vi;
  vi.name = name;
  if (type) {
    vi.has_type = true;
    vi.type = *type;
  }
  return vi;
}

Status CheckIndices(const Graph& g, const std::vector<size_t>& indices) {
  if (indices.empty()) return InvalidInputError("cannot extract a subgraph of no nodes");
  std::set<size_t> seen;
  for (size_t i : indices) {
    if (i >= g.nodes.size()) {
      return InvalidInputError("node index {} is out of range: the graph has {} nodes", i, g.nodes.size());
    }
    if (!seen.insert(i).second) return InvalidInputError("node index {} is listed twice", i);
  }
  return Status::Ok();
}

}  // namespace

std::vector<std::string> ImplicitInputs(const Node& node) {
  std::vector<std::string> out;
  NameSet seen;
  CollectNodeFreeNames(node, out, seen);
  return out;
}

Result<Model> ExtractSubgraph(const Model& model, const std::vector<size_t>& node_indices,
                              const std::unordered_map<std::string, TypeInfo>& types) {
  const Graph& g = model.graph;
  VIGIL_RETURN_IF_ERROR(CheckIndices(g, node_indices));
  const std::unordered_set<size_t> in_set(node_indices.begin(), node_indices.end());

  NameSet produced;
  for (size_t i : node_indices) {
    for (const std::string& out : g.nodes[i].outputs) {
      if (!out.empty()) produced.insert(out);
    }
  }
  NameSet initializer_names;
  for (const Tensor& t : g.initializers) initializer_names.insert(t.name);
  for (const SparseTensor& t : g.sparse_initializers) initializer_names.insert(t.values.name);

  Model sub;
  sub.ir_version = model.ir_version;
  sub.opset_imports = model.opset_imports;
  sub.producer_name = model.producer_name;
  sub.producer_version = model.producer_version;
  sub.domain = model.domain;
  sub.model_version = model.model_version;
  sub.metadata_props = model.metadata_props;
  sub.functions = model.functions;
  sub.path = model.path;
  sub.file = model.file;
  sub.graph.name = g.name.empty() ? std::string("extracted") : g.name + "_extracted";

  // Inputs and initializers, in order of first use.
  NameSet used_constants, boundary_seen;
  for (size_t i : node_indices) {
    const Node& node = g.nodes[i];
    sub.graph.nodes.push_back(node);
    for (const std::string& name : ReadNames(node)) {
      if (produced.count(name)) continue;
      if (initializer_names.count(name)) {
        used_constants.insert(name);
        continue;
      }
      if (!boundary_seen.insert(name).second) continue;
      const TypeInfo* type = TypeOf(name, g, types);
      if (!type) {
        return InvalidInputError("cannot extract {}: the type of its input '{}' is not known",
                                 node.Describe(i), name)
            .WithFix("record the value (run the whole model) or declare its type in value_info");
      }
      sub.graph.inputs.push_back(MakeInfo(name, type));
    }
  }
  for (const Tensor& t : g.initializers) {
    if (used_constants.count(t.name)) sub.graph.initializers.push_back(t);
  }
  for (const SparseTensor& t : g.sparse_initializers) {
    if (used_constants.count(t.values.name)) sub.graph.sparse_initializers.push_back(t);
  }

  // Outputs: what the rest of the original graph (or its user) needs.
  NameSet needed_outside;
  for (const ValueInfo& vi : g.outputs) needed_outside.insert(vi.name);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (in_set.count(i)) continue;
    for (const std::string& name : ReadNames(g.nodes[i])) needed_outside.insert(name);
  }
  NameSet output_seen;
  for (size_t i : node_indices) {
    for (const std::string& out : g.nodes[i].outputs) {
      if (!out.empty() && needed_outside.count(out) && output_seen.insert(out).second) {
        sub.graph.outputs.push_back(MakeInfo(out, TypeOf(out, g, types)));
      }
    }
  }
  if (sub.graph.outputs.empty()) {
    for (const std::string& out : g.nodes[node_indices.back()].outputs) {
      if (!out.empty()) sub.graph.outputs.push_back(MakeInfo(out, TypeOf(out, g, types)));
    }
  }
  NameSet output_names;
  for (const ValueInfo& vi : sub.graph.outputs) output_names.insert(vi.name);
  for (const ValueInfo& vi : g.value_infos) {
    if (produced.count(vi.name) && !output_names.count(vi.name)) sub.graph.value_infos.push_back(vi);
  }
  return sub;
}

}  // namespace vigil::ir
