// CPU kernels of the object-detection ops: NonMaxSuppression and RoiAlign.
//
// NonMaxSuppression computes its overlaps in float, as the boxes are stored,
// so that a box whose IoU equals iou_threshold exactly is kept (the test is
// strictly greater), as in the ONNX reference and PyTorch.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "backends/cpu/element_codec.h"
#include "backends/cpu/kernel.h"
#include "ops/detection.h"
#include "ops/attributes.h"
#include "backends/cpu/kernel_families.h"

namespace vigil::cpu {
namespace {

// ---- NonMaxSuppression ----------------------------------------------------

// A box as the extents it covers along each axis (min <= max unless NaN).
struct BoxExtent {
  float x_min, x_max, y_min, y_max;
};

// Boxes are [y1, x1, y2, x2] with any two opposite corners
// (center_point_box 0), or [x_center, y_center, width, height] (1).
BoxExtent ReadBox(const float* b, bool center_point_box) {
  if (center_point_box) {
    float half_w = b[2] / 2, half_h = b[3] / 2;
    return {b[0] - half_w, b[0] + half_w, b[1] - half_h, b[1] + half_h};
  }
  return {std::min(b[1], b[3]), std::max(b[1], b[3]), std::min(b[0], b[2]), std::max(b[0], b[2])};
}

// Whether IoU(a, b) > threshold. Boxes that do not overlap, and empty boxes,
// never suppress each other.
bool Overlaps(const BoxExtent& a, const BoxExtent& b, float iou_threshold) {
  float ix_min = std::max(a.x_min, b.x_min), ix_max = std::min(a.x_max, b.x_max);
  if (!(ix_max > ix_min)) return false;
  float iy_min = std::max(a.y_min, b.y_min), iy_max = std::min(a.y_max, b.y_max);
  if (!(iy_max > iy_min)) return false;
  float intersection = (ix_max - ix_min) * (iy_max - iy_min);
  float area_a = (a.x_max - a.x_min) * (a.y_max - a.y_min);
  float area_b = (b.x_max - b.x_min) * (b.y_max - b.y_min);
  float union_area = area_a + area_b - intersection;
  if (!(intersection > 0) || !(area_a > 0) || !(area_b > 0) || !(union_area > 0)) return false;
  return intersection / union_area > iou_threshold;
}

// An optional input of one value; null when absent or empty (the ONNX
// reference treats an empty tensor as absent).
Result<const runtime::Tensor*> OptionalScalarInput(KernelContext& ctx, size_t i, const char* name) {
  const runtime::Tensor* t = ctx.input(i);
  if (!t || t->element_count() == 0) return nullptr;
  if (t->element_count() != 1) return ctx.Fail("input {} ({}) is {}; it must hold one value", i, name, t->Describe());
  return t;
}

// max_output_boxes_per_class (int64, or int32) as a count >= 0; 0 when absent.
Result<int64_t> MaxBoxesPerClass(KernelContext& ctx) {
  VIGIL_ASSIGN_OR_RETURN(const runtime::Tensor* t, OptionalScalarInput(ctx, 2, "max_output_boxes_per_class"));
  if (!t) return 0;
  int64_t v = 0;
  if (t->dtype() == ir::DataType::kInt64) {
    std::memcpy(&v, t->raw_data(), sizeof(v));
  } else if (t->dtype() == ir::DataType::kInt32) {
    int32_t v32;
    std::memcpy(&v32, t->raw_data(), sizeof(v32));
    v = v32;
  } else {
    return ctx.UnsupportedDtype(2);
  }
  return std::max<int64_t>(v, 0);
}

// A float threshold input, or nullopt when absent.
Result<std::optional<float>> Threshold(KernelContext& ctx, size_t i, const char* name) {
  VIGIL_ASSIGN_OR_RETURN(const runtime::Tensor* t, OptionalScalarInput(ctx, i, name));
  if (!t) return std::optional<float>();
  VIGIL_ASSIGN_OR_RETURN(std::vector<double> v, ReadParamAsDoubles(ctx, i));
  return std::optional<float>(static_cast<float>(v[0]));
}

Status NonMaxSuppressionKernel(KernelContext& ctx) {
  VIGIL_RETURN_IF_ERROR(RequireInputs(ctx, 2));
  const runtime::Tensor& boxes = *ctx.input(0);
  const runtime::Tensor& scores = *ctx.input(1);
  VIGIL_RETURN_IF_ERROR(
      ops::CheckNmsShapes(ctx.node(), boxes.shape(), boxes.Describe(), scores.shape(), scores.Describe()));
  if (boxes.dtype() != ir::DataType::kFloat32) return ctx.UnsupportedDtype(0);
  if (scores.dtype() != ir::DataType::kFloat32) return ctx.UnsupportedDtype(1);
  VIGIL_ASSIGN_OR_RETURN(int64_t center_point_box, ops::IntAttr(ctx.node(), "center_point_box", 0));
  if (center_point_box != 0 && center_point_box != 1) {
    return AttributeError(ctx, "center_point_box is {}, expected 0 (corners) or 1 (center and size)",
                          center_point_box);
  }
  VIGIL_ASSIGN_OR_RETURN(const int64_t per_class, MaxBoxesPerClass(ctx));
  VIGIL_ASSIGN_OR_RETURN(std::optional<float> iou, Threshold(ctx, 3, "iou_threshold"));
  VIGIL_ASSIGN_OR_RETURN(std::optional<float> score, Threshold(ctx, 4, "score_threshold"));
  if (iou && !(*iou >= 0 && *iou <= 1)) {
    return ctx.Fail("input 3 (iou_threshold) is {}; it must be in [0, 1]", *iou);
  }
  const float iou_threshold = iou.value_or(0);
  const float score_threshold = score.value_or(0);

  const int64_t batches = boxes.dim(0), num_boxes = boxes.dim(1), classes = scores.dim(1);
  std::vector<float> box_scratch, score_scratch;
  VIGIL_ASSIGN_OR_RETURN(const float* box_data, ComputeView<ir::DataType::kFloat32>(ctx, boxes, box_scratch));
  VIGIL_ASSIGN_OR_RETURN(const float* score_data, ComputeView<ir::DataType::kFloat32>(ctx, scores, score_scratch));

  std::vector<int64_t> selected;  // (batch, class, box) triples
  std::vector<BoxExtent> extents(num_boxes);
  std::vector<int64_t> order, kept;
  for (int64_t b = 0; b < batches && per_class > 0; ++b) {
    for (int64_t i = 0; i < num_boxes; ++i) {
      extents[i] = ReadBox(box_data + (b * num_boxes + i) * 4, center_point_box == 1);
    }
    for (int64_t c = 0; c < classes; ++c) {
      const float* s = score_data + (b * classes + c) * num_boxes;
      order.clear();
      for (int64_t i = 0; i < num_boxes; ++i) {
        if (!score || s[i] > score_threshold) order.push_back(i);
      }
      // Highest score first; equal scores in box order; NaN scores last.
      std::stable_sort(order.begin(), order.end(), [s](int64_t l, int64_t r) {
        if (std::isnan(s[r])) return !std::isnan(s[l]);
        return s[l] > s[r];
      });
      kept.clear();
      for (int64_t i : order) {
        if (static_cast<int64_t>(kept.size()) >= per_class) break;
        bool suppressed = false;
        for (int64_t k : kept) {
          if (Overlaps(extents[i], extents[k], iou_threshold)) {
            suppressed = true;
            break;
          }
        }
        if (suppressed) continue;
        kept.push_back(i);
        selected.insert(selected.end(), {b, c, i});
      }
    }
  }
  const int64_t rows = static_cast<int64_t>(selected.size() / 3);
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * out, ctx.Output(0, ir::DataType::kInt64, {rows, 3}));
  if (rows) std::memcpy(out->raw_data(), selected.data(), selected.size() * sizeof(int64_t));
  return Status::Ok();
}

// ---- RoiAlign ----------------------------------------------------------------

struct RoiAlignAttrs {
  bool max_mode = false;
  bool half_pixel = false;  // coordinate_transformation_mode; opset 10 is output_half_pixel
  int64_t height = 1, width = 1;
  int64_t sampling_ratio = 0;
  double spatial_scale = 1;
};

Result<RoiAlignAttrs> ReadRoiAlignAttrs(const KernelContext& ctx) {
  const ir::Node& node = ctx.node();
  RoiAlignAttrs a;
  VIGIL_ASSIGN_OR_RETURN(std::string mode, ops::StringAttr(node, "mode", "avg"));
  if (mode != "avg" && mode != "max") return AttributeError(ctx, "mode is '{}', expected 'avg' or 'max'", mode);
  a.max_mode = mode == "max";
  if (ctx.opset() >= 16) {
    VIGIL_ASSIGN_OR_RETURN(std::string coords, ops::StringAttr(node, "coordinate_transformation_mode", "half_pixel"));
    if (coords != "half_pixel" && coords != "output_half_pixel") {
      return AttributeError(ctx, "coordinate_transformation_mode is '{}', expected 'half_pixel' or 'output_half_pixel'",
                            coords);
    }
    a.half_pixel = coords == "half_pixel";
  }
  VIGIL_ASSIGN_OR_RETURN(a.height, ops::IntAttr(node, "output_height", 1));
  VIGIL_ASSIGN_OR_RETURN(a.width, ops::IntAttr(node, "output_width", 1));
  VIGIL_ASSIGN_OR_RETURN(a.sampling_ratio, ops::IntAttr(node, "sampling_ratio", 0));
  VIGIL_ASSIGN_OR_RETURN(float scale, ops::FloatAttr(node, "spatial_scale", 1.0f));
  a.spatial_scale = scale;
  constexpr int64_t kMaxSize = int64_t{1} << 20;
  if (a.height < 1 || a.height > kMaxSize || a.width < 1 || a.width > kMaxSize) {
    return AttributeError(ctx, "output_height {} and output_width {} must be in [1, 2^20]", a.height, a.width);
  }
  if (a.sampling_ratio < 0 || a.sampling_ratio > kMaxSize) {
    return AttributeError(ctx, "sampling_ratio is {}; it must be in [0, 2^20] (0: adaptive)", a.sampling_ratio);
  }
  return a;
}

// Bilinear sampling along one axis of the feature map, at one sample point:
// the two neighbouring positions and their weights. A point more than one
// pixel outside the map samples nothing; one within a pixel of the edge
// takes the edge value.
struct AxisSample {
  bool valid = false;
  int64_t low = 0, high = 0;
  double w_low = 0, w_high = 0;
};

AxisSample SampleAxis(double v, int64_t size) {
  AxisSample s;
  if (size <= 0 || !(v >= -1.0 && v <= static_cast<double>(size))) return s;
  v = std::max(v, 0.0);
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

// The sample points along one axis of a roi: `bins` output cells of `grid`
// points each, spaced evenly from `start` over `extent`.
std::vector<AxisSample> SampleRoiAxis(double start, double extent, int64_t bins, int64_t grid, int64_t size) {
  std::vector<AxisSample> out;
  const double bin = extent / static_cast<double>(bins);
  for (int64_t b = 0; b < bins; ++b) {
    for (int64_t g = 0; g < grid; ++g) {
      out.push_back(SampleAxis(start + b * bin + (g + 0.5) * bin / static_cast<double>(grid), size));
    }
  }
  return out;
}

// Sample points per output cell along one axis: sampling_ratio, or
// ceil(roi extent / cells) when it is 0 (none for an empty or inverted roi).
Result<int64_t> GridPoints(const KernelContext& ctx, const RoiAlignAttrs& a, double extent, int64_t cells,
                           int64_t roi, const char* axis) {
  constexpr double kMaxPoints = static_cast<double>(int64_t{1} << 26);  // per roi and axis
  double points = a.sampling_ratio > 0 ? static_cast<double>(a.sampling_ratio)
                                       : std::ceil(extent / static_cast<double>(cells));
  if (std::isnan(points) || points * static_cast<double>(cells) > kMaxPoints) {
    return ctx.Fail("input 1 (rois) row {} has a {} of {} feature-map pixels, which takes {} sample points over {} "
                    "output cells; at most 2^26 are taken",
                    roi, axis, extent, points * static_cast<double>(cells), cells);
  }
  return static_cast<int64_t>(std::max(points, 0.0));
}

// The batch indices (int64, or int32) as int64.
Result<std::vector<int64_t>> ReadBatchIndices(KernelContext& ctx) {
  const runtime::Tensor& t = *ctx.input(2);
  std::vector<int64_t> out(t.element_count());
  const auto* bytes = static_cast<const uint8_t*>(t.raw_data());
  for (size_t i = 0; i < out.size(); ++i) {
    if (t.dtype() == ir::DataType::kInt64) {
      std::memcpy(&out[i], bytes + i * sizeof(int64_t), sizeof(int64_t));
    } else if (t.dtype() == ir::DataType::kInt32) {
      int32_t v;
      std::memcpy(&v, bytes + i * sizeof(int32_t), sizeof(int32_t));
      out[i] = v;
    } else {
      return ctx.UnsupportedDtype(2);
    }
  }
  return out;
}

Status RoiAlignKernel(KernelContext& ctx) {
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
  VIGIL_ASSIGN_OR_RETURN(RoiAlignAttrs a, ReadRoiAlignAttrs(ctx));
  VIGIL_ASSIGN_OR_RETURN(std::vector<int64_t> batch, ReadBatchIndices(ctx));
  for (size_t n = 0; n < batch.size(); ++n) {
    if (batch[n] < 0 || batch[n] >= x.dim(0)) {
      return ctx.Fail("input 2 (batch_indices) has {} at position {}; X {} has batch indices 0 to {}", batch[n], n,
                      x.Describe(), x.dim(0) - 1);
    }
  }
  VIGIL_ASSIGN_OR_RETURN(std::vector<double> boxes, ReadParamAsDoubles(ctx, 1));
  const int64_t num_rois = rois.dim(0), channels = x.dim(1), height = x.dim(2), width = x.dim(3);
  return DispatchFloat(ctx, 0, [&]<ir::DataType D>() -> Status {
    using C = ElementCodec<D>;
    std::vector<typename C::Compute> scratch;
    VIGIL_ASSIGN_OR_RETURN(const typename C::Compute* xs, ComputeView<D>(ctx, x, scratch));
    VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * y, ctx.Output(0, x.dtype(), {num_rois, channels, a.height, a.width}));
    auto* ys = y->data<typename C::Storage>();
    const double offset = a.half_pixel ? 0.5 : 0.0;
    for (int64_t n = 0; n < num_rois; ++n) {
      const double* r = &boxes[n * 4];
      double start_w = r[0] * a.spatial_scale - offset, start_h = r[1] * a.spatial_scale - offset;
      double roi_w = r[2] * a.spatial_scale - offset - start_w, roi_h = r[3] * a.spatial_scale - offset - start_h;
      if (!a.half_pixel) {  // malformed rois are made 1 x 1
        roi_w = std::max(roi_w, 1.0);
        roi_h = std::max(roi_h, 1.0);
      }
      VIGIL_ASSIGN_OR_RETURN(int64_t grid_h, GridPoints(ctx, a, roi_h, a.height, n, "height"));
      VIGIL_ASSIGN_OR_RETURN(int64_t grid_w, GridPoints(ctx, a, roi_w, a.width, n, "width"));
      const std::vector<AxisSample> ys_axis = SampleRoiAxis(start_h, roi_h, a.height, grid_h, height);
      const std::vector<AxisSample> xs_axis = SampleRoiAxis(start_w, roi_w, a.width, grid_w, width);
      const double count = static_cast<double>(std::max<int64_t>(grid_h * grid_w, 1));
      for (int64_t c = 0; c < channels; ++c) {
        const auto* plane = xs + (batch[n] * channels + c) * height * width;
        auto* out = ys + (n * channels + c) * a.height * a.width;
        for (int64_t ph = 0; ph < a.height; ++ph) {
          for (int64_t pw = 0; pw < a.width; ++pw) {
            double sum = 0, best = 0;
            bool first = true;
            for (int64_t iy = 0; iy < grid_h; ++iy) {
              const AxisSample& sy = ys_axis[ph * grid_h + iy];
              for (int64_t ix = 0; ix < grid_w; ++ix) {
                const AxisSample& sx = xs_axis[pw * grid_w + ix];
                double v[4] = {0, 0, 0, 0};  // the four weighted corners
                if (sy.valid && sx.valid) {
                  v[0] = sy.w_low * sx.w_low * plane[sy.low * width + sx.low];
                  v[1] = sy.w_low * sx.w_high * plane[sy.low * width + sx.high];
                  v[2] = sy.w_high * sx.w_low * plane[sy.high * width + sx.low];
                  v[3] = sy.w_high * sx.w_high * plane[sy.high * width + sx.high];
                }
                if (a.max_mode) {
                  // The largest weighted corner, as the ONNX reference and
                  // ONNX Runtime do (not the interpolated value).
                  double m = std::max(std::max(v[0], v[1]), std::max(v[2], v[3]));
                  best = first ? m : std::max(best, m);
                  first = false;
                } else {
                  sum += v[0] + v[1] + v[2] + v[3];
                }
              }
            }
            double value = a.max_mode ? best : sum / count;
            out[ph * a.width + pw] = C::Store(static_cast<typename C::Compute>(value));
          }
        }
      }
    }
    return Status::Ok();
  });
}

const KernelDef kDetectionKernels[] = {
    {"", "NonMaxSuppression", 10, kLatest, NonMaxSuppressionKernel},
    {"", "RoiAlign", 10, kLatest, RoiAlignKernel},
};

}  // namespace

std::span<const KernelDef> DetectionKernels() { return kDetectionKernels; }

}  // namespace vigil::cpu
