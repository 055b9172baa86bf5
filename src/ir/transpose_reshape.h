// Cancelling layout Transposes that meet across a Reshape. After the NHWC
// layout pass a ViT's patch embedding reads
//   Y [N,14,14,768] (ConvNhwc) -> Transpose(0,3,1,2) [N,768,14,14]
//     -> Reshape [N,768,196] -> Transpose(0,2,1) -> Z [N,196,768]
// which is Z = Reshape(Y, [N,196,768]): two full copies of the activation
// that compute nothing. The pass moves the first Transpose past the Reshape
// (where the Reshape only merges adjacent dims that stay adjacent and in
// order in the Transpose's input) and composes it with the second; an
// identity composition disappears.
#pragma once

#include <cstddef>
#include <string>
#include <unordered_map>

#include "base/status.h"
#include "ir/graph.h"

namespace vigil::ir {

// Rewrites, in the main graph, until none is left:
//  - a = Transpose(x, p1) -> r = Reshape(a, s) -> z = Transpose(r, p2),
//    where the shapes of x and r are proven (ir/symbolic_shapes.h: known
//    numbers or products of symbols, no dim 0) and r merges runs of
//    adjacent dims of a, each run being, through p1, dims of x that are
//    consecutive and ascending (a dim of 1 at the end may join the last
//    run). It becomes m = Reshape(x, s') -> z = Transpose(m, p'), s' the
//    merged dims in x's order (a new int64 initializer, using 0 and -1 for
//    dims not known at load time) and p' the composition of the induced
//    permutation with p2; when p' is the identity, z = Reshape(x, s').
//  - a = Transpose(x, p1) -> z = Transpose(a, p2): z = Transpose(x, p'),
//    or, when p' is the identity, z's readers read x (unless z is a graph
//    output, then the pair stays).
// a and r must be read only by the next node of the chain (as its data
// input, once, and not from inside a subgraph) and must not be graph
// outputs; the Transposes' perm must be a permutation of their input's
// rank. The Reshape's old target and the shape arithmetic that only it read
// are removed. Records in `types` the types of the values it creates;
// returns the number of chains rewritten.
Result<size_t> CancelTransposeReshape(Model& model, std::unordered_map<std::string, TypeInfo>& types);

}  // namespace vigil::ir
