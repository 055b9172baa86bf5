#include "ir/model_stats.h"

#include <gtest/gtest.h>

#include "graph_builder.h"

namespace vigil::ir {
namespace {

using namespace vigil::ir::testing;

TEST(ModelStats, CountsNodesOpsAndParameters) {
  Model m = ChainModel();
  m.graph.initializers = {Initializer("w", DataType::kFloat32, {64, 3, 7, 7}),
                          Initializer("b", DataType::kFloat16, {64}), Initializer("s", DataType::kInt64, {})};
  m.graph.nodes.push_back(MakeNode("Relu", {"a"}, {"c"}));
  m.graph.nodes.push_back(MakeNode("FusedConv", {"a"}, {"d"}));
  m.graph.nodes.back().domain = "com.microsoft";
  ModelStats s = ComputeStats(m);
  EXPECT_EQ(s.nodes, 4u);
  EXPECT_EQ(s.ops["Relu"], 2u);
  EXPECT_EQ(s.ops["Neg"], 1u);
  EXPECT_EQ(s.ops["com.microsoft::FusedConv"], 1u);
  EXPECT_EQ(s.parameters, 64u * 3 * 7 * 7 + 64 + 1);
  EXPECT_EQ(s.parameter_bytes, 64u * 3 * 7 * 7 * 4 + 64 * 2 + 8);
}

TEST(ModelStats, SubgraphNodesCountedSeparately) {
  Model m = ChainModel();
  auto g = std::make_shared<Graph>();
  g->nodes = {MakeNode("Identity", {"a"}, {"t"}), MakeNode("Identity", {"t"}, {"u"})};
  g->initializers = {Initializer("k", DataType::kFloat32, {10})};
  Attribute a;
  a.name = "body";
  a.type = AttributeType::kGraph;
  a.g = g;
  m.graph.nodes[1].attributes.push_back(a);
  ModelStats s = ComputeStats(m);
  EXPECT_EQ(s.nodes, 2u);
  EXPECT_EQ(s.nodes_including_subgraphs, 4u);
  EXPECT_EQ(s.subgraphs, 1u);
  EXPECT_EQ(s.parameters, 10u);
  EXPECT_EQ(s.ops.count("Identity"), 0u);  // histogram is the top-level graph's
}

}  // namespace
}  // namespace vigil::ir
