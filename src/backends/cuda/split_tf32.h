// Float32 matrix products as three TF32 tensor-core products ("3xTF32").
// Each float32 operand x is split into hi = x rounded to TF32 (10 mantissa
// bits) and lo = (x - hi) rounded to TF32; then
//   a·b ≈ a_hi·b_hi + a_lo·b_hi + a_hi·b_lo
// with float32 accumulation. What is left out (a_lo·b_lo and lo's own
// rounding) is about 2^-21 of |a·b| per term. The larger part of the error
// that remains is the tensor cores' float32 accumulation, which truncates:
// on an H200, 1e-6 to 1.6e-5 relative L2 against float64 on random
// products, 3x to 24x the CUDA cores' error and 17x to 260x below one TF32
// product's; on ViT-B/16 and BERT-base 1.8e-5 and 2.5e-5 (CUDA cores: 1.6e-6
// and 7.6e-7; TF32: 1.1e-3 and 5.5e-4). See docs/cuda.md, "Numerics". The
// gain is speed: TF32 runs about 7x FFMA's rate on Ampere and Hopper, so
// three products still win on large matrices (ViT-B/16 and BERT-base at
// batch 64: 1.6x). The three products are one cuBLASLt product whose inner
// dimension is tripled: A3 = [a_hi | a_lo | a_hi], B3 = [b_hi; b_hi; b_lo].
// hi and lo keep only TF32's bits, so a tensor core that truncates its
// float32 inputs and one that rounds them see the same values.
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

#include "base/status.h"

namespace vigil::cuda {

// The tripled operand of one side. `src` holds `batches` matrices, each
// `outer` contiguous vectors of `inner` floats. k_inner: the inner
// dimension of the product runs along each vector, and dst holds, per
// matrix, `outer` vectors of 3 * inner floats (segments 0, 1, 2 of each
// vector). Otherwise it runs across the vectors, and dst holds, per matrix,
// 3 * outer vectors of `inner` floats (segment s is vectors s*outer ..).
// Segment `lo_segment` gets the lo parts, the other two the hi parts.
Status LaunchSplitTf32(const float* src, float* dst, int64_t batches, int64_t outer, int64_t inner, bool k_inner,
                       int lo_segment, cudaStream_t stream);

// The split of one value, as the kernel computes it (tests): hi and lo have
// TF32's bits only; non-finite x gives hi = x, lo = 0.
void SplitTf32Host(float x, float* hi, float* lo);

}  // namespace vigil::cuda
