// The channels-last pools ai.vigil.MaxPoolNhwc, AveragePoolNhwc and
// GlobalAveragePoolNhwc on the CPU (ir/layout_nhwc.h describes them): the
// reference for the CUDA kernels and the fallback where a device cannot run
// a node: X is transposed to NCHW, the ONNX pool kernel of the same
// attributes runs, and Y is transposed back. For float32, MaxPoolNhwc and
// GlobalAveragePoolNhwc have optimised paths (fast/pool2d.cpp) that compute
// on NHWC as it is, with the reference's results bit for bit; CPU sessions
// write these two where their convolutions run channels-last.
#include "backends/cpu/conv_pool_kernels.h"
#include "backends/cpu/element_codec.h"
#include "backends/cpu/fast/fast_kernels.h"
#include "ir/layout_nhwc.h"

namespace vigil::cpu {
namespace {

// Runs `nchw_kernel` as the ONNX op `onnx_op` (opset `opset`) on X
// transposed to NCHW, and writes its first output back as NHWC Y.
Status RunAsNchw(KernelContext& ctx, const char* onnx_op, int64_t opset, Status (*nchw_kernel)(KernelContext&)) {
  VIGIL_RETURN_IF_ERROR(RequireInputs(ctx, 1));
  const runtime::Tensor& x_nhwc = *ctx.input(0);
  if (x_nhwc.rank() != 4) {
    return ctx.Fail("input 0 (X) is {}, {} needs N x H x W x C", x_nhwc.Describe(), ctx.node().op_type);
  }
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor x, Permuted(ctx, x_nhwc, ir::kToNchw));
  // The same node as the ONNX pool: its attributes mean the same on NCHW.
  ir::Node pool = ctx.node();
  pool.domain.clear();
  pool.op_type = onnx_op;
  pool.outputs.resize(1);
  // There are no Indices, so their layout does not matter.
  std::erase_if(pool.attributes, [](const ir::Attribute& a) { return a.name == "storage_order"; });
  const runtime::Tensor* inputs[] = {&x};
  std::vector<runtime::Tensor> outputs(1);
  ScratchAllocator scratch;
  KernelContext inner(pool, opset, inputs, outputs, scratch);
  inner.set_optimised(ctx.optimised());  // a reference run stays on reference code throughout
  inner.set_cache(ctx.cache());
  VIGIL_RETURN_IF_ERROR(nchw_kernel(inner));
  const runtime::Tensor& y_nchw = outputs[0];
  std::vector<int64_t> shape{y_nchw.dim(0), y_nchw.dim(2), y_nchw.dim(3), y_nchw.dim(1)};
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * y, ctx.Output(0, y_nchw.dtype(), std::move(shape)));
  return Permute4D(ctx, y_nchw, ir::kToNhwc, *y);
}

// Opsets of the ONNX pools whose attribute sets are the widest (dilations
// and ceil_mode for both; AveragePool's dilations from 19).
constexpr int64_t kMaxPoolOpset = 12;
constexpr int64_t kAveragePoolOpset = 19;

// Whether the optimised path may take the node: float32 X of rank 4.
bool OptimisedFloat32(KernelContext& ctx) {
  const runtime::Tensor* x = ctx.input(0);
  return ctx.optimised() && x && x->dtype() == ir::DataType::kFloat32 && x->rank() == 4;
}

}  // namespace

Status MaxPoolNhwcKernel(KernelContext& ctx) {
  if (OptimisedFloat32(ctx)) {
    const runtime::Tensor& x = *ctx.input(0);
    ops::WindowOptions options;
    options.pooling = true;
    // Attributes the window cannot take: the reference says what is wrong.
    Result<ops::WindowAttrs> wa = ops::ReadWindowAttrs(ctx.node(), 2, std::nullopt, options);
    Result<SpatialGeometry> g = InternalError("no window");
    if (wa.ok()) g = ForwardGeometry(ctx.node(), *wa, {x.dim(1), x.dim(2)});
    if (g.ok()) {
      VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * y,
                             ctx.Output(0, x.dtype(), {x.dim(0), g->columns[0], g->columns[1], x.dim(3)}));
      if (y->element_count() == 0 ||
          fast::MaxPool2dNhwcFloat(*g, x.dim(0), x.dim(3), x.data<float>(), y->data<float>())) {
        return Status::Ok();
      }
    }
  }
  return RunAsNchw(ctx, "MaxPool", kMaxPoolOpset, MaxPoolKernel);
}

Status AveragePoolNhwcKernel(KernelContext& ctx) {
  return RunAsNchw(ctx, "AveragePool", kAveragePoolOpset, AveragePoolKernel);
}

Status GlobalAveragePoolNhwcKernel(KernelContext& ctx) {
  if (OptimisedFloat32(ctx)) {
    const runtime::Tensor& x = *ctx.input(0);
    VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * y, ctx.Output(0, x.dtype(), {x.dim(0), 1, 1, x.dim(3)}));
    fast::GlobalAveragePoolNhwcFloat(x.dim(0), x.dim(1) * x.dim(2), x.dim(3), x.data<float>(), y->data<float>());
    return Status::Ok();
  }
  return RunAsNchw(ctx, "GlobalAveragePool", 1, GlobalAveragePoolKernel);
}

}  // namespace vigil::cpu
