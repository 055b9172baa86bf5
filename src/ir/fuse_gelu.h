// The GELU fusion pass for transformer models. torch.onnx (before opset 20)
// writes the exact GELU as five elementwise nodes,
//   Div(x, 1.4142135) -> Erf -> Add(., 1) -> Mul(x, .) -> Mul(., 0.5),
// each reading and writing the whole activation; a device backend runs it
// as one elementwise kernel.
//
// The op it writes, ai.vigil.Gelu (opset 1 of domain "ai.vigil"):
//   Y = Gelu(X) = 0.5 * X * (1 + erf(X / sqrt(2))), X of a float dtype,
//   Y of X's dtype and shape; computed in float (ONNX Gelu-20 with
//   approximate="none", for models of older opsets).
#pragma once

#include <cstddef>

#include "base/status.h"
#include "ir/graph.h"

namespace vigil::ir {

inline constexpr const char kGeluOp[] = "Gelu";

// Rewrites, in the main graph, every chain
//   d = Div(x, c), e = Erf(d), f = Add(e, 1) or Add(1, e),
//   g = Mul(x, f) or Mul(f, x), y = Mul(g, 0.5) or Mul(0.5, g)
// into y = ai.vigil.Gelu(x), where c, 1 and 0.5 are single-element constant
// initializers of a float dtype (c within 1e-3 relative of sqrt(2), the
// others within 1e-6 relative), and d, e, f and g each have their chain's
// next node as their only consumer and are not graph outputs. An initializer
// that is also a graph input is not a constant. Adds the opset import of
// "ai.vigil" when it fuses anything; returns the number of chains fused.
Result<size_t> FuseGelu(Model& model);

}  // namespace vigil::ir
