// BatchNormalization folded into the Conv before it (ir/fold_batch_norm.h):
// the folded weights and bias against the formula in float64, the outputs
// of a folded graph against the two nodes on the CPU reference kernels (13
// output channels, odd sizes), and the cases it must leave alone.
#include "ir/fold_batch_norm.h"

#include <cmath>
#include <cstring>
#include <random>

#include <gtest/gtest.h>

#include "backends/cpu/cpu_backend.h"
#include "ir/validate.h"
#include "runtime/session.h"
#include "graph_builder.h"

namespace vigil::ir {
namespace {

using namespace vigil::ir::testing;

constexpr int64_t kM = 13;  // output channels
constexpr int64_t kC = 5;   // input channels

Tensor Floats(std::string name, std::vector<int64_t> dims, std::vector<float> v) {
  return OwnedInitializer<float>(std::move(name), DataType::kFloat32, std::move(dims), std::move(v));
}

const Tensor* Find(const Model& m, const std::string& name) {
  for (const Tensor& t : m.graph.initializers) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

std::vector<float> Read(const Tensor& t) {
  std::vector<float> v(t.bytes.size() / 4);
  std::memcpy(v.data(), t.bytes.data(), t.bytes.size());
  return v;
}

// x [2, 5, 9, 7] -> Conv(3x3, pads 1, bias when `bias`) -> BatchNormalization
// (epsilon 1e-3) -> Relu -> y
Model ConvBn(bool bias) {
  Model m;
  m.ir_version = 8;
  m.opset_imports = {{"", 17}};
  m.graph.name = "conv_bn";
  m.graph.inputs = {TensorValue("x", DataType::kFloat32, {2, kC, 9, 7})};
  m.graph.outputs = {TensorValue("y", DataType::kFloat32, {2, kM, 9, 7})};
  m.graph.initializers = {Floats("w", {kM, kC, 3, 3}, RandomFloats(kM * kC * 9, 1, -1, 1)),
                          Floats("scale", {kM}, RandomFloats(kM, 2, 0.5f, 2)), Floats("shift", {kM}, RandomFloats(kM, 3, -1, 1)),
                          Floats("mean", {kM}, RandomFloats(kM, 4, -0.5f, 0.5f)), Floats("var", {kM}, RandomFloats(kM, 5, 0.1f, 3))};
  Node conv = MakeNode("Conv", {"x", "w"}, {"c"}, "conv");
  if (bias) {
    m.graph.initializers.push_back(Floats("b", {kM}, RandomFloats(kM, 6, -1, 1)));
    conv.inputs.push_back("b");
  }
  conv.attributes.push_back(IntsAttr("pads", {1, 1, 1, 1}));
  Node bn = MakeNode("BatchNormalization", {"c", "scale", "shift", "mean", "var"}, {"n"}, "bn");
  Attribute eps;
  eps.name = "epsilon";
  eps.type = AttributeType::kFloat;
  eps.f = 1e-3f;
  bn.attributes.push_back(eps);
  m.graph.nodes = {conv, bn, MakeNode("Relu", {"n"}, {"y"}, "relu")};
  return m;
}

size_t Fold(Model& m) {
  auto n = FoldBatchNormIntoConv(m);
  EXPECT_TRUE(n.ok()) << n.status().ToString();
  Status valid = ValidateModel(m);
  EXPECT_TRUE(valid.ok()) << valid.ToString();
  return n.ok() ? *n : 0;
}

size_t Count(const Model& m, const std::string& op) {
  size_t n = 0;
  for (const Node& node : m.graph.nodes) n += node.op_type == op;
  return n;
}

// y of `m` on the CPU reference kernels, x fixed pseudo-random.
std::vector<float> RunCpu(const Model& m) {
  runtime::SessionOptions o;
  o.backends.push_back(cpu::MakeCpuBackend(cpu::CpuOptions{1, /*reference_kernels=*/true}));
  auto s = runtime::Session::Create(m, std::move(o));
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  if (!s.ok()) return {};
  std::vector<float> x = RandomFloats(2 * kC * 9 * 7, 7, -2, 2);
  auto out = (*s)->Run({{"x", DataType::kFloat32, {2, kC, 9, 7}, x.data(), x.size() * 4, ""}});
  EXPECT_TRUE(out.ok()) << out.status().ToString();
  if (!out.ok()) return {};
  const runtime::Tensor& t = (*out)[0].tensor;
  return std::vector<float>(t.data<float>(), t.data<float>() + t.element_count());
}

TEST(FoldBatchNorm, FoldsIntoTheConvWithTheFormulaInFloat64) {
  for (bool bias : {false, true}) {
    SCOPED_TRACE(bias ? "with B" : "without B");
    Model m = ConvBn(bias);
    const Model original = ConvBn(bias);
    EXPECT_EQ(Fold(m), 1u);
    EXPECT_EQ(Count(m, "BatchNormalization"), 0u);
    ASSERT_EQ(Count(m, "Conv"), 1u);
    const Node& conv = m.graph.nodes[0];
    EXPECT_EQ(conv.outputs[0], "n");  // the BatchNormalization's output
    ASSERT_EQ(conv.inputs.size(), 3u);
    const std::vector<float> w = Read(*Find(original, "w")), scale = Read(*Find(original, "scale")),
                             shift = Read(*Find(original, "shift")), mean = Read(*Find(original, "mean")),
                             var = Read(*Find(original, "var"));
    const std::vector<float> b = bias ? Read(*Find(original, "b")) : std::vector<float>(kM, 0.0f);
    const std::vector<float> w2 = Read(*Find(m, conv.inputs[1])), b2 = Read(*Find(m, conv.inputs[2]));
    ASSERT_EQ(w2.size(), w.size());
    for (int64_t k = 0; k < kM; ++k) {
      const double s = static_cast<double>(scale[k]) / std::sqrt(static_cast<double>(var[k]) + 1e-3f);
      for (int64_t i = 0; i < kC * 9; ++i) {
        EXPECT_EQ(w2[k * kC * 9 + i], static_cast<float>(w[k * kC * 9 + i] * s));
      }
      EXPECT_EQ(b2[k], static_cast<float>((static_cast<double>(b[k]) - mean[k]) * s + shift[k]));
    }
    // The same outputs within float32 roundings of the folded weights.
    const std::vector<float> want = RunCpu(original), got = RunCpu(m);
    ASSERT_EQ(got.size(), want.size());
    ASSERT_FALSE(want.empty());
    size_t nonzero = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      ASSERT_FALSE(std::isnan(got[i])) << i;
      EXPECT_NEAR(got[i], want[i], 1e-5 * (1 + std::fabs(want[i]))) << i;
      nonzero += want[i] != 0;
    }
    EXPECT_GT(nonzero, got.size() / 4);  // the Relu left a real signal
  }
}

TEST(FoldBatchNorm, LeavesTheConvOutputReadElsewhereOrAGraphOutput) {
  Model read_twice = ConvBn(true);
  read_twice.graph.outputs.push_back(TensorValue("z", DataType::kFloat32, {2, kM, 9, 7}));
  read_twice.graph.nodes.push_back(MakeNode("Sigmoid", {"c"}, {"z"}, "other_reader"));
  EXPECT_EQ(Fold(read_twice), 0u);
  Model output = ConvBn(true);
  output.graph.outputs.push_back(TensorValue("c", DataType::kFloat32, {2, kM, 9, 7}));
  EXPECT_EQ(Fold(output), 0u);
  EXPECT_EQ(Count(output, "BatchNormalization"), 1u);
}

TEST(FoldBatchNorm, LeavesTrainingModeAndOverridableStatistics) {
  Model training = ConvBn(true);
  training.graph.nodes[1].attributes.push_back(IntAttr("training_mode", 1));
  EXPECT_EQ(Fold(training), 0u);
  Model overridable = ConvBn(true);  // var is also a graph input: the caller may pass other values
  overridable.graph.inputs.push_back(TensorValue("var", DataType::kFloat32, {kM}));
  EXPECT_EQ(Fold(overridable), 0u);
  Model wanted = ConvBn(true);  // a training output is read
  wanted.graph.nodes[1].outputs = {"n", "running_mean"};
  wanted.graph.outputs.push_back(TensorValue("running_mean", DataType::kFloat32, {kM}));
  EXPECT_EQ(Fold(wanted), 0u);
}

TEST(FoldBatchNorm, SharedWeightsGetAFoldedCopy) {
  Model m = ConvBn(true);
  m.graph.outputs.push_back(TensorValue("other", DataType::kFloat32, {2, kM, 9, 7}));
  Node second = MakeNode("Conv", {"x", "w"}, {"other"}, "second");
  second.attributes.push_back(IntsAttr("pads", {1, 1, 1, 1}));
  m.graph.nodes.push_back(second);
  const std::vector<float> w = Read(*Find(m, "w"));
  EXPECT_EQ(Fold(m), 1u);
  EXPECT_NE(m.graph.nodes[0].inputs[1], "w");
  EXPECT_EQ(m.graph.nodes.back().inputs[1], "w");
  EXPECT_EQ(Read(*Find(m, "w")), w);  // the other Conv's weights as they were
}

}  // namespace
}  // namespace vigil::ir
