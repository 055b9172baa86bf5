// Add -> Clip -> Mul -> Div chains fused into ai.vigil.HardSwishChain
// (ir/fuse_hardswish.h): which chains it takes (Paddle's order and the
// operands swapped, other constants than 3, 0, 6, 6) and which it leaves (a
// link read elsewhere or a graph output, a bound or divisor that is not a
// constant, a product with another tensor, a Clip without both bounds); the
// fused graph's output equals the chain's bit for bit (a NaN matching any
// NaN) on the CPU's reference kernels and its optimised ones, in float32
// (127 channels, odd sizes, NaN, infinities, large and subnormal values)
// and float16.
#include "ir/fuse_hardswish.h"

#include <cmath>
#include <limits>

#include <gtest/gtest.h>

#include "backends/cpu/cpu_backend.h"
#include "ir/validate.h"
#include "runtime/session.h"
#include "vigil/float16.h"
#include "graph_builder.h"

namespace vigil::ir {
namespace {

using namespace vigil::ir::testing;

const std::vector<int64_t> kShape = {2, 127, 9, 7};

Tensor Scalar(const std::string& name, DataType t, float v) {
  if (t == DataType::kFloat32) return OwnedInitializer<float>(name, t, {}, {v});
  return OwnedInitializer<uint16_t>(name, t, {}, {FloatToFloat16(v)});
}

// y1 = Div(Mul(x, Clip(Add(x, 3), 0, 6)), 6) (Paddle's hard_swish), then
// y = Div(Mul(Clip(Add(2.5, y1), -1, 5), y1), 7) (operands swapped, other
// constants).
Model Chains(DataType t) {
  Model m;
  m.ir_version = 8;
  m.opset_imports = {{"", 17}};
  m.graph.name = "hardswish_chains";
  m.graph.inputs = {TensorValue("x", t, kShape)};
  m.graph.outputs = {TensorValue("y", t, kShape)};
  m.graph.initializers = {Scalar("three", t, 3), Scalar("zero", t, 0), Scalar("six", t, 6),
                          Scalar("k", t, 2.5f), Scalar("lo", t, -1), Scalar("hi", t, 5), Scalar("seven", t, 7)};
  m.graph.nodes = {MakeNode("Add", {"x", "three"}, {"a1"}, "add1"),
                   MakeNode("Clip", {"a1", "zero", "six"}, {"c1"}, "clip1"),
                   MakeNode("Mul", {"x", "c1"}, {"m1"}, "mul1"),
                   MakeNode("Div", {"m1", "six"}, {"y1"}, "div1"),
                   MakeNode("Add", {"k", "y1"}, {"a2"}, "add2"),
                   MakeNode("Clip", {"a2", "lo", "hi"}, {"c2"}, "clip2"),
                   MakeNode("Mul", {"c2", "y1"}, {"m2"}, "mul2"),
                   MakeNode("Div", {"m2", "seven"}, {"y"}, "div2")};
  return m;
}

size_t Count(const Model& m, const std::string& op) {
  size_t n = 0;
  for (const Node& node : m.graph.nodes) n += node.op_type == op;
  return n;
}

size_t Fuse(Model& m) {
  auto n = FuseHardSwishChains(m);
  EXPECT_TRUE(n.ok()) << n.status().ToString();
  Status valid = ValidateModel(m);
  EXPECT_TRUE(valid.ok()) << valid.ToString();
  return n.ok() ? *n : 0;
}

// The input: pseudo-random in [-9, 9] (both sides of the bounds) with NaN,
// +-inf, +-1e30 (whose product overflows), +-1e-40 (subnormal) and -0.
std::vector<float> Input() {
  std::vector<float> x = RandomFloats(2 * 127 * 9 * 7, 7, -9, 9);
  const float specials[] = {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(), 1e30f, -1e30f, 1e-40f, -1e-40f, -0.0f};
  for (size_t i = 0; i < std::size(specials); ++i) x[i * 997] = specials[i];
  return x;
}

// y's bytes for `m` on the CPU, reference or optimised kernels.
std::vector<uint8_t> RunOnCpu(const Model& m, DataType t, bool reference) {
  runtime::SessionOptions o;
  o.backends.push_back(cpu::MakeCpuBackend(cpu::CpuOptions{1, reference}));
  auto s = runtime::Session::Create(m, std::move(o));
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  if (!s.ok()) return {};
  const std::vector<float> x = Input();
  std::vector<uint16_t> half(x.size());
  for (size_t i = 0; i < x.size(); ++i) half[i] = FloatToFloat16(x[i]);
  const void* data = t == DataType::kFloat32 ? static_cast<const void*>(x.data()) : half.data();
  const size_t bytes = x.size() * (t == DataType::kFloat32 ? 4 : 2);
  auto out = (*s)->Run({{"x", t, kShape, data, bytes, ""}});
  EXPECT_TRUE(out.ok()) << out.status().ToString();
  if (!out.ok()) return {};
  const runtime::Tensor& y = (*out)[0].tensor;
  const auto* p = static_cast<const uint8_t*>(y.raw_data());
  return std::vector<uint8_t>(p, p + y.byte_size());
}

TEST(FuseHardSwishChains, FusesBothOrdersAndEqualsTheChainBitForBit) {
  for (DataType t : {DataType::kFloat32, DataType::kFloat16}) {
    SCOPED_TRACE(DataTypeName(t));
    const Model original = Chains(t);
    Model m = original;
    ASSERT_EQ(Fuse(m), 2u);
    EXPECT_EQ(Count(m, kHardSwishChainOp), 2u);
    EXPECT_EQ(Count(m, "Add") + Count(m, "Clip") + Count(m, "Mul") + Count(m, "Div"), 0u);
    EXPECT_GE(m.OpsetVersion("ai.vigil"), 1);
    for (const Node& n : m.graph.nodes) {
      if (n.outputs[0] != "y") continue;
      ASSERT_EQ(n.attributes.size(), 4u);
      EXPECT_EQ(n.inputs, std::vector<std::string>{"y1"});
      EXPECT_EQ(n.FindAttribute("add")->f, 2.5f);
      EXPECT_EQ(n.FindAttribute("min")->f, -1.0f);
      EXPECT_EQ(n.FindAttribute("max")->f, 5.0f);
      EXPECT_EQ(n.FindAttribute("div")->f, 7.0f);
    }
    for (bool reference : {true, false}) {
      SCOPED_TRACE(reference ? "reference kernels" : "optimised kernels");
      const std::vector<uint8_t> want = RunOnCpu(original, t, reference), got = RunOnCpu(m, t, reference);
      ASSERT_FALSE(want.empty());
      EXPECT_TRUE(SameBitsOrBothNaN(want, got, t == DataType::kFloat32 ? 4 : 2));
    }
  }
}

TEST(FuseHardSwishChains, LeavesChainsThatAreNotWhole) {
  Model read_elsewhere = Chains(DataType::kFloat32);
  read_elsewhere.graph.nodes.push_back(MakeNode("Relu", {"c1"}, {"z"}, "also_reads_c1"));
  read_elsewhere.graph.outputs.push_back(TensorValue("z", DataType::kFloat32, kShape));
  EXPECT_EQ(Fuse(read_elsewhere), 1u);  // the second chain only
  EXPECT_EQ(Count(read_elsewhere, "Clip"), 1u);

  Model output = Chains(DataType::kFloat32);
  output.graph.outputs.push_back(TensorValue("m2", DataType::kFloat32, kShape));
  EXPECT_EQ(Fuse(output), 1u);  // the first chain only

  // An initializer that is also a graph input can be overridden: chain 1's
  // bound and divisor are then not constants.
  Model overridable = Chains(DataType::kFloat32);
  overridable.graph.inputs.push_back(TensorValue("six", DataType::kFloat32, {}));
  EXPECT_EQ(Fuse(overridable), 1u);
  EXPECT_EQ(Count(overridable, "Div"), 1u);

  Model divisor = Chains(DataType::kFloat32);
  divisor.graph.nodes[3].inputs = {"m1", "x"};  // m1 / x
  EXPECT_EQ(Fuse(divisor), 1u);

  Model other_product = Chains(DataType::kFloat32);
  other_product.graph.nodes[2].inputs = {"c1", "c1"};  // c1 * c1, not x * c1
  other_product.graph.nodes[6].inputs = {"c2", "a2"};  // not the Add's input
  EXPECT_EQ(Fuse(other_product), 0u);
  EXPECT_EQ(other_product.OpsetVersion("ai.vigil"), -1);

  Model one_bound = Chains(DataType::kFloat32);
  one_bound.graph.nodes[1].inputs = {"a1", "zero"};  // Clip(a1, 0): no max
  one_bound.graph.nodes[5].inputs = {"a2", "", "hi"};  // Clip(a2, max = 5): no min
  EXPECT_EQ(Fuse(one_bound), 0u);
}

}  // namespace
}  // namespace vigil::ir
