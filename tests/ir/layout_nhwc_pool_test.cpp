// The NHWC layout pass moving pools into the channels-last region
// (NhwcOptions::nhwc_pools): a ResNet stem's MaxPool and the head's
// GlobalAveragePool run as ai.vigil.*PoolNhwc with no transposes around
// them, and pools stay NCHW where moving them would add a transpose or lose
// a read Indices output.
#include <gtest/gtest.h>

#include "graph_builder.h"
#include "ir/layout_nhwc.h"
#include "ir/validate.h"

namespace vigil::ir {
namespace {

using namespace vigil::ir::testing;

constexpr DataType kF16 = DataType::kFloat16;

Node Conv(std::string x, std::string w, std::string y) {
  Node n = MakeNode("Conv", {std::move(x), std::move(w)}, {y}, "conv_" + y);
  n.attributes.push_back(IntsAttr("pads", {1, 1, 1, 1}));
  return n;
}

Node Pool(std::string op, std::string x, std::vector<std::string> outputs) {
  Node n = MakeNode(op, {std::move(x)}, std::move(outputs), op + "_node");
  n.attributes = {IntsAttr("kernel_shape", {3, 3}), IntsAttr("strides", {2, 2}), IntsAttr("pads", {1, 1, 1, 1})};
  return n;
}

Model BaseModel() {
  Model m;
  m.ir_version = 8;
  m.opset_imports = {{"", 17}};
  m.graph.name = "g";
  m.graph.inputs = {TensorValue("x", kF16, {1, 8, 8, 8})};
  m.graph.initializers = {Initializer("w0", kF16, {8, 8, 3, 3}), Initializer("w1", kF16, {8, 8, 3, 3})};
  return m;
}

// x -> Conv -> Relu -> `pool` (outputs `pool_outputs`) -> Conv -> y.
Model Stem(const std::string& pool, std::vector<std::string> pool_outputs = {"p"}) {
  Model m = BaseModel();
  m.graph.outputs = {TensorValue("y", kF16, {1, 8, 4, 4})};
  m.graph.nodes = {Conv("x", "w0", "c0"), MakeNode("Relu", {"c0"}, {"r0"}, "relu0"),
                   Pool(pool, "r0", std::move(pool_outputs)), Conv("p", "w1", "y")};
  return m;
}

NhwcStats Convert(Model& m, std::vector<std::string> pools) {
  NhwcOptions options;
  options.nhwc_pools = std::move(pools);
  auto stats = ConvertConvsToNhwc(m, OpIndices(m, "Conv"), InputTypes(m), options);
  EXPECT_TRUE(stats.ok()) << stats.status().ToString();
  Status valid = ValidateModel(m);
  EXPECT_TRUE(valid.ok()) << valid.ToString();
  return stats.ok() ? *stats : NhwcStats{};
}

const Node* Find(const Model& m, const std::string& op) {
  for (const Node& node : m.graph.nodes) {
    if (node.op_type == op) return &node;
  }
  return nullptr;
}

TEST(LayoutNhwcPool, StemMaxPoolRunsChannelsLastWithNoTransposesAround) {
  Model m = Stem("MaxPool");
  NhwcStats stats = Convert(m, {"MaxPool", "GlobalAveragePool"});
  EXPECT_EQ(stats.pools, 1u);
  EXPECT_EQ(CountNodes(m, "MaxPool"), 0u);
  const Node* pool = Find(m, kMaxPoolNhwcOp);
  ASSERT_NE(pool, nullptr);
  EXPECT_EQ(pool->domain, kVigilDomain);
  ASSERT_EQ(pool->inputs.size(), 1u);
  ASSERT_EQ(pool->outputs.size(), 1u);
  // It reads the NHWC Relu and feeds the second convolution directly.
  const Node* in = ProducerOf(m, pool->inputs[0]);
  ASSERT_NE(in, nullptr);
  EXPECT_NE(in->op_type, "Transpose");
  size_t readers = 0;
  for (const Node& n : m.graph.nodes) readers += n.op_type == kConvNhwcOp && n.inputs[0] == pool->outputs[0];
  EXPECT_EQ(readers, 1u);
  // One transpose in (x), one out (y), none in between.
  EXPECT_EQ(CountTransposes(m, kToNhwc), 1u);
  EXPECT_EQ(CountTransposes(m, kToNchw), 1u);
  EXPECT_EQ(stats.transposes, 2u);
  // The window attributes travel with it.
  const Attribute* k = pool->FindAttribute("kernel_shape");
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->ints, (std::vector<int64_t>{3, 3}));
  EXPECT_NE(pool->FindAttribute("strides"), nullptr);
  EXPECT_NE(pool->FindAttribute("pads"), nullptr);
  EXPECT_EQ(m.OpsetVersion(kVigilDomain), kVigilOpsetVersion);
}

TEST(LayoutNhwcPool, PoolsStayNchwUnlessListed) {
  Model m = Stem("MaxPool");
  NhwcStats stats = Convert(m, {"GlobalAveragePool"});
  EXPECT_EQ(stats.pools, 0u);
  EXPECT_EQ(CountNodes(m, "MaxPool"), 1u);
  EXPECT_EQ(CountNodes(m, kMaxPoolNhwcOp), 0u);
  EXPECT_EQ(CountTransposes(m, kToNchw), 2u);  // before the MaxPool, and y
}

TEST(LayoutNhwcPool, AveragePoolFollowsToo) {
  Model m = Stem("AveragePool");
  m.graph.nodes[2].attributes.push_back(IntAttr("count_include_pad", 1));
  NhwcStats stats = Convert(m, {"AveragePool"});
  EXPECT_EQ(stats.pools, 1u);
  const Node* pool = Find(m, kAveragePoolNhwcOp);
  ASSERT_NE(pool, nullptr);
  EXPECT_NE(pool->FindAttribute("count_include_pad"), nullptr);
  EXPECT_EQ(CountTransposes(m, kToNchw), 1u);
}

TEST(LayoutNhwcPool, MaxPoolWithReadIndicesStaysNchw) {
  Model m = Stem("MaxPool", {"p", "indices"});
  m.graph.outputs.push_back(TensorValue("indices", DataType::kInt64, {1, 8, 4, 4}));
  NhwcStats stats = Convert(m, {"MaxPool"});
  EXPECT_EQ(stats.pools, 0u);
  EXPECT_EQ(CountNodes(m, "MaxPool"), 1u);
  EXPECT_EQ(CountNodes(m, kMaxPoolNhwcOp), 0u);
}

TEST(LayoutNhwcPool, UnreadIndicesAndStorageOrderAreDropped) {
  Model m = Stem("MaxPool", {"p", "indices"});
  m.graph.nodes[2].attributes.push_back(IntAttr("storage_order", 1));
  NhwcStats stats = Convert(m, {"MaxPool"});
  EXPECT_EQ(stats.pools, 1u);
  const Node* pool = Find(m, kMaxPoolNhwcOp);
  ASSERT_NE(pool, nullptr);
  EXPECT_EQ(pool->outputs.size(), 1u);
  EXPECT_EQ(pool->FindAttribute("storage_order"), nullptr);
}

TEST(LayoutNhwcPool, PoolThatWouldAddATransposeStaysNchw) {
  // c0 is also a graph output (its to-NCHW transpose stays) and the pool's
  // result is one too: moving the pool would add a transpose.
  Model m = BaseModel();
  m.graph.outputs = {TensorValue("c0", kF16, {1, 8, 8, 8}), TensorValue("p", kF16, {1, 8, 4, 4})};
  m.graph.nodes = {Conv("x", "w0", "c0"), Pool("MaxPool", "c0", {"p"})};
  NhwcStats stats = Convert(m, {"MaxPool"});
  EXPECT_EQ(stats.pools, 0u);
  EXPECT_EQ(CountNodes(m, "MaxPool"), 1u);
}

TEST(LayoutNhwcPool, GlobalAveragePoolBeforeFlattenKeepsOneTranspose) {
  // x -> Conv -> Relu -> Conv -> Relu -> GlobalAveragePool -> Flatten -> y
  Model m = BaseModel();
  m.graph.outputs = {TensorValue("y", kF16, {1, 8})};
  Node flatten = MakeNode("Flatten", {"g"}, {"y"}, "flatten");
  flatten.attributes.push_back(IntAttr("axis", 1));
  m.graph.nodes = {Conv("x", "w0", "c0"), MakeNode("Relu", {"c0"}, {"r0"}, "relu0"), Conv("r0", "w1", "c1"),
                   MakeNode("Relu", {"c1"}, {"r1"}, "relu1"), MakeNode("GlobalAveragePool", {"r1"}, {"g"}, "gap"),
                   flatten};
  NhwcStats stats = Convert(m, {"MaxPool", "GlobalAveragePool"});
  EXPECT_EQ(stats.pools, 1u);
  EXPECT_EQ(CountNodes(m, "GlobalAveragePool"), 0u);
  const Node* gap = Find(m, kGlobalAveragePoolNhwcOp);
  ASSERT_NE(gap, nullptr);
  EXPECT_NE(ProducerOf(m, gap->inputs[0])->op_type, "Transpose");
  // The only to-NCHW transpose is the one in front of Flatten.
  EXPECT_EQ(CountTransposes(m, kToNchw), 1u);
  const Node* flat = Find(m, "Flatten");
  ASSERT_NE(flat, nullptr);
  const Node* before = ProducerOf(m, flat->inputs[0]);
  ASSERT_NE(before, nullptr);
  EXPECT_EQ(before->op_type, "Transpose");
  EXPECT_EQ(before->inputs[0], gap->outputs[0]);
  EXPECT_EQ(CountTransposes(m, kToNhwc), 1u);
}

}  // namespace
}  // namespace vigil::ir
