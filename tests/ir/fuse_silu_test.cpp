// Sigmoid -> Mul pairs fused into ai.vigil.Silu (ir/fuse_silu.h): which
// pairs it takes (either operand order, in a chain) and which it leaves (a
// sigmoid read elsewhere or a graph output, a product with another tensor);
// the fused graph's output equals the pair's bit for bit (a NaN matching
// any NaN) on the CPU's reference kernels and its optimised ones, in
// float32 (127 channels, odd sizes, NaN, infinities, large and subnormal
// values) and float16.
#include "ir/fuse_silu.h"

#include <cmath>
#include <cstring>
#include <limits>

#include <gtest/gtest.h>

#include "activation_fusion_test_util.h"

namespace vigil::ir {
namespace {

using namespace vigil::ir::testing;

const std::vector<int64_t> kShape = {2, 127, 9, 7};

// x -> Sigmoid -> Mul(x, s) -> a; Relu(a) -> Sigmoid -> Mul(s2, r) -> y.
Model Pairs(DataType t) {
  Model m;
  m.ir_version = 8;
  m.opset_imports = {{"", 17}};
  m.graph.name = "silu_pairs";
  m.graph.inputs = {TensorValue("x", t, kShape)};
  m.graph.outputs = {TensorValue("y", t, kShape)};
  m.graph.nodes = {MakeNode("Sigmoid", {"x"}, {"s"}, "sig1"), MakeNode("Mul", {"x", "s"}, {"a"}, "mul1"),
                   MakeNode("Relu", {"a"}, {"r"}, "relu"), MakeNode("Sigmoid", {"r"}, {"s2"}, "sig2"),
                   MakeNode("Mul", {"s2", "r"}, {"y"}, "mul2")};
  return m;
}

size_t Fuse(Model& m) { return FuseAndValidate(m, FuseSilu); }

// The input: pseudo-random in [-12, 12] with NaN, +-inf, +-100, +-1e-40
// (subnormal) and -0 among them.
std::vector<float> Input() { return FloatsWithSpecials(2 * 127 * 9 * 7, 5, -12, 12, 100); }

TEST(FuseSilu, FusesBothOperandOrdersAndEqualsThePairBitForBit) {
  for (DataType t : {DataType::kFloat32, DataType::kFloat16}) {
    SCOPED_TRACE(DataTypeName(t));
    const Model original = Pairs(t);
    Model m = original;
    ASSERT_EQ(Fuse(m), 2u);
    EXPECT_EQ(CountOps(m, kSiluOp), 2u);
    EXPECT_EQ(CountOps(m, "Sigmoid") + CountOps(m, "Mul"), 0u);
    EXPECT_GE(m.OpsetVersion("ai.vigil"), 1);
    for (bool reference : {true, false}) {
      SCOPED_TRACE(reference ? "reference kernels" : "optimised kernels");
      const std::vector<uint8_t> want = RunXOnCpu(original, t, kShape, Input(), reference);
      const std::vector<uint8_t> got = RunXOnCpu(m, t, kShape, Input(), reference);
      ASSERT_FALSE(want.empty());
      EXPECT_TRUE(SameBitsOrBothNaN(want, got, t == DataType::kFloat32 ? 4 : 2));
    }
  }
}

TEST(FuseSilu, LeavesASigmoidReadElsewhereAGraphOutputOrAnotherProduct) {
  Model shared = Pairs(DataType::kFloat32);
  shared.graph.nodes.push_back(MakeNode("Relu", {"s"}, {"z"}, "also_reads_s"));
  shared.graph.outputs.push_back(TensorValue("z", DataType::kFloat32, kShape));
  EXPECT_EQ(Fuse(shared), 1u);  // the second pair only
  EXPECT_EQ(CountOps(shared, "Sigmoid"), 1u);

  Model output = Pairs(DataType::kFloat32);
  output.graph.outputs.push_back(TensorValue("s2", DataType::kFloat32, kShape));
  EXPECT_EQ(Fuse(output), 1u);  // the first pair only
  EXPECT_EQ(CountOps(output, "Sigmoid"), 1u);

  Model other = Pairs(DataType::kFloat32);
  other.graph.nodes[1].inputs = {"s", "s"};  // s * s, not x * s
  other.graph.nodes[4].inputs = {"s2", "a"};  // not the Sigmoid's input
  EXPECT_EQ(Fuse(other), 0u);
  EXPECT_EQ(other.OpsetVersion("ai.vigil"), -1);
}

}  // namespace
}  // namespace vigil::ir
