// Normalisation kernels (BatchNormalization, InstanceNormalization,
// LayerNormalization, GroupNormalization, LRN, MeanVarianceNormalization)
// against naive float64 references, plus shape inference and error cases.
// Softmax, LogSoftmax and Hardmax are in softmax_test.cpp.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include <gtest/gtest.h>

#include "backends/cpu/float_kernel_test_util.h"
#include "backends/cpu/kernel_test_util.h"

namespace vigil::cpu {
namespace {

namespace kt = vigil::cpu::testing;
using namespace vigil::cpu::float_testing;  // NOLINT: test helpers
using ir::DataType;

void ExpectError(const Result<std::vector<runtime::Tensor>>& r, ErrorCode code, const std::string& text) {
  ASSERT_FALSE(r.ok()) << "expected an error containing '" << text << "'";
  EXPECT_EQ(r.status().code(), code) << r.status().ToString();
  EXPECT_NE(r.status().summary().find(text), std::string::npos) << r.status().ToString();
  EXPECT_NE(r.status().summary().find("'n'"), std::string::npos) << "the error should name the node";
}

// Statistics of n values: mean and population variance.
std::pair<double, double> MeanVar(const std::vector<double>& v) {
  double mean = 0, var = 0;
  for (double x : v) mean += x;
  mean /= static_cast<double>(v.size());
  for (double x : v) var += (x - mean) * (x - mean);
  return {mean, var / static_cast<double>(v.size())};
}

// ------------------------------------------------------- BatchNormalization

void CheckBatchNorm(const Shape& shape, DataType dtype, DataType param_dtype, int64_t opset) {
  const int64_t c = shape[1];
  int64_t inner = 1;
  for (size_t d = 2; d < shape.size(); ++d) inner *= shape[d];
  std::vector<double> x = RoundTo(dtype, Random(Product(shape), 1, -3, 3));
  std::vector<double> p[5];
  for (int i = 1; i <= 4; ++i) p[i] = RoundTo(param_dtype, Random(c, 10 + i, i == 4 ? 0.1 : -2, 2));
  const float epsilon = 1e-3f;
  std::vector<double> want;
  for (int64_t i = 0; i < Product(shape); ++i) {
    int64_t ch = (i / inner) % c;
    want.push_back((x[i] - p[3][ch]) / std::sqrt(p[4][ch] + epsilon) * p[1][ch] + p[2][ch]);
  }
  runtime::Tensor xt = MakeFloat(dtype, shape, x);
  std::vector<runtime::Tensor> params;
  for (int i = 1; i <= 4; ++i) params.push_back(MakeFloat(param_dtype, {c}, p[i]));
  ir::Node node = kt::MakeNode("BatchNormalization", {"x", "s", "b", "m", "v"}, {"y"},
                               {kt::FloatAttr("epsilon", epsilon)});
  auto r = kt::RunKernel(node, opset, {&xt, &params[0], &params[1], &params[2], &params[3]});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->at(0).shape(), shape);
  ASSERT_EQ(r->at(0).dtype(), dtype);
  ExpectClose(ReadFloat(r->at(0)), want, Tolerance(dtype), Tolerance(dtype) * 4);
}

TEST(BatchNormalization, ChannelsAndRanks) {
  CheckBatchNorm({2, 13, 5, 7}, DataType::kFloat32, DataType::kFloat32, 15);
  CheckBatchNorm({3, 127}, DataType::kFloat32, DataType::kFloat32, 9);
  CheckBatchNorm({1, 5, 4, 3, 2}, DataType::kFloat64, DataType::kFloat64, 14);
  CheckBatchNorm({2, 3, 4}, DataType::kBfloat16, DataType::kBfloat16, 15);
  CheckBatchNorm({0, 3, 4}, DataType::kFloat32, DataType::kFloat32, 15);
}

TEST(BatchNormalization, Float16DataWithFloatParameters) {
  CheckBatchNorm({2, 13, 3, 3}, DataType::kFloat16, DataType::kFloat32, 15);
}

TEST(BatchNormalization, SpatialZeroIsPerElement) {
  // Opset 7, spatial=0: parameters are C x D1 (3 x 2), one per element of a sample.
  runtime::Tensor x = kt::F32({2, 3, 2}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
  runtime::Tensor s = kt::F32({3, 2}, {1, 2, 1, 2, 1, 2}), b = kt::F32({3, 2}, {0, 0, 1, 1, 0, 0});
  runtime::Tensor m = kt::F32({3, 2}, {1, 1, 1, 1, 1, 1}), v = kt::F32({3, 2}, {1, 1, 1, 1, 1, 1});
  ir::Node node = kt::MakeNode("BatchNormalization", {"x", "s", "b", "m", "v"}, {"y"},
                               {kt::IntAttr("spatial", 0), kt::FloatAttr("epsilon", 0.f)});
  auto r = kt::RunKernel(node, 7, {&x, &s, &b, &m, &v});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(kt::Values<float>(r->at(0)), (std::vector<float>{0, 2, 3, 7, 4, 10, 6, 14, 9, 19, 10, 22}));
}

TEST(BatchNormalization, TrainingIsUnsupportedAndSizesAreChecked) {
  runtime::Tensor x = kt::F32({1, 2, 2}, {1, 2, 3, 4}), p = kt::F32({2}, {1, 1}), bad = kt::F32({3}, {1, 1, 1});
  ir::Node train = kt::MakeNode("BatchNormalization", {"x", "s", "b", "m", "v"}, {"y"},
                                {kt::IntAttr("training_mode", 1)});
  ExpectError(kt::RunKernel(train, 15, {&x, &p, &p, &p, &p}), ErrorCode::kUnsupported, "training_mode=1");
  ir::Node stats = kt::MakeNode("BatchNormalization", {"x", "s", "b", "m", "v"}, {"y", "mean", "var"});
  ExpectError(kt::RunKernel(stats, 9, {&x, &p, &p, &p, &p}), ErrorCode::kUnsupported, "training mode");
  ir::Node node = kt::MakeNode("BatchNormalization", {"x", "s", "b", "m", "v"}, {"y"});
  ExpectError(kt::RunKernel(node, 15, {&x, &p, &p, &bad, &p}), ErrorCode::kInvalidInput, "input 3 (input_mean)");
  ExpectError(kt::RunKernel(node, 15, {&x, &p, &p, &p}), ErrorCode::kInvalidInput, "required input 4 is missing");
}

TEST(BatchNormalizationInference, ShapesAndChecks) {
  ir::TypeInfo x = Type(DataType::kFloat16, {S("N"), K(3), S("H"), K(8)});
  ir::TypeInfo p3 = Type(DataType::kFloat32, {K(3)}), p4 = Type(DataType::kFloat32, {K(4)});
  ir::Node node = kt::MakeNode("BatchNormalization", {"x", "s", "b", "m", "v"}, {"y"});
  auto r = kt::InferNode(node, 15, {&x, &p3, &p3, &p3, &p3});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(DimsOf(r->at(0)), "[N,3,H,8]");
  EXPECT_EQ(r->at(0).elem_type, DataType::kFloat16);
  auto bad = kt::InferNode(node, 15, {&x, &p3, &p4, &p3, &p3});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().summary().find("input 2 (B) has 4 elements"), std::string::npos);
  ir::Node train = kt::MakeNode("BatchNormalization", {"x", "s", "b", "m", "v"}, {"y", "rm", "rv"});
  auto t = kt::InferNode(train, 15, {&x, &p3, &p3, &p3, &p3});
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(DimsOf(t->at(1)), "[3]");
  EXPECT_EQ(t->at(1).elem_type, DataType::kFloat32);
  // Five outputs up to opset 13, three from 14.
  ir::Node five = kt::MakeNode("BatchNormalization", {"x", "s", "b", "m", "v"}, {"y", "1", "2", "3", "4"});
  EXPECT_TRUE(kt::InferNode(five, 9, {&x, &p3, &p3, &p3, &p3}).ok());
  EXPECT_FALSE(kt::InferNode(five, 14, {&x, &p3, &p3, &p3, &p3}).ok());
}

// ---------------------------------------------------- InstanceNormalization

void CheckInstanceNorm(const Shape& shape, DataType dtype) {
  const int64_t c = shape[1], size = Product(shape) / (shape[0] * c);
  std::vector<double> x = RoundTo(dtype, Random(Product(shape), 2, -2, 5));
  std::vector<double> s = RoundTo(dtype, Random(c, 3)), b = RoundTo(dtype, Random(c, 4));
  std::vector<double> want;
  for (int64_t plane = 0; plane < shape[0] * c; ++plane) {
    std::vector<double> v(x.begin() + plane * size, x.begin() + (plane + 1) * size);
    auto [mean, var] = MeanVar(v);
    for (double e : v) want.push_back((e - mean) / std::sqrt(var + 1e-5) * s[plane % c] + b[plane % c]);
  }
  runtime::Tensor xt = MakeFloat(dtype, shape, x), st = MakeFloat(dtype, {c}, s), bt = MakeFloat(dtype, {c}, b);
  auto r = kt::RunKernel(kt::MakeNode("InstanceNormalization", {"x", "s", "b"}, {"y"}), 6, {&xt, &st, &bt});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ExpectClose(ReadFloat(r->at(0)), want, Tolerance(dtype) * 2, Tolerance(dtype) * 4);
}

TEST(InstanceNormalization, Shapes) {
  CheckInstanceNorm({2, 13, 5, 7}, DataType::kFloat32);
  CheckInstanceNorm({1, 3, 11}, DataType::kFloat64);
  CheckInstanceNorm({2, 4, 3, 2, 2}, DataType::kFloat16);
  runtime::Tensor x = kt::F32({1, 2, 2}, {1, 2, 3, 4}), s = kt::F32({3}, {1, 1, 1});
  ExpectError(kt::RunKernel(kt::MakeNode("InstanceNormalization", {"x", "s", "b"}, {"y"}), 6, {&x, &s, &s}),
              ErrorCode::kInvalidInput, "input 1 (scale)");
}

// ------------------------------------------------------- LayerNormalization

// Offset into a tensor of `small` shape broadcast to `shape` for flat index i.
int64_t BroadcastOffset(int64_t i, const Shape& shape, const Shape& small) {
  Shape idx = Unravel(i, shape);
  int64_t offset = 0;
  for (size_t d = 0; d < small.size(); ++d) {
    int64_t pos = idx[shape.size() - small.size() + d];
    offset = offset * small[d] + (small[d] == 1 ? 0 : pos);
  }
  return offset;
}

void CheckLayerNorm(const Shape& shape, int64_t axis, const Shape& scale_shape, bool bias, DataType dtype,
                    bool stats = false, int64_t stash = 1) {
  const int64_t a = axis < 0 ? axis + static_cast<int64_t>(shape.size()) : axis;
  int64_t inner = 1;
  for (size_t d = a; d < shape.size(); ++d) inner *= shape[d];
  std::vector<double> x = RoundTo(dtype, Random(Product(shape), 5, -4, 4));
  std::vector<double> s = RoundTo(dtype, Random(Product(scale_shape), 6)), b = RoundTo(dtype, Random(Product(scale_shape), 7));
  std::vector<double> want, mean_want, inv_want;
  for (int64_t row = 0; row < Product(shape) / inner; ++row) {
    std::vector<double> v(x.begin() + row * inner, x.begin() + (row + 1) * inner);
    auto [mean, var] = MeanVar(v);
    double inv = 1 / std::sqrt(var + 1e-5);
    mean_want.push_back(mean);
    inv_want.push_back(inv);
    for (int64_t j = 0; j < inner; ++j) {
      int64_t at = BroadcastOffset(row * inner + j, shape, scale_shape);
      want.push_back((v[j] - mean) * inv * s[at] + (bias ? b[at] : 0));
    }
  }
  runtime::Tensor xt = MakeFloat(dtype, shape, x), st = MakeFloat(dtype, scale_shape, s),
                  bt = MakeFloat(dtype, scale_shape, b);
  std::vector<std::string> inputs{"x", "s"}, outputs{"y"};
  if (bias) inputs.push_back("b");
  if (stats) outputs = {"y", "mean", "inv"};
  ir::Node node = kt::MakeNode("LayerNormalization", inputs, outputs,
                               {kt::IntAttr("axis", axis), kt::IntAttr("stash_type", stash)});
  std::vector<const runtime::Tensor*> in{&xt, &st};
  if (bias) in.push_back(&bt);
  auto r = kt::RunKernel(node, 17, in);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ExpectClose(ReadFloat(r->at(0)), want, Tolerance(dtype) * 2, Tolerance(dtype) * 8);
  ir::TypeInfo xtype = ops::TensorType(dtype, shape);
  auto inferred = kt::InferNode(node, 17, {&xtype, nullptr, nullptr});
  ASSERT_TRUE(inferred.ok()) << inferred.status().ToString();
  if (!stats) return;
  Shape stat_shape = shape;
  for (size_t d = a; d < shape.size(); ++d) stat_shape[d] = 1;
  for (int i = 1; i <= 2; ++i) {
    EXPECT_EQ(r->at(i).shape(), stat_shape);
    EXPECT_EQ(r->at(i).dtype(), static_cast<DataType>(stash));
    EXPECT_EQ(DimsOf(inferred->at(i)), ir::ShapeToString(ops::TensorType(dtype, stat_shape).shape));
    EXPECT_EQ(inferred->at(i).elem_type, static_cast<DataType>(stash));
  }
  ExpectClose(ReadFloat(r->at(1)), mean_want, 1e-6, 1e-6);
  ExpectClose(ReadFloat(r->at(2)), inv_want, 1e-6, 1e-6);
}

// The optimised float32 rows (fast/normalization.cpp) against the reference
// code: within one unit in the last place, on rows of 1, 13, 127 and 768
// values (the 127 ones offset by 1000, a spread small beside the mean), 33
// rows (several threads' worth where the pool is loaded), with and without
// B, the inner dims one or two; a row holding NaN is NaN in both. Scale of
// one value (broadcast along the row) and the statistics outputs stay on the
// reference, bit for bit.
TEST(LayerNormalization, OptimisedRowsWithinOneUlpOfTheReference) {
  auto ulps = [](float a, float b) {
    int32_t ua, ub;
    std::memcpy(&ua, &a, 4);
    std::memcpy(&ub, &b, 4);
    return std::abs(static_cast<int64_t>(ua) - ub);
  };
  struct Case {
    Shape x, scale;
    int64_t axis;
    bool bias;
  };
  const Case cases[] = {{{33, 1}, {1}, -1, true},      {{33, 13}, {13}, -1, true},     {{3, 11, 127}, {127}, -1, false},
                        {{2, 33, 768}, {768}, -1, true}, {{5, 7, 13}, {7, 13}, 1, true}, {{4, 13}, {1}, -1, true}};
  uint32_t seed = 11;
  for (const Case& c : cases) {
    SCOPED_TRACE(::testing::Message() << "x " << ::testing::PrintToString(c.x) << " axis " << c.axis);
    std::vector<double> xv = Random(Product(c.x), ++seed, -4, 4);
    if (c.x.back() == 127) {
      for (double& v : xv) v += 1000;
    }
    xv[xv.size() / 2] = std::numeric_limits<double>::quiet_NaN();
    runtime::Tensor xt = MakeFloat(DataType::kFloat32, c.x, xv);
    runtime::Tensor st = MakeFloat(DataType::kFloat32, c.scale, Random(Product(c.scale), ++seed));
    runtime::Tensor bt = MakeFloat(DataType::kFloat32, c.scale, Random(Product(c.scale), ++seed));
    std::vector<std::string> inputs{"x", "s"};
    std::vector<const runtime::Tensor*> in{&xt, &st};
    if (c.bias) {
      inputs.push_back("b");
      in.push_back(&bt);
    }
    ir::Node node = kt::MakeNode("LayerNormalization", inputs, {"y"}, {kt::IntAttr("axis", c.axis)});
    auto fast = kt::RunKernel(node, 17, in, /*optimised=*/true);
    auto reference = kt::RunKernel(node, 17, in, /*optimised=*/false);
    ASSERT_TRUE(fast.ok() && reference.ok());
    std::vector<float> a = kt::Values<float>(fast->at(0)), b = kt::Values<float>(reference->at(0));
    int64_t worst = 0, nans = 0;
    for (size_t i = 0; i < a.size(); ++i) {
      ASSERT_EQ(std::isnan(a[i]), std::isnan(b[i])) << "at " << i;
      if (std::isnan(b[i])) {
        ++nans;
        continue;
      }
      worst = std::max(worst, ulps(a[i], b[i]));
    }
    EXPECT_LE(worst, 1);
    EXPECT_GT(nans, 0);
    if (c.scale.size() == 1 && c.scale[0] == 1 && c.x.back() != 1) {
      EXPECT_EQ(kt::Values<uint32_t>(fast->at(0)), kt::Values<uint32_t>(reference->at(0)));
    }
  }
  // With the statistics outputs: the reference code, bit for bit.
  runtime::Tensor xt = MakeFloat(DataType::kFloat32, {6, 13}, Random(78, 3, -4, 4));
  runtime::Tensor st = MakeFloat(DataType::kFloat32, {13}, Random(13, 4));
  ir::Node node = kt::MakeNode("LayerNormalization", {"x", "s"}, {"y", "mean", "inv"});
  auto fast = kt::RunKernel(node, 17, {&xt, &st}, true), reference = kt::RunKernel(node, 17, {&xt, &st}, false);
  ASSERT_TRUE(fast.ok() && reference.ok());
  EXPECT_EQ(kt::Values<uint32_t>(fast->at(0)), kt::Values<uint32_t>(reference->at(0)));
}

TEST(LayerNormalization, Axes) {
  CheckLayerNorm({2, 3, 4, 5}, -1, {5}, true, DataType::kFloat32, true);
  CheckLayerNorm({2, 3, 4, 5}, 1, {3, 4, 5}, true, DataType::kFloat32, true);
  CheckLayerNorm({2, 3, 4, 5}, 0, {2, 3, 4, 5}, false, DataType::kFloat64, true, 11);
  CheckLayerNorm({3, 127}, -1, {127}, false, DataType::kFloat32);
  CheckLayerNorm({2, 13, 7}, -2, {13, 7}, true, DataType::kFloat16, true);
  CheckLayerNorm({2, 5, 6}, -1, {6}, true, DataType::kBfloat16);
}

TEST(LayerNormalization, ScaleBroadcasts) {
  CheckLayerNorm({2, 3, 4, 5}, 1, {1, 4, 1}, true, DataType::kFloat32);
  CheckLayerNorm({2, 3, 4, 5}, 2, {1}, true, DataType::kFloat32);
}

TEST(LayerNormalization, Errors) {
  runtime::Tensor x = kt::F32({2, 3}, {1, 2, 3, 4, 5, 6}), s = kt::F32({2}, {1, 1});
  ExpectError(kt::RunKernel(kt::MakeNode("LayerNormalization", {"x", "s"}, {"y"}), 17, {&x, &s}),
              ErrorCode::kInvalidInput, "does not broadcast");
  ExpectError(kt::RunKernel(kt::MakeNode("LayerNormalization", {"x", "s"}, {"y"}, {kt::IntAttr("axis", 2)}), 17,
                            {&x, &s}),
              ErrorCode::kInvalidModel, "axis");
  ExpectError(kt::RunKernel(kt::MakeNode("LayerNormalization", {"x", "s"}, {"y"}, {kt::IntAttr("stash_type", 7)}),
                            17, {&x, &s}),
              ErrorCode::kInvalidModel, "stash_type");
}

TEST(LayerNormalizationInference, SymbolicStatistics) {
  ir::TypeInfo x = Type(DataType::kFloat16, {S("N"), S("S"), K(768)});
  auto r = kt::InferNode(kt::MakeNode("LayerNormalization", {"x", "s"}, {"y", "m", "i"}, {kt::IntAttr("axis", 1)}),
                         17, {&x, nullptr});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(DimsOf(r->at(0)), "[N,S,768]");
  EXPECT_EQ(DimsOf(r->at(1)), "[N,1,1]");
  EXPECT_EQ(r->at(2).elem_type, DataType::kFloat32);
  ir::TypeInfo unknown = ops::TensorTypeUnknownShape(DataType::kFloat32);
  auto u = kt::InferNode(kt::MakeNode("LayerNormalization", {"x", "s"}, {"y", "m"}), 17, {&unknown, nullptr});
  ASSERT_TRUE(u.ok());
  EXPECT_FALSE(u->at(1).shape.rank_known);
  auto bad = kt::InferNode(kt::MakeNode("LayerNormalization", {"x", "s"}, {"y"}, {kt::IntAttr("axis", 3)}), 17,
                           {&x, nullptr});
  EXPECT_FALSE(bad.ok());
}

// ------------------------------------------------------- GroupNormalization

void CheckGroupNorm(const Shape& shape, int64_t groups, int64_t opset, DataType dtype) {
  const int64_t c = shape[1], inner = Product(shape) / (shape[0] * c), per = c / groups;
  const int64_t params = opset >= 21 ? c : groups;
  std::vector<double> x = RoundTo(dtype, Random(Product(shape), 8, -3, 3));
  std::vector<double> s = RoundTo(dtype, Random(params, 9)), b = RoundTo(dtype, Random(params, 10));
  std::vector<double> want;
  for (int64_t n = 0; n < shape[0]; ++n) {
    for (int64_t g = 0; g < groups; ++g) {
      auto start = x.begin() + (n * c + g * per) * inner;
      std::vector<double> v(start, start + per * inner);
      auto [mean, var] = MeanVar(v);
      for (int64_t j = 0; j < per * inner; ++j) {
        int64_t k = opset >= 21 ? g * per + j / inner : g;
        want.push_back((v[j] - mean) / std::sqrt(var + 1e-5) * s[k] + b[k]);
      }
    }
  }
  runtime::Tensor xt = MakeFloat(dtype, shape, x), st = MakeFloat(dtype, {params}, s),
                  bt = MakeFloat(dtype, {params}, b);
  ir::Node node = kt::MakeNode("GroupNormalization", {"x", "s", "b"}, {"y"}, {kt::IntAttr("num_groups", groups)});
  auto r = kt::RunKernel(node, opset, {&xt, &st, &bt});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ExpectClose(ReadFloat(r->at(0)), want, Tolerance(dtype) * 2, Tolerance(dtype) * 8);
}

TEST(GroupNormalization, Opset18ScalesPerGroupOpset21PerChannel) {
  for (int64_t opset : {18, 21}) {
    CheckGroupNorm({2, 12, 3, 4}, 3, opset, DataType::kFloat32);
    CheckGroupNorm({1, 13, 5}, 13, opset, DataType::kFloat64);
    CheckGroupNorm({2, 6, 2, 2}, 1, opset, DataType::kFloat16);
  }
}

TEST(GroupNormalization, Errors) {
  runtime::Tensor x = kt::F32({1, 4, 2}, std::vector<float>(8, 1.f)), p2 = kt::F32({2}, {1, 1}),
                  p4 = kt::F32({4}, {1, 1, 1, 1});
  auto node = [](int64_t g) {
    return kt::MakeNode("GroupNormalization", {"x", "s", "b"}, {"y"}, {kt::IntAttr("num_groups", g)});
  };
  ExpectError(kt::RunKernel(node(3), 18, {&x, &p2, &p2}), ErrorCode::kInvalidInput, "divide the 4 channels");
  ExpectError(kt::RunKernel(node(0), 18, {&x, &p2, &p2}), ErrorCode::kInvalidModel, "num_groups is 0");
  ExpectError(kt::RunKernel(node(2), 18, {&x, &p4, &p4}), ErrorCode::kInvalidInput, "one per group in opset 18");
  ExpectError(kt::RunKernel(node(2), 21, {&x, &p2, &p2}), ErrorCode::kInvalidInput, "one per channel in opset 21");
  ExpectError(kt::RunKernel(kt::MakeNode("GroupNormalization", {"x", "s", "b"}, {"y"}), 21, {&x, &p4, &p4}),
              ErrorCode::kInvalidModel, "num_groups");
  ir::TypeInfo xt = Type(DataType::kFloat32, {S("N"), K(4), S("L")});
  ir::TypeInfo t2 = Type(DataType::kFloat32, {K(2)}), t4 = Type(DataType::kFloat32, {K(4)});
  EXPECT_TRUE(kt::InferNode(node(2), 18, {&xt, &t2, &t2}).ok());
  EXPECT_FALSE(kt::InferNode(node(2), 18, {&xt, &t4, &t4}).ok());
  EXPECT_TRUE(kt::InferNode(node(2), 21, {&xt, &t4, &t4}).ok());
  EXPECT_FALSE(kt::InferNode(node(2), 21, {&xt, &t2, &t2}).ok());
  EXPECT_FALSE(kt::InferNode(node(3), 21, {&xt, &t4, &t4}).ok());
}

// ---------------------------------------------------------------------- LRN

void CheckLrn(const Shape& shape, int64_t size, DataType dtype) {
  const int64_t c = shape[1], inner = Product(shape) / (shape[0] * c);
  // The attributes are floats; the reference uses exactly their values.
  const double alpha = 2e-3f, beta = 0.6f, bias = 1.5f;
  std::vector<double> x = RoundTo(dtype, Random(Product(shape), 12, -5, 5));
  std::vector<double> want;
  for (int64_t i = 0; i < Product(shape); ++i) {
    int64_t ch = (i / inner) % c, base = i - ch * inner;
    double sum = 0;
    for (int64_t k = ch - (size - 1) / 2; k <= ch + size / 2; ++k) {
      if (k >= 0 && k < c) sum += x[base + k * inner] * x[base + k * inner];
    }
    want.push_back(x[i] / std::pow(bias + alpha / static_cast<double>(size) * sum, beta));
  }
  runtime::Tensor xt = MakeFloat(dtype, shape, x);
  ir::Node node = kt::MakeNode("LRN", {"x"}, {"y"},
                               {kt::IntAttr("size", size), kt::FloatAttr("alpha", static_cast<float>(alpha)),
                                kt::FloatAttr("beta", static_cast<float>(beta)),
                                kt::FloatAttr("bias", static_cast<float>(bias))});
  auto r = kt::RunKernel(node, 13, {&xt});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ExpectClose(ReadFloat(r->at(0)), want, Tolerance(dtype) * 2, Tolerance(dtype) * 2);
}

TEST(LRN, WindowSizes) {
  CheckLrn({2, 13, 4, 5}, 3, DataType::kFloat32);
  CheckLrn({2, 13, 4, 5}, 4, DataType::kFloat32);
  CheckLrn({1, 5, 3}, 1, DataType::kFloat64);
  CheckLrn({1, 7, 2, 2}, 5, DataType::kFloat16);
  runtime::Tensor x = kt::F32({1, 2, 1}, {1, 2});
  ExpectError(kt::RunKernel(kt::MakeNode("LRN", {"x"}, {"y"}), 13, {&x}), ErrorCode::kInvalidModel, "size");
  EXPECT_FALSE(kt::InferNode(kt::MakeNode("LRN", {"x"}, {"y"}, {kt::IntAttr("size", 0)}), 13,
                             {nullptr})
                   .ok());
}

// ------------------------------------------------ MeanVarianceNormalization

void CheckMvn(const Shape& shape, const Shape& axes, DataType dtype, bool default_axes = false) {
  std::vector<double> x = RoundTo(dtype, Random(Product(shape), 13, -2, 6));
  Shape reduced = shape;
  for (int64_t a : axes) reduced[a < 0 ? a + static_cast<int64_t>(shape.size()) : a] = 1;
  std::vector<double> sum(Product(reduced)), sq(Product(reduced));
  const double count = static_cast<double>(Product(shape) / Product(reduced));
  for (int64_t i = 0; i < Product(shape); ++i) sum[BroadcastOffset(i, shape, reduced)] += x[i] / count;
  for (int64_t i = 0; i < Product(shape); ++i) {
    int64_t g = BroadcastOffset(i, shape, reduced);
    sq[g] += (x[i] - sum[g]) * (x[i] - sum[g]) / count;
  }
  std::vector<double> want;
  for (int64_t i = 0; i < Product(shape); ++i) {
    int64_t g = BroadcastOffset(i, shape, reduced);
    want.push_back((x[i] - sum[g]) / (std::sqrt(sq[g]) + 1e-9));
  }
  runtime::Tensor xt = MakeFloat(dtype, shape, x);
  std::vector<ir::Attribute> attrs;
  if (!default_axes) attrs.push_back(kt::IntsAttr("axes", axes));
  auto r = kt::RunKernel(kt::MakeNode("MeanVarianceNormalization", {"x"}, {"y"}, attrs), 13, {&xt});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ExpectClose(ReadFloat(r->at(0)), want, Tolerance(dtype) * 2, Tolerance(dtype) * 4);
}

TEST(MeanVarianceNormalization, Axes) {
  CheckMvn({2, 3, 4, 5}, {0, 2, 3}, DataType::kFloat32, true);
  CheckMvn({2, 13, 4, 5}, {1}, DataType::kFloat32);
  CheckMvn({3, 4, 5}, {-1, 1}, DataType::kFloat64);
  CheckMvn({2, 3, 4}, {2}, DataType::kFloat16);
  runtime::Tensor x = kt::F32({2, 3}, {1, 2, 3, 4, 5, 6});
  ExpectError(kt::RunKernel(kt::MakeNode("MeanVarianceNormalization", {"x"}, {"y"}), 13, {&x}),
              ErrorCode::kInvalidModel, "axes");
}

}  // namespace
}  // namespace vigil::cpu
