// CUDA kernels of QuantizeLinear, DequantizeLinear and DynamicQuantizeLinear
// (quantize_linear.cu).
// Kept apart from cuda_kernel.h so that adding them rebuilds only
// cuda_kernel.cpp.
#pragma once

#include <span>

#include "backends/cuda/cuda_kernel.h"

namespace vigil::cuda {

std::span<const CudaKernelDef> QuantizeLinearCudaKernels();

}  // namespace vigil::cuda
