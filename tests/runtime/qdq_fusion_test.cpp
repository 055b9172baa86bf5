// The QDQ fusion pass (ir/fuse_qdq.h) end to end, without a GPU: a fake
// device backend runs the fused int8 ops with the CPU kernels, so the
// fusion, the NHWC layout of QConv, the folding and the run are checked
// against the unfused model on the CPU backend.
#include <cmath>
#include <cstring>
#include <random>

#include <gtest/gtest.h>

#include "backends/cpu/cpu_backend.h"
#include "ir/fuse_qdq.h"
#include "runtime/session.h"
#include "fake_device_backend.h"
#include "support/qdq_model.h"

namespace vigil::runtime {
namespace {

using ir::DataType;
using testing::FakeDeviceBackend;

std::unique_ptr<Session> Make(const ir::Model& model, bool device) {
  SessionOptions options;
  if (device) options.backends.push_back(std::make_shared<FakeDeviceBackend>());
  options.backends.push_back(cpu::MakeCpuBackend());
  options.constant_folding = true;
  options.conv_layout = ConvLayout::kNhwcWhereFaster;
  auto s = Session::Create(model, options);
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return s.ok() ? std::move(s).value() : nullptr;
}

size_t CountOps(const Session& s, const std::string& op) {
  size_t n = 0;
  for (const ir::Node& node : s.model().graph.nodes) n += node.op_type == op;
  return n;
}

// Every output of a run on "x", as float32 vectors.
std::vector<std::vector<float>> RunOutputs(Session& s, const Tensor& x) {
  auto out = s.Run({{"x", x.dtype(), x.shape(), x.raw_data(), x.byte_size(), ""}});
  EXPECT_TRUE(out.ok()) << out.status().ToString();
  std::vector<std::vector<float>> all;
  if (!out.ok()) return all;
  for (const auto& o : *out) all.emplace_back(o.tensor.data<float>(), o.tensor.data<float>() + o.tensor.element_count());
  return all;
}

std::vector<float> RunFloat(Session& s, const Tensor& x) {
  std::vector<std::vector<float>> all = RunOutputs(s, x);
  return all.empty() ? std::vector<float>{} : all[0];
}

Tensor RandomFloat(std::vector<int64_t> shape, uint32_t seed) {
  Tensor x = Tensor::Allocate(DataType::kFloat32, std::move(shape)).value();
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-4.0f, 4.0f);
  for (size_t i = 0; i < x.element_count(); ++i) x.data<float>()[i] = u(rng);
  return x;
}

Tensor RandomInput(const ::vigil::testing::QdqModelOptions& o, uint32_t seed) {
  return RandomFloat({o.n, o.c_in, o.h, o.w}, seed);
}

TEST(QdqFusion, RewritesEveryChainAndStaysWithinOneQuantum) {
  ::vigil::testing::QdqModelOptions o;
  const ir::Model model = ::vigil::testing::QdqModel(o);
  auto fused = Make(model, true);
  auto reference = Make(model, false);
  ASSERT_TRUE(fused && reference);
  EXPECT_EQ(CountOps(*fused, "QConvNhwc"), 2u);
  EXPECT_EQ(CountOps(*fused, "QAdd"), 1u);
  EXPECT_EQ(CountOps(*fused, "Conv"), 0u);
  EXPECT_EQ(CountOps(*fused, "Add"), 0u);
  EXPECT_EQ(CountOps(*fused, "Relu"), 0u);  // both folded into the QConv and the QAdd
  // The pool on int8, channels-last inside the int8 region; of the Q/DQ
  // nodes only the input's Q and the output's DQ are left.
  EXPECT_EQ(CountOps(*fused, "MaxPool") + CountOps(*fused, "MaxPoolNhwc"), 1u);
  EXPECT_EQ(CountOps(*fused, "QuantizeLinear"), 1u);
  EXPECT_EQ(CountOps(*fused, "DequantizeLinear"), 1u);
  ASSERT_EQ(fused->int8_notes().size(), 2u);
  for (const ir::QdqNote& n : fused->int8_notes()) EXPECT_TRUE(n.int8) << n.node << ": " << n.reason;
  EXPECT_TRUE(reference->int8_notes().empty());

  size_t compared = 0, differ = 0;
  for (uint32_t seed : {1u, 2u, 3u}) {
    Tensor x = RandomInput(o, seed);
    std::vector<float> got = RunFloat(*fused, x), want = RunFloat(*reference, x);
    ASSERT_EQ(got.size(), want.size());
    ASSERT_FALSE(got.empty());
    for (size_t i = 0; i < got.size(); ++i) {
      ASSERT_FALSE(std::isnan(got[i])) << i;
      // y is a multiple of the last scale (0.03): compare in quanta.
      const double quanta = std::fabs(static_cast<double>(got[i]) - want[i]) / 0.03;
      EXPECT_LE(quanta, 1.0001) << "element " << i << ": " << got[i] << " vs " << want[i];
      differ += quanta > 0.5;
      ++compared;
    }
  }
  // The integer convolution differs from the float one only where a value lies within float32 rounding of a
  // half: a handful of elements at most.
  EXPECT_LE(differ * 100, compared) << differ << " of " << compared << " differ";
}

// DQ -> Add -> Q -> DQ -> Relu -> Q as QAdd on int8 inputs: the unfused chain bit for bit, ties included.
TEST(QdqFusion, QAddEqualsTheChainItReplaces) {
  using namespace ir::testing;
  ir::Model m;
  m.ir_version = 8;
  m.opset_imports = {{"", 17}};
  ir::Graph& g = m.graph;
  const int64_t n = 2 * 13 * 7 * 5;
  g.inputs = {TensorValue("a", DataType::kInt8, {2, 13, 7, 5}), TensorValue("b", DataType::kInt8, {2, 13, 7, 5})};
  g.outputs = {TensorValue("y", DataType::kInt8, {2, 13, 7, 5})};
  for (auto [name, v] : {std::pair<const char*, float>{"sa", 0.5f}, {"sb", 0.25f}, {"sy", 0.5f}}) {
    g.initializers.push_back(OwnedInitializer<float>(name, DataType::kFloat32, {}, {v}));
  }
  g.initializers.push_back(OwnedInitializer<int8_t>("z", DataType::kInt8, {}, {0}));
  g.nodes = {MakeNode("DequantizeLinear", {"a", "sa", "z"}, {"da"}), MakeNode("DequantizeLinear", {"b", "sb", "z"}, {"db"}),
             MakeNode("Add", {"da", "db"}, {"s"}), MakeNode("QuantizeLinear", {"s", "sy", "z"}, {"q"}),
             MakeNode("DequantizeLinear", {"q", "sy", "z"}, {"dq"}), MakeNode("Relu", {"dq"}, {"r"}),
             MakeNode("QuantizeLinear", {"r", "sy", "z"}, {"y"})};
  auto fused = Make(m, true);
  auto reference = Make(m, false);
  ASSERT_TRUE(fused && reference);
  EXPECT_EQ(CountOps(*fused, "QAdd"), 1u);
  EXPECT_EQ(fused->model().graph.nodes.size(), 1u);
  std::vector<int8_t> a(n), b(n);
  std::mt19937 rng(5);
  for (int64_t i = 0; i < n; ++i) {
    a[i] = static_cast<int8_t>(rng());
    b[i] = static_cast<int8_t>(rng());
  }
  auto run = [&](Session& s) {
    auto out = s.Run({{"a", DataType::kInt8, {2, 13, 7, 5}, a.data(), a.size(), ""},
                      {"b", DataType::kInt8, {2, 13, 7, 5}, b.data(), b.size(), ""}});
    EXPECT_TRUE(out.ok()) << out.status().ToString();
    const Tensor& y = (*out)[0].tensor;
    return std::vector<int8_t>(y.data<int8_t>(), y.data<int8_t>() + y.element_count());
  };
  std::vector<int8_t> got = run(*fused), want = run(*reference);
  EXPECT_EQ(got, want);
  // Half the sums are ties at this scale (a/1 + b/2 in steps of 1/2): round half to even decides them.
  size_t saturated = 0;
  for (int8_t v : want) saturated += v == 127;
  EXPECT_LT(saturated, want.size());
}

// Chains the int8 engines cannot take stay in float, and the notes say why.
TEST(QdqFusion, RefusedChainsSayWhy) {
  {
    ::vigil::testing::QdqModelOptions o;
    o.x_zero_point = 5;
    auto s = Make(::vigil::testing::QdqModel(o), true);
    ASSERT_TRUE(s);
    ASSERT_EQ(s->int8_notes().size(), 2u);
    EXPECT_FALSE(s->int8_notes()[0].int8);
    EXPECT_NE(s->int8_notes()[0].reason.find("zero point 5"), std::string::npos) << s->int8_notes()[0].reason;
    EXPECT_NE(s->int8_notes()[0].reason.find("ActivationSymmetric"), std::string::npos);
    EXPECT_TRUE(s->int8_notes()[1].int8) << s->int8_notes()[1].reason;
  }
  {
    ::vigil::testing::QdqModelOptions o;
    o.activation = DataType::kUint8;
    auto s = Make(::vigil::testing::QdqModel(o), true);
    ASSERT_TRUE(s);
    ASSERT_EQ(s->int8_notes().size(), 2u);
    for (const ir::QdqNote& n : s->int8_notes()) {
      EXPECT_FALSE(n.int8);
      EXPECT_NE(n.reason.find("uint8"), std::string::npos) << n.reason;
    }
    EXPECT_EQ(CountOps(*s, "QConvNhwc"), 0u);
    EXPECT_EQ(CountOps(*s, "QAdd"), 0u);
  }
  {
    // Per-channel weight scales without axis 0 scale the input channels
    // (DequantizeLinear's default axis is 1): not foldable per output channel.
    ::vigil::testing::QdqModelOptions o;
    o.c_in = 12;  // so that the scales' length (M = 12) also fits axis 1
    o.weight_axis = false;
    auto s = Make(::vigil::testing::QdqModel(o), true);
    ASSERT_TRUE(s);
    ASSERT_EQ(s->int8_notes().size(), 2u);
    for (const ir::QdqNote& n : s->int8_notes()) {
      EXPECT_FALSE(n.int8);
      EXPECT_NE(n.reason.find("axis 0"), std::string::npos) << n.reason;
    }
  }
}

// h (the QMatMul's dequantized output) within one quantum of the unfused
// chain, differing in a handful of elements at most.
void ExpectHiddenWithinOneQuantum(Session& fused, Session& reference, const std::vector<int64_t>& x_shape) {
  size_t compared = 0, differ = 0;
  for (uint32_t seed : {1u, 2u, 3u, 4u}) {
    Tensor x = RandomFloat(x_shape, seed);
    std::vector<std::vector<float>> got = RunOutputs(fused, x), want = RunOutputs(reference, x);
    ASSERT_EQ(got.size(), 2u);
    ASSERT_EQ(want.size(), 2u);
    ASSERT_EQ(got[0].size(), want[0].size());
    ASSERT_FALSE(got[0].empty());
    size_t nonzero = 0;
    for (size_t i = 0; i < got[0].size(); ++i) {
      ASSERT_FALSE(std::isnan(got[0][i])) << i;
      const double quanta =
          std::fabs(static_cast<double>(got[0][i]) - want[0][i]) / ::vigil::testing::kQdqLinearHiddenScale;
      EXPECT_LE(quanta, 1.0001) << "element " << i << ": " << got[0][i] << " vs " << want[0][i];
      differ += quanta > 0.5;
      nonzero += want[0][i] != 0;
      ++compared;
    }
    EXPECT_GT(nonzero * 4, got[0].size()) << "the test data should not be mostly zeros";
    for (float v : got[1]) ASSERT_FALSE(std::isnan(v));
  }
  EXPECT_LE(differ * 100, compared) << differ << " of " << compared << " differ";
}

// DQ -> MatMul -> Add(bias) -> Q -> DQ -> Relu -> Q as one QMatMul (W
// transposed to [N, K]); the product of two activations stays in float.
TEST(QdqFusion, MatMulWithBiasAndReluBecomesOneQMatMul) {
  ::vigil::testing::QdqLinearOptions o;
  const ir::Model model = ::vigil::testing::QdqLinearModel(o);
  auto fused = Make(model, true);
  auto reference = Make(model, false);
  ASSERT_TRUE(fused && reference);
  EXPECT_EQ(CountOps(*fused, "QMatMul"), 1u);
  EXPECT_EQ(CountOps(*fused, "MatMul"), 1u);  // the activations' product
  EXPECT_EQ(CountOps(*fused, "Add"), 0u);
  EXPECT_EQ(CountOps(*fused, "Relu"), 0u);
  ASSERT_EQ(fused->int8_notes().size(), 2u);
  EXPECT_EQ(fused->int8_notes()[0].op_type, "MatMul");
  EXPECT_TRUE(fused->int8_notes()[0].int8) << fused->int8_notes()[0].reason;
  EXPECT_FALSE(fused->int8_notes()[1].int8);
  EXPECT_NE(fused->int8_notes()[1].reason.find("two activations"), std::string::npos)
      << fused->int8_notes()[1].reason;
  for (const ir::Node& n : fused->model().graph.nodes) {
    if (n.op_type != "QMatMul") continue;
    bool found = false;
    for (const ir::Tensor& t : fused->model().graph.initializers) {
      if (t.name != n.inputs[1]) continue;
      found = true;
      EXPECT_EQ(t.dims, (std::vector<int64_t>{o.n, o.k}));  // [N, K]
    }
    EXPECT_TRUE(found) << n.inputs[1];
  }
  ExpectHiddenWithinOneQuantum(*fused, *reference, {2, 5, o.k});
}

TEST(QdqFusion, GemmWithTransposedWeightsAndAnInt32BiasBecomesOneQMatMul) {
  ::vigil::testing::QdqLinearOptions o;
  o.gemm = true;
  o.k = 20;
  const ir::Model model = ::vigil::testing::QdqLinearModel(o);
  auto fused = Make(model, true);
  auto reference = Make(model, false);
  ASSERT_TRUE(fused && reference);
  EXPECT_EQ(CountOps(*fused, "QMatMul"), 1u);
  EXPECT_EQ(CountOps(*fused, "Gemm"), 0u);
  ASSERT_EQ(fused->int8_notes().size(), 1u);
  EXPECT_TRUE(fused->int8_notes()[0].int8) << fused->int8_notes()[0].reason;
  ExpectHiddenWithinOneQuantum(*fused, *reference, {7, o.k});
}

// Per-column scales along K (MatMul's W [K, N] with axis 0) scale the
// inputs, not the outputs: not foldable; the note says which axis it needs.
TEST(QdqFusion, MatMulWeightsScaledAlongKStayInFloat) {
  ::vigil::testing::QdqLinearOptions o;
  o.weight_axis = 0;
  auto s = Make(::vigil::testing::QdqLinearModel(o), true);
  ASSERT_TRUE(s);
  EXPECT_EQ(CountOps(*s, "QMatMul"), 0u);
  ASSERT_FALSE(s->int8_notes().empty());
  EXPECT_FALSE(s->int8_notes()[0].int8);
  EXPECT_NE(s->int8_notes()[0].reason.find("axis 1"), std::string::npos) << s->int8_notes()[0].reason;
}

}  // namespace
}  // namespace vigil::runtime
