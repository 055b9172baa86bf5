// NonMaxSuppression and RoiAlign against plain references written here, on
// odd sizes, plus their shape inference and the errors on bad input.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <random>

#include <gtest/gtest.h>

#include "backends/cpu/float_kernel_test_util.h"
#include "backends/cpu/kernel_test_util.h"

namespace vigil::cpu {
namespace {

namespace kt = vigil::cpu::testing;
using namespace vigil::cpu::float_testing;  // NOLINT: test helpers
using ir::DataType;

// ---- NonMaxSuppression ------------------------------------------------------

struct NmsCase {
  int64_t batches = 1, classes = 1, boxes = 1;
  bool center_point_box = false;
  int64_t max_per_class = -1;  // -1: input omitted
  float iou = -1;              // < 0: input omitted
  float score = -1;            // < 0: input omitted (so no score filter)
  std::vector<float> box_data = {}, score_data = {};
};

// IoU of two boxes given as [min_x, min_y, max_x, max_y], in float.
float Iou(const float* a, const float* b) {
  float w = std::min(a[2], b[2]) - std::max(a[0], b[0]);
  float h = std::min(a[3], b[3]) - std::max(a[1], b[1]);
  if (w <= 0 || h <= 0) return 0;
  float inter = w * h;
  float area_a = (a[2] - a[0]) * (a[3] - a[1]), area_b = (b[2] - b[0]) * (b[3] - b[1]);
  return inter / (area_a + area_b - inter);
}

// Greedy NMS written the other way round: take the best remaining box, then
// drop every remaining box that overlaps it too much; repeat.
std::vector<int64_t> RefNms(const NmsCase& c) {
  std::vector<int64_t> out;
  for (int64_t b = 0; b < c.batches; ++b) {
    std::vector<std::array<float, 4>> rect(c.boxes);
    for (int64_t i = 0; i < c.boxes; ++i) {
      const float* p = &c.box_data[(b * c.boxes + i) * 4];
      if (c.center_point_box) {
        rect[i] = {p[0] - p[2] / 2, p[1] - p[3] / 2, p[0] + p[2] / 2, p[1] + p[3] / 2};
      } else {
        rect[i] = {std::min(p[1], p[3]), std::min(p[0], p[2]), std::max(p[1], p[3]), std::max(p[0], p[2])};
      }
    }
    for (int64_t k = 0; k < c.classes; ++k) {
      const float* s = &c.score_data[(b * c.classes + k) * c.boxes];
      std::vector<int64_t> remaining;
      for (int64_t i = 0; i < c.boxes; ++i) {
        if (c.score < 0 || s[i] > c.score) remaining.push_back(i);
      }
      int64_t taken = 0;
      while (!remaining.empty() && taken < std::max<int64_t>(c.max_per_class, 0)) {
        auto best = remaining.begin();
        for (auto it = remaining.begin(); it != remaining.end(); ++it) {
          if (s[*it] > s[*best]) best = it;  // the first of equal scores stays
        }
        int64_t chosen = *best;
        out.insert(out.end(), {b, k, chosen});
        ++taken;
        std::erase_if(remaining, [&](int64_t i) {
          return i == chosen || Iou(rect[i].data(), rect[chosen].data()) > std::max(c.iou, 0.f);
        });
      }
    }
  }
  return out;
}

ir::Node NmsNode(const NmsCase& c) {
  std::vector<std::string> inputs{"boxes", "scores", c.max_per_class >= 0 ? "max" : "", c.iou >= 0 ? "iou" : "",
                                  c.score >= 0 ? "score" : ""};
  while (inputs.back().empty()) inputs.pop_back();
  std::vector<ir::Attribute> attrs;
  if (c.center_point_box) attrs.push_back(kt::IntAttr("center_point_box", 1));
  return kt::MakeNode("NonMaxSuppression", inputs, {"selected"}, attrs);
}

Result<std::vector<runtime::Tensor>> RunNms(const NmsCase& c, int64_t opset = 11) {
  runtime::Tensor boxes = kt::F32({c.batches, c.boxes, 4}, c.box_data);
  runtime::Tensor scores = kt::F32({c.batches, c.classes, c.boxes}, c.score_data);
  runtime::Tensor max = kt::I64({1}, {c.max_per_class});
  runtime::Tensor iou = kt::F32({}, {c.iou});
  runtime::Tensor score = kt::F32({1}, {c.score});
  return kt::RunKernel(NmsNode(c), opset, {&boxes, &scores, c.max_per_class >= 0 ? &max : nullptr,
                                           c.iou >= 0 ? &iou : nullptr, c.score >= 0 ? &score : nullptr});
}

void CheckNms(const NmsCase& c, int64_t opset = 11) {
  auto r = RunNms(c, opset);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const runtime::Tensor& y = r->at(0);
  std::vector<int64_t> want = RefNms(c);
  ASSERT_EQ(y.dtype(), DataType::kInt64);
  ASSERT_EQ(y.shape(), (Shape{static_cast<int64_t>(want.size() / 3), 3}));
  EXPECT_EQ(kt::Values<int64_t>(y), want);
}

// Random boxes in a 10 x 10 field, with their corners in either order.
NmsCase RandomNms(int64_t batches, int64_t classes, int64_t boxes, uint32_t seed) {
  NmsCase c{.batches = batches, .classes = classes, .boxes = boxes};
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> pos(0, 10), size(0.5f, 4), score(0, 1);
  for (int64_t i = 0; i < batches * boxes; ++i) {
    float y = pos(gen), x = pos(gen), h = size(gen), w = size(gen);
    if (gen() % 2) c.box_data.insert(c.box_data.end(), {y, x, y + h, x + w});
    else c.box_data.insert(c.box_data.end(), {y + h, x + w, y, x});
  }
  for (int64_t i = 0; i < batches * classes * boxes; ++i) c.score_data.push_back(score(gen));
  return c;
}

TEST(NonMaxSuppression, RandomBoxesMatchTheReference) {
  NmsCase c = RandomNms(2, 3, 127, 7);
  c.max_per_class = 11;
  c.iou = 0.3f;
  c.score = 0.2f;
  CheckNms(c);
  c.max_per_class = 1000;  // every box that survives
  CheckNms(c);
  c.iou = 0;  // any overlap suppresses
  CheckNms(c);
  c.score = -1;  // no score filter
  CheckNms(c, 10);
}

TEST(NonMaxSuppression, CenterPointBoxes) {
  NmsCase c = RandomNms(1, 2, 61, 11);
  c.center_point_box = true;
  for (size_t i = 2; i < c.box_data.size(); i += 4) {  // widths and heights must be positive here
    c.box_data[i] = std::abs(c.box_data[i]) + 0.5f;
    c.box_data[i + 1] = std::abs(c.box_data[i + 1]) + 0.5f;
  }
  c.max_per_class = 7;
  c.iou = 0.45f;
  CheckNms(c);
}

TEST(NonMaxSuppression, EqualScoresKeepBoxOrderAndEqualIouIsKept) {
  // Boxes 0 and 1 overlap with IoU exactly 1/7 (0.25 / 1.75); box 2 is box 0.
  NmsCase c{.boxes = 3, .max_per_class = 5};
  c.box_data = {0, 0, 1, 1, 0.5f, 0.5f, 1.5f, 1.5f, 0, 0, 1, 1};
  c.score_data = {0.5f, 0.5f, 0.5f};
  c.iou = 0.25f / 1.75f;
  auto r = RunNms(c);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(kt::Values<int64_t>(r->at(0)), (std::vector<int64_t>{0, 0, 0, 0, 0, 1}));
}

TEST(NonMaxSuppression, WithoutMaxOutputNothingIsSelected) {
  NmsCase c = RandomNms(2, 2, 9, 3);
  auto r = RunNms(c);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->at(0).shape(), (Shape{0, 3}));
  c.max_per_class = 0;
  r = RunNms(c);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->at(0).shape(), (Shape{0, 3}));
}

TEST(NonMaxSuppression, NoBoxes) {
  NmsCase c{.batches = 2, .classes = 3, .boxes = 0, .max_per_class = 4};
  auto r = RunNms(c);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->at(0).shape(), (Shape{0, 3}));
}

TEST(NonMaxSuppression, BadInputsAreErrors) {
  ir::Node node = kt::MakeNode("NonMaxSuppression", {"b", "s", "m"}, {"y"});
  runtime::Tensor max = kt::I64({1}, {3});
  auto fails = [&](const ir::Node& n, const runtime::Tensor& b, const runtime::Tensor& s, const runtime::Tensor* m,
                   const runtime::Tensor* iou, const std::string& text) {
    auto r = kt::RunKernel(n, 11, {&b, &s, m, iou});
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_NE(r.status().ToString().find(text), std::string::npos) << r.status().ToString();
    EXPECT_NE(r.status().ToString().find("NonMaxSuppression"), std::string::npos) << r.status().ToString();
  };
  runtime::Tensor boxes = kt::F32({1, 2, 4}, std::vector<float>(8, 0));
  runtime::Tensor scores = kt::F32({1, 1, 2}, {0.5f, 0.5f});
  fails(node, kt::F32({2, 4}, std::vector<float>(8, 0)), scores, &max, nullptr, "(boxes)");
  fails(node, kt::F32({1, 2, 5}, std::vector<float>(10, 0)), scores, &max, nullptr, "[num_batches, num_boxes, 4]");
  fails(node, boxes, kt::F32({1, 2}, {0, 0}), &max, nullptr, "(scores)");
  fails(node, boxes, kt::F32({1, 1, 3}, {0, 0, 0}), &max, nullptr, "need [1, num_classes, 2]");
  fails(node, boxes, kt::F32({2, 1, 2}, {0, 0, 0, 0}), &max, nullptr, "need [1, num_classes, 2]");
  runtime::Tensor two = kt::I64({2}, {1, 2});
  fails(node, boxes, scores, &two, nullptr, "max_output_boxes_per_class");
  ir::Node with_iou = kt::MakeNode("NonMaxSuppression", {"b", "s", "m", "i"}, {"y"});
  runtime::Tensor bad_iou = kt::F32({1}, {1.5f});
  fails(with_iou, boxes, scores, &max, &bad_iou, "iou_threshold");
  ir::Node bad_attr = kt::MakeNode("NonMaxSuppression", {"b", "s", "m"}, {"y"}, {kt::IntAttr("center_point_box", 2)});
  fails(bad_attr, boxes, scores, &max, nullptr, "center_point_box is 2");
  ir::Node missing = kt::MakeNode("NonMaxSuppression", {"b", ""}, {"y"});
  auto r = kt::RunKernel(missing, 11, {&boxes, nullptr});
  EXPECT_FALSE(r.ok());
}

TEST(NonMaxSuppression, ShapeInference) {
  ir::Node node = kt::MakeNode("NonMaxSuppression", {"b", "s", "m"}, {"y"});
  ir::TypeInfo boxes = ops::TensorType(DataType::kFloat32, Shape{2, 127, 4});
  ir::TypeInfo scores = ops::TensorType(DataType::kFloat32, Shape{2, 3, 127});
  auto out = kt::InferNode(node, 11, {&boxes, &scores, nullptr});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(out->at(0).elem_type, DataType::kInt64);
  ASSERT_EQ(out->at(0).shape.dims.size(), 2u);
  EXPECT_FALSE(out->at(0).shape.dims[0].is_known());
  EXPECT_EQ(out->at(0).shape.dims[1].value, 3);

  ir::TypeInfo flat = ops::TensorType(DataType::kFloat32, Shape{127, 4});
  EXPECT_FALSE(kt::InferNode(node, 11, {&flat, &scores, nullptr}).ok());
  ir::TypeInfo five = ops::TensorType(DataType::kFloat32, Shape{2, 127, 5});
  EXPECT_FALSE(kt::InferNode(node, 11, {&five, &scores, nullptr}).ok());
  ir::TypeInfo other = ops::TensorType(DataType::kFloat32, Shape{2, 3, 126});
  EXPECT_FALSE(kt::InferNode(node, 11, {&boxes, &other, nullptr}).ok());
  ir::Node bad_attr = kt::MakeNode("NonMaxSuppression", {"b", "s"}, {"y"}, {kt::IntAttr("center_point_box", -1)});
  EXPECT_FALSE(kt::InferNode(bad_attr, 11, {&boxes, &scores}).ok());
}

// ---- RoiAlign ------------------------------------------------------------------

struct RoiCase {
  Shape x;  // N, C, H, W
  int64_t rois = 1;
  int64_t out_h = 1, out_w = 1;
  int64_t sampling_ratio = 0;
  float spatial_scale = 1;
  std::string mode = "avg";
  std::string coords = "half_pixel";  // opset >= 16
  int64_t opset = 16;
  DataType dtype = DataType::kFloat32;
};

// The value of the plane at (y, x) by bilinear interpolation, as RoiAlign
// samples it, with its four weighted corners in `corners` (max mode).
double Bilinear(const double* plane, int64_t h, int64_t w, double y, double x, double corners[4]) {
  for (int i = 0; i < 4; ++i) corners[i] = 0;
  if (y < -1 || y > h || x < -1 || x > w) return 0;
  y = std::min(std::max(y, 0.0), static_cast<double>(h - 1));
  x = std::min(std::max(x, 0.0), static_cast<double>(w - 1));
  int64_t y0 = static_cast<int64_t>(std::floor(y)), x0 = static_cast<int64_t>(std::floor(x));
  int64_t y1 = std::min(y0 + 1, h - 1), x1 = std::min(x0 + 1, w - 1);
  double fy = y - y0, fx = x - x0;
  corners[0] = (1 - fy) * (1 - fx) * plane[y0 * w + x0];
  corners[1] = (1 - fy) * fx * plane[y0 * w + x1];
  corners[2] = fy * (1 - fx) * plane[y1 * w + x0];
  corners[3] = fy * fx * plane[y1 * w + x1];
  return corners[0] + corners[1] + corners[2] + corners[3];
}

std::vector<double> RefRoiAlign(const RoiCase& c, const std::vector<double>& x, const std::vector<double>& rois,
                                const std::vector<int64_t>& batch) {
  const int64_t C = c.x[1], H = c.x[2], W = c.x[3];
  const bool half = c.opset >= 16 && c.coords == "half_pixel";
  std::vector<double> out;
  for (int64_t n = 0; n < c.rois; ++n) {
    double off = half ? 0.5 : 0;
    double x1 = rois[n * 4] * c.spatial_scale - off, y1 = rois[n * 4 + 1] * c.spatial_scale - off;
    double rw = rois[n * 4 + 2] * c.spatial_scale - off - x1, rh = rois[n * 4 + 3] * c.spatial_scale - off - y1;
    if (!half) {
      rw = std::max(rw, 1.0);
      rh = std::max(rh, 1.0);
    }
    double bh = rh / c.out_h, bw = rw / c.out_w;
    int64_t gh = c.sampling_ratio ? c.sampling_ratio : static_cast<int64_t>(std::ceil(rh / c.out_h));
    int64_t gw = c.sampling_ratio ? c.sampling_ratio : static_cast<int64_t>(std::ceil(rw / c.out_w));
    for (int64_t ch = 0; ch < C; ++ch) {
      const double* plane = &x[(batch[n] * C + ch) * H * W];
      for (int64_t i = 0; i < c.out_h; ++i) {
        for (int64_t j = 0; j < c.out_w; ++j) {
          double sum = 0, best = -std::numeric_limits<double>::infinity();
          for (int64_t a = 0; a < gh; ++a) {
            for (int64_t b = 0; b < gw; ++b) {
              double corners[4];
              sum += Bilinear(plane, H, W, y1 + i * bh + (a + 0.5) * bh / gh, x1 + j * bw + (b + 0.5) * bw / gw,
                              corners);
              best = std::max({best, corners[0], corners[1], corners[2], corners[3]});
            }
          }
          if (gh <= 0 || gw <= 0) best = 0;
          out.push_back(c.mode == "max" ? best : sum / std::max<int64_t>(gh * gw, 1));
        }
      }
    }
  }
  return out;
}

ir::Node RoiNode(const RoiCase& c) {
  std::vector<ir::Attribute> attrs{kt::IntAttr("output_height", c.out_h), kt::IntAttr("output_width", c.out_w),
                                   kt::IntAttr("sampling_ratio", c.sampling_ratio),
                                   kt::FloatAttr("spatial_scale", c.spatial_scale), kt::StringAttr("mode", c.mode)};
  if (c.opset >= 16) attrs.push_back(kt::StringAttr("coordinate_transformation_mode", c.coords));
  return kt::MakeNode("RoiAlign", {"x", "rois", "batch"}, {"y"}, attrs);
}

void CheckRoiAlign(const RoiCase& c, uint32_t seed = 5) {
  std::vector<double> x = RoundTo(c.dtype, Random(Product(c.x), seed));
  // Rois in input-image coordinates (1 / spatial_scale times the map), some
  // reaching past the map's edges, some inverted or empty.
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> pos(-3, static_cast<double>(std::max(c.x[2], c.x[3])) + 2);
  std::vector<double> rois;
  std::vector<int64_t> batch;
  for (int64_t n = 0; n < c.rois; ++n) {
    double a = pos(gen), b = pos(gen), d = pos(gen), e = pos(gen);
    if (n % 5 != 4) {  // every fifth roi stays as drawn, possibly inverted
      if (a > d) std::swap(a, d);
      if (b > e) std::swap(b, e);
    }
    for (double v : {a, b, d, e}) rois.push_back(v / c.spatial_scale);
    batch.push_back(static_cast<int64_t>(gen() % c.x[0]));
  }
  rois = RoundTo(c.dtype, rois);
  runtime::Tensor xt = MakeFloat(c.dtype, c.x, x);
  runtime::Tensor rt = MakeFloat(c.dtype, {c.rois, 4}, rois);
  runtime::Tensor bt = kt::I64({c.rois}, batch);
  ir::Node node = RoiNode(c);
  auto r = kt::RunKernel(node, c.opset, {&xt, &rt, &bt});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  Shape y_shape{c.rois, c.x[1], c.out_h, c.out_w};
  ASSERT_EQ(r->at(0).shape(), y_shape);
  ExpectClose(ReadFloat(r->at(0)), RefRoiAlign(c, x, rois, batch), Tolerance(c.dtype), Tolerance(c.dtype));

  ir::TypeInfo xtype = ops::TensorType(c.dtype, c.x);
  ir::TypeInfo rtype = ops::TensorType(c.dtype, Shape{c.rois, 4});
  ir::TypeInfo btype = ops::TensorType(DataType::kInt64, Shape{c.rois});
  auto inferred = kt::InferNode(node, c.opset, {&xtype, &rtype, &btype});
  ASSERT_TRUE(inferred.ok()) << inferred.status().ToString();
  EXPECT_EQ(DimsOf(inferred->at(0)), ir::ShapeToString(ops::TensorType(c.dtype, y_shape).shape));
}

TEST(RoiAlign, AverageHalfPixel) {
  CheckRoiAlign({.x = {2, 13, 11, 9}, .rois = 23, .out_h = 5, .out_w = 3});
  CheckRoiAlign({.x = {2, 13, 11, 9}, .rois = 23, .out_h = 4, .out_w = 7, .sampling_ratio = 2,
                 .spatial_scale = 0.25f});
}
TEST(RoiAlign, AverageOutputHalfPixelAndOpset10) {
  CheckRoiAlign({.x = {3, 5, 10, 12}, .rois = 17, .out_h = 3, .out_w = 3, .coords = "output_half_pixel"});
  CheckRoiAlign({.x = {3, 5, 10, 12}, .rois = 17, .out_h = 2, .out_w = 5, .sampling_ratio = 3, .opset = 10});
}
TEST(RoiAlign, MaxMode) {
  CheckRoiAlign({.x = {1, 7, 8, 13}, .rois = 19, .out_h = 3, .out_w = 4, .mode = "max"});
  CheckRoiAlign({.x = {2, 3, 6, 6}, .rois = 11, .out_h = 2, .out_w = 2, .sampling_ratio = 1, .mode = "max",
                 .coords = "output_half_pixel"});
}
TEST(RoiAlign, OtherFloatTypes) {
  CheckRoiAlign({.x = {2, 3, 7, 9}, .rois = 9, .out_h = 3, .out_w = 2, .dtype = DataType::kFloat64});
  CheckRoiAlign({.x = {2, 3, 7, 9}, .rois = 9, .out_h = 3, .out_w = 2, .dtype = DataType::kFloat16});
  CheckRoiAlign({.x = {2, 3, 7, 9}, .rois = 9, .out_h = 3, .out_w = 2, .opset = 22, .dtype = DataType::kBfloat16});
}

TEST(RoiAlign, BadInputsAreErrors) {
  RoiCase c{.x = {2, 3, 4, 4}, .rois = 2};
  ir::Node node = RoiNode(c);
  runtime::Tensor x = kt::F32(c.x, std::vector<float>(Product(c.x), 1));
  runtime::Tensor rois = kt::F32({2, 4}, {0, 0, 2, 2, 1, 1, 3, 3});
  auto fails = [&](const ir::Node& n, const runtime::Tensor& xt, const runtime::Tensor& rt, const runtime::Tensor& bt,
                   const std::string& text) {
    auto r = kt::RunKernel(n, 16, {&xt, &rt, &bt});
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_NE(r.status().ToString().find(text), std::string::npos) << r.status().ToString();
    EXPECT_NE(r.status().ToString().find("RoiAlign"), std::string::npos) << r.status().ToString();
  };
  fails(node, x, rois, kt::I64({2}, {0, 2}), "batch_indices) has 2 at position 1");
  fails(node, x, rois, kt::I64({2}, {-1, 0}), "batch_indices) has -1 at position 0");
  fails(node, x, rois, kt::I64({3}, {0, 0, 0}), "expected [2] (one per roi)");
  fails(node, x, kt::F32({2, 5}, std::vector<float>(10, 0)), kt::I64({2}, {0, 0}), "(rois)");
  fails(node, kt::F32({2, 3, 16}, std::vector<float>(96, 0)), rois, kt::I64({2}, {0, 0}), "(X)");
  const float inf = std::numeric_limits<float>::infinity();
  fails(node, x, kt::F32({2, 4}, {0, 0, inf, 2, 0, 0, 1, 1}), kt::I64({2}, {0, 0}), "row 0");
  fails(node, x, kt::F32({2, 4}, {0, 0, 1, 1, 0, 0, 1, std::nanf("")}), kt::I64({2}, {0, 0}), "row 1");
  RoiCase bad_mode = c;
  bad_mode.mode = "median";
  fails(RoiNode(bad_mode), x, rois, kt::I64({2}, {0, 0}), "mode is 'median'");
  RoiCase bad_coords = c;
  bad_coords.coords = "align_corners";
  fails(RoiNode(bad_coords), x, rois, kt::I64({2}, {0, 0}), "coordinate_transformation_mode");
  RoiCase bad_size = c;
  bad_size.out_h = 0;
  fails(RoiNode(bad_size), x, rois, kt::I64({2}, {0, 0}), "output_height 0");

  ir::TypeInfo xtype = ops::TensorType(DataType::kFloat32, Shape{2, 3, 4, 4});
  ir::TypeInfo rtype = ops::TensorType(DataType::kFloat32, Shape{2, 4});
  ir::TypeInfo btype = ops::TensorType(DataType::kInt64, Shape{3});
  EXPECT_FALSE(kt::InferNode(node, 16, {&xtype, &rtype, &btype}).ok());
  ir::TypeInfo x3 = ops::TensorType(DataType::kFloat32, Shape{2, 3, 4});
  ir::TypeInfo b2 = ops::TensorType(DataType::kInt64, Shape{2});
  EXPECT_FALSE(kt::InferNode(node, 16, {&x3, &rtype, &b2}).ok());
  ir::TypeInfo r5 = ops::TensorType(DataType::kFloat32, Shape{2, 5});
  EXPECT_FALSE(kt::InferNode(node, 16, {&xtype, &r5, &b2}).ok());
  EXPECT_FALSE(kt::InferNode(RoiNode(bad_mode), 16, {&xtype, &rtype, &b2}).ok());
}

}  // namespace
}  // namespace vigil::cpu
