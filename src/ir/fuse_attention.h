// The attention fusion pass for transformer models. torch.onnx writes
// nn.MultiheadAttention (self-attention, packed in-projection) as a chain of
// ~20 nodes per layer: a Reshape/Unsqueeze/Transpose/Squeeze/Gather split of
// the projection into q, k, v, per tensor a Reshape to [S, B*H, D], a
// Transpose and a Reshape to [B, H, S, D], scale Muls, MatMul, Softmax,
// MatMul and a Transpose back to [S, B, H, D]. Each Transpose copies the
// whole activation; the fused op reads q, k and v in place from the
// projection output.
//
// BERT-style exports (transformers' BertModel through torch.onnx) write
// separate q, k and v projections, batch first, with an additive mask and a
// guard on P; the pass packs the three projections into one and takes those
// chains too (the second pattern below).
//
// The op it writes, ai.vigil.Attention (opset 1 of domain "ai.vigil"):
//   Y = Attention(QKV [, M]), attributes num_heads (int), scale (float),
//   layout ("sbe" | "bse"), undefined_rows ("nan", the default, | "zero").
//   QKV [S, B, 3E] ("sbe") or [B, S, 3E] ("bse") of a float dtype holds Q,
//   K, V in [0,E), [E,2E), [2E,3E) of its last axis, head h in
//   [h*D, (h+1)*D) of each, D = E / num_heads. Y [S, B, E] (or [B, S, E]):
//   Y[s,b,h*D+i] = sum_t P[b,h,s,t] V[t,b,h*D+i],
//   P[b,h,s,:] = softmax_t(scale * sum_j Q[s,b,h*D+j] K[t,b,h*D+j] + M[b,h,s,t]).
//   M, optional, has QKV's dtype and rank <= 4 and broadcasts (numpy rules)
//   to [B, num_heads, S, S]. A row whose softmax is undefined (every score
//   -inf, or a NaN or +inf score) is NaN, as ONNX's Softmax gives; with
//   undefined_rows "zero" its P is 0 and so is its Y, as the exporter's
//   Where(IsNaN(P), 0, P) guard gives (the unfused chain would still give
//   NaN there where V itself holds inf or NaN). No dropout.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "ir/graph.h"

namespace vigil::ir {

inline constexpr const char kAttentionOp[] = "Attention";
inline constexpr const char kAttentionUndefinedRows[] = "undefined_rows";

// Rewrites, in the main graph, every self-attention chain
//   r = Reshape(qkv) [S,B,3,E] -> Unsqueeze [1,S,B,3,E]
//     -> Transpose(perm 3,1,2,0,4) -> Squeeze [3,S,B,E]
//     -> Gather(axis 0, index 0 | 1 | 2) = q | k | v [S,B,E];
//   each: Reshape [S,B*H,D] -> Transpose(1,0,2) -> Reshape [B,H,S,D];
//   k also Transpose(0,1,3,2); scores = MatMul(q', k'^T), at most one scale
//   (Mul by, or Div by, a single-element value) on q', on k' (before or after
//   its Transpose) and on the scores; Softmax(last axis);
//   MatMul(P, v') -> Transpose(2,0,1,3) [S,B,H,D]
// into y = ai.vigil.Attention(qkv) [S,B,E] (layout "sbe") followed by
// Reshape(y, [0,0,H,D]), which writes the last Transpose's output. qkv must
// have a known type of rank 3 with a known last dim 3E; every dim above is
// proven by symbolic evaluation of the Reshape targets (ir/symbolic_shapes.h),
// S and B may be symbolic, H and D must be numbers. The scale is the product
// of the scale operands, each a constant or constant arithmetic over shapes
// (torch computes sqrt(1/sqrt(D)) from Shape(q) at run time). No value of
// the chain but the last may be read by a node that still has a path to a
// graph output once the chain is gone (the chain's own shape arithmetic
// reads them, and goes with it), nor be a graph output. Anything else leaves
// the chain unchanged. When anything is fused, every node left without a
// path to a graph output is removed.
//
// Adds to `types` the types of the values it creates, adds the opset import
// of "ai.vigil" when it fuses anything, and returns the number of chains
// fused.
//
// Second pattern (batch first, three projections):
//   q|k|v = ai.vigil.MatMulBias(x, W, b) [B,S,E] (one x; W [K,E] and b [E]
//     constant initializers of x's dtype) -> Reshape [B,S,H,D];
//   q' = Transpose(0,2,1,3); k'^T = Transpose(0,2,3,1) (or Transpose(0,2,1,3)
//   then Transpose(0,1,3,2)); v' = Transpose(0,2,1,3);
//   scores = MatMul(q', k'^T), at most one scale on q', on k'^T and on the
//   scores (as above); then optionally Add(scores, M), M any value whose
//   Add leaves the scores' shape; Softmax(last axis); optionally
//   P = Where(IsNaN(P), 0, P); MatMul(P, v') [B,H,S,D], optionally an
//   identity Reshape; Transpose(0,2,1,3) [B,S,H,D]
// into qkv = MatMulBias(x, [Wq Wk Wv], [bq bk bv]) [B,S,3E] (new packed
// initializers), y = ai.vigil.Attention(qkv [, M]) [B,S,E] (layout "bse",
// undefined_rows "zero" with the guard), and Reshape(y, [0,0,H,D]), which
// writes the last Transpose's output. B, S symbolic or numbers as above;
// H and D numbers.
//
// `accept`, when given, is asked about each match first, with the Attention
// node the rewrite would write (attributes set) and the types of its inputs
// (qkv, and the mask when there is one; an entry may be null when the type
// is not known); a match it refuses stays unfused (the session asks the
// device backend, which takes only the dtypes and head sizes it has a fast
// kernel for).
using AttentionAcceptor = std::function<bool(const Node& attention, const std::vector<const TypeInfo*>& inputs)>;
Result<size_t> FuseAttention(Model& model, std::unordered_map<std::string, TypeInfo>& types,
                             const AttentionAcceptor& accept = {});

}  // namespace vigil::ir
