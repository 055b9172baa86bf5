// com.microsoft QLinearSoftmax on the CPU: against a float64 reference (both
// opset semantics, several axes, int8 and uint8), onnxruntime's output rule
// (floor(1/y_scale), saturation, axis -1 by default for every opset), exact
// ties, shape inference and errors. The bit-for-bit comparison with
// onnxruntime is in quantized_contrib_test.cpp (golden vectors).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "backends/cpu/kernel_test_util.h"

namespace vigil::cpu::testing {
namespace {

using ir::DataType;

runtime::Tensor Q(DataType t, std::vector<int64_t> shape, const std::vector<int64_t>& v) {
  if (t == DataType::kInt8) return MakeTensor(t, std::move(shape), std::vector<int8_t>(v.begin(), v.end()));
  return MakeTensor(t, std::move(shape), std::vector<uint8_t>(v.begin(), v.end()));
}

std::vector<int64_t> Ints(const runtime::Tensor& t) {
  std::vector<int64_t> v(t.element_count());
  for (size_t i = 0; i < v.size(); ++i) {
    v[i] = t.dtype() == DataType::kInt8 ? t.data<int8_t>()[i] : t.data<uint8_t>()[i];
  }
  return v;
}

ir::Node Softmax(std::vector<ir::Attribute> attrs) {
  ir::Node n = MakeNode("QLinearSoftmax", {"x", "xs", "xz", "ys", "yz"}, {"y"}, std::move(attrs));
  n.domain = "com.microsoft";
  return n;
}

Result<runtime::Tensor> RunSoftmax(const runtime::Tensor& x, float sx, int64_t zx, float sy, int64_t zy,
                            std::vector<ir::Attribute> attrs) {
  runtime::Tensor txs = F32({}, {sx}), tys = F32({}, {sy});
  runtime::Tensor txz = Q(x.dtype(), {}, {zx}), tyz = Q(x.dtype(), {}, {zy});
  VIGIL_ASSIGN_OR_RETURN(std::vector<runtime::Tensor> out,
                         RunKernel(Softmax(std::move(attrs)), 1, {&x, &txs, &txz, &tys, &tyz}));
  return std::move(out[0]);
}

// The integer result for p * floor(1/sy) rounded to r: r + zy, saturated.
int64_t OutputOf(DataType t, double r, int64_t zy) {
  const int64_t v = static_cast<int64_t>(r) + zy;
  return std::min<int64_t>(std::max<int64_t>(v, t == DataType::kInt8 ? -128 : 0), t == DataType::kInt8 ? 127 : 255);
}

double RoundHalfEven(double v) {
  const double f = std::floor(v);
  if (v - f != 0.5) return std::round(v);
  return std::fmod(f, 2.0) == 0 ? f : f + 1;
}

// Softmax over rows of D elements `inner` apart, in float64; returns
// p * floor(1/sy) per element.
std::vector<double> Reference(const std::vector<int64_t>& x, const std::vector<int64_t>& shape, int64_t axis,
                              bool coerce, float sx, float sy) {
  int64_t outer = 1, d = 1, inner = 1;
  for (int64_t i = 0; i < axis; ++i) outer *= shape[i];
  for (size_t i = axis; i < shape.size(); ++i) (coerce || static_cast<int64_t>(i) == axis ? d : inner) *= shape[i];
  std::vector<double> out(x.size());
  const double mult = std::floor(1.0f / sy);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t r = 0; r < inner; ++r) {
      const int64_t base = o * d * inner + r;
      int64_t mx = x[base];
      for (int64_t k = 0; k < d; ++k) mx = std::max(mx, x[base + k * inner]);
      double sum = 0;
      for (int64_t k = 0; k < d; ++k) sum += std::exp(static_cast<double>(sx) * static_cast<double>(x[base + k * inner] - mx));
      for (int64_t k = 0; k < d; ++k) {
        out[base + k * inner] = std::exp(static_cast<double>(sx) * static_cast<double>(x[base + k * inner] - mx)) / sum * mult;
      }
    }
  return out;
}

TEST(QLinearSoftmax, MatchesFloat64ReferenceBothOpsetsAndAxes) {
  struct Case {
    std::vector<int64_t> shape;
    int64_t opset, axis;  // axis -99: the attribute is absent
  };
  const Case cases[] = {{{13, 127}, 13, -1}, {{2, 13, 11}, 13, 1}, {{2, 13, 11}, 13, 0},
                        {{3, 5, 7}, 12, 1},  {{3, 5, 7}, 11, -99}, {{7, 13}, 13, -99}};
  std::mt19937 rng(13);
  int64_t near_ties = 0, total = 0;
  for (DataType t : {DataType::kUint8, DataType::kInt8}) {
    const int64_t lo = t == DataType::kInt8 ? -128 : 0;
    for (const Case& c : cases) {
      for (int rep = 0; rep < 3; ++rep) {
        int64_t n = 1;
        for (int64_t d : c.shape) n *= d;
        std::uniform_int_distribution<int64_t> dist(lo, lo + 255);
        std::vector<int64_t> x(n);
        for (int64_t& v : x) v = dist(rng);
        const float sx = std::uniform_real_distribution<float>(0.01f, 0.3f)(rng);
        const float sy = rep == 0 ? 1.0f / 256 : std::uniform_real_distribution<float>(1.0f / 300, 1.0f / 100)(rng);
        const int64_t zy = rep == 0 ? lo : dist(rng), zx = dist(rng);
        std::vector<ir::Attribute> attrs{IntAttr("opset", c.opset)};
        if (c.axis != -99) attrs.push_back(IntAttr("axis", c.axis));
        auto y = RunSoftmax(Q(t, c.shape, x), sx, zx, sy, zy, attrs);
        ASSERT_TRUE(y.ok()) << y.status().ToString();
        ASSERT_EQ(y.value().shape(), c.shape);
        const int64_t axis = c.axis == -99 ? -1 : c.axis;
        const int64_t ax = axis < 0 ? axis + static_cast<int64_t>(c.shape.size()) : axis;
        const std::vector<double> ref = Reference(x, c.shape, ax, c.opset < 13, sx, sy);
        const std::vector<int64_t> got = Ints(y.value());
        for (size_t i = 0; i < ref.size(); ++i) {
          const int64_t want = OutputOf(t, RoundHalfEven(ref[i]), zy);
          ++total;
          if (got[i] == want) continue;
          // float32 table and sum: a value within 1e-3 of a tie may go either way.
          const double frac = ref[i] - std::floor(ref[i]);
          const bool near = std::abs(frac - 0.5) < 1e-3;
          const int64_t other = OutputOf(t, RoundHalfEven(ref[i]) == std::floor(ref[i]) ? std::floor(ref[i]) + 1
                                                                                        : std::floor(ref[i]),
                                         zy);
          if (near && got[i] == other) {
            ++near_ties;
            continue;
          }
          ADD_FAILURE() << "element " << i << " is " << got[i] << ", expected " << want << " (exact " << ref[i]
                        << ") opset " << c.opset << " axis " << axis;
          break;
        }
      }
    }
  }
  EXPECT_LT(near_ties * 100, total);
}

TEST(QLinearSoftmax, OutputRuleTiesAndSaturation) {
  // Two equal values: p = 1/2 exactly (the float32 sum of two equal entries
  // is exact). y_scale 1 gives the tie 0.5 -> 0 (+ zero point 3).
  for (DataType t : {DataType::kUint8, DataType::kInt8}) {
    runtime::Tensor x = Q(t, {1, 2}, {5, 5});
    auto y = RunSoftmax(x, 0.1f, 0, 1.0f, 3, {IntAttr("opset", 13)});
    ASSERT_TRUE(y.ok()) << y.status().ToString();
    EXPECT_EQ(Ints(y.value()), (std::vector<int64_t>{3, 3}));
    // The output multiplier is floor(1/y_scale): p ~ 1 times floor(3.9) = 3.
    runtime::Tensor d = Q(t, {1, 2}, {t == DataType::kInt8 ? 127 : 255, t == DataType::kInt8 ? -128 : 0});
    y = RunSoftmax(d, 1.0f, 0, 1.0f / 3.9f, 0, {IntAttr("opset", 13)});
    ASSERT_TRUE(y.ok());
    EXPECT_EQ(Ints(y.value()), (std::vector<int64_t>{3, 0}));
  }
  // One dominant element: p * 256 rounds to 256. uint8 with zero point 0
  // saturates to 255; int8 with zero point -128 gives 128, saturated to 127.
  runtime::Tensor u = Q(DataType::kUint8, {3}, {255, 0, 0});
  auto y = RunSoftmax(u, 1.0f, 0, 1.0f / 256, 0, {IntAttr("opset", 13)});
  ASSERT_TRUE(y.ok());
  EXPECT_EQ(Ints(y.value()), (std::vector<int64_t>{255, 0, 0}));
  runtime::Tensor s = Q(DataType::kInt8, {3}, {127, -128, -128});
  y = RunSoftmax(s, 1.0f, 0, 1.0f / 256, -128, {IntAttr("opset", 13)});
  ASSERT_TRUE(y.ok());
  EXPECT_EQ(Ints(y.value()), (std::vector<int64_t>{127, -128, -128}));
  y = RunSoftmax(s, 1.0f, 0, 1.0f / 300, 0, {IntAttr("opset", 13)});
  ASSERT_TRUE(y.ok());
  EXPECT_EQ(Ints(y.value()), (std::vector<int64_t>{127, 0, 0}));
  // X's zero point does not matter (softmax is shift invariant).
  runtime::Tensor r = Q(DataType::kUint8, {2, 13}, std::vector<int64_t>{3, 9, 27, 81, 243, 1, 2, 4, 8, 16, 32, 64, 128,
                                                                         0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 255});
  auto a = RunSoftmax(r, 0.05f, 0, 1.0f / 256, 0, {IntAttr("opset", 13)});
  auto b = RunSoftmax(r, 0.05f, 200, 1.0f / 256, 0, {IntAttr("opset", 13)});
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(Ints(a.value()), Ints(b.value()));
}

TEST(QLinearSoftmax, ShapeInferenceAndErrorsNameTheInput) {
  using ir::Dim;
  const ir::TypeInfo x = ops::TensorType(DataType::kInt8, std::vector<Dim>{Dim::Symbolic("N"), Dim::Known(13)});
  const ir::TypeInfo s = ops::TensorType(DataType::kFloat32, std::vector<int64_t>{});
  const ir::TypeInfo s2 = ops::TensorType(DataType::kFloat32, std::vector<int64_t>{2});
  const ir::TypeInfo z = ops::TensorType(DataType::kInt8, std::vector<int64_t>{});
  const ir::TypeInfo zu = ops::TensorType(DataType::kUint8, std::vector<int64_t>{});
  const ir::TypeInfo f = ops::TensorType(DataType::kFloat32, std::vector<int64_t>{2, 13});
  auto out = InferNode(Softmax({IntAttr("opset", 13)}), 1, {&x, &s, &z, &s, &z});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(out.value()[0].elem_type, DataType::kInt8);
  ASSERT_EQ(out.value()[0].shape.dims.size(), 2u);
  EXPECT_EQ(out.value()[0].shape.dims[0].param, "N");
  EXPECT_EQ(out.value()[0].shape.dims[1].value, 13);
  auto expect_error = [](const Result<std::vector<ir::TypeInfo>>& r, const std::string& fragment) {
    ASSERT_FALSE(r.ok()) << "expected an error containing '" << fragment << "'";
    const std::string msg = r.status().ToString();
    EXPECT_NE(msg.find("QLinearSoftmax"), std::string::npos) << msg;
    EXPECT_NE(msg.find(fragment), std::string::npos) << msg;
  };
  expect_error(InferNode(Softmax({}), 1, {&x, &s, &z, &s, &z}), "opset");
  expect_error(InferNode(Softmax({IntAttr("opset", 13), IntAttr("axis", 2)}), 1, {&x, &s, &z, &s, &z}), "axis");
  expect_error(InferNode(Softmax({IntAttr("opset", 13)}), 1, {&x, &s, &z, &s2, &z}), "input 3 (Y_scale)");
  expect_error(InferNode(Softmax({IntAttr("opset", 13)}), 1, {&x, &s, &z, &s, &zu}), "input 4 (Y_zero_point)");
  expect_error(InferNode(Softmax({IntAttr("opset", 13)}), 1, {&f, &s, &z, &s, &z}), "expected int8 or uint8");
  // The kernel checks the same at run time.
  runtime::Tensor xt = Q(DataType::kInt8, {2, 13}, std::vector<int64_t>(26, 1));
  runtime::Tensor ts = F32({}, {0.1f}), ts2 = F32({2}, {0.1f, 0.2f}), tz = Q(DataType::kInt8, {}, {0});
  auto r = RunKernel(Softmax({IntAttr("opset", 13)}), 1, {&xt, &ts, &tz, &ts2, &tz});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().ToString().find("input 3 (Y_scale)"), std::string::npos) << r.status().ToString();
  r = RunKernel(Softmax({}), 1, {&xt, &ts, &tz, &ts, &tz});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().ToString().find("opset"), std::string::npos) << r.status().ToString();
}

}  // namespace
}  // namespace vigil::cpu::testing
