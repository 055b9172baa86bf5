#include "backends/cpu/cpu_backend.h"

#include "backends/cpu/gemm.h"
#include "backends/cpu/kernel.h"
#include "backends/cpu/kernel_type_constraints.h"

namespace vigil::cpu {
namespace {

class CpuBackend final : public runtime::Backend {
 public:
  explicit CpuBackend(int max_threads) : max_threads_(max_threads) {}
  std::string_view name() const override { return "cpu"; }

  bool Supports(const ir::Node& node, int64_t opset) const override {
    return FindKernel(node.domain, node.op_type, opset) != nullptr;
  }

  // Also refuses a node whose known input dtypes its kernel does not take
  // (kernel_type_constraints.h), so that the model fails when it loads, not
  // when the node runs.
  bool SupportsTyped(const ir::Node& node, int64_t opset, const runtime::NodeTypes& types,
                     std::string* why_not) const override {
    const KernelDef* def = FindKernel(node.domain, node.op_type, opset);
    if (!def) {
      if (why_not) *why_not = fmt::format("the CPU backend has no kernel for {} at opset {}", node.op_type, opset);
      return false;
    }
    return KernelTakesInputTypes(*def, node, types, why_not);
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
