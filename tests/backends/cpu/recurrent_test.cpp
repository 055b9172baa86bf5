// RNN, GRU and LSTM: CPU kernels against a naive float64 implementation of
// the cell equations written out here, over directions, optional inputs,
// sequence lengths, layouts, activations, clip, input_forget,
// linear_before_reset and dtypes; shape inference; error cases.
#include <cctype>
#include <cmath>
#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "backends/cpu/gemm.h"
#include "backends/cpu/kernel_test_util.h"
#include "backends/cpu/parallel.h"
#include "vigil/float16.h"

namespace vigil::cpu::testing {
namespace {

using ir::DataType;

// ---- the float64 reference ---------------------------------------------------

struct RefAct {
  std::string name;
  double alpha = 0, beta = 0;
};

double ApplyRef(const RefAct& a, double x) {
  const std::string& n = a.name;
  if (n == "Relu") return std::max(0.0, x);
  if (n == "Tanh") return std::tanh(x);
  if (n == "Sigmoid") return 1.0 / (1.0 + std::exp(-x));
  if (n == "Affine") return a.alpha * x + a.beta;
  if (n == "LeakyRelu") return x >= 0 ? x : a.alpha * x;
  if (n == "ThresholdedRelu") return x >= a.alpha ? x : 0.0;
  if (n == "ScaledTanh") return a.alpha * std::tanh(a.beta * x);
  if (n == "HardSigmoid") return std::min(std::max(a.alpha * x + a.beta, 0.0), 1.0);
  if (n == "Elu") return x >= 0 ? x : a.alpha * (std::exp(x) - 1);
  if (n == "Softsign") return x / (1 + std::abs(x));
  if (n == "Softplus") return std::log(1 + std::exp(x));
  ADD_FAILURE() << "unknown activation " << n;
  return 0;
}

struct Spec {
  std::string op = "LSTM";
  std::string direction = "forward";
  int64_t seq = 3, batch = 2, input = 5, hidden = 4, layout = 0, opset = 14;
  bool bias = false, h0 = false, c0 = false, peep = false;
  std::vector<int32_t> lens;  // empty: input absent
  std::vector<std::string> acts;
  std::vector<float> alphas, betas;
  std::optional<float> clip;
  int64_t input_forget = 0, lbr = 0;
  DataType dtype = DataType::kFloat32;
  std::vector<std::string> outputs = {"Y", "Y_h", "Y_c"};
  bool hidden_attr = true;

  int64_t gates() const { return op == "RNN" ? 1 : op == "GRU" ? 3 : 4; }
  int64_t nd() const { return direction == "bidirectional" ? 2 : 1; }
};

// Default activations per op, and the consumption rule for alpha/beta.
std::vector<RefAct> ResolveActs(const Spec& s) {
  static const std::vector<std::pair<std::string, std::pair<double, double>>> defaults = {
      {"Affine", {1.0, 0.0}}, {"LeakyRelu", {0.01, 0}}, {"ThresholdedRelu", {1.0, 0}},
      {"ScaledTanh", {1.0, 1.0}}, {"HardSigmoid", {0.2, 0.5}}, {"Elu", {1.0, 0}}};
  std::vector<std::string> names = s.acts;
  std::vector<std::string> def = s.op == "RNN"   ? std::vector<std::string>{"Tanh"}
                                 : s.op == "GRU" ? std::vector<std::string>{"Sigmoid", "Tanh"}
                                                 : std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"};
  if (names.empty()) {
    for (int64_t d = 0; d < s.nd(); ++d) names.insert(names.end(), def.begin(), def.end());
  } else if (names.size() == def.size() && s.nd() == 2) {
    names.insert(names.end(), s.acts.begin(), s.acts.end());
  }
  std::vector<RefAct> out;
  size_t ai = 0, bi = 0;
  static const std::vector<std::string> canonical = {"Relu", "Tanh", "Sigmoid", "Affine", "LeakyRelu",
      "ThresholdedRelu", "ScaledTanh", "HardSigmoid", "Elu", "Softsign", "Softplus"};
  auto lower = [](std::string v) {
    for (char& ch : v) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    return v;
  };
  for (std::string n : names) {
    for (const std::string& c : canonical) {
      if (lower(c) == lower(n)) n = c;
    }
    RefAct a{n, 0, 0};
    for (const auto& [name, ab] : defaults) {
      if (name != n) continue;
      a.alpha = ab.first;
      a.beta = ab.second;
      if (ai < s.alphas.size()) a.alpha = s.alphas[ai++];
      bool uses_beta = n == "Affine" || n == "ScaledTanh" || n == "HardSigmoid";
      if (uses_beta && bi < s.betas.size()) a.beta = s.betas[bi++];
    }
    out.push_back(a);
  }
  return out;
}

// All tensors in layout 0: x [seq,batch,input], states [nd,batch,hidden].
struct Data {
  std::vector<double> x, w, r, b, h0, c0, p;
};
struct RefOut {
  std::vector<double> y, yh, yc;  // [seq,nd,batch,hidden], [nd,batch,hidden]
};

double Dot(const double* a, const double* b, int64_t n) {
  double s = 0;
  for (int64_t i = 0; i < n; ++i) s += a[i] * b[i];
  return s;
}

RefOut Reference(const Spec& s, const Data& d) {
  const int64_t H = s.hidden, I = s.input, G = s.gates(), nd = s.nd(), B = s.batch;
  std::vector<RefAct> acts = ResolveActs(s);
  const size_t per_dir = acts.size() / nd;
  RefOut out;
  out.y.assign(s.seq * nd * B * H, 0.0);
  out.yh.assign(nd * B * H, 0.0);
  out.yc.assign(nd * B * H, 0.0);
  auto clip = [&](double v) { return s.clip ? std::min(std::max(v, -double(*s.clip)), double(*s.clip)) : v; };
  for (int64_t dir = 0; dir < nd; ++dir) {
    const RefAct* act = acts.data() + dir * per_dir;
    const double* W = d.w.data() + dir * G * H * I;
    const double* R = d.r.data() + dir * G * H * H;
    const double* Wb = d.b.data() + dir * 2 * G * H;
    const double* Rb = Wb + G * H;
    const double* P = d.p.data() + dir * 3 * H;
    const bool backward = s.direction == "reverse" || dir == 1;
    for (int64_t b = 0; b < B; ++b) {
      const int64_t len = s.lens.empty() ? s.seq : s.lens[b];
      std::vector<double> h(d.h0.begin() + (dir * B + b) * H, d.h0.begin() + (dir * B + b + 1) * H);
      std::vector<double> c(d.c0.begin() + (dir * B + b) * H, d.c0.begin() + (dir * B + b + 1) * H);
      for (int64_t step = 0; step < len; ++step) {
        const int64_t t = backward ? len - 1 - step : step;
        const double* x = d.x.data() + (t * B + b) * I;
        // pre[g][j] = x.W_g + Wb_g (+ h.R_g + Rb_g for all but GRU's h gate)
        auto xw = [&](int64_t row) { return Dot(x, W + row * I, I) + Wb[row]; };
        auto hr = [&](int64_t row, const std::vector<double>& hv) { return Dot(hv.data(), R + row * H, H) + Rb[row]; };
        std::vector<double> hn(H), cn(H);
        if (s.op == "RNN") {
          for (int64_t j = 0; j < H; ++j) hn[j] = ApplyRef(act[0], clip(xw(j) + hr(j, h)));
        } else if (s.op == "GRU") {
          std::vector<double> z(H), r(H), rh(H);
          for (int64_t j = 0; j < H; ++j) {
            z[j] = ApplyRef(act[0], clip(xw(j) + hr(j, h)));
            r[j] = ApplyRef(act[0], clip(xw(H + j) + hr(H + j, h)));
            rh[j] = r[j] * h[j];
          }
          for (int64_t j = 0; j < H; ++j) {
            double pre = s.lbr ? xw(2 * H + j) + r[j] * hr(2 * H + j, h) : xw(2 * H + j) + hr(2 * H + j, rh);
            double cand = ApplyRef(act[1], clip(pre));
            hn[j] = (1 - z[j]) * cand + z[j] * h[j];
          }
        } else {
          for (int64_t j = 0; j < H; ++j) {
            double i = ApplyRef(act[0], clip(xw(j) + hr(j, h) + P[j] * c[j]));
            double f = s.input_forget ? 1 - i : ApplyRef(act[0], clip(xw(2 * H + j) + hr(2 * H + j, h) + P[2 * H + j] * c[j]));
            double g = ApplyRef(act[1], clip(xw(3 * H + j) + hr(3 * H + j, h)));
            cn[j] = f * c[j] + i * g;
            double o = ApplyRef(act[0], clip(xw(H + j) + hr(H + j, h) + P[H + j] * cn[j]));
            hn[j] = o * ApplyRef(act[2], cn[j]);
          }
          c = cn;
        }
        h = hn;
        std::copy(h.begin(), h.end(), out.y.begin() + ((t * nd + dir) * B + b) * H);
      }
      std::copy(h.begin(), h.end(), out.yh.begin() + (dir * B + b) * H);
      std::copy(c.begin(), c.end(), out.yc.begin() + (dir * B + b) * H);
    }
  }
  return out;
}

// ---- running the kernel --------------------------------------------------------

// Values representable in the dtype, so the reference sees what the kernel sees.
double Representable(DataType t, double v) {
  if (t == DataType::kFloat16) return Float16ToFloat(FloatToFloat16(static_cast<float>(v)));
  if (t == DataType::kBfloat16) return Bfloat16ToFloat(FloatToBfloat16(static_cast<float>(v)));
  if (t == DataType::kFloat32) return static_cast<float>(v);
  return v;
}

runtime::Tensor ToTensor(DataType t, std::vector<int64_t> shape, const std::vector<double>& v) {
  runtime::Tensor out = runtime::Tensor::Allocate(t, std::move(shape)).value();
  for (size_t i = 0; i < v.size(); ++i) {
    if (t == DataType::kFloat32) out.data<float>()[i] = static_cast<float>(v[i]);
    else if (t == DataType::kFloat64) out.data<double>()[i] = v[i];
    else if (t == DataType::kFloat16) out.data<uint16_t>()[i] = FloatToFloat16(static_cast<float>(v[i]));
    else out.data<uint16_t>()[i] = FloatToBfloat16(static_cast<float>(v[i]));
  }
  return out;
}

std::vector<double> FromTensor(const runtime::Tensor& t) {
  std::vector<double> v(t.element_count());
  for (size_t i = 0; i < v.size(); ++i) {
    if (t.dtype() == DataType::kFloat32) v[i] = t.data<float>()[i];
    else if (t.dtype() == DataType::kFloat64) v[i] = t.data<double>()[i];
    else if (t.dtype() == DataType::kFloat16) v[i] = Float16ToFloat(t.data<uint16_t>()[i]);
    else v[i] = Bfloat16ToFloat(t.data<uint16_t>()[i]);
  }
  return v;
}

// [a, b, rest] -> [b, a, rest]
std::vector<double> SwapFirstTwo(const std::vector<double>& v, int64_t a, int64_t b, int64_t rest) {
  std::vector<double> out(v.size());
  for (int64_t i = 0; i < a; ++i)
    for (int64_t j = 0; j < b; ++j)
      for (int64_t k = 0; k < rest; ++k) out[(j * a + i) * rest + k] = v[(i * b + j) * rest + k];
  return out;
}

void ExpectNear(const std::vector<double>& got, const std::vector<double>& want, double tol, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    // NaN never passes: the comparison below is false for it.
    ASSERT_TRUE(std::abs(got[i] - want[i]) <= tol * (1 + std::abs(want[i])))
        << what << "[" << i << "]: got " << got[i] << ", want " << want[i];
  }
}

double Tolerance(DataType t) {
  switch (t) {
    case DataType::kFloat64: return 1e-12;
    case DataType::kFloat32: return 2e-5;
    case DataType::kFloat16: return 4e-3;
    default: return 3e-2;
  }
}

ir::Node BuildNode(const Spec& s) {
  std::vector<ir::Attribute> attrs = {StringAttr("direction", s.direction)};
  if (s.hidden_attr) attrs.push_back(IntAttr("hidden_size", s.hidden));
  if (s.opset >= 14) attrs.push_back(IntAttr("layout", s.layout));
  if (!s.acts.empty()) {
    ir::Attribute a;
    a.name = "activations";
    a.type = ir::AttributeType::kStrings;
    a.strings = s.acts;
    attrs.push_back(a);
  }
  if (!s.alphas.empty()) attrs.push_back(FloatsAttr("activation_alpha", s.alphas));
  if (!s.betas.empty()) attrs.push_back(FloatsAttr("activation_beta", s.betas));
  if (s.clip) attrs.push_back(FloatAttr("clip", *s.clip));
  if (s.op == "LSTM") attrs.push_back(IntAttr("input_forget", s.input_forget));
  if (s.op == "GRU") attrs.push_back(IntAttr("linear_before_reset", s.lbr));
  std::vector<std::string> inputs = {"X", "W", "R", s.bias ? "B" : "", s.lens.empty() ? "" : "L", s.h0 ? "h0" : ""};
  if (s.op == "LSTM") {
    inputs.push_back(s.c0 ? "c0" : "");
    inputs.push_back(s.peep ? "P" : "");
  }
  std::vector<std::string> outputs = s.outputs;
  if (s.op != "LSTM" && outputs.size() > 2) outputs.resize(2);
  return MakeNode(s.op, inputs, outputs, attrs);
}

// Runs the kernel on random data and compares every wanted output.
void Check(const Spec& s, uint32_t seed = 1) {
  SCOPED_TRACE(s.op + " " + s.direction + " layout " + std::to_string(s.layout) + " " +
               std::string(ir::DataTypeName(s.dtype)));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  auto gen = [&](int64_t n, double scale = 1.0) {
    std::vector<double> v(n);
    for (double& e : v) e = Representable(s.dtype, scale * dist(rng));
    return v;
  };
  const int64_t G = s.gates(), H = s.hidden, nd = s.nd(), B = s.batch;
  Data d;
  d.x = gen(s.seq * B * s.input, 2.0);
  d.w = gen(nd * G * H * s.input);
  d.r = gen(nd * G * H * H);
  d.b = s.bias ? gen(nd * 2 * G * H) : std::vector<double>(nd * 2 * G * H, 0.0);
  d.h0 = s.h0 ? gen(nd * B * H) : std::vector<double>(nd * B * H, 0.0);
  d.c0 = s.c0 ? gen(nd * B * H) : std::vector<double>(nd * B * H, 0.0);
  d.p = s.peep ? gen(nd * 3 * H) : std::vector<double>(nd * 3 * H, 0.0);
  RefOut want = Reference(s, d);

  const bool l1 = s.layout == 1;
  runtime::Tensor x = l1 ? ToTensor(s.dtype, {B, s.seq, s.input}, SwapFirstTwo(d.x, s.seq, B, s.input))
                         : ToTensor(s.dtype, {s.seq, B, s.input}, d.x);
  auto state = [&](const std::vector<double>& v) {
    return l1 ? ToTensor(s.dtype, {B, nd, H}, SwapFirstTwo(v, nd, B, H)) : ToTensor(s.dtype, {nd, B, H}, v);
  };
  runtime::Tensor w = ToTensor(s.dtype, {nd, G * H, s.input}, d.w);
  runtime::Tensor r = ToTensor(s.dtype, {nd, G * H, H}, d.r);
  runtime::Tensor b = ToTensor(s.dtype, {nd, 2 * G * H}, d.b);
  runtime::Tensor h0 = state(d.h0), c0 = state(d.c0);
  runtime::Tensor p = ToTensor(s.dtype, {nd, 3 * H}, d.p);
  runtime::Tensor lens = MakeTensor(DataType::kInt32, {B}, s.lens.empty() ? std::vector<int32_t>(B, 0) : s.lens);
  std::vector<const runtime::Tensor*> in = {&x, &w, &r, s.bias ? &b : nullptr, s.lens.empty() ? nullptr : &lens,
                                            s.h0 ? &h0 : nullptr};
  if (s.op == "LSTM") {
    in.push_back(s.c0 ? &c0 : nullptr);
    in.push_back(s.peep ? &p : nullptr);
  }
  ir::Node node = BuildNode(s);
  // Both the reference code and the optimised LSTM cell (fast/
  // recurrent_cell.cpp), against the float64 equations.
  for (bool optimised : {false, true}) {
  SCOPED_TRACE(optimised ? "optimised" : "reference");
  auto result = RunKernel(node, s.opset, in, optimised);
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  const std::vector<runtime::Tensor>& out = *result;
  const double tol = Tolerance(s.dtype);
  if (node.outputs.size() > 0 && !node.outputs[0].empty()) {
    std::vector<int64_t> shape = l1 ? std::vector<int64_t>{B, s.seq, nd, H} : std::vector<int64_t>{s.seq, nd, B, H};
    ASSERT_EQ(out[0].shape(), shape);
    std::vector<double> y = FromTensor(out[0]);
    if (l1) {  // [batch, seq, nd, H] -> [seq, nd, batch, H]
      std::vector<double> t(y.size());
      for (int64_t bb = 0; bb < B; ++bb)
        for (int64_t ss = 0; ss < s.seq; ++ss)
          for (int64_t dd = 0; dd < nd; ++dd)
            for (int64_t h = 0; h < H; ++h) t[((ss * nd + dd) * B + bb) * H + h] = y[((bb * s.seq + ss) * nd + dd) * H + h];
      y = t;
    }
    ExpectNear(y, want.y, tol, "Y");
  }
  for (size_t o = 1; o < node.outputs.size(); ++o) {
    if (node.outputs[o].empty()) continue;
    std::vector<double> v = FromTensor(out[o]);
    if (l1) v = SwapFirstTwo(v, B, nd, H);
    ExpectNear(v, o == 1 ? want.yh : want.yc, tol, o == 1 ? "Y_h" : "Y_c");
  }
  }
}

// ---- kernel tests -----------------------------------------------------------------

class RecurrentAllOps : public ::testing::TestWithParam<std::string> {};

TEST_P(RecurrentAllOps, DirectionsLayoutsAndOptionalInputs) {
  for (std::string dir : {"forward", "reverse", "bidirectional"})
    for (int64_t layout : {0, 1})
      for (int optional = 0; optional < 2; ++optional) {
        Spec s;
        s.op = GetParam();
        s.direction = dir;
        s.layout = layout;
        s.bias = s.h0 = s.c0 = s.peep = optional == 1;
        Check(s);
      }
}

TEST_P(RecurrentAllOps, SequenceLensShorterThanSeqLength) {
  for (std::string dir : {"forward", "reverse", "bidirectional"})
    for (int64_t layout : {0, 1}) {
      Spec s;
      s.op = GetParam();
      s.direction = dir;
      s.layout = layout;
      s.seq = 5;
      s.batch = 4;
      s.lens = {5, 2, 0, 3};
      s.bias = s.h0 = s.c0 = true;
      Check(s);
    }
}

TEST_P(RecurrentAllOps, OddSizesAndOpset7And22) {
  Spec s;
  s.op = GetParam();
  s.seq = 7;
  s.batch = 3;
  s.input = 13;
  s.hidden = 9;
  s.bias = true;
  s.opset = 7;
  Check(s);
  s.opset = 22;
  s.direction = "bidirectional";
  Check(s);
  s.hidden_attr = false;  // hidden_size comes from R
  Check(s);
}

// The optimised LSTM cell runs its element loops in blocks of 16 and the
// rest one at a time (fast/recurrent_cell.cpp): hidden sizes 13 (no whole
// block), 127 (7 blocks and 15 more) and 128, with peepholes, with and
// without a clip that saturates part of the gates, and with input_forget,
// against the float64 equations (Check runs the reference code too).
TEST(Lstm, OptimisedCellAtOddHiddenSizesWithClipPeepholesAndInputForget) {
  for (int64_t hidden : {13, 127, 128}) {
    for (bool clip : {false, true}) {
      for (int64_t input_forget : {0, 1}) {
        SCOPED_TRACE(::testing::Message() << "hidden " << hidden << " clip " << clip << " input_forget "
                                          << input_forget);
        Spec s;
        s.seq = 5;
        s.batch = 3;
        s.input = 7;
        s.hidden = hidden;
        s.bias = s.h0 = s.c0 = s.peep = true;
        if (clip) s.clip = 0.3f;
        s.input_forget = input_forget;
        s.direction = "bidirectional";
        Check(s);
      }
    }
  }
}

TEST_P(RecurrentAllOps, Dtypes) {
  for (DataType t : {DataType::kFloat64, DataType::kFloat16, DataType::kBfloat16}) {
    Spec s;
    s.op = GetParam();
    s.dtype = t;
    s.direction = "bidirectional";
    s.bias = s.h0 = s.c0 = s.peep = true;
    s.lens = {3, 1};
    Check(s);
  }
}

TEST_P(RecurrentAllOps, OmittedOutputs) {
  for (std::vector<std::string> outs : std::vector<std::vector<std::string>>{
           {"", "Y_h"}, {"Y"}, {"", "", "Y_c"}, {"Y", "", "Y_c"}, {}}) {
    Spec s;
    s.op = GetParam();
    s.outputs = outs;
    s.h0 = true;
    Check(s);
  }
}

TEST_P(RecurrentAllOps, ClipAndEmptySizes) {
  Spec s;
  s.op = GetParam();
  s.clip = 0.3f;
  s.bias = true;
  Check(s);
  s.clip.reset();
  s.seq = 0;  // empty sequence: Y is empty, Y_h is the initial state
  s.h0 = s.c0 = true;
  Check(s);
  s.seq = 3;
  s.batch = 0;
  Check(s);
}

INSTANTIATE_TEST_SUITE_P(Ops, RecurrentAllOps, ::testing::Values("RNN", "GRU", "LSTM"));

TEST(Recurrent, RnnEveryActivationWithAlphaBeta) {
  const std::vector<std::string> names = {"Relu", "Tanh", "Sigmoid", "Affine", "LeakyRelu", "ThresholdedRelu",
                                          "ScaledTanh", "HardSigmoid", "Elu", "Softsign", "Softplus"};
  for (const std::string& n : names) {
    Spec s;
    s.op = "RNN";
    s.acts = {n};
    Check(s);  // defaults for alpha/beta
    s.acts = {n, n};
    s.direction = "bidirectional";
    s.alphas = {0.7f, 0.4f};
    s.betas = {0.3f, -0.2f};
    Check(s);
  }
}

TEST(Recurrent, AlphaBetaConsumedOnlyByFunctionsThatTakeThem) {
  Spec s;
  s.op = "LSTM";
  s.acts = {"HardSigmoid", "Tanh", "ScaledTanh", "Sigmoid", "LeakyRelu", "Elu"};
  s.alphas = {0.3f, 0.8f, 0.05f, 0.6f};
  s.betas = {0.45f, 1.3f};
  s.direction = "bidirectional";
  s.bias = s.h0 = s.c0 = s.peep = true;
  Check(s);
}

TEST(Recurrent, ActivationNamesAreCaseInsensitiveAndOneSetServesBothDirections) {
  Spec s;
  s.op = "GRU";
  s.direction = "bidirectional";
  s.acts = {"Sigmoid", "Tanh"};  // given once: used for both directions
  Check(s);
  s.acts = {"sigmoid", "TANH"};
  Check(s);
}

TEST(Recurrent, LstmInputForgetAndPeepholes) {
  Spec s;
  s.op = "LSTM";
  s.input_forget = 1;
  s.peep = s.bias = s.h0 = s.c0 = true;
  s.direction = "bidirectional";
  s.lens = {2, 3};
  Check(s);
}

// A bidirectional op's two directions run at once on the OpenMP pool where
// the node may use two threads (recurrent.cpp); with one thread they run in
// turn. The outputs must not differ by a bit, odd sizes, every op, both
// layouts, ragged sequence lengths.
TEST(Recurrent, BidirectionalDirectionsTogetherGiveTheSameBits) {
  if (!ParallelPoolAvailable() || PoolThreadsFor(2, 1) < 2) {
    GTEST_SKIP() << "no OpenMP pool of two threads here: the directions run in turn";
  }
  for (const std::string op : {"RNN", "GRU", "LSTM"}) {
    for (int64_t layout : {0, 1}) {
      SCOPED_TRACE(op + " layout " + std::to_string(layout));
      Spec s;
      s.op = op;
      s.direction = "bidirectional";
      s.seq = 13, s.batch = 3, s.input = 13, s.hidden = 127, s.layout = layout;
      s.bias = s.h0 = s.c0 = true;
      s.lens = {13, 7, 1};
      std::mt19937 rng(5);
      std::uniform_real_distribution<double> dist(-1.0, 1.0);
      auto gen = [&](int64_t n) {
        std::vector<double> v(static_cast<size_t>(n));
        for (double& e : v) e = dist(rng);
        return v;
      };
      const int64_t G = s.gates(), H = s.hidden, B = s.batch;
      const std::vector<int64_t> x_shape = layout ? std::vector<int64_t>{B, s.seq, s.input}
                                                  : std::vector<int64_t>{s.seq, B, s.input};
      const std::vector<int64_t> state = layout ? std::vector<int64_t>{B, 2, H} : std::vector<int64_t>{2, B, H};
      runtime::Tensor x = ToTensor(s.dtype, x_shape, gen(s.seq * B * s.input));
      runtime::Tensor w = ToTensor(s.dtype, {2, G * H, s.input}, gen(2 * G * H * s.input));
      runtime::Tensor r = ToTensor(s.dtype, {2, G * H, H}, gen(2 * G * H * H));
      runtime::Tensor b = ToTensor(s.dtype, {2, 2 * G * H}, gen(2 * 2 * G * H));
      runtime::Tensor h0 = ToTensor(s.dtype, state, gen(2 * B * H));
      runtime::Tensor c0 = ToTensor(s.dtype, state, gen(2 * B * H));
      runtime::Tensor lens = MakeTensor(DataType::kInt32, {B}, s.lens);
      std::vector<const runtime::Tensor*> in = {&x, &w, &r, &b, &lens, &h0};
      if (op == "LSTM") in.insert(in.end(), {&c0, nullptr});
      const ir::Node node = BuildNode(s);
      for (bool optimised : {false, true}) {
        SCOPED_TRACE(optimised ? "optimised" : "reference");
        auto together = RunKernel(node, s.opset, in, optimised);
        Result<std::vector<runtime::Tensor>> in_turn = InternalError("not run");
        {
          ScopedGemmThreadLimit one(1);
          in_turn = RunKernel(node, s.opset, in, optimised);
        }
        ASSERT_TRUE(together.ok() && in_turn.ok());
        ASSERT_EQ(together->size(), in_turn->size());
        for (size_t o = 0; o < together->size(); ++o) {
          const runtime::Tensor& t = (*together)[o];
          const runtime::Tensor& u = (*in_turn)[o];
          ASSERT_EQ(t.shape(), u.shape());
          EXPECT_EQ(std::memcmp(t.raw_data(), u.raw_data(), t.byte_size()), 0) << "output " << o;
        }
      }
    }
  }
}

TEST(Recurrent, GruLinearBeforeReset) {
  for (int64_t layout : {0, 1}) {
    Spec s;
    s.op = "GRU";
    s.lbr = 1;
    s.layout = layout;
    s.bias = s.h0 = true;
    s.direction = "reverse";
    s.lens = {1, 3};
    Check(s);
  }
}

// ---- errors -------------------------------------------------------------------------

Status RunLstmWith(std::vector<ir::Attribute> attrs, std::vector<int64_t> wshape, std::vector<int32_t> lens) {
  runtime::Tensor x = F32({2, 1, 3}, std::vector<float>(6, 0.5f));
  runtime::Tensor w = F32(wshape, std::vector<float>(runtime::ElementCount(wshape).value(), 0.1f));
  runtime::Tensor r = F32({1, 8, 2}, std::vector<float>(16, 0.1f));
  runtime::Tensor l = MakeTensor(DataType::kInt32, {static_cast<int64_t>(lens.size())}, lens);
  ir::Node node = MakeNode("LSTM", {"X", "W", "R", "", lens.empty() ? "" : "L"}, {"Y"}, std::move(attrs));
  auto r2 = RunKernel(node, 14, {&x, &w, &r, nullptr, lens.empty() ? nullptr : &l});
  return std::move(r2).TakeStatus();
}

TEST(RecurrentErrors, BadValuesNameTheNode) {
  Status s = RunLstmWith({}, {1, 8, 4}, {});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.summary().find("LSTM"), std::string::npos) << s.summary();
  EXPECT_NE(s.summary().find("W"), std::string::npos) << s.summary();
  s = RunLstmWith({}, {1, 8, 3}, {3});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.summary().find("sequence_lens"), std::string::npos) << s.summary();
  s = RunLstmWith({}, {1, 8, 3}, {-1});
  EXPECT_FALSE(s.ok());
  s = RunLstmWith({StringAttr("direction", "sideways")}, {1, 8, 3}, {});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.summary().find("sideways"), std::string::npos);
  s = RunLstmWith({IntAttr("hidden_size", 3)}, {1, 8, 3}, {});
  EXPECT_FALSE(s.ok());
  s = RunLstmWith({IntAttr("layout", 2)}, {1, 8, 3}, {});
  EXPECT_FALSE(s.ok());
  ir::Attribute acts;
  acts.name = "activations";
  acts.type = ir::AttributeType::kStrings;
  acts.strings = {"Sigmoid", "Cosh", "Tanh"};
  s = RunLstmWith({acts}, {1, 8, 3}, {});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.summary().find("Cosh"), std::string::npos);
  acts.strings = {"Sigmoid", "Tanh"};
  s = RunLstmWith({acts}, {1, 8, 3}, {});
  EXPECT_FALSE(s.ok());
  EXPECT_TRUE(RunLstmWith({}, {1, 8, 3}, {2}).ok());
}

TEST(RecurrentErrors, IntegerInputIsUnsupported) {
  runtime::Tensor x = MakeTensor(DataType::kInt32, {1, 1, 1}, std::vector<int32_t>{1});
  ir::Node node = MakeNode("RNN", {"X", "W", "R"}, {"Y"}, {IntAttr("hidden_size", 1)});
  auto r = RunKernel(node, 14, {&x, &x, &x});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kUnsupported);
}

// ---- shape inference --------------------------------------------------------------

ir::TypeInfo Sym(DataType t, std::vector<ir::Dim> dims) { return ops::TensorType(t, std::move(dims)); }

TEST(RecurrentInference, SymbolicDimsBothLayouts) {
  using ir::Dim;
  ir::TypeInfo x = Sym(DataType::kFloat32, {Dim::Symbolic("T"), Dim::Symbolic("N"), Dim::Known(5)});
  ir::TypeInfo w = Sym(DataType::kFloat32, {Dim::Known(2), Dim::Known(12), Dim::Known(5)});
  ir::TypeInfo r = Sym(DataType::kFloat32, {Dim::Known(2), Dim::Known(12), Dim::Known(3)});
  ir::Node node = MakeNode("LSTM", {"X", "W", "R"}, {"Y", "Y_h", "Y_c"},
                           {StringAttr("direction", "bidirectional"), IntAttr("hidden_size", 3)});
  auto out = InferNode(node, 14, {&x, &w, &r});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(ir::TypeToString((*out)[0]), "float32[T,2,N,3]");
  EXPECT_EQ(ir::TypeToString((*out)[1]), "float32[2,N,3]");
  EXPECT_EQ(ir::TypeToString((*out)[2]), "float32[2,N,3]");
  node.attributes.push_back(IntAttr("layout", 1));
  out = InferNode(node, 14, {&x, &w, &r});
  ASSERT_TRUE(out.ok());
  // layout 1 reads X as [batch, seq, input]: batch is T here, seq is N.
  EXPECT_EQ(ir::TypeToString((*out)[0]), "float32[T,N,2,3]");
  EXPECT_EQ(ir::TypeToString((*out)[1]), "float32[T,2,3]");
}

TEST(RecurrentInference, HiddenFromRAndUnknownRank) {
  using ir::Dim;
  ir::TypeInfo x = ops::TensorTypeUnknownShape(DataType::kFloat16);
  ir::TypeInfo w = Sym(DataType::kFloat16, {Dim::Known(1), Dim::Known(3), Dim::Symbolic("I")});
  ir::TypeInfo r = Sym(DataType::kFloat16, {Dim::Known(1), Dim::Known(3), Dim::Known(1)});
  ir::Node node = MakeNode("GRU", {"X", "W", "R"}, {"Y", "Y_h"});
  auto out = InferNode(node, 22, {&x, &w, &r});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_FALSE((*out)[0].shape.rank_known);
  EXPECT_EQ((*out)[0].elem_type, DataType::kFloat16);
  ir::TypeInfo x3 = Sym(DataType::kFloat16, {Dim::Known(4), Dim::Known(2), Dim::Symbolic("I")});
  out = InferNode(node, 22, {&x3, &w, &r});
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(ir::TypeToString((*out)[1]), "float16[1,2,1]");
  ir::TypeInfo r_unknown = ops::TensorTypeUnknownShape(DataType::kFloat16);
  ir::TypeInfo w_unknown = ops::TensorTypeUnknownShape(DataType::kFloat16);
  out = InferNode(node, 22, {&x3, &w_unknown, &r_unknown});
  ASSERT_TRUE(out.ok());
  EXPECT_TRUE((*out)[1].shape.dims[2].is_symbolic());
}

TEST(RecurrentInference, DefiniteInconsistenciesFail) {
  using ir::Dim;
  ir::TypeInfo x = Sym(DataType::kFloat32, {Dim::Known(2), Dim::Known(1), Dim::Known(5)});
  ir::TypeInfo w = Sym(DataType::kFloat32, {Dim::Known(1), Dim::Known(4), Dim::Known(6)});
  ir::TypeInfo r = Sym(DataType::kFloat32, {Dim::Known(1), Dim::Known(4), Dim::Known(4)});
  ir::Node node = MakeNode("RNN", {"X", "W", "R"}, {"Y"}, {IntAttr("hidden_size", 4)});
  auto out = InferNode(node, 14, {&x, &w, &r});
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().summary().find("RNN"), std::string::npos) << out.status().summary();
  ir::TypeInfo w_ok = Sym(DataType::kFloat32, {Dim::Known(1), Dim::Known(4), Dim::Known(5)});
  EXPECT_TRUE(InferNode(node, 14, {&x, &w_ok, &r}).ok());
  ir::Node bidir = MakeNode("RNN", {"X", "W", "R"}, {"Y"},
                            {IntAttr("hidden_size", 4), StringAttr("direction", "bidirectional")});
  EXPECT_FALSE(InferNode(bidir, 14, {&x, &w_ok, &r}).ok());  // W has 1 direction
  ir::TypeInfo x2 = Sym(DataType::kFloat32, {Dim::Known(2), Dim::Known(5)});
  EXPECT_FALSE(InferNode(node, 14, {&x2, &w_ok, &r}).ok());  // rank 2
}

}  // namespace
}  // namespace vigil::cpu::testing
