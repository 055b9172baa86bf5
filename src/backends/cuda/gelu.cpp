// ai.vigil.Gelu on the GPU (ir/fuse_gelu.h): the fused erf-GELU chain of
// models exported before opset 20 runs as ONNX Gelu-20 with
// approximate="none", whose elementwise kernel (elementwise_activation.cu)
// computes 0.5 * x * (1 + erf(x / sqrt(2))) in float: one read and one write
// of the activation instead of five of each.
#include "backends/cuda/gelu.h"

#include "backends/cuda/cuda_kernel.h"
#include "ir/fuse_gelu.h"
#include "ir/layout_nhwc.h"  // kVigilDomain

namespace vigil::cuda {
namespace {

const CudaKernelDef* OnnxGelu() { return FindCudaKernel("", "Gelu", 20); }

// The node has no attributes, so the ONNX kernel reads approximate="none".
Status VigilGelu(CudaKernelContext& ctx) {
  const CudaKernelDef* def = OnnxGelu();
  if (!def) return InternalError("{}: the CUDA Gelu kernel is missing", ops::NodeLabel(ctx.node()));
  return def->fn(ctx);
}

bool VigilGeluSupports(const ir::Node& node, const runtime::NodeTypes& types, std::string* why_not) {
  const CudaKernelDef* def = OnnxGelu();
  if (!def) {
    if (why_not) *why_not = "the CUDA Gelu kernel is missing";
    return false;
  }
  return !def->supports || def->supports(node, types, why_not);
}

const CudaKernelDef kGeluKernels[] = {
    {ir::kVigilDomain, ir::kGeluOp, 1, kLatest, VigilGelu, VigilGeluSupports},
};

}  // namespace

std::span<const CudaKernelDef> FusedCudaKernels() { return kGeluKernels; }

}  // namespace vigil::cuda
