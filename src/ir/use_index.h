// Who produces and who reads each value among a graph's live nodes, for a
// pass that rewrites node by node: Unlink a node before changing its inputs
// or outputs and Link it after, and the index stays what a rebuild would
// give, without the rebuild (which hashes every value name of the graph:
// rebuilt after each of the NHWC pass's rewrites, it was most of a large
// model's session creation).
#pragma once

#include <cstddef>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/graph.h"

namespace vigil::ir {

struct UseIndex {
  // value -> the node producing it (graphs are in SSA form: one each).
  std::unordered_map<std::string, size_t> producer;
  // value -> its reading nodes, one entry per input slot, in node order; a
  // value nobody reads has no entry.
  std::unordered_map<std::string, std::vector<size_t>> consumers;
  // value -> how many reads of it sit inside subgraphs (If, Loop, Scan
  // bodies): such a value cannot be renamed. Absent when none.
  std::unordered_map<std::string, int> opaque;

  // The index of g's nodes i with !dead[i].
  static UseIndex Build(const Graph& g, const std::vector<bool>& dead);
  // Adds / removes node i's reads (subgraph reads included) and results.
  void Link(const Graph& g, size_t i);
  void Unlink(const Graph& g, size_t i);
};

}  // namespace vigil::ir
