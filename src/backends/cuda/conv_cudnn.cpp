// Conv and ConvTranspose through cuDNN's graph API: a forward-convolution
// (or backward-data, for ConvTranspose) operation graph per shape, built
// once per thread and cached; the bias is added by our own kernel (ConvNhwc
// fuses bias, residual Z and Relu/Relu6 into the cuDNN graph where cuDNN
// can). 1D
// convolutions run as 2D with a unit height. Tensors are NCHW as in ONNX,
// except for ai.vigil.ConvNhwc (the layout pass's channels-last Conv,
// ir/layout_nhwc.h): cuDNN gets the same logical NCHW dims with NHWC
// strides, which is what its tensor-core engines want. ConvNhwc hands some
// shapes to other files: depthwise ones to conv_depthwise.h, patchify ones
// to conv_patch.h, and most exact float32 ones to conv_gemm.h (products).
#include <cstdlib>
#include <string_view>

#include <fmt/format.h>

#include "base/dev_switch.h"
#include "backends/cuda/conv_depthwise.h"
#include "backends/cuda/conv_gemm.h"
#include "backends/cuda/conv_measure_rule.h"
#include "backends/cuda/conv_patch.h"
#include "backends/cuda/conv_space_to_depth.h"
#include "backends/cuda/epilogue.h"
#include "backends/cuda/split_tf32.h"
#include "backends/cuda/cuda_kernel.h"
#include "backends/cuda/cudnn_graph.h"
#include "ir/fuse_conv_epilogue.h"
#include "ir/layout_nhwc.h"
#include "ops/conv_geometry.h"
#include "ops/shape_helpers.h"

namespace vigil::cuda {
namespace {

// kFirstVirtual and up: the epilogue's virtual intermediates.
constexpr int64_t kX = 1, kW = 2, kY = 3, kB = 4, kConvOut = 5, kZ = 6, kFirstVirtual = 10;

// Pointwise ops fused after a forward convolution in one cuDNN graph
// (ConvNhwc), in this order: + Z, + bias, activation. They run on the
// float32 accumulators before Y is stored. Z comes first because cuDNN 9.14
// has precompiled engines for conv + Z + bias + ReLU and only
// runtime-compiled ones for conv + bias + Z + ReLU (tools/device/
// cudnn_compile_probe.cpp): those take 0.6 s each to compile in a process
// whose CUDA compute cache is cold.
struct Epilogue {
  bool bias = false;
  bool residual = false;
  NhwcActivation act = NhwcActivation::kNone;
  bool any() const { return bias || residual || act != NhwcActivation::kNone; }
  std::string name() const {
    std::string n = residual ? "+z" : "";
    if (bias) n += "+bias";
    if (act == NhwcActivation::kRelu) n += "+relu";
    if (act == NhwcActivation::kRelu6) n += "+relu6";
    return n;
  }
};

struct ConvShape {
  std::vector<int64_t> x, w, y;  // logical N,C,spatial dims as given to cuDNN (1D lifted to 2D)
  std::vector<int64_t> pre, post, strides, dilations;
  bool nhwc = false;  // X, W and Y are stored channels-last
};

// ConvNhwc's [N, H, W, C] (or W's [M, kH, kW, C/group]) as logical [N, C, H, W].
std::vector<int64_t> LogicalNchw(const std::vector<int64_t>& nhwc) {
  return {nhwc[0], nhwc[3], nhwc[1], nhwc[2]};
}

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

// `x`, `w`, `y` are logical N,C,spatial shapes.
Result<ConvShape> Geometry(CudaKernelContext& ctx, const std::vector<int64_t>& x, const std::vector<int64_t>& w,
                           const std::vector<int64_t>& y, bool transpose, bool nhwc) {
  size_t spatial = x.size() - 2;
  std::vector<int64_t> kernel(w.begin() + 2, w.end());
  VIGIL_ASSIGN_OR_RETURN(ops::WindowAttrs a,
                         ops::ReadWindowAttrs(ctx.node(), spatial, kernel, {.pooling = false, .transpose = transpose}));
  ConvShape s{x, w, y, {}, {}, a.strides, a.dilations, nhwc};
  for (size_t i = 0; i < spatial; ++i) {
    VIGIL_ASSIGN_OR_RETURN(ops::WindowExtent e, transpose ? ops::TransposeExtent(ctx.node(), a, i, x[2 + i])
                                                          : ops::ForwardExtent(ctx.node(), a, i, x[2 + i]));
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
  return fmt::format("{}|{}|{}|x{}|w{}|y{}|p{}/{}|s{}|d{}", op, s.nhwc ? "nhwc" : "nchw", static_cast<int>(t), j(s.x),
                     j(s.w), j(s.y), j(s.pre), j(s.post), j(s.strides), j(s.dilations));
}

// Appends the epilogue's pointwise ops, which read the convolution's virtual
// float32 output `conv_out` and write `y`, each step into a virtual float32
// tensor but the last; the bias is tensor kB [1, M, 1, 1], Z tensor kZ (Y's
// shape and layout).
Status AddEpilogue(const Epilogue& e, const ConvShape& s, cudnnDataType_t type, CudnnDescriptor conv_out,
                   CudnnDescriptor y, std::vector<CudnnDescriptor>& ops, std::vector<CudnnDescriptor>& keep) {
  auto strided = [&](int64_t uid, cudnnDataType_t t, const std::vector<int64_t>& dims, bool is_virtual) {
    return s.nhwc ? MakeCudnnTensor(uid, t, dims, ChannelsLastStrides(dims), is_virtual)
                  : MakeCudnnTensor(uid, t, dims, is_virtual);
  };
  struct Step {
    cudnnPointwiseMode_t mode;
    int64_t operand_uid;  // 0: none
    float upper_clip;
  };
  std::vector<Step> steps;
  if (e.residual) steps.push_back({CUDNN_POINTWISE_ADD, kZ, 0});
  if (e.bias) steps.push_back({CUDNN_POINTWISE_ADD, kB, 0});
  if (e.act != NhwcActivation::kNone) {
    steps.push_back({CUDNN_POINTWISE_RELU_FWD, 0, e.act == NhwcActivation::kRelu6 ? 6.0f : 0.0f});
  }
  std::vector<int64_t> bias_dims(s.y.size(), 1);
  bias_dims[1] = s.y[1];
  CudnnDescriptor in = std::move(conv_out);
  for (size_t i = 0; i < steps.size(); ++i) {
    const bool last = i + 1 == steps.size();
    CudnnDescriptor out;
    if (last) {
      out = std::move(y);
    } else {
      VIGIL_ASSIGN_OR_RETURN(out, strided(kFirstVirtual + static_cast<int64_t>(i), CUDNN_DATA_FLOAT, s.y, true));
    }
    CudnnDescriptor operand;
    if (steps[i].operand_uid != 0) {
      VIGIL_ASSIGN_OR_RETURN(operand, strided(steps[i].operand_uid, type, steps[i].operand_uid == kB ? bias_dims : s.y,
                                              false));
    }
    VIGIL_ASSIGN_OR_RETURN(CudnnDescriptor op, MakePointwiseOp(steps[i].mode, in, steps[i].operand_uid ? &operand : nullptr,
                                                           out, keep, steps[i].upper_clip));
    ops.push_back(std::move(op));
    if (steps[i].operand_uid != 0) keep.push_back(std::move(operand));
    keep.push_back(std::move(in));
    in = std::move(out);
  }
  keep.push_back(std::move(in));
  return Status::Ok();
}

size_t AlignUp(size_t n) { return (n + 255) / 256 * 256; }

// Whether this convolution times cuDNN's candidate engines on its first run
// without --tune, keeping the fastest for the session and recording nothing:
// large memory-bound exact float32 ones, and large full-resolution ones
// (conv_measure_rule.h; VIGIL_MEASURE_IMAGE_CONVS=0 leaves those out); the fused
// epilogue is then a candidate too. The session option measure_first_run
// turns it off; so does VIGIL_MEASURE_CONVS=0, to measure what it brings.
bool MeasuredUntuned(const ConvShape& s, ir::DataType dtype, const CudaOptions& o) {
  if (dtype != ir::DataType::kFloat32 || o.allow_tf32 || o.deterministic || !o.measure_first_run) return false;
  if (!DevSwitchOn("VIGIL_MEASURE_CONVS")) return false;
  return MemoryBoundLargeConv(s.x, s.w, s.y, s.strides) ||
         (LargeImageConv(s.x, s.w, s.y, s.strides) && DevSwitchOn("VIGIL_MEASURE_IMAGE_CONVS"));
}

// What a candidate plan runs on while autotuning (plan_tuning.h): the node's
// tensors by uid, with output `out_uid` redirected to scratch memory after
// the plan's workspace, so that the real output is written once.
struct ConvOperands {
  std::vector<int64_t> uids;
  std::vector<void*> ptrs;
  int64_t out_uid;
  size_t out_bytes;
};

Status RunCandidate(CudaKernelContext& ctx, const ConvOperands& o, const CudnnPlan& plan) {
  const size_t ws = AlignUp(static_cast<size_t>(plan.workspace_bytes));
  VIGIL_ASSIGN_OR_RETURN(void* space, ctx.stream_context().Workspace(ws + o.out_bytes));
  std::vector<void*> ptrs = o.ptrs;
  for (size_t i = 0; i < o.uids.size(); ++i) {
    if (o.uids[i] == o.out_uid) ptrs[i] = static_cast<uint8_t*>(space) + ws;
  }
  return ExecuteCudnnPlan(ctx.stream_context().cudnn, plan, o.uids, ptrs, space);
}

// The plan cache's key of a forward convolution (with `epilogue` fused, or
// `split`: its operands are split TF32 ones, RunSplitConv).
std::string ForwardKey(const ConvShape& s, ir::DataType dtype, const Epilogue& epilogue, bool split) {
  return Key("fprop", s, dtype) + epilogue.name() + (split ? "|3xtf32" : "");
}

// The cuDNN plan for one convolution shape (with `epilogue` fused, forward
// only), built on first use per thread: the heuristics' first pick, or with
// autotuning the recorded or the fastest measured on `operands` (null: not
// measured). `split`: X and W are split TF32 operands (RunSplitConv), run
// on TF32 tensor cores.
Result<const CudnnPlan*> ConvPlan(CudaKernelContext& ctx, const ConvShape& s, ir::DataType dtype, bool transpose,
                                  Epilogue epilogue = {}, const ConvOperands* operands = nullptr,
                                  bool split = false) {
  std::string key = transpose ? Key("dgrad", s, dtype) : ForwardKey(s, dtype, epilogue, split);
  auto& cache = ctx.stream_context().plans;
  if (auto it = cache.find(key); it != cache.end()) return static_cast<const CudnnPlan*>(it->second.get());

  VIGIL_ASSIGN_OR_RETURN(cudnnDataType_t type, CudnnDataType(static_cast<int>(dtype)));
  // x is the convolution's input and y its output; for ConvTranspose the
  // node's input is dy and its output dx of the same forward convolution.
  const std::vector<int64_t>& fwd_x = transpose ? s.y : s.x;
  const std::vector<int64_t>& fwd_y = transpose ? s.x : s.y;
  auto tensor = [&](int64_t uid, const std::vector<int64_t>& dims, cudnnDataType_t t, bool is_virtual) {
    return s.nhwc ? MakeCudnnTensor(uid, t, dims, ChannelsLastStrides(dims), is_virtual)
                  : MakeCudnnTensor(uid, t, dims, is_virtual);
  };
  const bool fused = epilogue.any() && !transpose;
  VIGIL_ASSIGN_OR_RETURN(CudnnDescriptor x, tensor(kX, fwd_x, type, false));
  VIGIL_ASSIGN_OR_RETURN(CudnnDescriptor w, tensor(kW, s.w, type, false));
  // With an epilogue the convolution writes a virtual float32 tensor.
  VIGIL_ASSIGN_OR_RETURN(CudnnDescriptor y, fused ? tensor(kConvOut, fwd_y, CUDNN_DATA_FLOAT, true)
                                                  : tensor(kY, fwd_y, type, false));

  VIGIL_ASSIGN_OR_RETURN(CudnnDescriptor conv,
                         MakeConvolutionDescriptor(CUDNN_DATA_FLOAT, s.strides, s.pre, s.post, s.dilations));

  float alpha = 1.0f, beta = 0.0f;
  CudnnDescriptor op;
  if (!transpose) {
    VIGIL_ASSIGN_OR_RETURN(op, MakeConvolutionForwardOp(x, w, y, conv));
  } else {
    VIGIL_ASSIGN_OR_RETURN(op, CudnnDescriptor::Create(CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR));
    VIGIL_RETURN_IF_ERROR(op.SetDescriptor(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX, x));
    VIGIL_RETURN_IF_ERROR(op.SetDescriptor(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W, w));
    VIGIL_RETURN_IF_ERROR(op.SetDescriptor(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY, y));
    VIGIL_RETURN_IF_ERROR(op.SetDescriptor(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC, conv));
    VIGIL_RETURN_IF_ERROR(op.Set(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA, CUDNN_TYPE_FLOAT, 1, &alpha));
    VIGIL_RETURN_IF_ERROR(op.Set(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA, CUDNN_TYPE_FLOAT, 1, &beta));
    VIGIL_RETURN_IF_ERROR(op.Finalize());
  }

  std::string what = fmt::format("{}{}{} {} {} {}D x[{}] w[{}]", split ? "3xTF32 " : "",
                                 transpose ? "ConvTranspose" : "Conv", epilogue.name(),
                                 ir::DataTypeName(dtype), s.nhwc ? "NHWC" : "NCHW", s.strides.size(),
                                 fmt::join(s.x, ","), fmt::join(s.w, ","));
  PlanFilter filter{ctx.options().allow_tf32 || split, ctx.options().deterministic, dtype == ir::DataType::kFloat32,
                    split};
  std::vector<CudnnDescriptor> ops;
  ops.push_back(std::move(op));
  std::vector<CudnnDescriptor> keep;
  keep.push_back(std::move(x));
  keep.push_back(std::move(w));
  keep.push_back(std::move(conv));
  if (fused) {
    VIGIL_ASSIGN_OR_RETURN(CudnnDescriptor out, tensor(kY, fwd_y, type, false));
    VIGIL_RETURN_IF_ERROR(AddEpilogue(epilogue, s, type, std::move(y), std::move(out), ops, keep));
  } else {
    keep.push_back(std::move(y));
  }
  CudnnTuning tuning;
  tuning.policy = ctx.stream_context().tuning;
  tuning.problem = fmt::format("cudnn|{}|tf32={}|det={}", key, int{filter.allow_tf32}, int{filter.deterministic});
  tuning.stream = ctx.stream();
  if (operands) tuning.run = [&ctx, operands](const CudnnPlan& p) { return RunCandidate(ctx, *operands, p); };
  tuning.measure_unrecorded = operands && !transpose && !split && MeasuredUntuned(s, dtype, ctx.options());
  // A large batch measures the candidates on its first images
  // (MeasuredImages), a plan of its own, and the whole batch's plan is the
  // winner's engine; where that does not build, the whole batch measures.
  // Not with --tune, which measures and records every shape as it runs.
  // VIGIL_MEASURE_PART_OF_BATCH=0 measures the whole batch, for comparison.
  if (tuning.measure_unrecorded && !tuning.policy.measure && DevSwitchOn("VIGIL_MEASURE_PART_OF_BATCH")) {
    const int64_t images = MeasuredImages(s.w, s.y);
    if (images < s.y[0]) {
      ConvShape part = s;
      part.x[0] = part.y[0] = images;
      Result<const CudnnPlan*> measured = ConvPlan(ctx, part, dtype, transpose, epilogue, operands, split);
      if (measured.ok() && *measured) {
        Result<std::string> choice = EngineChoiceText((*measured)->config_parts.back());
        if (choice.ok()) {
          tuning.choice = std::move(choice).value();
          tuning.choice_note = fmt::format("measured on {} of {} images", images, s.y[0]);
        }
      }
    }
  }
  // Always with `tuning`: without a cache or measuring it only counts what
  // cuDNN compiles at run time (FirstRunMeasures::AddCompiled).
  Result<CudnnPlan> plan = BuildCudnnPlan(ctx.stream_context().cudnn, std::move(ops), std::move(keep), filter, what,
                                          &tuning);
  if (!plan.ok()) return std::move(plan).TakeStatus().WithContext(ops::NodeLabel(ctx.node()));
  auto shared = std::make_shared<CudnnPlan>(std::move(plan).value());
  const CudnnPlan* raw = shared.get();
  cache.emplace(key, std::move(shared));
  return raw;
}

// Whether this convolution runs as 3xTF32 (conv_measure_rule.h): float32
// without TF32, the session option tf32x3_convolutions on, group 1, and
// SplitConvPays.
bool WantsSplitConv(const CudaKernelContext& ctx, const ConvShape& s, ir::DataType dtype, int64_t group) {
  const CudaOptions& o = ctx.options();
  if (dtype != ir::DataType::kFloat32 || o.allow_tf32 || !o.tf32x3_convolutions || group != 1) return false;
  return SplitConvPays(s.x, s.w, s.y, s.strides);
}

// The tripled input of one slice of the batch, and the tripled weights,
// share the operand scratch (StreamContext::OperandScratch), as the split
// products do (matmul_cublaslt.cpp).
constexpr size_t kMaxSplitConvScratch = size_t{256} << 20;

int64_t DimProduct(const std::vector<int64_t>& v, size_t from) {
  int64_t p = 1;
  for (size_t i = from; i < v.size(); ++i) p *= v[i];
  return p;
}

// The split plan for `t` (tripled channels), or null where cuDNN has none
// here; remembered per thread, as NhwcPlanOrNull does.
const CudnnPlan* SplitPlanOrNull(CudaKernelContext& ctx, const ConvShape& t, const ConvOperands& operands) {
  Result<const CudnnPlan*> plan = ConvPlan(ctx, t, ir::DataType::kFloat32, false, {}, &operands, true);
  if (plan.ok()) return *plan;
  ctx.stream_context().plans.emplace(ForwardKey(t, ir::DataType::kFloat32, {}, true), nullptr);
  return nullptr;
}

// Y = conv(X, W) for float32 X, W, Y of shape `s` (NCHW or NHWC, group 1)
// as one TF32 convolution of the split operands: X3 = [x_hi | x_lo | x_hi]
// and W3 = [w_hi | w_hi | w_lo] along the input channels (split_tf32.h),
// in slices of the batch so that the tripled slice fits the scratch beside
// the tripled weights. No bias or activation. *done stays false, with only
// scratch written, where one image does not fit or cuDNN has no engine.
Status RunSplitConv(CudaKernelContext& ctx, const ConvShape& s, const void* x, const void* w, void* y, bool* done) {
  *done = false;
  const int64_t n = s.x[0], c = s.x[1], m = s.w[0];
  const int64_t image = DimProduct(s.x, 1), out_image = DimProduct(s.y, 1), spatial = DimProduct(s.x, 2);
  const int64_t taps = DimProduct(s.w, 2);
  const size_t w3_bytes = AlignUp(size_t{12} * size_t(m * c * taps));
  const size_t x3_image = size_t{12} * size_t(image);
  if (n <= 0 || w3_bytes + x3_image > kMaxSplitConvScratch) return Status::Ok();
  // Even slices: the largest count that fits, spread over as few slices.
  const int64_t most = std::min<int64_t>(n, int64_t((kMaxSplitConvScratch - w3_bytes) / x3_image));
  const int64_t slices = (n + most - 1) / most;
  const int64_t slice = (n + slices - 1) / slices;
  VIGIL_ASSIGN_OR_RETURN(void* scratch, ctx.stream_context().OperandScratch(w3_bytes + x3_image * size_t(slice)));
  auto* w3 = static_cast<float*>(scratch);
  float* x3 = w3 + w3_bytes / sizeof(float);
  auto split_x = [&](int64_t n0, int64_t count) {
    const float* xs = static_cast<const float*>(x) + n0 * image;
    return s.nhwc ? LaunchSplitTf32(xs, x3, 1, count * spatial, c, true, 1, ctx.stream())
                  : LaunchSplitTf32(xs, x3, count, c, spatial, false, 1, ctx.stream());
  };
  // W [M, C, taps] (NCHW) or [M, taps, C] (NHWC): the lo parts in segment 2.
  VIGIL_RETURN_IF_ERROR(s.nhwc ? LaunchSplitTf32(static_cast<const float*>(w), w3, 1, m * taps, c, true, 2, ctx.stream())
                               : LaunchSplitTf32(static_cast<const float*>(w), w3, m, c, taps, false, 2, ctx.stream()));
  VIGIL_RETURN_IF_ERROR(split_x(0, slice));
  // The plans of both slice sizes before any convolution is queued.
  ConvShape t = s;
  t.x[1] *= 3;
  t.w[1] *= 3;
  auto operands_of = [&](int64_t n0, int64_t count) {
    return ConvOperands{{kX, kW, kY}, {x3, w3, static_cast<float*>(y) + n0 * out_image}, kY,
                        AlignUp(size_t(count * out_image) * sizeof(float))};
  };
  const CudnnPlan* plans[2] = {nullptr, nullptr};
  const int64_t last = n - (slices - 1) * slice;
  for (int i = 0; i < (last == slice ? 1 : 2); ++i) {
    t.x[0] = t.y[0] = i == 0 ? slice : last;
    plans[i] = SplitPlanOrNull(ctx, t, operands_of(0, t.x[0]));
    if (!plans[i]) return Status::Ok();
  }
  if (!plans[1]) plans[1] = plans[0];
  for (int64_t n0 = 0; n0 < n; n0 += slice) {
    const int64_t count = std::min(slice, n - n0);
    if (n0 > 0) VIGIL_RETURN_IF_ERROR(split_x(n0, count));
    const CudnnPlan& plan = *plans[count == slice ? 0 : 1];
    VIGIL_ASSIGN_OR_RETURN(void* workspace, ctx.stream_context().Workspace(static_cast<size_t>(plan.workspace_bytes)));
    const ConvOperands o = operands_of(n0, count);
    VIGIL_RETURN_IF_ERROR(ExecuteCudnnPlan(ctx.stream_context().cudnn, plan, o.uids, o.ptrs, workspace));
  }
  *done = true;
  return Status::Ok();
}

// Conv or ConvTranspose through cuDNN in the model's layout, then the bias,
// the residual `z` (FusedConv's input 3) and `act` in one pass.
Status RunConv(CudaKernelContext& ctx, bool transpose, const runtime::Tensor* z = nullptr,
               NhwcActivation act = NhwcActivation::kNone) {
  const runtime::Tensor& x = *ctx.input(0);
  const runtime::Tensor& w = *ctx.input(1);
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * y, ctx.Output(0));
  if (y->element_count() == 0) return Status::Ok();
  VIGIL_ASSIGN_OR_RETURN(ConvShape s, Geometry(ctx, x.shape(), w.shape(), y->shape(), transpose, false));
  // For ConvTranspose the node's output is the convolution's input (dx).
  void* fwd_x = transpose ? y->raw_data() : const_cast<void*>(x.raw_data());
  void* fwd_y = transpose ? const_cast<void*>(x.raw_data()) : y->raw_data();
  bool done = false;
  if (!transpose && ctx.options().tf32x3_convolutions) {  // the group is read only where a split may follow
    VIGIL_ASSIGN_OR_RETURN(int64_t group, ops::IntAttr(ctx.node(), "group", 1));
    if (WantsSplitConv(ctx, s, x.dtype(), group)) {
      VIGIL_RETURN_IF_ERROR(RunSplitConv(ctx, s, x.raw_data(), w.raw_data(), y->raw_data(), &done));
    }
  }
  if (!done) {
    const ConvOperands operands{{kX, kW, kY}, {fwd_x, const_cast<void*>(w.raw_data()), fwd_y}, transpose ? kX : kY,
                                AlignUp(y->byte_size())};
    VIGIL_ASSIGN_OR_RETURN(const CudnnPlan* plan, ConvPlan(ctx, s, x.dtype(), transpose, {}, &operands));
    VIGIL_ASSIGN_OR_RETURN(void* workspace,
                           ctx.stream_context().Workspace(static_cast<size_t>(plan->workspace_bytes)));
    VIGIL_RETURN_IF_ERROR(ExecuteCudnnPlan(ctx.stream_context().cudnn, *plan, operands.uids, operands.ptrs, workspace));
  }
  int64_t spatial = 1;
  for (size_t i = 2; i < y->rank(); ++i) spatial *= y->dim(i);
  const runtime::Tensor* b = ctx.input(2);
  return LaunchChannelEpilogue(y->raw_data(), b ? b->raw_data() : nullptr, z ? z->raw_data() : nullptr, y->dtype(),
                               y->dim(0), y->dim(1), spatial, act, ctx.stream());
}

// The NHWC plan (with `epilogue` fused), or null when cuDNN cannot build it
// for this shape here; remembered per thread (a null entry), so the engine
// search is not repeated every run. Any failure counts: the caller's
// fallback meets a real error (a device fault) again and reports it.
const CudnnPlan* NhwcPlanOrNull(CudaKernelContext& ctx, const ConvShape& s, ir::DataType dtype, Epilogue epilogue,
                                const ConvOperands& operands) {
  Result<const CudnnPlan*> plan = ConvPlan(ctx, s, dtype, false, epilogue, &operands);
  if (plan.ok()) return *plan;
  ctx.stream_context().plans.emplace(ForwardKey(s, dtype, epilogue, false), nullptr);
  return nullptr;
}

// VIGIL_CONV_FUSION=0 turns off the cuDNN epilogue fusion (bias, Z,
// activation) of ConvNhwc, to measure what it brings; the epilogue kernel
// then runs after (still one pass for all three). Read on every call (a
// lookup, small next to a convolution), so tests can switch it.
bool FusionEnabled() { return DevSwitchOn("VIGIL_CONV_FUSION"); }

// ConvNhwc through NCHW engines: X and W are transposed into the workspace,
// the NCHW plan writes Y there, and Y is transposed into the output. For
// shapes cuDNN has no channels-last engine for (some grouped convolutions).
Status RunNhwcThroughNchw(CudaKernelContext& ctx, ConvShape s, const runtime::Tensor& x, const runtime::Tensor& w,
                          runtime::Tensor& y) {
  s.nhwc = false;
  VIGIL_ASSIGN_OR_RETURN(const CudnnPlan* plan, ConvPlan(ctx, s, x.dtype(), false));
  const size_t xb = AlignUp(x.byte_size()), wb = AlignUp(w.byte_size()), yb = AlignUp(y.byte_size());
  VIGIL_ASSIGN_OR_RETURN(void* space, ctx.stream_context().Workspace(xb + wb + yb +
                                                                     static_cast<size_t>(plan->workspace_bytes)));
  auto* base = static_cast<uint8_t*>(space);
  void *xn = base, *wn = base + xb, *yn = base + xb + wb, *work = base + xb + wb + yb;
  const ir::DataType t = x.dtype();
  VIGIL_RETURN_IF_ERROR(LaunchLayoutTranspose(xn, x.raw_data(), t, s.x[0], s.x[1], s.x[2] * s.x[3], true, ctx.stream()));
  VIGIL_RETURN_IF_ERROR(LaunchLayoutTranspose(wn, w.raw_data(), t, s.w[0], s.w[1], s.w[2] * s.w[3], true, ctx.stream()));
  VIGIL_RETURN_IF_ERROR(ExecuteCudnnPlan(ctx.stream_context().cudnn, *plan, {kX, kW, kY}, {xn, wn, yn}, work));
  return LaunchLayoutTranspose(y.raw_data(), yn, t, s.y[0], s.y[1], s.y[2] * s.y[3], false, ctx.stream());
}

// ConvNhwc's `activation`, or with `name` "input_activation" that one.
Result<NhwcActivation> ActivationOf(const ir::Node& node, std::string_view name = "activation") {
  VIGIL_ASSIGN_OR_RETURN(std::string a, ops::StringAttr(node, name, ""));
  if (a.empty()) return NhwcActivation::kNone;
  if (a == ir::kConvNhwcRelu) return NhwcActivation::kRelu;
  if (a == ir::kConvNhwcRelu6) return NhwcActivation::kRelu6;
  return UnsupportedError("{} {} '{}'", node.op_type, name, a);
}

// ConvNhwc of shape `s` on cuDNN's channels-last engines, over X at `xp`
// and W at `wp`: the plan with the bias, Z and activation fused where
// `fuse` allows it (and cuDNN has one), else the plain plan and the
// epilogue kernel after. *done stays false, with nothing queued, where
// cuDNN has no channels-last plan for `s`.
Status RunCudnnNhwc(CudaKernelContext& ctx, const ConvShape& s, ir::DataType dtype, void* xp, void* wp,
                    const runtime::Tensor* b, const runtime::Tensor* z, runtime::Tensor& y, NhwcActivation act,
                    bool fuse, bool* done) {
  *done = false;
  const Epilogue epilogue{b != nullptr, z != nullptr, act};
  // ReLU6 (RELU_FWD with an upper clip) is left to the epilogue kernel: with
  // cuDNN 9.14 on an H100 the fused conv+bias+clipped-ReLU engines were about
  // 10x slower than the plain convolution (MobileNetV2 fp16 batch 64: 34.8 ms
  // fused, 4.0 ms with the epilogue kernel).
  if (epilogue.any() && fuse && FusionEnabled() && act != NhwcActivation::kRelu6) {
    ConvOperands fused_operands{{kX, kW, kY}, {xp, wp, y.raw_data()}, kY, AlignUp(y.byte_size())};
    if (b) {
      fused_operands.uids.push_back(kB);
      fused_operands.ptrs.push_back(const_cast<void*>(b->raw_data()));
    }
    if (z) {
      fused_operands.uids.push_back(kZ);
      fused_operands.ptrs.push_back(const_cast<void*>(z->raw_data()));
    }
    if (const CudnnPlan* fused = NhwcPlanOrNull(ctx, s, dtype, epilogue, fused_operands)) {
      VIGIL_ASSIGN_OR_RETURN(void* workspace,
                             ctx.stream_context().Workspace(static_cast<size_t>(fused->workspace_bytes)));
      *done = true;
      return ExecuteCudnnPlan(ctx.stream_context().cudnn, *fused, fused_operands.uids, fused_operands.ptrs,
                              workspace);
    }
  }
  const ConvOperands operands{{kX, kW, kY}, {xp, wp, y.raw_data()}, kY, AlignUp(y.byte_size())};
  const CudnnPlan* plan = NhwcPlanOrNull(ctx, s, dtype, {}, operands);
  if (!plan) return Status::Ok();
  VIGIL_ASSIGN_OR_RETURN(void* workspace, ctx.stream_context().Workspace(static_cast<size_t>(plan->workspace_bytes)));
  VIGIL_RETURN_IF_ERROR(ExecuteCudnnPlan(ctx.stream_context().cudnn, *plan, operands.uids, operands.ptrs, workspace));
  *done = true;
  return LaunchNhwcBiasActivation(y.raw_data(), b ? b->raw_data() : nullptr, z ? z->raw_data() : nullptr, y.dtype(),
                                  y.dim(0) * y.dim(1) * y.dim(2), y.dim(3), act, ctx.stream());
}

// A stem (at most 4 input channels, stride 2, group 1) on tensor cores
// (float16, bfloat16, or float32 with TF32) rewritten as a stride-1
// convolution over 16 channels (conv_space_to_depth.h) where
// StemSpaceToDepthPays (conv_measure_rule.h): cuDNN's engines for 3 input
// channels are slow, those for 16 are not. VIGIL_STEM_SPACE_TO_DEPTH=0
// keeps stems on cuDNN as they are, to measure the difference.
std::optional<SpaceToDepthGeometry> FloatStemOf(const CudaKernelContext& ctx, const ConvShape& s, ir::DataType dtype,
                                                int64_t group) {
  const bool tensor_cores = dtype == ir::DataType::kFloat16 || dtype == ir::DataType::kBfloat16 ||
                            (dtype == ir::DataType::kFloat32 && ctx.options().allow_tf32);
  if (!tensor_cores || group != 1 || s.x.size() != 4 || s.x[1] > 4 || s.strides != std::vector<int64_t>{2, 2} ||
      s.dilations != std::vector<int64_t>{1, 1} || !StemSpaceToDepthPays(s.w, s.y) ||
      !DevSwitchOn("VIGIL_STEM_SPACE_TO_DEPTH")) {
    return std::nullopt;
  }
  return SpaceToDepthGeometryOf(s.x, s.w, s.y, s.pre);
}

// The stem of `g` as Z (*) W' on cuDNN, both in the operand scratch; *done
// stays false where cuDNN has no channels-last plan for it.
Status RunFloatStem(CudaKernelContext& ctx, const SpaceToDepthGeometry& g, const runtime::Tensor& x,
                    const runtime::Tensor& w, const runtime::Tensor* b, const runtime::Tensor* z, runtime::Tensor& y,
                    NhwcActivation act, bool* done) {
  const int esize = static_cast<int>(ir::DataTypeBits(x.dtype()) / 8);
  const size_t zb = AlignUp(static_cast<size_t>(g.z_elements()) * esize);
  const size_t wb = AlignUp(static_cast<size_t>(g.w_elements()) * esize);
  VIGIL_ASSIGN_OR_RETURN(void* scratch, ctx.stream_context().OperandScratch(zb + wb));
  auto* zp = static_cast<uint8_t*>(scratch);
  uint8_t* w2 = zp + zb;
  VIGIL_RETURN_IF_ERROR(LaunchSpaceToDepth(x.raw_data(), zp, g, esize, ctx.stream()));
  VIGIL_RETURN_IF_ERROR(LaunchSpaceToDepthFilter(w.raw_data(), w2, g, esize, ctx.stream()));
  const int64_t th = (g.kh + 1) / 2, tw = (g.kw + 1) / 2;
  ConvShape t{{g.n, kSpaceToDepthChannels, g.zh(), g.zw()},
              {g.m, kSpaceToDepthChannels, th, tw},
              {g.n, g.m, g.oh, g.ow},
              {0, 0},
              {0, 0},
              {1, 1},
              {1, 1},
              true};
  return RunCudnnNhwc(ctx, t, x.dtype(), zp, w2, b, z, y, act, true, done);
}

Status ConvNhwc(CudaKernelContext& ctx) {
  const runtime::Tensor& x = *ctx.input(0);
  const runtime::Tensor& w = *ctx.input(1);
  VIGIL_ASSIGN_OR_RETURN(NhwcActivation act, ActivationOf(ctx.node()));
  VIGIL_ASSIGN_OR_RETURN(NhwcActivation input_act, ActivationOf(ctx.node(), ir::kConvNhwcInputActivation));
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * y, ctx.Output(0));
  if (y->element_count() == 0) return Status::Ok();
  if (x.rank() != 4 || w.rank() != 4 || y->rank() != 4) {
    return ctx.Fail("ConvNhwc takes 4-D X, W and Y, got {}, {} and {}", x.Describe(), w.Describe(), y->Describe());
  }
  const runtime::Tensor* b = ctx.input(2);
  const runtime::Tensor* z = ctx.input(3);
  if (z && (z->shape() != y->shape() || z->dtype() != y->dtype())) {
    return ctx.Fail("input 3 (Z) is {}, it must match the output {}", z->Describe(), y->Describe());
  }
  VIGIL_ASSIGN_OR_RETURN(ConvShape s, Geometry(ctx, LogicalNchw(x.shape()), LogicalNchw(w.shape()),
                                               LogicalNchw(y->shape()), false, true));
  void* xp = const_cast<void*>(x.raw_data());
  void* wp = const_cast<void*>(w.raw_data());
  // Depthwise convolutions run on our own kernel (conv_depthwise.h says why).
  VIGIL_ASSIGN_OR_RETURN(int64_t group, ops::IntAttr(ctx.node(), "group", 1));
  if (auto dw = DepthwiseShapeOf(x.shape(), w.shape(), y->shape(), group, s.strides, s.pre, s.dilations)) {
    return LaunchDepthwiseConvNhwc(*dw, x.dtype(), xp, wp, b ? b->raw_data() : nullptr, z ? z->raw_data() : nullptr,
                                   y->raw_data(), act, input_act, ctx.stream());
  }
  // Only the depthwise kernel activates its input (ConvNhwcSupported keeps
  // such nodes off this backend otherwise).
  if (input_act != NhwcActivation::kNone) {
    return ctx.Unsupported("input_activation on a ConvNhwc that is not depthwise (or VIGIL_DEPTHWISE=cudnn)");
  }
  // Non-overlapping patches (ViT's embedding) run as one GEMM (conv_patch.h says why).
  if (auto p = PatchShapeOf(x.shape(), w.shape(), y->shape(), group, s.strides, s.pre, s.post, s.dilations);
      p && PatchGemmEnabled()) {
    return RunPatchConv(ctx, *p, x.dtype(), xp, wp, b ? b->raw_data() : nullptr, z ? z->raw_data() : nullptr,
                        y->raw_data(), act);
  }
  if (auto g = FloatStemOf(ctx, s, x.dtype(), group)) {
    bool done = false;
    VIGIL_RETURN_IF_ERROR(RunFloatStem(ctx, *g, x, w, b, z, *y, act, &done));
    if (done) return Status::Ok();
  }
  // 3xTF32 (WantsSplitConv), then the epilogue kernel.
  const bool exact_float32 = x.dtype() == ir::DataType::kFloat32 && !ctx.options().allow_tf32;
  if (WantsSplitConv(ctx, s, x.dtype(), group)) {
    bool done = false;
    VIGIL_RETURN_IF_ERROR(RunSplitConv(ctx, s, xp, wp, y->raw_data(), &done));
    if (done) {
      return LaunchNhwcBiasActivation(y->raw_data(), b ? b->raw_data() : nullptr, z ? z->raw_data() : nullptr,
                                      y->dtype(), y->dim(0) * y->dim(1) * y->dim(2), y->dim(3), act, ctx.stream());
    }
  }
  // Exact float32 as a cuBLASLt product with its epilogue, where that beats
  // cuDNN (conv_gemm.h, GemmConvPays).
  if (exact_float32 && GemmConvEnabled() && GemmConvPays(s.w, s.y, s.strides)) {
    if (auto g = GemmConvShapeOf(x.shape(), w.shape(), y->shape(), group, s.strides, s.pre, s.post, s.dilations)) {
      bool done = false;
      VIGIL_RETURN_IF_ERROR(RunGemmConv(ctx, *g, x.dtype(), xp, wp, b ? b->raw_data() : nullptr,
                                        z ? z->raw_data() : nullptr, y->raw_data(), act, &done));
      if (done) return Status::Ok();
    }
  }
  // The epilogue stays out of cuDNN's plan for exact float32 convolutions
  // (TF32 off) unless autotuning (as for ReLU6, RunCudnnNhwc): cuDNN's
  // engines for them fused are runtime-compiled, and merely listing them
  // compiles kernels (on an H200, 18 for ResNet-50: its first run took
  // 0.7-1.2 s instead of 0.3 s); unfused they cost 0 to 2.4% per run on
  // ResNet-50 and 8% on MobileNetV2 at batch 64
  // (bench/results/issue19_h200_fp16_option.md). With --tune or a tuning
  // cache, or where the convolution is measured anyway (MeasuredUntuned), the
  // fused engines are candidates again.
  const bool fuse =
      !(exact_float32 && !ctx.stream_context().tuning.cache && !MeasuredUntuned(s, x.dtype(), ctx.options()));
  bool done = false;
  VIGIL_RETURN_IF_ERROR(RunCudnnNhwc(ctx, s, x.dtype(), xp, wp, b, z, *y, act, fuse, &done));
  if (done) return Status::Ok();
  VIGIL_RETURN_IF_ERROR(RunNhwcThroughNchw(ctx, s, x, w, *y));
  return LaunchNhwcBiasActivation(y->raw_data(), b ? b->raw_data() : nullptr, z ? z->raw_data() : nullptr,
                                  y->dtype(), y->dim(0) * y->dim(1) * y->dim(2), y->dim(3), act, ctx.stream());
}

Status Conv(CudaKernelContext& ctx) { return RunConv(ctx, false); }
Status ConvTranspose(CudaKernelContext& ctx) { return RunConv(ctx, true); }

// ai.vigil.FusedConv (ir/fuse_conv_epilogue.h): Conv, then bias, Z and the
// activation in one pass.
Status FusedConv(CudaKernelContext& ctx) {
  VIGIL_ASSIGN_OR_RETURN(NhwcActivation act, ActivationOf(ctx.node()));
  const runtime::Tensor* z = ctx.input(3);
  if (z) {
    const std::vector<int64_t>* planned = ctx.PlannedDims(0);
    if (z->dtype() != ctx.input(0)->dtype() || (planned && z->shape() != *planned)) {
      return ctx.Fail("input 3 (Z) is {}, it must have the output's dtype and shape (no broadcasting)",
                      z->Describe());
    }
  }
  return RunConv(ctx, false, z, act);
}

bool ConvSupported(const ir::Node& node, const runtime::NodeTypes& types, std::string* why_not) {
  if (!AllInputsFloat(node, types, why_not)) return false;
  const ir::TypeInfo* x = types.inputs.empty() ? nullptr : types.inputs[0];
  if (x && x->shape.rank_known && (x->shape.dims.size() < 3 || x->shape.dims.size() > 5)) {
    if (why_not) *why_not = fmt::format("rank {} (1D, 2D and 3D convolutions only)", x->shape.dims.size());
    return false;
  }
  return true;
}

// Whether the depthwise kernel (conv_depthwise.h) runs `node`, as far as the
// types tell: group == C == M > 1 with X and W known, W [M, kH, kW, 1], and
// VIGIL_DEPTHWISE not "cudnn". The shape checks of DepthwiseShapeOf that
// need every dim (the kernel's index range) are left to run time.
bool DepthwiseKernelTakes(const ir::Node& node, const runtime::NodeTypes& types) {
  if (DepthwiseForcedToCudnn() || types.inputs.size() < 2 || !types.inputs[0] || !types.inputs[1]) return false;
  const ir::Shape& x = types.inputs[0]->shape;
  const ir::Shape& w = types.inputs[1]->shape;
  if (!x.rank_known || !w.rank_known || x.dims.size() != 4 || w.dims.size() != 4) return false;
  Result<int64_t> group = ops::IntAttr(node, "group", 1);
  auto is = [](const ir::Dim& d, int64_t v) { return d.is_known() && *d.value == v; };
  return group.ok() && *group > 1 && is(x.dims[3], *group) && is(w.dims[0], *group) && is(w.dims[3], 1);
}

bool ConvNhwcSupported(const ir::Node& node, const runtime::NodeTypes& types, std::string* why_not) {
  if (!AllInputsFloat(node, types, why_not)) return false;
  const ir::TypeInfo* x = types.inputs.empty() ? nullptr : types.inputs[0];
  if (x && x->shape.rank_known && x->shape.dims.size() != 4) {
    if (why_not) *why_not = fmt::format("rank {} (ConvNhwc is 2D only)", x->shape.dims.size());
    return false;
  }
  if (!ActivationOf(node).ok()) {
    if (why_not) *why_not = "activation other than Relu and Relu6";
    return false;
  }
  Result<NhwcActivation> input_act = ActivationOf(node, ir::kConvNhwcInputActivation);
  if (!input_act.ok() || (*input_act != NhwcActivation::kNone && !DepthwiseKernelTakes(node, types))) {
    if (why_not) *why_not = "input_activation (Relu, Relu6) on a convolution the depthwise kernel does not run";
    return false;
  }
  return true;
}

bool FusedConvSupported(const ir::Node& node, const runtime::NodeTypes& types, std::string* why_not) {
  if (!ConvSupported(node, types, why_not)) return false;
  if (!ActivationOf(node).ok()) {
    if (why_not) *why_not = "activation other than Relu and Relu6";
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

bool ConvNhwcPrefersChannelsLast(const CudaOptions& options, const ir::Node& node, const runtime::NodeTypes& types) {
  if (options.allow_tf32 || options.tf32x3_convolutions || !GemmConvEnabled()) return true;
  if (types.inputs.size() < 2 || types.outputs.empty()) return true;
  const ir::TypeInfo* x = types.inputs[0];
  const ir::TypeInfo* w = types.inputs[1];
  const ir::TypeInfo* y = types.outputs[0];
  auto rank4 = [](const ir::TypeInfo* t) { return t && t->shape.rank_known && t->shape.dims.size() == 4; };
  if (!rank4(x) || !rank4(w) || !rank4(y) || x->elem_type != ir::DataType::kFloat32) return true;
  Result<int64_t> group = ops::IntAttr(node, "group", 1);
  Result<std::vector<int64_t>> strides = ops::IntsAttr(node, "strides", {1, 1});
  if (!group.ok() || *group != 1 || !strides.ok() || strides->size() != 2) return true;
  const std::vector<ir::Dim>& wd = w->shape.dims;  // [M, kH, kW, C]
  const std::vector<ir::Dim>& yd = y->shape.dims;  // [N, OH, OW, M]
  for (const ir::Dim* d : {&wd[0], &wd[1], &wd[2], &wd[3], &yd[1], &yd[2]}) {
    if (!d->is_known()) return true;
  }
  const int64_t batch = yd[0].is_known() ? *yd[0].value : 1;
  return GemmConvPays({*wd[0].value, *wd[3].value, *wd[1].value, *wd[2].value},
                      {batch, *wd[0].value, *yd[1].value, *yd[2].value}, *strides);
}

std::span<const CudaKernelDef> ConvCudaKernels() {
  static const CudaKernelDef kDefs[] = {
      {"", "Conv", 1, kLatest, Conv, ConvSupported, 0},
      {"", "ConvTranspose", 1, kLatest, ConvTranspose, ConvTransposeSupported, 0},
      {ir::kVigilDomain, ir::kFusedConvOp, 1, kLatest, FusedConv, FusedConvSupported, 0},
      {ir::kVigilDomain, ir::kConvNhwcOp, 1, kLatest, ConvNhwc, ConvNhwcSupported, 0},
  };
  return kDefs;
}

}  // namespace vigil::cuda
