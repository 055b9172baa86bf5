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

#include "activation_fusion_test_util.h"

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

size_t Fuse(Model& m) { return FuseAndValidate(m, FuseHardSwishChains); }

// The input: pseudo-random in [-9, 9] (both sides of the bounds) with NaN,
// +-inf, +-1e38 (whose product with the clipped 6 overflows to inf),
// +-1e-40 (subnormal) and -0.
std::vector<float> Input() { return FloatsWithSpecials(2 * 127 * 9 * 7, 7, -9, 9, 1e38f); }

TEST(FuseHardSwishChains, FusesBothOrdersAndEqualsTheChainBitForBit) {
  for (DataType t : {DataType::kFloat32, DataType::kFloat16}) {
    SCOPED_TRACE(DataTypeName(t));
    const Model original = Chains(t);
    Model m = original;
    ASSERT_EQ(Fuse(m), 2u);
    EXPECT_EQ(CountOps(m, kHardSwishChainOp), 2u);
    EXPECT_EQ(CountOps(m, "Add") + CountOps(m, "Clip") + CountOps(m, "Mul") + CountOps(m, "Div"), 0u);
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
      const std::vector<uint8_t> want = RunXOnCpu(original, t, kShape, Input(), reference);
      const std::vector<uint8_t> got = RunXOnCpu(m, t, kShape, Input(), reference);
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
  EXPECT_EQ(CountOps(read_elsewhere, "Clip"), 1u);

  Model output = Chains(DataType::kFloat32);
  output.graph.outputs.push_back(TensorValue("m2", DataType::kFloat32, kShape));
  EXPECT_EQ(Fuse(output), 1u);  // the first chain only

  // An initializer that is also a graph input can be overridden: chain 1's
  // bound and divisor are then not constants.
  Model overridable = Chains(DataType::kFloat32);
  overridable.graph.inputs.push_back(TensorValue("six", DataType::kFloat32, {}));
  EXPECT_EQ(Fuse(overridable), 1u);
  EXPECT_EQ(CountOps(overridable, "Div"), 1u);

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
