// vigil's fused ops on the CPU against the ONNX ops they stand for, and
// their shape inference.
#include <cmath>
#include <random>

#include <gtest/gtest.h>

#include "vigil/float16.h"
#include "ir/fuse_attention.h"
#include "ir/fuse_gelu.h"
#include "ir/fuse_matmul_bias.h"
#include "ir/layout_nhwc.h"  // kVigilDomain
#include "ir/graph_builder.h"  // RandomFloats
#include "kernel_test_util.h"

namespace vigil::cpu {
namespace {

using namespace vigil::cpu::testing;
using ir::testing::RandomFloats;

// Random float16 values in [-1, 1) of `shape`.
runtime::Tensor Half(const std::vector<int64_t>& shape, uint32_t seed) {
  uint64_t count = 1;
  for (int64_t d : shape) count *= static_cast<uint64_t>(d);
  std::vector<uint16_t> h;
  for (float v : RandomFloats(count, seed)) h.push_back(FloatToFloat16(v));
  return MakeTensor(ir::DataType::kFloat16, shape, h);
}

ir::Node MatMulBiasNode() {
  ir::Node n = MakeNode(ir::kMatMulBiasOp, {"a", "w", "b"}, {"y"});
  n.domain = ir::kVigilDomain;
  return n;
}

// MatMulBias(A, W, B) against Add(MatMul(A, W), B), bitwise (the same kernels).
void ExpectMatchesComposition(const runtime::Tensor& a, const runtime::Tensor& w, const runtime::Tensor& b) {
  auto fused = RunKernel(MatMulBiasNode(), 1, {&a, &w, &b});
  ASSERT_TRUE(fused.ok()) << fused.status().ToString();
  auto product = RunKernel(MakeNode("MatMul", {"a", "w"}, {"p"}), 17, {&a, &w});
  ASSERT_TRUE(product.ok()) << product.status().ToString();
  auto sum = RunKernel(MakeNode("Add", {"p", "b"}, {"y"}), 17, {&(*product)[0], &b});
  ASSERT_TRUE(sum.ok()) << sum.status().ToString();
  EXPECT_EQ((*fused)[0].shape(), (*sum)[0].shape());
  EXPECT_EQ((*fused)[0].dtype(), (*sum)[0].dtype());
  EXPECT_EQ(Values<uint8_t>((*fused)[0]), Values<uint8_t>((*sum)[0]));
}

TEST(MatMulBiasCpu, MatchesMatMulThenAddFloat32) {
  for (std::vector<int64_t> a_shape : {std::vector<int64_t>{13, 7}, {3, 13, 7}, {2, 3, 5, 7}}) {
    uint64_t count = 1;
    for (int64_t d : a_shape) count *= static_cast<uint64_t>(d);
    runtime::Tensor a = F32(a_shape, RandomFloats(count, 1));
    runtime::Tensor w = F32({7, 11}, RandomFloats(77, 2));
    ExpectMatchesComposition(a, w, F32({11}, RandomFloats(11, 3)));
    ExpectMatchesComposition(a, w, F32({1, 11}, RandomFloats(11, 4)));
  }
}

TEST(MatMulBiasCpu, MatchesMatMulThenAddFloat16) {
  ExpectMatchesComposition(Half({2, 13, 9}, 5), Half({9, 127}, 6), Half({127}, 7));
}

TEST(MatMulBiasCpu, RejectsABiasThatWidensTheProduct) {
  runtime::Tensor a = F32({2, 3}, RandomFloats(6, 1));
  runtime::Tensor w = F32({3, 4}, RandomFloats(12, 2));
  runtime::Tensor b = F32({5, 4}, RandomFloats(20, 3));  // does not broadcast with [2, 4]
  auto r = RunKernel(MatMulBiasNode(), 1, {&a, &w, &b});
  EXPECT_FALSE(r.ok());
  runtime::Tensor b3 = F32({2, 1, 4}, RandomFloats(8, 3));  // broadcasts, but to [2, 2, 4]
  auto r3 = RunKernel(MatMulBiasNode(), 1, {&a, &w, &b3});
  EXPECT_FALSE(r3.ok());
}

TEST(MatMulBiasCpu, InfersMatMulsShapeAndChecksTheBias) {
  ir::TypeInfo a = ops::TensorType(ir::DataType::kFloat16, std::vector<int64_t>{4, 197, 768});
  ir::TypeInfo w = ops::TensorType(ir::DataType::kFloat16, std::vector<int64_t>{768, 3072});
  ir::TypeInfo b = ops::TensorType(ir::DataType::kFloat16, std::vector<int64_t>{3072});
  auto out = InferNode(MatMulBiasNode(), 1, {&a, &w, &b});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ((*out)[0].elem_type, ir::DataType::kFloat16);
  ASSERT_EQ((*out)[0].shape.dims.size(), 3u);
  EXPECT_EQ(*(*out)[0].shape.dims[2].value, 3072);
  ir::TypeInfo bad = ops::TensorType(ir::DataType::kFloat16, std::vector<int64_t>{768});
  EXPECT_FALSE(InferNode(MatMulBiasNode(), 1, {&a, &w, &bad}).ok());
  ir::TypeInfo f32 = ops::TensorType(ir::DataType::kFloat32, std::vector<int64_t>{3072});
  EXPECT_FALSE(InferNode(MatMulBiasNode(), 1, {&a, &w, &f32}).ok());
  ir::TypeInfo vec = ops::TensorType(ir::DataType::kFloat16, std::vector<int64_t>{768});
  EXPECT_FALSE(InferNode(MatMulBiasNode(), 1, {&vec, &w, &b}).ok());
}

ir::Node MatMulBiasResidualNode() {
  ir::Node n = MakeNode(ir::kMatMulBiasOp, {"a", "w", "b", "r"}, {"y"});
  n.domain = ir::kVigilDomain;
  return n;
}

// MatMulBias(A, W, B, R) against Add(Add(MatMul(A, W), B), R), bitwise.
void ExpectResidualMatchesComposition(const runtime::Tensor& a, const runtime::Tensor& w, const runtime::Tensor& b,
                                      const runtime::Tensor& r) {
  auto fused = RunKernel(MatMulBiasResidualNode(), 1, {&a, &w, &b, &r});
  ASSERT_TRUE(fused.ok()) << fused.status().ToString();
  auto linear = RunKernel(MatMulBiasNode(), 1, {&a, &w, &b});
  ASSERT_TRUE(linear.ok()) << linear.status().ToString();
  auto sum = RunKernel(MakeNode("Add", {"y", "r"}, {"z"}), 17, {&(*linear)[0], &r});
  ASSERT_TRUE(sum.ok()) << sum.status().ToString();
  EXPECT_EQ((*fused)[0].shape(), (*sum)[0].shape());
  EXPECT_EQ((*fused)[0].dtype(), (*sum)[0].dtype());
  EXPECT_EQ(Values<uint8_t>((*fused)[0]), Values<uint8_t>((*sum)[0]));
  EXPECT_NE(Values<uint8_t>((*fused)[0]), Values<uint8_t>((*linear)[0]));  // R was added
}

TEST(MatMulBiasCpu, AddsTheResidualFloat32) {
  runtime::Tensor a = F32({3, 13, 7}, RandomFloats(3 * 13 * 7, 11));
  runtime::Tensor w = F32({7, 11}, RandomFloats(77, 12));
  ExpectResidualMatchesComposition(a, w, F32({11}, RandomFloats(11, 13)), F32({3, 13, 11}, RandomFloats(3 * 13 * 11, 14)));
}

TEST(MatMulBiasCpu, AddsTheResidualFloat16) {
  ExpectResidualMatchesComposition(Half({2, 13, 9}, 15), Half({9, 33}, 16), Half({33}, 17), Half({2, 13, 33}, 18));
}

TEST(MatMulBiasCpu, RejectsAResidualThatIsNotYsShapeAndDtype) {
  runtime::Tensor a = F32({2, 3}, RandomFloats(6, 1));
  runtime::Tensor w = F32({3, 4}, RandomFloats(12, 2));
  runtime::Tensor b = F32({4}, RandomFloats(4, 3));
  // Each would broadcast in an Add; R is Y's exact shape or nothing.
  for (std::vector<int64_t> shape : {std::vector<int64_t>{4}, {1, 4}, {2, 1}, {1, 2, 4}}) {
    uint64_t count = 1;
    for (int64_t d : shape) count *= static_cast<uint64_t>(d);
    runtime::Tensor r = F32(shape, RandomFloats(count, 4));
    auto got = RunKernel(MatMulBiasResidualNode(), 1, {&a, &w, &b, &r});
    ASSERT_FALSE(got.ok()) << shape.size();
    EXPECT_NE(got.status().summary().find("input 3 (R)"), std::string::npos) << got.status().summary();
  }
  std::vector<uint16_t> h(8, FloatToFloat16(1.0f));
  runtime::Tensor r16 = MakeTensor(ir::DataType::kFloat16, {2, 4}, h);
  EXPECT_FALSE(RunKernel(MatMulBiasResidualNode(), 1, {&a, &w, &b, &r16}).ok());
}

TEST(MatMulBiasCpu, InfersWithAResidualAndChecksIt) {
  using ir::DataType;
  ir::TypeInfo a = ops::TensorType(DataType::kFloat16, std::vector<int64_t>{4, 197, 768});
  ir::TypeInfo w = ops::TensorType(DataType::kFloat16, std::vector<int64_t>{768, 768});
  ir::TypeInfo b = ops::TensorType(DataType::kFloat16, std::vector<int64_t>{768});
  ir::TypeInfo r = ops::TensorType(DataType::kFloat16, std::vector<int64_t>{4, 197, 768});
  auto out = InferNode(MatMulBiasResidualNode(), 1, {&a, &w, &b, &r});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(ir::TypeToString((*out)[0]), ir::TypeToString(r));
  ir::TypeInfo row = ops::TensorType(DataType::kFloat16, std::vector<int64_t>{1, 197, 768});
  auto wide = InferNode(MatMulBiasResidualNode(), 1, {&a, &w, &b, &row});
  ASSERT_FALSE(wide.ok());
  const std::string& why = wide.status().summary();
  EXPECT_NE(why.find("MatMulBias"), std::string::npos) << why;
  EXPECT_NE(why.find("input 3 (R) has shape [1,197,768], expected [4,197,768]"), std::string::npos) << why;
  ir::TypeInfo f32 = ops::TensorType(DataType::kFloat32, std::vector<int64_t>{4, 197, 768});
  auto dtype = InferNode(MatMulBiasResidualNode(), 1, {&a, &w, &b, &f32});
  ASSERT_FALSE(dtype.ok());
  EXPECT_NE(dtype.status().summary().find("input 3 (R) has dtype float32, expected float16"), std::string::npos)
      << dtype.status().summary();
  ir::TypeInfo rank2 = ops::TensorType(DataType::kFloat16, std::vector<int64_t>{788, 768});
  EXPECT_FALSE(InferNode(MatMulBiasResidualNode(), 1, {&a, &w, &b, &rank2}).ok());
}

ir::Node MatMulBiasGeluNode(const char* activation) {
  ir::Node n = MatMulBiasNode();
  n.name = "fc1";
  n.attributes.push_back(ir::StringAttribute(ir::kMatMulBiasActivation, activation));
  return n;
}

// MatMulBias(A, W, B) with a GELU activation against Gelu-20(Add(MatMul(A,
// W), B)) with the same approximate, bitwise (the same kernels); and not the
// plain product's bits.
void ExpectGeluMatchesComposition(const runtime::Tensor& a, const runtime::Tensor& w, const runtime::Tensor& b) {
  for (const char* activation : {"gelu", "gelu_tanh"}) {
    auto fused = RunKernel(MatMulBiasGeluNode(activation), 1, {&a, &w, &b});
    ASSERT_TRUE(fused.ok()) << fused.status().ToString();
    auto linear = RunKernel(MatMulBiasNode(), 1, {&a, &w, &b});
    ASSERT_TRUE(linear.ok()) << linear.status().ToString();
    ir::Node gelu = MakeNode("Gelu", {"y"}, {"g"});
    if (std::string_view(activation) == "gelu_tanh") {
      gelu.attributes.push_back(ir::StringAttribute("approximate", "tanh"));
    }
    auto want = RunKernel(gelu, 20, {&(*linear)[0]});
    ASSERT_TRUE(want.ok()) << want.status().ToString();
    EXPECT_EQ((*fused)[0].shape(), (*want)[0].shape());
    EXPECT_EQ((*fused)[0].dtype(), (*want)[0].dtype());
    EXPECT_EQ(Values<uint8_t>((*fused)[0]), Values<uint8_t>((*want)[0])) << activation;
    EXPECT_NE(Values<uint8_t>((*fused)[0]), Values<uint8_t>((*linear)[0])) << activation;
  }
}

TEST(MatMulBiasCpu, AppliesTheGeluActivationFloat32) {
  runtime::Tensor a = F32({3, 13, 7}, RandomFloats(3 * 13 * 7, 21));
  runtime::Tensor w = F32({7, 127}, RandomFloats(7 * 127, 22));
  ExpectGeluMatchesComposition(a, w, F32({127}, RandomFloats(127, 23)));
}

TEST(MatMulBiasCpu, AppliesTheGeluActivationFloat16) {
  ExpectGeluMatchesComposition(Half({2, 13, 9}, 24), Half({9, 33}, 25), Half({33}, 26));
}

TEST(MatMulBiasCpu, RejectsAnActivationWithAResidualOrAnUnknownOne) {
  runtime::Tensor a = F32({2, 3}, RandomFloats(6, 1));
  runtime::Tensor w = F32({3, 4}, RandomFloats(12, 2));
  runtime::Tensor b = F32({4}, RandomFloats(4, 3));
  runtime::Tensor r = F32({2, 4}, RandomFloats(8, 4));
  ir::Node both = MatMulBiasGeluNode("gelu");
  both.inputs.push_back("r");
  auto got = RunKernel(both, 1, {&a, &w, &b, &r});
  ASSERT_FALSE(got.ok());
  EXPECT_NE(got.status().summary().find("activation and input 3 (R)"), std::string::npos) << got.status().summary();
  auto unknown = RunKernel(MatMulBiasGeluNode("swish"), 1, {&a, &w, &b});
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().ToString().find("\"swish\""), std::string::npos) << unknown.status().ToString();
  // Inference refuses the same nodes, and a GELU on integers.
  ir::TypeInfo af = ops::TensorType(ir::DataType::kFloat32, std::vector<int64_t>{2, 3});
  ir::TypeInfo wf = ops::TensorType(ir::DataType::kFloat32, std::vector<int64_t>{3, 4});
  ir::TypeInfo bf = ops::TensorType(ir::DataType::kFloat32, std::vector<int64_t>{4});
  ir::TypeInfo rf = ops::TensorType(ir::DataType::kFloat32, std::vector<int64_t>{2, 4});
  EXPECT_TRUE(InferNode(MatMulBiasGeluNode("gelu"), 1, {&af, &wf, &bf}).ok());
  EXPECT_FALSE(InferNode(both, 1, {&af, &wf, &bf, &rf}).ok());
  EXPECT_FALSE(InferNode(MatMulBiasGeluNode("swish"), 1, {&af, &wf, &bf}).ok());
  ir::TypeInfo ai = ops::TensorType(ir::DataType::kInt32, std::vector<int64_t>{2, 3});
  ir::TypeInfo wi = ops::TensorType(ir::DataType::kInt32, std::vector<int64_t>{3, 4});
  ir::TypeInfo bi = ops::TensorType(ir::DataType::kInt32, std::vector<int64_t>{4});
  auto ints = InferNode(MatMulBiasGeluNode("gelu"), 1, {&ai, &wi, &bi});
  ASSERT_FALSE(ints.ok());
  EXPECT_NE(ints.status().summary().find("float dtype"), std::string::npos) << ints.status().summary();
  EXPECT_TRUE(InferNode(MatMulBiasNode(), 1, {&ai, &wi, &bi}).ok());
}

// The float32 value of the chain the pass replaces, op by op.
std::vector<float> GeluChain(const runtime::Tensor& x) {
  auto run = [](const char* op, std::vector<const runtime::Tensor*> in) {
    std::vector<std::string> names(in.size(), "i");
    auto r = RunKernel(MakeNode(op, names, {"o"}), 17, in);
    EXPECT_TRUE(r.ok()) << op << ": " << r.status().ToString();
    return r.ok() ? std::move((*r)[0]) : runtime::Tensor();
  };
  runtime::Tensor sqrt2 = F32({}, {1.4142135f}), one = F32({}, {1.0f}), half = F32({}, {0.5f});
  runtime::Tensor d = run("Div", {&x, &sqrt2});
  runtime::Tensor e = run("Erf", {&d});
  runtime::Tensor f = run("Add", {&e, &one});
  runtime::Tensor g = run("Mul", {&x, &f});
  return Values<float>(run("Mul", {&g, &half}));
}

TEST(GeluCpu, MatchesTheErfChain) {
  std::vector<float> v = RandomFloats(257, 9);
  for (float& x : v) x *= 6;
  v.push_back(0.0f);
  v.push_back(-40.0f);
  v.push_back(40.0f);
  runtime::Tensor x = F32({2, 130}, v);
  ir::Node node = MakeNode(ir::kGeluOp, {"x"}, {"y"});
  node.domain = ir::kVigilDomain;
  auto got = RunKernel(node, 1, {&x});
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ((*got)[0].shape(), x.shape());
  std::vector<float> g = Values<float>((*got)[0]), want = GeluChain(x);
  ASSERT_EQ(g.size(), want.size());
  for (size_t i = 0; i < g.size(); ++i) EXPECT_NEAR(g[i], want[i], 1e-6f * (1 + std::abs(want[i]))) << v[i];
  ir::TypeInfo t = ops::TensorType(ir::DataType::kFloat16, std::vector<int64_t>{4, 197, 3072});
  auto types = InferNode(node, 1, {&t});
  ASSERT_TRUE(types.ok()) << types.status().ToString();
  EXPECT_EQ((*types)[0].elem_type, ir::DataType::kFloat16);
  EXPECT_EQ((*types)[0].shape.dims.size(), 3u);
}

// ai.vigil.Attention with a mask against ONNX Attention (opset 23) on the
// same Q, K, V (3-D, [B, S, H*D]) and additive mask: ONNX's kernel gives 0
// for a row whose keys are all masked, as undefined_rows "zero" does.
TEST(AttentionCpu, MaskedMatchesOnnxAttention) {
  const int64_t b = 2, s = 13, h = 3, d = 8, e = h * d;
  const std::vector<float> q = RandomFloats(b * s * e, 1), k = RandomFloats(b * s * e, 2), v = RandomFloats(b * s * e, 3);
  std::vector<float> qkv;
  for (int64_t r = 0; r < b * s; ++r) {
    for (const std::vector<float>* part : {&q, &k, &v}) {
      qkv.insert(qkv.end(), part->begin() + r * e, part->begin() + (r + 1) * e);
    }
  }
  std::vector<float> m = RandomFloats(b * s, 4);
  for (int64_t t = 9; t < s; ++t) m[t] = -INFINITY;      // batch 0: the last 4 keys padded
  for (int64_t t = 0; t < s; ++t) m[s + t] = -INFINITY;  // batch 1: every key masked
  const runtime::Tensor x = F32({b, s, 3 * e}, qkv), mask = F32({b, 1, 1, s}, m);
  ir::Node fused = MakeNode(ir::kAttentionOp, {"qkv", "mask"}, {"y"},
                            {IntAttr("num_heads", h), FloatAttr("scale", 0.3f), StringAttr("layout", "bse"),
                             StringAttr(ir::kAttentionUndefinedRows, "zero")});
  fused.domain = ir::kVigilDomain;
  auto got = RunKernel(fused, 1, {&x, &mask});
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  const runtime::Tensor tq = F32({b, s, e}, q), tk = F32({b, s, e}, k), tv = F32({b, s, e}, v);
  ir::Node onnx = MakeNode("Attention", {"q", "k", "v", "mask"}, {"y"},
                           {IntAttr("q_num_heads", h), IntAttr("kv_num_heads", h), FloatAttr("scale", 0.3f)});
  auto want = RunKernel(onnx, 23, {&tq, &tk, &tv, &mask});
  ASSERT_TRUE(want.ok()) << want.status().ToString();
  ASSERT_EQ((*got)[0].shape(), (*want)[0].shape());
  const std::vector<float> g = Values<float>((*got)[0]), w = Values<float>((*want)[0]);
  for (size_t i = 0; i < g.size(); ++i) {
    ASSERT_FALSE(std::isnan(g[i])) << i;
    EXPECT_NEAR(g[i], w[i], 1e-6f * (1 + std::abs(w[i]))) << i;
  }
  for (size_t i = static_cast<size_t>(s * e); i < g.size(); ++i) EXPECT_EQ(g[i], 0.0f) << "batch 1 is all masked";
  // undefined_rows "nan" (the default): Softmax's NaN for those rows.
  fused.attributes.pop_back();
  auto nan = RunKernel(fused, 1, {&x, &mask});
  ASSERT_TRUE(nan.ok()) << nan.status().ToString();
  const std::vector<float> n = Values<float>((*nan)[0]);
  for (size_t i = 0; i < n.size(); ++i) {
    if (i < static_cast<size_t>(s * e)) EXPECT_EQ(n[i], g[i]) << i;
    else EXPECT_TRUE(std::isnan(n[i])) << i;
  }
}

TEST(AttentionCpu, MaskThatDoesNotBroadcastIsAnError) {
  const runtime::Tensor x = F32({2, 5, 12}, RandomFloats(120, 5));
  ir::Node node = MakeNode(ir::kAttentionOp, {"qkv", "mask"}, {"y"},
                           {IntAttr("num_heads", 2), FloatAttr("scale", 0.5f), StringAttr("layout", "bse")});
  node.domain = ir::kVigilDomain;
  for (const std::vector<int64_t>& shape : {std::vector<int64_t>{2, 1, 3, 5}, std::vector<int64_t>{3, 1, 1, 5},
                                            std::vector<int64_t>{1, 2, 1, 1, 5}}) {
    int64_t n = 1;
    for (int64_t dim : shape) n *= dim;
    const runtime::Tensor mask = F32(shape, RandomFloats(static_cast<size_t>(n), 6));
    auto r = RunKernel(node, 1, {&x, &mask});
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().ToString().find("input 1 (the mask)"), std::string::npos) << r.status().ToString();
  }
  std::vector<uint16_t> h;
  for (float f : RandomFloats(10, 7)) h.push_back(FloatToFloat16(f));
  const runtime::Tensor mask16 = MakeTensor(ir::DataType::kFloat16, {2, 1, 1, 5}, h);
  auto r = RunKernel(node, 1, {&x, &mask16});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().ToString().find("QKV's dtype"), std::string::npos) << r.status().ToString();
}

}  // namespace
}  // namespace vigil::cpu
