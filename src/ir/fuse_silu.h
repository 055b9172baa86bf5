// The SiLU fusion pass for CPU sessions. EfficientNet-style exports write
// SiLU (Swish with alpha 1) as two nodes, s = Sigmoid(x), y = Mul(x, s):
// three passes over the activation (read x, write s; read x and s, write
// y). One ai.vigil.Silu reads x and writes y.
//
// The op it writes, ai.vigil.Silu (opset 1 of domain "ai.vigil"):
//   Y = X * Sigmoid(X), X of a float dtype, Y of X's dtype and shape; the
//   sigmoid rounded to the dtype before the product, as the two nodes do.
#pragma once

#include <cstddef>

#include "base/status.h"
#include "ir/graph.h"

namespace vigil::ir {

inline constexpr const char kSiluOp[] = "Silu";

// Rewrites, in the main graph, every s = Sigmoid(x) whose only reader is
// y = Mul(x, s) or Mul(s, x), s not a graph output, into y =
// ai.vigil.Silu(x). Adds the opset import of "ai.vigil" when it fuses
// anything; returns the number of pairs fused.
Result<size_t> FuseSilu(Model& model);

}  // namespace vigil::ir
