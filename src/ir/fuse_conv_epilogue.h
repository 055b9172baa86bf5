// A convolution that stays in the model's layout (NCHW, any rank) and its
// residual Add and Relu (or Clip(0, 6)) as one ai.vigil.FusedConv, for a
// device backend: it then adds the bias and the residual and applies the
// activation in one pass over Y instead of three (channels-last
// convolutions get the same from the NHWC pass, ir/layout_nhwc.h).
//
// The op it writes, ai.vigil.FusedConv (opset 1 of domain "ai.vigil"):
//   Y = FusedConv(X, W [, B [, Z]]) = act(Conv(X, W, B) + Z)
//   with ONNX Conv's inputs and attributes (any spatial rank), Z of Y's
//   exact shape and dtype (no broadcasting; B may be the empty name when Z
//   is given), and `activation`: "" (none), "Relu" or "Relu6"
//   (min(max(v, 0), 6), ONNX Clip(0, 6)). Each step rounds to Y's dtype as
//   the separate ONNX ops would.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <unordered_map>

#include "base/status.h"
#include "ir/graph.h"

namespace vigil::ir {

inline constexpr const char kFusedConvOp[] = "FusedConv";

// Whether the device takes the fused node (its inputs' types are known).
using FusedConvAcceptor = std::function<bool(const Node& fused)>;

// Rewrites each default-domain Conv of the main graph whose result's only
// reader (not a graph output, not read inside a subgraph) is an Add of it
// and a value of exactly its type (per `types`: the same dtype, and dims
// proven equal, ir::SameDims: the same numbers or named symbols), a Relu,
// or a Clip(0, 6),
// or that Add followed by such an activation as its result's only reader,
// into one FusedConv where `accept` takes it. The fused node takes the
// place of the last node it absorbs (every input it reads comes before
// that, every reader of its output after). Returns how many it wrote.
Result<size_t> FuseConvEpilogue(Model& model, const std::unordered_map<std::string, TypeInfo>& types,
                                const FusedConvAcceptor& accept);

}  // namespace vigil::ir
