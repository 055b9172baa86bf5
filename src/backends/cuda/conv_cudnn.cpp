// Conv and ConvTranspose through cuDNN's graph API: a forward-convolution
// (or backward-data, for ConvTranspose) operation graph per shape, built
// once per thread and cached; the bias is added by our own kernel. 1D
// convolutions run as 2D with a unit height. Tensors are NCHW as in ONNX.
#include <fmt/format.h>

#include "backends/cuda/epilogue.h"
#include "backends/cuda/cuda_kernel.h"
#include "backends/cuda/cudnn_graph.h"
#include "ops/conv_geometry.h"
#include "ops/shape_helpers.h"

namespace vigil::cuda {
namespace {

constexpr int64_t kX = 1, kW = 2, kY = 3;

struct ConvShape {
  std::vector<int64_t> x, w, y;  // as given to cuDNN (1D lifted to 2D)
  std::vector<int64_t> pre, post, strides, dilations;
};

// Lifts 1D geometry to 2D: cuDNN convolutions need at least two spatial dims.
void LiftTo2D(ConvShape& s) {
  if (s.x.size() != 3) return;
  s.x.insert(s.x.begin() + 2, 1);
  s.w.insert(s.w.begin() + 2, 1);
  s.y.insert(s.y.begin() + 2, 1);
  s.pre.insert(s.pre.begin(), 0);
  s.post.insert(s.post.begin(), 0);
  s.strides.insert(s.strides.begin(), 1);
  s.dilations.insert(s.dilations.begin(), 1);
}

Result<ConvShape> Geometry(CudaKernelContext& ctx, const runtime::Tensor& x, const runtime::Tensor& w,
                           const std::vector<int64_t>& y, bool transpose) {
  size_t spatial = x.rank() - 2;
  std::vector<int64_t> kernel(w.shape().begin() + 2, w.shape().end());
  VIGIL_ASSIGN_OR_RETURN(ops::WindowAttrs a,
                         ops::ReadWindowAttrs(ctx.node(), spatial, kernel, {.pooling = false, .transpose = transpose}));
  ConvShape s{x.shape(), w.shape(), y, {}, {}, a.strides, a.dilations};
  for (size_t i = 0; i < spatial; ++i) {
    VIGIL_ASSIGN_OR_RETURN(ops::WindowExtent e, transpose ? ops::TransposeExtent(ctx.node(), a, i, x.dim(2 + i))
                                                          : ops::ForwardExtent(ctx.node(), a, i, x.dim(2 + i)));
    if (e.pad_begin < 0 || e.pad_end < 0) {
      return ctx.Unsupported("negative padding (output_shape larger than the full transposed result)");
    }
    s.pre.push_back(e.pad_begin);
    s.post.push_back(e.pad_end);
  }
  LiftTo2D(s);
  return s;
}

std::string Key(const char* op, const ConvShape& s, ir::DataType t) {
  auto j = [](const std::vector<int64_t>& v) { return fmt::format("{}", fmt::join(v, ",")); };
  return fmt::format("{}|{}|x{}|w{}|y{}|p{}/{}|s{}|d{}", op, static_cast<int>(t), j(s.x), j(s.w), j(s.y), j(s.pre),
                     j(s.post), j(s.strides), j(s.dilations));
}

// The cuDNN plan for one convolution shape, built on first use per thread.
Result<const CudnnPlan*> ConvPlan(CudaKernelContext& ctx, const ConvShape& s, ir::DataType dtype, bool transpose) {
  std::string key = Key(transpose ? "dgrad" : "fprop", s, dtype);
  auto& cache = ctx.stream_context().plans;
  if (auto it = cache.find(key); it != cache.end()) return static_cast<const CudnnPlan*>(it->second.get());

  VIGIL_ASSIGN_OR_RETURN(cudnnDataType_t type, CudnnDataType(static_cast<int>(dtype)));
  // x is the convolution's input and y its output; for ConvTranspose the
  // node's input is dy and its output dx of the same forward convolution.
  const std::vector<int64_t>& fwd_x = transpose ? s.y : s.x;
  const std::vector<int64_t>& fwd_y = transpose ? s.x : s.y;
  VIGIL_ASSIGN_OR_RETURN(CudnnDescriptor x, MakeCudnnTensor(kX, type, fwd_x));
  VIGIL_ASSIGN_OR_RETURN(CudnnDescriptor w, MakeCudnnTensor(kW, type, s.w));
  VIGIL_ASSIGN_OR_RETURN(CudnnDescriptor y, MakeCudnnTensor(kY, type, fwd_y));

  VIGIL_ASSIGN_OR_RETURN(CudnnDescriptor conv, CudnnDescriptor::Create(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR));
  cudnnDataType_t compute = CUDNN_DATA_FLOAT;
  cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  VIGIL_RETURN_IF_ERROR(conv.Set(CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &compute));
  VIGIL_RETURN_IF_ERROR(conv.Set(CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode));
  VIGIL_RETURN_IF_ERROR(conv.SetInt(CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, static_cast<int64_t>(s.strides.size())));
  VIGIL_RETURN_IF_ERROR(conv.SetInts(CUDNN_ATTR_CONVOLUTION_DILATIONS, s.dilations));
  VIGIL_RETURN_IF_ERROR(conv.SetInts(CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, s.strides));
  VIGIL_RETURN_IF_ERROR(conv.SetInts(CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, s.pre));
  VIGIL_RETURN_IF_ERROR(conv.SetInts(CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, s.post));
  VIGIL_RETURN_IF_ERROR(conv.Finalize());

  float alpha = 1.0f, beta = 0.0f;
  CudnnDescriptor op;
  if (!transpose) {
    VIGIL_ASSIGN_OR_RETURN(op, CudnnDescriptor::Create(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR));
    VIGIL_RETURN_IF_ERROR(op.SetDescriptor(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, x));
    VIGIL_RETURN_IF_ERROR(op.SetDescriptor(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, w));
    VIGIL_RETURN_IF_ERROR(op.SetDescriptor(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, y));
    VIGIL_RETURN_IF_ERROR(op.SetDescriptor(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, conv));
    VIGIL_RETURN_IF_ERROR(op.Set(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_TYPE_FLOAT, 1, &alpha));
    VIGIL_RETURN_IF_ERROR(op.Set(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, CUDNN_TYPE_FLOAT, 1, &beta));
  } else {
    VIGIL_ASSIGN_OR_RETURN(op, CudnnDescriptor::Create(CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR));
    VIGIL_RETURN_IF_ERROR(op.SetDescriptor(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX, x));
    VIGIL_RETURN_IF_ERROR(op.SetDescriptor(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W, w));
    VIGIL_RETURN_IF_ERROR(op.SetDescriptor(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY, y));
    VIGIL_RETURN_IF_ERROR(op.SetDescriptor(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC, conv));
    VIGIL_RETURN_IF_ERROR(op.Set(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA, CUDNN_TYPE_FLOAT, 1, &alpha));
    VIGIL_RETURN_IF_ERROR(op.Set(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA, CUDNN_TYPE_FLOAT, 1, &beta));
  }
  VIGIL_RETURN_IF_ERROR(op.Finalize());

  std::string what = fmt::format("{} {} NCHW {}D x[{}] w[{}]", transpose ? "ConvTranspose" : "Conv",
                                 ir::DataTypeName(dtype), s.strides.size(), fmt::join(s.x, ","), fmt::join(s.w, ","));
  PlanFilter filter{ctx.options().allow_tf32, ctx.options().deterministic, dtype == ir::DataType::kFloat32};
  std::vector<CudnnDescriptor> ops;
  ops.push_back(std::move(op));
  std::vector<CudnnDescriptor> keep;
  keep.push_back(std::move(x));
  keep.push_back(std::move(w));
  keep.push_back(std::move(y));
  keep.push_back(std::move(conv));
  Result<CudnnPlan> plan = BuildCudnnPlan(ctx.stream_context().cudnn, std::move(ops), std::move(keep), filter, what);
  if (!plan.ok()) return std::move(plan).TakeStatus().WithContext(ops::NodeLabel(ctx.node()));
  auto shared = std::make_shared<CudnnPlan>(std::move(plan).value());
  const CudnnPlan* raw = shared.get();
  cache.emplace(key, std::move(shared));
  return raw;
}

Status RunConv(CudaKernelContext& ctx, bool transpose) {
  const runtime::Tensor& x = *ctx.input(0);
  const runtime::Tensor& w = *ctx.input(1);
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * y, ctx.Output(0));
  if (y->element_count() == 0) return Status::Ok();
  VIGIL_ASSIGN_OR_RETURN(ConvShape s, Geometry(ctx, x, w, y->shape(), transpose));
  VIGIL_ASSIGN_OR_RETURN(const CudnnPlan* plan, ConvPlan(ctx, s, x.dtype(), transpose));
  VIGIL_ASSIGN_OR_RETURN(void* workspace, ctx.stream_context().Workspace(static_cast<size_t>(plan->workspace_bytes)));
  // For ConvTranspose the node's output is the convolution's input (dx).
  void* fwd_x = transpose ? y->raw_data() : const_cast<void*>(x.raw_data());
  void* fwd_y = transpose ? const_cast<void*>(x.raw_data()) : y->raw_data();
  VIGIL_RETURN_IF_ERROR(ExecuteCudnnPlan(ctx.stream_context().cudnn, *plan, {kX, kW, kY},
                                         {fwd_x, const_cast<void*>(w.raw_data()), fwd_y}, workspace));
  if (const runtime::Tensor* b = ctx.input(2)) {
    int64_t spatial = 1;
    for (size_t i = 2; i < y->rank(); ++i) spatial *= y->dim(i);
    VIGIL_RETURN_IF_ERROR(LaunchChannelBiasAdd(y->raw_data(), b->raw_data(), y->dtype(), y->dim(0), y->dim(1),
                                               spatial, ctx.stream()));
  }
  return Status::Ok();
}

Status Conv(CudaKernelContext& ctx) { return RunConv(ctx, false); }
Status ConvTranspose(CudaKernelContext& ctx) { return RunConv(ctx, true); }

bool ConvSupported(const ir::Node& node, const runtime::NodeTypes& types, std::string* why_not) {
  if (!AllInputsFloat(node, types, why_not)) return false;
  const ir::TypeInfo* x = types.inputs.empty() ? nullptr : types.inputs[0];
  if (x && x->shape.rank_known && (x->shape.dims.size() < 3 || x->shape.dims.size() > 5)) {
    if (why_not) *why_not = fmt::format("rank {} (1D, 2D and 3D convolutions only)", x->shape.dims.size());
    return false;
  }
  return true;
}

bool ConvTransposeSupported(const ir::Node& node, const runtime::NodeTypes& types, std::string* why_not) {
  if (!ConvSupported(node, types, why_not)) return false;
  if (ops::HasAttr(node, "output_shape")) {
    if (why_not) *why_not = "the output_shape attribute is not implemented";
    return false;
  }
  return true;
}

}  // namespace

std::span<const CudaKernelDef> ConvCudaKernels() {
  static const CudaKernelDef kDefs[] = {
      {"", "Conv", 1, kLatest, Conv, ConvSupported, 0},
      {"", "ConvTranspose", 1, kLatest, ConvTranspose, ConvTransposeSupported, 0},
  };
  return kDefs;
}

}  // namespace vigil::cuda
