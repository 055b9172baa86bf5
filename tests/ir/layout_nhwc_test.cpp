// The NHWC layout pass on small graphs: which transposes are left, where the
// graph outputs stay NCHW, and which operands block sinking.
#include "ir/layout_nhwc.h"

#include <cstring>
#include <memory>
#include <unordered_set>

#include <gtest/gtest.h>

#include "vigil/float16.h"
#include "graph_builder.h"
#include "ir/validate.h"

namespace vigil::ir {
namespace {

using namespace vigil::ir::testing;

constexpr DataType kF16 = DataType::kFloat16;

// An initializer with owned bytes: element i holds value i (uint16 bits).
Tensor Counting(std::string name, std::vector<int64_t> dims) {
  Tensor t = Initializer(std::move(name), kF16, std::move(dims));
  uint64_t n = *t.ElementCount();
  auto data = std::make_shared<std::vector<uint16_t>>(n);
  for (uint64_t i = 0; i < n; ++i) (*data)[i] = static_cast<uint16_t>(i);
  t.storage = Tensor::Storage::kTypedDecoded;
  t.bytes = {reinterpret_cast<const uint8_t*>(data->data()), n * 2};
  t.keep_alive = data;
  return t;
}

Node Conv(std::string x, std::string w, std::string y, std::string name) {
  Node n = MakeNode("Conv", {std::move(x), std::move(w)}, {std::move(y)}, std::move(name));
  n.attributes.push_back(IntsAttr("pads", {1, 1, 1, 1}));
  return n;
}

Model BaseModel() {
  Model m;
  m.ir_version = 8;
  m.opset_imports = {{"", 17}};
  m.graph.name = "g";
  m.graph.inputs = {TensorValue("x", kF16, {1, 8, 5, 5})};
  return m;
}

void AddWeights(Model& m, std::initializer_list<const char*> names) {
  for (const char* n : names) m.graph.initializers.push_back(Counting(n, {8, 8, 3, 3}));
}

NhwcStats Convert(Model& m, const NhwcOptions& options = {}) {
  auto stats = ConvertConvsToNhwc(m, OpIndices(m, "Conv"), InputTypes(m), options);
  EXPECT_TRUE(stats.ok()) << stats.status().ToString();
  Status valid = ValidateModel(m);
  EXPECT_TRUE(valid.ok()) << valid.ToString();
  return stats.ok() ? *stats : NhwcStats{};
}

// x -> Conv -> Relu (r0) -> Conv -> Relu -> Conv -> Add(., r0) -> Relu -> y
Model ResNetBlock() {
  Model m = BaseModel();
  AddWeights(m, {"w0", "w1", "w2"});
  m.graph.outputs = {TensorValue("y", kF16, {1, 8, 5, 5})};
  m.graph.nodes = {Conv("x", "w0", "c0", "conv0"),     MakeNode("Relu", {"c0"}, {"r0"}, "relu0"),
                   Conv("r0", "w1", "c1", "conv1"),    MakeNode("Relu", {"c1"}, {"r1"}, "relu1"),
                   Conv("r1", "w2", "c2", "conv2"),    MakeNode("Add", {"c2", "r0"}, {"s"}, "add"),
                   MakeNode("Relu", {"s"}, {"y"}, "relu2")};
  return m;
}

TEST(LayoutNhwc, ResNetBlockKeepsOneTransposeInAndOneOut) {
  Model m = ResNetBlock();
  NhwcStats stats = Convert(m);
  EXPECT_EQ(stats.convs, 3u);
  EXPECT_EQ(CountNodes(m, "ConvNhwc"), 3u);
  EXPECT_EQ(CountTransposes(m, kToNhwc), 1u);
  EXPECT_EQ(CountTransposes(m, kToNchw), 1u);
  EXPECT_EQ(stats.transposes, 2u);
  EXPECT_EQ(stats.sunk, 4u);  // three Relus and the Add
  // The output keeps its name and is produced in NCHW.
  const Node* last = ProducerOf(m, "y");
  ASSERT_NE(last, nullptr);
  EXPECT_EQ(last->op_type, "Transpose");
  EXPECT_EQ(m.OpsetVersion(kVigilDomain), kVigilOpsetVersion);
  for (const Node& n : m.graph.nodes) {
    if (n.op_type == "ConvNhwc") {
      EXPECT_EQ(n.domain, kVigilDomain);
    }
  }
}

TEST(LayoutNhwc, ResidualFromTheGraphInputReusesItsTranspose) {
  // x feeds the first Conv and the Add: the Add reads x's NHWC copy.
  Model m = BaseModel();
  AddWeights(m, {"w0", "w1"});
  m.graph.outputs = {TensorValue("y", kF16, {1, 8, 5, 5})};
  m.graph.nodes = {Conv("x", "w0", "c0", "conv0"), MakeNode("Relu", {"c0"}, {"r0"}, "relu0"),
                   Conv("r0", "w1", "c1", "conv1"), MakeNode("Add", {"c1", "x"}, {"s"}, "add"),
                   MakeNode("Relu", {"s"}, {"y"}, "relu")};
  Convert(m);
  EXPECT_EQ(CountTransposes(m, kToNhwc), 1u);
  EXPECT_EQ(CountTransposes(m, kToNchw), 1u);
}

TEST(LayoutNhwc, GraphOutputInTheMiddleStaysNchw) {
  // x -> Conv -> Relu (r: a graph output, and read by the next Conv) -> Conv -> y
  Model m = BaseModel();
  AddWeights(m, {"w0", "w1"});
  m.graph.outputs = {TensorValue("r", kF16, {1, 8, 5, 5}), TensorValue("y", kF16, {1, 8, 5, 5})};
  m.graph.nodes = {Conv("x", "w0", "c0", "conv0"), MakeNode("Relu", {"c0"}, {"r"}, "relu"),
                   Conv("r", "w1", "y", "conv1")};
  Convert(m);
  const Node* r = ProducerOf(m, "r");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->op_type, "Transpose");
  EXPECT_EQ(r->FindAttribute("perm")->ints, kToNchw);
  // The second convolution reads the Relu's NHWC result, not a transpose of r.
  for (const Node& n : m.graph.nodes) {
    if (n.op_type == "ConvNhwc" && n.name == "conv1") {
      EXPECT_EQ(ProducerOf(m, n.inputs[0])->op_type, "Relu");
    }
  }
  EXPECT_EQ(CountTransposes(m, kToNhwc), 1u);  // x only
  EXPECT_EQ(CountTransposes(m, kToNchw), 2u);  // r and y
}

TEST(LayoutNhwc, NonPermutableBroadcastBlocksSinking) {
  // Add with a computed [8,1,1] operand z: its layout cannot follow, so the
  // Add stays NCHW behind the Conv's transpose.
  Model m = BaseModel();
  AddWeights(m, {"w0"});
  m.graph.inputs.push_back(TensorValue("z", kF16, {8, 1, 1}));
  m.graph.outputs = {TensorValue("y", kF16, {1, 8, 5, 5})};
  m.graph.nodes = {Conv("x", "w0", "c0", "conv0"), MakeNode("Add", {"c0", "z"}, {"s"}, "add"),
                   MakeNode("Relu", {"s"}, {"y"}, "relu")};
  NhwcStats stats = Convert(m);
  EXPECT_EQ(stats.sunk, 0u);
  const Node* add = ProducerOf(m, "s");
  ASSERT_NE(add, nullptr);
  EXPECT_EQ(add->inputs[0], "c0");
  EXPECT_EQ(ProducerOf(m, "c0")->op_type, "Transpose");
}

TEST(LayoutNhwc, PerChannelConstantsArePermuted) {
  // Conv -> Mul(scale [8,1,1]) -> Add(bias [1,8,1,1]) -> Clip(0, scalar 6) -> y
  Model m = BaseModel();
  AddWeights(m, {"w0"});
  m.graph.initializers.push_back(Counting("scale", {8, 1, 1}));
  m.graph.initializers.push_back(Counting("bias", {1, 8, 1, 1}));
  m.graph.initializers.push_back(Counting("lo", {}));
  m.graph.initializers.push_back(Counting("hi", {1}));
  m.graph.outputs = {TensorValue("y", kF16, {1, 8, 5, 5})};
  m.graph.nodes = {Conv("x", "w0", "c0", "conv0"), MakeNode("Mul", {"c0", "scale"}, {"m"}, "mul"),
                   MakeNode("Add", {"m", "bias"}, {"a"}, "add"), MakeNode("Clip", {"a", "lo", "hi"}, {"y"}, "clip")};
  NhwcStats stats = Convert(m);
  EXPECT_EQ(stats.sunk, 3u);
  EXPECT_EQ(stats.transposes, 2u);
  const Node* mul = ProducerOf(m, "m_nhwc");
  ASSERT_NE(mul, nullptr);
  const Tensor* scale = nullptr;
  for (const Tensor& t : m.graph.initializers) {
    if (t.name == mul->inputs[1]) scale = &t;
  }
  ASSERT_NE(scale, nullptr);
  EXPECT_EQ(scale->dims, (std::vector<int64_t>{1, 1, 1, 8}));
  const Node* clip = ProducerOf(m, "y_nhwc");
  ASSERT_NE(clip, nullptr);
  EXPECT_EQ(clip->inputs[1], "lo");  // scalars are used as they are
  EXPECT_EQ(clip->inputs[2], "hi");
}

TEST(LayoutNhwc, FullConstantIsPermutedElementwise) {
  Model m = BaseModel();
  m.graph.inputs = {TensorValue("x", kF16, {1, 8, 2, 3})};
  AddWeights(m, {"w0"});
  m.graph.initializers.push_back(Counting("k", {1, 8, 2, 3}));
  m.graph.outputs = {TensorValue("y", kF16, {1, 8, 2, 3})};
  m.graph.nodes = {Conv("x", "w0", "c0", "conv0"), MakeNode("Sub", {"c0", "k"}, {"y"}, "sub")};
  Convert(m);
  const Node* sub = ProducerOf(m, "y_nhwc");
  ASSERT_NE(sub, nullptr);
  const Tensor* k = nullptr;
  for (const Tensor& t : m.graph.initializers) {
    if (t.name == sub->inputs[1]) k = &t;
  }
  ASSERT_NE(k, nullptr);
  ASSERT_EQ(k->dims, (std::vector<int64_t>{1, 2, 3, 8}));
  std::vector<uint16_t> v(48);
  std::memcpy(v.data(), k->bytes.data(), 96);
  // k_nhwc[0, h, w, c] = k[0, c, h, w] = c * 6 + h * 3 + w
  for (int h = 0; h < 2; ++h) {
    for (int w = 0; w < 3; ++w) {
      for (int c = 0; c < 8; ++c) EXPECT_EQ(v[(h * 3 + w) * 8 + c], c * 6 + h * 3 + w);
    }
  }
}

TEST(LayoutNhwc, UnknownOpsKeepNchwBehindTheirTransposes) {
  // Conv -> Relu -> MaxPool -> Conv -> y: MaxPool reads NCHW.
  Model m = BaseModel();
  AddWeights(m, {"w0", "w1"});
  m.graph.outputs = {TensorValue("y", kF16, {1, 8, 4, 4})};
  Node pool = MakeNode("MaxPool", {"r"}, {"p"}, "pool");
  pool.attributes.push_back(IntsAttr("kernel_shape", {2, 2}));
  m.graph.nodes = {Conv("x", "w0", "c0", "conv0"), MakeNode("Relu", {"c0"}, {"r"}, "relu"), pool,
                   Conv("p", "w1", "y", "conv1")};
  Convert(m);
  EXPECT_EQ(ProducerOf(m, "r")->op_type, "Transpose");
  EXPECT_EQ(CountTransposes(m, kToNhwc), 2u);  // x, p
  EXPECT_EQ(CountTransposes(m, kToNchw), 2u);  // r, y
}

TEST(LayoutNhwc, SharedInputIsTransposedOnce) {
  Model m = BaseModel();
  AddWeights(m, {"w0", "w1"});
  m.graph.outputs = {TensorValue("a", kF16, {1, 8, 5, 5}), TensorValue("b", kF16, {1, 8, 5, 5})};
  m.graph.nodes = {Conv("x", "w0", "a", "conv0"), Conv("x", "w1", "b", "conv1")};
  Convert(m);
  EXPECT_EQ(CountTransposes(m, kToNhwc), 1u);
}

TEST(LayoutNhwc, SinkingNeverAddsTransposes) {
  // c0 (NCHW) feeds a Relu and a MaxPool: moving its transpose below the
  // Relu would need one more (the Relu's result is a graph output).
  Model m = BaseModel();
  AddWeights(m, {"w0"});
  m.graph.outputs = {TensorValue("r", kF16, {1, 8, 5, 5}), TensorValue("p", kF16, {1, 8, 4, 4})};
  Node pool = MakeNode("MaxPool", {"c0"}, {"p"}, "pool");
  pool.attributes.push_back(IntsAttr("kernel_shape", {2, 2}));
  m.graph.nodes = {Conv("x", "w0", "c0", "conv0"), MakeNode("Relu", {"c0"}, {"r"}, "relu"), pool};
  NhwcStats stats = Convert(m);
  EXPECT_EQ(stats.sunk, 0u);
  EXPECT_EQ(stats.transposes, 2u);
}

Tensor HalfScalar(std::string name, float v) {
  Tensor t = Initializer(std::move(name), kF16, {});
  auto data = std::make_shared<uint16_t>(FloatToFloat16(v));
  t.storage = Tensor::Storage::kTypedDecoded;
  t.bytes = {reinterpret_cast<const uint8_t*>(data.get()), 2};
  t.keep_alive = data;
  return t;
}

// x -> Conv (c0) -> [SiLU: Mul(c0, Sigmoid(c0))] -> Conv -> y, or with
// HardSwish's chain Mul(c0, Clip(Add(c0, 3), 0, 6)) / 6: the transposed c0
// has two readers, so no single move frees it, but the chain moves as a
// whole and leaves one transpose in and one out.
Model SwishBetweenConvs(bool hard, bool c0_is_output) {
  Model m = BaseModel();
  AddWeights(m, {"w0", "w1"});
  m.graph.outputs = {TensorValue("y", kF16, {1, 8, 5, 5})};
  if (c0_is_output) m.graph.outputs.push_back(TensorValue("c0", kF16, {1, 8, 5, 5}));
  m.graph.nodes = {Conv("x", "w0", "c0", "conv0")};
  if (hard) {
    for (auto [name, v] : {std::pair{"zero", 0.0f}, {"three", 3.0f}, {"six", 6.0f}}) {
      m.graph.initializers.push_back(HalfScalar(name, v));
    }
    m.graph.nodes.push_back(MakeNode("Add", {"c0", "three"}, {"a"}, "add"));
    m.graph.nodes.push_back(MakeNode("Clip", {"a", "zero", "six"}, {"k"}, "clip"));
    m.graph.nodes.push_back(MakeNode("Mul", {"c0", "k"}, {"p"}, "mul"));
    m.graph.nodes.push_back(MakeNode("Div", {"p", "six"}, {"s"}, "div"));
  } else {
    m.graph.nodes.push_back(MakeNode("Sigmoid", {"c0"}, {"g"}, "sigmoid"));
    m.graph.nodes.push_back(MakeNode("Mul", {"c0", "g"}, {"s"}, "mul"));
  }
  m.graph.nodes.push_back(Conv("s", "w1", "y", "conv1"));
  return m;
}

TEST(LayoutNhwc, SiluAndHardSwishMoveAsAWhole) {
  for (bool hard : {false, true}) {
    SCOPED_TRACE(hard ? "HardSwish" : "SiLU");
    Model m = SwishBetweenConvs(hard, false);
    NhwcStats stats = Convert(m);
    EXPECT_EQ(stats.sunk, hard ? 4u : 2u);
    EXPECT_EQ(CountTransposes(m, kToNhwc), 1u);  // x
    EXPECT_EQ(CountTransposes(m, kToNchw), 1u);  // y
    EXPECT_EQ(stats.transposes, 2u);
    EXPECT_NE(ProducerOf(m, "y"), nullptr);
  }
}

TEST(LayoutNhwc, SwishChainStaysWhenTheTransposedValueHasAnotherReader) {
  // c0 is also a graph output: its transpose stays, and moving the chain
  // would add one.
  for (bool hard : {false, true}) {
    SCOPED_TRACE(hard ? "HardSwish" : "SiLU");
    Model m = SwishBetweenConvs(hard, true);
    NhwcStats stats = Convert(m);
    EXPECT_EQ(stats.sunk, 0u);
    EXPECT_EQ(stats.transposes, 4u);  // x in, c0 out, s in again, y out
  }
}

TEST(LayoutNhwc, FusesAReluThatIsTheOnlyConsumer) {
  Model m = ResNetBlock();
  NhwcOptions options;
  options.fuse_relu = true;
  NhwcStats stats = Convert(m, options);
  EXPECT_EQ(stats.fused_relus, 2u);  // relu0 and relu1; relu2 follows the Add
  EXPECT_EQ(CountNodes(m, "Relu"), 1u);
  size_t with_activation = 0;
  for (const Node& n : m.graph.nodes) {
    const Attribute* a = n.FindAttribute("activation");
    if (n.op_type == "ConvNhwc" && a && a->s == kConvNhwcRelu) ++with_activation;
  }
  EXPECT_EQ(with_activation, 2u);
}

// Every value of `m` typed f16 [1, 8, 5, 5] (what the fusions' shape checks
// read), but for the ones `except` lists.
std::unordered_map<std::string, TypeInfo> SameShapeTypes(const Model& m, std::initializer_list<const char*> except = {}) {
  std::unordered_map<std::string, TypeInfo> types = InputTypes(m);
  TypeInfo t = TensorValue("t", kF16, {1, 8, 5, 5}).type;
  for (const Node& n : m.graph.nodes) {
    for (const std::string& o : n.outputs) types[o] = t;
  }
  for (const char* e : except) types.erase(e);
  return types;
}

NhwcOptions AllFusions() {
  NhwcOptions o;
  o.fuse_relu = o.fuse_relu6 = o.fuse_residual = true;
  return o;
}

NhwcStats ConvertTyped(Model& m, const std::unordered_map<std::string, TypeInfo>& types, const NhwcOptions& o) {
  auto stats = ConvertConvsToNhwc(m, OpIndices(m, "Conv"), types, o);
  EXPECT_TRUE(stats.ok()) << stats.status().ToString();
  Status valid = ValidateModel(m);
  EXPECT_TRUE(valid.ok()) << valid.ToString();
  return stats.ok() ? *stats : NhwcStats{};
}

// Every node input is a graph input, an initializer or an earlier node's output.
void ExpectProducersFirst(const Model& m) {
  std::unordered_set<std::string> known;
  for (const ValueInfo& vi : m.graph.inputs) known.insert(vi.name);
  for (const Tensor& t : m.graph.initializers) known.insert(t.name);
  for (const Node& n : m.graph.nodes) {
    for (const std::string& in : n.inputs) {
      EXPECT_TRUE(in.empty() || known.count(in)) << n.name << " reads " << in << " before it is computed";
    }
    for (const std::string& out : n.outputs) known.insert(out);
  }
}

const Node* Named(const Model& m, const std::string& name) {
  for (const Node& n : m.graph.nodes) {
    if (n.name == name) return &n;
  }
  return nullptr;
}

std::string ActivationOf(const Node& n) {
  const Attribute* a = n.FindAttribute("activation");
  return a ? a->s : "";
}

TEST(LayoutNhwc, FusesTheResidualAddAndItsRelu) {
  Model m = ResNetBlock();
  NhwcStats stats = ConvertTyped(m, SameShapeTypes(m), AllFusions());
  EXPECT_EQ(stats.fused_residuals, 1u);
  EXPECT_EQ(stats.fused_relus, 3u);  // relu2 now follows conv2 (+ Z)
  EXPECT_EQ(CountNodes(m, "Add"), 0u);
  EXPECT_EQ(CountNodes(m, "Relu"), 0u);
  const Node* conv2 = Named(m, "conv2");
  ASSERT_NE(conv2, nullptr);
  ASSERT_EQ(conv2->inputs.size(), 4u);
  EXPECT_EQ(conv2->inputs[2], "");  // no bias
  const Node* z = ProducerOf(m, conv2->inputs[3]);
  ASSERT_NE(z, nullptr);
  EXPECT_EQ(z->name, "conv0");  // r0 in NHWC: conv0 with its Relu fused
  EXPECT_EQ(ActivationOf(*conv2), kConvNhwcRelu);
  EXPECT_EQ(CountTransposes(m, kToNhwc), 1u);
  EXPECT_EQ(CountTransposes(m, kToNchw), 1u);
  ExpectProducersFirst(m);
}

TEST(LayoutNhwc, ResidualComputedAfterTheConvIsReordered) {
  // conv0's result meets a branch that the file lists after conv0.
  Model m = BaseModel();
  AddWeights(m, {"w0", "w1"});
  m.graph.outputs = {TensorValue("y", kF16, {1, 8, 5, 5})};
  m.graph.nodes = {Conv("x", "w0", "c0", "conv0"), Conv("x", "w1", "c1", "conv1"),
                   MakeNode("Sigmoid", {"c1"}, {"g"}, "sigmoid"), MakeNode("Add", {"g", "c0"}, {"s"}, "add"),
                   MakeNode("Relu", {"s"}, {"y"}, "relu")};
  NhwcStats stats = ConvertTyped(m, SameShapeTypes(m), AllFusions());
  EXPECT_EQ(stats.fused_residuals, 1u);
  const Node* conv0 = Named(m, "conv0");
  ASSERT_NE(conv0, nullptr);
  ASSERT_EQ(conv0->inputs.size(), 4u);
  EXPECT_EQ(ProducerOf(m, conv0->inputs[3])->op_type, "Sigmoid");
  EXPECT_EQ(ActivationOf(*conv0), kConvNhwcRelu);
  ExpectProducersFirst(m);
}

TEST(LayoutNhwc, ResidualNeedsTheAddToBeTheOnlyConsumer) {
  Model m = ResNetBlock();
  m.graph.nodes.push_back(MakeNode("Sigmoid", {"c2"}, {"q"}, "also_reads_c2"));
  m.graph.outputs.push_back(TensorValue("q", kF16, {1, 8, 5, 5}));
  NhwcStats stats = ConvertTyped(m, SameShapeTypes(m), AllFusions());
  EXPECT_EQ(stats.fused_residuals, 0u);
  EXPECT_EQ(CountNodes(m, "Add"), 1u);
}

TEST(LayoutNhwc, ResidualNeedsTheSameShape) {
  // A broadcast operand (here: r0 of unknown shape, and a per-channel
  // constant) is no Z.
  Model unknown = ResNetBlock();
  EXPECT_EQ(ConvertTyped(unknown, SameShapeTypes(unknown, {"r0"}), AllFusions()).fused_residuals, 0u);
  Model bias = ResNetBlock();
  bias.graph.initializers.push_back(Counting("k", {8, 1, 1}));
  bias.graph.nodes[5].inputs[1] = "k";
  EXPECT_EQ(ConvertTyped(bias, SameShapeTypes(bias), AllFusions()).fused_residuals, 0u);
  EXPECT_EQ(CountNodes(bias, "Add"), 1u);
}

// x -> Conv -> Clip(lo, hi) -> y
Model ConvClip(const std::string& lo, const std::string& hi) {
  Model m = BaseModel();
  AddWeights(m, {"w0"});
  m.graph.outputs = {TensorValue("y", kF16, {1, 8, 5, 5})};
  m.graph.initializers.push_back(HalfScalar("zero", 0));
  m.graph.initializers.push_back(HalfScalar("six", 6));
  m.graph.initializers.push_back(HalfScalar("five_and_a_half", 5.5f));
  m.graph.nodes = {Conv("x", "w0", "c0", "conv0"), MakeNode("Clip", {"c0", lo, hi}, {"y"}, "clip")};
  return m;
}

TEST(LayoutNhwc, FusesClipZeroSix) {
  Model m = ConvClip("zero", "six");
  NhwcStats stats = ConvertTyped(m, SameShapeTypes(m), AllFusions());
  EXPECT_EQ(stats.fused_relu6s, 1u);
  EXPECT_EQ(CountNodes(m, "Clip"), 0u);
  EXPECT_EQ(ActivationOf(*Named(m, "conv0")), kConvNhwcRelu6);
  // Not without the option.
  Model off = ConvClip("zero", "six");
  NhwcOptions relu_only;
  relu_only.fuse_relu = true;
  EXPECT_EQ(ConvertTyped(off, SameShapeTypes(off), relu_only).fused_relu6s, 0u);
}

TEST(LayoutNhwc, ClipWithOtherOrComputedBoundsStays) {
  Model other = ConvClip("zero", "five_and_a_half");
  EXPECT_EQ(ConvertTyped(other, SameShapeTypes(other), AllFusions()).fused_relu6s, 0u);
  EXPECT_EQ(CountNodes(other, "Clip"), 1u);
  Model no_min = ConvClip("", "six");
  EXPECT_EQ(ConvertTyped(no_min, SameShapeTypes(no_min), AllFusions()).fused_relu6s, 0u);
  // max a graph input: may be anything at run time, even with an initializer.
  Model fed = ConvClip("zero", "m");
  fed.graph.inputs.push_back(TensorValue("m", kF16, {}));
  EXPECT_EQ(ConvertTyped(fed, SameShapeTypes(fed), AllFusions()).fused_relu6s, 0u);
  Model overridable = ConvClip("zero", "six");
  overridable.graph.inputs.push_back(TensorValue("six", kF16, {}));
  EXPECT_EQ(ConvertTyped(overridable, SameShapeTypes(overridable), AllFusions()).fused_relu6s, 0u);
}

TEST(LayoutNhwc, FusesClipAttributesBeforeOpset11) {
  auto clip6 = [](float lo, float hi) {
    Model m = ConvClip("zero", "six");
    m.opset_imports = {{"", 10}};
    m.graph.nodes[1].inputs.resize(1);
    Attribute a, b;
    a.name = "min";
    a.type = b.type = AttributeType::kFloat;
    a.f = lo;
    b.name = "max";
    b.f = hi;
    m.graph.nodes[1].attributes = {a, b};
    return m;
  };
  Model m = clip6(0, 6);
  EXPECT_EQ(ConvertTyped(m, SameShapeTypes(m), AllFusions()).fused_relu6s, 1u);
  Model n = clip6(-1, 6);
  EXPECT_EQ(ConvertTyped(n, SameShapeTypes(n), AllFusions()).fused_relu6s, 0u);
}

// A MobileNetV2 inverted-residual body: x [1,8,5,5] -> Conv 1x1 (16) ->
// Clip(0, 6) (e) -> depthwise Conv 3x3 (group 16, W [16,1,3,3]) -> Clip(0, 6)
// -> Conv 1x1 (8) -> y.
Model MobileBlock() {
  Model m = BaseModel();
  m.graph.initializers = {Counting("we", {16, 8, 1, 1}), Counting("wd", {16, 1, 3, 3}), Counting("wp", {8, 16, 1, 1}),
                          HalfScalar("zero", 0), HalfScalar("six", 6)};
  m.graph.outputs = {TensorValue("y", kF16, {1, 8, 5, 5})};
  Node expand = MakeNode("Conv", {"x", "we"}, {"c0"}, "expand");
  Node dw = Conv("e", "wd", "c1", "depthwise");
  Attribute group;
  group.name = "group";
  group.type = AttributeType::kInt;
  group.i = 16;
  dw.attributes.push_back(group);
  m.graph.nodes = {expand, MakeNode("Clip", {"c0", "zero", "six"}, {"e"}, "relu6_0"), dw,
                   MakeNode("Clip", {"c1", "zero", "six"}, {"d"}, "relu6_1"),
                   MakeNode("Conv", {"d", "wp"}, {"y"}, "project")};
  return m;
}

// MobileBlock's types: x [1,8,5,5], the rest [1,16,5,5] but y.
std::unordered_map<std::string, TypeInfo> MobileTypes(const Model& m) {
  std::unordered_map<std::string, TypeInfo> types = InputTypes(m);
  for (const char* v : {"c0", "e", "c1", "d"}) types[v] = TensorValue(v, kF16, {1, 16, 5, 5}).type;
  types["y"] = TensorValue("y", kF16, {1, 8, 5, 5}).type;
  return types;
}

NhwcOptions WithPrologue() {
  NhwcOptions o = AllFusions();
  o.depthwise_input_activation = true;
  return o;
}

std::string InputActivationOf(const Node& n) {
  const Attribute* a = n.FindAttribute(kConvNhwcInputActivation);
  return a ? a->s : "";
}

TEST(LayoutNhwc, MovesTheExpansionRelu6OntoTheDepthwiseInput) {
  Model m = MobileBlock();
  NhwcStats stats = ConvertTyped(m, MobileTypes(m), WithPrologue());
  EXPECT_EQ(stats.fused_relu6s, 2u);
  EXPECT_EQ(stats.input_activations, 1u);
  EXPECT_EQ(CountNodes(m, "Clip"), 0u);
  EXPECT_EQ(ActivationOf(*Named(m, "expand")), "");
  EXPECT_EQ(Named(m, "expand")->FindAttribute("activation"), nullptr);
  EXPECT_EQ(InputActivationOf(*Named(m, "depthwise")), kConvNhwcRelu6);
  EXPECT_EQ(ActivationOf(*Named(m, "depthwise")), kConvNhwcRelu6);  // its own stays
  EXPECT_EQ(InputActivationOf(*Named(m, "project")), "");           // not depthwise
  EXPECT_EQ(ProducerOf(m, Named(m, "depthwise")->inputs[0])->name, "expand");
  // Off unless asked for.
  Model off = MobileBlock();
  EXPECT_EQ(ConvertTyped(off, MobileTypes(off), AllFusions()).input_activations, 0u);
  EXPECT_EQ(ActivationOf(*Named(off, "expand")), kConvNhwcRelu6);
  EXPECT_EQ(InputActivationOf(*Named(off, "depthwise")), "");
}

TEST(LayoutNhwc, MovesARelu) {
  Model m = MobileBlock();
  m.graph.nodes[1] = MakeNode("Relu", {"c0"}, {"e"}, "relu_0");
  NhwcStats stats = ConvertTyped(m, MobileTypes(m), WithPrologue());
  EXPECT_EQ(stats.input_activations, 1u);
  EXPECT_EQ(ActivationOf(*Named(m, "expand")), "");
  EXPECT_EQ(InputActivationOf(*Named(m, "depthwise")), kConvNhwcRelu);
}

TEST(LayoutNhwc, ActivationStaysWhenTheDepthwiseIsNotTheOnlyReader) {
  Model m = MobileBlock();
  m.graph.nodes.push_back(MakeNode("Sigmoid", {"e"}, {"q"}, "also_reads_e"));
  m.graph.outputs.push_back(TensorValue("q", kF16, {1, 16, 5, 5}));
  EXPECT_EQ(ConvertTyped(m, MobileTypes(m), WithPrologue()).input_activations, 0u);
  EXPECT_EQ(ActivationOf(*Named(m, "expand")), kConvNhwcRelu6);
  EXPECT_EQ(InputActivationOf(*Named(m, "depthwise")), "");
}

TEST(LayoutNhwc, ActivationStaysWhenItsResultIsAGraphOutput) {
  Model m = MobileBlock();
  m.graph.outputs.push_back(TensorValue("e", kF16, {1, 16, 5, 5}));
  EXPECT_EQ(ConvertTyped(m, MobileTypes(m), WithPrologue()).input_activations, 0u);
  EXPECT_EQ(InputActivationOf(*Named(m, "depthwise")), "");
}

TEST(LayoutNhwc, ActivationStaysWhenTheReaderIsNotDepthwise) {
  // Two channels per group (group 8, W [16, 2, 3, 3]): grouped, not depthwise.
  Model grouped = MobileBlock();
  grouped.graph.initializers[1] = Counting("wd", {16, 2, 3, 3});
  grouped.graph.nodes[2].attributes.back().i = 8;
  EXPECT_EQ(ConvertTyped(grouped, MobileTypes(grouped), WithPrologue()).input_activations, 0u);
  EXPECT_EQ(ActivationOf(*Named(grouped, "expand")), kConvNhwcRelu6);
  // An ordinary convolution reads it.
  Model dense = MobileBlock();
  dense.graph.initializers[1] = Counting("wd", {16, 16, 3, 3});
  dense.graph.nodes[2].attributes.pop_back();
  EXPECT_EQ(ConvertTyped(dense, MobileTypes(dense), WithPrologue()).input_activations, 0u);
  EXPECT_EQ(ActivationOf(*Named(dense, "expand")), kConvNhwcRelu6);
}

TEST(LayoutNhwc, ActivationStaysWhenTheDepthwiseReadsItAsZ) {
  // e feeds the depthwise convolution's residual (Add(c1, e)), not its X.
  Model m = MobileBlock();
  m.graph.nodes[2].inputs[0] = "x16";
  m.graph.inputs.push_back(TensorValue("x16", kF16, {1, 16, 5, 5}));
  m.graph.nodes[3] = MakeNode("Add", {"c1", "e"}, {"d"}, "add");
  std::unordered_map<std::string, TypeInfo> types = MobileTypes(m);
  NhwcStats stats = ConvertTyped(m, types, WithPrologue());
  EXPECT_EQ(stats.fused_residuals, 1u);
  EXPECT_EQ(stats.input_activations, 0u);
  EXPECT_EQ(ActivationOf(*Named(m, "expand")), kConvNhwcRelu6);
}

TEST(LayoutNhwc, BadIndicesLeaveTheModelUnchanged) {
  Model m = ResNetBlock();
  size_t nodes = m.graph.nodes.size();
  EXPECT_FALSE(ConvertConvsToNhwc(m, {0, 1}, InputTypes(m)).ok());  // node 1 is a Relu
  EXPECT_FALSE(ConvertConvsToNhwc(m, {0, 0}, InputTypes(m)).ok());
  EXPECT_FALSE(ConvertConvsToNhwc(m, {99}, InputTypes(m)).ok());
  EXPECT_EQ(m.graph.nodes.size(), nodes);
  EXPECT_EQ(m.graph.nodes[0].op_type, "Conv");
  auto none = ConvertConvsToNhwc(m, {}, InputTypes(m));
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->convs, 0u);
  EXPECT_EQ(m.OpsetVersion(kVigilDomain), -1);
}

}  // namespace
}  // namespace vigil::ir
