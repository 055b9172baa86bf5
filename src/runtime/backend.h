// The narrow interface between the session and a backend. A backend says
// which nodes it can run and runs one node at a time; the session plans,
// partitions, binds and schedules. Versioned so that separately built modules
// (the CUDA backend, libvigil_cuda.so) can refuse a mismatched core.
#pragma once

#include <span>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "ir/graph.h"
#include "runtime/tensor.h"

namespace vigil::runtime {

inline constexpr int kBackendInterfaceVersion = 1;

// Gives a node its output buffers: the run's arena slot when the memory plan
// has one of the right size for that output, a heap buffer otherwise.
class OutputAllocator {
 public:
  virtual ~OutputAllocator() = default;
  virtual Result<Tensor> Allocate(size_t output_index, ir::DataType dtype, std::vector<int64_t> shape) = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string_view name() const = 0;
  // Whether this backend has an implementation of the node's op at `opset`.
  virtual bool Supports(const ir::Node& node, int64_t opset) const = 0;
  // Runs one node. inputs[i] is null for an omitted optional input. The
  // backend fills `outputs` (one per node output) through `allocator` or with
  // views of its inputs.
  virtual Status Run(const ir::Node& node, int64_t opset, std::span<const Tensor* const> inputs,
                     std::vector<Tensor>& outputs, OutputAllocator& allocator) const = 0;
};

}  // namespace vigil::runtime
