// Batch-first attention: the follow-up to FuseAttention (ir/fuse_attention.h)
// that removes the two layout Transposes torch.onnx leaves around every
// nn.MultiheadAttention of a batch-first model such as torchvision's ViT:
//   x [B,S,E] -> Transpose(1,0,2) [S,B,E] -> MatMulBias (in-projection)
//     -> qkv [S,B,3E] -> Attention(layout "sbe") -> y [S,B,E]
//     -> Reshape -> Reshape [S*B,E] -> Gemm(out-projection, transB=1)
//     -> Reshape [S,B,E] -> Transpose(1,0,2) -> z [B,S,E]
// Both projections act row by row, so the order of the leading dims does not
// matter to them: the pass runs the block batch-first instead,
//   qkv' = MatMulBias(x, W, b) [B,S,3E] -> Attention(layout "bse") -> y' [B,S,E]
//   z    = MatMulBias(y', Wo^T, bo) [B,S,E]
// saving two full copies of the activation per layer.
#pragma once

#include <cstddef>
#include <string>
#include <unordered_map>

#include "base/status.h"
#include "ir/graph.h"

namespace vigil::ir {

// Rewrites, in the main graph, every chain above whose Attention
// (ai.vigil, layout "sbe") reads a qkv written by an ai.vigil.MatMulBias
// whose input is a Transpose(perm [1,0,2]) of a rank-3 x, where
//  - the y -> z chain is exactly Reshape, Reshape, Gemm, Reshape,
//    Transpose(perm [1,0,2]), each reading the previous value as its data;
//  - symbolic evaluation (ir/symbolic_shapes.h) proves the second Reshape
//    gives [S*B, E] and the third [S, B, Eo], with S, B the leading dims of
//    the first Transpose's output and E the last dim of y;
//  - the Gemm has transA=0, transB=1, alpha=beta=1, a constant 2-D B
//    [Eo, E] of y's dtype and a constant C of that dtype, [Eo] or [1, Eo];
//  - no value of the chain but z is a graph output, and none is read by a
//    node that still has a path to a graph output once the chain is gone
//    (the chain's own shape arithmetic reads the Transposes' and the Gemm's
//    outputs through Shape, and goes with it).
// The in-projection and the Attention are rewired (new value names, layout
// "bse"), a new initializer Wo^T [E, Eo] (B transposed, same dtype) feeds a
// MatMulBias that writes z, and every node left without a path to a graph
// output is removed, as are the initializers only removed nodes read (the
// Gemm weights, the Reshape targets).
// Anything else leaves the chain unchanged. Adds to `types` the types of the
// values it creates; returns the number of chains rewritten.
Result<size_t> AttentionBatchFirst(Model& model, std::unordered_map<std::string, TypeInfo>& types);

}  // namespace vigil::ir
