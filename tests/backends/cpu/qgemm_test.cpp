// com.microsoft QGemm on the CPU against a float64 reference: int8 and uint8
// A, int8 and uint8 B with per-tensor and per-column scales and zero points,
// int32 bias of every broadcast shape, transA/transB/alpha, quantized and
// float outputs; shape inference and errors. Bit-exactness with onnxruntime
// is checked by tools/quant/compare_ort.py.
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

ir::Node QGemm(size_t inputs, std::vector<ir::Attribute> attrs) {
  std::vector<std::string> names;
  for (size_t i = 0; i < inputs; ++i) names.push_back("i" + std::to_string(i));
  ir::Node n = MakeNode("QGemm", names, {"y"}, std::move(attrs));
  n.domain = "com.microsoft";
  return n;
}

std::vector<int64_t> RandomInts(size_t n, int64_t lo, int64_t hi, std::mt19937& rng) {
  std::uniform_int_distribution<int64_t> d(lo, hi);
  std::vector<int64_t> v(n);
  for (int64_t& x : v) x = d(rng);
  return v;
}

TEST(QGemm, MatchesFloat64ReferenceAllLayoutsAndBiasShapes) {
  const int64_t m = 13, k = 127, n = 11;
  std::mt19937 rng(7);
  int64_t near_ties = 0, total = 0;
  int round = 0;
  for (DataType at : {DataType::kUint8, DataType::kInt8}) {
    for (DataType bt : {DataType::kInt8, DataType::kUint8}) {
      for (int variant = 0; variant < 5; ++variant, ++round) {
        const bool trans_a = variant % 2 == 1, trans_b = variant >= 3, per_column = variant % 2 == 0;
        const float alpha = variant == 2 ? 0.75f : 1.0f;
        const int64_t alo = at == DataType::kInt8 ? -128 : 0, blo = bt == DataType::kInt8 ? -128 : 0;
        std::vector<int64_t> a = RandomInts(m * k, alo, alo + 255, rng), b = RandomInts(k * n, blo, blo + 255, rng);
        const int64_t za = RandomInts(1, alo, alo + 255, rng)[0], zy = RandomInts(1, alo, alo + 255, rng)[0];
        std::vector<int64_t> zb = RandomInts(per_column ? n : 1, blo, blo + 255, rng);
        std::vector<float> sb;
        for (size_t c = 0; c < zb.size(); ++c) sb.push_back(std::uniform_real_distribution<float>(0.001f, 0.02f)(rng));
        const float sa = 0.03f, sy = 0.4f + 0.1f * static_cast<float>(variant);
        // Bias shapes: none, [N], [M,N], [M,1], [].
        const std::vector<std::vector<int64_t>> bias_shapes{{}, {n}, {m, n}, {m, 1}, {}};
        const bool has_bias = variant != 0;
        const std::vector<int64_t> bshape = bias_shapes[variant];
        int64_t bcount = 1;
        for (int64_t d : bshape) bcount *= d;
        std::vector<int32_t> bias(static_cast<size_t>(bcount));
        for (int32_t& v : bias) v = static_cast<int32_t>(RandomInts(1, -20000, 20000, rng)[0]);
        // Stored layouts.
        std::vector<int64_t> as(a.size()), bs(b.size());
        for (int64_t i = 0; i < m; ++i)
          for (int64_t j = 0; j < k; ++j) as[trans_a ? j * m + i : i * k + j] = a[i * k + j];
        for (int64_t j = 0; j < k; ++j)
          for (int64_t c = 0; c < n; ++c) bs[trans_b ? c * k + j : j * n + c] = b[j * n + c];
        runtime::Tensor ta = Q(at, trans_a ? std::vector<int64_t>{k, m} : std::vector<int64_t>{m, k}, as);
        runtime::Tensor tb = Q(bt, trans_b ? std::vector<int64_t>{n, k} : std::vector<int64_t>{k, n}, bs);
        runtime::Tensor tsa = F32({}, {sa}), tza = Q(at, {}, {za});
        runtime::Tensor tsb = per_column ? F32({n}, sb) : F32({1}, sb), tzb = Q(bt, per_column ? std::vector<int64_t>{n} : std::vector<int64_t>{1}, zb);
        runtime::Tensor tc = MakeTensor(DataType::kInt32, bshape, bias), tsy = F32({}, {sy}), tzy = Q(at, {}, {zy});
        const std::vector<ir::Attribute> attrs{IntAttr("transA", trans_a), IntAttr("transB", trans_b),
                                               FloatAttr("alpha", alpha)};
        auto yq = RunKernel(QGemm(9, attrs), 1, {&ta, &tsa, &tza, &tb, &tsb, &tzb, has_bias ? &tc : nullptr, &tsy, &tzy});
        auto yf = RunKernel(QGemm(7, attrs), 1, {&ta, &tsa, &tza, &tb, &tsb, &tzb, has_bias ? &tc : nullptr});
        ASSERT_TRUE(yq.ok()) << yq.status().ToString();
        ASSERT_TRUE(yf.ok()) << yf.status().ToString();
        ASSERT_EQ(yq.value()[0].dtype(), at);
        ASSERT_EQ(yf.value()[0].dtype(), DataType::kFloat32);
        ASSERT_EQ(yq.value()[0].shape(), (std::vector<int64_t>{m, n}));
        const std::vector<int64_t> got = Ints(yq.value()[0]);
        const std::vector<float> gotf = Values<float>(yf.value()[0]);
        for (int64_t i = 0; i < m; ++i) {
          for (int64_t c = 0; c < n; ++c) {
            int64_t acc = 0;
            for (int64_t j = 0; j < k; ++j) acc += (a[i * k + j] - za) * (b[j * n + c] - zb[per_column ? c : 0]);
            if (has_bias) {
              const int64_t bi = bshape.empty() ? 0 : bshape.size() == 1 ? c : bshape[1] == 1 ? i : i * n + c;
              acc += bias[bi];
            }
            const double scale = static_cast<double>(alpha) * sa * sb[per_column ? c : 0];
            const double fv = static_cast<double>(acc) * scale;
            EXPECT_NEAR(gotf[i * n + c], fv, 1e-6 * std::max(1.0, std::abs(fv))) << i << "," << c;
            const double exact = fv / sy;
            const double lo = at == DataType::kInt8 ? -128 : 0, hi = lo + 255;
            auto sat = [&](double r) { return static_cast<int64_t>(std::min(std::max(r + zy, lo), hi)); };
            const int64_t want = sat(std::nearbyint(exact));
            ++total;
            if (got[i * n + c] == want) continue;
            const double frac = exact - std::floor(exact);
            if (std::abs(frac - 0.5) < 1e-4 &&
                got[i * n + c] == sat(std::nearbyint(exact) == std::floor(exact) ? std::ceil(exact) : std::floor(exact))) {
              ++near_ties;
              continue;
            }
            ADD_FAILURE() << "round " << round << " element " << i << "," << c << " is " << got[i * n + c]
                          << ", expected " << want << " (exact " << exact << " + " << zy << ")";
          }
        }
      }
    }
  }
  EXPECT_LT(near_ties * 100, total);
}

TEST(QGemm, ShapeInferenceAndErrorsNameTheInput) {
  using ir::Dim;
  const ir::TypeInfo a = ops::TensorType(DataType::kUint8, std::vector<Dim>{Dim::Symbolic("M"), Dim::Known(5)});
  const ir::TypeInfo b = ops::TensorType(DataType::kInt8, std::vector<int64_t>{5, 7});
  const ir::TypeInfo b6 = ops::TensorType(DataType::kInt8, std::vector<int64_t>{6, 7});
  const ir::TypeInfo s = ops::TensorType(DataType::kFloat32, std::vector<int64_t>{});
  const ir::TypeInfo s7 = ops::TensorType(DataType::kFloat32, std::vector<int64_t>{7});
  const ir::TypeInfo s3 = ops::TensorType(DataType::kFloat32, std::vector<int64_t>{3});
  const ir::TypeInfo zu = ops::TensorType(DataType::kUint8, std::vector<int64_t>{});
  const ir::TypeInfo z8 = ops::TensorType(DataType::kInt8, std::vector<int64_t>{});
  const ir::TypeInfo c = ops::TensorType(DataType::kInt32, std::vector<int64_t>{7});
  const ir::TypeInfo cf = ops::TensorType(DataType::kFloat32, std::vector<int64_t>{7});
  auto out = InferNode(QGemm(9, {}), 1, {&a, &s, &zu, &b, &s7, &z8, &c, &s, &zu});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(out.value()[0].elem_type, DataType::kUint8);
  ASSERT_EQ(out.value()[0].shape.dims.size(), 2u);
  EXPECT_EQ(out.value()[0].shape.dims[0].param, "M");
  EXPECT_EQ(out.value()[0].shape.dims[1].value, 7);
  out = InferNode(QGemm(6, {}), 1, {&a, &s, &zu, &b, &s, &z8});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(out.value()[0].elem_type, DataType::kFloat32);
  auto expect_error = [](const auto& r, const std::string& fragment) {
    ASSERT_FALSE(r.ok()) << "expected an error containing '" << fragment << "'";
    const std::string msg = r.status().ToString();
    EXPECT_NE(msg.find("QGemm"), std::string::npos) << msg;
    EXPECT_NE(msg.find(fragment), std::string::npos) << msg;
  };
  expect_error(InferNode(QGemm(9, {}), 1, {&a, &s, &zu, &b6, &s, &z8, nullptr, &s, &zu}), "do not multiply");
  expect_error(InferNode(QGemm(9, {}), 1, {&a, &s, &zu, &b, &s3, &z8, nullptr, &s, &zu}), "input 4 (b_scale)");
  expect_error(InferNode(QGemm(9, {}), 1, {&a, &s, &zu, &b, &s, &zu, nullptr, &s, &zu}), "input 5 (b_zero_point)");
  expect_error(InferNode(QGemm(9, {}), 1, {&a, &s, &zu, &b, &s, &z8, &cf, &s, &zu}), "input 6 (C)");
  expect_error(InferNode(QGemm(9, {}), 1, {&a, &s, &zu, &b, &s, &z8, nullptr, &s, &z8}), "input 8 (y_zero_point)");
  // At run time.
  runtime::Tensor ta = Q(DataType::kUint8, {2, 5}, std::vector<int64_t>(10, 1));
  runtime::Tensor tb = Q(DataType::kInt8, {5, 7}, std::vector<int64_t>(35, 1));
  runtime::Tensor ts = F32({}, {0.1f}), ts3 = F32({3}, {0.1f, 0.1f, 0.1f}), tzu = Q(DataType::kUint8, {}, {0});
  runtime::Tensor tz8 = Q(DataType::kInt8, {}, {0}), tc = MakeTensor(DataType::kInt32, {2, 3}, std::vector<int32_t>(6));
  expect_error(RunKernel(QGemm(9, {}), 1, {&ta, &ts, &tzu, &tb, &ts3, &tz8, nullptr, &ts, &tzu}), "input 4 (b_scale)");
  expect_error(RunKernel(QGemm(9, {}), 1, {&ta, &ts, &tzu, &tb, &ts, &tz8, &tc, &ts, &tzu}), "input 6 (C)");
  expect_error(RunKernel(QGemm(9, {IntAttr("transB", 1)}), 1, {&ta, &ts, &tzu, &tb, &ts, &tz8, nullptr, &ts, &tzu}),
               "do not multiply");
}

}  // namespace
}  // namespace vigil::cpu::testing
