#include "ops/conv_geometry.h"

#include <fmt/ranges.h>

#include "ops/attributes.h"

namespace vigil::ops {
namespace {

Result<AutoPad> ReadAutoPad(const ir::Node& node) {
  VIGIL_ASSIGN_OR_RETURN(std::string s, StringAttr(node, "auto_pad", "NOTSET"));
  // Some exporters write an empty string for the default.
  if (s == "NOTSET" || s.empty()) return AutoPad::kNotSet;
  if (s == "SAME_UPPER") return AutoPad::kSameUpper;
  if (s == "SAME_LOWER") return AutoPad::kSameLower;
  if (s == "VALID") return AutoPad::kValid;
  return InvalidModelError("{}: auto_pad is '{}', expected NOTSET, SAME_UPPER, SAME_LOWER or VALID", NodeLabel(node),
                           s);
}

// An ints attribute of exactly `count` values, each at least `min_value`;
// `fill` (repeated `count` times) when absent.
Result<std::vector<int64_t>> ReadSpatialInts(const ir::Node& node, std::string_view name, size_t count,
                                             int64_t fill, int64_t min_value) {
  // Far beyond any real model; keeps the size arithmetic below from overflowing.
  constexpr int64_t kMaxValue = int64_t{1} << 30;
  VIGIL_ASSIGN_OR_RETURN(std::vector<int64_t> v, IntsAttr(node, name, std::vector<int64_t>(count, fill)));
  // An empty list written by some exporters means "the default".
  if (v.empty()) v.assign(count, fill);
  if (v.size() != count) {
    return InvalidModelError("{}: {} has {} values [{}], expected {} for {} spatial dims", NodeLabel(node), name,
                             v.size(), fmt::join(v, ","), count,
                             name == "pads" ? count / 2 : count);
  }
  for (int64_t x : v) {
    if (x < min_value || x > kMaxValue) {
      return InvalidModelError("{}: {} [{}] has a value outside [{}, {}]", NodeLabel(node), name, fmt::join(v, ","),
                               min_value, kMaxValue);
    }
  }
  return v;
}

Result<std::vector<int64_t>> ReadKernel(const ir::Node& node, size_t rank,
                                        const std::optional<std::vector<int64_t>>& from_weights, bool pooling) {
  if (from_weights) {
    for (int64_t k : *from_weights) {
      if (k < 1) {
        return InvalidModelError("{}: the weights' spatial shape [{}] has an empty kernel dim", NodeLabel(node),
                                 fmt::join(*from_weights, ","));
      }
    }
  }
  if (!HasAttr(node, "kernel_shape")) {
    if (pooling) return InvalidModelError("{}: the kernel_shape attribute is required", NodeLabel(node));
    return from_weights.value_or(std::vector<int64_t>{});
  }
  VIGIL_ASSIGN_OR_RETURN(std::vector<int64_t> kernel, ReadSpatialInts(node, "kernel_shape", rank, 1, 1));
  if (from_weights && *from_weights != kernel) {
    return InvalidModelError("{}: kernel_shape [{}] does not match the weights' spatial shape [{}]", NodeLabel(node),
                             fmt::join(kernel, ","), fmt::join(*from_weights, ","));
  }
  return kernel;
}

// Input sizes beyond this are refused, so that size arithmetic cannot overflow.
constexpr int64_t kMaxInputSize = int64_t{1} << 40;

Status CheckInputSize(const ir::Node& node, size_t i, int64_t input_size) {
  if (input_size < 0 || input_size > kMaxInputSize) {
    return InvalidModelError("{}: spatial dim {} has size {}, outside [0, 2^40]", NodeLabel(node), i, input_size);
  }
  return Status::Ok();
}

// Python-style floor(total / 2): total may be negative for ConvTranspose.
int64_t FloorHalf(int64_t total) { return total >= 0 ? total / 2 : -((-total + 1) / 2); }

}  // namespace

Result<WindowAttrs> ReadWindowAttrs(const ir::Node& node, size_t spatial_rank,
                                    const std::optional<std::vector<int64_t>>& kernel_from_weights,
                                    WindowOptions options) {
  WindowAttrs w;
  VIGIL_ASSIGN_OR_RETURN(w.auto_pad, ReadAutoPad(node));
  VIGIL_ASSIGN_OR_RETURN(w.kernel, ReadKernel(node, spatial_rank, kernel_from_weights, options.pooling));
  VIGIL_ASSIGN_OR_RETURN(w.strides, ReadSpatialInts(node, "strides", spatial_rank, 1, 1));
  VIGIL_ASSIGN_OR_RETURN(w.dilations, ReadSpatialInts(node, "dilations", spatial_rank, 1, 1));
  VIGIL_ASSIGN_OR_RETURN(w.pads, ReadSpatialInts(node, "pads", 2 * spatial_rank, 0, 0));
  if (options.pooling) {
    VIGIL_ASSIGN_OR_RETURN(int64_t ceil_mode, IntAttr(node, "ceil_mode", 0));
    w.ceil_mode = ceil_mode != 0;
    // A window that lies wholly in the padding has no input to pool.
    for (size_t i = 0; i < spatial_rank && w.auto_pad == AutoPad::kNotSet; ++i) {
      int64_t extent = EffectiveKernel(w.kernel[i], w.dilations[i]);
      if (w.pads[i] >= extent || w.pads[i + spatial_rank] >= extent) {
        return InvalidModelError("{}: pads [{}] must be smaller than the kernel extent {} along spatial dim {}",
                                 NodeLabel(node), fmt::join(w.pads, ","), extent, i);
      }
    }
  }
  if (options.transpose) {
    VIGIL_ASSIGN_OR_RETURN(w.output_padding, ReadSpatialInts(node, "output_padding", spatial_rank, 0, 0));
    VIGIL_ASSIGN_OR_RETURN(w.output_shape, IntsAttr(node, "output_shape"));
    // Exporters write either the spatial sizes or the full N,C,spatial shape.
    if (w.output_shape.size() == spatial_rank + 2) w.output_shape.erase(w.output_shape.begin(), w.output_shape.begin() + 2);
    if (!w.output_shape.empty() && w.output_shape.size() != spatial_rank) {
      return InvalidModelError("{}: output_shape [{}] has {} values, expected {} spatial sizes", NodeLabel(node),
                               fmt::join(w.output_shape, ","), w.output_shape.size(), spatial_rank);
    }
    for (int64_t v : w.output_shape) {
      if (v < 0 || v > kMaxInputSize) return InvalidModelError("{}: output_shape [{}] has a size outside [0, 2^40]", NodeLabel(node),
                                          fmt::join(w.output_shape, ","));
    }
  }
  return w;
}

Result<WindowExtent> ForwardExtent(const ir::Node& node, const WindowAttrs& w, size_t i, int64_t input_size) {
  const size_t rank = w.strides.size();
  const int64_t stride = w.strides[i];
  const int64_t extent = EffectiveKernel(w.kernel[i], w.dilations[i]);
  VIGIL_RETURN_IF_ERROR(CheckInputSize(node, i, input_size));
  WindowExtent e;
  if (w.auto_pad == AutoPad::kSameUpper || w.auto_pad == AutoPad::kSameLower) {
    // SAME: one output per stride step; the padding needed is split with the
    // odd element at the end (UPPER) or at the start (LOWER).
    e.output = (input_size + stride - 1) / stride;
    int64_t total = std::max<int64_t>(0, (e.output - 1) * stride + extent - input_size);
    e.pad_begin = w.auto_pad == AutoPad::kSameUpper ? total / 2 : total - total / 2;
    e.pad_end = total - e.pad_begin;
    return e;
  }
  if (w.auto_pad == AutoPad::kNotSet) {
    e.pad_begin = w.pads[i];
    e.pad_end = w.pads[i + rank];
  }
  const int64_t padded = input_size + e.pad_begin + e.pad_end;
  if (padded < extent) {
    return InvalidModelError(
        "{}: spatial dim {} has size {} ({} with pads), smaller than the kernel extent {} (kernel {}, dilation {})",
        NodeLabel(node), i, input_size, padded, extent, w.kernel[i], w.dilations[i]);
  }
  if (w.ceil_mode) {
    e.output = (padded - extent + stride - 1) / stride + 1;
    // A last window that would start in the end padding is dropped.
    if ((e.output - 1) * stride >= input_size + e.pad_begin) --e.output;
  } else {
    e.output = (padded - extent) / stride + 1;
  }
  return e;
}

Result<WindowExtent> TransposeExtent(const ir::Node& node, const WindowAttrs& w, size_t i, int64_t input_size) {
  const size_t rank = w.strides.size();
  const int64_t stride = w.strides[i];
  VIGIL_RETURN_IF_ERROR(CheckInputSize(node, i, input_size));
  // The size of the full result before any cropping (input_size * stride
  // is at most 2^70, so it is checked).
  int64_t scaled = 0;
  if (__builtin_mul_overflow(input_size, stride, &scaled) || scaled > kMaxInputSize) {
    return InvalidModelError("{}: spatial dim {} of size {} with stride {} gives an output beyond 2^40",
                             NodeLabel(node), i, input_size, stride);
  }
  const int64_t full = scaled - stride + w.output_padding[i] + EffectiveKernel(w.kernel[i], w.dilations[i]);
  WindowExtent e;
  bool same = w.auto_pad == AutoPad::kSameUpper || w.auto_pad == AutoPad::kSameLower;
  if (!w.output_shape.empty() || same) {
    // The requested size decides the padding (pads are ignored); the odd
    // element is cropped at the end for SAME_UPPER, at the start otherwise.
    e.output = !w.output_shape.empty() ? w.output_shape[i] : scaled;
    int64_t total = full - e.output;
    e.pad_begin = w.auto_pad == AutoPad::kSameUpper ? FloorHalf(total) : total - FloorHalf(total);
    e.pad_end = total - e.pad_begin;
    return e;
  }
  if (w.auto_pad == AutoPad::kNotSet) {
    e.pad_begin = w.pads[i];
    e.pad_end = w.pads[i + rank];
  }
  e.output = full - e.pad_begin - e.pad_end;
  if (e.output < 0) {
    return InvalidModelError("{}: spatial dim {} of size {} gives a negative output size {} (pads {} and {})",
                             NodeLabel(node), i, input_size, e.output, e.pad_begin, e.pad_end);
  }
  return e;
}

Result<int64_t> UnpoolSize(const ir::Node& node, const WindowAttrs& w, size_t i, int64_t input_size) {
  const size_t rank = w.strides.size();
  VIGIL_RETURN_IF_ERROR(CheckInputSize(node, i, input_size));
  int64_t scaled = 0;  // (input_size - 1) * stride, up to 2^70
  if (__builtin_mul_overflow(input_size - 1, w.strides[i], &scaled) || scaled > kMaxInputSize) {
    return InvalidModelError("{}: spatial dim {} of size {} with stride {} gives an output beyond 2^40",
                             NodeLabel(node), i, input_size, w.strides[i]);
  }
  const int64_t size = scaled + w.kernel[i] - w.pads[i] - w.pads[i + rank];
  if (size < 0) {
    return InvalidModelError("{}: spatial dim {} of size {} gives a negative output size {} (kernel {}, stride {}, "
                             "pads {} and {})",
                             NodeLabel(node), i, input_size, size, w.kernel[i], w.strides[i], w.pads[i],
                             w.pads[i + rank]);
  }
  return size;
}

}  // namespace vigil::ops
