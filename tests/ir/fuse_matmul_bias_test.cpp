// The MatMul + bias fusion pass on small graphs: what fuses, and each
// condition that keeps a MatMul and its Add apart.
#include "ir/fuse_matmul_bias.h"

#include <gtest/gtest.h>

#include "graph_builder.h"
#include "ir/layout_nhwc.h"  // kVigilDomain

namespace vigil::ir {
namespace {

using namespace vigil::ir::testing;

constexpr DataType kF16 = DataType::kFloat16;

// x [2,5,4] -> MatMul(W [4,6]) -> p -> Add(p, b [6]) -> y
Model Linear() {
  Model m;
  m.ir_version = 8;
  m.opset_imports = {{"", 17}};
  m.graph.name = "linear";
  m.graph.inputs = {TensorValue("x", kF16, {2, 5, 4})};
  m.graph.outputs = {TensorValue("y", kF16, {2, 5, 6})};
  m.graph.initializers = {Initializer("w", kF16, {4, 6}), Initializer("b", kF16, {6})};
  m.graph.nodes = {MakeNode("MatMul", {"x", "w"}, {"p"}, "mm"), MakeNode("Add", {"p", "b"}, {"y"}, "add")};
  return m;
}

std::unordered_map<std::string, TypeInfo> Types(const Model& m) {
  std::unordered_map<std::string, TypeInfo> types;
  for (const ValueInfo& v : m.graph.inputs) types[v.name] = v.type;
  return types;
}

size_t Fuse(Model& m) {
  auto r = FuseMatMulBias(m, Types(m));
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : 0;
}

TEST(FuseMatMulBias, FusesALinearLayer) {
  Model m = Linear();
  EXPECT_EQ(Fuse(m), 1u);
  ASSERT_EQ(m.graph.nodes.size(), 1u);
  const Node& n = m.graph.nodes[0];
  EXPECT_EQ(n.op_type, kMatMulBiasOp);
  EXPECT_EQ(n.domain, kVigilDomain);
  EXPECT_EQ(n.inputs, (std::vector<std::string>{"x", "w", "b"}));
  EXPECT_EQ(n.outputs, (std::vector<std::string>{"y"}));
  EXPECT_EQ(n.name, "add");
  EXPECT_EQ(m.OpsetVersion(kVigilDomain), kVigilOpsetVersion);
}

TEST(FuseMatMulBias, FusesBiasFirstAndRowBias) {
  Model m = Linear();
  m.graph.nodes[1].inputs = {"b", "p"};
  m.graph.initializers[1] = Initializer("b", kF16, {1, 6});
  EXPECT_EQ(Fuse(m), 1u);
  ASSERT_EQ(m.graph.nodes.size(), 1u);
  EXPECT_EQ(m.graph.nodes[0].inputs, (std::vector<std::string>{"x", "w", "b"}));
}

TEST(FuseMatMulBias, KeepsAProductWithTwoConsumers) {
  Model m = Linear();
  m.graph.nodes.push_back(MakeNode("Relu", {"p"}, {"r"}, "relu"));
  m.graph.outputs.push_back(TensorValue("r", kF16, {2, 5, 6}));
  EXPECT_EQ(Fuse(m), 0u);
  EXPECT_EQ(m.graph.nodes.size(), 3u);
  EXPECT_EQ(m.OpsetVersion(kVigilDomain), -1);
}

TEST(FuseMatMulBias, KeepsAProductThatIsAGraphOutput) {
  Model m = Linear();
  m.graph.outputs.push_back(TensorValue("p", kF16, {2, 5, 6}));
  EXPECT_EQ(Fuse(m), 0u);
}

TEST(FuseMatMulBias, KeepsANonConstantBias) {
  Model m = Linear();
  m.graph.initializers.pop_back();
  m.graph.inputs.push_back(TensorValue("b", kF16, {6}));
  EXPECT_EQ(Fuse(m), 0u);
  // An initializer that is also a graph input can be overridden: not constant.
  Model o = Linear();
  o.graph.inputs.push_back(TensorValue("b", kF16, {6}));
  EXPECT_EQ(Fuse(o), 0u);
}

TEST(FuseMatMulBias, KeepsANonConstantWeight) {
  Model m = Linear();
  m.graph.initializers.erase(m.graph.initializers.begin());
  m.graph.inputs.push_back(TensorValue("w", kF16, {4, 6}));
  EXPECT_EQ(Fuse(m), 0u);
}

TEST(FuseMatMulBias, KeepsMismatchedShapes) {
  Model wide = Linear();
  wide.graph.initializers[1] = Initializer("b", kF16, {5});  // not N
  EXPECT_EQ(Fuse(wide), 0u);
  Model full = Linear();
  full.graph.initializers[1] = Initializer("b", kF16, {5, 6});  // not a row
  EXPECT_EQ(Fuse(full), 0u);
  Model batched = Linear();
  batched.graph.initializers[0] = Initializer("w", kF16, {2, 4, 6});  // W not 2-D
  EXPECT_EQ(Fuse(batched), 0u);
  Model dtype = Linear();
  dtype.graph.initializers[1] = Initializer("b", DataType::kFloat32, {6});
  EXPECT_EQ(Fuse(dtype), 0u);
}

TEST(FuseMatMulBias, KeepsAVectorOrUnknownRankA) {
  Model m = Linear();
  m.graph.inputs[0] = TensorValue("x", kF16, {4});
  EXPECT_EQ(Fuse(m), 0u);
  Model u = Linear();
  EXPECT_EQ(FuseMatMulBias(u, {}).value(), 0u);
}

TEST(FuseMatMulBias, KeepsOtherConsumerOps) {
  Model m = Linear();
  m.graph.nodes[1].op_type = "Sub";
  EXPECT_EQ(Fuse(m), 0u);
}

TEST(FuseMatMulBias, FusesEveryLayerOfAChain) {
  Model m = Linear();
  m.graph.initializers.push_back(Initializer("w2", kF16, {6, 3}));
  m.graph.initializers.push_back(Initializer("b2", kF16, {3}));
  m.graph.nodes[1].outputs = {"h"};
  m.graph.nodes.push_back(MakeNode("MatMul", {"h", "w2"}, {"p2"}, "mm2"));
  m.graph.nodes.push_back(MakeNode("Add", {"p2", "b2"}, {"y"}, "add2"));
  auto types = Types(m);
  types["h"] = TensorValue("h", kF16, {2, 5, 6}).type;
  auto r = FuseMatMulBias(m, types);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, 2u);
  ASSERT_EQ(m.graph.nodes.size(), 2u);
  EXPECT_EQ(m.graph.nodes[1].inputs, (std::vector<std::string>{"h", "w2", "b2"}));
}

}  // namespace
}  // namespace vigil::ir
