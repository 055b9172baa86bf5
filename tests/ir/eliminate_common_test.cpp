// Common-subexpression elimination on small graphs: what merges (BERT's
// per-layer mask Where, whole repeated chains, equal small constants under
// different names) and each condition that keeps a repeated node.
#include "ir/eliminate_common.h"

#include <gtest/gtest.h>

#include "graph_builder.h"

namespace vigil::ir {
namespace {

using namespace vigil::ir::testing;

constexpr DataType kF32 = DataType::kFloat32;

Tensor Scalar(std::string name, float v) { return OwnedInitializer(std::move(name), kF32, {}, std::vector<float>{v}); }

// Two "layers", each turning the boolean mask m into an additive one with
// its own constants and adding it to its input:
//   f0 = Where(m, zero0, ninf0), y0 = Add(x, f0)
//   f1 = Where(m, zero1, ninf1), y  = Add(y0, f1)
Model TwoLayers() {
  Model model;
  model.ir_version = 8;
  model.opset_imports = {{"", 17}};
  model.graph.name = "mask";
  model.graph.inputs = {TensorValue("x", kF32, {2, 4}), TensorValue("m", DataType::kBool, {2, 4})};
  model.graph.outputs = {TensorValue("y", kF32, {2, 4})};
  model.graph.initializers = {Scalar("zero0", 0.0f), Scalar("ninf0", -1e4f), Scalar("zero1", 0.0f),
                              Scalar("ninf1", -1e4f)};
  model.graph.nodes = {MakeNode("Where", {"m", "zero0", "ninf0"}, {"f0"}, "where0"),
                       MakeNode("Add", {"x", "f0"}, {"y0"}, "add0"),
                       MakeNode("Where", {"m", "zero1", "ninf1"}, {"f1"}, "where1"),
                       MakeNode("Add", {"y0", "f1"}, {"y"}, "add1")};
  return model;
}

size_t Eliminate(Model& m) {
  auto r = EliminateCommonSubexpressions(m);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : 0;
}

TEST(EliminateCommon, MergesARepeatedNodeWithEqualConstants) {
  Model m = TwoLayers();
  EXPECT_EQ(Eliminate(m), 1u);
  ASSERT_EQ(m.graph.nodes.size(), 3u);
  EXPECT_EQ(CountNodes(m, "Where"), 1u);
  EXPECT_EQ(m.graph.nodes[0].name, "where0");
  const Node* last = ProducerOf(m, "y");
  ASSERT_NE(last, nullptr);
  EXPECT_EQ(last->inputs, (std::vector<std::string>{"y0", "f0"}));
}

TEST(EliminateCommon, KeepsNodesThatDiffer) {
  Model constant = TwoLayers();  // another -inf stand-in
  constant.graph.initializers[3] = Scalar("ninf1", -3e4f);
  EXPECT_EQ(Eliminate(constant), 0u);
  Model input = TwoLayers();  // another mask
  input.graph.inputs.push_back(TensorValue("m2", DataType::kBool, {2, 4}));
  input.graph.nodes[2].inputs[0] = "m2";
  EXPECT_EQ(Eliminate(input), 0u);
  Model attribute = TwoLayers();
  attribute.graph.nodes[0].op_type = attribute.graph.nodes[2].op_type = "Custom";
  attribute.graph.nodes[0].domain = attribute.graph.nodes[2].domain = "com.example";
  attribute.graph.nodes[2].attributes.push_back(IntAttr("k", 1));
  EXPECT_EQ(Eliminate(attribute), 0u);
  attribute.graph.nodes[0].attributes.push_back(IntAttr("k", 1));
  EXPECT_EQ(Eliminate(attribute), 1u);  // now equal
  Model domain = TwoLayers();
  domain.graph.nodes[2].domain = "com.example";
  EXPECT_EQ(Eliminate(domain), 0u);
}

TEST(EliminateCommon, MergesWholeRepeatedChains) {
  // Each layer also negates its mask first: both nodes of the second chain go.
  Model m = TwoLayers();
  m.graph.nodes.insert(m.graph.nodes.begin(), MakeNode("Not", {"m"}, {"n0"}, "not0"));
  m.graph.nodes.insert(m.graph.nodes.begin() + 3, MakeNode("Not", {"m"}, {"n1"}, "not1"));
  m.graph.nodes[1].inputs[0] = "n0";
  m.graph.nodes[4].inputs[0] = "n1";
  EXPECT_EQ(Eliminate(m), 2u);
  EXPECT_EQ(CountNodes(m, "Not"), 1u);
  EXPECT_EQ(CountNodes(m, "Where"), 1u);
  EXPECT_EQ(ProducerOf(m, "y")->inputs, (std::vector<std::string>{"y0", "f0"}));
}

TEST(EliminateCommon, KeepsGraphOutputsRandomOpsAndLargeConstants) {
  Model output = TwoLayers();
  output.graph.outputs.push_back(TensorValue("f1", kF32, {2, 4}));
  EXPECT_EQ(Eliminate(output), 0u);

  Model random = TwoLayers();
  for (size_t i : {0u, 2u}) {
    random.graph.nodes[i] = MakeNode("RandomUniformLike", {"x"}, {i == 0 ? "f0" : "f1"});
  }
  EXPECT_EQ(Eliminate(random), 0u);

  // Equal constants over 256 bytes are not compared: only the same name is the same constant.
  Model large = TwoLayers();
  for (size_t i : {1u, 3u}) {
    large.graph.initializers[i] = OwnedInitializer(large.graph.initializers[i].name, kF32, {2, 40},
                                                   std::vector<float>(80, -1e4f));
  }
  EXPECT_EQ(Eliminate(large), 0u);
  large.graph.nodes[2].inputs[2] = "ninf0";
  EXPECT_EQ(Eliminate(large), 1u);

  // An initializer that is also a graph input may be overridden: not a constant.
  Model overridable = TwoLayers();
  overridable.graph.inputs.push_back(TensorValue("ninf1", kF32, {}));
  EXPECT_EQ(Eliminate(overridable), 0u);
}

TEST(EliminateCommon, KeepsAValueReadInsideASubgraph) {
  Model m = TwoLayers();
  auto branch = std::make_shared<Graph>();
  branch->name = "then";
  branch->nodes = {MakeNode("Neg", {"f1"}, {"t"})};  // f1 from the enclosing graph
  branch->outputs = {TensorValue("t", kF32, {2, 4})};
  Node if_node = MakeNode("If", {"c"}, {"z"}, "if");
  Attribute then_attr;
  then_attr.name = "then_branch";
  then_attr.type = AttributeType::kGraph;
  then_attr.g = branch;
  if_node.attributes.push_back(then_attr);
  m.graph.inputs.push_back(TensorValue("c", DataType::kBool, {}));
  m.graph.nodes.push_back(if_node);
  m.graph.outputs.push_back(TensorValue("z", kF32, {2, 4}));
  EXPECT_EQ(Eliminate(m), 0u);
  // Two equal nodes with subgraphs are kept too.
  m.graph.nodes.push_back(if_node);
  m.graph.nodes.back().outputs = {"z2"};
  m.graph.outputs.push_back(TensorValue("z2", kF32, {2, 4}));
  EXPECT_EQ(Eliminate(m), 0u);
}

TEST(EliminateCommon, MatchesEmptyOptionalSlotsExactly) {
  // TopK twice on the same inputs, once without its indices: not the same
  // node (which outputs exist is part of what it computes).
  auto make = [](const char* second_indices) {
    Model m = TwoLayers();
    m.graph.initializers.push_back(OwnedInitializer("k", DataType::kInt64, {1}, std::vector<int64_t>{2}));
    m.graph.nodes.push_back(MakeNode("TopK", {"y", "k"}, {"v0", "i0"}, "top0"));
    m.graph.nodes.push_back(MakeNode("TopK", {"y", "k"}, {"v1", second_indices}, "top1"));
    m.graph.nodes.push_back(MakeNode("Add", {"v0", "v1"}, {"w"}, "sum"));
    m.graph.outputs = {TensorValue("w", kF32, {2, 2}), TensorValue("i0", DataType::kInt64, {2, 2})};
    return m;
  };
  Model skipped = make("");
  EXPECT_EQ(Eliminate(skipped), 1u);  // the second Where only
  EXPECT_EQ(CountNodes(skipped, "TopK"), 2u);
  // With both outputs named, the second TopK goes and the Add reads v0 twice.
  Model named = make("i1");
  EXPECT_EQ(Eliminate(named), 2u);
  EXPECT_EQ(CountNodes(named, "TopK"), 1u);
  EXPECT_EQ(ProducerOf(named, "w")->inputs, (std::vector<std::string>{"v0", "v0"}));
}

}  // namespace
}  // namespace vigil::ir
