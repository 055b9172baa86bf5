// GridSample's attributes, read and checked the same way by shape inference
// and by every backend's kernel. Opsets 16 to 19 take 4-D inputs and name the
// modes bilinear, nearest and bicubic; from opset 20 the input may have any
// number of spatial dims and the modes are linear, nearest and cubic.
#pragma once

#include <cstdint>

#include "base/status.h"
#include "ir/graph.h"

namespace vigil::ops {

enum class GridSampleMode { kNearest, kLinear, kCubic };
enum class GridSamplePadding { kZeros, kBorder, kReflection };

struct GridSampleAttrs {
  GridSampleMode mode = GridSampleMode::kLinear;
  GridSamplePadding padding = GridSamplePadding::kZeros;
  bool align_corners = false;
};

// An InvalidModel error naming the node for a mode, padding_mode or
// align_corners the opset does not define.
Result<GridSampleAttrs> ReadGridSampleAttrs(const ir::Node& node, int64_t opset);

}  // namespace vigil::ops
