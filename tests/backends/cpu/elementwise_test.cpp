// Unary math and activation kernels against float64 references computed
// here, for every float dtype (and the integer dtypes where the op takes
// them), odd sizes, empty tensors and each attribute that changes the path.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "backends/cpu/fast/fast_kernels.h"
#include "backends/cpu/elementwise_test_util.h"

namespace vigil::cpu::testing {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

const std::vector<std::vector<int64_t>>& TestShapes() {
  static const std::vector<std::vector<int64_t>> k = {{}, {0}, {1}, {13}, {2, 1, 127}, {3, 0, 5}};
  return k;
}

struct UnaryCase {
  std::string op;
  int opset;
  std::function<double(double)> ref;
  double lo, hi;  // input range
  std::vector<ir::Attribute> attrs = {};
};

// Runs `c` on every float dtype and shape; the reference sees the input as
// the dtype holds it.
void CheckFloatUnary(const UnaryCase& c) {
  for (DataType d : FloatDtypes()) {
    for (const auto& shape : TestShapes()) {
      std::string what = c.op + " " + DtypeName(d) + " " + ShapeString(shape);
      auto x = RandomValues(static_cast<size_t>(Product(shape)), c.lo, c.hi, 7);
      for (double& v : x) v = Quantize(d, v);
      runtime::Tensor in = TensorOf(d, shape, x);
      auto out = RunOk(MakeNode(c.op, {"x"}, {"y"}, c.attrs), c.opset, {&in});
      ASSERT_EQ(out.size(), 1u) << what;
      EXPECT_EQ(out[0].dtype(), d) << what;
      EXPECT_EQ(out[0].shape(), shape) << what;
      std::vector<double> want(x.size());
      for (size_t i = 0; i < x.size(); ++i) want[i] = c.ref(x[i]);
      ExpectNear(DoublesOf(out[0]), want, ToleranceFor(d), what);
    }
  }
}

double Sigmoid(double x) { return 1 / (1 + std::exp(-x)); }
double Softplus(double x) { return std::log1p(std::exp(-std::fabs(x))) + std::max(x, 0.0); }
double HardSigmoid(double x, double a, double b) { return std::max(0.0, std::min(1.0, a * x + b)); }

TEST(ElementwiseUnary, FloatMath) {
  const std::vector<UnaryCase> cases = {
      {"Abs", 13, [](double x) { return std::fabs(x); }, -5, 5},
      {"Neg", 13, [](double x) { return -x; }, -5, 5},
      {"Sign", 13, [](double x) { return x > 0 ? 1.0 : (x < 0 ? -1.0 : 0.0); }, -3, 3},
      {"Reciprocal", 13, [](double x) { return 1 / x; }, 0.1, 4},
      {"Floor", 13, [](double x) { return std::floor(x); }, -5, 5},
      {"Ceil", 13, [](double x) { return std::ceil(x); }, -5, 5},
      {"Round", 11, [](double x) { return std::nearbyint(x); }, -5, 5},
      {"Sqrt", 13, [](double x) { return std::sqrt(x); }, 0, 9},
      {"Exp", 13, [](double x) { return std::exp(x); }, -5, 5},
      {"Log", 13, [](double x) { return std::log(x); }, 0.01, 9},
      {"Sin", 7, [](double x) { return std::sin(x); }, -3, 3},
      {"Cos", 7, [](double x) { return std::cos(x); }, -3, 3},
      {"Tan", 7, [](double x) { return std::tan(x); }, -1.2, 1.2},
      {"Asin", 7, [](double x) { return std::asin(x); }, -0.99, 0.99},
      {"Acos", 7, [](double x) { return std::acos(x); }, -0.99, 0.99},
      {"Atan", 7, [](double x) { return std::atan(x); }, -5, 5},
      {"Sinh", 9, [](double x) { return std::sinh(x); }, -3, 3},
      {"Cosh", 9, [](double x) { return std::cosh(x); }, -3, 3},
      {"Asinh", 9, [](double x) { return std::asinh(x); }, -5, 5},
      {"Acosh", 9, [](double x) { return std::acosh(x); }, 1, 9},
      {"Atanh", 9, [](double x) { return std::atanh(x); }, -0.9, 0.9},
      {"Erf", 13, [](double x) { return std::erf(x); }, -3, 3},
  };
  for (const auto& c : cases) CheckFloatUnary(c);
}

TEST(ElementwiseActivation, FloatActivations) {
  const double selu_a = 1.67326319217681884765625, selu_g = 1.05070102214813232421875;
  const std::vector<UnaryCase> cases = {
      {"Relu", 14, [](double x) { return std::max(x, 0.0); }, -5, 5},
      {"Relu", 6, [](double x) { return std::max(x, 0.0); }, -5, 5},
      {"LeakyRelu", 16, [](double x) { return x < 0 ? double(0.01f) * x : x; }, -5, 5},  // attributes are float
      {"LeakyRelu", 16, [](double x) { return x < 0 ? 0.25 * x : x; }, -5, 5, {FloatAttr("alpha", 0.25f)}},
      {"ThresholdedRelu", 10, [](double x) { return x > 1 ? x : 0; }, -3, 3},
      {"ThresholdedRelu", 10, [](double x) { return x > -0.5 ? x : 0; }, -3, 3, {FloatAttr("alpha", -0.5f)}},
      {"Elu", 6, [](double x) { return x < 0 ? std::expm1(x) : x; }, -5, 5},
      {"Elu", 6, [](double x) { return x < 0 ? 0.5 * std::expm1(x) : x; }, -5, 5, {FloatAttr("alpha", 0.5f)}},
      {"Selu", 6, [=](double x) { return x > 0 ? selu_g * x : selu_g * selu_a * std::expm1(x); }, -5, 5},
      {"Selu", 6, [](double x) { return x > 0 ? 3 * x : 3 * 2 * std::expm1(x); }, -5, 5,
       {FloatAttr("alpha", 2), FloatAttr("gamma", 3)}},
      {"Celu", 12, [](double x) { return std::max(0.0, x) + std::min(0.0, std::expm1(x)); }, -5, 5},
      {"Celu", 12, [](double x) { return std::max(0.0, x) + std::min(0.0, 2 * std::expm1(x / 2)); }, -5, 5,
       {FloatAttr("alpha", 2)}},
      {"Sigmoid", 13, Sigmoid, -8, 8},
      {"HardSigmoid", 6, [](double x) { return HardSigmoid(x, double(0.2f), 0.5); }, -5, 5},
      {"HardSigmoid", 6, [](double x) { return HardSigmoid(x, 0.5, 0.25); }, -5, 5,
       {FloatAttr("alpha", 0.5f), FloatAttr("beta", 0.25f)}},
      {"HardSwish", 14, [](double x) { return x * HardSigmoid(x, 1.0 / 6, 0.5); }, -5, 5},
      {"Swish", 24, [](double x) { return x / (1 + std::exp(-x)); }, -8, 8},
      {"Swish", 24, [](double x) { return x / (1 + std::exp(-double(1.702f) * x)); }, -8, 8,
       {FloatAttr("alpha", 1.702f)}},
      {"Swish", 24, [](double x) { return x / 2; }, -8, 8, {FloatAttr("alpha", 0)}},
      {"Softplus", 1, Softplus, -8, 8},
      {"Softsign", 1, [](double x) { return x / (1 + std::fabs(x)); }, -5, 5},
      {"Tanh", 13, [](double x) { return std::tanh(x); }, -4, 4},
      {"Mish", 18, [](double x) { return x * std::tanh(Softplus(x)); }, -5, 5},
      {"Gelu", 20, [](double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }, -4, 4},
      {"Gelu", 20, [](double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }, -4, 4,
       {StringAttr("approximate", "none")}},
      {"Gelu", 20,
       [](double x) { return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x))); }, -4, 4,
       {StringAttr("approximate", "tanh")}},
      {"Shrink", 9, [](double x) { return x < -0.5 ? x : (x > 0.5 ? x : 0); }, -2, 2},
      {"Shrink", 9, [](double x) { return x < -1.5 ? x + 1.5 : (x > 1.5 ? x - 1.5 : 0); }, -3, 3,
       {FloatAttr("lambd", 1.5f), FloatAttr("bias", 1.5f)}},
      {"Clip", 13, [](double x) { return x; }, -5, 5},
      {"Clip", 6, [](double x) { return std::clamp(x, -1.0, 2.0); }, -5, 5,
       {FloatAttr("min", -1), FloatAttr("max", 2)}},
      {"Clip", 6, [](double x) { return std::max(x, -1.0); }, -5, 5, {FloatAttr("min", -1)}},
      {"Clip", 6, [](double x) { return std::min(x, 0.5); }, -5, 5, {FloatAttr("max", 0.5)}},
      {"Identity", 13, [](double x) { return x; }, -5, 5},
  };
  for (const auto& c : cases) CheckFloatUnary(c);
}

// Special values: NaN propagation, infinities, halves, signed zero.
struct SpecialCase {
  std::string op;
  int opset;
  std::vector<double> in, want;
  std::vector<ir::Attribute> attrs = {};
};

TEST(ElementwiseUnary, SpecialValues) {
  const std::vector<SpecialCase> cases = {
      {"Abs", 13, {kNaN, -kInf, -0.0, -2}, {kNaN, kInf, 0, 2}},
      {"Round", 11, {0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 2.4, -2.6, kNaN}, {0, 2, 2, -0.0, -2, -2, 2, -3, kNaN}},
      {"Sign", 13, {kNaN, -kInf, kInf, 0}, {kNaN, -1, 1, 0}},
      {"Relu", 14, {kNaN, -kInf, kInf, -0.5}, {kNaN, 0, kInf, 0}},
      {"Sigmoid", 13, {-1000, 1000, kNaN, 0}, {0, 1, kNaN, 0.5}},
      {"Softplus", 1, {-1000, 1000, kNaN, 0}, {0, 1000, kNaN, std::log(2.0)}},
      {"Tanh", 13, {-1000, 1000, kNaN}, {-1, 1, kNaN}},
      {"Mish", 18, {1000, -1000, kNaN}, {1000, -0.0, kNaN}},
      {"Swish", 24, {1000, -1000, kNaN, kInf}, {1000, -0.0, kNaN, kInf}},
      {"Log", 13, {0, -1, kInf}, {-kInf, kNaN, kInf}},
      {"Sqrt", 13, {-1, kInf}, {kNaN, kInf}},
      {"Reciprocal", 13, {0, -0.0}, {kInf, -kInf}},
      {"Exp", 13, {-kInf, kInf, 1000}, {0, kInf, kInf}},
      {"Clip", 13, {kNaN, kInf, -kInf}, {kNaN, kInf, -kInf}},
      {"HardSigmoid", 6, {kNaN, kInf, -kInf}, {kNaN, 1, 0}},
      {"Elu", 6, {-kInf, kNaN}, {-1, kNaN}},
      {"LeakyRelu", 16, {kNaN, -kInf}, {kNaN, -kInf}},
  };
  for (const auto& c : cases) {
    for (DataType d : FloatDtypes()) {
      std::string what = c.op + " special " + DtypeName(d);
      runtime::Tensor in = TensorOf(d, {static_cast<int64_t>(c.in.size())}, c.in);
      auto out = RunOk(MakeNode(c.op, {"x"}, {"y"}, c.attrs), c.opset, {&in});
      ASSERT_EQ(out.size(), 1u) << what;
      ExpectNear(DoublesOf(out[0]), c.want, ToleranceFor(d), what);
    }
  }
}

// The optimised float32 Sigmoid (fast/activation.cpp, its own exp) against
// the reference code (the C library's exp): within 4 units in the last
// place everywhere, subnormal results included; 0 and 1 at the extremes;
// NaN stays NaN. Also in place.
// The largest distance in units in the last place between y[i] and f(x[i])
// in float64 rounded to float32, failing the test where it passes `bound`
// or where the signs differ; a NaN x must give NaN.
int64_t WorstUlpsAgainstCorrectlyRounded(const std::vector<float>& x, const std::vector<float>& y,
                                         double (*f)(double), int64_t bound) {
  int64_t worst = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    if (std::isnan(x[i])) {
      EXPECT_TRUE(std::isnan(y[i]));
      continue;
    }
    const float want = static_cast<float>(f(static_cast<double>(x[i])));
    EXPECT_EQ(std::signbit(y[i]), std::signbit(want)) << "x " << x[i];
    int32_t ua, ub;
    const float ay = std::fabs(y[i]), aw = std::fabs(want);
    std::memcpy(&ua, &ay, 4);
    std::memcpy(&ub, &aw, 4);
    const int64_t ulps = std::abs(static_cast<int64_t>(ua) - ub);
    worst = std::max(worst, ulps);
    if (ulps > bound) {
      ADD_FAILURE() << "x " << x[i] << ": optimised " << y[i] << ", correctly rounded " << want;
      return worst;
    }
  }
  return worst;
}

// The optimised float32 tanh (fast/activation.cpp) against std::tanh in
// float64 rounded to float32: within 2 units in the last place from 0 to
// beyond 9 (where both are 1), on both sides of the 0.625 switch, subnormal
// inputs included; the sign of -0 kept; +-inf to +-1; NaN stays NaN.
TEST(ElementwiseActivation, OptimisedTanhWithinTwoUlpOfTheCorrectlyRounded) {
  std::vector<float> x;
  for (int i = 0; i <= 200000; ++i) x.push_back(-12.0f + 24.0f * static_cast<float>(i) / 200000.0f);
  for (float v = 1e-40f; v < 1.0f; v *= 1.37f) {
    x.push_back(v);
    x.push_back(-v);
  }
  for (float v : {0.0f, -0.0f, 0.625f, -0.625f, std::nextafter(0.625f, 0.0f), 88.0f, -88.0f, 1e30f,
                  std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                  std::numeric_limits<float>::quiet_NaN()}) {
    x.push_back(v);
  }
  std::vector<float> y(x.size());
  fast::TanhFloat(x.data(), y.data(), x.size());
  const int64_t worst = WorstUlpsAgainstCorrectlyRounded(x, y, [](double v) { return std::tanh(v); }, 2);
  EXPECT_EQ(y[x.size() - 3], 1.0f);
  EXPECT_EQ(y[x.size() - 2], -1.0f);
  std::printf("fast tanh: worst %lld ulp over %zu values\n", static_cast<long long>(worst), x.size());
}

// The optimised float32 erf (fast/activation.cpp) against std::erf in
// float64 rounded to float32: within 2 units in the last place over 2
// million values from -5 to 5, on both sides of each switch (0.875, 2,
// 3.9375), subnormal inputs; the sign of -0 kept; +-inf to +-1; NaN stays
// NaN. Then the Erf node, optimised against the reference code (the C
// library's erff): within 3.
TEST(ElementwiseActivation, OptimisedErfWithinTwoUlpOfTheCorrectlyRounded) {
  std::vector<float> x;
  for (int i = 0; i <= 2000000; ++i) x.push_back(-5.0f + 10.0f * static_cast<float>(i) / 2000000.0f);
  for (float v = 1e-40f; v < 1.0f; v *= 1.37f) {
    x.push_back(v);
    x.push_back(-v);
  }
  for (float edge : {0.875f, 2.0f, 3.9375f}) {
    for (float v = std::nextafter(edge, 0.0f), k = 0; k < 4; ++k, v = std::nextafter(v, 10.0f)) {
      x.push_back(v);
      x.push_back(-v);
    }
  }
  for (float v : {0.0f, -0.0f, 1e30f, std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                  std::numeric_limits<float>::quiet_NaN()}) {
    x.push_back(v);
  }
  std::vector<float> y(x.size());
  fast::ErfFloat(x.data(), y.data(), x.size());
  const int64_t worst = WorstUlpsAgainstCorrectlyRounded(x, y, [](double v) { return std::erf(v); }, 2);
  EXPECT_EQ(y[x.size() - 4], 1.0f);
  EXPECT_EQ(y[x.size() - 3], 1.0f);
  EXPECT_EQ(y[x.size() - 2], -1.0f);
  std::printf("fast erf: worst %lld ulp over %zu values\n", static_cast<long long>(worst), x.size());
  runtime::Tensor xt = F32({static_cast<int64_t>(x.size())}, x);
  ir::Node node = MakeNode("Erf", {"x"}, {"y"});
  auto fast = RunKernel(node, 13, {&xt}, /*optimised=*/true);
  auto reference = RunKernel(node, 13, {&xt}, /*optimised=*/false);
  ASSERT_TRUE(fast.ok() && reference.ok());
  std::vector<float> a = Values<float>(fast->at(0)), b = Values<float>(reference->at(0));
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(b[i])) {
      EXPECT_TRUE(std::isnan(a[i]));
      continue;
    }
    int32_t ua, ub;
    std::memcpy(&ua, &a[i], 4);
    std::memcpy(&ub, &b[i], 4);
    ASSERT_LE(std::abs(static_cast<int64_t>(ua) - ub), 3) << "x " << x[i] << ": " << a[i] << " vs " << b[i];
  }
}

// The optimised float32 GELU (approximate "none", fast/activation.cpp)
// against the reference code: within 4 units in the last place, or 3e-7 |x|
// where 1 + erf(x / sqrt(2)) cancels (erf's 3 units of 1.2e-7 near -1,
// times 0.5 |x|); NaN stays NaN, -inf gives NaN in both (-inf * 0), +inf
// gives +inf.
TEST(ElementwiseActivation, OptimisedGeluWithinFourUlpOfTheReference) {
  std::vector<float> x;
  for (int i = 0; i <= 400000; ++i) x.push_back(-10.0f + 20.0f * static_cast<float>(i) / 400000.0f);
  for (float v : {0.0f, -0.0f, 1e-30f, -1e-30f, 1e-40f, 100.0f, -100.0f, std::numeric_limits<float>::infinity(),
                  -std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()}) {
    x.push_back(v);
  }
  runtime::Tensor xt = F32({static_cast<int64_t>(x.size())}, x);
  ir::Node node = MakeNode("Gelu", {"x"}, {"y"});
  auto fast = RunKernel(node, 20, {&xt}, /*optimised=*/true);
  auto reference = RunKernel(node, 20, {&xt}, /*optimised=*/false);
  ASSERT_TRUE(fast.ok() && reference.ok());
  std::vector<float> a = Values<float>(fast->at(0)), b = Values<float>(reference->at(0));
  int64_t worst = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(b[i])) {
      EXPECT_TRUE(std::isnan(a[i])) << "x " << x[i];
      continue;
    }
    int32_t ua, ub;
    std::memcpy(&ua, &a[i], 4);
    std::memcpy(&ub, &b[i], 4);
    const int64_t ulps = std::abs(static_cast<int64_t>(ua) - ub);
    if (ulps <= 4) {
      worst = std::max(worst, ulps);
      continue;
    }
    ASSERT_LE(std::fabs(a[i] - b[i]), 3e-7 * std::fabs(x[i])) << "x " << x[i] << ": " << a[i] << " vs " << b[i];
  }
  std::printf("fast gelu: worst %lld ulp where not cancelling, over %zu values\n", static_cast<long long>(worst),
              x.size());
}

TEST(ElementwiseActivation, OptimisedSigmoidWithinFourUlpOfTheReference) {
  std::vector<float> x;
  for (int i = 0; i <= 200000; ++i) x.push_back(-110.0f + 220.0f * static_cast<float>(i) / 200000.0f);
  for (float v : {0.0f, -0.0f, 1e-30f, -1e-30f, 87.0f, -87.5f, -103.9f, -104.0f, -150.0f, 150.0f,
                  std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                  std::numeric_limits<float>::quiet_NaN()}) {
    x.push_back(v);
  }
  runtime::Tensor xt = F32({static_cast<int64_t>(x.size())}, x);
  ir::Node node = MakeNode("Sigmoid", {"x"}, {"y"});
  auto fast = RunKernel(node, 13, {&xt}, /*optimised=*/true);
  auto reference = RunKernel(node, 13, {&xt}, /*optimised=*/false);
  ASSERT_TRUE(fast.ok() && reference.ok());
  std::vector<float> a = Values<float>(fast->at(0)), b = Values<float>(reference->at(0));
  ASSERT_EQ(a.size(), b.size());
  int64_t worst = 0, subnormal = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(b[i])) {
      EXPECT_TRUE(std::isnan(a[i])) << "x " << x[i];
      continue;
    }
    ASSERT_GE(a[i], 0.0f) << "x " << x[i];  // both non-negative: bit patterns order as the values
    int32_t ua, ub;
    std::memcpy(&ua, &a[i], 4);
    std::memcpy(&ub, &b[i], 4);
    const int64_t ulps = std::abs(static_cast<int64_t>(ua) - ub);
    worst = std::max(worst, ulps);
    ASSERT_LE(ulps, 4) << "x " << x[i] << ": optimised " << a[i] << ", reference " << b[i];
    subnormal += b[i] > 0 && b[i] < std::numeric_limits<float>::min();
  }
  EXPECT_GT(subnormal, 100) << "the range should reach subnormal results";
  EXPECT_EQ(a[a.size() - 3], 1.0f);  // +inf
  EXPECT_EQ(a[a.size() - 2], 0.0f);  // -inf
  // In place: the output may be the input.
  std::vector<float> inplace = x;
  fast::SigmoidFloat(inplace.data(), inplace.data(), inplace.size());
  EXPECT_EQ(std::memcmp(inplace.data(), a.data(), a.size() * sizeof(float)), 0);
  std::printf("optimised Sigmoid: at most %lld ulp from the reference over %zu values\n",
              static_cast<long long>(worst), a.size());
}

TEST(ElementwiseUnary, IsNaNAndIsInf) {
  const std::vector<double> x = {kNaN, kInf, -kInf, 0, -1, 1000};
  struct Case {
    std::string op;
    std::vector<ir::Attribute> attrs;
    std::vector<double> want;
  };
  const std::vector<Case> cases = {
      {"IsNaN", {}, {1, 0, 0, 0, 0, 0}},
      {"IsInf", {}, {0, 1, 1, 0, 0, 0}},
      {"IsInf", {IntAttr("detect_negative", 0)}, {0, 1, 0, 0, 0, 0}},
      {"IsInf", {IntAttr("detect_positive", 0)}, {0, 0, 1, 0, 0, 0}},
      {"IsInf", {IntAttr("detect_positive", 0), IntAttr("detect_negative", 0)}, {0, 0, 0, 0, 0, 0}},
  };
  for (const auto& c : cases) {
    for (DataType d : FloatDtypes()) {
      runtime::Tensor in = TensorOf(d, {2, 3}, x);
      auto out = RunOk(MakeNode(c.op, {"x"}, {"y"}, c.attrs), 20, {&in});
      ASSERT_EQ(out.size(), 1u);
      EXPECT_EQ(out[0].dtype(), DataType::kBool);
      EXPECT_EQ(out[0].shape(), (std::vector<int64_t>{2, 3}));
      ExpectNear(DoublesOf(out[0]), c.want, {0, 0}, c.op + " " + DtypeName(d));
    }
  }
}

// Integer dtypes for the ops that take them; values stay in every dtype's
// range, extremes are tested separately below.
TEST(ElementwiseUnary, IntegerOps) {
  const std::vector<UnaryCase> cases = {
      {"Abs", 13, [](double x) { return std::fabs(x); }, -100, 100},
      {"Neg", 13, [](double x) { return -x; }, -100, 100},
      {"Sign", 13, [](double x) { return x > 0 ? 1.0 : (x < 0 ? -1.0 : 0.0); }, -100, 100},
      {"Relu", 14, [](double x) { return std::max(x, 0.0); }, -100, 100},
      {"Erf", 13, [](double x) { return std::trunc(std::erf(x)); }, -100, 100},
      {"Shrink", 9, [](double x) { return x < -2.5 ? std::trunc(x + 1.5) : (x > 2.5 ? std::trunc(x - 1.5) : 0); },
       -100, 100, {FloatAttr("lambd", 2.5f), FloatAttr("bias", 1.5f)}},
      {"Clip", 13, [](double x) { return x; }, -100, 100},
      {"Identity", 13, [](double x) { return x; }, -100, 100},
  };
  for (const auto& c : cases) {
    for (DataType d : IntDtypes()) {
      bool is_unsigned = IsUnsigned(d);
      if (is_unsigned && (c.op == "Neg" || c.op == "Relu")) continue;  // signed only
      std::string what = c.op + " " + DtypeName(d);
      auto x = RandomValues(127, is_unsigned ? 0 : c.lo, c.hi, 3, /*integral=*/true);
      runtime::Tensor in = TensorOf(d, {127}, x);
      auto out = RunOk(MakeNode(c.op, {"x"}, {"y"}, c.attrs), c.opset, {&in});
      ASSERT_EQ(out.size(), 1u) << what;
      EXPECT_EQ(out[0].dtype(), d) << what;
      std::vector<double> want(x.size());
      for (size_t i = 0; i < x.size(); ++i) want[i] = c.ref(x[i]);
      ExpectNear(DoublesOf(out[0]), want, {0, 0}, what);
    }
  }
}

TEST(ElementwiseUnary, IntegerExtremesWrap) {
  runtime::Tensor in = MakeTensor<int32_t>(DataType::kInt32, {3}, {INT32_MIN, INT32_MAX, -1});
  auto neg = RunOk(MakeNode("Neg", {"x"}, {"y"}), 13, {&in});
  ASSERT_EQ(neg.size(), 1u);
  EXPECT_EQ(Values<int32_t>(neg[0]), (std::vector<int32_t>{INT32_MIN, -INT32_MAX, 1}));
  auto abs = RunOk(MakeNode("Abs", {"x"}, {"y"}), 13, {&in});
  ASSERT_EQ(abs.size(), 1u);
  EXPECT_EQ(Values<int32_t>(abs[0]), (std::vector<int32_t>{INT32_MIN, INT32_MAX, 1}));
  runtime::Tensor i8 = MakeTensor<int8_t>(DataType::kInt8, {3}, {-128, 127, 0});
  auto bnot = RunOk(MakeNode("BitwiseNot", {"x"}, {"y"}), 18, {&i8});
  ASSERT_EQ(bnot.size(), 1u);
  EXPECT_EQ(Values<int8_t>(bnot[0]), (std::vector<int8_t>{127, -128, -1}));
  runtime::Tensor u16 = MakeTensor<uint16_t>(DataType::kUint16, {2}, {0, 0x00FF});
  auto unot = RunOk(MakeNode("BitwiseNot", {"x"}, {"y"}), 18, {&u16});
  ASSERT_EQ(unot.size(), 1u);
  EXPECT_EQ(Values<uint16_t>(unot[0]), (std::vector<uint16_t>{0xFFFF, 0xFF00}));
}

TEST(ElementwiseUnary, NotReadsAnyNonZeroByteAsTrue) {
  runtime::Tensor in = MakeTensor<uint8_t>(DataType::kBool, {4}, {0, 1, 2, 255});
  auto out = RunOk(MakeNode("Not", {"x"}, {"y"}), 1, {&in});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].dtype(), DataType::kBool);
  EXPECT_EQ(Values<uint8_t>(out[0]), (std::vector<uint8_t>{1, 0, 0, 0}));
}

// --- Clip 11+ -------------------------------------------------------------------

TEST(ElementwiseActivation, ClipInputs) {
  for (DataType d : {DataType::kFloat32, DataType::kFloat16, DataType::kInt8, DataType::kUint8, DataType::kInt64}) {
    auto x = RandomValues(13, IsUnsigned(d) ? 0 : -50, 50, 11, /*integral=*/true);
    runtime::Tensor in = TensorOf(d, {13}, x);
    runtime::Tensor lo = TensorOf(d, {}, {IsUnsigned(d) ? 5.0 : -7.0});
    runtime::Tensor hi = TensorOf(d, {1}, {20});  // a 1-element tensor is accepted as a scalar
    struct Case {
      const runtime::Tensor* lo;
      const runtime::Tensor* hi;
    };
    for (Case c : {Case{&lo, &hi}, Case{&lo, nullptr}, Case{nullptr, &hi}, Case{nullptr, nullptr}}) {
      std::vector<std::string> names = {"x", c.lo ? "lo" : "", c.hi ? "hi" : ""};
      auto out = RunOk(MakeNode("Clip", names, {"y"}), 13, {&in, c.lo, c.hi});
      ASSERT_EQ(out.size(), 1u);
      std::vector<double> want = x;
      for (double& v : want) {
        if (c.lo) v = std::max(v, DoublesOf(lo)[0]);
        if (c.hi) v = std::min(v, 20.0);
      }
      ExpectNear(DoublesOf(out[0]), want, ToleranceFor(d), "Clip " + DtypeName(d));
    }
  }
}

TEST(ElementwiseActivation, ClipMinAboveMaxGivesMax) {
  runtime::Tensor in = F32({4}, {-10, 0, 3, 10});
  runtime::Tensor lo = F32({}, {5});
  runtime::Tensor hi = F32({}, {1});
  auto out = RunOk(MakeNode("Clip", {"x", "lo", "hi"}, {"y"}), 13, {&in, &lo, &hi});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(Values<float>(out[0]), (std::vector<float>{1, 1, 1, 1}));
}

TEST(ElementwiseActivation, ClipBadBoundsFail) {
  runtime::Tensor in = F32({2}, {1, 2});
  runtime::Tensor two = F32({2}, {0, 1});
  runtime::Tensor wrong_type = I64({}, {0});
  ExpectRunFails(MakeNode("Clip", {"x", "lo"}, {"y"}), 13, {&in, &two}, "must be a scalar");
  ExpectRunFails(MakeNode("Clip", {"x", "lo"}, {"y"}), 13, {&in, &wrong_type}, "dtype int64");
}

TEST(ElementwiseActivation, IdentityIsAViewOfItsInput) {
  runtime::Tensor in = I64({2, 2}, {1, 2, 3, 4});
  auto out = RunOk(MakeNode("Identity", {"x"}, {"y"}), 21, {&in});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].raw_data(), in.raw_data());
  EXPECT_EQ(out[0].shape(), in.shape());
  EXPECT_EQ(out[0].dtype(), DataType::kInt64);
}

TEST(ElementwiseActivation, BadAttributesFail) {
  runtime::Tensor in = F32({2}, {1, 2});
  ExpectRunFails(MakeNode("Gelu", {"x"}, {"y"}, {StringAttr("approximate", "erf")}), 20, {&in}, "approximate");
  ExpectRunFails(MakeNode("Celu", {"x"}, {"y"}, {FloatAttr("alpha", 0)}), 12, {&in}, "alpha");
  // An attribute of the wrong type names the attribute.
  ExpectRunFails(MakeNode("LeakyRelu", {"x"}, {"y"}, {IntAttr("alpha", 1)}), 16, {&in}, "alpha");
}

TEST(ElementwiseUnary, UnsupportedDtypesAreReported) {
  runtime::Tensor ints = I64({2}, {1, 2});
  runtime::Tensor floats = F32({2}, {1, 2});
  for (const char* op : {"Sqrt", "Exp", "Sigmoid", "IsNaN", "Floor"}) {
    auto r = RunKernel(MakeNode(op, {"x"}, {"y"}), 20, {&ints});
    ASSERT_FALSE(r.ok()) << op;
    EXPECT_EQ(r.status().code(), ErrorCode::kUnsupported) << op;
    EXPECT_NE(r.status().summary().find("int64"), std::string::npos) << r.status().ToString();
  }
  for (const char* op : {"Not", "BitwiseNot"}) {
    auto r = RunKernel(MakeNode(op, {"x"}, {"y"}), 20, {&floats});
    ASSERT_FALSE(r.ok()) << op;
    EXPECT_EQ(r.status().code(), ErrorCode::kUnsupported) << op;
  }
}

}  // namespace
}  // namespace vigil::cpu::testing
