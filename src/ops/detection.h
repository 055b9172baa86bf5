// The run-time checks of the detection ops that every backend's kernel makes
// on its inputs' shapes (the schemas, in detection.cpp, check what is known
// when the model loads).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "ir/graph.h"

namespace vigil::ops {

// NonMaxSuppression: boxes [num_batches, num_boxes, 4] and scores
// [num_batches, num_classes, num_boxes]. An InvalidInput error naming the
// node otherwise; boxes_text and scores_text describe the inputs in it.
Status CheckNmsShapes(const ir::Node& node, const std::vector<int64_t>& boxes, std::string_view boxes_text,
                      const std::vector<int64_t>& scores, std::string_view scores_text);

}  // namespace vigil::ops
