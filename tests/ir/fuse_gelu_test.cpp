// The GELU fusion pass on small graphs: the erf chain torch.onnx writes
// fuses, and each broken condition keeps it.
#include "ir/fuse_gelu.h"

#include <cstring>
#include <memory>

#include <gtest/gtest.h>

#include "graph_builder.h"
#include "ir/layout_nhwc.h"  // kVigilDomain

namespace vigil::ir {
namespace {

using namespace vigil::ir::testing;

constexpr DataType kF32 = DataType::kFloat32;

Tensor Scalar(std::string name, float v) {
  Tensor t = Initializer(std::move(name), kF32, {});
  auto data = std::make_shared<float>(v);
  t.storage = Tensor::Storage::kTypedDecoded;
  t.bytes = {reinterpret_cast<const uint8_t*>(data.get()), 4};
  t.keep_alive = data;
  return t;
}

// x -> Div(x, 1.4142135) -> Erf -> Add(., 1) -> Mul(x, .) -> Mul(., 0.5) -> y
Model GeluChain(float sqrt2 = 1.4142135f, float one = 1.0f, float half = 0.5f) {
  Model m;
  m.ir_version = 8;
  m.opset_imports = {{"", 17}};
  m.graph.name = "gelu";
  m.graph.inputs = {TensorValue("x", kF32, {2, 3})};
  m.graph.outputs = {TensorValue("y", kF32, {2, 3})};
  m.graph.initializers = {Scalar("c", sqrt2), Scalar("one", one), Scalar("half", half)};
  m.graph.nodes = {MakeNode("Div", {"x", "c"}, {"d"}, "div"), MakeNode("Erf", {"d"}, {"e"}, "erf"),
                   MakeNode("Add", {"e", "one"}, {"f"}, "add"), MakeNode("Mul", {"x", "f"}, {"g"}, "mul"),
                   MakeNode("Mul", {"g", "half"}, {"y"}, "mul_half")};
  return m;
}

size_t Fuse(Model& m) {
  auto r = FuseGelu(m);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : 0;
}

TEST(FuseGelu, FusesTheErfChain) {
  Model m = GeluChain();
  EXPECT_EQ(Fuse(m), 1u);
  ASSERT_EQ(m.graph.nodes.size(), 1u);
  const Node& n = m.graph.nodes[0];
  EXPECT_EQ(n.op_type, kGeluOp);
  EXPECT_EQ(n.domain, kVigilDomain);
  EXPECT_EQ(n.inputs, (std::vector<std::string>{"x"}));
  EXPECT_EQ(n.outputs, (std::vector<std::string>{"y"}));
  EXPECT_EQ(m.OpsetVersion(kVigilDomain), kVigilOpsetVersion);
}

TEST(FuseGelu, FusesCommutedOperandsAndAHalfPrecisionSqrt2) {
  Model m = GeluChain(1.41406f);  // sqrt(2) rounded to float16
  m.graph.nodes[2].inputs = {"one", "e"};
  m.graph.nodes[3].inputs = {"f", "x"};
  m.graph.nodes[4].inputs = {"half", "g"};
  EXPECT_EQ(Fuse(m), 1u);
  EXPECT_EQ(m.graph.nodes.size(), 1u);
}

TEST(FuseGelu, KeepsWrongConstants) {
  Model a = GeluChain(1.5f);
  EXPECT_EQ(Fuse(a), 0u);
  Model b = GeluChain(1.4142135f, 2.0f);
  EXPECT_EQ(Fuse(b), 0u);
  Model c = GeluChain(1.4142135f, 1.0f, 0.25f);
  EXPECT_EQ(Fuse(c), 0u);
  EXPECT_EQ(c.graph.nodes.size(), 5u);
  EXPECT_EQ(c.OpsetVersion(kVigilDomain), -1);
}

TEST(FuseGelu, KeepsNonConstantOperands) {
  Model m = GeluChain();
  m.graph.inputs.push_back(TensorValue("half", kF32, {}));  // overridable
  EXPECT_EQ(Fuse(m), 0u);
}

TEST(FuseGelu, KeepsAChainWhoseValuesAreUsedElsewhere) {
  for (const char* value : {"d", "e", "f", "g"}) {
    Model m = GeluChain();
    m.graph.nodes.push_back(MakeNode("Neg", {value}, {"other"}, "neg"));
    m.graph.outputs.push_back(TensorValue("other", kF32, {2, 3}));
    EXPECT_EQ(Fuse(m), 0u) << value;
    Model o = GeluChain();
    o.graph.outputs.push_back(TensorValue(value, kF32, {2, 3}));
    EXPECT_EQ(Fuse(o), 0u) << value;
  }
}

TEST(FuseGelu, KeepsAProductWithAnotherValue) {
  Model m = GeluChain();
  m.graph.inputs.push_back(TensorValue("z", kF32, {2, 3}));
  m.graph.nodes[3].inputs = {"z", "f"};  // z * (1 + erf(x / sqrt 2))
  EXPECT_EQ(Fuse(m), 0u);
}

}  // namespace
}  // namespace vigil::ir
