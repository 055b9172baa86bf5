// Internal to the NHWC layout pass (layout_nhwc.cpp): which ONNX pools have a
// channels-last ai.vigil twin (layout_nhwc.h documents the ops), and the
// in-place rewrite of a pool node into it. The pass decides where.
#pragma once

#include <string>
#include <vector>

#include "ir/graph.h"

namespace vigil::ir {

// The channels-last op name for `n` when it is a default-domain MaxPool,
// AveragePool or GlobalAveragePool with one named input and a named first
// output, and its op type is in `enabled`; nullptr otherwise. (Whether a
// MaxPool's Indices output is read is the caller's check.)
const char* NhwcPoolOpFor(const Node& n, const std::vector<std::string>& enabled);

// Turns pool `n` into `nhwc_op` in the "ai.vigil" domain reading `x_nhwc`
// and writing `y_nhwc`: the same attributes less storage_order (there are
// no Indices), and the Indices output dropped.
void RewriteAsNhwcPool(Node& n, const char* nhwc_op, const std::string& x_nhwc, const std::string& y_nhwc);

}  // namespace vigil::ir
