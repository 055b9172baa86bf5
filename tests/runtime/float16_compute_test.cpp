// A float32 model run in float16 (SessionOptions::float16_inputs,
// runtime/float16_compute.h), on the CPU backend: which values change type,
// which stay float32, and the outputs against the same model in float32.
#include "runtime/float16_compute.h"

#include <cmath>
#include <map>
#include <random>

#include <gtest/gtest.h>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/kernel_type_constraints.h"
#include "runtime/session.h"
#include "../ir/graph_builder.h"

namespace vigil::runtime {
namespace {

using namespace vigil::ir::testing;
using ir::DataType;

// x float32[1,3,7,5], n int64[1] ->
//   Conv(w, b, pads 1) -> Relu -> Resize(scales [1,1,2,2], nearest) = u
//   Mul(u, Cast(n, float32)) -> Min(., 1e6) = y (an output, also read by)
//   CumSum(y, axis 3) = z (an output; CumSum stays float32)
// 13 output channels, odd spatial sizes.
ir::Model MixedModel() {
  ir::Model m;
  m.ir_version = 8;
  m.opset_imports = {{"", 17}};
  m.graph.name = "mixed";
  m.graph.inputs = {TensorValue("x", DataType::kFloat32, {1, 3, 7, 5}), TensorValue("n", DataType::kInt64, {1})};
  m.graph.outputs = {TensorValue("y", DataType::kFloat32, {1, 13, 14, 10}),
                     TensorValue("z", DataType::kFloat32, {1, 13, 14, 10})};
  m.graph.initializers = {
      OwnedInitializer<float>("w", DataType::kFloat32, {13, 3, 3, 3}, RandomFloats(13 * 27, 1)),
      OwnedInitializer<float>("b", DataType::kFloat32, {13}, RandomFloats(13, 2)),
      OwnedInitializer<float>("scales", DataType::kFloat32, {4}, {1, 1, 2, 2}),
      OwnedInitializer<float>("huge", DataType::kFloat32, {}, {1e6f}),
      OwnedInitializer<int64_t>("axis", DataType::kInt64, {}, {3}),
  };
  ir::Node conv = MakeNode("Conv", {"x", "w", "b"}, {"c"}, "conv");
  conv.attributes = {IntsAttr("pads", {1, 1, 1, 1})};
  ir::Node cast = MakeNode("Cast", {"n"}, {"nf"}, "cast");
  cast.attributes = {IntAttr("to", static_cast<int64_t>(DataType::kFloat32))};
  m.graph.nodes = {conv,
                   MakeNode("Relu", {"c"}, {"r"}, "relu"),
                   MakeNode("Resize", {"r", "", "scales"}, {"u"}, "resize"),
                   cast,
                   MakeNode("Mul", {"u", "nf"}, {"v"}, "mul"),
                   MakeNode("Min", {"v", "huge"}, {"y"}, "min"),
                   MakeNode("CumSum", {"y", "axis"}, {"z"}, "cumsum")};
  return m;
}

SessionOptions Options(bool float16) {
  SessionOptions o;
  o.backends.push_back(cpu::MakeCpuBackend());
  if (float16) o.float16_inputs = cpu::TakesFloat16Input;
  return o;
}

std::map<std::string, std::vector<double>> RunOn(const Session& s) {
  std::vector<float> x(3 * 7 * 5);
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.37f * static_cast<float>(i));
  int64_t n = 3;
  auto out = s.Run({{"x", DataType::kFloat32, {1, 3, 7, 5}, x.data(), x.size() * 4, ""},
                    {"n", DataType::kInt64, {1}, &n, 8, ""}});
  EXPECT_TRUE(out.ok()) << out.status().ToString();
  std::map<std::string, std::vector<double>> values;
  if (!out.ok()) return values;
  for (const NamedTensor& t : *out) {
    EXPECT_EQ(t.tensor.dtype(), DataType::kFloat32) << t.name;
    EXPECT_EQ(t.tensor.shape(), (std::vector<int64_t>{1, 13, 14, 10})) << t.name;
    std::vector<double>& v = values[t.name];
    for (uint64_t i = 0; i < t.tensor.element_count(); ++i) v.push_back(t.tensor.data<float>()[i]);
  }
  return values;
}

const ir::Tensor* FindInitializer(const ir::Model& m, const std::string& name) {
  for (const ir::Tensor& t : m.graph.initializers) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

const ir::Node* FindNode(const ir::Model& m, const std::string& name) {
  for (const ir::Node& n : m.graph.nodes) {
    if (n.name == name) return &n;
  }
  return nullptr;
}

// The dtype of the initializer that input `i` of node `name` reads, or
// kUndefined (after failing the test) when there is none.
DataType InitializerDtype(const ir::Model& m, const std::string& name, size_t i) {
  const ir::Node* node = FindNode(m, name);
  const ir::Tensor* t = node && i < node->inputs.size() ? FindInitializer(m, node->inputs[i]) : nullptr;
  EXPECT_NE(t, nullptr) << "input " << i << " of " << name << " is not an initializer";
  return t ? t->dtype : DataType::kUndefined;
}

TEST(Float16Compute, WeightsAndNodesBecomeFloat16WhileTheModelsTypesStay) {
  auto half = Session::Create(MixedModel(), Options(true));
  ASSERT_TRUE(half.ok()) << half.status().ToString();
  const ir::Model& m = (*half)->model();
  // The inputs and outputs keep the model's types.
  EXPECT_EQ(m.graph.inputs[0].type.elem_type, DataType::kFloat32);
  for (const ir::ValueInfo& out : m.graph.outputs) EXPECT_EQ(out.type.elem_type, DataType::kFloat32) << out.name;

  EXPECT_EQ(InitializerDtype(m, "conv", 1), DataType::kFloat16);
  EXPECT_EQ(FindInitializer(m, "w"), nullptr) << "the float32 weights are no longer read, so not kept";
  // Resize's scales are float32 by definition.
  EXPECT_EQ(InitializerDtype(m, "resize", 2), DataType::kFloat32);
  // The Cast to float32 now casts to float16.
  const ir::Node* cast = FindNode(m, "cast");
  ASSERT_NE(cast, nullptr);
  EXPECT_EQ(cast->FindAttribute("to")->i, static_cast<int64_t>(DataType::kFloat16));
  // CumSum stays float32: its input comes through a Cast back.
  const ir::Node* cumsum = FindNode(m, "cumsum");
  ASSERT_NE(cumsum, nullptr);
  const ir::Node* feeder = ProducerOf(m, cumsum->inputs[0]);
  ASSERT_NE(feeder, nullptr);
  EXPECT_EQ(feeder->op_type, "Cast");
  EXPECT_EQ(feeder->FindAttribute("to")->i, static_cast<int64_t>(DataType::kFloat32));

  const Float16Summary& s = (*half)->float16_summary();
  EXPECT_EQ(s.clamped_values, 1u);  // 1e6
  EXPECT_EQ(s.converted_nodes, 6u);  // all but CumSum
  EXPECT_GE(s.converted_initializers, 3u);
}

TEST(Float16Compute, OutputsStayWithinFloat16RoundingOfTheFloat32Run) {
  auto half = Session::Create(MixedModel(), Options(true));
  auto full = Session::Create(MixedModel(), Options(false));
  ASSERT_TRUE(half.ok()) << half.status().ToString();
  ASSERT_TRUE(full.ok()) << full.status().ToString();
  auto got = RunOn(**half), want = RunOn(**full);
  ASSERT_EQ(got.size(), 2u);
  for (const auto& [name, w] : want) {
    const std::vector<double>& g = got[name];
    ASSERT_EQ(g.size(), w.size()) << name;
    double err = 0, norm = 0;
    for (size_t i = 0; i < g.size(); ++i) {
      ASSERT_FALSE(std::isnan(g[i])) << name << "[" << i << "]";
      err += (g[i] - w[i]) * (g[i] - w[i]);
      norm += w[i] * w[i];
    }
    const double rel = std::sqrt(err / norm);
    // float16 keeps 11 significant bits (unit roundoff 4.9e-4); a 27-term
    // dot product and a few elementwise steps stay within a few units.
    EXPECT_LE(rel, 3e-3) << name;
    // And it did compute in float16: not float32's result.
    EXPECT_GT(rel, 1e-5) << name;
  }
}

// x float32[1,13,3,5] -> BatchNormalization with running variances up to
// 1e7 (as a trained detector has): float16 cannot hold them, so they stay
// float32 while x, the scale and the bias become float16.
TEST(Float16Compute, StatisticsBeyondFloat16StayFloat32) {
  auto model = [] {
    ir::Model m;
    m.ir_version = 8;
    m.opset_imports = {{"", 17}};
    m.graph.inputs = {TensorValue("x", DataType::kFloat32, {1, 13, 3, 5})};
    m.graph.outputs = {TensorValue("y", DataType::kFloat32, {1, 13, 3, 5})};
    std::vector<float> var(13), mean = RandomFloats(13, 7);
    for (size_t c = 0; c < 13; ++c) {
      var[c] = 1e7f * static_cast<float>(c + 1);
      mean[c] *= 300;
    }
    m.graph.initializers = {OwnedInitializer<float>("scale", DataType::kFloat32, {13}, RandomFloats(13, 5)),
                            OwnedInitializer<float>("bias", DataType::kFloat32, {13}, RandomFloats(13, 6)),
                            OwnedInitializer<float>("mean", DataType::kFloat32, {13}, mean),
                            OwnedInitializer<float>("var", DataType::kFloat32, {13}, var)};
    m.graph.nodes = {MakeNode("BatchNormalization", {"x", "scale", "bias", "mean", "var"}, {"y"}, "bn")};
    return m;
  };
  auto half = Session::Create(model(), Options(true));
  auto full = Session::Create(model(), Options(false));
  ASSERT_TRUE(half.ok()) << half.status().ToString();
  ASSERT_TRUE(full.ok()) << full.status().ToString();
  EXPECT_EQ(InitializerDtype((*half)->model(), "bn", 4), DataType::kFloat32);  // the variances
  EXPECT_EQ(InitializerDtype((*half)->model(), "bn", 1), DataType::kFloat16);  // the scale
  EXPECT_EQ((*half)->float16_summary().clamped_values, 0u);

  std::vector<float> x(13 * 15);
  for (size_t i = 0; i < x.size(); ++i) x[i] = 2000.0f * std::sin(0.37f * static_cast<float>(i));
  auto a = (*half)->Run({{"x", DataType::kFloat32, {1, 13, 3, 5}, x.data(), x.size() * 4, ""}});
  auto b = (*full)->Run({{"x", DataType::kFloat32, {1, 13, 3, 5}, x.data(), x.size() * 4, ""}});
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  double err = 0, norm = 0;
  for (uint64_t i = 0; i < x.size(); ++i) {
    const double g = (*a)[0].tensor.data<float>()[i], w = (*b)[0].tensor.data<float>()[i];
    ASSERT_FALSE(std::isnan(g));
    err += (g - w) * (g - w);
    norm += w * w;
  }
  EXPECT_LE(std::sqrt(err / norm), 3e-3);
}

// y = Where(x > 0, x, -1e9): the fill value goes with x's type (Where's T),
// so it becomes float16, clamped to -65504, and the node computes in
// float16; the condition stays bool.
TEST(Float16Compute, WhereFillValueFollowsTheDataType) {
  ir::Model m;
  m.ir_version = 8;
  m.opset_imports = {{"", 17}};
  m.graph.inputs = {TensorValue("x", DataType::kFloat32, {13})};
  m.graph.outputs = {TensorValue("y", DataType::kFloat32, {13})};
  m.graph.initializers = {OwnedInitializer<float>("zero", DataType::kFloat32, {}, {0.0f}),
                          OwnedInitializer<float>("fill", DataType::kFloat32, {}, {-1e9f})};
  m.graph.nodes = {MakeNode("Greater", {"x", "zero"}, {"positive"}, "greater"),
                   MakeNode("Where", {"positive", "x", "fill"}, {"y"}, "where")};
  auto half = Session::Create(m, Options(true));
  ASSERT_TRUE(half.ok()) << half.status().ToString();
  EXPECT_EQ(InitializerDtype((*half)->model(), "where", 2), DataType::kFloat16);
  EXPECT_EQ((*half)->float16_summary().clamped_values, 1u);
  std::vector<float> x(13);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i) - 6.5f;
  auto out = (*half)->Run({{"x", DataType::kFloat32, {13}, x.data(), x.size() * 4, ""}});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  for (size_t i = 0; i < x.size(); ++i) {
    EXPECT_EQ((*out)[0].tensor.data<float>()[i], x[i] > 0 ? x[i] : -65504.0f) << i;
  }
}

TEST(Float16Compute, WithoutTheOptionNothingChanges) {
  auto full = Session::Create(MixedModel(), Options(false));
  ASSERT_TRUE(full.ok()) << full.status().ToString();
  for (const ir::Tensor& t : (*full)->model().graph.initializers) {
    EXPECT_NE(t.dtype, DataType::kFloat16) << t.name;
  }
  EXPECT_EQ((*full)->float16_summary().converted_nodes, 0u);
}

}  // namespace
}  // namespace vigil::runtime
