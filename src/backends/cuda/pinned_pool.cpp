#include "backends/cuda/pinned_pool.h"

#include <bit>

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include "backends/cuda/cuda_check.h"

namespace vigil::cuda {

PinnedPool::~PinnedPool() {
  for (auto& [bytes, block] : free_) cudaFreeHost(block);
}

Result<runtime::Tensor> PinnedPool::Allocate(ir::DataType dtype, std::vector<int64_t> shape) {
  auto count = runtime::ElementCount(shape);
  auto bytes = count ? ir::DataTypeStorageBytes(dtype, *count) : std::nullopt;
  if (!bytes) {
    return InvalidInputError("cannot allocate a host tensor of dtype {} with this shape", ir::DataTypeName(dtype));
  }
  const size_t size = std::bit_ceil(std::max<size_t>(static_cast<size_t>(*bytes), 4096));
  void* block = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = free_.find(size); it != free_.end()) {
      block = it->second;
      free_bytes_ -= size;
      free_.erase(it);
      ++reuses_;
    }
  }
  if (!block) {
    cudaError_t e = cudaHostAlloc(&block, size, cudaHostAllocPortable);
    if (e != cudaSuccess) {
      Status s = CudaCallFailed(e, {"cudaHostAlloc", __FILE__, __LINE__});
      return s.WithFact("requested", fmt::format("{} bytes of page-locked host memory for {}[{} elements]", size,
                                                 ir::DataTypeName(dtype), *count));
    }
    std::lock_guard<std::mutex> lock(mu_);
    ++allocations_;
  }
  std::shared_ptr<PinnedPool> self = shared_from_this();
  std::shared_ptr<const void> owner(block, [self, size](const void* p) { self->Give(const_cast<void*>(p), size); });
  return runtime::Tensor::Shared(dtype, std::move(shape), block, std::move(owner));
}

void PinnedPool::Give(void* block, size_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  if (free_bytes_ + bytes > kKeepBytes) {
    cudaFreeHost(block);
    return;
  }
  free_.emplace(bytes, block);
  free_bytes_ += bytes;
}

size_t PinnedPool::allocations() const {
  std::lock_guard<std::mutex> lock(mu_);
  return allocations_;
}

size_t PinnedPool::reuses() const {
  std::lock_guard<std::mutex> lock(mu_);
  return reuses_;
}

}  // namespace vigil::cuda
