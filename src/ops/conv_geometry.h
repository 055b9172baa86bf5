// Sliding-window geometry shared by Conv, ConvTranspose and the pooling ops:
// reading and checking their window attributes (kernel_shape, strides,
// dilations, pads, auto_pad, ceil_mode, output_padding, output_shape) and the
// output-size arithmetic of the ONNX spec. Used both by shape inference and by
// every backend's kernels, so that the two always agree.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "ir/graph.h"

namespace vigil::ops {

enum class AutoPad { kNotSet, kSameUpper, kSameLower, kValid };

// The window attributes of one node, checked against the spatial rank.
struct WindowAttrs {
  AutoPad auto_pad = AutoPad::kNotSet;
  std::vector<int64_t> kernel;     // empty when not known (Conv without kernel_shape and unknown W)
  std::vector<int64_t> strides;    // all > 0
  std::vector<int64_t> dilations;  // all > 0
  std::vector<int64_t> pads;       // begins then ends (2 * rank); ignored under SAME_* and VALID
  bool ceil_mode = false;          // pooling only
  // ConvTranspose only:
  std::vector<int64_t> output_padding;  // rank entries, default 0
  std::vector<int64_t> output_shape;    // spatial sizes; empty when absent
};

// What a window op reads from its attributes.
struct WindowOptions {
  bool pooling = false;    // reads ceil_mode; pads must be smaller than the kernel extent
  bool transpose = false;  // reads output_padding and output_shape
};

// Reads and checks the window attributes for `spatial_rank` spatial dims.
// `kernel_from_weights` is W's spatial shape where known (Conv,
// ConvTranspose): it is used when kernel_shape is absent and must agree with
// kernel_shape when both are known. Pooling ops require kernel_shape.
Result<WindowAttrs> ReadWindowAttrs(const ir::Node& node, size_t spatial_rank,
                                    const std::optional<std::vector<int64_t>>& kernel_from_weights,
                                    WindowOptions options);

// Output size and the padding actually applied along one spatial dim.
struct WindowExtent {
  int64_t output = 0;
  int64_t pad_begin = 0;
  int64_t pad_end = 0;
};

// Conv and pooling: the output size of dim `i` for an input of `input_size`,
// with auto_pad resolved; an error naming the node when the window does not
// fit (e.g. a 7-wide kernel over a 5-wide unpadded input).
Result<WindowExtent> ForwardExtent(const ir::Node& node, const WindowAttrs& w, size_t i, int64_t input_size);

// ConvTranspose: the output size of dim `i` and the padding cropped from the
// full transposed result (negative when output_shape asks for more).
Result<WindowExtent> TransposeExtent(const ir::Node& node, const WindowAttrs& w, size_t i, int64_t input_size);

// MaxUnpool: the output size of dim `i`, (input - 1) * stride + kernel minus
// both pads (the input size MaxPool maps to `input_size`); an error naming
// the node when it is negative or beyond 2^40.
Result<int64_t> UnpoolSize(const ir::Node& node, const WindowAttrs& w, size_t i, int64_t input_size);

// (kernel - 1) * dilation + 1: the span of input one window covers.
inline int64_t EffectiveKernel(int64_t kernel, int64_t dilation) { return (kernel - 1) * dilation + 1; }

}  // namespace vigil::ops
