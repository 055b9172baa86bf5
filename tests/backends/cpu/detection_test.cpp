// NonMaxSuppression against a plain reference written here, on odd sizes,
// plus its shape inference and the errors on bad input.
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

}  // namespace
}  // namespace vigil::cpu
