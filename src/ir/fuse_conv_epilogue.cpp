#include "ir/fuse_conv_epilogue.h"

#include <optional>
#include <vector>

#include "ir/graph_index.h"
#include "ir/layout_nhwc.h"  // kVigilDomain, kConvNhwcRelu, kConvNhwcRelu6
#include "ir/use_index.h"

namespace vigil::ir {
namespace {

bool IsDefaultDomain(const Node& n) { return n.domain.empty() || n.domain == "ai.onnx"; }

class ConvEpilogueMatcher {
 public:
  ConvEpilogueMatcher(const Model& model, const std::unordered_map<std::string, TypeInfo>& types)
      : model_(model), g_(model.graph), types_(types), idx_(IndexGraph(g_)),
        uses_(UseIndex::Build(g_, std::vector<bool>(g_.nodes.size(), false))) {}

  // The only node reading `value`, when nothing else does (no graph output,
  // no subgraph read).
  std::optional<size_t> SoleReader(const std::string& value) const {
    if (uses_.opaque.count(value)) return std::nullopt;
    const long reader = SoleConsumer(idx_, value);
    if (reader < 0) return std::nullopt;
    return static_cast<size_t>(reader);
  }

  // The other operand of Add node `a` when it has exactly `value`'s type.
  std::optional<std::string> Residual(size_t a, const std::string& value) const {
    const Node& add = g_.nodes[a];
    if (!IsDefaultOp(add, "Add", 2) || add.inputs[0] == add.inputs[1]) return std::nullopt;
    const std::string* z = OtherOperand(add, value);
    if (!z || z->empty()) return std::nullopt;
    const TypeInfo* yt = TypeOf(value);
    const TypeInfo* zt = TypeOf(*z);
    if (!yt || !zt || yt->elem_type != zt->elem_type || !SameDims(yt->shape, zt->shape)) {
      return std::nullopt;
    }
    return *z;
  }

  // "Relu" or "Relu6" when node `r` applies one to `value`, else null.
  const char* Activation(size_t r, const std::string& value) const {
    const Node& n = g_.nodes[r];
    if (!IsDefaultDomain(n) || n.outputs.size() != 1 || n.inputs.empty() || n.inputs[0] != value) return nullptr;
    if (n.op_type == "Relu" && n.inputs.size() == 1) return kConvNhwcRelu;
    const bool relu6 = IsClipZeroSix(n, model_.OpsetVersion(""),
                                     [this](const std::string& name) { return FloatConstant(idx_, name); });
    return relu6 ? kConvNhwcRelu6 : nullptr;
  }

  const Graph& graph() const { return g_; }

 private:
  const TypeInfo* TypeOf(const std::string& v) const {
    auto it = types_.find(v);
    return it == types_.end() || it->second.kind != TypeInfo::Kind::kTensor ? nullptr : &it->second;
  }

  const Model& model_;
  const Graph& g_;
  const std::unordered_map<std::string, TypeInfo>& types_;
  const GraphIndex idx_;
  const UseIndex uses_;
};

struct ConvEpilogueMatch {
  size_t conv = 0;
  size_t last = 0;                 // the last absorbed node: the fused node goes there
  std::vector<size_t> absorbed;    // every node the fused one replaces
  Node fused;
};

std::optional<ConvEpilogueMatch> Match(const ConvEpilogueMatcher& m, size_t c) {
  const Node& conv = m.graph().nodes[c];
  if (conv.op_type != "Conv" || !IsDefaultDomain(conv) || conv.inputs.size() < 2 || conv.inputs.size() > 3 ||
      conv.outputs.size() != 1) {
    return std::nullopt;
  }
  ConvEpilogueMatch match;
  match.conv = c;
  match.fused = conv;
  match.fused.domain = kVigilDomain;
  match.fused.op_type = kFusedConvOp;
  match.fused.inputs.resize(3);  // B stays, or becomes the empty name
  std::string value = conv.outputs[0];
  std::optional<size_t> reader = m.SoleReader(value);
  if (!reader) return std::nullopt;
  if (std::optional<std::string> z = m.Residual(*reader, value)) {
    match.fused.inputs.push_back(*z);
    match.absorbed.push_back(*reader);
    value = m.graph().nodes[*reader].outputs[0];
    reader = m.SoleReader(value);
  }
  if (reader) {
    if (const char* act = m.Activation(*reader, value)) {
      Attribute a;
      a.name = "activation";
      a.type = AttributeType::kString;
      a.s = act;
      match.fused.attributes.push_back(std::move(a));
      match.absorbed.push_back(*reader);
      value = m.graph().nodes[*reader].outputs[0];
    }
  }
  if (match.absorbed.empty()) return std::nullopt;
  if (match.fused.inputs.size() == 3 && match.fused.inputs[2].empty()) match.fused.inputs.resize(2);
  match.fused.outputs = {value};
  match.last = match.absorbed.back();
  return match;
}

}  // namespace

Result<size_t> FuseConvEpilogue(Model& model, const std::unordered_map<std::string, TypeInfo>& types,
                                const FusedConvAcceptor& accept) {
  std::vector<ConvEpilogueMatch> matches;
  {
    const ConvEpilogueMatcher matcher(model, types);
    // Add(conv1, conv2) matches both convolutions, each with the other as
    // Z: the first takes the Add (and its activation), the second stays.
    std::vector<bool> taken(model.graph.nodes.size(), false);
    for (size_t i = 0; i < model.graph.nodes.size(); ++i) {
      std::optional<ConvEpilogueMatch> m = Match(matcher, i);
      if (!m || taken[m->absorbed.front()] || (accept && !accept(m->fused))) continue;
      for (size_t a : m->absorbed) taken[a] = true;
      matches.push_back(std::move(*m));
    }
  }
  if (matches.empty()) return size_t{0};
  std::vector<bool> remove(model.graph.nodes.size(), false);
  for (ConvEpilogueMatch& m : matches) {
    remove[m.conv] = true;
    for (size_t a : m.absorbed) remove[a] = a != m.last;
    model.graph.nodes[m.last] = std::move(m.fused);
  }
  DropFusedNodes(model, remove);
  return matches.size();
}

}  // namespace vigil::ir
