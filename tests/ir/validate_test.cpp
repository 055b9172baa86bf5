#include "ir/validate.h"

#include <gtest/gtest.h>

#include "graph_builder.h"

namespace vigil::ir {
namespace {

using namespace vigil::ir::testing;

void ExpectInvalid(const Model& m, const std::string& fragment) {
  Status s = ValidateModel(m);
  ASSERT_FALSE(s.ok()) << "expected a failure mentioning: " << fragment;
  EXPECT_EQ(s.code(), ErrorCode::kInvalidModel);
  EXPECT_NE(s.summary().find(fragment), std::string::npos) << s.summary();
}

TEST(Validate, ValidChainPasses) {
  Model m = ChainModel();
  Status s = ValidateModel(m);
  EXPECT_TRUE(s.ok()) << s.ToString();
}

TEST(Validate, UndefinedInputNamesNodeAndValue) {
  Model m = ChainModel();
  m.graph.nodes[1].inputs[0] = "missing";
  ExpectInvalid(m, "node Neg 'neg' in graph 'chain': input 0 'missing' is not defined");
}

TEST(Validate, OptionalEmptyInputIsAllowed) {
  Model m = ChainModel();
  m.graph.nodes[1].inputs.push_back("");
  EXPECT_TRUE(ValidateModel(m).ok());
}

TEST(Validate, DuplicateProducer) {
  Model m = ChainModel();
  m.graph.nodes.push_back(MakeNode("Abs", {"x"}, {"a"}, "abs"));
  ExpectInvalid(m, "value 'a' in graph 'chain' is defined twice: by node Relu 'relu' and by node Abs 'abs'");
}

TEST(Validate, OutputRedefiningInput) {
  Model m = ChainModel();
  m.graph.nodes[0].outputs[0] = "x";
  m.graph.nodes[1].inputs[0] = "x";
  ExpectInvalid(m, "value 'x' in graph 'chain' is defined twice: by a graph input and by node Relu 'relu'");
}

TEST(Validate, DuplicateInitializer) {
  Model m = ChainModel();
  m.graph.initializers = {Initializer("w", DataType::kFloat32, {1}), Initializer("w", DataType::kFloat32, {1})};
  ExpectInvalid(m, "value 'w' in graph 'chain' is defined twice");
}

TEST(Validate, InitializerAlsoListedAsInputIsAllowed) {
  Model m = ChainModel();
  m.graph.inputs.push_back(TensorValue("w", DataType::kFloat32, {1}));
  m.graph.initializers = {Initializer("w", DataType::kFloat32, {1})};
  EXPECT_TRUE(ValidateModel(m).ok());
}

TEST(Validate, CycleIsNamed) {
  Model m = ChainModel();
  // relu consumes neg's output, neg consumes relu's: a -> b -> a.
  m.graph.nodes = {MakeNode("Add", {"x", "b"}, {"a"}, "add"), MakeNode("Neg", {"a"}, {"b"}, "neg"),
                   MakeNode("Identity", {"b"}, {"y"}, "id")};
  ExpectInvalid(m, "the nodes of graph 'chain' form a cycle");
  Status s = ValidateModel(m);
  ASSERT_FALSE(s.diagnosis().facts.empty());
  EXPECT_NE(s.diagnosis().facts[0].value.find("Add 'add'"), std::string::npos);
}

TEST(Validate, SelfLoop) {
  Model m = ChainModel();
  m.graph.nodes[0].inputs = {"x", "a"};
  ExpectInvalid(m, "consumes its own output 'a'");
}

TEST(Validate, GraphOutputNotProduced) {
  Model m = ChainModel();
  m.graph.outputs.push_back(TensorValue("z", DataType::kFloat32, {1}));
  ExpectInvalid(m, "output 'z' of graph 'chain' is not produced by any node");
}

TEST(Validate, MissingOpsetImportForDomain) {
  Model m = ChainModel();
  m.graph.nodes[0].domain = "com.microsoft";
  ExpectInvalid(m, "uses domain 'com.microsoft', which the model does not import");
  m.opset_imports.push_back({"com.microsoft", 1});
  EXPECT_TRUE(ValidateModel(m).ok());
}

TEST(Validate, NoOpsetImportAtAll) {
  Model m = ChainModel();
  m.opset_imports.clear();
  ExpectInvalid(m, "no opset_import");
}

TEST(Validate, AiOnnxDomainEqualsDefault) {
  Model m = ChainModel();
  m.opset_imports = {{"ai.onnx", 17}};
  EXPECT_TRUE(ValidateModel(m).ok());
}

TEST(Validate, UnknownDtype) {
  Model m = ChainModel();
  m.graph.inputs[0].type.elem_type = static_cast<DataType>(99);
  ExpectInvalid(m, "input 'x' of graph 'chain' has unknown dtype 99");
  Model m2 = ChainModel();
  m2.graph.initializers = {Initializer("w", static_cast<DataType>(0), {1})};
  ExpectInvalid(m2, "initializer 'w' in graph 'chain' has unknown dtype 0");
}

TEST(Validate, NegativeDimInDeclaredShape) {
  Model m = ChainModel();
  m.graph.inputs[0].type.shape.dims[0] = Dim::Known(-3);
  ExpectInvalid(m, "negative dimension -3");
}

TEST(Validate, EmptyOpType) {
  Model m = ChainModel();
  m.graph.nodes[0].op_type.clear();
  ExpectInvalid(m, "node #0 in graph 'chain' has no op_type");
}

Model ModelWithIf(Graph then_branch) {
  Model m = ChainModel();
  Node if_node = MakeNode("If", {"cond"}, {"y2"}, "if");
  Attribute a;
  a.name = "then_branch";
  a.type = AttributeType::kGraph;
  a.g = std::make_shared<Graph>(std::move(then_branch));
  if_node.attributes.push_back(a);
  m.graph.inputs.push_back(TensorValue("cond", DataType::kBool, {}));
  m.graph.nodes.push_back(if_node);
  m.graph.outputs.push_back(TensorValue("y2", DataType::kFloat32, {2, 3}));
  return m;
}

TEST(Validate, SubgraphSeesOuterScope) {
  Graph g;
  g.name = "then";
  g.nodes = {MakeNode("Identity", {"a"}, {"t"})};  // 'a' comes from the outer graph
  g.outputs = {TensorValue("t", DataType::kFloat32, {2, 3})};
  EXPECT_TRUE(ValidateModel(ModelWithIf(g)).ok());
}

TEST(Validate, SubgraphUndefinedInputNamesTheAttribute) {
  Graph g;
  g.name = "then";
  g.nodes = {MakeNode("Identity", {"nowhere"}, {"t"})};
  g.outputs = {TensorValue("t", DataType::kFloat32, {2, 3})};
  Status s = ValidateModel(ModelWithIf(g));
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.summary().find("in attribute 'then_branch' of node If 'if' in graph 'chain'"), std::string::npos)
      << s.summary();
  EXPECT_NE(s.summary().find("input 0 'nowhere' is not defined"), std::string::npos);
}

TEST(TopologicalOrder, KeepsFileOrderWhenSorted) {
  Model m = ChainModel();
  auto order = TopologicalOrder(m.graph);
  ASSERT_TRUE(order.ok());
  EXPECT_EQ(*order, (std::vector<size_t>{0, 1}));
}

TEST(TopologicalOrder, SortsReversedNodes) {
  Model m = ChainModel();
  std::swap(m.graph.nodes[0], m.graph.nodes[1]);
  auto order = TopologicalOrder(m.graph);
  ASSERT_TRUE(order.ok());
  EXPECT_EQ(*order, (std::vector<size_t>{1, 0}));
  EXPECT_TRUE(ValidateModel(m).ok());
}

TEST(TopologicalOrder, SubgraphImplicitInputIsADependency) {
  // The If node uses 'late' inside its branch; 'late' is produced by a node
  // that comes after it in the file, so it must be scheduled first.
  Graph g;
  g.nodes = {MakeNode("Identity", {"late"}, {"t"})};
  g.outputs = {TensorValue("t", DataType::kFloat32, {2, 3})};
  Model m = ModelWithIf(g);
  m.graph.nodes.push_back(MakeNode("Abs", {"x"}, {"late"}, "late_producer"));
  auto order = TopologicalOrder(m.graph);
  ASSERT_TRUE(order.ok()) << order.status().ToString();
  std::vector<size_t> pos(order->size());
  for (size_t i = 0; i < order->size(); ++i) pos[(*order)[i]] = i;
  EXPECT_LT(pos[3], pos[2]);
}

// The rewriting passes' last step: dead nodes dropped, appended ones sorted in.
TEST(RemoveDeadAndSort, DropsDeadNodesAndSortsAppendedOnes) {
  Model m = ChainModel();  // relu: x -> a, neg: a -> y
  // A pass replaces neg by abs(b) with b = sigmoid(a), appended in reverse order.
  m.graph.nodes.push_back(MakeNode("Abs", {"b"}, {"y"}, "abs"));
  m.graph.nodes.push_back(MakeNode("Sigmoid", {"a"}, {"b"}, "sigmoid"));
  ASSERT_TRUE(RemoveDeadAndSort(m.graph, {false, true, false, false}).ok());
  ASSERT_EQ(m.graph.nodes.size(), 3u);
  EXPECT_EQ(m.graph.nodes[0].name, "relu");
  EXPECT_EQ(m.graph.nodes[1].name, "sigmoid");
  EXPECT_EQ(m.graph.nodes[2].name, "abs");
  EXPECT_TRUE(ValidateModel(m).ok());
}

TEST(RemoveDeadAndSort, LeavesTheGraphAsItWasOnACycle) {
  Model m = ChainModel();
  m.graph.nodes.push_back(MakeNode("Abs", {"c"}, {"b"}, "abs"));
  m.graph.nodes.push_back(MakeNode("Sigmoid", {"b"}, {"c"}, "sigmoid"));
  Status s = RemoveDeadAndSort(m.graph, {false, true, false, false});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.summary().find("cycle"), std::string::npos) << s.summary();
  ASSERT_EQ(m.graph.nodes.size(), 4u);
  EXPECT_EQ(m.graph.nodes[1].name, "neg");
  EXPECT_EQ(m.graph.nodes[3].name, "sigmoid");
  EXPECT_FALSE(RemoveDeadAndSort(m.graph, {false}).ok());  // one flag per node
}

TEST(Validate, FunctionBodyChecked) {
  Model m = ChainModel();
  Function f;
  f.name = "MyFn";
  f.domain = "local";
  f.inputs = {"p"};
  f.outputs = {"q"};
  f.nodes = {MakeNode("Relu", {"p"}, {"q"})};
  f.opset_imports = {{"", 17}};
  m.functions.push_back(f);
  EXPECT_TRUE(ValidateModel(m).ok());
  m.functions[0].nodes[0].inputs[0] = "r";
  ExpectInvalid(m, "input 0 'r' is not defined");
}

}  // namespace
}  // namespace vigil::ir

namespace vigil::ir {
namespace {

TEST(Validate, EmptyModelHasNoGraph) {
  Model m;
  Status s = ValidateModel(m);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.summary().find("no graph"), std::string::npos);
}

TEST(Validate, GraphWithoutOutputs) {
  Model m = testing::ChainModel();
  m.graph.outputs.clear();
  Status s = ValidateModel(m);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.summary().find("has no outputs"), std::string::npos);
}

}  // namespace
}  // namespace vigil::ir
