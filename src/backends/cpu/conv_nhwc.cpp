// ai.vigil.ConvNhwc on the CPU (the op is described in ir/layout_nhwc.h),
// and at the end ai.vigil.FusedConv (ir/fuse_conv_epilogue.h), its NCHW
// sibling, which shares the epilogue:
// the reference for the CUDA kernel, the fallback where a device cannot run
// a node, and, for float32 with oneDNN loaded, the CPU's own channels-last
// convolution (fast::ConvDnnl, with its epilogue fused), which the
// session's layout pass writes for CPU sessions (runtime/conv_layout.h).
// The reference is for correctness only: X and W are transposed to NCHW/OIHW, the
// ONNX Conv kernel runs (on the NCHW copy of X clipped first when
// input_activation asks), Y is transposed back, and then Z is added and the
// activation applied, each rounded to Y's dtype as the separate ONNX ops
// (Add, Relu, Clip) would.
#include <cstring>

#include "backends/cpu/conv_pool_kernels.h"
#include "backends/cpu/element_codec.h"
#include "backends/cpu/fast/fast_kernels.h"
#include "ir/layout_nhwc.h"
#include "ops/attributes.h"

namespace vigil::cpu {

Result<runtime::Tensor> ScratchAllocator::Allocate(size_t, ir::DataType dtype, std::vector<int64_t> shape) {
  return runtime::Tensor::Allocate(dtype, std::move(shape));
}

Status Permute4D(const KernelContext& ctx, const runtime::Tensor& src, const std::vector<int64_t>& perm,
                 runtime::Tensor& dst) {
  const size_t size = static_cast<size_t>(ir::DataTypeBits(src.dtype()) / 8);
  if (size == 0 || src.rank() != 4) return ctx.Unsupported("cannot transpose {}", src.Describe());
  int64_t src_strides[4];
  src_strides[3] = 1;
  for (int i = 2; i >= 0; --i) src_strides[i] = src_strides[i + 1] * src.dim(i + 1);
  const int64_t d0 = dst.dim(0), d1 = dst.dim(1), d2 = dst.dim(2), d3 = dst.dim(3);
  const int64_t s0 = src_strides[perm[0]], s1 = src_strides[perm[1]], s2 = src_strides[perm[2]],
                s3 = src_strides[perm[3]];
  const auto* in = static_cast<const uint8_t*>(src.raw_data());
  auto* out = static_cast<uint8_t*>(dst.raw_data());
  size_t o = 0;
  for (int64_t a = 0; a < d0; ++a) {
    for (int64_t b = 0; b < d1; ++b) {
      for (int64_t c = 0; c < d2; ++c) {
        for (int64_t d = 0; d < d3; ++d, o += size) {
          std::memcpy(out + o, in + (a * s0 + b * s1 + c * s2 + d * s3) * size, size);
        }
      }
    }
  }
  return Status::Ok();
}

Result<runtime::Tensor> Permuted(const KernelContext& ctx, const runtime::Tensor& src,
                                 const std::vector<int64_t>& perm) {
  std::vector<int64_t> shape;
  for (int64_t p : perm) shape.push_back(src.dim(static_cast<size_t>(p)));
  Result<runtime::Tensor> t = runtime::Tensor::Allocate(src.dtype(), shape);
  if (!t.ok()) return OutOfMemoryError("{}: cannot allocate a transposed copy of {}", ops::NodeLabel(ctx.node()),
                                       src.Describe());
  VIGIL_RETURN_IF_ERROR(Permute4D(ctx, src, perm, *t));
  return t;
}

namespace {

Status CheckOperands(KernelContext& ctx) {
  VIGIL_RETURN_IF_ERROR(RequireInputs(ctx, 2));
  const runtime::Tensor& x = *ctx.input(0);
  const runtime::Tensor& w = *ctx.input(1);
  if (x.rank() != 4) return ctx.Fail("input 0 (X) is {}, ConvNhwc needs N x H x W x C", x.Describe());
  if (w.rank() != 4) return ctx.Fail("input 1 (W) is {}, ConvNhwc needs M x kH x kW x C/group", w.Describe());
  return Status::Ok();
}

// x = max(x, 0) (relu) or min(max(x, 0), 6) (relu6) in place, NaN kept:
// ConvNhwc's input_activation, on the NCHW copy of X (exact in any float
// dtype: the results are x itself, 0 or 6).
Status ClipInput(KernelContext& ctx, runtime::Tensor& x, const std::string& act) {
  if (act.empty()) return Status::Ok();
  const bool relu6 = act == ir::kConvNhwcRelu6;
  return DispatchFloat(ctx, 0, [&]<ir::DataType D>() -> Status {
    using C = ElementCodec<D>;
    auto* p = x.data<typename C::Storage>();
    for (uint64_t i = 0; i < x.element_count(); ++i) {
      if (C::Load(p[i]) < 0) p[i] = C::Store(0);
      if (relu6 && C::Load(p[i]) > 6) p[i] = C::Store(6);
    }
    return Status::Ok();
  });
}

// Y += Z (when given), then Y = max(Y, 0) (relu) or min(max(Y, 0), 6)
// (relu6), NaN kept, in Y's float dtype.
Status ApplyEpilogue(KernelContext& ctx, runtime::Tensor& y, const runtime::Tensor* z, const std::string& act) {
  if (z && z->shape() != y.shape()) {
    return ctx.Fail("input 3 (Z) is {}, it must have the output's shape ({})", z->Describe(), y.Describe());
  }
  if (z && z->dtype() != y.dtype()) return ctx.Fail("input 3 (Z) is {}, Y is {}", z->Describe(), y.Describe());
  const bool relu = act == ir::kConvNhwcRelu, relu6 = act == ir::kConvNhwcRelu6;
  return DispatchFloat(ctx, 0, [&]<ir::DataType D>() -> Status {
    using C = ElementCodec<D>;
    auto* p = y.data<typename C::Storage>();
    const auto* zp = z ? z->data<typename C::Storage>() : nullptr;
    for (uint64_t i = 0; i < y.element_count(); ++i) {
      if (zp) p[i] = C::Store(C::Load(p[i]) + C::Load(zp[i]));
      if ((relu || relu6) && C::Load(p[i]) < 0) p[i] = C::Store(0);
      if (relu6 && C::Load(p[i]) > 6) p[i] = C::Store(6);
    }
    return Status::Ok();
  });
}

// The optimised path: float32 through oneDNN in NHWC with the epilogue
// fused. False, with nothing computed, where it does not take the node
// (other dtypes, operands that do not fit: the reference then runs it, or
// says what is wrong).
Result<bool> ConvNhwcOptimised(KernelContext& ctx, const std::string& activation) {
  constexpr ir::DataType kF32 = ir::DataType::kFloat32;
  const runtime::Tensor& x = *ctx.input(0);
  const runtime::Tensor& w = *ctx.input(1);
  const runtime::Tensor* b = ctx.input(2);
  const runtime::Tensor* z = ctx.input(3);
  if (x.dtype() != kF32 || w.dtype() != kF32 || (b && b->dtype() != kF32)) return false;
  VIGIL_ASSIGN_OR_RETURN(int64_t group, ops::IntAttr(ctx.node(), "group", 1));
  const int64_t channels = x.dim(3), out_channels = w.dim(0);
  if (group < 1 || channels != w.dim(3) * group || out_channels % group != 0) return false;
  if (b && (b->rank() != 1 || b->dim(0) != out_channels)) return false;
  const std::vector<int64_t> w_spatial{w.dim(1), w.dim(2)};
  VIGIL_ASSIGN_OR_RETURN(ops::WindowAttrs wa, ops::ReadWindowAttrs(ctx.node(), 2, w_spatial, ops::WindowOptions{}));
  VIGIL_ASSIGN_OR_RETURN(SpatialGeometry g, ForwardGeometry(ctx.node(), wa, {x.dim(1), x.dim(2)}));
  std::vector<int64_t> shape{x.dim(0), g.columns[0], g.columns[1], out_channels};
  if (z && (z->dtype() != kF32 || z->shape() != shape)) return false;
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * y, ctx.Output(0, kF32, shape));
  if (y->element_count() == 0) return true;
  fast::ConvProblem p;
  p.batch = x.dim(0);
  p.in_channels = channels;
  p.out_channels = out_channels;
  p.group = group;
  p.g = &g;
  p.w_tensor = &w;
  p.x = x.data<float>();
  p.w = w.data<float>();
  p.bias = b ? b->data<float>() : nullptr;
  p.y = y->data<float>();
  p.channels_last = true;
  p.z = z ? z->data<float>() : nullptr;
  p.activation = activation == ir::kConvNhwcRelu    ? fast::ConvActivation::kRelu
                 : activation == ir::kConvNhwcRelu6 ? fast::ConvActivation::kRelu6
                                                    : fast::ConvActivation::kNone;
  return fast::ConvDnnl(p, ctx.cache());
}

}  // namespace

Status ConvNhwcKernel(KernelContext& ctx) {
  VIGIL_RETURN_IF_ERROR(CheckOperands(ctx));
  VIGIL_ASSIGN_OR_RETURN(std::string activation, ops::StringAttr(ctx.node(), "activation", ""));
  VIGIL_ASSIGN_OR_RETURN(std::string input_activation,
                         ops::StringAttr(ctx.node(), ir::kConvNhwcInputActivation, ""));
  for (const std::string* a : {&activation, &input_activation}) {
    if (!a->empty() && *a != ir::kConvNhwcRelu && *a != ir::kConvNhwcRelu6) {
      return AttributeError(ctx, "{} is '{}', expected '', 'Relu' or 'Relu6'",
                            a == &activation ? "activation" : ir::kConvNhwcInputActivation, *a);
    }
  }
  if (ctx.optimised() && input_activation.empty()) {
    VIGIL_ASSIGN_OR_RETURN(bool done, ConvNhwcOptimised(ctx, activation));
    if (done) return Status::Ok();
  }
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor x, Permuted(ctx, *ctx.input(0), ir::kToNchw));
  VIGIL_RETURN_IF_ERROR(ClipInput(ctx, x, input_activation));
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor w, Permuted(ctx, *ctx.input(1), ir::kToNchw));
  // The same node as an ONNX Conv: its attributes mean the same on NCHW.
  ir::Node conv = ctx.node();
  conv.domain.clear();
  conv.op_type = "Conv";
  std::erase_if(conv.attributes, [](const ir::Attribute& a) {
    return a.name == "activation" || a.name == ir::kConvNhwcInputActivation;
  });
  const runtime::Tensor* inputs[] = {&x, &w, ctx.input(2)};
  std::vector<runtime::Tensor> outputs(1);
  ScratchAllocator scratch;
  KernelContext inner(conv, 11, std::span<const runtime::Tensor* const>(inputs, ctx.has_input(2) ? 3 : 2), outputs,
                      scratch);
  inner.set_optimised(ctx.optimised());  // a reference run stays on reference code throughout
  inner.set_cache(ctx.cache());
  VIGIL_RETURN_IF_ERROR(ConvKernel(inner));
  const runtime::Tensor& y_nchw = outputs[0];
  std::vector<int64_t> shape{y_nchw.dim(0), y_nchw.dim(2), y_nchw.dim(3), y_nchw.dim(1)};
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * y, ctx.Output(0, y_nchw.dtype(), std::move(shape)));
  VIGIL_RETURN_IF_ERROR(Permute4D(ctx, y_nchw, ir::kToNhwc, *y));
  const runtime::Tensor* z = ctx.input(3);
  if (z || !activation.empty()) VIGIL_RETURN_IF_ERROR(ApplyEpilogue(ctx, *y, z, activation));
  return Status::Ok();
}

// ai.vigil.FusedConv (ir/fuse_conv_epilogue.h): the ONNX Conv kernel on
// the node as it is (it reads X, W and B), then Z added and the activation
// applied, each rounded to Y's dtype as the separate ONNX ops would.
Status FusedConvKernel(KernelContext& ctx) {
  VIGIL_ASSIGN_OR_RETURN(std::string activation, ops::StringAttr(ctx.node(), "activation", ""));
  if (!activation.empty() && activation != ir::kConvNhwcRelu && activation != ir::kConvNhwcRelu6) {
    return AttributeError(ctx, "activation is '{}', expected '', 'Relu' or 'Relu6'", activation);
  }
  VIGIL_RETURN_IF_ERROR(ConvKernel(ctx));
  runtime::Tensor* y = ctx.produced_output(0);
  if (!y) return InternalError("{}: FusedConv has no output", ops::NodeLabel(ctx.node()));
  const runtime::Tensor* z = ctx.input(3);
  if (z || !activation.empty()) VIGIL_RETURN_IF_ERROR(ApplyEpilogue(ctx, *y, z, activation));
  return Status::Ok();
}

}  // namespace vigil::cpu
