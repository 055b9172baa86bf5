#include "ir/use_index.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "graph_builder.h"

namespace vigil::ir {
namespace {

using testing::MakeNode;
using testing::TensorValue;

// The index as ordered maps, so that two indexes compare whole.
struct Flat {
  std::map<std::string, size_t> producer;
  std::map<std::string, std::vector<size_t>> consumers;
  std::map<std::string, int> opaque;
  bool operator==(const Flat&) const = default;
};

Flat Flatten(const UseIndex& idx) {
  return {{idx.producer.begin(), idx.producer.end()},
          {idx.consumers.begin(), idx.consumers.end()},
          {idx.opaque.begin(), idx.opaque.end()}};
}

// An If whose branch reads `outer` from the enclosing graph.
Node IfReading(const std::string& cond, const std::string& outer, const std::string& out) {
  auto branch = std::make_shared<Graph>();
  branch->nodes = {MakeNode("Neg", {outer}, {"branch_" + out})};
  branch->outputs = {TensorValue("branch_" + out, DataType::kFloat32, {2})};
  Node n = MakeNode("If", {cond}, {out});
  Attribute then_attr;
  then_attr.name = "then_branch";
  then_attr.type = AttributeType::kGraph;
  then_attr.g = branch;
  n.attributes.push_back(then_attr);
  return n;
}

TEST(UseIndex, BuildListsReadsInNodeOrderOnePerSlot) {
  Graph g;
  g.nodes = {MakeNode("Relu", {"x"}, {"a"}), MakeNode("Add", {"a", "a"}, {"b"}), MakeNode("Mul", {"x", "b"}, {"c"}),
             IfReading("cond", "a", "d")};
  const UseIndex idx = UseIndex::Build(g, std::vector<bool>(g.nodes.size(), false));
  EXPECT_EQ(idx.consumers.at("a"), (std::vector<size_t>{1, 1, 3}));
  EXPECT_EQ(idx.consumers.at("x"), (std::vector<size_t>{0, 2}));
  EXPECT_EQ(idx.producer.at("b"), 1u);
  EXPECT_EQ(idx.opaque.at("a"), 1);
  EXPECT_FALSE(idx.consumers.count("c"));  // read by nobody: no entry
  // A dead node is left out.
  const UseIndex without_add = UseIndex::Build(g, {false, true, false, false});
  EXPECT_EQ(without_add.consumers.at("a"), (std::vector<size_t>{3}));
  EXPECT_FALSE(without_add.producer.count("b"));
}

// Random rewrites (renamed inputs, renamed outputs, killed nodes, appended
// nodes), each wrapped in Unlink / Link, leave the index equal to a rebuild
// after every step.
TEST(UseIndex, LinkAndUnlinkKeepTheIndexEqualToARebuild) {
  std::mt19937 rng(13);
  for (int trial = 0; trial < 20; ++trial) {
    Graph g;
    std::vector<std::string> values = {"in0", "in1", "cond"};
    for (int i = 0; i < 13; ++i) {
      const std::string out = "v" + std::to_string(i);
      const auto pick = [&] { return values[rng() % values.size()]; };
      if (i % 5 == 4) {
        g.nodes.push_back(IfReading("cond", pick(), out));
      } else {
        g.nodes.push_back(MakeNode("Add", {pick(), rng() % 4 == 0 ? std::string() : pick()}, {out}));
      }
      values.push_back(out);
    }
    std::vector<bool> dead(g.nodes.size(), false);
    UseIndex idx = UseIndex::Build(g, dead);
    for (int step = 0; step < 127; ++step) {
      const size_t i = rng() % g.nodes.size();
      if (dead[i]) continue;
      switch (rng() % 4) {
        case 0:  // another value read
          idx.Unlink(g, i);
          g.nodes[i].inputs[rng() % g.nodes[i].inputs.size()] = values[rng() % values.size()];
          idx.Link(g, i);
          break;
        case 1:  // a renamed result
          idx.Unlink(g, i);
          g.nodes[i].outputs[0] += "_r";
          values.push_back(g.nodes[i].outputs[0]);
          idx.Link(g, i);
          break;
        case 2:  // a killed node
          idx.Unlink(g, i);
          dead[i] = true;
          break;
        default:  // an appended node
          g.nodes.push_back(MakeNode("Neg", {values[rng() % values.size()]}, {"n" + std::to_string(step)}));
          values.push_back(g.nodes.back().outputs[0]);
          dead.push_back(false);
          idx.Link(g, g.nodes.size() - 1);
          break;
      }
      ASSERT_EQ(Flatten(idx), Flatten(UseIndex::Build(g, dead))) << "trial " << trial << ", step " << step;
    }
  }
}

}  // namespace
}  // namespace vigil::ir
