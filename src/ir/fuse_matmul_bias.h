// The MatMul + bias fusion pass for transformer models. torch.onnx writes
// every Linear layer as MatMul(x, W) followed by Add(., b); a device backend
// runs the pair as one cuBLASLt product with a bias epilogue, saving the
// Add's full read and write of the activation.
//
// The op it writes, ai.vigil.MatMulBias (opset 1 of domain "ai.vigil"):
//   Y = MatMulBias(A, W, B)  is  Add(MatMul(A, W), B)  with W [K, N] and
//   B [N] or [1, N]; A has rank >= 2 (numpy MatMul semantics), Y has
//   MatMul's shape. Pure graph rewriting: the session decides when to run it.
#pragma once

#include <cstddef>
#include <string>
#include <unordered_map>

#include "base/status.h"
#include "ir/graph.h"

namespace vigil::ir {

inline constexpr const char kMatMulBiasOp[] = "MatMulBias";

// Rewrites, in the main graph, every MatMul(A, W) -> Add(., b) (either
// operand order of the Add) where W is a 2-D constant initializer [K, N], b
// a constant initializer of the same dtype with shape [N] or [1, N], A is
// known (per `types`) to have rank >= 2, and the MatMul's output is not a
// graph output and has that Add as its only consumer, into one
// ai.vigil.MatMulBias node that writes the Add's output. An initializer that
// is also a graph input is not a constant (the caller may override it).
// Adds the opset import of "ai.vigil" when it fuses anything; returns the
// number of fused pairs.
Result<size_t> FuseMatMulBias(Model& model, const std::unordered_map<std::string, TypeInfo>& types);

}  // namespace vigil::ir
