// How a MatMul maps onto matrix products (linalg.cpp), shared with the
// integer and quantized matmuls (quantized_linear.cpp).
#pragma once

#include <cstdint>
#include <vector>

#include "backends/cpu/gemm.h"
#include "backends/cpu/kernel.h"

namespace vigil::cpu {

// numpy semantics, with batch dims broadcast and vector operands promoted to
// matrices.
struct MatMulPlan {
  std::vector<int64_t> out_shape;
  GemmShape gemm;
  // Per output matrix: where its A and B matrices start, in elements.
  std::vector<int64_t> a_offsets, b_offsets;
  // B is one matrix shared by every batch and A's matrices are consecutive:
  // the whole batch is one [batch*M, K] x [K, N] product.
  bool fold_batch = false;
};

// Plans A (a_shape) x B (b_shape); fails, naming the node, on a scalar
// operand, inner dims that differ or batch dims that do not broadcast.
Result<MatMulPlan> PlanMatMul(const KernelContext& ctx, const std::vector<int64_t>& a_shape,
                              const std::vector<int64_t>& b_shape);

}  // namespace vigil::cpu
