// Output shapes of MatMul (linalg.cpp) and Conv (conv_pool.cpp), shared with
// their integer and quantized variants (quantized_linear.cpp), whose operands
// sit at other input positions and whose dtypes differ from the inputs'.
#pragma once

#include <cstddef>
#include <optional>
#include <vector>

#include "base/status.h"
#include "ir/types.h"
#include "ops/schema.h"

namespace vigil::ops {

// numpy matmul of inputs `a` and `b`: the output dims (batch dims broadcast,
// vector operands promoted and the added dim dropped), or nullopt when a rank
// is not known. Fails on a scalar operand, inner dims that differ or batch
// dims that do not broadcast.
Result<std::optional<std::vector<ir::Dim>>> MatMulOutputDims(InferenceContext& ctx, size_t a, size_t b);

// Where a Conv-like op keeps its weights and bias; X is always input 0.
struct ConvOperands {
  size_t w = 1;
  std::optional<size_t> bias = 2;
  bool same_dtype = true;  // W (and B) must have X's dtype
};

// Sets output 0 to Conv's output over X and W (group, kernel_shape, strides,
// pads, dilations, auto_pad) with element type `out` (X's when kUndefined).
Status InferConvOutput(InferenceContext& ctx, const ConvOperands& operands, ir::DataType out);

}  // namespace vigil::ops
