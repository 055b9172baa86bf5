// Output geometry of com.microsoft QLinearAveragePool, shared by its schema
// (src/ops/quantized_contrib.cpp) and its CPU kernel: AveragePool's rules for
// kernel_shape, strides, pads, auto_pad and ceil_mode (a ceil-mode window
// that would start past the padded input is dropped), on the spatial dims.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace vigil::ops {

struct QLinearPoolGeometry {
  std::vector<int64_t> out;    // output spatial dims
  std::vector<int64_t> begin;  // leading pad per spatial dim
};

// Returns false (and a reason in *why) when the attributes do not fit the
// `in` spatial dims.
inline bool ComputeQLinearPoolGeometry(const std::vector<int64_t>& in, const std::vector<int64_t>& kernel,
                                       std::vector<int64_t> strides, std::vector<int64_t> pads,
                                       const std::string& auto_pad, bool ceil_mode, QLinearPoolGeometry* g,
                                       std::string* why) {
  const size_t n = in.size();
  if (kernel.size() != n) {
    *why = "kernel_shape has " + std::to_string(kernel.size()) + " values, the input has " + std::to_string(n) +
           " spatial dims";
    return false;
  }
  if (strides.empty()) strides.assign(n, 1);
  if (pads.empty()) pads.assign(2 * n, 0);
  if (strides.size() != n || pads.size() != 2 * n) {
    *why = "strides needs " + std::to_string(n) + " values and pads " + std::to_string(2 * n);
    return false;
  }
  g->out.assign(n, 0);
  g->begin.assign(n, 0);
  for (size_t i = 0; i < n; ++i) {
    const int64_t k = kernel[i], s = strides[i], L = in[i];
    if (k < 1 || s < 1 || pads[i] < 0 || pads[i + n] < 0) {
      *why = "kernel_shape and strides must be >= 1 and pads >= 0";
      return false;
    }
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      const int64_t o = (L + s - 1) / s;
      const int64_t total = std::max<int64_t>((o - 1) * s + k - L, 0);
      g->begin[i] = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      g->out[i] = o;
      continue;
    }
    int64_t p0 = pads[i], p1 = pads[i + n];
    if (auto_pad == "VALID") {
      p0 = p1 = 0;
    } else if (auto_pad != "NOTSET" && !auto_pad.empty()) {
      *why = "auto_pad '" + auto_pad + "' is not NOTSET, VALID, SAME_UPPER or SAME_LOWER";
      return false;
    }
    const int64_t span = L + p0 + p1 - k;
    if (span < 0) {
      *why = "kernel_shape " + std::to_string(k) + " is larger than the padded input (" + std::to_string(L + p0 + p1) +
             ") along spatial dim " + std::to_string(i);
      return false;
    }
    int64_t o = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
    if (ceil_mode && (o - 1) * s >= L + p0) --o;
    g->out[i] = o;
    g->begin[i] = p0;
  }
  return true;
}

}  // namespace vigil::ops
