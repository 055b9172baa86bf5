// Symbolic evaluation of shape arithmetic over a dynamic batch dim N.
#include "ir/symbolic_shapes.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <memory>

#include <gtest/gtest.h>

#include "graph_builder.h"
#include "ir/fuse_matmul_bias.h"  // kMatMulBiasOp
#include "ir/layout_nhwc.h"       // kVigilDomain

namespace vigil::ir {
namespace {

using namespace vigil::ir::testing;

Tensor Ints(std::string name, std::vector<int64_t> v, std::vector<int64_t> dims) {
  return OwnedInitializer(std::move(name), DataType::kInt64, std::move(dims), std::move(v));
}

// x [N,8,6] -> y = Reshape(x, [2*N, -1, x.shape[-1:]]) and
// s = Sqrt(Cast<float>(x.shape[-1:])).
Graph ShapeChain() {
  Graph g;
  ValueInfo x = TensorValue("x", DataType::kFloat32, {0, 8, 6});
  x.type.shape.dims[0] = Dim::Symbolic("N");
  g.inputs = {x};
  g.initializers = {Ints("zero", {0}, {}),  Ints("two", {2}, {}),   Ints("axes0", {0}, {1}),
                    Ints("minus1", {-1}, {1}), Ints("last", {-1}, {1}),
                    Ints("end", {std::numeric_limits<int64_t>::max()}, {1})};
  Node gather = MakeNode("Gather", {"shape", "zero"}, {"n"});
  gather.attributes = {IntAttr("axis", 0)};
  Node cast = MakeNode("Cast", {"tail"}, {"tail_f"});
  cast.attributes = {IntAttr("to", static_cast<int64_t>(DataType::kFloat32))};
  g.nodes = {MakeNode("Shape", {"x"}, {"shape"}),
             gather,
             MakeNode("Mul", {"n", "two"}, {"n2"}),
             MakeNode("Unsqueeze", {"n2", "axes0"}, {"n2v"}),
             MakeNode("Slice", {"shape", "last", "end"}, {"tail"}),
             MakeNode("Concat", {"n2v", "minus1", "tail"}, {"target"}),
             MakeNode("Reshape", {"x", "target"}, {"y"}),
             cast,
             MakeNode("Sqrt", {"tail_f"}, {"s"})};
  g.nodes[5].attributes = {IntAttr("axis", 0)};
  return g;
}

TEST(SymbolicShapes, ProvesAReshapeTargetComputedFromABatchDim) {
  const Graph g = ShapeChain();
  const GraphIndex idx = IndexGraph(g);
  std::unordered_map<std::string, TypeInfo> types = {{"x", g.inputs[0].type}};
  SymbolicShapes sym(g, idx, types, 17);
  const SymDim n{1, {"N"}};
  EXPECT_EQ(sym.ValueOf("target"), (SymShape{SymDim{2, {"N"}}, SymDim::Known(-1), SymDim::Known(6)}));
  // -1 resolves to (8*6*N) / (2*N*6) = 4.
  EXPECT_EQ(sym.ShapeOf("y"), (SymShape{SymDim{2, {"N"}}, SymDim::Known(4), SymDim::Known(6)}));
  const std::optional<double> s = sym.ScalarOf("s");
  ASSERT_TRUE(s.has_value());
  EXPECT_NEAR(*s, std::sqrt(6.0), 1e-6);
  EXPECT_FALSE(sym.ScalarOf("x").has_value());  // not a constant
  EXPECT_EQ(sym.ShapeOf("x"), (SymShape{n, SymDim::Known(8), SymDim::Known(6)}));
}

// ai.vigil.MatMulBias of y = Reshape(x, ...) [2N, 4, 6] with W [6, 5]:
// [2N, 4, 5], with or without the bias and residual inputs; a W whose rows
// are not A's last dim, or that is not 2-D, proves nothing.
TEST(SymbolicShapes, ThroughAMatMulBias) {
  Graph g = ShapeChain();
  g.initializers.push_back(Initializer("w", DataType::kFloat32, {6, 5}));
  g.initializers.push_back(Initializer("b", DataType::kFloat32, {5}));
  g.initializers.push_back(Initializer("w_bad", DataType::kFloat32, {4, 5}));
  g.initializers.push_back(Initializer("w_3d", DataType::kFloat32, {1, 6, 5}));
  for (const auto& [w, out] : std::vector<std::pair<std::string, std::string>>{
           {"w", "p"}, {"w_bad", "p_bad"}, {"w_3d", "p_3d"}}) {
    Node mmb = MakeNode(kMatMulBiasOp, {"y", w, "b"}, {out});
    mmb.domain = kVigilDomain;
    g.nodes.push_back(mmb);
  }
  const GraphIndex idx = IndexGraph(g);
  std::unordered_map<std::string, TypeInfo> types = {{"x", g.inputs[0].type}};
  SymbolicShapes sym(g, idx, types, 17);
  EXPECT_EQ(sym.ShapeOf("p"), (SymShape{SymDim{2, {"N"}}, SymDim::Known(4), SymDim::Known(5)}));
  EXPECT_FALSE(sym.ShapeOf("p_bad").has_value());
  EXPECT_FALSE(sym.ShapeOf("p_3d").has_value());
}

TEST(SymbolicShapes, DividesOnlyExactly) {
  const SymDim n6{6, {"N"}};
  EXPECT_EQ(DivDims(n6, SymDim{3, {"N"}}), SymDim::Known(2));
  EXPECT_EQ(DivDims(n6, SymDim::Known(2)), (SymDim{3, {"N"}}));
  EXPECT_FALSE(DivDims(n6, SymDim::Known(4)).has_value());
  EXPECT_FALSE(DivDims(n6, SymDim{1, {"M"}}).has_value());
  EXPECT_FALSE(DivDims(n6, SymDim::Known(0)).has_value());
  EXPECT_EQ(MulDims(SymDim{2, {"N"}}, SymDim{3, {"B"}}), (SymDim{6, {"B", "N"}}));
  EXPECT_FALSE(MulDims(SymDim::Known(std::numeric_limits<int64_t>::max()), SymDim::Known(2)).has_value());
}

}  // namespace
}  // namespace vigil::ir
