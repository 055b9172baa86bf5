// The kernel list of Softmax and LogSoftmax on the GPU (softmax.cu).
#pragma once

#include <span>

#include "backends/cuda/cuda_kernel.h"

namespace vigil::cuda {

// Part of FindCudaKernel's family list (cuda_kernel.cpp).
std::span<const CudaKernelDef> SoftmaxCudaKernels();

}  // namespace vigil::cuda
