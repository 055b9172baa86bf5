// Page-locked (pinned) host buffers for a session's inputs and outputs.
// A copy between the GPU and pageable memory goes through the driver's own
// staging buffer in chunks, at a fraction of the bus speed; from pinned
// memory the copy engine reads or writes the buffer directly (DMA).
// cudaHostAlloc is slow (it maps every page for the device: about a
// millisecond per call for tens of MB), so freed buffers are kept and handed
// out again, up to a cap; the pool lives as long as any buffer it gave out.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "base/status.h"
#include "runtime/tensor.h"

namespace vigil::cuda {

class PinnedPool : public std::enable_shared_from_this<PinnedPool> {
 public:
  // Freed buffers kept for reuse, at most this many bytes in all.
  static constexpr size_t kKeepBytes = size_t{1} << 30;

  static std::shared_ptr<PinnedPool> Create() { return std::shared_ptr<PinnedPool>(new PinnedPool()); }
  ~PinnedPool();
  PinnedPool(const PinnedPool&) = delete;
  PinnedPool& operator=(const PinnedPool&) = delete;

  // A host tensor in pinned memory (a reused block when one fits: sizes are
  // rounded up to a power of two, at least 4 KiB).
  Result<runtime::Tensor> Allocate(ir::DataType dtype, std::vector<int64_t> shape);

  // Blocks allocated and reused so far (for tests and notes).
  size_t allocations() const;
  size_t reuses() const;

 private:
  PinnedPool() = default;
  void Give(void* block, size_t bytes);

  mutable std::mutex mu_;
  std::multimap<size_t, void*> free_;  // by block size
  size_t free_bytes_ = 0;
  size_t allocations_ = 0, reuses_ = 0;
};

}  // namespace vigil::cuda
