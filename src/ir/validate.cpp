#include "ir/validate.h"

#include <queue>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

namespace vigil::ir {
namespace {

using NameSet = std::unordered_set<std::string>;

bool IsDefaultDomain(std::string_view d) { return d.empty() || d == "ai.onnx"; }

std::string GraphLabel(const Graph& g) { return g.name.empty() ? std::string("(unnamed graph)") : "'" + g.name + "'"; }

Status CheckType(const TypeInfo& type, std::string_view what) {
  switch (type.kind) {
    case TypeInfo::Kind::kTensor:
    case TypeInfo::Kind::kSparseTensor:
      if (!IsKnownDataType(static_cast<int32_t>(type.elem_type))) {
        return InvalidModelError("{} has unknown dtype {}", what, static_cast<int32_t>(type.elem_type))
            .WithFix("re-export the model with a dtype from ONNX's TensorProto.DataType");
      }
      for (const Dim& d : type.shape.dims) {
        if (d.value && *d.value < 0) {
          return InvalidModelError("{} has negative dimension {} in shape {}", what, *d.value,
                                   ShapeToString(type.shape));
        }
      }
      return Status::Ok();
    case TypeInfo::Kind::kSequence:
    case TypeInfo::Kind::kOptional:
    case TypeInfo::Kind::kMap:
      if (type.inner) return CheckType(*type.inner, what);
      return Status::Ok();
    case TypeInfo::Kind::kUnknown: return Status::Ok();
  }
  return Status::Ok();
}

Status CheckValueInfos(const std::vector<ValueInfo>& infos, std::string_view role, const Graph& g) {
  for (const ValueInfo& vi : infos) {
    if (!vi.has_type) continue;
    VIGIL_RETURN_IF_ERROR(CheckType(vi.type, fmt::format("{} '{}' of graph {}", role, vi.name, GraphLabel(g))));
  }
  return Status::Ok();
}

// Names used inside the subgraphs of `node` that those subgraphs do not
// define themselves: the node's implicit inputs from enclosing scopes.
void CollectImplicitInputs(const Graph& g, NameSet& out);

void CollectNodeImplicitInputs(const Node& node, NameSet& out) {
  for (const Attribute& a : node.attributes) {
    if (a.g) CollectImplicitInputs(*a.g, out);
    for (const auto& sub : a.graphs) {
      if (sub) CollectImplicitInputs(*sub, out);
    }
  }
}

void CollectImplicitInputs(const Graph& g, NameSet& out) {
  NameSet local;
  for (const ValueInfo& vi : g.inputs) local.insert(vi.name);
  for (const Tensor& t : g.initializers) local.insert(t.name);
  for (const SparseTensor& t : g.sparse_initializers) local.insert(t.values.name);
  for (const Node& n : g.nodes) {
    for (const std::string& o : n.outputs) local.insert(o);
  }
  NameSet used;
  for (const Node& n : g.nodes) {
    for (const std::string& i : n.inputs) {
      if (!i.empty()) used.insert(i);
    }
    CollectNodeImplicitInputs(n, used);
  }
  for (const ValueInfo& vi : g.outputs) used.insert(vi.name);
  for (const std::string& name : used) {
    if (!local.count(name)) out.insert(name);
  }
}

struct GraphContext {
  const Model& model;
  const std::vector<OpsetImport>& opsets;
  int depth;
};

Status ValidateGraph(const Graph& g, const NameSet& outer, const GraphContext& ctx);

Status CheckOpsetImport(const Node& node, size_t index, const Graph& g, const GraphContext& ctx) {
  for (const OpsetImport& o : ctx.opsets) {
    if (o.domain == node.domain || (IsDefaultDomain(o.domain) && IsDefaultDomain(node.domain))) {
      return Status::Ok();
    }
  }
  std::string domain = node.domain.empty() ? "ai.onnx (default)" : node.domain;
  return InvalidModelError("node {} in graph {} uses domain '{}', which the model does not import",
                           node.Describe(index), GraphLabel(g), domain)
      .WithFact("opset imports", [&] {
        std::string s;
        for (const OpsetImport& o : ctx.opsets) {
          s += fmt::format("{}{}={}", s.empty() ? "" : ", ", o.domain.empty() ? "ai.onnx" : o.domain, o.version);
        }
        return s.empty() ? std::string("none") : s;
      }())
      .WithFix(fmt::format("add an opset_import entry for domain '{}'", domain));
}

// Collects every name defined in `g` (inputs, initializers, node outputs),
// checking that each has exactly one definition.
Status CollectDefinitions(const Graph& g, NameSet& defined, std::unordered_map<std::string, size_t>& producer) {
  std::unordered_map<std::string, std::string> how;  // name -> what defined it
  auto define = [&](const std::string& name, std::string what) -> Status {
    auto [it, inserted] = how.emplace(name, what);
    if (!inserted) {
      return InvalidModelError("value '{}' in graph {} is defined twice: by {} and by {}", name, GraphLabel(g),
                               it->second, what)
          .WithFix("every value must have exactly one producer; rename one of them");
    }
    defined.insert(name);
    return Status::Ok();
  };
  NameSet input_names;
  for (const ValueInfo& vi : g.inputs) {
    if (vi.name.empty()) return InvalidModelError("graph {} has an input with an empty name", GraphLabel(g));
    VIGIL_RETURN_IF_ERROR(define(vi.name, "a graph input"));
    input_names.insert(vi.name);
  }
  for (const Tensor& t : g.initializers) {
    if (t.name.empty()) return InvalidModelError("graph {} has an initializer with an empty name", GraphLabel(g));
    // Before IR version 4 initializers had to be listed as graph inputs too.
    if (input_names.count(t.name)) continue;
    VIGIL_RETURN_IF_ERROR(define(t.name, "an initializer"));
  }
  for (const SparseTensor& t : g.sparse_initializers) {
    if (input_names.count(t.values.name)) continue;
    VIGIL_RETURN_IF_ERROR(define(t.values.name, "a sparse initializer"));
  }
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    for (const std::string& out : g.nodes[i].outputs) {
      if (out.empty()) continue;
      VIGIL_RETURN_IF_ERROR(define(out, fmt::format("node {}", g.nodes[i].Describe(i))));
      producer[out] = i;
    }
  }
  return Status::Ok();
}

Status ValidateSubgraphs(const Node& node, size_t index, const Graph& g, const NameSet& visible,
                         const GraphContext& ctx) {
  for (const Attribute& a : node.attributes) {
    std::vector<const Graph*> subs;
    if (a.g) subs.push_back(a.g.get());
    for (const auto& s : a.graphs) {
      if (s) subs.push_back(s.get());
    }
    for (const Graph* sub : subs) {
      GraphContext inner{ctx.model, ctx.opsets, ctx.depth + 1};
      Status s = ValidateGraph(*sub, visible, inner);
      if (!s.ok()) {
        return s.WithContext(fmt::format("in attribute '{}' of node {} in graph {}", a.name, node.Describe(index),
                                         GraphLabel(g)));
      }
    }
  }
  return Status::Ok();
}

Status ValidateGraph(const Graph& g, const NameSet& outer, const GraphContext& ctx) {
  if (ctx.depth > 64) return InvalidModelError("graphs are nested more than 64 deep");
  VIGIL_RETURN_IF_ERROR(CheckValueInfos(g.inputs, "input", g));
  VIGIL_RETURN_IF_ERROR(CheckValueInfos(g.outputs, "output", g));
  VIGIL_RETURN_IF_ERROR(CheckValueInfos(g.value_infos, "value_info", g));
  for (const Tensor& t : g.initializers) {
    if (!IsKnownDataType(static_cast<int32_t>(t.dtype))) {
      return InvalidModelError("initializer '{}' in graph {} has unknown dtype {}", t.name, GraphLabel(g),
                               static_cast<int32_t>(t.dtype));
    }
  }
  NameSet defined;
  std::unordered_map<std::string, size_t> producer;
  VIGIL_RETURN_IF_ERROR(CollectDefinitions(g, defined, producer));
  NameSet visible = outer;
  visible.insert(defined.begin(), defined.end());

  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& node = g.nodes[i];
    if (node.op_type.empty()) {
      return InvalidModelError("node #{} in graph {} has no op_type", i, GraphLabel(g));
    }
    VIGIL_RETURN_IF_ERROR(CheckOpsetImport(node, i, g, ctx));
    for (size_t k = 0; k < node.inputs.size(); ++k) {
      const std::string& in = node.inputs[k];
      if (in.empty() || visible.count(in)) continue;
      return InvalidModelError("node {} in graph {}: input {} '{}' is not defined", node.Describe(i), GraphLabel(g),
                               k, in)
          .WithFact("looked for", "graph inputs, initializers, outputs of other nodes, enclosing graphs")
          .WithCause("the producing node was removed or renamed when the model was edited")
          .WithFix("re-export the model, or repair it so that some node produces '" + in + "'");
    }
    VIGIL_RETURN_IF_ERROR(ValidateSubgraphs(node, i, g, visible, ctx));
  }
  for (const ValueInfo& out : g.outputs) {
    if (!visible.count(out.name)) {
      return InvalidModelError("output '{}' of graph {} is not produced by any node", out.name, GraphLabel(g))
          .WithFix("remove the output or add the node that computes it");
    }
  }
  std::vector<std::string> outer_list(outer.begin(), outer.end());
  return TopologicalOrder(g, outer_list).status();
}

Status ValidateFunction(const Function& f, const Model& model) {
  std::string label = fmt::format("function '{}' (domain '{}')", f.name, f.domain);
  Graph body;
  body.name = label;
  body.nodes = f.nodes;
  for (const std::string& in : f.inputs) body.inputs.push_back({in, false, {}, {}});
  for (const std::string& out : f.outputs) body.outputs.push_back({out, false, {}, {}});
  const std::vector<OpsetImport>& opsets = f.opset_imports.empty() ? model.opset_imports : f.opset_imports;
  GraphContext ctx{model, opsets, 0};
  Status s = ValidateGraph(body, {}, ctx);
  return s;
}

}  // namespace

Result<std::vector<size_t>> TopologicalOrder(const Graph& g, const std::vector<std::string>& outer_scope) {
  const size_t n = g.nodes.size();
  std::unordered_map<std::string, size_t> producer;
  for (size_t i = 0; i < n; ++i) {
    for (const std::string& out : g.nodes[i].outputs) {
      if (!out.empty()) producer.emplace(out, i);
    }
  }
  NameSet available(outer_scope.begin(), outer_scope.end());
  for (const ValueInfo& vi : g.inputs) available.insert(vi.name);
  for (const Tensor& t : g.initializers) available.insert(t.name);
  for (const SparseTensor& t : g.sparse_initializers) available.insert(t.values.name);

  std::vector<std::vector<size_t>> consumers(n);
  std::vector<size_t> pending(n, 0);
  for (size_t i = 0; i < n; ++i) {
    NameSet deps;
    for (const std::string& in : g.nodes[i].inputs) {
      if (!in.empty()) deps.insert(in);
    }
    CollectNodeImplicitInputs(g.nodes[i], deps);
    for (const std::string& d : deps) {
      auto it = producer.find(d);
      // A graph input/initializer wins over a (duplicate) node output; names
      // from nowhere are reported by ValidateModel, not here.
      if (it == producer.end() || available.count(d)) continue;
      if (it->second == i) {
        return InvalidModelError("node {} in graph {} consumes its own output '{}' (a cycle)",
                                 g.nodes[i].Describe(i), GraphLabel(g), d);
      }
      consumers[it->second].push_back(i);
      ++pending[i];
    }
  }
  // Kahn's algorithm, always taking the lowest ready index: keeps the file's
  // order when it is already topological.
  std::priority_queue<size_t, std::vector<size_t>, std::greater<size_t>> ready;
  for (size_t i = 0; i < n; ++i) {
    if (pending[i] == 0) ready.push(i);
  }
  std::vector<size_t> order;
  order.reserve(n);
  while (!ready.empty()) {
    size_t i = ready.top();
    ready.pop();
    order.push_back(i);
    for (size_t c : consumers[i]) {
      if (--pending[c] == 0) ready.push(c);
    }
  }
  if (order.size() != n) {
    std::string members;
    size_t shown = 0;
    for (size_t i = 0; i < n && shown < 5; ++i) {
      if (pending[i] == 0) continue;
      members += fmt::format("{}{}", shown ? ", " : "", g.nodes[i].Describe(i));
      ++shown;
    }
    return InvalidModelError("the nodes of graph {} form a cycle", GraphLabel(g))
        .WithFact("nodes on or behind the cycle", members)
        .WithFix("an ONNX graph must be acyclic; loops are expressed with the Loop or Scan operators");
  }
  return order;
}

Status RemoveDeadAndSort(Graph& g, const std::vector<bool>& dead) {
  if (dead.size() != g.nodes.size()) {
    return InternalError("RemoveDeadAndSort: {} dead flags for {} nodes", dead.size(), g.nodes.size());
  }
  std::vector<Node> all = std::move(g.nodes);
  std::vector<size_t> origin;  // live node k was all[origin[k]]
  g.nodes.clear();
  for (size_t i = 0; i < all.size(); ++i) {
    if (dead[i]) continue;
    origin.push_back(i);
    g.nodes.push_back(std::move(all[i]));
  }
  Result<std::vector<size_t>> order = TopologicalOrder(g, {});
  if (!order.ok()) {
    for (size_t k = 0; k < origin.size(); ++k) all[origin[k]] = std::move(g.nodes[k]);
    g.nodes = std::move(all);
    return std::move(order).TakeStatus();
  }
  std::vector<Node> sorted;
  sorted.reserve(order->size());
  for (size_t i : *order) sorted.push_back(std::move(g.nodes[i]));
  g.nodes = std::move(sorted);
  return Status::Ok();
}

Status ValidateModel(const Model& model) {
  if (model.graph.nodes.empty() && model.graph.outputs.empty()) {
    return InvalidModelError("the model has no graph (no nodes, no outputs): the file is empty, truncated, or "
                             "not an ONNX model")
        .WithFact("ir_version", std::to_string(model.ir_version))
        .WithFix("check that the file is the .onnx model itself and was copied completely");
  }
  if (model.graph.outputs.empty()) {
    return InvalidModelError("graph {} has no outputs, so it computes nothing", GraphLabel(model.graph))
        .WithFix("re-export the model with its outputs named");
  }
  if (model.opset_imports.empty() && !model.graph.nodes.empty()) {
    return InvalidModelError("model has no opset_import, so no operator version is defined")
        .WithFix("re-export the model with an opset version (e.g. opset_version=17)");
  }
  GraphContext ctx{model, model.opset_imports, 0};
  VIGIL_RETURN_IF_ERROR(ValidateGraph(model.graph, {}, ctx));
  for (const Function& f : model.functions) VIGIL_RETURN_IF_ERROR(ValidateFunction(f, model));
  return Status::Ok();
}

}  // namespace vigil::ir
