// The attributes of RNN, GRU and LSTM, read, checked and resolved once for
// every backend: direction, layout, clip, input_forget, linear_before_reset
// and the per-direction activation functions with their alpha/beta. Used by
// the CPU reference kernels (src/backends/cpu/recurrent.cpp) and the CUDA
// kernels and their support check (src/backends/cuda/recurrent.cu), so that
// the two always agree on what a node means and which nodes are invalid.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "base/status.h"
#include "ir/graph.h"

namespace vigil::ops {

enum class RecurrentCell : int { kRnn, kGru, kLstm };

// The activation functions the recurrent ops name (matched case-insensitively).
// Plain int values, in this order: the CUDA device code switches on them.
enum class RecurrentActKind : int {
  kRelu, kTanh, kSigmoid, kAffine, kLeakyRelu, kThresholdedRelu, kScaledTanh, kHardSigmoid, kElu, kSoftsign,
  kSoftplus
};

struct RecurrentActivation {
  RecurrentActKind kind = RecurrentActKind::kTanh;
  double alpha = 0;  // the value given, else the default of the ONNX op of the same name
  double beta = 0;
};

struct RecurrentAttrs {
  int64_t gates = 1;    // 1 (RNN), 3 (GRU), 4 (LSTM)
  int64_t num_dir = 1;  // 2 when bidirectional
  bool reverse = false;  // direction == "reverse"
  int64_t layout = 0;    // 0 or 1; read only when asked (opset >= 14)
  std::optional<float> clip;  // positive when present
  bool input_forget = false;         // LSTM only
  bool linear_before_reset = false;  // GRU only
  int64_t acts_per_dir = 1;
  std::vector<RecurrentActivation> acts;  // acts_per_dir * num_dir, direction-major
};

// Reads and checks the attributes of a `cell` node; `read_layout` is whether
// the 'layout' attribute exists (opset >= 14). Alphas and betas are consumed
// in order by the functions that take them (as onnxruntime does); a function
// whose value is not given takes its op's default. Errors name the node
// (InvalidInputError, as a backend's ctx.Fail).
Result<RecurrentAttrs> ReadRecurrentAttrs(const ir::Node& node, RecurrentCell cell, bool read_layout);

}  // namespace vigil::ops
