// Folds an inference BatchNormalization into the convolution before it:
//   Y = BatchNormalization(Conv(X, W, B), scale, bias, mean, var)
//   ->  Y = Conv(X, W', B'),  s = scale / sqrt(var + epsilon),
//       W'[m, ...] = W[m, ...] * s[m],  B'[m] = (B[m] - mean[m]) * s[m] + bias[m]
// (B taken as 0 where the Conv has none). Models exported from frameworks
// that keep BatchNormalization (PaddleOCR's) then have one node, not two,
// and the NHWC layout pass, which stops at BatchNormalization, keeps the
// whole chain channels-last. The folded values are computed in double and
// rounded to float32 once, so the result differs from the two nodes by
// float32 roundings of the weights (as oneDNN's or any reordered sum
// differs). Pure graph rewriting: the session decides when to run it.
#pragma once

#include <cstddef>

#include "base/status.h"
#include "ir/graph.h"

namespace vigil::ir {

// Folds, in the main graph, every BatchNormalization (default domain; one
// output, or its optional training outputs unnamed; training_mode 0;
// spatial 1 before opset 9) whose X is the output of a default-domain Conv
// that no other node reads and that is not a graph output, where the Conv's
// W (rank >= 3) and B, and the BatchNormalization's scale, bias, mean and
// var ([M] each, M = W's dims[0]) are float32 constant initializers (not
// graph inputs, which the caller may override). The Conv then writes the
// BatchNormalization's output; W' and B' are new initializers (W's name is
// kept where nothing else reads it). Returns the number folded.
Result<size_t> FoldBatchNormIntoConv(Model& model);

}  // namespace vigil::ir
