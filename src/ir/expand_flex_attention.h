// ai.onnx.preview FlexAttention (opset 1) as the ONNX ops it stands for. Its
// modifier bodies, score_mod and prob_mod, each take the whole score (or
// probability) tensor [B, Hq, L, S] and give one of the same shape, so they
// inline into the graph; sessions run the expansion on any backend.
//
// For Y = FlexAttention(Q, K, V), T the dtype of Q and P the softmax
// precision (attribute softmax_precision; by default float64 for float64
// inputs, else float32):
//   K, V  -> each K/V head repeated for its group of Hq / Hkv query heads
//            (Reshape [B, Hkv, 1, S, *] -> Expand [B, Hkv, Hq/Hkv, S, *] ->
//            Reshape [B, Hq, S, *]), unless Hq and Hkv are known and equal
//   c     = sqrt(scale) (scale: the attribute, default 1 / sqrt(E)),
//            computed in float64 for float64 inputs, else in float32, cast
//            to T; Q and K are each multiplied by c, as ONNX's own
//            expansion of the op does, so that the products round alike
//   S     = MatMul(Q * c, Transpose(K * c, [0, 1, 3, 2])), cast to P
//            (a scale <= 0 multiplies the product instead)
//   S'    = score_mod(S); Pr = Softmax(S', axis 3); Pr' = prob_mod(Pr)
//   Y     = MatMul(Pr', V), in P when P differs from T, then cast to T.
#pragma once

#include <cstddef>
#include <string>
#include <unordered_map>

#include "base/status.h"
#include "ir/graph.h"
#include "ir/types.h"

namespace vigil::ir {

inline constexpr const char kFlexAttentionDomain[] = "ai.onnx.preview";
inline constexpr const char kFlexAttentionOp[] = "FlexAttention";

// Whether `graph` (not its subgraphs) has a FlexAttention node.
bool HasFlexAttention(const Graph& graph);

// Replaces every FlexAttention node of the main graph by its expansion.
// `types` gives the inputs' types (Q's dtype must be known). Fails naming the
// node for a body that does not take and give one tensor of P, an unknown
// softmax_precision, or a sparse initializer in a body. Returns the number of
// nodes expanded.
Result<size_t> ExpandFlexAttention(Model& model, const std::unordered_map<std::string, TypeInfo>& types);

}  // namespace vigil::ir
