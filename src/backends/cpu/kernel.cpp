#include "backends/cpu/kernel.h"
#include "backends/cpu/kernel_families.h"

#include <string_view>
#include <unordered_map>
#include <vector>

namespace vigil::cpu {

Result<runtime::Tensor*> KernelContext::Output(size_t i, ir::DataType dtype, std::vector<int64_t> shape) {
  if (i >= outputs_.size()) return InternalError("{}: output {} does not exist", ops::NodeLabel(node_), i);
  for (int64_t d : shape) {
    if (d < 0) return Fail("computed a negative dim {} for output {}", d, i);
  }
  VIGIL_ASSIGN_OR_RETURN(outputs_[i], allocator_.Allocate(i, dtype, std::move(shape)));
  return &outputs_[i];
}

Status KernelContext::SetOutput(size_t i, runtime::Tensor tensor) {
  if (i >= outputs_.size()) return InternalError("{}: output {} does not exist", ops::NodeLabel(node_), i);
  outputs_[i] = std::move(tensor);
  return Status::Ok();
}

Status KernelContext::UnsupportedDtype(size_t input_index) const {
  const runtime::Tensor* t = input(input_index);
  return UnsupportedError("{}: dtype {} of input {} is not supported by the CPU kernel", ops::NodeLabel(node_),
                          t ? ir::DataTypeName(t->dtype()) : "(absent)", input_index);
}

static bool SameDomain(std::string_view a, std::string_view b) {
  auto is_default = [](std::string_view d) { return d.empty() || d == "ai.onnx"; };
  return a == b || (is_default(a) && is_default(b));
}

std::span<const KernelDef> AllKernels() {
  static const std::vector<KernelDef> kAll = [] {
    std::vector<KernelDef> all;
    for (auto family : {ElementwiseKernels(), ConvPoolKernels(), NormalizationKernels(), AttentionKernels(),
                        LinalgKernels(), ReductionKernels(), ShapeOpKernels(), TensorGenKernels(), RecurrentKernels(),
                        QuantizationKernels(), QuantizedLinearKernels(), QuantizedContribKernels(), DropoutKernels(),
                        LossKernels(), VisionKernels(), DetectionKernels(), GridSampleKernels(), SelectionKernels(),
                        TextKernels(), ClassicMlKernels(), ImageKernels(),
                        SignalKernels(), QdqKernels(), FusedKernels(), FaultInjectionKernels()}) {
      all.insert(all.end(), family.begin(), family.end());
    }
    return all;
  }();
  return kAll;
}

// Called for every node of every run (CpuBackend::Run): the kernels of each
// op name, in AllKernels() order, found by one hash. A scan of the whole
// table compared every entry's name (a strlen and a memcmp each): 7% of a
// tiny ViT's run at one thread.
const KernelDef* FindKernel(std::string_view domain, std::string_view op, int64_t opset) {
  static const std::unordered_map<std::string_view, std::vector<const KernelDef*>> kByOp = [] {
    std::unordered_map<std::string_view, std::vector<const KernelDef*>> m;
    for (const KernelDef& k : AllKernels()) m[k.op].push_back(&k);
    return m;
  }();
  const auto it = kByOp.find(op);
  if (it == kByOp.end()) return nullptr;
  for (const KernelDef* k : it->second) {
    if (SameDomain(domain, k->domain) && opset >= k->since_version && opset <= k->until_version) return k;
  }
  return nullptr;
}

}  // namespace vigil::cpu
