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

#include "backends/cpu/cpu_backend.h"
#include "ir/validate.h"
#include "runtime/session.h"
#include "vigil/float16.h"
#include "graph_builder.h"

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

size_t Count(const Model& m, const std::string& op) {
  size_t n = 0;
  for (const Node& node : m.graph.nodes) n += node.op_type == op;
  return n;
}

size_t Fuse(Model& m) {
  auto n = FuseSilu(m);
  EXPECT_TRUE(n.ok()) << n.status().ToString();
  Status valid = ValidateModel(m);
  EXPECT_TRUE(valid.ok()) << valid.ToString();
  return n.ok() ? *n : 0;
}

// The input: pseudo-random in [-12, 12] with NaN, +-inf, +-100, +-1e-40
// (subnormal) and -0 among them.
std::vector<float> Input() {
  std::vector<float> x = RandomFloats(2 * 127 * 9 * 7, 5, -12, 12);
  const float specials[] = {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(), 100.0f, -100.0f, 1e-40f, -1e-40f, -0.0f};
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

TEST(FuseSilu, FusesBothOperandOrdersAndEqualsThePairBitForBit) {
  for (DataType t : {DataType::kFloat32, DataType::kFloat16}) {
    SCOPED_TRACE(DataTypeName(t));
    const Model original = Pairs(t);
    Model m = original;
    ASSERT_EQ(Fuse(m), 2u);
    EXPECT_EQ(Count(m, kSiluOp), 2u);
    EXPECT_EQ(Count(m, "Sigmoid") + Count(m, "Mul"), 0u);
    EXPECT_GE(m.OpsetVersion("ai.vigil"), 1);
    for (bool reference : {true, false}) {
      SCOPED_TRACE(reference ? "reference kernels" : "optimised kernels");
      const std::vector<uint8_t> want = RunOnCpu(original, t, reference), got = RunOnCpu(m, t, reference);
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
  EXPECT_EQ(Count(shared, "Sigmoid"), 1u);

  Model output = Pairs(DataType::kFloat32);
  output.graph.outputs.push_back(TensorValue("s2", DataType::kFloat32, kShape));
  EXPECT_EQ(Fuse(output), 1u);  // the first pair only
  EXPECT_EQ(Count(output, "Sigmoid"), 1u);

  Model other = Pairs(DataType::kFloat32);
  other.graph.nodes[1].inputs = {"s", "s"};  // s * s, not x * s
  other.graph.nodes[4].inputs = {"s2", "a"};  // not the Sigmoid's input
  EXPECT_EQ(Fuse(other), 0u);
  EXPECT_EQ(other.OpsetVersion("ai.vigil"), -1);
}

}  // namespace
}  // namespace vigil::ir
