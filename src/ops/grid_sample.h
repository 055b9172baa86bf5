// GridSample's attributes, read and checked the same way by shape inference
// and by every backend's kernel. Opsets 16 to 19 take 4-D inputs and name the
// modes bilinear, nearest and bicubic; from opset 20 the input may have any
// number of spatial dims and the modes are linear, nearest and cubic.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

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

// The run-time shape check every backend's kernel makes: X of rank 4 (opsets
// 16 to 19) or rank >= 3 (from 20), grid [N, D1_out, ..., r] for X's r
// spatial dims. Returns Y's dims [N, C, D1_out, ...], or an InvalidInput
// error naming the node; x_text and grid_text describe the inputs in it.
Result<std::vector<int64_t>> GridSampleOutputDims(const ir::Node& node, int64_t opset,
                                                  const std::vector<int64_t>& x, std::string_view x_text,
                                                  const std::vector<int64_t>& grid, std::string_view grid_text);

}  // namespace vigil::ops
