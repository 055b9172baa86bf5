// FlexAttention's expansion (expand_flex_attention.h).
#include "ir/expand_flex_attention.h"

#include <cmath>
#include <cstring>
#include <memory>
#include <optional>
#include <unordered_set>
#include <utility>
#include <vector>

#include <fmt/format.h>

namespace vigil::ir {
namespace {

std::string Label(const Node& node) {
  if (!node.name.empty()) return fmt::format("node FlexAttention '{}'", node.name);
  return fmt::format("node FlexAttention (output '{}')", node.outputs.empty() ? "" : node.outputs[0]);
}

template <typename... Args>
Status Fail(const Node& node, fmt::format_string<Args...> f, Args&&... args) {
  return InvalidModelError("{}: {}", Label(node), fmt::format(f, std::forward<Args>(args)...));
}

bool IsFlexAttention(const Node& node) {
  return node.op_type == kFlexAttentionOp && node.domain == kFlexAttentionDomain;
}

void CollectNames(const Graph& g, std::unordered_set<std::string>& names) {
  for (const ValueInfo& v : g.inputs) names.insert(v.name);
  for (const ValueInfo& v : g.outputs) names.insert(v.name);
  for (const Tensor& t : g.initializers) names.insert(t.name);
  for (const SparseTensor& t : g.sparse_initializers) names.insert(t.values.name);
  for (const Node& n : g.nodes) {
    names.insert(n.outputs.begin(), n.outputs.end());
    for (const Attribute& a : n.attributes) {
      if (a.g) CollectNames(*a.g, names);
      for (const auto& sub : a.graphs) {
        if (sub) CollectNames(*sub, names);
      }
    }
  }
}

// A constant owning its bytes.
Tensor OwnedTensor(DataType dtype, std::vector<int64_t> dims, const void* data, size_t bytes) {
  auto buffer = std::make_shared<std::vector<uint8_t>>(bytes);
  if (bytes) std::memcpy(buffer->data(), data, bytes);
  Tensor t;
  t.dtype = dtype;
  t.dims = std::move(dims);
  t.storage = Tensor::Storage::kTypedDecoded;
  t.bytes = {buffer->data(), buffer->size()};
  t.keep_alive = buffer;
  return t;
}

// Renames the values `renamed` maps in a nested body (which reads values of
// the bodies around it by name).
void RenameReads(Graph& g, const std::unordered_map<std::string, std::string>& renamed) {
  auto rename = [&renamed](std::string& name) {
    auto it = renamed.find(name);
    if (it != renamed.end()) name = it->second;
  };
  for (Node& n : g.nodes) {
    for (std::string& in : n.inputs) rename(in);
    for (Attribute& a : n.attributes) {
      if (a.g) {
        a.g = std::make_shared<Graph>(*a.g);
        RenameReads(*a.g, renamed);
      }
      for (auto& sub : a.graphs) {
        if (!sub) continue;
        sub = std::make_shared<Graph>(*sub);
        RenameReads(*sub, renamed);
      }
    }
  }
  for (ValueInfo& out : g.outputs) rename(out.name);
}

// Writes the nodes of one FlexAttention node's expansion.
class Expansion {
 public:
  Expansion(Graph& graph, const Node& node, std::unordered_set<std::string>& taken)
      : graph_(graph), node_(node), taken_(taken),
        base_(node.name.empty() ? (node.outputs.empty() ? "flex_attention" : node.outputs[0]) : node.name) {}

  std::vector<Node>& nodes() { return nodes_; }

  std::string Fresh(const std::string& role) {
    const std::string stem = base_ + "/" + role;
    std::string name = stem;
    for (int k = 1; taken_.count(name); ++k) name = stem + "_" + std::to_string(k);
    taken_.insert(name);
    return name;
  }

  // One node of op `op`; returns its output (`out`, or a fresh name).
  std::string Add(const char* op, std::vector<std::string> inputs, std::vector<Attribute> attrs = {},
                  std::string out = {}) {
    Node n;
    n.op_type = op;
    n.inputs = std::move(inputs);
    n.outputs = {out.empty() ? Fresh(op) : std::move(out)};
    n.name = base_ + "/" + op + "_" + std::to_string(nodes_.size());
    n.attributes = std::move(attrs);
    nodes_.push_back(std::move(n));
    return nodes_.back().outputs[0];
  }

  std::string Constant(Tensor t, const std::string& role) {
    t.name = Fresh(role);
    graph_.initializers.push_back(std::move(t));
    return graph_.initializers.back().name;
  }

  std::string Ints(std::vector<int64_t> v, const std::string& role) {
    const int64_t n = static_cast<int64_t>(v.size());
    return Constant(OwnedTensor(DataType::kInt64, {n}, v.data(), v.size() * sizeof(int64_t)), role);
  }

  // A float32 or float64 scalar.
  std::string Scalar(DataType dtype, double v, const std::string& role) {
    if (dtype == DataType::kFloat64) return Constant(OwnedTensor(dtype, {}, &v, sizeof v), role);
    const float f = static_cast<float>(v);
    return Constant(OwnedTensor(DataType::kFloat32, {}, &f, sizeof f), role);
  }

  std::string Cast(const std::string& x, DataType to) {
    return Add("Cast", {x}, {IntAttribute("to", static_cast<int64_t>(to))});
  }

  // Dim `d` of `shape` (a Shape output) as a 1-element int64 tensor.
  std::string DimOf(const std::string& shape, int64_t d) {
    return Add("Gather", {shape, Ints({d}, "dim_index")}, {IntAttribute("axis", 0)});
  }

  // x [B, Hkv, S, D] with each head repeated for its group: [B, Hq, S, D].
  std::string RepeatHeads(const std::string& x, const std::string& b, const std::string& hq, const std::string& hkv,
                          const std::string& group, const std::string& s) {
    const std::string d = DimOf(Add("Shape", {x}), 3);
    const std::string one = Ints({1}, "one");
    const std::string split = Add("Concat", {b, hkv, one, s, d}, {IntAttribute("axis", 0)});
    const std::string spread = Add("Concat", {b, hkv, group, s, d}, {IntAttribute("axis", 0)});
    const std::string merged = Add("Concat", {b, hq, s, d}, {IntAttribute("axis", 0)});
    return Add("Reshape", {Add("Expand", {Add("Reshape", {x, split}), spread}), merged});
  }

  // The body of graph attribute `name`, inlined to read `input`; returns the
  // value it gives (`input` without the attribute).
  Result<std::string> Inline(const char* name, const std::string& input, DataType precision) {
    const Attribute* attr = node_.FindAttribute(name);
    if (!attr) return input;
    if (attr->type != AttributeType::kGraph || !attr->g) {
      return Fail(node_, "attribute {} is {}, expected a graph", name, AttributeTypeName(attr->type));
    }
    const Graph& body = *attr->g;
    std::unordered_set<std::string> constants;
    for (const Tensor& t : body.initializers) constants.insert(t.name);
    std::vector<const ValueInfo*> inputs;
    for (const ValueInfo& v : body.inputs) {
      if (!constants.count(v.name)) inputs.push_back(&v);
    }
    if (inputs.size() != 1 || body.outputs.size() != 1) {
      return Fail(node_, "attribute {} has {} inputs and {} outputs; a modifier body takes one tensor and gives one",
                  name, inputs.size(), body.outputs.size());
    }
    const DataType declared = inputs[0]->type.elem_type;
    if (declared != DataType::kUndefined && declared != precision) {
      return Fail(node_, "attribute {} takes {} input '{}', but the op gives it {} (the softmax precision)", name,
                  DataTypeName(declared), inputs[0]->name, DataTypeName(precision));
    }
    if (!body.sparse_initializers.empty()) {
      return UnsupportedError("{}: attribute {} has sparse initializers, which vigil does not inline", Label(node_),
                              name);
    }
    std::unordered_map<std::string, std::string> renamed = {{inputs[0]->name, input}};
    for (const Tensor& t : body.initializers) {
      Tensor c = t;
      renamed[t.name] = Constant(std::move(c), std::string(name) + "/" + t.name);
    }
    for (const Node& n : body.nodes) {
      for (const std::string& out : n.outputs) {
        if (!out.empty()) renamed[out] = Fresh(std::string(name) + "/" + out);
      }
    }
    for (const Node& n : body.nodes) {
      Node copy = n;
      copy.name = base_ + "/" + name + "/" + (n.name.empty() ? n.op_type : n.name);
      Graph shell;
      shell.nodes.push_back(std::move(copy));
      RenameReads(shell, renamed);
      Node& inlined = shell.nodes[0];
      for (std::string& out : inlined.outputs) {
        if (!out.empty()) out = renamed.at(out);
      }
      nodes_.push_back(std::move(inlined));
    }
    auto out = renamed.find(body.outputs[0].name);
    return out == renamed.end() ? body.outputs[0].name : out->second;
  }

 private:
  Graph& graph_;
  const Node& node_;
  std::unordered_set<std::string>& taken_;
  std::string base_;
  std::vector<Node> nodes_;
};

const TypeInfo* TypeOf(const std::unordered_map<std::string, TypeInfo>& types, const std::string& name) {
  auto it = types.find(name);
  return it == types.end() ? nullptr : &it->second;
}

std::optional<int64_t> KnownDim(const TypeInfo* t, size_t d) {
  if (!t || !t->shape.rank_known || t->shape.dims.size() <= d) return std::nullopt;
  return t->shape.dims[d].value;
}

Result<std::vector<Node>> Expand(Graph& graph, const Node& node, const std::unordered_map<std::string, TypeInfo>& types,
                                 std::unordered_set<std::string>& taken) {
  if (node.inputs.size() != 3 || node.outputs.size() != 1) {
    return Fail(node, "has {} inputs and {} outputs, expected 3 (Q, K, V) and 1 (Y)", node.inputs.size(),
                node.outputs.size());
  }
  const std::string &q = node.inputs[0], &k = node.inputs[1], &v = node.inputs[2];
  const TypeInfo* qt = TypeOf(types, q);
  if (!qt || qt->elem_type == DataType::kUndefined) {
    return UnsupportedError("{}: the dtype of input Q ('{}') is not known when the model loads; declare it", Label(node),
                            q);
  }
  const DataType t = qt->elem_type;
  DataType precision = t == DataType::kFloat64 ? DataType::kFloat64 : DataType::kFloat32;
  if (const Attribute* sp = node.FindAttribute("softmax_precision")) {
    const auto p = static_cast<DataType>(sp->i);
    if (p != DataType::kFloat32 && p != DataType::kFloat64 && p != DataType::kFloat16 && p != DataType::kBfloat16) {
      return Fail(node, "attribute softmax_precision is {}, expected 1 (float32), 10 (float16), 11 (float64) or 16 "
                  "(bfloat16)", sp->i);
    }
    precision = p;
  }

  Expansion x(graph, node, taken);
  std::string keys = k, values = v;
  const TypeInfo* kt = TypeOf(types, k);
  const auto hq_known = KnownDim(qt, 1), hkv_known = KnownDim(kt, 1);
  if (!hq_known || !hkv_known || *hq_known != *hkv_known) {
    const std::string qs = x.Add("Shape", {q}), ks = x.Add("Shape", {k});
    const std::string b = x.DimOf(qs, 0), hq = x.DimOf(qs, 1), hkv = x.DimOf(ks, 1), s = x.DimOf(ks, 2);
    const std::string group = x.Add("Div", {hq, hkv});
    keys = x.RepeatHeads(k, b, hq, hkv, group, s);
    values = x.RepeatHeads(v, b, hq, hkv, group, s);
  }

  // The scale, in float64 for float64 inputs, else in float32: the
  // attribute, or 1 / sqrt(E).
  const DataType scale_type = t == DataType::kFloat64 ? DataType::kFloat64 : DataType::kFloat32;
  std::string scale;
  double attr_scale = 1.0;
  if (const Attribute* scale_attr = node.FindAttribute("scale")) {
    attr_scale = scale_attr->f;
    scale = x.Scalar(scale_type, attr_scale, "scale");
  } else {
    const std::string e = x.Cast(x.DimOf(x.Add("Shape", {q}), 3), scale_type);
    scale = x.Add("Div", {x.Scalar(scale_type, 1.0, "one"), x.Add("Sqrt", {e})});
  }
  std::string score;
  if (attr_scale > 0) {
    const std::string root = x.Cast(x.Add("Sqrt", {scale}), t);
    const std::string qs = x.Add("Mul", {q, root}), kscaled = x.Add("Mul", {keys, root});
    score = x.Add("MatMul", {qs, x.Add("Transpose", {kscaled}, {IntsAttribute("perm", {0, 1, 3, 2})})});
  } else {
    const std::string product =
        x.Add("MatMul", {q, x.Add("Transpose", {keys}, {IntsAttribute("perm", {0, 1, 3, 2})})});
    score = x.Add("Mul", {product, x.Cast(scale, t)});
  }
  if (precision != t) score = x.Cast(score, precision);
  VIGIL_ASSIGN_OR_RETURN(std::string modified, x.Inline("score_mod", score, precision));
  const std::string probs = x.Add("Softmax", {modified}, {IntAttribute("axis", 3)});
  VIGIL_ASSIGN_OR_RETURN(std::string weights, x.Inline("prob_mod", probs, precision));
  if (precision == t) {
    x.Add("MatMul", {weights, values}, {}, node.outputs[0]);
  } else {
    const std::string y = x.Add("MatMul", {weights, x.Cast(values, precision)});
    x.Add("Cast", {y}, {IntAttribute("to", static_cast<int64_t>(t))}, node.outputs[0]);
  }
  return std::move(x.nodes());
}

}  // namespace

bool HasFlexAttention(const Graph& graph) {
  for (const Node& n : graph.nodes) {
    if (IsFlexAttention(n)) return true;
  }
  return false;
}

Result<size_t> ExpandFlexAttention(Model& model, const std::unordered_map<std::string, TypeInfo>& types) {
  Graph& g = model.graph;
  std::unordered_set<std::string> taken;
  CollectNames(g, taken);
  // Every expansion first (a failure leaves the nodes as they were), then
  // the node list with each FlexAttention node replaced.
  std::unordered_map<size_t, std::vector<Node>> replacements;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (!IsFlexAttention(g.nodes[i])) continue;
    VIGIL_ASSIGN_OR_RETURN(replacements[i], Expand(g, g.nodes[i], types, taken));
  }
  if (replacements.empty()) return size_t{0};
  std::vector<Node> nodes;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    auto r = replacements.find(i);
    if (r == replacements.end()) {
      nodes.push_back(std::move(g.nodes[i]));
    } else {
      for (Node& n : r->second) nodes.push_back(std::move(n));
    }
  }
  g.nodes = std::move(nodes);
  return replacements.size();
}

}  // namespace vigil::ir
