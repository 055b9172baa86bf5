// The kernel list of vigil's fused attention on the GPU (attention.cu):
// ai.vigil.Attention, multi-head scaled-dot-product attention reading Q, K
// and V straight from the packed in-projection output (layout "sbe"
// [S, B, 3E] or "bse" [B, S, 3E]) and writing Y ([S, B, E] or [B, S, E])
// with no transposes and no [S, S] score matrix in global memory.
//
// float16 / bfloat16 run a flash-attention-style kernel on tensor cores
// (scores and softmax in float, P rounded to the input dtype for P.V, float
// accumulation); float32 runs a simple CUDA-core kernel. Head sizes
// D = E / num_heads of 16, 32, 64 and 128 are supported.
#pragma once

#include <span>

#include "backends/cuda/cuda_kernel.h"

namespace vigil::cuda {

// Part of FindCudaKernel's family list (cuda_kernel.cpp). Declared here, as
// FusedCudaKernels and SoftmaxCudaKernels are in their own headers, so that
// adding it does not touch cuda_kernel.h (included by every .cu file).
std::span<const CudaKernelDef> AttentionCudaKernels();

}  // namespace vigil::cuda
