// Parameter resolution of the image-geometry ops (CenterCropPad, Col2Im,
// AffineGrid), shared by their shape inference (vision.cpp) and the CPU
// kernels (backends/cpu/vision.cpp), so that both accept the same nodes and
// fail with the same messages. Errors are InvalidInputError("<node label>:
// <message>"), as in op_params.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "base/status.h"
#include "ir/graph.h"

namespace vigil::ops {

// --- CenterCropPad -------------------------------------------------------------

// The axes CenterCropPad's `shape` (input 1, `shape_len` values) applies to:
// the 'axes' attribute normalised against `rank` (each once), or all `rank`
// axes when absent; their count must be `shape_len`.
Result<std::vector<int64_t>> ResolveCenterCropPadAxes(const ir::Node& node, int64_t rank, size_t shape_len);

// Where output index o of an axis of input size `in` and output size `out`
// reads the input: o + shift when that lies in [0, in), else the zero fill.
// Cropping drops floor((in - out) / 2) elements in front; padding puts
// floor((out - in) / 2) zeros in front (the odd one goes at the end).
inline int64_t CenterCropPadShift(int64_t in, int64_t out) {
  return in >= out ? (in - out) / 2 : -((out - in) / 2);
}

// --- Col2Im ----------------------------------------------------------------------

// Col2Im's geometry over n spatial dims: the image and block (kernel) sizes
// from inputs 1 and 2, the dilations, strides and begin/end pads from the
// attributes (defaults 1, 1 and 0), and the number of block positions along
// each dim, (image + pads - dilation * (block - 1) - 1) / stride + 1.
struct Col2ImGeometry {
  std::vector<int64_t> image, block, dilations, strides, pads_begin, pads_end;
  std::vector<int64_t> positions;  // block positions per spatial dim
  int64_t block_size = 1;          // product of `block`
  int64_t position_count = 1;      // product of `positions`
};
Result<Col2ImGeometry> ResolveCol2Im(const ir::Node& node, const std::vector<int64_t>& image_shape,
                                     const std::vector<int64_t>& block_shape);

// Input 0 of shape `dims` ([N, C * block_size, position_count]) against the
// geometry; returns C.
Result<int64_t> Col2ImChannels(const ir::Node& node, const Col2ImGeometry& g, const std::vector<int64_t>& dims);

// --- AffineGrid --------------------------------------------------------------------

// AffineGrid's `size` input ([N, C, H, W] or [N, C, D, H, W]) checked
// against theta's dims ([N, 2, 3] or [N, 3, 4]; empty when unknown): returns
// the spatial sizes (H, W or D, H, W).
Result<std::vector<int64_t>> ResolveAffineGridSize(const ir::Node& node, const std::vector<int64_t>& size,
                                                   const std::vector<int64_t>& theta_dims);

// The align_corners attribute (0 or 1).
Result<bool> ReadAlignCorners(const ir::Node& node);

// Coordinate i of n evenly spaced positions in [-1, 1]: the pixel centres
// -1 + (2i + 1) / n, or with align_corners the corners -1 + 2i / (n - 1)
// (-1 for n = 1, as the ONNX reference gives).
inline double AffineGridCoordinate(int64_t i, int64_t n, bool align_corners) {
  if (align_corners) return n > 1 ? -1.0 + 2.0 * static_cast<double>(i) / static_cast<double>(n - 1) : -1.0;
  return -1.0 + (2.0 * static_cast<double>(i) + 1.0) / static_cast<double>(n);
}

}  // namespace vigil::ops
