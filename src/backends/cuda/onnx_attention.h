// The kernel lists of the ONNX-standard attention ops on the GPU:
// Attention (opsets 23, 24; onnx_attention.cu) and RotaryEmbedding (opset 23;
// rotary_embedding.cu), with the semantics of the CPU kernels
// (backends/cpu/attention.cpp, rotary_embedding.cpp) and the same shape and
// attribute parsing (ops/attention_params.h). vigil's own fused
// ai.vigil.Attention is attention.h.
#pragma once

#include <span>

#include "backends/cuda/cuda_kernel.h"

namespace vigil::cuda {

// Part of FindCudaKernel's family list (cuda_kernel.cpp). Declared here, not
// in cuda_kernel.h, so that adding them does not rebuild every family.
std::span<const CudaKernelDef> OnnxAttentionCudaKernels();
std::span<const CudaKernelDef> RotaryEmbeddingCudaKernels();

}  // namespace vigil::cuda
