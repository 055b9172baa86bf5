// The QDQ fusion pass for a device's int8 engines. A model quantized in QDQ
// form (onnxruntime.quantization.quantize_static, QuantFormat.QDQ) keeps
// every op in float between DequantizeLinear (DQ) and QuantizeLinear (Q)
// nodes; this pass rewrites the chains whose arithmetic can stay in integers
// into vigil's int8 ops, which read and write the quantized tensors:
//
//   DQ(x) , DQ(w) [, DQ(b) | b] -> Conv -> Q          => ai.vigil.QConv
//     [-> DQ -> Relu -> Q, same scale and zero point]     (activation Relu)
//   DQ(a) , DQ(W) -> MatMul [-> Add(b)] -> Q           => ai.vigil.QMatMul
//   DQ(a) , DQ(W) [, DQ(b) | b] -> Gemm -> Q               (activation Relu)
//     [-> DQ -> Relu -> Q, same scale and zero point]
//   DQ(a) , DQ(b) -> Add -> Q                          => ai.vigil.QAdd
//     [-> DQ -> Relu -> Q, same scale and zero point]     (activation Relu)
//   DQ(x) -> Relu -> Q, same scale, zero point 0       => Relu (int8)
//   DQ(x) -> MaxPool -> Q, same scale, zero point 0     => MaxPool (int8)
//
// The last two are exact: max commutes with the monotone quantization maps.
// Only symmetric int8 quantization is fused (every zero point 0, as
// docs/int8.md tells users to quantize): cuDNN's int8 convolutions pad with
// integer zeros and take no zero points. Each fused node writes the output
// of the Q it replaces, whose inferred type stays valid.
//
// The ops it writes (opset 1 of domain "ai.vigil"); int8 tensors throughout,
// float32 scales:
//   Y = QConv(X, W, scale, bias)  X [N, C, H, W], W [M, C, kH, kW] (group
//     1, 2D), scale and bias [M]:
//     Y[n, m, ...] = saturate(round_half_even(act(float(acc) * scale[m] +
//     bias[m]))), acc the exact int32 sum of X * W over the window (zero
//     padding), act "" (none) or "Relu"; Conv's attributes (auto_pad, pads,
//     strides, dilations, kernel_shape, group = 1) plus `activation`. The
//     pass folds scale[m] = sx * sw[m] / sy and bias[m] = b[m] / sy (b the
//     dequantized bias), computed in double and rounded once to float32.
//   Y = QConvNhwc(X, W, scale, bias)  the same with X [N, H, W, C], W
//     [M, kH, kW, C], Y [N, OH, OW, M]: the NHWC layout pass
//     (ir/layout_nhwc.h) moves QConv there as it moves Conv to ConvNhwc.
//   Y = QMatMul(A, W, scale, bias)  A [..., K], W [N, K] (a Linear layer's
//     weight: the pass transposes MatMul's constant [K, N]), scale and bias
//     [N]: Y[..., n] = saturate(round_half_even(act(float(acc) * scale[n] +
//     bias[n]))), acc the exact int32 dot product of A's row and W[n];
//     `activation` "" or "Relu". Folded as QConv's: scale[n] = sa * sw[n] /
//     sy, bias[n] = b[n] / sy. Gemm is fused with transA 0, alpha 1 and
//     beta 1; W must be a constant (products of two activations stay float).
//   C = QAdd(A, A_scale, B, B_scale, C_scale)  A and B int8 of one shape (no
//     broadcasting), scales float32 scalars: the unfused chain's float32
//     arithmetic step by step, so the result equals DQ -> Add -> Q exactly:
//     C = saturate(round_half_even(act(float(A) * A_scale + float(B) *
//     B_scale) / C_scale)), each product, the sum and the quotient rounded to
//     float32 (no fused multiply-add); `activation` "" or "Relu".
// Pure graph rewriting: the session decides when to run it and asks the
// device about each node.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "ir/graph.h"

namespace vigil::ir {

inline constexpr const char kQConvOp[] = "QConv";
inline constexpr const char kQConvNhwcOp[] = "QConvNhwc";
inline constexpr const char kQAddOp[] = "QAdd";
inline constexpr const char kQMatMulOp[] = "QMatMul";

// One Conv, MatMul or Gemm of a QDQ chain and what became of it, for `inspect`.
struct QdqNote {
  std::string op_type;  // "Conv", "MatMul" or "Gemm"
  std::string node;     // "Conv 'conv_6'"
  bool int8 = false;    // fused into a QConv or QMatMul
  std::string reason;   // why not, when !int8
};

struct QdqStats {
  size_t convs = 0;  // QConv nodes written
  size_t matmuls = 0;  // QMatMul nodes written
  size_t adds = 0;   // QAdd nodes written
  size_t relus = 0;  // Relus that now run on int8 (folded into a QConv/QAdd, or an int8 Relu)
  size_t pools = 0;  // MaxPools that now run on int8
  // Every Conv, MatMul and Gemm that reads a DequantizeLinear output: fused
  // or not, and why.
  std::vector<QdqNote> notes;
};

// Asked about each node the pass would write, with the types of its inputs
// and outputs (the NCHW QConv is asked as the QConvNhwc it will become, with
// NHWC types); a node it refuses keeps its chain unfused, and a refused
// QConv's note says `why_not`.
using QdqAcceptor = std::function<bool(const Node& fused, const std::vector<const TypeInfo*>& inputs,
                                       const std::vector<const TypeInfo*>& outputs, std::string* why_not)>;

// Rewrites the main graph as above; `types` are the load-time types of its
// values (the fused nodes' new initializers are not in it). Adds the opset
// import of "ai.vigil" when it fuses a QConv, QMatMul or QAdd. Nothing is fused when
// the graph has no DequantizeLinear.
Result<QdqStats> FuseQdq(Model& model, const std::unordered_map<std::string, TypeInfo>& types,
                         const QdqAcceptor& accept);

}  // namespace vigil::ir
