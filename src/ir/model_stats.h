// Summary figures shown by `vigil inspect`.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "ir/graph.h"

namespace vigil::ir {

struct ModelStats {
  size_t nodes = 0;                    // top-level graph
  size_t nodes_including_subgraphs = 0;
  std::map<std::string, size_t> ops;   // op histogram, "domain::Op" outside the default domain
  uint64_t parameters = 0;             // elements of initializers (dense + sparse values)
  uint64_t parameter_bytes = 0;        // bytes of those elements
  size_t subgraphs = 0;
};

ModelStats ComputeStats(const Model& model);

}  // namespace vigil::ir
