#include "ir/extract_subgraph.h"

#include <memory>

#include <gtest/gtest.h>

#include "graph_builder.h"
#include "ir/validate.h"

namespace vigil::ir {
namespace {

using namespace vigil::ir::testing;

TypeInfo FloatType(std::vector<int64_t> dims) { return TensorValue("", DataType::kFloat32, std::move(dims)).type; }

std::vector<std::string> Names(const std::vector<ValueInfo>& infos) {
  std::vector<std::string> names;
  for (const ValueInfo& vi : infos) names.push_back(vi.name);
  return names;
}

// x -> Add(x, w) = a -> Mul(a, v) = b -> Relu(b) = c -> Add(c, a) = y
// with initializers w and v; y is the only graph output.
Model Diamond() {
  Model m;
  m.ir_version = 8;
  m.opset_imports = {{"", 17}, {"ai.vigil.testing", 1}};
  m.graph.name = "diamond";
  m.graph.inputs = {TensorValue("x", DataType::kFloat32, {2, 3})};
  m.graph.outputs = {TensorValue("y", DataType::kFloat32, {2, 3})};
  m.graph.initializers = {Initializer("w", DataType::kFloat32, {3}), Initializer("v", DataType::kFloat32, {3})};
  m.graph.value_infos = {TensorValue("b", DataType::kFloat32, {2, 3}), TensorValue("c", DataType::kFloat32, {2, 3})};
  m.graph.nodes = {MakeNode("Add", {"x", "w"}, {"a"}, "add"), MakeNode("Mul", {"a", "v"}, {"b"}, "mul"),
                   MakeNode("Relu", {"b"}, {"c"}, "relu"), MakeNode("Add", {"c", "a"}, {"y"}, "add2")};
  return m;
}

std::unordered_map<std::string, TypeInfo> RecordedTypes() {
  return {{"a", FloatType({2, 3})}, {"b", FloatType({2, 3})}, {"c", FloatType({2, 3})}};
}

TEST(ExtractSubgraph, MiddleRangeGetsRecordedInputsAndNeededOutputs) {
  auto sub = ExtractSubgraph(Diamond(), {1, 2}, RecordedTypes());
  ASSERT_TRUE(sub.ok()) << sub.status().ToString();
  EXPECT_EQ(Names(sub->graph.inputs), std::vector<std::string>{"a"});
  // c is read by add2, outside the set; b only inside.
  EXPECT_EQ(Names(sub->graph.outputs), std::vector<std::string>{"c"});
  ASSERT_EQ(sub->graph.initializers.size(), 1u);
  EXPECT_EQ(sub->graph.initializers[0].name, "v");
  EXPECT_EQ(Names(sub->graph.value_infos), std::vector<std::string>{"b"});
  EXPECT_EQ(sub->opset_imports.size(), 2u);
  ASSERT_TRUE(sub->graph.inputs[0].has_type);
  EXPECT_EQ(TypeToString(sub->graph.inputs[0].type), "float32[2,3]");
  Status valid = ValidateModel(*sub);
  EXPECT_TRUE(valid.ok()) << valid.ToString();
}

TEST(ExtractSubgraph, ValueReadLaterIsAnOutputBesidesTheGraphOutput) {
  // a is read by add2 (outside {0}); so it is the output even though y is the graph's.
  auto sub = ExtractSubgraph(Diamond(), {0}, RecordedTypes());
  ASSERT_TRUE(sub.ok()) << sub.status().ToString();
  EXPECT_EQ(Names(sub->graph.inputs), std::vector<std::string>{"x"});
  EXPECT_EQ(Names(sub->graph.outputs), std::vector<std::string>{"a"});
  EXPECT_EQ(sub->graph.initializers[0].name, "w");
  EXPECT_TRUE(ValidateModel(*sub).ok());
}

TEST(ExtractSubgraph, WholeGraphKeepsInputsOutputsAndInitializers) {
  auto sub = ExtractSubgraph(Diamond(), {0, 1, 2, 3}, {});
  ASSERT_TRUE(sub.ok()) << sub.status().ToString();
  EXPECT_EQ(Names(sub->graph.inputs), std::vector<std::string>{"x"});
  EXPECT_EQ(Names(sub->graph.outputs), std::vector<std::string>{"y"});
  EXPECT_EQ(sub->graph.initializers.size(), 2u);
  EXPECT_EQ(Names(sub->graph.value_infos), (std::vector<std::string>{"b", "c"}));
  EXPECT_TRUE(ValidateModel(*sub).ok());
}

TEST(ExtractSubgraph, NonContiguousSetFeedsTheGapFromRecordedValues) {
  auto sub = ExtractSubgraph(Diamond(), {0, 3}, RecordedTypes());
  ASSERT_TRUE(sub.ok()) << sub.status().ToString();
  EXPECT_EQ(Names(sub->graph.inputs), (std::vector<std::string>{"x", "c"}));
  // a is read by mul (dropped) and add2 (kept): it is needed outside, so an output.
  EXPECT_EQ(Names(sub->graph.outputs), (std::vector<std::string>{"a", "y"}));
  EXPECT_TRUE(ValidateModel(*sub).ok());
}

TEST(ExtractSubgraph, LastNodesOutputsWhenNothingIsNeededOutside) {
  Model m = Diamond();
  m.graph.nodes.push_back(MakeNode("Neg", {"b"}, {"d"}, "dangling"));  // d: read by nobody
  m.graph.value_infos.push_back(TensorValue("d", DataType::kFloat32, {2, 3}));
  auto sub = ExtractSubgraph(m, {4}, RecordedTypes());
  ASSERT_TRUE(sub.ok()) << sub.status().ToString();
  EXPECT_EQ(Names(sub->graph.outputs), std::vector<std::string>{"d"});
  EXPECT_TRUE(sub->graph.outputs[0].has_type);
  EXPECT_TRUE(sub->graph.value_infos.empty());  // d is an output, not value_info
}

TEST(ExtractSubgraph, DeclaredTypeUsedWhenNotRecorded) {
  auto sub = ExtractSubgraph(Diamond(), {2}, {});
  ASSERT_TRUE(sub.ok()) << sub.status().ToString();
  ASSERT_EQ(sub->graph.inputs.size(), 1u);
  EXPECT_EQ(sub->graph.inputs[0].name, "b");  // typed by value_info
  EXPECT_TRUE(sub->graph.inputs[0].has_type);
}

TEST(ExtractSubgraph, UnknownInputTypeIsAnError) {
  auto sub = ExtractSubgraph(Diamond(), {1}, {});
  ASSERT_FALSE(sub.ok());
  EXPECT_NE(sub.status().summary().find("'a' is not known"), std::string::npos) << sub.status().summary();
  EXPECT_NE(sub.status().summary().find("Mul 'mul'"), std::string::npos);
}

TEST(ExtractSubgraph, RefusesEmptyDuplicateAndOutOfRange) {
  EXPECT_FALSE(ExtractSubgraph(Diamond(), {}, {}).ok());
  EXPECT_FALSE(ExtractSubgraph(Diamond(), {0, 0}, {}).ok());
  auto out = ExtractSubgraph(Diamond(), {9}, {});
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().summary().find("out of range"), std::string::npos);
}

TEST(ExtractSubgraph, OuterScopeNamesOfSubgraphsBecomeInputs) {
  Model m = Diamond();
  auto branch = std::make_shared<Graph>();
  branch->name = "then";
  branch->nodes = {MakeNode("Neg", {"c"}, {"t"})};  // c from the enclosing graph
  branch->outputs = {TensorValue("t", DataType::kFloat32, {2, 3})};
  Node if_node = MakeNode("If", {"cond"}, {"z"}, "if");
  Attribute then_attr;
  then_attr.name = "then_branch";
  then_attr.type = AttributeType::kGraph;
  then_attr.g = branch;
  if_node.attributes.push_back(then_attr);
  m.graph.inputs.push_back(TensorValue("cond", DataType::kBool, {}));
  m.graph.nodes.push_back(if_node);
  EXPECT_EQ(ImplicitInputs(if_node), std::vector<std::string>{"c"});
  auto sub = ExtractSubgraph(m, {4}, RecordedTypes());
  ASSERT_TRUE(sub.ok()) << sub.status().ToString();
  EXPECT_EQ(Names(sub->graph.inputs), (std::vector<std::string>{"cond", "c"}));
  // c is read implicitly by the If: extracting {2} must keep it as an output.
  auto relu = ExtractSubgraph(m, {2}, RecordedTypes());
  ASSERT_TRUE(relu.ok());
  EXPECT_EQ(Names(relu->graph.outputs), std::vector<std::string>{"c"});
}

}  // namespace
}  // namespace vigil::ir
