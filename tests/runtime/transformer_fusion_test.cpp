// The session's transformer fusions end to end, without a GPU: a fake
// device backend runs every node with the CPU kernels on "device" tensors
// in host memory, so the pass, the partition and the run can be checked
// against a CPU-only session, which does not fuse.
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>

#include <gtest/gtest.h>

#include "backends/cpu/cpu_backend.h"
#include "ir/fuse_gelu.h"
#include "ir/fuse_matmul_bias.h"
#include "runtime/session.h"
#include "fake_device_backend.h"
#include "../ir/graph_builder.h"

namespace vigil::runtime {
namespace {

using namespace vigil::ir::testing;
using ir::DataType;

using testing::FakeDeviceBackend;

// A float32 initializer: random values in [-1, 1), or all `fill` when given.
ir::Tensor Weights(std::string name, std::vector<int64_t> dims, uint32_t seed, float fill = NAN) {
  std::vector<float> v(ElementsOf(dims));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  for (float& x : v) x = std::isnan(fill) ? u(rng) : fill;
  return OwnedInitializer(std::move(name), DataType::kFloat32, std::move(dims), std::move(v));
}

// The MLP half of a ViT block as torch.onnx writes it:
// x [2,5,8] -> LayerNormalization -> MatMul(w1 [8,16]) -> Add(b1) ->
// GELU as Div(1.4142) -> Erf -> Add(1) -> Mul(h) -> Mul(0.5) ->
// MatMul(w2 [16,8]) -> Add(b2) -> Add(x) -> y
ir::Model MlpBlock() {
  ir::Model m;
  m.ir_version = 8;
  m.opset_imports = {{"", 17}};
  m.graph.name = "mlp";
  m.graph.inputs = {TensorValue("x", DataType::kFloat32, {2, 5, 8})};
  m.graph.outputs = {TensorValue("y", DataType::kFloat32, {2, 5, 8})};
  m.graph.initializers = {Weights("gamma", {8}, 1), Weights("beta", {8}, 2), Weights("w1", {8, 16}, 3),
                          Weights("b1", {16}, 4), Weights("w2", {16, 8}, 5), Weights("b2", {8}, 6),
                          Weights("sqrt2", {}, 0, 1.4142135f), Weights("one", {}, 0, 1.0f),
                          Weights("half", {}, 0, 0.5f)};
  m.graph.nodes = {MakeNode("LayerNormalization", {"x", "gamma", "beta"}, {"ln"}, "ln"),
                   MakeNode("MatMul", {"ln", "w1"}, {"p1"}, "fc1"),
                   MakeNode("Add", {"b1", "p1"}, {"h"}, "fc1_bias"),
                   MakeNode("Div", {"h", "sqrt2"}, {"d"}, "div"),
                   MakeNode("Erf", {"d"}, {"e"}, "erf"),
                   MakeNode("Add", {"e", "one"}, {"e1"}, "add1"),
                   MakeNode("Mul", {"h", "e1"}, {"g0"}, "mul"),
                   MakeNode("Mul", {"g0", "half"}, {"g"}, "mul_half"),
                   MakeNode("MatMul", {"g", "w2"}, {"p2"}, "fc2"),
                   MakeNode("Add", {"p2", "b2"}, {"o"}, "fc2_bias"),
                   MakeNode("Add", {"o", "x"}, {"y"}, "residual")};
  return m;
}

SessionOptions Options(bool device) {
  SessionOptions o;
  if (device) o.backends.push_back(std::make_shared<FakeDeviceBackend>());
  o.backends.push_back(cpu::MakeCpuBackend());
  return o;
}

size_t Count(const ir::Model& m, const std::string& op) {
  size_t n = 0;
  for (const ir::Node& node : m.graph.nodes) n += node.op_type == op;
  return n;
}

std::vector<float> RunOn(const Session& s) {
  std::vector<float> x(2 * 5 * 8);
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.37f * static_cast<float>(i));
  auto out = s.Run({{"x", DataType::kFloat32, {2, 5, 8}, x.data(), x.size() * 4, ""}});
  EXPECT_TRUE(out.ok()) << out.status().ToString();
  if (!out.ok()) return {};
  const Tensor& t = (*out)[0].tensor;
  EXPECT_EQ(t.shape(), (std::vector<int64_t>{2, 5, 8}));
  return std::vector<float>(t.data<float>(), t.data<float>() + t.element_count());
}

TEST(TransformerFusion, DeviceSessionsFuseLinearLayersWithTheSameOutputs) {
  auto fused = Session::Create(MlpBlock(), Options(/*device=*/true));
  ASSERT_TRUE(fused.ok()) << fused.status().ToString();
  EXPECT_EQ(Count((*fused)->model(), ir::kMatMulBiasOp), 2u);
  EXPECT_EQ(Count((*fused)->model(), "MatMul"), 0u);
  EXPECT_EQ(Count((*fused)->model(), "Gelu"), 0u);  // in fc1's MatMulBias, as its activation
  size_t activated = 0;
  for (const ir::Node& n : (*fused)->model().graph.nodes) {
    const ir::Attribute* act = n.FindAttribute(ir::kMatMulBiasActivation);
    activated += n.op_type == ir::kMatMulBiasOp && act && act->s == "gelu";
  }
  EXPECT_EQ(activated, 1u);
  EXPECT_EQ(Count((*fused)->model(), "Erf"), 0u);
  EXPECT_EQ(Count((*fused)->model(), "Mul"), 0u);
  EXPECT_EQ(Count((*fused)->model(), "Add"), 0u);  // the residual went into fc2's MatMulBias
  for (const NodePlacement& p : (*fused)->placement()) EXPECT_EQ(p.backend, "fakegpu") << p.node;

  auto plain = Session::Create(MlpBlock(), Options(/*device=*/false));
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  EXPECT_EQ(Count((*plain)->model(), ir::kMatMulBiasOp), 0u);
  EXPECT_EQ(Count((*plain)->model(), "MatMul"), 2u);
  EXPECT_EQ(Count((*plain)->model(), "Erf"), 1u);

  std::vector<float> got = RunOn(**fused), want = RunOn(**plain);
  ASSERT_EQ(got.size(), want.size());
  ASSERT_FALSE(got.empty());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5f) << i;
}

// Sets the environment variable `name` (a before/after switch) while it
// lives; unset again after.
class EnvSwitch {
 public:
  EnvSwitch(const char* name, const char* value) : name_(name) { setenv(name_, value, 1); }
  ~EnvSwitch() { unsetenv(name_); }
  EnvSwitch(const EnvSwitch&) = delete;
  EnvSwitch& operator=(const EnvSwitch&) = delete;

 private:
  const char* name_;
};

TEST(TransformerFusion, TheResidualAddGoesIntoTheProductWithTheSameOutputs) {
  Result<std::unique_ptr<Session>> kept = InternalError("not created");
  {
    EnvSwitch off("VIGIL_FUSE_RESIDUAL", "0");
    kept = Session::Create(MlpBlock(), Options(/*device=*/true));
  }
  ASSERT_TRUE(kept.ok()) << kept.status().ToString();
  auto fused = Session::Create(MlpBlock(), Options(/*device=*/true));
  ASSERT_TRUE(fused.ok()) << fused.status().ToString();
  const ir::Graph& with = (*fused)->model().graph;
  const ir::Graph& without = (*kept)->model().graph;
  EXPECT_EQ(with.nodes.size() + 1, without.nodes.size());
  EXPECT_EQ(Count((*kept)->model(), "Add"), 1u);
  EXPECT_EQ(Count((*fused)->model(), "Add"), 0u);
  size_t residual_inputs = 0;
  for (const ir::Node& n : with.nodes) {
    if (n.op_type == ir::kMatMulBiasOp && n.inputs.size() == 4) {
      ++residual_inputs;
      EXPECT_EQ(n.inputs[3], "x");
      EXPECT_EQ(n.outputs, (std::vector<std::string>{"y"}));
    }
  }
  EXPECT_EQ(residual_inputs, 1u);
  for (const NodePlacement& p : (*fused)->placement()) EXPECT_EQ(p.backend, "fakegpu") << p.node;

  auto plain = Session::Create(MlpBlock(), Options(/*device=*/false));
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  std::vector<float> got = RunOn(**fused), off = RunOn(**kept), want = RunOn(**plain);
  ASSERT_EQ(got.size(), want.size());
  ASSERT_EQ(off.size(), want.size());
  ASSERT_FALSE(got.empty());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_NEAR(got[i], want[i], 1e-5f) << i;
    EXPECT_NEAR(off[i], want[i], 1e-5f) << i;
  }
}

// A residual that would broadcast stays a separate Add.
TEST(TransformerFusion, ABroadcastingResidualStaysAnAdd) {
  ir::Model m = MlpBlock();
  m.graph.initializers.push_back(Weights("row", {8}, 7));
  m.graph.nodes.back().inputs = {"o", "row"};
  auto fused = Session::Create(std::move(m), Options(/*device=*/true));
  ASSERT_TRUE(fused.ok()) << fused.status().ToString();
  EXPECT_EQ(Count((*fused)->model(), "Add"), 1u);
}

// BERT's mask as torch.onnx writes it: each layer turns the same boolean
// mask into an additive one with its own (equal) constants.
//   y0 = Add(x, Where(m, 0, -1e4)), y = Add(y0, Where(m, 0, -1e4))
ir::Model MaskedLayers() {
  ir::Model m;
  m.ir_version = 8;
  m.opset_imports = {{"", 17}};
  m.graph.name = "masks";
  m.graph.inputs = {TensorValue("x", DataType::kFloat32, {2, 5, 8}), TensorValue("m", DataType::kBool, {2, 5, 8})};
  m.graph.outputs = {TensorValue("y", DataType::kFloat32, {2, 5, 8})};
  m.graph.initializers = {Weights("zero0", {}, 0, 0.0f), Weights("ninf0", {}, 0, -1e4f), Weights("zero1", {}, 0, 0.0f),
                          Weights("ninf1", {}, 0, -1e4f)};
  m.graph.nodes = {MakeNode("Where", {"m", "zero0", "ninf0"}, {"f0"}, "where0"),
                   MakeNode("Add", {"x", "f0"}, {"y0"}, "add0"),
                   MakeNode("Where", {"m", "zero1", "ninf1"}, {"f1"}, "where1"),
                   MakeNode("Add", {"y0", "f1"}, {"y"}, "add1")};
  return m;
}

TEST(TransformerFusion, DeviceSessionsComputeARepeatedMaskOnce) {
  Result<std::unique_ptr<Session>> kept = InternalError("not created");
  {
    EnvSwitch off("VIGIL_ELIMINATE_COMMON", "0");
    kept = Session::Create(MaskedLayers(), Options(/*device=*/true));
  }
  ASSERT_TRUE(kept.ok()) << kept.status().ToString();
  auto once = Session::Create(MaskedLayers(), Options(/*device=*/true));
  ASSERT_TRUE(once.ok()) << once.status().ToString();
  auto plain = Session::Create(MaskedLayers(), Options(/*device=*/false));
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  EXPECT_EQ(Count((*once)->model(), "Where"), 1u);
  EXPECT_EQ(Count((*kept)->model(), "Where"), 2u);
  EXPECT_EQ(Count((*plain)->model(), "Where"), 2u);  // CPU reference graphs stay as written

  std::vector<float> x(2 * 5 * 8);
  std::vector<uint8_t> mask(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    x[i] = std::sin(0.37f * static_cast<float>(i));
    mask[i] = i % 3 != 0;
  }
  auto run = [&](const Session& s) -> std::vector<float> {
    auto out = s.Run({{"x", DataType::kFloat32, {2, 5, 8}, x.data(), x.size() * 4, ""},
                      {"m", DataType::kBool, {2, 5, 8}, mask.data(), mask.size(), ""}});
    EXPECT_TRUE(out.ok()) << out.status().ToString();
    if (!out.ok()) return {};
    const Tensor& t = (*out)[0].tensor;
    return std::vector<float>(t.data<float>(), t.data<float>() + t.element_count());
  };
  std::vector<float> got = run(**once), want = run(**plain);
  ASSERT_EQ(got.size(), x.size());
  EXPECT_EQ(got, want);  // the same kernels on the same values: the same bits
  EXPECT_EQ(got[0], x[0] - 2e4f);
}

}  // namespace
}  // namespace vigil::runtime
