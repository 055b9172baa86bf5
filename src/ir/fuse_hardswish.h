// The HardSwish-chain fusion pass for CPU sessions. Paddle's exports (the
// PP-OCR models among them) write hard_swish as four nodes,
//   a = Add(x, 3), c = Clip(a, 0, 6), m = Mul(x, c), y = Div(m, 6):
// four passes over the activation. One ai.vigil.HardSwishChain reads x and
// writes y.
//
// The op it writes, ai.vigil.HardSwishChain (opset 1 of domain "ai.vigil"):
//   Y = (X * Clip(X + add, min, max)) / div, X of a float dtype, Y of X's
//   dtype and shape; float attributes add, min, max and div (the chain's
//   constants); each step rounded to the dtype as the node it replaces
//   rounds it, so that Y equals the chain's bit for bit. (Not ONNX's
//   HardSwish, x * max(0, min(1, x / 6 + 0.5)), which rounds differently.)
#pragma once

#include <cstddef>

#include "base/status.h"
#include "ir/graph.h"

namespace vigil::ir {

inline constexpr const char kHardSwishChainOp[] = "HardSwishChain";

// Rewrites, in the main graph, every chain
//   a = Add(x, k) or Add(k, x), c = Clip(a, lo, hi), m = Mul(x, c) or
//   Mul(c, x), y = Div(m, d)
// into y = ai.vigil.HardSwishChain(x) with attributes add = k, min = lo,
// max = hi and div = d, where k, lo, hi and d are single-element constant
// initializers of float32, float16 or bfloat16 (exact as float attributes;
// an initializer that is also a graph input is not a constant), Clip has
// both bounds as inputs (opset 11 and later), and a, c and m each have their
// chain's next node as their only consumer and are not graph outputs. Adds
// the opset import of "ai.vigil" when it fuses anything; returns the number
// of chains fused.
Result<size_t> FuseHardSwishChains(Model& model);

}  // namespace vigil::ir
