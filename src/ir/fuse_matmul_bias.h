// The MatMul + bias fusion pass for transformer models. torch.onnx writes
// every Linear layer as MatMul(x, W) followed by Add(., b); a device backend
// runs the pair as one cuBLASLt product with a bias epilogue, saving the
// Add's full read and write of the activation.
//
// The op it writes, ai.vigil.MatMulBias (opset 1 of domain "ai.vigil"):
//   Y = MatMulBias(A, W, B)  is  Add(MatMul(A, W), B)  with W [K, N] and
//   B [N] or [1, N]; A has rank >= 2 (numpy MatMul semantics), Y has
//   MatMul's shape.
//   Y = MatMulBias(A, W, B, R)  is  Add(Add(MatMul(A, W), B), R): the
//   optional 4th input R (a transformer block's residual) has exactly Y's
//   shape and dtype, never broadcast, so a device adds it in the product's
//   epilogue (cuBLASLt's C matrix) instead of a separate Add re-reading and
//   re-writing the whole activation.
//   Y = MatMulBias(A, W, B) with the string attribute activation="gelu" is
//   Gelu(Add(MatMul(A, W), B)) (ONNX Gelu-20, approximate="none"), and with
//   activation="gelu_tanh" the same with approximate="tanh": a transformer's
//   first MLP product and its GELU, which a device applies in the product's
//   epilogue. A node with an activation takes no R.
// Pure graph rewriting: the session decides when to run it.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <unordered_map>

#include "base/status.h"
#include "ir/graph.h"

namespace vigil::ir {

inline constexpr const char kMatMulBiasOp[] = "MatMulBias";
inline constexpr const char kMatMulBiasActivation[] = "activation";

// What MatMulBias applies after the bias: its activation attribute.
enum class MatMulBiasAct { kNone, kGelu, kGeluTanh };
// The node's activation; an invalid-model error names a value (or type)
// that is none of "gelu" and "gelu_tanh".
Result<MatMulBiasAct> MatMulBiasActivationOf(const Node& node);

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

// Rewrites, in the main graph, every y = ai.vigil.MatMulBias(A, W, B) (3
// inputs) -> Add(y, r) (either operand order) into one
// ai.vigil.MatMulBias(A, W, B, r) that writes the Add's output, where y is
// not a graph output and has that Add as its only consumer, r is not y and
// does not depend on y, and r is known to be a tensor of y's dtype and y's
// exact shape, so the Add cannot broadcast: per `types` every dim the same
// number or the same named symbol (an unnamed dim equals nothing), or the
// shapes proven equal by symbolic evaluation (ir/symbolic_shapes.h).
// `accept`, when given, is asked about each fused node first (with its
// inputs set); a node it refuses leaves the pair unfused (the session asks
// the device backend). The pass creates no value, so `types` stays valid;
// returns the number of Adds fused away.
using ResidualAcceptor = std::function<bool(const Node& fused)>;
Result<size_t> FuseResidualAdd(Model& model, const std::unordered_map<std::string, TypeInfo>& types,
                               const ResidualAcceptor& accept = {});

// Rewrites, in the main graph, every y = ai.vigil.MatMulBias(A, W, B) (3
// inputs, no activation) -> Gelu(y), where y is not a graph output and has
// that Gelu as its only consumer, into one MatMulBias(A, W, B) with
// activation="gelu" (for ai.vigil.Gelu, or ONNX Gelu with approximate
// "none") or "gelu_tanh" (ONNX Gelu with approximate="tanh") that writes the
// Gelu's output. `accept`, when given, is asked about each fused node first;
// a node it refuses leaves the pair unfused. The pass creates no value;
// returns the number of Gelus fused away.
Result<size_t> FuseMatMulBiasGelu(Model& model, const ResidualAcceptor& accept = {});

}  // namespace vigil::ir
