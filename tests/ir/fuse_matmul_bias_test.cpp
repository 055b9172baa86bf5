// The MatMul + bias, residual and GELU-epilogue fusion passes on small
// graphs: what fuses, and each condition that keeps a product and its Add
// (or Gelu) apart.
#include "ir/fuse_matmul_bias.h"

#include <cctype>

#include <gtest/gtest.h>

#include "graph_builder.h"
#include "ir/fuse_gelu.h"
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

// x [2,5,4] -> ai.vigil.MatMulBias(w [4,6], b [6]) -> y -> Add(y, r [2,5,6]) -> z
Model Residual() {
  Model m;
  m.ir_version = 8;
  m.opset_imports = {{"", 17}, {kVigilDomain, kVigilOpsetVersion}};
  m.graph.name = "residual";
  m.graph.inputs = {TensorValue("x", kF16, {2, 5, 4}), TensorValue("r", kF16, {2, 5, 6})};
  m.graph.outputs = {TensorValue("z", kF16, {2, 5, 6})};
  m.graph.initializers = {Initializer("w", kF16, {4, 6}), Initializer("b", kF16, {6})};
  Node mm = MakeNode(kMatMulBiasOp, {"x", "w", "b"}, {"y"}, "fc");
  mm.domain = kVigilDomain;
  m.graph.nodes = {mm, MakeNode("Add", {"y", "r"}, {"z"}, "residual")};
  return m;
}

// The graph inputs' types and y's ([2,5,6] float16 unless given).
std::unordered_map<std::string, TypeInfo> ResidualTypes(const Model& m, TypeInfo y = TensorValue("y", kF16, {2, 5, 6}).type) {
  auto types = Types(m);
  types["y"] = std::move(y);
  return types;
}

size_t FuseResidual(Model& m, const std::unordered_map<std::string, TypeInfo>& types, const ResidualAcceptor& accept = {}) {
  auto r = FuseResidualAdd(m, types, accept);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : 0;
}

size_t FuseResidual(Model& m) { return FuseResidual(m, ResidualTypes(m)); }

// A float16 tensor type with dims that are numbers or (strings) symbols; "" is
// an unnamed dim.
TypeInfo Symbolic(std::vector<std::string> dims) {
  TypeInfo t = TensorValue("t", kF16, {}).type;
  for (const std::string& d : dims) {
    const bool number = !d.empty() && std::isdigit(static_cast<unsigned char>(d[0]));
    t.shape.dims.push_back(number ? Dim::Known(std::stoll(d)) : d.empty() ? Dim{} : Dim::Symbolic(d));
  }
  return t;
}

TEST(FuseResidualAdd, FusesTheAddIntoTheProduct) {
  Model m = Residual();
  EXPECT_EQ(FuseResidual(m), 1u);
  ASSERT_EQ(m.graph.nodes.size(), 1u);
  const Node& n = m.graph.nodes[0];
  EXPECT_EQ(n.op_type, kMatMulBiasOp);
  EXPECT_EQ(n.domain, kVigilDomain);
  EXPECT_EQ(n.inputs, (std::vector<std::string>{"x", "w", "b", "r"}));
  EXPECT_EQ(n.outputs, (std::vector<std::string>{"z"}));
  EXPECT_EQ(n.name, "fc");
}

TEST(FuseResidualAdd, FusesTheResidualFirst) {
  Model m = Residual();
  m.graph.nodes[1].inputs = {"r", "y"};
  EXPECT_EQ(FuseResidual(m), 1u);
  ASSERT_EQ(m.graph.nodes.size(), 1u);
  EXPECT_EQ(m.graph.nodes[0].inputs, (std::vector<std::string>{"x", "w", "b", "r"}));
}

TEST(FuseResidualAdd, FusesEqualSymbolicShapesOnly) {
  Model m = Residual();
  auto types = ResidualTypes(m, Symbolic({"N", "5", "6"}));
  types["r"] = Symbolic({"N", "5", "6"});
  EXPECT_EQ(FuseResidual(m, types), 1u);
  // Another symbol, or an unnamed dim, may differ at run time (broadcast).
  for (TypeInfo r : {Symbolic({"M", "5", "6"}), Symbolic({"", "5", "6"})}) {
    Model o = Residual();
    auto t = ResidualTypes(o, Symbolic({"N", "5", "6"}));
    t["r"] = r;
    EXPECT_EQ(FuseResidual(o, t), 0u) << TypeToString(r);
  }
  Model unnamed = Residual();
  auto t = ResidualTypes(unnamed, Symbolic({"", "5", "6"}));
  t["r"] = Symbolic({"", "5", "6"});
  EXPECT_EQ(FuseResidual(unnamed, t), 0u);
}

TEST(FuseResidualAdd, KeepsABroadcastingResidual) {
  for (std::vector<int64_t> dims : {std::vector<int64_t>{6}, {1, 5, 6}, {2, 1, 6}, {3, 2, 5, 6}}) {
    Model m = Residual();
    m.graph.inputs[1] = TensorValue("r", kF16, dims);
    EXPECT_EQ(FuseResidual(m), 0u) << dims.size();
    EXPECT_EQ(m.graph.nodes.size(), 2u);
  }
}

TEST(FuseResidualAdd, KeepsAResidualOfUnknownTypeOrAnotherDtype) {
  Model m = Residual();
  auto types = ResidualTypes(m);
  types.erase("r");
  EXPECT_EQ(FuseResidual(m, types), 0u);
  Model d = Residual();
  d.graph.inputs[1] = TensorValue("r", DataType::kFloat32, {2, 5, 6});
  EXPECT_EQ(FuseResidual(d), 0u);
  Model y = Residual();
  EXPECT_EQ(FuseResidual(y, Types(y)), 0u);  // y's type unknown
}

TEST(FuseResidualAdd, KeepsAProductWithAnotherConsumer) {
  Model m = Residual();
  m.graph.nodes.push_back(MakeNode("Relu", {"y"}, {"q"}, "relu"));
  m.graph.outputs.push_back(TensorValue("q", kF16, {2, 5, 6}));
  EXPECT_EQ(FuseResidual(m), 0u);
  EXPECT_EQ(m.graph.nodes.size(), 3u);
}

TEST(FuseResidualAdd, KeepsAProductThatIsAGraphOutput) {
  Model m = Residual();
  m.graph.outputs.push_back(TensorValue("y", kF16, {2, 5, 6}));
  EXPECT_EQ(FuseResidual(m), 0u);
}

TEST(FuseResidualAdd, KeepsAResidualThatDependsOnTheProduct) {
  // Add(y, y): r is y itself.
  Model self = Residual();
  self.graph.nodes[1].inputs = {"y", "y"};
  EXPECT_EQ(FuseResidual(self), 0u);
  // A malformed graph whose r is computed from z = Add(y, r): a cycle.
  Model cycle = Residual();
  cycle.graph.inputs.pop_back();
  cycle.graph.nodes.push_back(MakeNode("Relu", {"z"}, {"r"}, "relu"));
  auto types = ResidualTypes(cycle);
  types["r"] = TensorValue("r", kF16, {2, 5, 6}).type;
  EXPECT_EQ(FuseResidual(cycle, types), 0u);
  EXPECT_EQ(cycle.graph.nodes.size(), 3u);
}

TEST(FuseResidualAdd, KeepsOtherOpsAndFusedProducts) {
  Model sub = Residual();
  sub.graph.nodes[1].op_type = "Sub";
  EXPECT_EQ(FuseResidual(sub), 0u);
  Model four = Residual();  // already carries a residual
  four.graph.nodes[0].inputs.push_back("r");
  EXPECT_EQ(FuseResidual(four), 0u);
  Model plain = Residual();  // a MatMulBias of the default domain is not ours
  plain.graph.nodes[0].domain = "";
  EXPECT_EQ(FuseResidual(plain), 0u);
}

TEST(FuseResidualAdd, AsksTheAcceptor) {
  Model m = Residual();
  std::vector<Node> asked;
  EXPECT_EQ(FuseResidual(m, ResidualTypes(m), [&](const Node& n) {
              asked.push_back(n);
              return false;
            }),
            0u);
  ASSERT_EQ(asked.size(), 1u);
  EXPECT_EQ(asked[0].inputs.size(), 4u);
  EXPECT_EQ(m.graph.nodes.size(), 2u);
}

TEST(FuseResidualAdd, FusesEveryBlockAndEachAddOnce) {
  // Two blocks: z1 = MatMulBias(x) + r; z = MatMulBias2(z1 as [2,5,6]) + z1.
  Model m = Residual();
  m.graph.initializers.push_back(Initializer("w2", kF16, {6, 6}));
  m.graph.nodes[1].outputs = {"z1"};
  Node mm2 = MakeNode(kMatMulBiasOp, {"z1", "w2", "b"}, {"y2"}, "fc2");
  mm2.domain = kVigilDomain;
  m.graph.nodes.push_back(mm2);
  m.graph.nodes.push_back(MakeNode("Add", {"z1", "y2"}, {"z"}, "residual2"));
  auto types = ResidualTypes(m);
  types["z1"] = types["y2"] = types["y"];
  EXPECT_EQ(FuseResidual(m, types), 2u);
  ASSERT_EQ(m.graph.nodes.size(), 2u);
  EXPECT_EQ(m.graph.nodes[1].inputs, (std::vector<std::string>{"z1", "w2", "b", "z1"}));
  // Add(y, y3) of two products: fused into the first in node order (y3's),
  // the other product its residual.
  Model two = Residual();
  Node mm3 = MakeNode(kMatMulBiasOp, {"x", "w", "b"}, {"y3"}, "fc3");
  mm3.domain = kVigilDomain;
  two.graph.nodes.insert(two.graph.nodes.begin(), mm3);
  two.graph.nodes[2].inputs = {"y", "y3"};
  auto t2 = ResidualTypes(two);
  t2["y3"] = t2["y"];
  EXPECT_EQ(FuseResidual(two, t2), 1u);
  ASSERT_EQ(two.graph.nodes.size(), 2u);
  EXPECT_EQ(two.graph.nodes[1].name, "fc3");
  EXPECT_EQ(two.graph.nodes[1].inputs, (std::vector<std::string>{"x", "w", "b", "y"}));
}

// x [2,5,4] -> MatMulBias(W [4,6], b) -> y -> Gelu -> g
Model Mlp(const Node& gelu) {
  Model m = Linear();
  m.opset_imports = {{"", 20}, {kVigilDomain, kVigilOpsetVersion}};
  m.graph.outputs = {TensorValue("g", kF16, {2, 5, 6})};
  Node mm = MakeNode(kMatMulBiasOp, {"x", "w", "b"}, {"y"}, "fc1");
  mm.domain = kVigilDomain;
  m.graph.nodes = {mm, gelu};
  return m;
}

Node VigilGelu() {
  Node n = MakeNode(kGeluOp, {"y"}, {"g"}, "gelu");
  n.domain = kVigilDomain;
  return n;
}

Node OnnxGelu(const char* approximate) {
  Node n = MakeNode("Gelu", {"y"}, {"g"}, "gelu");
  if (approximate) n.attributes.push_back(StringAttribute("approximate", approximate));
  return n;
}

size_t FuseGeluEpilogue(Model& m, const ResidualAcceptor& accept = {}) {
  auto r = FuseMatMulBiasGelu(m, accept);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : 0;
}

std::string ActivationOf(const Node& n) {
  const Attribute* a = n.FindAttribute(kMatMulBiasActivation);
  return a ? a->s : "";
}

TEST(FuseMatMulBiasGelu, FusesEachGeluForm) {
  const std::pair<Node, const char*> cases[] = {{VigilGelu(), "gelu"},
                                                {OnnxGelu(nullptr), "gelu"},
                                                {OnnxGelu("none"), "gelu"},
                                                {OnnxGelu("tanh"), "gelu_tanh"}};
  for (const auto& [gelu, want] : cases) {
    Model m = Mlp(gelu);
    EXPECT_EQ(FuseGeluEpilogue(m), 1u) << want;
    ASSERT_EQ(m.graph.nodes.size(), 1u);
    const Node& n = m.graph.nodes[0];
    EXPECT_EQ(n.op_type, kMatMulBiasOp);
    EXPECT_EQ(n.domain, kVigilDomain);
    EXPECT_EQ(n.inputs, (std::vector<std::string>{"x", "w", "b"}));
    EXPECT_EQ(n.outputs, (std::vector<std::string>{"g"}));
    EXPECT_EQ(ActivationOf(n), want);
    auto act = MatMulBiasActivationOf(n);
    ASSERT_TRUE(act.ok());
    EXPECT_EQ(*act, std::string_view(want) == "gelu" ? MatMulBiasAct::kGelu : MatMulBiasAct::kGeluTanh);
  }
}

TEST(FuseMatMulBiasGelu, KeepsAProductWithAnotherConsumerOrThatIsAnOutput) {
  Model two = Mlp(VigilGelu());
  two.graph.nodes.push_back(MakeNode("Relu", {"y"}, {"r"}, "relu"));
  two.graph.outputs.push_back(TensorValue("r", kF16, {2, 5, 6}));
  EXPECT_EQ(FuseGeluEpilogue(two), 0u);
  EXPECT_EQ(two.graph.nodes.size(), 3u);
  Model out = Mlp(VigilGelu());
  out.graph.outputs.push_back(TensorValue("y", kF16, {2, 5, 6}));
  EXPECT_EQ(FuseGeluEpilogue(out), 0u);
}

TEST(FuseMatMulBiasGelu, KeepsOtherNodes) {
  Model residual = Mlp(VigilGelu());  // a product with R: GELU(x W + b + r) is not its epilogue
  residual.graph.inputs.push_back(TensorValue("r", kF16, {2, 5, 6}));
  residual.graph.nodes[0].inputs.push_back("r");
  EXPECT_EQ(FuseGeluEpilogue(residual), 0u);
  Model unknown = Mlp(OnnxGelu("fast"));
  EXPECT_EQ(FuseGeluEpilogue(unknown), 0u);
  Model relu = Mlp(MakeNode("Relu", {"y"}, {"g"}, "relu"));
  EXPECT_EQ(FuseGeluEpilogue(relu), 0u);
  Node custom = VigilGelu();
  custom.domain = "com.example";
  Model other = Mlp(custom);
  EXPECT_EQ(FuseGeluEpilogue(other), 0u);
  Model twice = Mlp(VigilGelu());  // already carries an activation
  twice.graph.nodes[0].attributes.push_back(StringAttribute(kMatMulBiasActivation, "gelu"));
  EXPECT_EQ(FuseGeluEpilogue(twice), 0u);
  EXPECT_EQ(twice.graph.nodes.size(), 2u);
}

TEST(FuseMatMulBiasGelu, AsksTheAcceptor) {
  Model m = Mlp(VigilGelu());
  std::vector<Node> asked;
  EXPECT_EQ(FuseGeluEpilogue(m, [&](const Node& n) {
              asked.push_back(n);
              return false;
            }),
            0u);
  ASSERT_EQ(asked.size(), 1u);
  EXPECT_EQ(ActivationOf(asked[0]), "gelu");
  EXPECT_EQ(asked[0].outputs, (std::vector<std::string>{"g"}));
  EXPECT_EQ(m.graph.nodes.size(), 2u);
}

TEST(FuseMatMulBiasGelu, ResidualPassLeavesAnActivatedProduct) {
  // GELU(x W + b) + r: the residual is added after the GELU, so it is no
  // epilogue C of the product.
  Model m = Residual();
  m.graph.nodes[0].attributes.push_back(StringAttribute(kMatMulBiasActivation, "gelu"));
  EXPECT_EQ(FuseResidual(m), 0u);
  EXPECT_EQ(m.graph.nodes.size(), 2u);
}

TEST(FuseMatMulBiasGelu, NamesABadActivation) {
  Node n = MakeNode(kMatMulBiasOp, {"x", "w", "b"}, {"y"}, "fc1");
  n.attributes.push_back(StringAttribute(kMatMulBiasActivation, "relu"));
  auto act = MatMulBiasActivationOf(n);
  ASSERT_FALSE(act.ok());
  EXPECT_NE(act.status().ToString().find("fc1"), std::string::npos) << act.status().ToString();
  EXPECT_NE(act.status().ToString().find("\"relu\""), std::string::npos) << act.status().ToString();
  n.attributes[0] = IntAttribute(kMatMulBiasActivation, 1);
  EXPECT_FALSE(MatMulBiasActivationOf(n).ok());
}

}  // namespace
}  // namespace vigil::ir
