// The kernel list of vigil's fused elementwise ops on the GPU (gelu.cpp):
// ai.vigil.Gelu, written by the GELU fusion pass (ir/fuse_gelu.h).
#pragma once

#include <span>

#include "backends/cuda/cuda_kernel.h"

namespace vigil::cuda {

// Part of FindCudaKernel's family list (cuda_kernel.cpp).
std::span<const CudaKernelDef> FusedCudaKernels();

}  // namespace vigil::cuda
