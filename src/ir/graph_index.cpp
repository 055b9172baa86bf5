#include "ir/graph_index.h"

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

}  // namespace vigil::ir
