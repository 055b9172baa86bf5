// The NHWC layout pass: moves chosen 2D convolutions to channels-last
// (NHWC), which is what tensor-core convolution engines want, and then
// removes as many of the layout transposes this introduces as it can. Pure
// graph rewriting: it knows nothing of backends; the session decides which
// convolutions to move (runtime/conv_layout.h).
//
// The op it writes, ai.vigil.ConvNhwc (opset 1 of domain "ai.vigil"):
//   Y = ConvNhwc(X, W [, B [, Z]])  is ONNX Conv with the channel dim last,
//   plus an optional residual and activation:
//   Y = act(conv(X, W) + B + Z), X [N, H, W, C], W [M, kH, kW, C/group]
//   (KRSC), B [M] (may be the empty name when Z is given), Z [N, OH, OW, M]
//   (Y's shape, no broadcasting), Y [N, OH, OW, M]; the attributes are
//   Conv's (auto_pad, pads, strides, dilations, group, kernel_shape), 2D
//   only, plus `activation`: "" (none), "Relu" or "Relu6" (min(max(v, 0),
//   6), ONNX Clip(0, 6)), and `input_activation`, the same choices applied
//   to X as it is read: Y = act(conv(in_act(X), W) + B + Z) (zero padding
//   stays zero: both activations map 0 to 0). The pass sets Z when an Add of
//   the convolution's result and a same-shape value was its only consumer,
//   the activation when a Relu or Clip(0, 6) then was, and moves a
//   convolution's activation onto the input of a depthwise convolution that
//   is its result's only reader (NhwcOptions::depthwise_input_activation).
#pragma once

#include <cstddef>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "ir/graph.h"

namespace vigil::ir {

inline constexpr const char kVigilDomain[] = "ai.vigil";
inline constexpr int64_t kVigilOpsetVersion = 1;
inline constexpr const char kConvNhwcOp[] = "ConvNhwc";
inline constexpr const char kConvNhwcRelu[] = "Relu";
inline constexpr const char kConvNhwcRelu6[] = "Relu6";
// Channels-last pools (2D only), written by the pass for pools inside an NHWC
// region: X [N, H, W, C], Y [N, OH, OW, C] (GlobalAveragePoolNhwc: [N, 1, 1,
// C]), with the attributes and the values of the ONNX op of the same name
// without the suffix. MaxPoolNhwc has no Indices output (storage_order is
// ignored).
inline constexpr const char kMaxPoolNhwcOp[] = "MaxPoolNhwc";
inline constexpr const char kAveragePoolNhwcOp[] = "AveragePoolNhwc";
inline constexpr const char kGlobalAveragePoolNhwcOp[] = "GlobalAveragePoolNhwc";
inline constexpr const char kConvNhwcInputActivation[] = "input_activation";

// perm of Transpose from NCHW to NHWC, and back.
inline const std::vector<int64_t> kToNhwc = {0, 2, 3, 1};
inline const std::vector<int64_t> kToNchw = {0, 3, 1, 2};

struct NhwcOptions {
  // Fold a Relu that is a converted convolution's only consumer into the
  // ConvNhwc (activation="Relu").
  bool fuse_relu = false;
  // Fold a Clip(0, 6) (min and max constant initializers, or attributes
  // before opset 11) in the same place (activation="Relu6").
  bool fuse_relu6 = false;
  // Fold Add(conv result, Z) into the ConvNhwc as its input Z when the Add
  // is the result's only consumer and Z has the result's exact shape (per
  // `types`); runs before the activations, so a Relu after the Add fuses too.
  bool fuse_residual = false;
  // After the fusions: when a ConvNhwc with activation Relu or Relu6 has one
  // reader, a depthwise ConvNhwc (group == C == M, W [M, kH, kW, 1], any
  // kernel) reading it as X with no input_activation, and the value is no
  // graph output, clear the producer's activation and set it as the
  // reader's input_activation: the producer then writes its result once,
  // with no separate activation pass over it, and the reader clips what it
  // loads. For backends whose depthwise kernel applies input_activation.
  bool depthwise_input_activation = false;
  // ONNX pool op types ("MaxPool", "AveragePool", "GlobalAveragePool") to
  // run channels-last where their input comes out of an NHWC region (a
  // to-NCHW Transpose): Pool(Transpose(v)) -> Transpose(PoolNhwc(v)), where
  // that does not add a transpose, before the transposes are cancelled. A
  // MaxPool whose Indices output is read stays NCHW. The caller lists the
  // ones its device runs.
  std::vector<std::string> nhwc_pools;
  // "Concat" and "Resize" (default domain) to run channels-last in the same
  // place, as they are, with their axis attributes and per-axis constants
  // permuted (layout_nhwc_ops.h). A Concat also takes operands from outside
  // the region, each through a new transpose, where its result only feeds
  // to-NHWC transposes. The caller lists the ones its device runs as well
  // on channels-last data.
  std::vector<std::string> nhwc_layout_ops;
};

struct NhwcStats {
  size_t convs = 0;              // Conv nodes rewritten to ConvNhwc
  size_t transposes = 0;         // activation transposes left in the graph by the pass (weights not counted)
  size_t sunk = 0;               // elementwise ops that now run in NHWC
  size_t fused_relus = 0;        // Relus folded into a ConvNhwc
  size_t fused_relu6s = 0;       // Clip(0, 6)s folded into a ConvNhwc
  size_t fused_residuals = 0;    // Adds folded into a ConvNhwc as its Z
  size_t pools = 0;              // pools rewritten to their channels-last ai.vigil op
  size_t layout_ops = 0;         // Concats and Resizes that now run in NHWC
  size_t input_activations = 0;  // activations moved onto a depthwise reader's input_activation
};

// Rewrites the Conv nodes `conv_nodes` (indices into model.graph.nodes; each
// must be a default-domain Conv with 4-D X, or an ai.vigil.QConv of the QDQ
// pass (ir/fuse_qdq.h), which becomes QConvNhwc the same way and takes no
// further fusion) of the main graph:
//   Y = Conv(X, W, B)  ->  Xt = Transpose(X, perm=[0,2,3,1]),
//                          Wt = Transpose(W, perm=[0,2,3,1]),
//                          Yt = ai.vigil.ConvNhwc(Xt, Wt, B),
//                          Y  = Transpose(Yt, perm=[0,3,1,2])
// (Wt of a constant W is meant to be folded into a KRSC initializer by the
// caller's constant folding), then sinks the to-NCHW transposes below
// elementwise ops (Relu, Clip, LeakyRelu, Sigmoid, HardSigmoid, HardSwish,
// Tanh, Add, Sub, Mul, Div, ...) whose other operands are transposed the same
// way, layout-free (every dim 1) or constant initializers (which get a
// permuted copy), and cancels to-NCHW -> to-NHWC pairs. A transpose moves
// only where that does not add transposes. Graph outputs keep their names
// and their NCHW layout; the pools in `options.nhwc_pools` become their
// channels-last ops where they read the NHWC region, and the Concats and
// Resizes in `options.nhwc_layout_ops` follow it; ops the pass does not
// know (other pools, Reshape, ...) keep reading NCHW. `types` gives the types of values (from
// load-time inference): shapes decide which operands are layout-free.
// Adds the opset import of "ai.vigil" when it converts anything.
Result<NhwcStats> ConvertConvsToNhwc(Model& model, const std::vector<size_t>& conv_nodes,
                                     const std::unordered_map<std::string, TypeInfo>& types,
                                     const NhwcOptions& options = {});

}  // namespace vigil::ir
