#include "backends/cpu/cpu_backend.h"

#include "backends/cpu/fast/dnnl_library.h"
#include "backends/cpu/fast/kernel_cache.h"
#include "backends/cpu/gemm.h"
#include "backends/cpu/kernel.h"
#include "backends/cpu/kernel_type_constraints.h"
#include "ir/layout_nhwc.h"

namespace vigil::cpu {
namespace {

class CpuBackend final : public runtime::Backend {
 public:
  explicit CpuBackend(const CpuOptions& options) : options_(options) {}
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

  // Where an optimised path takes the channels-last op (the default-domain
  // Concat and Resize below too): ConvNhwc in
  // float32, 2D (W rank 4), with oneDNN loaded and no input_activation
  // (which only the reference applies); MaxPoolNhwc and
  // GlobalAveragePoolNhwc in float32. AveragePoolNhwc runs on the reference
  // (transposing), so it stays NCHW.
  bool PrefersChannelsLast(const ir::Node& node, int64_t opset, const runtime::NodeTypes& types) const override {
    if (options_.reference_kernels) return false;
    // Concat and Resize written for NHWC operands (the layout pass's
    // NhwcOptions::nhwc_layout_ops): the Concat copies whole pixels, and
    // Resize's optimised paths take an NHWC image's two middle axes (float32
    // linear and cubic row by row, nearest as a gather of whole pixels).
    if ((node.domain.empty() || node.domain == "ai.onnx") && (node.op_type == "Concat" || node.op_type == "Resize")) {
      const ir::TypeInfo* x = types.inputs.empty() ? nullptr : types.inputs[0];
      return x && x->elem_type == ir::DataType::kFloat32 && SupportsTyped(node, opset, types, nullptr);
    }
    if (node.domain != ir::kVigilDomain) return false;
    const bool conv = node.op_type == ir::kConvNhwcOp;
    if (!conv && node.op_type != ir::kMaxPoolNhwcOp && node.op_type != ir::kGlobalAveragePoolNhwcOp) return false;
    if (types.inputs.size() < (conv ? 2u : 1u)) return false;
    for (size_t i = 0; i < (conv ? 2u : 1u); ++i) {
      const ir::TypeInfo* t = types.inputs[i];
      if (!t || t->elem_type != ir::DataType::kFloat32 || !t->shape.rank_known || t->shape.dims.size() != 4) {
        return false;
      }
    }
    if (!conv) return SupportsTyped(node, opset, types, nullptr);
    for (const ir::Attribute& a : node.attributes) {
      if (a.name == ir::kConvNhwcInputActivation && !a.s.empty()) return false;
    }
    return fast::DnnlLoaded() && SupportsTyped(node, opset, types, nullptr);
  }

  // Which convolution path ran: oneDNN, or the reference code and why.
  std::vector<std::string> Notes() const override {
    if (options_.reference_kernels) return {"cpu: every node on its reference kernel (CpuOptions::reference_kernels)"};
    const fast::KernelCache::Counts c = cache_->counts();
    if (c.conv_plans > 0) {
      return {fmt::format("cpu: {}; {} convolution shape(s) planned", fast::DnnlDescription(), c.conv_plans)};
    }
    if (cache_->conv_without_dnnl()) return {"cpu: " + fast::DnnlDescription()};
    return {};
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
    ctx.set_optimised(!options_.reference_kernels);
    ctx.set_cache(cache_.get());
    ScopedGemmThreadLimit limit(options_.max_threads);
    ScopedOptimisedProducts products(ctx.optimised());
    return def->fn(ctx);
  }

 private:
  CpuOptions options_;
  // Mutable through a const backend: Run is const and thread-safe, and so is the cache.
  std::unique_ptr<fast::KernelCache> cache_ = std::make_unique<fast::KernelCache>();
};

}  // namespace

std::shared_ptr<const runtime::Backend> MakeCpuBackend(const CpuOptions& options) {
  return std::make_shared<CpuBackend>(options);
}

}  // namespace vigil::cpu
