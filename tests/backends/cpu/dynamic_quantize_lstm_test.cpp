// com.microsoft DynamicQuantizeLSTM on the CPU:
// - with an input range that quantizes exactly (X integers spanning
//   [-128, 127]: scale 1) and a recurrent product of zero, it equals the
//   float LSTM kernel run with the dequantized, transposed W bit for bit
//   (W's layout, per-column scales and zero points, directions, bias,
//   peepholes, initial states, sequence lengths);
// - on random data it matches a float64 reference of the whole op: X
//   quantized once over the steps up to the longest sequence, the hidden
//   state quantized at every step with the rows of ended sequences as zero,
//   exact integer products, zero final states for an empty sequence;
// - bad scales, zero points and dtypes fail naming the input, at run time
//   and in shape inference.
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

struct Case {
  int64_t nd = 1, seq = 5, batch = 3, input = 13, hidden = 7;
  DataType wt = DataType::kInt8;
  bool per_column = true;
  std::vector<float> x;          // [seq, batch, input]
  std::vector<int64_t> w, r;     // [nd, input, 4h], [nd, hidden, 4h]
  std::vector<float> ws, rs;     // [nd, 4h] or [nd]
  std::vector<int64_t> wz, rz;   // same shapes
  std::vector<float> b, p, h0, c0;
  std::vector<int32_t> lens;
  int64_t gh() const { return 4 * hidden; }
  int64_t params() const { return per_column ? nd * gh() : nd; }
  float Ws(int64_t d, int64_t g) const { return ws[per_column ? d * gh() + g : d]; }
  float Rs(int64_t d, int64_t g) const { return rs[per_column ? d * gh() + g : d]; }
  int64_t Wz(int64_t d, int64_t g) const { return wz[per_column ? d * gh() + g : d]; }
  int64_t Rz(int64_t d, int64_t g) const { return rz[per_column ? d * gh() + g : d]; }
};

runtime::Tensor Q(DataType t, std::vector<int64_t> shape, const std::vector<int64_t>& v) {
  if (t == DataType::kInt8) return MakeTensor(t, std::move(shape), std::vector<int8_t>(v.begin(), v.end()));
  return MakeTensor(t, std::move(shape), std::vector<uint8_t>(v.begin(), v.end()));
}

std::vector<ir::Attribute> Attrs(const Case& c) {
  return {IntAttr("hidden_size", c.hidden), StringAttr("direction", c.nd == 2 ? "bidirectional" : "forward")};
}

ir::Node DqNode(const Case& c) {
  ir::Node n = MakeNode("DynamicQuantizeLSTM", {"x", "w", "r", "b", "l", "h0", "c0", "p", "ws", "wz", "rs", "rz"},
                        {"y", "yh", "yc"}, Attrs(c));
  n.domain = "com.microsoft";
  return n;
}

// Runs DynamicQuantizeLSTM on the case; returns Y, Y_h, Y_c.
Result<std::vector<runtime::Tensor>> RunDq(const Case& c) {
  const std::vector<int64_t> pshape = c.per_column ? std::vector<int64_t>{c.nd, c.gh()} : std::vector<int64_t>{c.nd};
  runtime::Tensor x = F32({c.seq, c.batch, c.input}, c.x);
  runtime::Tensor w = Q(c.wt, {c.nd, c.input, c.gh()}, c.w), r = Q(c.wt, {c.nd, c.hidden, c.gh()}, c.r);
  runtime::Tensor b = F32({c.nd, 2 * c.gh()}, c.b), p = F32({c.nd, 3 * c.hidden}, c.p);
  runtime::Tensor h0 = F32({c.nd, c.batch, c.hidden}, c.h0), c0 = F32({c.nd, c.batch, c.hidden}, c.c0);
  runtime::Tensor l = MakeTensor(DataType::kInt32, {c.batch}, c.lens);
  runtime::Tensor ws = F32(pshape, c.ws), rs = F32(pshape, c.rs);
  runtime::Tensor wz = Q(c.wt, pshape, c.wz), rz = Q(c.wt, pshape, c.rz);
  return RunKernel(DqNode(c), 1, {&x, &w, &r, &b, &l, &h0, &c0, &p, &ws, &wz, &rs, &rz});
}

Case RandomCase(uint32_t seed, int64_t nd, DataType wt, bool per_column) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 0.5f);
  Case c;
  c.nd = nd;
  c.wt = wt;
  c.per_column = per_column;
  const int64_t lo = wt == DataType::kInt8 ? -128 : 0;
  std::uniform_int_distribution<int64_t> q(lo, lo + 255);
  auto floats = [&](int64_t n) {
    std::vector<float> v(n);
    for (float& f : v) f = normal(rng);
    return v;
  };
  c.x = floats(c.seq * c.batch * c.input);
  c.w.resize(nd * c.input * c.gh());
  c.r.resize(nd * c.hidden * c.gh());
  for (int64_t& v : c.w) v = q(rng);
  for (int64_t& v : c.r) v = q(rng);
  std::uniform_real_distribution<float> scale(0.002f, 0.02f);
  for (int64_t i = 0; i < c.params(); ++i) {
    c.ws.push_back(scale(rng));
    c.rs.push_back(scale(rng));
    c.wz.push_back(q(rng));
    c.rz.push_back(q(rng));
  }
  c.b = floats(nd * 2 * c.gh());
  c.p = floats(nd * 3 * c.hidden);
  c.h0 = floats(nd * c.batch * c.hidden);
  c.c0 = floats(nd * c.batch * c.hidden);
  c.lens = {5, 2, 1};
  return c;
}

TEST(DynamicQuantizeLSTM, ExactInputProductEqualsFloatLstmWithDequantizedWeights) {
  for (int64_t nd : {1, 2}) {
    for (DataType wt : {DataType::kInt8, DataType::kUint8}) {
      for (bool per_column : {true, false}) {
        Case c = RandomCase(static_cast<uint32_t>(nd * 10 + (wt == DataType::kInt8) * 2 + per_column), nd, wt,
                            per_column);
        std::mt19937 rng(99);
        std::uniform_int_distribution<int> xi(-128, 127);
        for (float& v : c.x) v = static_cast<float>(xi(rng));
        c.x[0] = -128.0f;  // the range [-128, 127]: scale 1, zero point 128, exact
        c.x[1] = 127.0f;
        for (int64_t i = 0; i < c.params(); ++i) c.ws[i] = std::ldexp(1.0f, -8 - static_cast<int>(i % 5));
        for (size_t i = 0; i < c.r.size(); ++i) c.r[i] = c.Rz(static_cast<int64_t>(i / (c.hidden * c.gh())), i % c.gh());
        auto dq = RunDq(c);
        ASSERT_TRUE(dq.ok()) << dq.status().ToString();
        // The float LSTM: W^T dequantized, R zero.
        std::vector<float> wf(c.nd * c.gh() * c.input), rf(c.nd * c.gh() * c.hidden, 0.0f);
        for (int64_t d = 0; d < c.nd; ++d)
          for (int64_t g = 0; g < c.gh(); ++g)
            for (int64_t i = 0; i < c.input; ++i) {
              const int64_t q = c.w[(d * c.input + i) * c.gh() + g];
              wf[(d * c.gh() + g) * c.input + i] = static_cast<float>(q - c.Wz(d, g)) * c.Ws(d, g);
            }
        runtime::Tensor x = F32({c.seq, c.batch, c.input}, c.x), w = F32({c.nd, c.gh(), c.input}, wf);
        runtime::Tensor r = F32({c.nd, c.gh(), c.hidden}, rf), b = F32({c.nd, 2 * c.gh()}, c.b);
        runtime::Tensor l = MakeTensor(DataType::kInt32, {c.batch}, c.lens);
        runtime::Tensor h0 = F32({c.nd, c.batch, c.hidden}, c.h0), c0 = F32({c.nd, c.batch, c.hidden}, c.c0);
        runtime::Tensor p = F32({c.nd, 3 * c.hidden}, c.p);
        auto fl = RunKernel(MakeNode("LSTM", {"x", "w", "r", "b", "l", "h0", "c0", "p"}, {"y", "yh", "yc"}, Attrs(c)),
                            14, {&x, &w, &r, &b, &l, &h0, &c0, &p});
        ASSERT_TRUE(fl.ok()) << fl.status().ToString();
        for (size_t o = 0; o < 3; ++o) {
          EXPECT_EQ(dq.value()[o].shape(), fl.value()[o].shape());
          EXPECT_EQ(Values<float>(dq.value()[o]), Values<float>(fl.value()[o]))
              << "output " << o << " nd " << nd << (wt == DataType::kInt8 ? " int8" : " uint8")
              << (per_column ? " per column" : " per direction");
        }
      }
    }
  }
}

// ---- float64 reference ------------------------------------------------------

// Dynamic quantization as DynamicQuantizeLinear (float32 arithmetic: it is
// the definition); returns q - zero point and the scale.
std::vector<int64_t> Quantize(const std::vector<float>& a, float* scale) {
  float lo = 0, hi = 0;
  for (float v : a) {
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  *scale = hi == lo ? 1.0f : (hi - lo) / 255.0f;
  const float zp = std::nearbyint(std::min(std::max(-lo / *scale, 0.0f), 255.0f));
  std::vector<int64_t> q(a.size());
  for (size_t i = 0; i < a.size(); ++i) {
    q[i] = static_cast<int64_t>(std::min(std::max(std::nearbyint(a[i] / *scale) + zp, 0.0f), 255.0f) - zp);
  }
  return q;
}

double Sigmoid(double v) { return 1.0 / (1.0 + std::exp(-v)); }

// Y [seq, nd, batch, h], Y_h, Y_c [nd, batch, h].
std::vector<std::vector<double>> Reference(const Case& c) {
  const int64_t hs = c.hidden, gh = c.gh(), nb = c.batch;
  std::vector<std::vector<double>> out{std::vector<double>(c.seq * c.nd * nb * hs, 0.0),
                                       std::vector<double>(c.nd * nb * hs), std::vector<double>(c.nd * nb * hs)};
  const int64_t longest = *std::max_element(c.lens.begin(), c.lens.end());
  for (int64_t d = 0; d < c.nd; ++d) {
    float sx;
    const std::vector<int64_t> qx = Quantize(std::vector<float>(c.x.begin(), c.x.begin() + longest * nb * c.input), &sx);
    std::vector<double> h(c.h0.begin() + d * nb * hs, c.h0.begin() + (d + 1) * nb * hs);
    std::vector<double> cell(c.c0.begin() + d * nb * hs, c.c0.begin() + (d + 1) * nb * hs);
    for (int64_t s = 0; s < c.seq; ++s) {
      std::vector<float> hin(nb * hs);
      for (int64_t b = 0; b < nb; ++b)
        for (int64_t j = 0; j < hs; ++j) hin[b * hs + j] = s > 0 && c.lens[b] < s ? 0.0f : static_cast<float>(h[b * hs + j]);
      float sh;
      const std::vector<int64_t> qh = Quantize(hin, &sh);
      for (int64_t b = 0; b < nb; ++b) {
        if (s >= c.lens[b]) continue;
        const int64_t t = d == 1 ? c.lens[b] - 1 - s : s;
        std::vector<double> pre(gh);
        for (int64_t g = 0; g < gh; ++g) {
          int64_t ax = 0, ah = 0;
          for (int64_t i = 0; i < c.input; ++i) {
            ax += qx[(t * nb + b) * c.input + i] * (c.w[(d * c.input + i) * gh + g] - c.Wz(d, g));
          }
          for (int64_t i = 0; i < hs; ++i) ah += qh[b * hs + i] * (c.r[(d * hs + i) * gh + g] - c.Rz(d, g));
          pre[g] = static_cast<double>(ax) * static_cast<float>(sx * c.Ws(d, g)) +
                   static_cast<double>(ah) * static_cast<float>(sh * c.Rs(d, g)) + c.b[d * 2 * gh + g] +
                   c.b[d * 2 * gh + gh + g];
        }
        for (int64_t j = 0; j < hs; ++j) {
          const double cp = cell[b * hs + j];
          const float* p = c.p.data() + d * 3 * hs;
          const double i = Sigmoid(pre[j] + p[j] * cp);
          const double f = Sigmoid(pre[2 * hs + j] + p[2 * hs + j] * cp);
          const double cn = f * cp + i * std::tanh(pre[3 * hs + j]);
          const double o = Sigmoid(pre[hs + j] + p[hs + j] * cn);
          cell[b * hs + j] = cn;
          h[b * hs + j] = o * std::tanh(cn);
          out[0][((t * c.nd + d) * nb + b) * hs + j] = h[b * hs + j];
        }
      }
    }
    for (int64_t b = 0; b < nb; ++b)
      for (int64_t j = 0; j < hs; ++j) {
        out[1][(d * nb + b) * hs + j] = c.lens[b] == 0 ? 0.0 : h[b * hs + j];
        out[2][(d * nb + b) * hs + j] = c.lens[b] == 0 ? 0.0 : cell[b * hs + j];
      }
  }
  return out;
}

TEST(DynamicQuantizeLSTM, MatchesFloat64ReferenceOfDynamicQuantization) {
  for (DataType wt : {DataType::kInt8, DataType::kUint8}) {
    for (bool per_column : {true, false}) {
      Case c = RandomCase(wt == DataType::kInt8 ? 5 : 6, 2, wt, per_column);
      c.lens = {static_cast<int32_t>(c.seq), 3, 0};  // one sequence shorter, one empty
      auto got = RunDq(c);
      ASSERT_TRUE(got.ok()) << got.status().ToString();
      const auto want = Reference(c);
      for (size_t o = 0; o < 3; ++o) {
        const std::vector<float> g = Values<float>(got.value()[o]);
        ASSERT_EQ(g.size(), want[o].size());
        double worst = 0;
        for (size_t i = 0; i < g.size(); ++i) worst = std::max(worst, std::abs(g[i] - want[o][i]));
        // float32 gate math against float64; a hidden value moving across a
        // quantization step would show as ~1e-3.
        EXPECT_LT(worst, 2e-5) << "output " << o << (wt == DataType::kInt8 ? " int8" : " uint8")
                               << (per_column ? " per column" : " per direction");
      }
    }
  }
}

// ---- errors -----------------------------------------------------------------------

TEST(DynamicQuantizeLSTM, BadScalesZeroPointsAndDtypesFailNamingTheInput) {
  Case c = RandomCase(1, 1, DataType::kUint8, true);
  auto expect_error = [](const auto& r, const std::string& fragment) {
    ASSERT_FALSE(r.ok()) << "expected an error containing '" << fragment << "'";
    const std::string msg = r.status().ToString();
    EXPECT_NE(msg.find("DynamicQuantizeLSTM"), std::string::npos) << msg;
    EXPECT_NE(msg.find(fragment), std::string::npos) << msg;
  };
  Case bad = c;
  bad.ws.pop_back();  // [1, 27]: neither [1] nor [1, 28]
  bad.per_column = true;
  {
    runtime::Tensor x = F32({c.seq, c.batch, c.input}, c.x);
    runtime::Tensor w = Q(c.wt, {1, c.input, c.gh()}, c.w), r = Q(c.wt, {1, c.hidden, c.gh()}, c.r);
    runtime::Tensor ws = F32({1, c.gh() - 1}, bad.ws), rs = F32({1, c.gh()}, c.rs);
    runtime::Tensor wz = Q(c.wt, {1, c.gh()}, c.wz), rz = Q(c.wt, {1, c.gh()}, c.rz);
    runtime::Tensor rz8 = Q(DataType::kInt8, {1}, {0}), wf = F32({1, c.input, c.gh()}, std::vector<float>(c.w.size()));
    runtime::Tensor wt = Q(c.wt, {1, c.gh(), c.input}, c.w);  // ONNX LSTM's layout
    runtime::Tensor ws1 = F32({1}, {0.01f});
    const ir::Node n = DqNode(c);
    expect_error(RunKernel(n, 1, {&x, &w, &r, nullptr, nullptr, nullptr, nullptr, nullptr, &ws, &wz, &rs, &rz}),
                 "input 8 (W_scale)");
    expect_error(RunKernel(n, 1, {&x, &w, &r, nullptr, nullptr, nullptr, nullptr, nullptr, &ws1, &wz, &rs, &rz8}),
                 "input 11 (R_zero_point)");
    expect_error(RunKernel(n, 1, {&x, &wf, &r, nullptr, nullptr, nullptr, nullptr, nullptr, &ws1, &wz, &rs, &rz}),
                 "input 1 (W)");
    expect_error(RunKernel(n, 1, {&x, &wt, &r, nullptr, nullptr, nullptr, nullptr, nullptr, &ws1, &wz, &rs, &rz}),
                 "input 1 (W)");
    // Per-direction scale with per-column zero point is fine.
    auto ok = RunKernel(n, 1, {&x, &w, &r, nullptr, nullptr, nullptr, nullptr, nullptr, &ws1, &wz, &rs, &rz});
    EXPECT_TRUE(ok.ok()) << ok.status().ToString();
  }
  // Shape inference.
  using ir::Dim;
  const ir::TypeInfo x = ops::TensorType(DataType::kFloat32,
                                         std::vector<Dim>{Dim::Symbolic("T"), Dim::Symbolic("N"), Dim::Known(13)});
  const ir::TypeInfo w = ops::TensorType(DataType::kUint8, std::vector<int64_t>{1, 13, 28});
  const ir::TypeInfo wt = ops::TensorType(DataType::kUint8, std::vector<int64_t>{1, 28, 13});
  const ir::TypeInfo r = ops::TensorType(DataType::kUint8, std::vector<int64_t>{1, 7, 28});
  const ir::TypeInfo r8 = ops::TensorType(DataType::kInt8, std::vector<int64_t>{1, 7, 28});
  const ir::TypeInfo s1 = ops::TensorType(DataType::kFloat32, std::vector<int64_t>{1});
  const ir::TypeInfo s28 = ops::TensorType(DataType::kFloat32, std::vector<int64_t>{1, 28});
  const ir::TypeInfo s27 = ops::TensorType(DataType::kFloat32, std::vector<int64_t>{1, 27});
  const ir::TypeInfo z1 = ops::TensorType(DataType::kUint8, std::vector<int64_t>{1});
  const ir::TypeInfo z8 = ops::TensorType(DataType::kInt8, std::vector<int64_t>{1});
  const ir::TypeInfo x8 = ops::TensorType(DataType::kInt8, std::vector<int64_t>{5, 3, 13});
  const ir::TypeInfo l64 = ops::TensorType(DataType::kInt64, std::vector<int64_t>{3});
  const ir::Node n = DqNode(c);
  auto infer = [&](const ir::TypeInfo* xx, const ir::TypeInfo* ww, const ir::TypeInfo* rr, const ir::TypeInfo* ll,
                   const ir::TypeInfo* ws, const ir::TypeInfo* wz, const ir::TypeInfo* rs, const ir::TypeInfo* rz) {
    return InferNode(n, 1, {xx, ww, rr, nullptr, ll, nullptr, nullptr, nullptr, ws, wz, rs, rz});
  };
  auto out = infer(&x, &w, &r, nullptr, &s28, &z1, &s1, &z1);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ASSERT_EQ(out.value().size(), 3u);
  EXPECT_EQ(out.value()[0].elem_type, DataType::kFloat32);
  ASSERT_EQ(out.value()[0].shape.dims.size(), 4u);
  EXPECT_EQ(out.value()[0].shape.dims[0].param, "T");
  EXPECT_EQ(out.value()[0].shape.dims[1].value, 1);
  EXPECT_EQ(out.value()[0].shape.dims[2].param, "N");
  EXPECT_EQ(out.value()[0].shape.dims[3].value, 7);
  ASSERT_EQ(out.value()[2].shape.dims.size(), 3u);
  EXPECT_EQ(out.value()[2].shape.dims[2].value, 7);
  expect_error(infer(&x, &w, &r, nullptr, &s27, &z1, &s1, &z1), "input 8 (W_scale)");
  expect_error(infer(&x, &w, &r, nullptr, &s1, &z1, &s1, &z8), "input 11 (R_zero_point)");
  expect_error(infer(&x, &w, &r8, nullptr, &s1, &z1, &s1, &z1), "input 2 (R)");
  expect_error(infer(&x, &wt, &r, nullptr, &s1, &z1, &s1, &z1), "[num_directions, input_size, 4*hidden_size]");
  expect_error(infer(&x8, &w, &r, nullptr, &s1, &z1, &s1, &z1), "input 0 (X)");
  expect_error(infer(&x, &w, &r, &l64, &s1, &z1, &s1, &z1), "input 4 (sequence_lens)");
}

}  // namespace
}  // namespace vigil::cpu::testing
