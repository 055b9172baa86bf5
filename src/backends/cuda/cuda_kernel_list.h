// Every CUDA kernel of every family, for the module's plain-C kernel table
// (cuda_module.cpp, read by tools/ops_doc). Apart from cuda_kernel.h, which
// every family includes, so that this does not rebuild them.
#pragma once

#include <vector>

#include "backends/cuda/cuda_kernel.h"

namespace vigil::cuda {

// In lookup order (the families FindCudaKernel searches).
std::vector<const CudaKernelDef*> AllCudaKernels();

}  // namespace vigil::cuda
