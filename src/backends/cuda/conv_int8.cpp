// ai.vigil.QConvNhwc (ir/fuse_qdq.h) through cuDNN's int8 engines: X and W
// int8 channels-last, the convolution accumulating in int32, then
// x scale[m] + bias[m] (float32), Relu when asked, and the conversion to
// int8 (round half to even, saturated), all in one cuDNN graph:
//   conv (int32) -> mul scale -> add bias [-> relu] -> Y int8.
// Where cuDNN has no engine for that graph, the convolution writes int32
// into the workspace and our kernel (quantize_linear.h) does the rest.
//
// cuDNN's int8 NHWC engines need the input and output channels in
// multiples of 4. A convolution with other channel counts and a small
// window (C x kH x kW <= 1024: an RGB stem) runs the same arithmetic on
// float16 engines with float32 accumulation instead, or float32 ones (TF32
// allowed) where cuDNN has no float16 engine for it: X and W converted are
// integers of at most 8 bits, which float16, TF32 and float32 hold exactly,
// their products are exact in float32, and every partial sum is an integer
// below 2^24, so the float accumulator is the exact int32 sum. QConvNhwcSupported refuses the rest (the QDQ pass then
// leaves those convolutions in float, and inspect says why).
// A stride-2 convolution with at most 4 input channels and 16 to 64 output
// channels (ResNet's stem) takes neither: our space-to-depth kernel
// (conv_space_to_depth.h) runs it on int8 tensor cores, 5x faster than any
// cuDNN route for it.
#include <cstdlib>
#include <functional>
#include <optional>
#include <string_view>

#include <fmt/format.h>

#include "base/dev_switch.h"
#include "backends/cuda/conv_space_to_depth.h"
#include "backends/cuda/cuda_kernel.h"
#include "backends/cuda/cudnn_graph.h"
#include "backends/cuda/quantize_linear.h"
#include "backends/cuda/tuning_cache.h"
#include "ir/fuse_qdq.h"
#include "ir/layout_nhwc.h"
#include "ops/attributes.h"
#include "ops/conv_geometry.h"

namespace vigil::cuda {
namespace {

constexpr int64_t kX = 1, kW = 2, kY = 3, kScale = 4, kBias = 5, kAcc = 6, kFirstVirtual = 10;

// The largest C x kH x kW the float route takes: 1024 x 128 x 128 < 2^24.
constexpr int64_t kMaxExactFloatFanIn = 1024;

// How the convolution computes: on int8 engines (int32 accumulation) or on
// float32 ones over the int8 values converted (exact, see above).
// kExactFloat computes on float16 X and W where cuDNN has an engine for that
// (exact too: 8-bit integers in float16, products exact in float32, the
// float32 accumulation as above), else on float32.
enum class Route { kInt8, kExactFloat };
enum class FloatData { kHalf, kFloat };

size_t AlignUp(size_t n) { return (n + 255) / 256 * 256; }

struct Int8ConvShape {
  std::vector<int64_t> x, w, y;  // logical [N, C, H, W] / [M, C, kH, kW] / [N, M, OH, OW], stored channels-last
  std::vector<int64_t> pre, post, strides, dilations;
};

Result<Int8ConvShape> ShapeOf(CudaKernelContext& ctx, const runtime::Tensor& x, const runtime::Tensor& w,
                              const runtime::Tensor& y) {
  Int8ConvShape s;
  s.x = {x.dim(0), x.dim(3), x.dim(1), x.dim(2)};
  s.w = {w.dim(0), w.dim(3), w.dim(1), w.dim(2)};
  s.y = {y.dim(0), y.dim(3), y.dim(1), y.dim(2)};
  VIGIL_ASSIGN_OR_RETURN(ops::WindowAttrs a,
                         ops::ReadWindowAttrs(ctx.node(), 2, std::vector<int64_t>{s.w[2], s.w[3]}, {}));
  s.strides = a.strides;
  s.dilations = a.dilations;
  for (size_t i = 0; i < 2; ++i) {
    VIGIL_ASSIGN_OR_RETURN(ops::WindowExtent e, ops::ForwardExtent(ctx.node(), a, i, s.x[2 + i]));
    s.pre.push_back(e.pad_begin);
    s.post.push_back(e.pad_end);
  }
  return s;
}

std::string KeyOf(const Int8ConvShape& s, Route route, bool relu, bool fused, FloatData data = FloatData::kFloat) {
  auto j = [](const std::vector<int64_t>& v) { return fmt::format("{}", fmt::join(v, ",")); };
  const char* r = route == Route::kInt8 ? "int8" : (data == FloatData::kHalf ? "exactf16" : "exactf32");
  return fmt::format("qconv|{}|{}|{}|x{}|w{}|y{}|p{}/{}|s{}|d{}", r,
                     fused ? "fused" : "acc", relu ? "relu" : "", j(s.x), j(s.w), j(s.y), j(s.pre), j(s.post),
                     j(s.strides), j(s.dilations));
}

// What a candidate plan runs on while autotuning: the node's tensors by uid,
// the output redirected to scratch memory after the plan's workspace. The
// float route's converted X and W live in the workspace too: `stage` writes
// them into the `stage_bytes` after the output and points `ptrs` at them,
// before every measured run (a candidate's workspace may move the memory).
struct Operands {
  std::vector<int64_t> uids;
  std::vector<void*> ptrs;
  int64_t out_uid;
  size_t out_bytes;
  size_t stage_bytes = 0;
  std::function<Status(uint8_t* staging, std::vector<void*>& ptrs)> stage;
};

Result<CudnnDescriptor> NhwcTensor(int64_t uid, cudnnDataType_t t, const std::vector<int64_t>& dims, bool is_virtual) {
  return MakeCudnnTensor(uid, t, dims, ChannelsLastStrides(dims), is_virtual);
}

// The plan: with `fused` the whole graph above, else the convolution alone
// writing its accumulator (kAcc: int32, or float32 on the float route).
// With `operands` (int8 route) autotuning measures candidates on them. Null
// (remembered) when cuDNN cannot build it.
Result<const CudnnPlan*> Int8Plan(CudaKernelContext& ctx, const Int8ConvShape& s, Route route, bool relu, bool fused,
                                  const Operands* operands, FloatData float_data = FloatData::kFloat) {
  const std::string key = KeyOf(s, route, relu, fused, float_data);
  auto& cache = ctx.stream_context().plans;
  if (auto it = cache.find(key); it != cache.end()) return static_cast<const CudnnPlan*>(it->second.get());
  const bool exact_float = route == Route::kExactFloat;
  const cudnnDataType_t data =
      exact_float ? (float_data == FloatData::kHalf ? CUDNN_DATA_HALF : CUDNN_DATA_FLOAT) : CUDNN_DATA_INT8;
  const cudnnDataType_t accumulate = exact_float ? CUDNN_DATA_FLOAT : CUDNN_DATA_INT32;
  std::vector<CudnnDescriptor> ops, keep;
  VIGIL_ASSIGN_OR_RETURN(CudnnDescriptor x, NhwcTensor(kX, data, s.x, false));
  VIGIL_ASSIGN_OR_RETURN(CudnnDescriptor w, NhwcTensor(kW, data, s.w, false));
  VIGIL_ASSIGN_OR_RETURN(CudnnDescriptor acc, NhwcTensor(fused ? kFirstVirtual : kAcc, accumulate, s.y, fused));
  VIGIL_ASSIGN_OR_RETURN(CudnnDescriptor conv,
                         MakeConvolutionDescriptor(accumulate, s.strides, s.pre, s.post, s.dilations));
  VIGIL_ASSIGN_OR_RETURN(CudnnDescriptor op, MakeConvolutionForwardOp(x, w, acc, conv));
  ops.push_back(std::move(op));
  keep.push_back(std::move(x));
  keep.push_back(std::move(w));
  keep.push_back(std::move(conv));
  if (fused) {
    const std::vector<int64_t> per_channel = {1, s.y[1], 1, 1};
    struct Step {
      cudnnPointwiseMode_t mode;
      int64_t operand;
    };
    std::vector<Step> steps = {{CUDNN_POINTWISE_MUL, kScale}, {CUDNN_POINTWISE_ADD, kBias}};
    if (relu) steps.push_back({CUDNN_POINTWISE_RELU_FWD, 0});
    CudnnDescriptor in = std::move(acc);
    for (size_t i = 0; i < steps.size(); ++i) {
      const bool last = i + 1 == steps.size();
      VIGIL_ASSIGN_OR_RETURN(CudnnDescriptor out,
                             last ? NhwcTensor(kY, CUDNN_DATA_INT8, s.y, false)
                                  : NhwcTensor(kFirstVirtual + 1 + static_cast<int64_t>(i), CUDNN_DATA_FLOAT, s.y, true));
      CudnnDescriptor operand;
      if (steps[i].operand) {
        VIGIL_ASSIGN_OR_RETURN(operand, NhwcTensor(steps[i].operand, CUDNN_DATA_FLOAT, per_channel, false));
      }
      VIGIL_ASSIGN_OR_RETURN(CudnnDescriptor pw,
                             MakePointwiseOp(steps[i].mode, in, steps[i].operand ? &operand : nullptr, out, keep));
      ops.push_back(std::move(pw));
      if (steps[i].operand) keep.push_back(std::move(operand));
      keep.push_back(std::move(in));
      in = std::move(out);
    }
    keep.push_back(std::move(in));
  } else {
    keep.push_back(std::move(acc));
  }
  const std::string what = fmt::format("QConvNhwc {}{} x[{}] w[{}]",
                                       exact_float ? (float_data == FloatData::kHalf ? "int8 as float16" : "int8 as float32")
                                                   : "int8",
                                       fused ? (relu ? "+scale+bias+relu" : "+scale+bias") : "", fmt::join(s.x, ","),
                                       fmt::join(s.w, ","));
  CudnnTuning tuning;
  tuning.policy = ctx.stream_context().tuning;
  tuning.problem = fmt::format("cudnn|{}", key);
  tuning.stream = ctx.stream();
  if (operands) {
    tuning.run = [&ctx, operands](const CudnnPlan& p) -> Status {
      const size_t ws = AlignUp(static_cast<size_t>(p.workspace_bytes));
      VIGIL_ASSIGN_OR_RETURN(void* space,
                             ctx.stream_context().Workspace(ws + operands->out_bytes + operands->stage_bytes));
      std::vector<void*> ptrs = operands->ptrs;
      for (size_t i = 0; i < operands->uids.size(); ++i) {
        if (operands->uids[i] == operands->out_uid) ptrs[i] = static_cast<uint8_t*>(space) + ws;
      }
      if (operands->stage) {
        VIGIL_RETURN_IF_ERROR(operands->stage(static_cast<uint8_t*>(space) + ws + operands->out_bytes, ptrs));
      }
      return ExecuteCudnnPlan(ctx.stream_context().cudnn, p, operands->uids, ptrs, space);
    };
  }
  // TF32 is exact on the float route (8-bit integers); float32 = false keeps the filter from refusing it.
  Result<CudnnPlan> plan = BuildCudnnPlan(ctx.stream_context().cudnn, std::move(ops), std::move(keep),
                                          PlanFilter{exact_float, ctx.options().deterministic, false}, what,
                                          tuning.policy.cache ? &tuning : nullptr);
  if (!plan.ok()) {
    cache.emplace(key, nullptr);
    return std::move(plan).TakeStatus().WithContext(ops::NodeLabel(ctx.node()));
  }
  auto shared = std::make_shared<CudnnPlan>(std::move(plan).value());
  const CudnnPlan* raw = shared.get();
  cache.emplace(key, std::move(shared));
  return raw;
}

// Which route a convolution of C input and M output channels with a kH x kW
// window takes, or none.
std::optional<Route> RouteOf(int64_t c, int64_t m, int64_t kh, int64_t kw) {
  if (c % 4 == 0 && m % 4 == 0) return Route::kInt8;
  if (c * kh * kw <= kMaxExactFloatFanIn) return Route::kExactFloat;
  return std::nullopt;
}

// The int8 route: the fused plan, else the convolution into int32 and our requantization.
Status RunInt8Route(CudaKernelContext& ctx, const Int8ConvShape& s, bool relu, void* xp, void* wp, void* sp, void* bp,
                    runtime::Tensor& y) {
  auto& cache = ctx.stream_context().plans;
  const std::string fused_key = KeyOf(s, Route::kInt8, relu, true);
  if (!(cache.count(fused_key) && !cache.at(fused_key))) {
    const Operands operands{{kX, kW, kY, kScale, kBias}, {xp, wp, y.raw_data(), sp, bp}, kY,
                            AlignUp(y.byte_size()), 0, nullptr};
    Result<const CudnnPlan*> fused = Int8Plan(ctx, s, Route::kInt8, relu, true, &operands);
    if (fused.ok() && *fused) {
      VIGIL_ASSIGN_OR_RETURN(void* workspace,
                             ctx.stream_context().Workspace(static_cast<size_t>((*fused)->workspace_bytes)));
      return ExecuteCudnnPlan(ctx.stream_context().cudnn, **fused, operands.uids, operands.ptrs, workspace);
    }
  }
  const size_t acc_bytes = AlignUp(y.element_count() * sizeof(int32_t));
  VIGIL_ASSIGN_OR_RETURN(const CudnnPlan* plan, Int8Plan(ctx, s, Route::kInt8, relu, false, nullptr));
  if (!plan) return ctx.Unsupported("cuDNN has no int8 engine for this convolution");
  VIGIL_ASSIGN_OR_RETURN(void* space, ctx.stream_context().Workspace(acc_bytes + static_cast<size_t>(plan->workspace_bytes)));
  void* acc = space;
  void* work = static_cast<uint8_t*>(space) + acc_bytes;
  VIGIL_RETURN_IF_ERROR(ExecuteCudnnPlan(ctx.stream_context().cudnn, *plan, {kX, kW, kAcc}, {xp, wp, acc}, work));
  return LaunchRequantizeRows(static_cast<const int32_t*>(acc), false, static_cast<const float*>(sp),
                              static_cast<const float*>(bp), static_cast<int8_t*>(y.raw_data()),
                              static_cast<int64_t>(y.element_count()) / s.w[0], s.w[0], relu, ctx.stream());
}

// The space-to-depth route (conv_space_to_depth.h) for stride-2
// convolutions with at most 4 input channels: an RGB stem. cuDNN 9.14's
// engines run ResNet-50's (3 channels, 7x7, stride 2, batch 64) in 0.7 ms at
// best, on the exact float route or, rewritten, on int8 over 16 channels;
// our kernel takes it whole when M is a multiple of 16 up to 64.
std::optional<SpaceToDepthGeometry> SpaceToDepthOf(const Int8ConvShape& s) {
  if (!DevSwitchOn("VIGIL_QCONV_SPACE_TO_DEPTH")) return std::nullopt;
  if (s.strides != std::vector<int64_t>{2, 2} || s.dilations != std::vector<int64_t>{1, 1} || s.w[2] * s.w[3] < 2) {
    return std::nullopt;
  }
  const SpaceToDepthGeometry g = SpaceToDepthGeometryOf(s.x, s.w, s.y, s.pre);
  if (!SpaceToDepthConvSupported(g)) return std::nullopt;
  return g;
}

Status RunSpaceToDepthRoute(CudaKernelContext& ctx, const SpaceToDepthGeometry& g, bool relu,
                            const runtime::Tensor& x, const runtime::Tensor& w, const void* sp, const void* bp,
                            runtime::Tensor& y) {
  const size_t zb = AlignUp(static_cast<size_t>(g.z_elements()));
  VIGIL_ASSIGN_OR_RETURN(void* space,
                         ctx.stream_context().Workspace(zb + AlignUp(static_cast<size_t>(g.w_elements()))));
  auto* z = static_cast<int8_t*>(space);
  int8_t* w2 = z + zb;
  VIGIL_RETURN_IF_ERROR(LaunchSpaceToDepthInt8(static_cast<const int8_t*>(x.raw_data()), z, g, ctx.stream()));
  VIGIL_RETURN_IF_ERROR(LaunchSpaceToDepthFilterInt8(static_cast<const int8_t*>(w.raw_data()), w2, g, ctx.stream()));
  return LaunchSpaceToDepthConvInt8(z, w2, static_cast<const float*>(sp), static_cast<const float*>(bp),
                                    static_cast<int8_t*>(y.raw_data()), g, relu, ctx.stream());
}

// The float route's candidates: the fused graph on float16 data, the
// float16 convolution alone (float32 accumulator, then our requantization),
// then the same on float32.
struct FloatCandidate {
  FloatData data;
  bool fused;
  const char* name;
};
constexpr FloatCandidate kFloatCandidates[] = {{FloatData::kHalf, true, "f16fused"},
                                               {FloatData::kHalf, false, "f16acc"},
                                               {FloatData::kFloat, true, "f32fused"},
                                               {FloatData::kFloat, false, "f32acc"}};

// Where a float-route run keeps its converted X and W and its accumulator.
struct FloatStaging {
  size_t xb, wb, ab;
  int64_t x_rows, w_rows;
};

FloatStaging StagingOf(const Int8ConvShape& s, int64_t c, const runtime::Tensor& x, const runtime::Tensor& w,
                       const runtime::Tensor& y, const FloatCandidate& k) {
  const size_t element = k.data == FloatData::kHalf ? 2 : 4;
  FloatStaging f;
  f.x_rows = static_cast<int64_t>(x.element_count()) / c;
  f.w_rows = static_cast<int64_t>(w.element_count()) / c;
  f.xb = AlignUp(static_cast<size_t>(f.x_rows * s.x[1]) * element);
  f.wb = AlignUp(static_cast<size_t>(f.w_rows * s.x[1]) * element);
  f.ab = k.fused ? 0 : AlignUp(y.element_count() * sizeof(float));
  return f;
}

// X and W converted (channels padded with zeros) into `at` and `at + xb`.
Status StageFloatOperands(CudaKernelContext& ctx, const FloatStaging& f, int64_t c, int64_t cp, bool half,
                          const runtime::Tensor& x, const runtime::Tensor& w, uint8_t* at) {
  VIGIL_RETURN_IF_ERROR(
      LaunchInt8ToFloat(static_cast<const int8_t*>(x.raw_data()), at, half, f.x_rows, c, cp, ctx.stream()));
  return LaunchInt8ToFloat(static_cast<const int8_t*>(w.raw_data()), at + f.xb, half, f.w_rows, c, cp, ctx.stream());
}

// One run of candidate `k` with `plan`: convert, convolve, requantize.
Status RunFloatCandidate(CudaKernelContext& ctx, const Int8ConvShape& s, int64_t c, const FloatCandidate& k,
                         const CudnnPlan& plan, bool relu, const runtime::Tensor& x, const runtime::Tensor& w, void* sp,
                         void* bp, runtime::Tensor& y) {
  const FloatStaging f = StagingOf(s, c, x, w, y, k);
  VIGIL_ASSIGN_OR_RETURN(void* space, ctx.stream_context().Workspace(f.xb + f.wb + f.ab +
                                                                     static_cast<size_t>(plan.workspace_bytes)));
  auto* base = static_cast<uint8_t*>(space);
  void* xf = base;
  void* wf = base + f.xb;
  float* acc = reinterpret_cast<float*>(base + f.xb + f.wb);
  void* work = base + f.xb + f.wb + f.ab;
  VIGIL_RETURN_IF_ERROR(StageFloatOperands(ctx, f, c, s.x[1], k.data == FloatData::kHalf, x, w, base));
  if (k.fused) {
    return ExecuteCudnnPlan(ctx.stream_context().cudnn, plan, {kX, kW, kY, kScale, kBias},
                            {xf, wf, y.raw_data(), sp, bp}, work);
  }
  VIGIL_RETURN_IF_ERROR(ExecuteCudnnPlan(ctx.stream_context().cudnn, plan, {kX, kW, kAcc}, {xf, wf, acc}, work));
  return LaunchRequantizeRows(acc, true, static_cast<const float*>(sp), static_cast<const float*>(bp),
                              static_cast<int8_t*>(y.raw_data()), static_cast<int64_t>(y.element_count()) / s.w[0],
                              s.w[0], relu, ctx.stream());
}

// The float route: X and W converted to float16 or float32 in the
// workspace, then one of kFloatCandidates. Without measuring, the first
// candidate cuDNN builds runs (or the one a tuning cache recorded). With
// --tune each candidate's engines are measured on the converted operands,
// then the candidates themselves, whole (conversion and requantization
// included), and the fastest is recorded under "qconv-route|...".
Status RunExactFloatRoute(CudaKernelContext& ctx, Int8ConvShape s, bool relu, const runtime::Tensor& x,
                          const runtime::Tensor& w, void* sp, void* bp, runtime::Tensor& y) {
  // The channels padded with zeros to a multiple of 8 (which adds nothing to
  // the sums): tensor-core engines want it (an RGB stem has 3).
  const int64_t c = s.x[1], cp = (c + 7) / 8 * 8;
  s.x[1] = cp;
  s.w[1] = cp;
  auto& cache = ctx.stream_context().plans;
  auto known_missing = [&](const std::string& key) { return cache.count(key) && !cache.at(key); };
  const TuningPolicy& policy = ctx.stream_context().tuning;
  const std::string route_problem = fmt::format("qconv-route|{}", KeyOf(s, Route::kExactFloat, relu, false));
  // VIGIL_QCONV_FLOAT_ROUTE (measurements only) keeps one candidate.
  const char* forced = std::getenv("VIGIL_QCONV_FLOAT_ROUTE");
  std::optional<std::string> recorded = policy.cache ? policy.cache->Find(route_problem) : std::nullopt;
  bool measure = policy.cache && policy.measure && !forced && !recorded;
  if (measure) {
    VIGIL_ASSIGN_OR_RETURN(bool recording, StreamRecording(ctx.stream()));
    measure = !recording;
  }
  std::vector<FloatCandidate> order;
  for (const FloatCandidate& k : kFloatCandidates) {
    if (forced && std::string_view(forced) != k.name) continue;
    if (recorded && *recorded == k.name) order.insert(order.begin(), k);
    else order.push_back(k);
  }
  struct Built {
    FloatCandidate k;
    const CudnnPlan* plan;
    double us;
  };
  std::optional<Built> best;
  double first_us = -1;
  for (const FloatCandidate& k : order) {
    if (known_missing(KeyOf(s, Route::kExactFloat, relu, k.fused, k.data))) continue;
    std::optional<Operands> operands;
    if (measure) {
      const FloatStaging f = StagingOf(s, c, x, w, y, k);
      operands = Operands{{kX, kW, k.fused ? kY : kAcc}, {nullptr, nullptr, nullptr}, k.fused ? kY : kAcc,
                          k.fused ? AlignUp(y.byte_size()) : f.ab, f.xb + f.wb, nullptr};
      if (k.fused) {
        operands->uids.insert(operands->uids.end(), {kScale, kBias});
        operands->ptrs.insert(operands->ptrs.end(), {sp, bp});
      }
      const bool half = k.data == FloatData::kHalf;
      operands->stage = [&ctx, f, c, cp, half, &x, &w](uint8_t* at, std::vector<void*>& ptrs) -> Status {
        ptrs[0] = at;
        ptrs[1] = at + f.xb;
        return StageFloatOperands(ctx, f, c, cp, half, x, w, at);
      };
    }
    Result<const CudnnPlan*> p =
        Int8Plan(ctx, s, Route::kExactFloat, relu, k.fused, operands ? &*operands : nullptr, k.data);
    if (!p.ok() || !*p) continue;
    if (!measure) {
      best = Built{k, *p, 0};
      break;
    }
    VIGIL_ASSIGN_OR_RETURN(double us, MedianMicros(ctx.stream(), [&] {
                             return RunFloatCandidate(ctx, s, c, k, **p, relu, x, w, sp, bp, y);
                           }));
    if (first_us < 0) first_us = us;
    if (!best || us < best->us) best = Built{k, *p, us};
  }
  if (!best) return ctx.Unsupported("cuDNN has no float16 or float32 engine for this convolution");
  if (measure) policy.cache->Record(route_problem, best->k.name, best->us, first_us);
  return RunFloatCandidate(ctx, s, c, best->k, *best->plan, relu, x, w, sp, bp, y);
}

Status QConvNhwc(CudaKernelContext& ctx) {
  const runtime::Tensor& x = *ctx.input(0);
  const runtime::Tensor& w = *ctx.input(1);
  const runtime::Tensor& scale = *ctx.input(2);
  const runtime::Tensor& bias = *ctx.input(3);
  VIGIL_ASSIGN_OR_RETURN(std::string act, ops::StringAttr(ctx.node(), "activation", ""));
  const bool relu = act == ir::kConvNhwcRelu;
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * y, ctx.Output(0));
  if (y->element_count() == 0) return Status::Ok();
  if (x.rank() != 4 || w.rank() != 4 || y->rank() != 4) {
    return ctx.Fail("QConvNhwc takes 4-D X, W and Y, got {}, {} and {}", x.Describe(), w.Describe(), y->Describe());
  }
  if (scale.element_count() != static_cast<size_t>(w.dim(0)) || bias.element_count() != scale.element_count()) {
    return ctx.Fail("scale is {} and bias {}, expected {} values each", scale.Describe(), bias.Describe(), w.dim(0));
  }
  VIGIL_ASSIGN_OR_RETURN(Int8ConvShape s, ShapeOf(ctx, x, w, *y));
  std::optional<Route> route = RouteOf(s.x[1], s.w[0], s.w[2], s.w[3]);
  if (!route) return ctx.Unsupported("{} input channels x a {}x{} window", s.x[1], s.w[2], s.w[3]);
  void* sp = const_cast<void*>(scale.raw_data());
  void* bp = const_cast<void*>(bias.raw_data());
  if (std::optional<SpaceToDepthGeometry> g = SpaceToDepthOf(s)) {
    return RunSpaceToDepthRoute(ctx, *g, relu, x, w, sp, bp, *y);
  }
  if (*route == Route::kExactFloat) return RunExactFloatRoute(ctx, s, relu, x, w, sp, bp, *y);
  return RunInt8Route(ctx, s, relu, const_cast<void*>(x.raw_data()), const_cast<void*>(w.raw_data()), sp, bp, *y);
}

bool QConvNhwcSupported(const ir::Node& node, const runtime::NodeTypes& types, std::string* why_not) {
  if (!Int8ProductTypesSupported(node, types, "QConvNhwc", why_not)) return false;
  auto in = [&](size_t i) { return i < types.inputs.size() ? types.inputs[i] : nullptr; };
  Result<int64_t> group = ops::IntAttr(node, "group", 1);
  if (!group.ok() || *group != 1) {
    if (why_not) *why_not = "grouped convolution (cuDNN's int8 engines here take group 1)";
    return false;
  }
  // C (X's last dim) and M (W's first) in multiples of 4.
  auto dim = [](const ir::TypeInfo* t, size_t i) -> std::optional<int64_t> {
    if (!t || !t->shape.rank_known || t->shape.dims.size() != 4 || !t->shape.dims[i].is_known()) return std::nullopt;
    return *t->shape.dims[i].value;
  };
  if (in(0) && in(0)->shape.rank_known && in(0)->shape.dims.size() != 4) {
    if (why_not) *why_not = "not a 2D convolution";
    return false;
  }
  const std::optional<int64_t> c = dim(in(0), 3), m = dim(in(1), 0), kh = dim(in(1), 1), kw = dim(in(1), 2);
  if (!c || !m || !kh || !kw || !RouteOf(*c, *m, *kh, *kw)) {
    if (why_not) {
      auto text = [](const std::optional<int64_t>& v) { return v ? fmt::format("{}", *v) : std::string("unknown"); };
      *why_not = fmt::format("{} input and {} output channels with a {}x{} window: cuDNN's int8 convolutions need "
                             "both channel counts in multiples of 4, and the exact float32 route takes at most {} "
                             "inputs per output (C x kH x kW)",
                             text(c), text(m), text(kh), text(kw), kMaxExactFloatFanIn);
    }
    return false;
  }
  return true;
}

const CudaKernelDef kInt8ConvKernels[] = {
    {ir::kVigilDomain, ir::kQConvNhwcOp, 1, kLatest, QConvNhwc, QConvNhwcSupported, 0},
};

}  // namespace

std::span<const CudaKernelDef> Int8ConvCudaKernels() { return kInt8ConvKernels; }

}  // namespace vigil::cuda
