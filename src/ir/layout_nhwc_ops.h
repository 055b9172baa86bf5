// Internal to the NHWC layout pass (layout_nhwc.cpp): the default-domain
// ops that run channels-last as they are once their per-axis values are
// permuted, so that the NHWC region can extend through them:
//   Concat(a, b, axis=1)            -> Concat(a', b', axis=3)
//   Resize(X, roi, scales, sizes)   -> Resize(X', roi', scales', sizes')
//   Resize(X, ..., axes=[2, 3])     -> Resize(X', ..., axes=[1, 2])   (opset 18+)
// where ' is the NHWC copy (for roi, scales and sizes: their values in NHWC
// axis order). A UNet's decoder is made of these: without them, every skip
// connection and every upsample sits between two transposes. The pass
// decides where; this file says what each op needs.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace vigil::ir {

// NCHW axis `a` (0..3) -> its position in NHWC.
int64_t NhwcAxisOf(int64_t a);

// What moving `n` to NHWC takes, for a default-domain Concat or Resize whose
// op type is in `enabled` (NhwcOptions::nhwc_layout_ops), at default-domain
// opset `opset`; nullopt for any other node, or where the pass cannot move
// it (an axis out of range, an axes attribute before opset 18).
struct NhwcLayoutOp {
  // The activations (Concat: every input; Resize: X), each 4-D NCHW.
  std::vector<size_t> data_inputs;
  // Inputs holding one value per axis in NCHW order (Resize's roi, scales
  // and sizes, where it has no axes attribute): empty, or constants the
  // pass gives a permuted copy (PermuteAxisValues).
  std::vector<size_t> axis_inputs;
  // Whether data inputs may be NCHW values the pass transposes on the way
  // in (Concat: its result is at least as large as all of them together).
  bool takes_nchw_inputs = false;
};
std::optional<NhwcLayoutOp> NhwcLayoutOpFor(const Node& n, int64_t opset, const std::vector<std::string>& enabled);

// Rewrites `n`'s axis attributes (Concat's axis, Resize's axes) to NHWC,
// in place; NhwcLayoutOpFor(n) must have accepted it.
void RewriteAxesToNhwc(Node& n);

// A copy of per-axis constant `t` named `name` with its values in NHWC
// axis order: 4 values, or 8 (roi: starts, then ends). nullopt when `t` is
// not a 1-D tensor of 4 or 8 whole-byte elements with its data present.
std::optional<Tensor> PermuteAxisValues(const Tensor& t, std::string name);

}  // namespace vigil::ir
