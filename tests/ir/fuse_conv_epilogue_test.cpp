// The NCHW convolution epilogue fusion (ir/fuse_conv_epilogue.h) on small
// graphs: what fuses into an ai.vigil.FusedConv, where the fused node goes,
// and each condition that keeps a convolution and its Add or activation
// apart.
#include "ir/fuse_conv_epilogue.h"

#include <gtest/gtest.h>

#include "graph_builder.h"
#include "ir/layout_nhwc.h"  // kVigilDomain, kConvNhwcRelu, kConvNhwcRelu6

namespace vigil::ir {
namespace {

using namespace vigil::ir::testing;

constexpr DataType kF32 = DataType::kFloat32;
const std::vector<int64_t> kY = {2, 13, 7, 5};

// x [2,3,7,5] -> Conv(W [13,3,3,3], B [13], pads 1) -> c -> Add(c, r) -> s
// -> Relu -> y, with r computed after the Conv (from x, by an Identity).
Model Residual() {
  Model m;
  m.ir_version = 8;
  m.opset_imports = {{"", 17}};
  m.graph.name = "residual";
  m.graph.inputs = {TensorValue("x", kF32, {2, 3, 7, 5}), TensorValue("r0", kF32, kY)};
  m.graph.outputs = {TensorValue("y", kF32, kY)};
  m.graph.initializers = {Initializer("w", kF32, {13, 3, 3, 3}), Initializer("b", kF32, {13})};
  Node conv = MakeNode("Conv", {"x", "w", "b"}, {"c"}, "conv");
  conv.attributes.push_back(IntsAttr("pads", {1, 1, 1, 1}));
  m.graph.nodes = {conv, MakeNode("Identity", {"r0"}, {"r"}, "residual"), MakeNode("Add", {"c", "r"}, {"s"}, "add"),
                   MakeNode("Relu", {"s"}, {"y"}, "relu")};
  return m;
}

std::unordered_map<std::string, TypeInfo> Types(const Model& m, const std::vector<int64_t>& r_dims = kY) {
  std::unordered_map<std::string, TypeInfo> types;
  for (const ValueInfo& v : m.graph.inputs) types[v.name] = v.type;
  for (const char* name : {"c", "s", "y"}) types[name] = TensorValue(name, kF32, kY).type;
  types["r"] = TensorValue("r", kF32, r_dims).type;
  return types;
}

size_t Fuse(Model& m, const std::unordered_map<std::string, TypeInfo>& types,
            const FusedConvAcceptor& accept = nullptr) {
  auto r = FuseConvEpilogue(m, types, accept);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : 0;
}

const Attribute* Activation(const Node& n) { return n.FindAttribute("activation"); }

TEST(FuseConvEpilogue, FusesConvResidualAndReluWhereTheReluWas) {
  Model m = Residual();
  EXPECT_EQ(Fuse(m, Types(m)), 1u);
  ASSERT_EQ(m.graph.nodes.size(), 2u);
  // The residual's producer stays before the fused node.
  EXPECT_EQ(m.graph.nodes[0].name, "residual");
  const Node& f = m.graph.nodes[1];
  EXPECT_EQ(f.op_type, kFusedConvOp);
  EXPECT_EQ(f.domain, kVigilDomain);
  EXPECT_EQ(f.name, "conv");
  EXPECT_EQ(f.inputs, (std::vector<std::string>{"x", "w", "b", "r"}));
  EXPECT_EQ(f.outputs, (std::vector<std::string>{"y"}));
  ASSERT_NE(Activation(f), nullptr);
  EXPECT_EQ(Activation(f)->s, kConvNhwcRelu);
  ASSERT_NE(f.FindAttribute("pads"), nullptr);  // Conv's attributes carried
  EXPECT_EQ(m.OpsetVersion(kVigilDomain), kVigilOpsetVersion);
}

TEST(FuseConvEpilogue, ResidualFirstOperandAndNoBias) {
  Model m = Residual();
  m.graph.nodes[0].inputs.resize(2);  // no B
  m.graph.nodes[2].inputs = {"r", "c"};
  EXPECT_EQ(Fuse(m, Types(m)), 1u);
  ASSERT_EQ(m.graph.nodes.size(), 2u);
  EXPECT_EQ(m.graph.nodes[1].inputs, (std::vector<std::string>{"x", "w", "", "r"}));
}

TEST(FuseConvEpilogue, ReluAloneAndAddAlone) {
  Model relu = Residual();
  relu.graph.nodes = {relu.graph.nodes[0], MakeNode("Relu", {"c"}, {"y"}, "relu")};
  EXPECT_EQ(Fuse(relu, Types(relu)), 1u);
  ASSERT_EQ(relu.graph.nodes.size(), 1u);
  EXPECT_EQ(relu.graph.nodes[0].inputs, (std::vector<std::string>{"x", "w", "b"}));
  EXPECT_EQ(Activation(relu.graph.nodes[0])->s, kConvNhwcRelu);

  Model add = Residual();
  add.graph.nodes.pop_back();
  add.graph.outputs = {TensorValue("s", kF32, kY)};
  EXPECT_EQ(Fuse(add, Types(add)), 1u);
  ASSERT_EQ(add.graph.nodes.size(), 2u);
  EXPECT_EQ(add.graph.nodes[1].outputs, (std::vector<std::string>{"s"}));
  EXPECT_EQ(Activation(add.graph.nodes[1]), nullptr);
}

TEST(FuseConvEpilogue, ClipZeroSixIsRelu6AndOtherClipsStay) {
  for (float hi : {6.0f, 5.0f}) {
    Model m = Residual();
    m.graph.initializers.push_back(OwnedInitializer<float>("lo", kF32, {}, {0.0f}));
    m.graph.initializers.push_back(OwnedInitializer<float>("hi", kF32, {}, {hi}));
    m.graph.nodes[3] = MakeNode("Clip", {"s", "lo", "hi"}, {"y"}, "clip");
    EXPECT_EQ(Fuse(m, Types(m)), 1u) << hi;  // the Add fuses either way
    const Node& f = m.graph.nodes[1];
    if (hi == 6.0f) {
      ASSERT_EQ(m.graph.nodes.size(), 2u);
      EXPECT_EQ(Activation(f)->s, kConvNhwcRelu6);
    } else {
      ASSERT_EQ(m.graph.nodes.size(), 3u);
      EXPECT_EQ(f.outputs, (std::vector<std::string>{"s"}));
      EXPECT_EQ(Activation(f), nullptr);
    }
  }
}

TEST(FuseConvEpilogue, KeepsABroadcastResidual) {
  Model m = Residual();
  m.graph.inputs[1] = TensorValue("r0", kF32, {1, 13, 1, 1});
  // The Add stays; nothing else reads c, but its only reader is no fusable
  // Add and no activation, so the Conv stays too.
  EXPECT_EQ(Fuse(m, Types(m, {1, 13, 1, 1})), 0u);
  EXPECT_EQ(m.graph.nodes.size(), 4u);
  EXPECT_EQ(m.OpsetVersion(kVigilDomain), -1);
}

TEST(FuseConvEpilogue, KeepsAResultReadTwiceOrThatIsAGraphOutput) {
  Model twice = Residual();
  twice.graph.nodes.push_back(MakeNode("Neg", {"c"}, {"n"}, "neg"));
  twice.graph.outputs.push_back(TensorValue("n", kF32, kY));
  EXPECT_EQ(Fuse(twice, Types(twice)), 0u);

  Model output = Residual();
  output.graph.outputs.push_back(TensorValue("c", kF32, kY));
  EXPECT_EQ(Fuse(output, Types(output)), 0u);

  // The Add's result read twice: the Add fuses, the Relu stays.
  Model add_twice = Residual();
  add_twice.graph.outputs.push_back(TensorValue("s", kF32, kY));
  EXPECT_EQ(Fuse(add_twice, Types(add_twice)), 1u);
  ASSERT_EQ(add_twice.graph.nodes.size(), 3u);
  EXPECT_EQ(add_twice.graph.nodes[1].op_type, kFusedConvOp);
  EXPECT_EQ(add_twice.graph.nodes[1].outputs, (std::vector<std::string>{"s"}));
  EXPECT_EQ(add_twice.graph.nodes[2].op_type, "Relu");
}

// A dynamic batch: the result and the residual share the named dim "N".
TEST(FuseConvEpilogue, FusesAResidualWithTheSameSymbolicBatch) {
  Model m = Residual();
  auto types = Types(m);
  for (const char* name : {"c", "r"}) {
    types[name].shape.dims[0] = Dim::Symbolic("N");
  }
  EXPECT_EQ(Fuse(m, types), 1u);
  ASSERT_EQ(m.graph.nodes.size(), 2u);
  EXPECT_EQ(m.graph.nodes[1].inputs, (std::vector<std::string>{"x", "w", "b", "r"}));
  // Two different symbols are not proven equal: the Add stays.
  Model other = Residual();
  types["r"].shape.dims[0] = Dim::Symbolic("M");
  EXPECT_EQ(Fuse(other, types), 0u);
}

TEST(FuseConvEpilogue, UnknownShapesAndARefusingDeviceKeepTheResidual) {
  Model unknown = Residual();
  auto types = Types(unknown);
  types.erase("r");
  EXPECT_EQ(Fuse(unknown, types), 0u);  // the Add stays, and the Relu does not follow the Conv directly

  Model refused = Residual();
  EXPECT_EQ(Fuse(refused, Types(refused), [](const Node&) { return false; }), 0u);
  EXPECT_EQ(refused.graph.nodes.size(), 4u);
}

// Add(c1, c2) of two convolutions: the first takes the Add and the Relu,
// with the second's result as Z; the second stays a Conv.
TEST(FuseConvEpilogue, TwoConvolutionsIntoOneAddFuseOnce) {
  Model m = Residual();
  Node second = MakeNode("Conv", {"x", "w"}, {"r"}, "second");
  second.attributes.push_back(IntsAttr("pads", {1, 1, 1, 1}));
  m.graph.nodes[1] = second;
  EXPECT_EQ(Fuse(m, Types(m)), 1u);
  ASSERT_EQ(m.graph.nodes.size(), 2u);
  EXPECT_EQ(m.graph.nodes[0].name, "second");
  EXPECT_EQ(m.graph.nodes[0].op_type, "Conv");
  EXPECT_EQ(m.graph.nodes[1].op_type, kFusedConvOp);
  EXPECT_EQ(m.graph.nodes[1].inputs, (std::vector<std::string>{"x", "w", "b", "r"}));
  EXPECT_EQ(m.graph.nodes[1].outputs, (std::vector<std::string>{"y"}));
}

TEST(FuseConvEpilogue, LeavesOtherConvolutions) {
  Model m = Residual();
  m.graph.nodes[0].domain = kVigilDomain;
  m.graph.nodes[0].op_type = kConvNhwcOp;
  EXPECT_EQ(Fuse(m, Types(m)), 0u);
  Model transpose = Residual();
  transpose.graph.nodes[0].op_type = "ConvTranspose";
  EXPECT_EQ(Fuse(transpose, Types(transpose)), 0u);
}

}  // namespace
}  // namespace vigil::ir
