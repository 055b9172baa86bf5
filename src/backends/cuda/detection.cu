// CUDA kernels of the object-detection ops: RoiAlign (opsets 10 to latest;
// float32, float16, bfloat16; avg and max; half_pixel and
// output_half_pixel) and NonMaxSuppression (opsets 10 to latest; float32).
//
// Both follow the CPU kernels (backends/cpu/detection.cpp) operation for
// operation; this file is compiled with --fmad=false (CMakeLists.txt) so that
// sample positions and overlaps round as on the CPU.
//
// RoiAlign: one thread per output element. rois and batch_indices stay on
// the device (they are usually computed by the nodes before). A roi whose
// batch index is outside [0, N) reads nothing: its outputs are NaN, where
// the CPU fails the run (an error needs the host, and a stream
// synchronisation per node would cost every model; see docs/cuda.md). The
// same holds for a roi whose adaptive sample grid exceeds the CPU's limit of
// 2^26 points per axis, or is NaN.
//
// NonMaxSuppression: its output has as many rows as boxes are selected,
// which only the run knows. Per (batch, class): a kernel ranks the boxes
// above score_threshold (highest score first, ties in box order, NaN last,
// as the CPU's stable sort), one block per (batch, class) then runs the
// greedy suppression in that order, its threads testing the candidate
// against the kept boxes; a single-thread kernel adds up the counts. The
// host learns the total with one stream synchronisation (refused while a
// CUDA graph is recorded), allocates [total, 3] and a last kernel writes the
// rows in (batch, class, selection) order.
#pragma nv_diag_suppress 20208

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "backends/cuda/data_movement_common.cuh"
#include "backends/cuda/device_common.cuh"
#include "backends/cuda/vision.h"
#include "ops/detection.h"
#include "ops/attributes.h"

namespace vigil::cuda {
namespace {

using movement::RequireInputs;
constexpr int kThreads = 256;

// ---------------------------------------------------------------- RoiAlign

struct RoiParams {
  bool max_mode = false;
  bool half_pixel = false;  // coordinate_transformation_mode; opset 10 is output_half_pixel
  int64_t out_h = 1, out_w = 1;
  int64_t sampling_ratio = 0;
  double spatial_scale = 1;
  int64_t batches = 0, channels = 0, height = 0, width = 0, rois = 0;
};

Result<RoiParams> ReadRoiAlignAttrs(const CudaKernelContext& ctx) {
  const ir::Node& node = ctx.node();
  RoiParams a;
  VIGIL_ASSIGN_OR_RETURN(std::string mode, ops::StringAttr(node, "mode", "avg"));
  if (mode != "avg" && mode != "max") return ctx.Fail("mode is '{}', expected 'avg' or 'max'", mode);
  a.max_mode = mode == "max";
  if (ctx.opset() >= 16) {
    VIGIL_ASSIGN_OR_RETURN(std::string coords, ops::StringAttr(node, "coordinate_transformation_mode", "half_pixel"));
    if (coords != "half_pixel" && coords != "output_half_pixel") {
      return ctx.Fail("coordinate_transformation_mode is '{}', expected 'half_pixel' or 'output_half_pixel'", coords);
    }
    a.half_pixel = coords == "half_pixel";
  }
  VIGIL_ASSIGN_OR_RETURN(a.out_h, ops::IntAttr(node, "output_height", 1));
  VIGIL_ASSIGN_OR_RETURN(a.out_w, ops::IntAttr(node, "output_width", 1));
  VIGIL_ASSIGN_OR_RETURN(a.sampling_ratio, ops::IntAttr(node, "sampling_ratio", 0));
  VIGIL_ASSIGN_OR_RETURN(float scale, ops::FloatAttr(node, "spatial_scale", 1.0f));
  a.spatial_scale = scale;
  constexpr int64_t kMaxSize = int64_t{1} << 20;
  if (a.out_h < 1 || a.out_h > kMaxSize || a.out_w < 1 || a.out_w > kMaxSize) {
    return ctx.Fail("output_height {} and output_width {} must be in [1, 2^20]", a.out_h, a.out_w);
  }
  if (a.sampling_ratio < 0 || a.sampling_ratio > kMaxSize) {
    return ctx.Fail("sampling_ratio is {}; it must be in [0, 2^20] (0: adaptive)", a.sampling_ratio);
  }
  return a;
}

// std::max and std::min's comparisons: with a NaN they return the first
// operand, where fmax/fmin return the other one.
__device__ __forceinline__ double StdMax(double a, double b) { return a < b ? b : a; }
__device__ __forceinline__ float StdMax(float a, float b) { return a < b ? b : a; }
__device__ __forceinline__ float StdMin(float a, float b) { return b < a ? b : a; }

struct AxisSample {
  bool valid = false;
  int64_t low = 0, high = 0;
  double w_low = 0, w_high = 0;
};

// As the CPU's SampleAxis: a point more than a pixel outside the map samples
// nothing; within a pixel of the edge it takes the edge value.
__device__ AxisSample SampleAxis(double v, int64_t size) {
  AxisSample s;
  if (size <= 0 || !(v >= -1.0 && v <= static_cast<double>(size))) return s;
  v = StdMax(v, 0.0);
  s.valid = true;
  s.low = static_cast<int64_t>(v);
  if (s.low >= size - 1) {
    s.low = s.high = size - 1;
    v = static_cast<double>(s.low);
  } else {
    s.high = s.low + 1;
  }
  s.w_high = v - static_cast<double>(s.low);
  s.w_low = 1.0 - s.w_high;
  return s;
}

// Sample points per output cell along one axis (the CPU's GridPoints); -1
// where the CPU fails (NaN, or more than 2^26 points over the cells).
__device__ int64_t GridPoints(const RoiParams& p, double extent, int64_t cells) {
  constexpr double kMaxPoints = static_cast<double>(int64_t{1} << 26);
  double points = p.sampling_ratio > 0 ? static_cast<double>(p.sampling_ratio)
                                       : ceil(extent / static_cast<double>(cells));
  if (isnan(points) || points * static_cast<double>(cells) > kMaxPoints) return -1;
  return static_cast<int64_t>(StdMax(points, 0.0));
}

template <typename I>
__device__ __forceinline__ int64_t BatchIndex(const I* b, int64_t n) { return static_cast<int64_t>(b[n]); }

// X [N, C, H, W], rois [R, 4] (x1, y1, x2, y2), batch_indices [R] ->
// Y [R, C, out_h, out_w].
template <typename T, typename I>
__global__ void RoiAlignKernel(const T* __restrict__ x, const T* __restrict__ rois, const I* __restrict__ batch,
                               T* __restrict__ y, RoiParams p) {
  const int64_t total = p.rois * p.channels * p.out_h * p.out_w;
  for (int64_t t = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; t < total; t += int64_t{gridDim.x} * blockDim.x) {
    const int64_t pw = t % p.out_w;
    const int64_t ph = (t / p.out_w) % p.out_h;
    const int64_t c = (t / (p.out_w * p.out_h)) % p.channels;
    const int64_t n = t / (p.out_w * p.out_h * p.channels);
    const int64_t b = BatchIndex(batch, n);
    const T* r = rois + n * 4;
    const double offset = p.half_pixel ? 0.5 : 0.0;
    const double r0 = ToFloat(r[0]), r1 = ToFloat(r[1]), r2 = ToFloat(r[2]), r3 = ToFloat(r[3]);
    const double start_w = r0 * p.spatial_scale - offset, start_h = r1 * p.spatial_scale - offset;
    double roi_w = r2 * p.spatial_scale - offset - start_w, roi_h = r3 * p.spatial_scale - offset - start_h;
    if (!p.half_pixel) {  // malformed rois are made 1 x 1
      roi_w = StdMax(roi_w, 1.0);
      roi_h = StdMax(roi_h, 1.0);
    }
    const int64_t grid_h = GridPoints(p, roi_h, p.out_h), grid_w = GridPoints(p, roi_w, p.out_w);
    if (b < 0 || b >= p.batches || grid_h < 0 || grid_w < 0) {
      y[t] = FromFloat<T>(nanf(""));
      continue;
    }
    const double bin_h = roi_h / static_cast<double>(p.out_h), bin_w = roi_w / static_cast<double>(p.out_w);
    const T* plane = x + (b * p.channels + c) * p.height * p.width;
    const double count = static_cast<double>(grid_h * grid_w > 1 ? grid_h * grid_w : 1);
    double sum = 0, best = 0;
    bool first = true;
    for (int64_t iy = 0; iy < grid_h; ++iy) {
      const AxisSample sy = SampleAxis(
          start_h + static_cast<double>(ph) * bin_h + (static_cast<double>(iy) + 0.5) * bin_h / static_cast<double>(grid_h),
          p.height);
      for (int64_t ix = 0; ix < grid_w; ++ix) {
        const AxisSample sx = SampleAxis(
            start_w + static_cast<double>(pw) * bin_w + (static_cast<double>(ix) + 0.5) * bin_w / static_cast<double>(grid_w),
            p.width);
        double v[4] = {0, 0, 0, 0};  // the four weighted corners
        if (sy.valid && sx.valid) {
          v[0] = sy.w_low * sx.w_low * static_cast<double>(ToFloat(plane[sy.low * p.width + sx.low]));
          v[1] = sy.w_low * sx.w_high * static_cast<double>(ToFloat(plane[sy.low * p.width + sx.high]));
          v[2] = sy.w_high * sx.w_low * static_cast<double>(ToFloat(plane[sy.high * p.width + sx.low]));
          v[3] = sy.w_high * sx.w_high * static_cast<double>(ToFloat(plane[sy.high * p.width + sx.high]));
        }
        if (p.max_mode) {
          // The largest weighted corner, as the CPU (and the ONNX reference).
          double m = StdMax(StdMax(v[0], v[1]), StdMax(v[2], v[3]));
          best = first ? m : StdMax(best, m);
          first = false;
        } else {
          sum += v[0] + v[1] + v[2] + v[3];
        }
      }
    }
    y[t] = FromFloat<T>(static_cast<float>(p.max_mode ? best : sum / count));
  }
}

Status RoiAlign(CudaKernelContext& ctx) {
  VIGIL_RETURN_IF_ERROR(RequireInputs(ctx, 3));
  const runtime::Tensor& x = *ctx.input(0);
  const runtime::Tensor& rois = *ctx.input(1);
  const runtime::Tensor& indices = *ctx.input(2);
  if (x.rank() != 4) return ctx.Fail("input 0 (X) is {}, expected rank 4 (N x C x H x W)", x.Describe());
  if (rois.rank() != 2 || rois.dim(1) != 4) {
    return ctx.Fail("input 1 (rois) is {}, expected [num_rois, 4] (x1, y1, x2, y2)", rois.Describe());
  }
  if (indices.rank() != 1 || indices.dim(0) != rois.dim(0)) {
    return ctx.Fail("input 2 (batch_indices) is {}, expected [{}] (one per roi)", indices.Describe(), rois.dim(0));
  }
  if (rois.dtype() != x.dtype()) {
    return ctx.Fail("input 1 (rois) has dtype {}; it must be X's, {}", ir::DataTypeName(rois.dtype()),
                    ir::DataTypeName(x.dtype()));
  }
  VIGIL_ASSIGN_OR_RETURN(RoiParams p, ReadRoiAlignAttrs(ctx));
  p.batches = x.dim(0);
  p.channels = x.dim(1);
  p.height = x.dim(2);
  p.width = x.dim(3);
  p.rois = rois.dim(0);
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * y, ctx.Output(0, x.dtype(), {p.rois, p.channels, p.out_h, p.out_w}));
  const int64_t total = static_cast<int64_t>(y->element_count());
  if (total == 0) return Status::Ok();
  if (indices.dtype() != ir::DataType::kInt64 && indices.dtype() != ir::DataType::kInt32) {
    return ctx.Unsupported("dtype {} of input 2 (batch_indices)", ir::DataTypeName(indices.dtype()));
  }
  bool ok = DispatchFloat(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    auto launch = [&](auto itag) {
      using I = decltype(itag);
      RoiAlignKernel<T, I><<<BlocksFor(total, kThreads), kThreads, 0, ctx.stream()>>>(
          static_cast<const T*>(x.raw_data()), static_cast<const T*>(rois.raw_data()),
          static_cast<const I*>(indices.raw_data()), static_cast<T*>(y->raw_data()), p);
    };
    if (indices.dtype() == ir::DataType::kInt32) launch(int32_t{});
    else launch(int64_t{});
  });
  if (!ok) return ctx.Unsupported("dtype {} of input 0 (X)", ir::DataTypeName(x.dtype()));
  VIGIL_CHECK_LAUNCH("RoiAlign");
  return Status::Ok();
}

bool SupportsRoiAlign(const ir::Node& node, const runtime::NodeTypes& types, std::string* why_not) {
  auto say = [&](std::string s) {
    if (why_not) *why_not = std::move(s);
    return false;
  };
  ir::DataType xt = InputDtype(types, 0), rt = InputDtype(types, 1), it = InputDtype(types, 2);
  if (!IsCudaFloat(xt)) {
    return say(xt == ir::DataType::kUndefined ? "the dtype of input 0 (X) is not known at load time"
                                              : fmt::format("dtype {} of input 0 (X)", ir::DataTypeName(xt)));
  }
  if (rt != xt) return say(fmt::format("input 1 (rois) of dtype {} with X of {}", ir::DataTypeName(rt), ir::DataTypeName(xt)));
  if (it != ir::DataType::kInt64 && it != ir::DataType::kInt32) {
    return say(it == ir::DataType::kUndefined ? "the dtype of input 2 (batch_indices) is not known at load time"
                                              : fmt::format("dtype {} of input 2 (batch_indices)", ir::DataTypeName(it)));
  }
  (void)node;
  return true;
}

// ---------------------------------------------------------------- NonMaxSuppression

struct BoxExtent {
  float x_min, x_max, y_min, y_max;
};

__device__ BoxExtent ReadBox(const float* b, bool center_point_box) {
  if (center_point_box) {
    float half_w = b[2] / 2, half_h = b[3] / 2;
    return {b[0] - half_w, b[0] + half_w, b[1] - half_h, b[1] + half_h};
  }
  return {StdMin(b[1], b[3]), StdMax(b[1], b[3]), StdMin(b[0], b[2]), StdMax(b[0], b[2])};
}

__device__ bool Overlaps(const BoxExtent& a, const BoxExtent& b, float iou_threshold) {
  float ix_min = StdMax(a.x_min, b.x_min), ix_max = StdMin(a.x_max, b.x_max);
  if (!(ix_max > ix_min)) return false;
  float iy_min = StdMax(a.y_min, b.y_min), iy_max = StdMin(a.y_max, b.y_max);
  if (!(iy_max > iy_min)) return false;
  float intersection = (ix_max - ix_min) * (iy_max - iy_min);
  float area_a = (a.x_max - a.x_min) * (a.y_max - a.y_min);
  float area_b = (b.x_max - b.x_min) * (b.y_max - b.y_min);
  float union_area = area_a + area_b - intersection;
  if (!(intersection > 0) || !(area_a > 0) || !(area_b > 0) || !(union_area > 0)) return false;
  return intersection / union_area > iou_threshold;
}

struct NmsParams {
  int64_t batches = 0, classes = 0, boxes = 0;
  int64_t per_class = 0;
  bool has_score_threshold = false;
  float score_threshold = 0, iou_threshold = 0;
  bool center_point_box = false;
};

// Whether score l comes before r: higher first, NaN last (the CPU's order).
__device__ __forceinline__ bool Before(float l, float r) {
  if (isnan(r)) return !isnan(l);
  return l > r;
}

__device__ __forceinline__ bool Candidate(const NmsParams& p, float s) {
  return !p.has_score_threshold || s > p.score_threshold;
}

// order[bc * boxes + rank] = box for every candidate of (batch, class) bc,
// its rank among the candidates as a stable sort gives it; candidates[bc]
// counts them (zeroed before).
__global__ void NmsRankKernel(const float* __restrict__ scores, int32_t* __restrict__ order,
                              int32_t* __restrict__ candidates, NmsParams p) {
  const int64_t total = p.batches * p.classes * p.boxes;
  for (int64_t t = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; t < total; t += int64_t{gridDim.x} * blockDim.x) {
    const int64_t bc = t / p.boxes, i = t - bc * p.boxes;
    const float* s = scores + bc * p.boxes;
    const float si = s[i];
    if (!Candidate(p, si)) continue;
    int64_t rank = 0;
    for (int64_t j = 0; j < p.boxes; ++j) {
      const float sj = s[j];
      if (j == i || !Candidate(p, sj)) continue;
      if (Before(sj, si) || (j < i && !Before(si, sj))) ++rank;
    }
    order[bc * p.boxes + rank] = static_cast<int32_t>(i);
    atomicAdd(&candidates[bc], 1);
  }
}

// One block per (batch, class): greedy suppression over the ranked
// candidates; kept[bc * boxes + k] is the k-th selected box, selected[bc]
// their count.
__global__ void NmsSuppressKernel(const float* __restrict__ boxes, const int32_t* __restrict__ order,
                                  const int32_t* __restrict__ candidates, int32_t* __restrict__ kept,
                                  int64_t* __restrict__ selected, NmsParams p) {
  __shared__ int64_t count;
  const int64_t bc = blockIdx.x;
  const int64_t b = bc / p.classes;
  const float* batch_boxes = boxes + b * p.boxes * 4;
  const int32_t* ranked = order + bc * p.boxes;
  int32_t* mine = kept + bc * p.boxes;
  if (threadIdx.x == 0) count = 0;
  __syncthreads();
  const int64_t m = candidates[bc];
  for (int64_t pos = 0; pos < m; ++pos) {
    if (count >= p.per_class) break;  // the same value in every thread
    const int32_t i = ranked[pos];
    const BoxExtent box = ReadBox(batch_boxes + int64_t{i} * 4, p.center_point_box);
    bool suppressed = false;
    for (int64_t k = threadIdx.x; k < count && !suppressed; k += blockDim.x) {
      suppressed = Overlaps(box, ReadBox(batch_boxes + int64_t{mine[k]} * 4, p.center_point_box), p.iou_threshold);
    }
    // A barrier: every thread has read `count` before thread 0 changes it.
    const bool any = __syncthreads_or(suppressed) != 0;
    if (!any && threadIdx.x == 0) {
      mine[count] = i;
      count = count + 1;
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) selected[bc] = count;
}

// offsets[bc] = rows before (batch, class) bc; offsets[pairs] = the total.
__global__ void NmsOffsetsKernel(const int64_t* __restrict__ selected, int64_t* __restrict__ offsets, int64_t pairs) {
  if (blockIdx.x != 0 || threadIdx.x != 0) return;
  int64_t sum = 0;
  for (int64_t bc = 0; bc < pairs; ++bc) {
    offsets[bc] = sum;
    sum += selected[bc];
  }
  offsets[pairs] = sum;
}

__global__ void NmsWriteKernel(const int32_t* __restrict__ kept, const int64_t* __restrict__ selected,
                               const int64_t* __restrict__ offsets, int64_t* __restrict__ out, NmsParams p) {
  const int64_t total = p.batches * p.classes * p.boxes;
  for (int64_t t = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; t < total; t += int64_t{gridDim.x} * blockDim.x) {
    const int64_t bc = t / p.boxes, k = t - bc * p.boxes;
    if (k >= selected[bc]) continue;
    int64_t* row = out + (offsets[bc] + k) * 3;
    row[0] = bc / p.classes;
    row[1] = bc % p.classes;
    row[2] = kept[t];
  }
}

// An optional host-read input of one value; null when absent or empty (the
// ONNX reference treats an empty tensor as absent).
Result<const runtime::Tensor*> OptionalScalar(const CudaKernelContext& ctx, size_t i, const char* name) {
  const runtime::Tensor* t = ctx.input(i);
  if (!t || t->element_count() == 0) return nullptr;
  if (t->element_count() != 1) return ctx.Fail("input {} ({}) is {}; it must hold one value", i, name, t->Describe());
  if (!t->on_host()) return InternalError("{}: input {} ({}) is not on the host", ops::NodeLabel(ctx.node()), i, name);
  return t;
}

Result<std::optional<float>> Threshold(const CudaKernelContext& ctx, size_t i, const char* name) {
  VIGIL_ASSIGN_OR_RETURN(const runtime::Tensor* t, OptionalScalar(ctx, i, name));
  if (!t) return std::optional<float>();
  switch (t->dtype()) {
    case ir::DataType::kFloat32: return std::optional<float>(t->data<float>()[0]);
    case ir::DataType::kFloat64: return std::optional<float>(static_cast<float>(t->data<double>()[0]));
    default:
      return ctx.Fail("input {} ({}) has dtype {}; it must be float32", i, name, ir::DataTypeName(t->dtype()));
  }
}

Status NonMaxSuppression(CudaKernelContext& ctx) {
  VIGIL_RETURN_IF_ERROR(RequireInputs(ctx, 2));
  const runtime::Tensor& boxes = *ctx.input(0);
  const runtime::Tensor& scores = *ctx.input(1);
  VIGIL_RETURN_IF_ERROR(
      ops::CheckNmsShapes(ctx.node(), boxes.shape(), boxes.Describe(), scores.shape(), scores.Describe()));
  if (boxes.dtype() != ir::DataType::kFloat32) {
    return ctx.Unsupported("dtype {} of input 0 (boxes)", ir::DataTypeName(boxes.dtype()));
  }
  if (scores.dtype() != ir::DataType::kFloat32) {
    return ctx.Unsupported("dtype {} of input 1 (scores)", ir::DataTypeName(scores.dtype()));
  }
  VIGIL_ASSIGN_OR_RETURN(int64_t center_point_box, ops::IntAttr(ctx.node(), "center_point_box", 0));
  if (center_point_box != 0 && center_point_box != 1) {
    return ctx.Fail("center_point_box is {}, expected 0 (corners) or 1 (center and size)", center_point_box);
  }
  NmsParams p;
  p.center_point_box = center_point_box == 1;
  VIGIL_ASSIGN_OR_RETURN(const runtime::Tensor* max_t, OptionalScalar(ctx, 2, "max_output_boxes_per_class"));
  if (max_t) {
    int64_t v = 0;
    if (max_t->dtype() == ir::DataType::kInt64) {
      v = max_t->data<int64_t>()[0];
    } else if (max_t->dtype() == ir::DataType::kInt32) {
      v = max_t->data<int32_t>()[0];
    } else {
      return ctx.Fail("input 2 (max_output_boxes_per_class) has dtype {}; it must be int64",
                      ir::DataTypeName(max_t->dtype()));
    }
    p.per_class = std::max<int64_t>(v, 0);
  }
  VIGIL_ASSIGN_OR_RETURN(std::optional<float> iou, Threshold(ctx, 3, "iou_threshold"));
  VIGIL_ASSIGN_OR_RETURN(std::optional<float> score, Threshold(ctx, 4, "score_threshold"));
  if (iou && !(*iou >= 0 && *iou <= 1)) {
    return ctx.Fail("input 3 (iou_threshold) is {}; it must be in [0, 1]", *iou);
  }
  p.iou_threshold = iou.value_or(0);
  p.has_score_threshold = score.has_value();
  p.score_threshold = score.value_or(0);
  p.batches = boxes.dim(0);
  p.boxes = boxes.dim(1);
  p.classes = scores.dim(1);
  const int64_t pairs = p.batches * p.classes;
  if (p.per_class == 0 || pairs == 0 || p.boxes == 0) {
    VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * out, ctx.Output(0, ir::DataType::kInt64, {0, 3}));
    (void)out;
    return Status::Ok();
  }
  if (p.boxes > INT32_MAX) return ctx.Unsupported("{} boxes per batch (at most 2^31 - 1)", p.boxes);
  // The selected count is known only once the suppression has run.
  VIGIL_RETURN_IF_ERROR(ctx.stream_context().RefuseWhileRecording(
      ctx.node(), "NonMaxSuppression reads its number of selected boxes back to the host"));

  // Workspace: order and kept [pairs, boxes] int32; candidates [pairs] int32;
  // selected [pairs] and offsets [pairs + 1] int64.
  auto align = [](size_t n) { return (n + 255) / 256 * 256; };
  const size_t table = align(static_cast<size_t>(pairs * p.boxes) * sizeof(int32_t));
  const size_t cand_bytes = align(static_cast<size_t>(pairs) * sizeof(int32_t));
  const size_t sel_bytes = align(static_cast<size_t>(pairs) * sizeof(int64_t));
  const size_t off_bytes = align(static_cast<size_t>(pairs + 1) * sizeof(int64_t));
  VIGIL_ASSIGN_OR_RETURN(void* ws, ctx.stream_context().Workspace(2 * table + cand_bytes + sel_bytes + off_bytes));
  auto* base = static_cast<uint8_t*>(ws);
  auto* order = reinterpret_cast<int32_t*>(base);
  auto* kept = reinterpret_cast<int32_t*>(base + table);
  auto* candidates = reinterpret_cast<int32_t*>(base + 2 * table);
  auto* selected = reinterpret_cast<int64_t*>(base + 2 * table + cand_bytes);
  auto* offsets = reinterpret_cast<int64_t*>(base + 2 * table + cand_bytes + sel_bytes);
  cudaStream_t stream = ctx.stream();
  const int64_t work = pairs * p.boxes;
  VIGIL_CUDA_CALL(cudaMemsetAsync(candidates, 0, static_cast<size_t>(pairs) * sizeof(int32_t), stream));
  const auto* box_data = static_cast<const float*>(boxes.raw_data());
  NmsRankKernel<<<BlocksFor(work, kThreads), kThreads, 0, stream>>>(static_cast<const float*>(scores.raw_data()),
                                                                    order, candidates, p);
  VIGIL_CHECK_LAUNCH("NonMaxSuppression rank");
  NmsSuppressKernel<<<static_cast<unsigned>(pairs), kThreads, 0, stream>>>(box_data, order, candidates, kept, selected, p);
  VIGIL_CHECK_LAUNCH("NonMaxSuppression suppress");
  NmsOffsetsKernel<<<1, 1, 0, stream>>>(selected, offsets, pairs);
  VIGIL_CHECK_LAUNCH("NonMaxSuppression offsets");
  int64_t rows = 0;
  VIGIL_CUDA_CALL(cudaMemcpyAsync(&rows, offsets + pairs, sizeof(rows), cudaMemcpyDeviceToHost, stream));
  VIGIL_CUDA_CALL(cudaStreamSynchronize(stream));  // the output's size depends on it
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * out, ctx.Output(0, ir::DataType::kInt64, {rows, 3}));
  if (rows == 0) return Status::Ok();
  NmsWriteKernel<<<BlocksFor(work, kThreads), kThreads, 0, stream>>>(kept, selected, offsets,
                                                                     static_cast<int64_t*>(out->raw_data()), p);
  VIGIL_CHECK_LAUNCH("NonMaxSuppression write");
  return Status::Ok();
}

bool SupportsNonMaxSuppression(const ir::Node& node, const runtime::NodeTypes& types, std::string* why_not) {
  auto say = [&](std::string s) {
    if (why_not) *why_not = std::move(s);
    return false;
  };
  for (size_t i = 0; i < 2; ++i) {
    ir::DataType t = InputDtype(types, i);
    if (t != ir::DataType::kFloat32) {
      return say(t == ir::DataType::kUndefined
                     ? fmt::format("the dtype of input {} is not known at load time", i)
                     : fmt::format("dtype {} of input {} (the CPU kernel too takes float32 only)", ir::DataTypeName(t), i));
    }
  }
  if (node.inputs.size() > 2 && !node.inputs[2].empty()) {
    ir::DataType t = InputDtype(types, 2);
    if (t != ir::DataType::kInt64 && t != ir::DataType::kInt32) {
      return say(fmt::format("dtype {} of input 2 (max_output_boxes_per_class)", ir::DataTypeName(t)));
    }
  }
  for (size_t i = 3; i < 5 && i < node.inputs.size(); ++i) {
    if (node.inputs[i].empty()) continue;
    ir::DataType t = InputDtype(types, i);
    if (t != ir::DataType::kFloat32 && t != ir::DataType::kFloat64) {
      return say(fmt::format("dtype {} of input {} (a threshold)", ir::DataTypeName(t), i));
    }
  }
  return true;
}

const CudaKernelDef kDetectionKernels[] = {
    {"", "RoiAlign", 10, kLatest, RoiAlign, SupportsRoiAlign},
    {"", "NonMaxSuppression", 10, kLatest, NonMaxSuppression, SupportsNonMaxSuppression,
     HostInput(2) | HostInput(3) | HostInput(4)},
};

}  // namespace

std::span<const CudaKernelDef> DetectionCudaKernels() { return kDetectionKernels; }

}  // namespace vigil::cuda
