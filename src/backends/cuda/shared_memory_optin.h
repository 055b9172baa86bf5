// Opting a kernel in to more than 48 KB of dynamic shared memory, which CUDA
// requires per kernel and per device before the first launch that asks for
// it. Shared by the kernels that tile large blocks (attention.cu,
// attention_mma.cu).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

#include "backends/cuda/cuda_check.h"
#include "base/status.h"

namespace vigil::cuda {

// Sets `kernel`'s maximum dynamic shared memory to `bytes` when that is above
// the default 48 KB, once per device (bit d of `done` records device d).
template <typename Kernel>
Status AllowSharedMemory(Kernel kernel, size_t bytes, std::atomic<uint64_t>& done) {
  if (bytes <= 48 * 1024) return Status::Ok();
  int device = 0;
  VIGIL_CUDA_CALL(cudaGetDevice(&device));
  const uint64_t bit = device < 64 ? uint64_t{1} << device : 0;
  if (bit && (done.load(std::memory_order_acquire) & bit)) return Status::Ok();
  VIGIL_CUDA_CALL(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)));
  done.fetch_or(bit, std::memory_order_release);
  return Status::Ok();
}

}  // namespace vigil::cuda
