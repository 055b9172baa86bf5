#include "backends/cpu/cpu_backend.h"

#include "backends/cpu/gemm.h"
#include "backends/cpu/kernel.h"

namespace vigil::cpu {
namespace {

class CpuBackend final : public runtime::Backend {
 public:
  explicit CpuBackend(int max_threads) : max_threads_(max_threads) {}
  std::string_view name() const override { return "cpu"; }

  bool Supports(const ir::Node& node, int64_t opset) const override {
    return FindKernel(node.domain, node.op_type, opset) != nullptr;
  }

  Status Run(const ir::Node& node, int64_t opset, std::span<const runtime::Tensor* const> inputs,
             std::vector<runtime::Tensor>& outputs, runtime::OutputAllocator& allocator) const override {
    const KernelDef* def = FindKernel(node.domain, node.op_type, opset);
    if (!def) {
      return UnsupportedError("{}: the CPU backend has no kernel for {} at opset {}", ops::NodeLabel(node),
                              node.op_type, opset);
    }
    outputs.assign(node.outputs.size(), runtime::Tensor());
    KernelContext ctx(node, opset, inputs, outputs, allocator);
    ScopedGemmThreadLimit limit(max_threads_);
    return def->fn(ctx);
  }

 private:
  int max_threads_;
};

}  // namespace

std::shared_ptr<const runtime::Backend> MakeCpuBackend(int max_threads) {
  return std::make_shared<CpuBackend>(max_threads);
}

}  // namespace vigil::cpu
