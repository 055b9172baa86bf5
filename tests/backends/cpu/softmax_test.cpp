// Softmax, LogSoftmax and Hardmax against a float64 reference, in both
// definitions: 2-D coercion at `axis` before opset 13, one axis from 13; and
// LpNormalization (p = 1, 2) along one axis.
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

// Reference along lines of n elements `inner` apart.
std::vector<double> RefSoftmax(const std::string& op, const std::vector<double>& x, const Shape& shape, int64_t axis,
                               bool coerce) {
  const int64_t a = axis < 0 ? axis + static_cast<int64_t>(shape.size()) : axis;
  int64_t outer = 1, n = 1, inner = 1;
  for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d) {
    (d < a ? outer : (d == a || coerce) ? n : inner) *= shape[d];
  }
  std::vector<double> y(x.size());
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      auto at = [&](int64_t k) { return (o * n + k) * inner + i; };
      double max = -std::numeric_limits<double>::infinity(), sum = 0;
      int64_t arg = 0;
      for (int64_t k = 0; k < n; ++k) {
        if (x[at(k)] > max) {
          max = x[at(k)];
          arg = k;
        }
      }
      for (int64_t k = 0; k < n; ++k) sum += std::exp(x[at(k)] - max);
      for (int64_t k = 0; k < n; ++k) {
        y[at(k)] = op == "Softmax"      ? std::exp(x[at(k)] - max) / sum
                   : op == "LogSoftmax" ? x[at(k)] - max - std::log(sum)
                                        : (k == arg ? 1.0 : 0.0);
      }
    }
  }
  return y;
}

void CheckSoftmax(const std::string& op, const Shape& shape, std::optional<int64_t> axis, int64_t opset,
                  DataType dtype = DataType::kFloat32, double lo = -5, double hi = 5) {
  std::vector<double> x = RoundTo(dtype, Random(Product(shape), 21, lo, hi));
  runtime::Tensor xt = MakeFloat(dtype, shape, x);
  std::vector<ir::Attribute> attrs;
  if (axis) attrs.push_back(kt::IntAttr("axis", *axis));
  ir::Node node = kt::MakeNode(op, {"x"}, {"y"}, attrs);
  auto r = kt::RunKernel(node, opset, {&xt});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->at(0).shape(), shape);
  const int64_t default_axis = opset >= 13 ? -1 : 1;
  std::vector<double> want = RefSoftmax(op, x, shape, axis.value_or(default_axis), opset < 13);
  ExpectClose(ReadFloat(r->at(0)), want, Tolerance(dtype) * 2, Tolerance(dtype));
  ir::TypeInfo xtype = ops::TensorType(dtype, shape);
  auto inferred = kt::InferNode(node, opset, {&xtype});
  ASSERT_TRUE(inferred.ok()) << inferred.status().ToString();
  EXPECT_EQ(DimsOf(inferred->at(0)), ir::ShapeToString(xtype.shape));
}

TEST(Softmax, OneAxisFromOpset13) {
  for (const char* op : {"Softmax", "LogSoftmax", "Hardmax"}) {
    CheckSoftmax(op, {2, 3, 4}, 1, 13);
    CheckSoftmax(op, {2, 3, 4}, std::nullopt, 13);
    CheckSoftmax(op, {3, 13, 5}, -3, 13);
    CheckSoftmax(op, {127}, 0, 13);
  }
}

TEST(Softmax, TwoDCoercionBeforeOpset13) {
  for (const char* op : {"Softmax", "LogSoftmax", "Hardmax"}) {
    CheckSoftmax(op, {2, 3, 4}, 1, 11);
    CheckSoftmax(op, {2, 3, 4}, std::nullopt, 1);
    CheckSoftmax(op, {2, 3, 4}, 0, 11);
    CheckSoftmax(op, {2, 3, 4}, -1, 11);
  }
}

TEST(Softmax, DtypesAndLargeValues) {
  for (const char* op : {"Softmax", "LogSoftmax"}) {
    CheckSoftmax(op, {4, 13}, -1, 13, DataType::kFloat16);
    CheckSoftmax(op, {4, 13}, -1, 13, DataType::kBfloat16);
    CheckSoftmax(op, {4, 13}, -1, 13, DataType::kFloat64);
    CheckSoftmax(op, {4, 13}, -1, 13, DataType::kFloat32, 1000, 1010);
    CheckSoftmax(op, {4, 13}, -1, 13, DataType::kFloat32, -1010, -1000);
  }
}

TEST(Softmax, InfinitiesTiesAndEmpty) {
  const float inf = std::numeric_limits<float>::infinity();
  runtime::Tensor x = kt::F32({1, 3}, {-inf, 0.f, 0.f});
  auto s = kt::RunKernel(kt::MakeNode("Softmax", {"x"}, {"y"}), 13, {&x});
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(kt::Values<float>(s->at(0)), (std::vector<float>{0.f, 0.5f, 0.5f}));
  auto h = kt::RunKernel(kt::MakeNode("Hardmax", {"x"}, {"y"}), 13, {&x});
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(kt::Values<float>(h->at(0)), (std::vector<float>{0.f, 1.f, 0.f}));
  auto l = kt::RunKernel(kt::MakeNode("LogSoftmax", {"x"}, {"y"}), 13, {&x});
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(kt::Values<float>(l->at(0))[0], -inf);
  runtime::Tensor empty = kt::F32({0, 5}, {});
  auto e = kt::RunKernel(kt::MakeNode("Softmax", {"x"}, {"y"}), 13, {&empty});
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->at(0).shape(), (Shape{0, 5}));
}

// The optimised float32 line (fast/activation.cpp) against the reference
// code: within 4 units in the last place on lines of odd lengths, spreads
// wide enough to reach subnormal outputs, -inf elements; NaN lines, lines
// with +inf and lines of only -inf take the reference's line and agree bit
// for bit; a non-last axis (not contiguous) stays on the reference.
TEST(Softmax, OptimisedLinesWithinFourUlpOfTheReference) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  for (int64_t n : {1, 13, 197, 1001}) {
    const int64_t rows = 9;
    std::vector<float> x(static_cast<size_t>(rows * n));
    for (size_t i = 0; i < x.size(); ++i) {
      const int64_t row = static_cast<int64_t>(i) / n;
      const float spread = row < 3 ? 3.0f : 120.0f;  // rows 3..: outputs down to the subnormals
      x[i] = spread * std::sin(static_cast<float>(i) * 0.7f + static_cast<float>(row));
    }
    if (n > 1) x[static_cast<size_t>(1 * n)] = -inf;         // row 1: one -inf element
    x[static_cast<size_t>(5 * n + n / 2)] = nan;             // row 5: a NaN
    x[static_cast<size_t>(6 * n)] = inf;                     // row 6: +inf
    for (int64_t k = 0; k < n; ++k) x[static_cast<size_t>(7 * n + k)] = -inf;  // row 7: only -inf
    runtime::Tensor xt = kt::F32({rows, n}, x);
    ir::Node node = kt::MakeNode("Softmax", {"x"}, {"y"});
    auto fast = kt::RunKernel(node, 13, {&xt}, /*optimised=*/true);
    auto reference = kt::RunKernel(node, 13, {&xt}, /*optimised=*/false);
    ASSERT_TRUE(fast.ok() && reference.ok());
    std::vector<float> a = kt::Values<float>(fast->at(0)), b = kt::Values<float>(reference->at(0));
    int64_t subnormal = 0;
    for (size_t i = 0; i < a.size(); ++i) {
      const int64_t row = static_cast<int64_t>(i) / n;
      int32_t ua, ub;
      std::memcpy(&ua, &a[i], 4);
      std::memcpy(&ub, &b[i], 4);
      if (row >= 5 && row <= 7) {
        ASSERT_EQ(ua, ub) << "n " << n << " row " << row << ": the reference's line";
        continue;
      }
      ASSERT_FALSE(std::isnan(b[i]));
      ASSERT_LE(std::abs(static_cast<int64_t>(ua) - ub), 4) << "n " << n << " at " << i << ": " << a[i] << " vs " << b[i];
      subnormal += b[i] > 0 && b[i] < std::numeric_limits<float>::min();
    }
    if (n >= 197) {
      EXPECT_GT(subnormal, 0) << "n " << n << ": the wide rows should reach subnormal outputs";
    }
  }
  // Axis 0 of [13, 7]: not contiguous, the reference code, bit for bit.
  std::vector<float> x(91);
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::cos(static_cast<float>(i));
  runtime::Tensor xt = kt::F32({13, 7}, x);
  ir::Node node = kt::MakeNode("Softmax", {"x"}, {"y"}, {kt::IntAttr("axis", 0)});
  auto fast = kt::RunKernel(node, 13, {&xt}, true), reference = kt::RunKernel(node, 13, {&xt}, false);
  ASSERT_TRUE(fast.ok() && reference.ok());
  EXPECT_EQ(kt::Values<uint32_t>(fast->at(0)), kt::Values<uint32_t>(reference->at(0)));
}

TEST(Softmax, Errors) {
  runtime::Tensor x = kt::F32({2, 3}, {1, 2, 3, 4, 5, 6});
  auto r = kt::RunKernel(kt::MakeNode("Softmax", {"x"}, {"y"}, {kt::IntAttr("axis", 2)}), 13, {&x});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kInvalidModel);
  EXPECT_NE(r.status().summary().find("'n'"), std::string::npos);
  runtime::Tensor xi = kt::MakeTensor(DataType::kInt32, {2}, std::vector<int32_t>{1, 2});
  auto u = kt::RunKernel(kt::MakeNode("Softmax", {"x"}, {"y"}), 13, {&xi});
  ASSERT_FALSE(u.ok());
  EXPECT_EQ(u.status().code(), ErrorCode::kUnsupported);
  ir::TypeInfo t = Type(DataType::kFloat32, {S("B"), K(3)});
  EXPECT_FALSE(kt::InferNode(kt::MakeNode("Softmax", {"x"}, {"y"}, {kt::IntAttr("axis", -3)}), 13, {&t}).ok());
  auto ok = kt::InferNode(kt::MakeNode("LogSoftmax", {"x"}, {"y"}), 11, {&t});
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(DimsOf(ok->at(0)), "[B,3]");
}

// --- LpNormalization -------------------------------------------------------------

// Reference: every element divided by the p-norm of its line along `axis`
// (found by unravelling the flat index), 0 where that norm is 0.
std::vector<double> RefLpNorm(const std::vector<double>& x, const Shape& shape, int64_t axis, int64_t p) {
  const int64_t a = axis < 0 ? axis + static_cast<int64_t>(shape.size()) : axis;
  std::vector<double> y(x.size());
  for (int64_t i = 0; i < static_cast<int64_t>(x.size()); ++i) {
    Shape at = Unravel(i, shape);
    double norm = 0;
    for (int64_t k = 0; k < shape[a]; ++k) {
      at[a] = k;
      int64_t flat = 0;
      for (size_t d = 0; d < shape.size(); ++d) flat = flat * shape[d] + at[d];
      norm += p == 1 ? std::fabs(x[flat]) : x[flat] * x[flat];
    }
    if (p == 2) norm = std::sqrt(norm);
    y[i] = norm == 0 ? 0 : x[i] / norm;
  }
  return y;
}

void CheckLpNorm(const Shape& shape, std::optional<int64_t> axis, std::optional<int64_t> p, int64_t opset,
                 DataType dtype = DataType::kFloat32) {
  std::vector<double> x = RoundTo(dtype, Random(Product(shape), 33, -3, 3));
  // One line of zeros where the axis allows: its output is 0, not NaN.
  const int64_t a = axis.value_or(-1) < 0 ? axis.value_or(-1) + static_cast<int64_t>(shape.size()) : *axis;
  int64_t inner = 1;
  for (size_t d = static_cast<size_t>(a) + 1; d < shape.size(); ++d) inner *= shape[d];
  for (int64_t k = 0; k < shape[a]; ++k) x[k * inner] = 0;
  runtime::Tensor xt = MakeFloat(dtype, shape, x);
  std::vector<ir::Attribute> attrs;
  if (axis) attrs.push_back(kt::IntAttr("axis", *axis));
  if (p) attrs.push_back(kt::IntAttr("p", *p));
  ir::Node node = kt::MakeNode("LpNormalization", {"x"}, {"y"}, attrs);
  auto r = kt::RunKernel(node, opset, {&xt});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->at(0).shape(), shape);
  std::vector<double> want = RefLpNorm(x, shape, axis.value_or(-1), p.value_or(2));
  ExpectClose(ReadFloat(r->at(0)), want, Tolerance(dtype) * 2, Tolerance(dtype));
  ir::TypeInfo xtype = ops::TensorType(dtype, shape);
  auto inferred = kt::InferNode(node, opset, {&xtype});
  ASSERT_TRUE(inferred.ok()) << inferred.status().ToString();
  EXPECT_EQ(DimsOf(inferred->at(0)), ir::ShapeToString(xtype.shape));
}

TEST(LpNormalization, AgainstReference) {
  for (int64_t opset : {1, 22}) {
    for (int64_t p : {1, 2}) {
      CheckLpNorm({2, 3, 4}, 1, p, opset);
      CheckLpNorm({3, 13, 5}, -3, p, opset);
      CheckLpNorm({127}, 0, p, opset);
      CheckLpNorm({13, 127}, std::nullopt, p, opset);
      CheckLpNorm({4, 13}, -1, p, opset, DataType::kFloat16);
      CheckLpNorm({4, 13}, 0, p, opset, DataType::kBfloat16);
      CheckLpNorm({4, 13}, -2, p, opset, DataType::kFloat64);
    }
  }
  CheckLpNorm({3, 4}, std::nullopt, std::nullopt, 22);  // p = 2, axis = -1
}

TEST(LpNormalization, Errors) {
  runtime::Tensor x = kt::F32({2, 3}, {1, 2, 3, 4, 5, 6});
  auto r = kt::RunKernel(kt::MakeNode("LpNormalization", {"x"}, {"y"}, {kt::IntAttr("p", 3)}), 22, {&x});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().summary().find("p is 3, expected 1 or 2"), std::string::npos) << r.status().ToString();
  EXPECT_NE(r.status().summary().find("node LpNormalization"), std::string::npos) << r.status().ToString();
  r = kt::RunKernel(kt::MakeNode("LpNormalization", {"x"}, {"y"}, {kt::IntAttr("axis", 2)}), 22, {&x});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().summary().find("axis"), std::string::npos) << r.status().ToString();
  r = kt::RunKernel(kt::MakeNode("LpNormalization", {"x"}, {"y"}, {kt::IntAttr("axis", -3)}), 22, {&x});
  ASSERT_FALSE(r.ok());
  runtime::Tensor scalar = kt::F32({}, {1});
  EXPECT_FALSE(kt::RunKernel(kt::MakeNode("LpNormalization", {"x"}, {"y"}), 22, {&scalar}).ok());
  runtime::Tensor xi = kt::MakeTensor(DataType::kInt32, {2}, std::vector<int32_t>{1, 2});
  auto u = kt::RunKernel(kt::MakeNode("LpNormalization", {"x"}, {"y"}), 22, {&xi});
  ASSERT_FALSE(u.ok());
  EXPECT_EQ(u.status().code(), ErrorCode::kUnsupported);
  ir::TypeInfo t = Type(DataType::kFloat32, {S("B"), K(3)});
  EXPECT_FALSE(kt::InferNode(kt::MakeNode("LpNormalization", {"x"}, {"y"}, {kt::IntAttr("p", 0)}), 22, {&t}).ok());
  EXPECT_FALSE(kt::InferNode(kt::MakeNode("LpNormalization", {"x"}, {"y"}, {kt::IntAttr("axis", 2)}), 22, {&t}).ok());
  auto ok = kt::InferNode(kt::MakeNode("LpNormalization", {"x"}, {"y"}, {kt::IntAttr("axis", -2)}), 22, {&t});
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(DimsOf(ok->at(0)), "[B,3]");
}

}  // namespace
}  // namespace vigil::cpu
