// CPU kernel of the object-detection ops: NonMaxSuppression.
//
// NonMaxSuppression computes its overlaps in float, as the boxes are stored,
// so that a box whose IoU equals iou_threshold exactly is kept (the test is
// strictly greater), as in the ONNX reference and PyTorch.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <vector>

#include "backends/cpu/element_codec.h"
#include "backends/cpu/kernel.h"
#include "ops/attributes.h"

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
  if (boxes.rank() != 3 || boxes.dim(2) != 4) {
    return ctx.Fail("input 0 (boxes) is {}, expected [num_batches, num_boxes, 4]", boxes.Describe());
  }
  if (scores.rank() != 3) {
    return ctx.Fail("input 1 (scores) is {}, expected [num_batches, num_classes, num_boxes]", scores.Describe());
  }
  if (scores.dim(0) != boxes.dim(0) || scores.dim(2) != boxes.dim(1)) {
    return ctx.Fail("input 1 (scores) is {} but boxes {} need [{}, num_classes, {}]", scores.Describe(),
                    boxes.Describe(), boxes.dim(0), boxes.dim(1));
  }
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

const KernelDef kDetectionKernels[] = {
    {"", "NonMaxSuppression", 10, kLatest, NonMaxSuppressionKernel},
};

}  // namespace

std::span<const KernelDef> DetectionKernels() { return kDetectionKernels; }

}  // namespace vigil::cpu
