// The CUDA backend object: per-thread streams and library handles, device
// memory from CUDA's stream-ordered pool, host<->device copies, and the
// kernel tables. Created through the module entry (cuda_module.cpp).
#pragma once

#include <memory>

#include "backends/cuda/cuda_kernel.h"
#include "runtime/backend.h"

namespace vigil::cuda {

// Creates the backend on options.device; the calling thread's handles are
// created here, synchronously, before any other thread's.
Result<std::unique_ptr<runtime::Backend>> CreateCudaBackend(const CudaOptions& options);

// "CUDA runtime 13.0, cuDNN 9.14.0, cuBLASLt 130000, NVIDIA H200 (sm_90)"
std::string DescribeCudaStack(int device);

}  // namespace vigil::cuda
