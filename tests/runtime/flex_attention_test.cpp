// ai.onnx.preview FlexAttention through a CPU session (expanded into ONNX ops
// by ir/expand_flex_attention): grouped heads (6 query heads over 2 key/value
// heads) on odd sizes (L = 13, S = 7, E = 24, Ev = 5) with a score_mod that
// reads a value of the enclosing graph and a prob_mod, against a float64
// evaluation written here from the op's definition; symbolic batch and
// sequence dims; a float64 model; and the diagnoses for a body of the wrong
// dtype and an undeclared Q dtype.
#include <cmath>
#include <memory>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "backends/cpu/cpu_backend.h"
#include "runtime/session.h"
#include "../ir/graph_builder.h"

namespace vigil::runtime {
namespace {

using namespace vigil::ir::testing;
using ir::DataType;

constexpr int64_t kB = 2, kHq = 6, kHkv = 2, kL = 13, kS = 7, kE = 24, kEv = 5;

SessionOptions CpuOnly() {
  SessionOptions o;
  o.backends = {cpu::MakeCpuBackend()};
  return o;
}

ir::Attribute GraphAttr(std::string name, ir::Graph g) {
  ir::Attribute a;
  a.name = std::move(name);
  a.type = ir::AttributeType::kGraph;
  a.g = std::make_shared<ir::Graph>(std::move(g));
  return a;
}

// score_mod: scores + bias (bias [S], a graph input of the enclosing graph);
// prob_mod: probs * probs.
ir::Graph ScoreMod(DataType p) {
  ir::Graph g;
  g.name = "score_mod";
  g.inputs = {TensorValue("scores", p, {})};
  g.inputs[0].type.shape.rank_known = false;
  g.nodes = {MakeNode("Add", {"scores", "bias"}, {"biased"}, "add_bias")};
  g.outputs = {TensorValue("biased", p, {})};
  g.outputs[0].type.shape.rank_known = false;
  return g;
}

ir::Graph ProbMod(DataType p) {
  ir::Graph g;
  g.name = "prob_mod";
  g.inputs = {TensorValue("probs", p, {})};
  g.inputs[0].type.shape.rank_known = false;
  g.nodes = {MakeNode("Mul", {"probs", "probs"}, {"squared"}, "square")};
  g.outputs = {TensorValue("squared", p, {})};
  g.outputs[0].type.shape.rank_known = false;
  return g;
}

ir::Model FlexModel(DataType t, bool symbolic, DataType body_type) {
  ir::Node flex = MakeNode("FlexAttention", {"q", "k", "v"}, {"y"}, "flex");
  flex.domain = "ai.onnx.preview";
  flex.attributes = {GraphAttr("score_mod", ScoreMod(body_type)), GraphAttr("prob_mod", ProbMod(body_type))};
  ir::Model m;
  m.ir_version = 10;
  m.opset_imports = {{"", 26}, {"ai.onnx.preview", 1}};
  m.graph.name = "main";
  auto value = [&](std::string name, std::vector<int64_t> dims) {
    ir::ValueInfo vi = TensorValue(std::move(name), t, dims);
    if (symbolic && dims.size() == 4) {
      vi.type.shape.dims[0] = ir::Dim::Symbolic("batch");
      vi.type.shape.dims[2] = ir::Dim::Symbolic(vi.name == "q" || vi.name == "y" ? "L" : "S");
    }
    return vi;
  };
  m.graph.inputs = {value("q", {kB, kHq, kL, kE}), value("k", {kB, kHkv, kS, kE}), value("v", {kB, kHkv, kS, kEv}),
                    TensorValue("bias", body_type, {kS})};
  m.graph.nodes = {flex};
  m.graph.outputs = {value("y", {kB, kHq, kL, kEv})};
  return m;
}

std::vector<double> Random(size_t n, std::mt19937& rng) {
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<double> v(n);
  for (double& x : v) x = u(rng);
  return v;
}

// Y[b, h, l, :] = sum_s P'[s] V[b, h / 3, s, :], P' = softmax(q.k / sqrt(E) + bias)^2.
std::vector<double> Reference(const std::vector<double>& q, const std::vector<double>& k, const std::vector<double>& v,
                              const std::vector<double>& bias) {
  std::vector<double> y(static_cast<size_t>(kB * kHq * kL * kEv));
  const double scale = 1.0 / std::sqrt(static_cast<double>(kE));
  for (int64_t b = 0; b < kB; ++b) {
    for (int64_t h = 0; h < kHq; ++h) {
      const int64_t kvh = h / (kHq / kHkv);
      for (int64_t l = 0; l < kL; ++l) {
        std::vector<double> s(kS);
        double top = -INFINITY;
        for (int64_t j = 0; j < kS; ++j) {
          double dot = 0;
          for (int64_t e = 0; e < kE; ++e) {
            dot += q[((b * kHq + h) * kL + l) * kE + e] * k[((b * kHkv + kvh) * kS + j) * kE + e];
          }
          s[j] = dot * scale + bias[j];
          top = std::max(top, s[j]);
        }
        double sum = 0;
        for (double& x : s) sum += (x = std::exp(x - top));
        for (int64_t c = 0; c < kEv; ++c) {
          double acc = 0;
          for (int64_t j = 0; j < kS; ++j) {
            const double p = s[j] / sum;
            acc += p * p * v[((b * kHkv + kvh) * kS + j) * kEv + c];
          }
          y[((b * kHq + h) * kL + l) * kEv + c] = acc;
        }
      }
    }
  }
  return y;
}

template <typename T>
InputBinding Bind(std::string name, DataType dtype, const std::vector<T>& data, std::vector<int64_t> shape) {
  return {std::move(name), dtype, std::move(shape), data.data(), data.size() * sizeof(T), ""};
}

void RunAndCompare(DataType t, bool symbolic) {
  std::mt19937 rng(7);
  const auto q = Random(kB * kHq * kL * kE, rng), k = Random(kB * kHkv * kS * kE, rng),
             v = Random(kB * kHkv * kS * kEv, rng), bias = Random(kS, rng);
  auto session = Session::Create(FlexModel(t, symbolic, t), CpuOnly());
  ASSERT_TRUE(session.ok()) << session.status().ToString();
  std::vector<double> want;
  std::vector<float> qf, kf, vf, bf;  // the float32 inputs, alive for the run
  auto run = [&]() -> Result<std::vector<NamedTensor>> {
    if (t == DataType::kFloat64) {
      return (*session)->Run({Bind("q", t, q, {kB, kHq, kL, kE}), Bind("k", t, k, {kB, kHkv, kS, kE}),
                             Bind("v", t, v, {kB, kHkv, kS, kEv}), Bind("bias", t, bias, {kS})});
    }
    return (*session)->Run({Bind("q", t, qf, {kB, kHq, kL, kE}), Bind("k", t, kf, {kB, kHkv, kS, kE}),
                           Bind("v", t, vf, {kB, kHkv, kS, kEv}), Bind("bias", t, bf, {kS})});
  };
  if (t == DataType::kFloat64) {
    want = Reference(q, k, v, bias);
  } else {
    auto narrow = [](const std::vector<double>& d) { return std::vector<float>(d.begin(), d.end()); };
    auto widen = [](const std::vector<float>& f) { return std::vector<double>(f.begin(), f.end()); };
    qf = narrow(q), kf = narrow(k), vf = narrow(v), bf = narrow(bias);
    want = Reference(widen(qf), widen(kf), widen(vf), widen(bf));
  }
  auto out = run();
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  const Tensor& y = (*out)[0].tensor;
  ASSERT_EQ(y.shape(), (std::vector<int64_t>{kB, kHq, kL, kEv}));
  double err = 0, norm = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    const double got = t == DataType::kFloat64 ? y.data<double>()[i] : y.data<float>()[i];
    ASSERT_FALSE(std::isnan(got)) << "element " << i;
    err += (got - want[i]) * (got - want[i]);
    norm += want[i] * want[i];
  }
  // float32: products of 24 terms and a softmax in float32 (about 1e-7 each).
  EXPECT_LT(std::sqrt(err / norm), t == DataType::kFloat64 ? 1e-14 : 1e-6);
}

TEST(FlexAttention, GroupedHeadsWithModifiersFloat32) { RunAndCompare(DataType::kFloat32, false); }
TEST(FlexAttention, SymbolicDimsFloat32) { RunAndCompare(DataType::kFloat32, true); }
TEST(FlexAttention, Float64ComputesInFloat64) { RunAndCompare(DataType::kFloat64, false); }

TEST(FlexAttention, BodyOfTheWrongDtypeIsNamed) {
  auto session = Session::Create(FlexModel(DataType::kFloat32, false, DataType::kFloat16), CpuOnly());
  ASSERT_FALSE(session.ok());
  const std::string msg = session.status().ToString();
  EXPECT_NE(msg.find("FlexAttention 'flex'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("attribute score_mod takes float16"), std::string::npos) << msg;
}

TEST(FlexAttention, UndeclaredQueryDtypeIsNamed) {
  ir::Model m = FlexModel(DataType::kFloat32, false, DataType::kFloat32);
  m.graph.inputs[0].has_type = false;
  m.graph.inputs[0].type = ir::TypeInfo();
  auto session = Session::Create(std::move(m), CpuOnly());
  ASSERT_FALSE(session.ok());
  EXPECT_NE(session.status().ToString().find("dtype of input Q ('q') is not known"), std::string::npos)
      << session.status().ToString();
}

}  // namespace
}  // namespace vigil::runtime
