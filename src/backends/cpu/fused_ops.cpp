// vigil's fused ops on the CPU, the reference for the CUDA kernels and the
// fallback where a device cannot run them. Each runs the ONNX ops it fuses,
// through their own CPU kernels, so the semantics cannot drift:
//   ai.vigil.MatMulBias(A, W, B) = Add(MatMul(A, W), B)   (ir/fuse_matmul_bias.h)
//   ai.vigil.Gelu(X) = ONNX Gelu-20, approximate="none"   (ir/fuse_gelu.h)
#include <cstring>

#include "ir/fuse_gelu.h"
#include "backends/cpu/kernel.h"
#include "ir/fuse_matmul_bias.h"
#include "ir/layout_nhwc.h"  // kVigilDomain

namespace vigil::cpu {
namespace {

// Fresh host buffers for the inner kernels' outputs.
class ScratchOutputs : public runtime::OutputAllocator {
 public:
  Result<runtime::Tensor> Allocate(size_t, ir::DataType dtype, std::vector<int64_t> shape) override {
    return runtime::Tensor::Allocate(dtype, std::move(shape));
  }
};

// Runs the default-domain op `op` (opset 13 semantics, which MatMul and Add
// share with every later opset) on `inputs`; returns its only output.
Result<runtime::Tensor> RunInner(const KernelContext& ctx, const char* op,
                                 std::span<const runtime::Tensor* const> inputs) {
  const KernelDef* def = FindKernel("", op, 13);
  if (!def) return InternalError("{}: the CPU {} kernel is missing", ops::NodeLabel(ctx.node()), op);
  ir::Node node;
  node.name = ctx.node().name;
  node.op_type = op;
  node.inputs.assign(inputs.size(), "in");
  node.outputs = {"out"};
  std::vector<runtime::Tensor> outputs(1);
  ScratchOutputs scratch;
  KernelContext inner(node, 13, inputs, outputs, scratch);
  VIGIL_RETURN_IF_ERROR(def->fn(inner));
  return std::move(outputs[0]);
}

Status MatMulBiasKernel(KernelContext& ctx) {
  for (size_t i = 0; i < 3; ++i) {
    if (!ctx.has_input(i)) return ctx.Fail("input {} is missing; MatMulBias needs A, W and B", i);
  }
  const runtime::Tensor* product_inputs[] = {ctx.input(0), ctx.input(1)};
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor product, RunInner(ctx, "MatMul", product_inputs));
  const runtime::Tensor* sum_inputs[] = {&product, ctx.input(2)};
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor sum, RunInner(ctx, "Add", sum_inputs));
  if (sum.shape() != product.shape()) {
    return ctx.Fail("input 2 (B) is {}; adding it changes the product's shape {}", ctx.input(2)->Describe(),
                    product.Describe());
  }
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * y, ctx.Output(0, sum.dtype(), sum.shape()));
  if (sum.byte_size()) std::memcpy(y->raw_data(), sum.raw_data(), sum.byte_size());
  return Status::Ok();
}

// The ONNX Gelu kernel on this node: it has no attributes, so approximate
// is "none", 0.5 * x * (1 + erf(x / sqrt(2))) computed in float.
Status GeluKernel(KernelContext& ctx) {
  const KernelDef* def = FindKernel("", "Gelu", 20);
  if (!def) return InternalError("{}: the CPU Gelu kernel is missing", ops::NodeLabel(ctx.node()));
  return def->fn(ctx);
}

const KernelDef kFusedKernels[] = {
    {ir::kVigilDomain, ir::kMatMulBiasOp, 1, kLatest, MatMulBiasKernel},
    {ir::kVigilDomain, ir::kGeluOp, 1, kLatest, GeluKernel},
};

}  // namespace

std::span<const KernelDef> FusedKernels() { return kFusedKernels; }

}  // namespace vigil::cpu
