// The CPU backend's kernel interface: a kernel is a function that reads its
// inputs and the node's attributes from a KernelContext and asks it for its
// outputs. Kernels live in an explicit table (kernel_table.cpp), one list per
// op family. The CPU backend is the reference: kernels are written for
// clarity and correctness over every attribute combination, not for speed.
#pragma once

#include <climits>
#include <cstdint>
#include <span>
#include <vector>

#include "base/status.h"
#include "ir/graph.h"
#include "ops/attributes.h"
#include "runtime/backend.h"
#include "runtime/tensor.h"

namespace vigil::cpu {

namespace fast {
class KernelCache;
}  // namespace fast

using runtime::OutputAllocator;

class KernelContext {
 public:
  KernelContext(const ir::Node& node, int64_t opset, std::span<const runtime::Tensor* const> inputs,
                std::vector<runtime::Tensor>& outputs, OutputAllocator& allocator)
      : node_(node), opset_(opset), inputs_(inputs), outputs_(outputs), allocator_(allocator) {}

  const ir::Node& node() const { return node_; }
  int64_t opset() const { return opset_; }

  size_t num_inputs() const { return inputs_.size(); }
  // Input i, or null when omitted (optional input given as "" or not listed).
  const runtime::Tensor* input(size_t i) const { return i < inputs_.size() ? inputs_[i] : nullptr; }
  bool has_input(size_t i) const { return input(i) != nullptr; }

  size_t num_outputs() const { return outputs_.size(); }
  // Whether output i is consumed at all ("" outputs are not).
  bool output_wanted(size_t i) const { return i < node_.outputs.size() && !node_.outputs[i].empty(); }
  // Allocates output i with the given dtype and shape and returns it for
  // writing. Call once per output; every element must then be written.
  Result<runtime::Tensor*> Output(size_t i, ir::DataType dtype, std::vector<int64_t> shape);
  // Sets output i to an existing tensor (e.g. Identity, Reshape: a view that
  // shares the input's storage). The data must not be modified afterwards.
  Status SetOutput(size_t i, runtime::Tensor tensor);
  // Output i as Output or SetOutput left it, for a kernel that runs another
  // kernel on its context and then works on the result (FusedConv); an
  // empty tensor before either.
  runtime::Tensor* produced_output(size_t i) { return i < outputs_.size() ? &outputs_[i] : nullptr; }

  // InvalidModel/InvalidInput/Unsupported errors naming the node.
  template <typename... Args>
  Status Fail(fmt::format_string<Args...> f, Args&&... args) const {
    return InvalidInputError("{}: {}", ops::NodeLabel(node_), fmt::format(f, std::forward<Args>(args)...));
  }
  template <typename... Args>
  Status Unsupported(fmt::format_string<Args...> f, Args&&... args) const {
    return UnsupportedError("{}: {}", ops::NodeLabel(node_), fmt::format(f, std::forward<Args>(args)...));
  }
  // "dtype float16 of input 0 is not supported by the CPU Conv kernel"
  Status UnsupportedDtype(size_t input_index) const;

  // Whether the kernel may take an optimised path (src/backends/cpu/fast/)
  // where it has one, instead of its reference code. On by default; a
  // backend made with CpuOptions::reference_kernels turns it off, and tests
  // run both to check one against the other.
  bool optimised() const { return optimised_; }
  void set_optimised(bool on) { optimised_ = on; }
  // What optimised paths prepare once per session (fast/kernel_cache.h);
  // null when the kernel runs outside a backend (tests).
  fast::KernelCache* cache() const { return cache_; }
  void set_cache(fast::KernelCache* cache) { cache_ = cache; }

 private:
  const ir::Node& node_;
  int64_t opset_;
  std::span<const runtime::Tensor* const> inputs_;
  std::vector<runtime::Tensor>& outputs_;
  OutputAllocator& allocator_;
  bool optimised_ = true;
  fast::KernelCache* cache_ = nullptr;
};

using KernelFn = Status (*)(KernelContext& ctx);

struct KernelDef {
  const char* domain;  // "" for the default domain
  const char* op;
  int since_version;
  int until_version;  // inclusive; kLatest for the current definition
  KernelFn fn;
};

inline constexpr int kLatest = INT_MAX;

// Every CPU kernel (kernel_table.cpp).
std::span<const KernelDef> AllKernels();
// The kernel for op/domain at opset, or null.
const KernelDef* FindKernel(std::string_view domain, std::string_view op, int64_t opset);

}  // namespace vigil::cpu
