// Which scale (and zero point) element QuantizeLinear and DequantizeLinear
// apply to each element of x: one for all (per tensor), one per index along
// `axis` (per axis, opset 13+), or one per block of `block_size` elements
// along `axis` (blocked, opset 21+). Read and checked the same way by every
// backend's kernel, so that a bad scale gives the same diagnosis on each.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "ir/graph.h"

#if defined(__CUDACC__)
#define VIGIL_QUANT_HOST_DEVICE __host__ __device__
#else
#define VIGIL_QUANT_HOST_DEVICE
#endif

namespace vigil::ops {

struct QuantScaleLayout {
  enum class Mode { kPerTensor, kPerAxis, kBlocked } mode = Mode::kPerTensor;
  int64_t axis_dim = 1;    // x's size along the axis
  int64_t inner = 1;       // product of x's dims after the axis
  int64_t block_size = 0;  // kBlocked
  int64_t blocks = 1;      // the scale's size along the axis (kBlocked)
};

// The scale element for x's element `i` (row-major flat index).
VIGIL_QUANT_HOST_DEVICE inline int64_t QuantScaleIndex(const QuantScaleLayout& l, int64_t i) {
  if (l.mode == QuantScaleLayout::Mode::kPerTensor) return 0;
  const int64_t a = (i / l.inner) % l.axis_dim;
  if (l.mode == QuantScaleLayout::Mode::kPerAxis) return a;
  const int64_t outer = i / (l.inner * l.axis_dim);
  return (outer * l.blocks + a / l.block_size) * l.inner + i % l.inner;
}

// Checks the scale (input 1) and the zero point (input 2, null when absent)
// against x, at run time, and picks the layout. An InvalidInput error names
// the node; x_text describes x in it ("float32[2,3]").
Result<QuantScaleLayout> ReadQuantScaleLayout(const ir::Node& node, int64_t opset, const std::vector<int64_t>& x,
                                              std::string_view x_text, const std::vector<int64_t>& scale,
                                              const std::vector<int64_t>* zero_point);

}  // namespace vigil::ops
