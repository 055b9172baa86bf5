// Per-node output types and FLOPs for `vigil inspect --shapes`, from the
// session's shape inference (with shape arithmetic folded on the CPU backend).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "ir/graph.h"

namespace vigil::api {

struct NodeShapes {
  size_t index = 0;
  std::string label;                // "Conv 'conv1'"
  std::vector<std::string> outputs; // "name: float32[N,8,32,32]"
  uint64_t flops = 0;  // 2 × multiply-adds of Conv/ConvTranspose/Gemm/MatMul, symbolic dims = 1; else 0
};

// Shapes for every node in execution order; symbolic input dims stay symbolic.
Result<std::vector<NodeShapes>> InferNodeShapes(const ir::Model& model);

}  // namespace vigil::api
