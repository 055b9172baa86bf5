// Internal to the CPU attention family: the kernels that AttentionKernels()
// (attention.cpp) lists.
#pragma once

#include "backends/cpu/kernel.h"

namespace vigil::cpu {

Status AttentionKernel(KernelContext& ctx);         // attention.cpp
Status RotaryEmbeddingKernel(KernelContext& ctx);   // rotary_embedding.cpp
Status LinearAttentionKernel(KernelContext& ctx);   // linear_attention.cpp

}  // namespace vigil::cpu
