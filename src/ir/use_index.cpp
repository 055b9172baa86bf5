#include "ir/use_index.h"

#include <algorithm>

#include "ir/extract_subgraph.h"

namespace vigil::ir {
namespace {

bool HasSubgraph(const Node& n) {
  return std::any_of(n.attributes.begin(), n.attributes.end(),
                     [](const Attribute& a) { return a.g != nullptr || !a.graphs.empty(); });
}

void AddConsumer(UseIndex& idx, const std::string& value, size_t i) {
  std::vector<size_t>& v = idx.consumers[value];
  v.insert(std::upper_bound(v.begin(), v.end(), i), i);
}

void RemoveConsumer(UseIndex& idx, const std::string& value, size_t i) {
  auto it = idx.consumers.find(value);
  if (it == idx.consumers.end()) return;
  std::vector<size_t>& v = it->second;
  if (auto at = std::lower_bound(v.begin(), v.end(), i); at != v.end() && *at == i) v.erase(at);
  if (v.empty()) idx.consumers.erase(it);
}

}  // namespace

UseIndex UseIndex::Build(const Graph& g, const std::vector<bool>& dead) {
  UseIndex idx;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (i >= dead.size() || !dead[i]) idx.Link(g, i);
  }
  return idx;
}

void UseIndex::Link(const Graph& g, size_t i) {
  const Node& n = g.nodes[i];
  for (const std::string& in : n.inputs) {
    if (!in.empty()) AddConsumer(*this, in, i);
  }
  if (HasSubgraph(n)) {
    for (const std::string& in : ImplicitInputs(n)) {
      AddConsumer(*this, in, i);
      ++opaque[in];
    }
  }
  for (const std::string& out : n.outputs) {
    if (out.empty()) continue;
    auto [it, added] = producer.emplace(out, i);
    if (!added && i < it->second) it->second = i;
  }
}

void UseIndex::Unlink(const Graph& g, size_t i) {
  const Node& n = g.nodes[i];
  for (const std::string& in : n.inputs) {
    if (!in.empty()) RemoveConsumer(*this, in, i);
  }
  if (HasSubgraph(n)) {
    for (const std::string& in : ImplicitInputs(n)) {
      RemoveConsumer(*this, in, i);
      if (auto it = opaque.find(in); it != opaque.end() && --it->second <= 0) opaque.erase(it);
    }
  }
  for (const std::string& out : n.outputs) {
    if (auto it = producer.find(out); it != producer.end() && it->second == i) producer.erase(it);
  }
}

}  // namespace vigil::ir
