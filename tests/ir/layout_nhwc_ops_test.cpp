// The NHWC layout pass extending its region through Concat and Resize
// (NhwcOptions::nhwc_layout_ops): a UNet decoder's upsample and skip
// concatenation run channels-last with their axes and per-axis constants
// permuted, and stay NCHW where the pass cannot permute what they read or
// where moving them would add transposes.
#include <cstring>

#include <gtest/gtest.h>

#include "graph_builder.h"
#include "ir/layout_nhwc.h"
#include "ir/layout_nhwc_ops.h"
#include "ir/validate.h"

namespace vigil::ir {
namespace {

using namespace vigil::ir::testing;

constexpr DataType kF16 = DataType::kFloat16;

Node Conv(std::string x, std::string w, std::string y, int64_t stride = 1) {
  Node n = MakeNode("Conv", {std::move(x), std::move(w)}, {y}, "conv_" + y);
  n.attributes = {IntsAttr("pads", {1, 1, 1, 1}), IntsAttr("strides", {stride, stride})};
  return n;
}

Node ConcatOf(std::vector<std::string> in, std::string y, int64_t axis = 1) {
  Node n = MakeNode("Concat", std::move(in), {std::move(y)}, "concat");
  n.attributes = {IntAttr("axis", axis)};
  return n;
}

// x [1,8,8,8] -> Conv (e1) -> Conv stride 2 (e2) -> Resize 2x (up) ->
// Concat(up, e1) -> Conv -> y: a UNet level. Resize-`opset` reads X, an
// empty roi and scales `scales` (a constant unless `scales_input`).
Model UnetLevel(int64_t opset = 17, bool scales_input = false) {
  Model m;
  m.ir_version = 8;
  m.opset_imports = {{"", opset}};
  m.graph.name = "g";
  m.graph.inputs = {TensorValue("x", kF16, {1, 8, 8, 8})};
  if (scales_input) m.graph.inputs.push_back(TensorValue("scales", DataType::kFloat32, {4}));
  m.graph.outputs = {TensorValue("y", kF16, {1, 8, 8, 8})};
  m.graph.initializers = {Initializer("w0", kF16, {8, 8, 3, 3}), Initializer("w1", kF16, {8, 8, 3, 3}),
                          Initializer("w2", kF16, {8, 16, 3, 3})};
  if (!scales_input) {
    m.graph.initializers.push_back(OwnedInitializer<float>("scales", DataType::kFloat32, {4}, {1, 1, 2, 2}));
  }
  Node resize = MakeNode("Resize", {"e2", "", "scales"}, {"up"}, "resize");
  resize.attributes.push_back(StringAttribute("mode", "linear"));
  m.graph.nodes = {Conv("x", "w0", "e1"), Conv("e1", "w1", "e2", 2), resize, ConcatOf({"up", "e1"}, "cat"),
                   Conv("cat", "w2", "y")};
  return m;
}

NhwcStats Convert(Model& m, std::vector<std::string> ops, std::unordered_map<std::string, TypeInfo> types = {}) {
  NhwcOptions options;
  options.nhwc_layout_ops = std::move(ops);
  for (auto& [name, t] : InputTypes(m)) types.emplace(name, t);
  auto stats = ConvertConvsToNhwc(m, OpIndices(m, "Conv"), types, options);
  EXPECT_TRUE(stats.ok()) << stats.status().ToString();
  Status valid = ValidateModel(m);
  EXPECT_TRUE(valid.ok()) << valid.ToString();
  return stats.ok() ? *stats : NhwcStats{};
}

const Node& Only(const Model& m, const std::string& op) {
  for (const Node& node : m.graph.nodes) {
    if (node.op_type == op) return node;
  }
  static const Node kNone;
  ADD_FAILURE() << "no " << op;
  return kNone;
}

std::vector<float> FloatsOf(const Model& m, const std::string& name) {
  for (const Tensor& t : m.graph.initializers) {
    if (t.name != name) continue;
    std::vector<float> v(t.bytes.size() / 4);
    std::memcpy(v.data(), t.bytes.data(), t.bytes.size());
    return v;
  }
  ADD_FAILURE() << "no initializer " << name;
  return {};
}

TEST(LayoutNhwcOps, AxesMapToTheirNhwcPositions) {
  EXPECT_EQ(NhwcAxisOf(0), 0);
  EXPECT_EQ(NhwcAxisOf(1), 3);
  EXPECT_EQ(NhwcAxisOf(2), 1);
  EXPECT_EQ(NhwcAxisOf(3), 2);
  Tensor roi = OwnedInitializer<int64_t>("roi", DataType::kInt64, {8}, {0, 1, 2, 3, 4, 5, 6, 7});
  std::optional<Tensor> p = PermuteAxisValues(roi, "roi_nhwc");
  ASSERT_TRUE(p.has_value());
  std::vector<int64_t> v(8);
  std::memcpy(v.data(), p->bytes.data(), 64);
  EXPECT_EQ(v, (std::vector<int64_t>{0, 2, 3, 1, 4, 6, 7, 5}));
  EXPECT_FALSE(PermuteAxisValues(OwnedInitializer<int64_t>("s", DataType::kInt64, {3}, {1, 2, 3}), "x"));
}

TEST(LayoutNhwcOps, UnetLevelRunsChannelsLastWithOneTransposeInAndOneOut) {
  Model m = UnetLevel();
  NhwcStats stats = Convert(m, {"Concat", "Resize"});
  EXPECT_EQ(stats.layout_ops, 2u);
  EXPECT_EQ(CountTransposes(m, kToNhwc), 1u);  // x
  EXPECT_EQ(CountTransposes(m, kToNchw), 1u);  // y
  const Node& concat = Only(m, "Concat");
  const Attribute* axis = concat.FindAttribute("axis");
  ASSERT_NE(axis, nullptr);
  EXPECT_EQ(axis->i, 3);
  const Node& resize = Only(m, "Resize");
  ASSERT_EQ(resize.inputs.size(), 3u);
  EXPECT_TRUE(resize.inputs[1].empty());
  EXPECT_EQ(FloatsOf(m, resize.inputs[2]), (std::vector<float>{1, 2, 2, 1}));
  // Both read convolutions' NHWC results directly.
  for (const std::string& in : {resize.inputs[0], concat.inputs[0], concat.inputs[1]}) {
    const Node* p = ProducerOf(m, in);
    ASSERT_NE(p, nullptr) << in;
    EXPECT_NE(p->op_type, "Transpose") << in;
  }
}

TEST(LayoutNhwcOps, NothingMovesUnlessListed) {
  Model m = UnetLevel();
  NhwcStats stats = Convert(m, {});
  EXPECT_EQ(stats.layout_ops, 0u);
  EXPECT_EQ(Only(m, "Concat").FindAttribute("axis")->i, 1);
  Model r = UnetLevel();
  stats = Convert(r, {"Resize"});
  EXPECT_EQ(stats.layout_ops, 1u);
  EXPECT_EQ(Only(r, "Concat").FindAttribute("axis")->i, 1);
}

TEST(LayoutNhwcOps, ResizeWithComputedScalesStaysNchw) {
  Model m = UnetLevel(17, /*scales_input=*/true);
  NhwcStats stats = Convert(m, {"Resize"});
  EXPECT_EQ(stats.layout_ops, 0u);
  EXPECT_EQ(Only(m, "Resize").inputs[2], "scales");
}

TEST(LayoutNhwcOps, ResizeAxesAreRemappedAndItsScalesKept) {
  Model m = UnetLevel(18, /*scales_input=*/true);
  Node& resize = m.graph.nodes[2];
  resize.attributes.push_back(IntsAttr("axes", {2, -1}));
  NhwcStats stats = Convert(m, {"Concat", "Resize"});
  EXPECT_EQ(stats.layout_ops, 2u);
  const Node& moved = Only(m, "Resize");
  EXPECT_EQ(moved.inputs[2], "scales");  // a graph input, in the axes' order
  EXPECT_EQ(moved.FindAttribute("axes")->ints, (std::vector<int64_t>{1, 2}));
  // Before opset 18 an axes attribute is not Resize's: it stays.
  Model old = UnetLevel(17, true);
  old.graph.nodes[2].attributes.push_back(IntsAttr("axes", {2, 3}));
  EXPECT_EQ(Convert(old, {"Resize"}).layout_ops, 0u);
}

// A Concat operand from outside the region gets a transpose of its own
// where the Concat's result only feeds to-NHWC transposes (they cancel);
// where the result is a graph output, the Concat stays NCHW.
TEST(LayoutNhwcOps, ConcatTakesAnNchwOperandOnlyWhereItsResultCancels) {
  Model m;
  m.ir_version = 8;
  m.opset_imports = {{"", 17}};
  m.graph.name = "g";
  m.graph.inputs = {TensorValue("x", kF16, {1, 8, 8, 8}), TensorValue("z", kF16, {1, 8, 4, 4}),
                    TensorValue("v", kF16, {1, 8, 8, 8})};
  m.graph.outputs = {TensorValue("y", kF16, {1, 8, 4, 4}), TensorValue("out", kF16, {1, 16, 8, 8})};
  m.graph.initializers = {Initializer("w0", kF16, {8, 8, 3, 3}), Initializer("w1", kF16, {8, 8, 3, 3}),
                          Initializer("w2", kF16, {8, 16, 3, 3})};
  Node inner = ConcatOf({"e2", "sz"}, "cat");
  inner.name = "inner";
  Node outer = ConcatOf({"e1", "sv"}, "out");
  outer.name = "outer";
  m.graph.nodes = {Conv("x", "w0", "e1"), Conv("e1", "w1", "e2", 2), MakeNode("Sin", {"z"}, {"sz"}, "sin_z"),
                   MakeNode("Sin", {"v"}, {"sv"}, "sin_v"), inner, Conv("cat", "w2", "y"), outer};
  std::unordered_map<std::string, TypeInfo> types;
  types["sz"] = TensorValue("sz", kF16, {1, 8, 4, 4}).type;
  types["sv"] = TensorValue("sv", kF16, {1, 8, 8, 8}).type;
  NhwcStats stats = Convert(m, {"Concat"}, types);
  EXPECT_EQ(stats.layout_ops, 1u);
  for (const Node& n : m.graph.nodes) {
    if (n.op_type == "Concat") {
      EXPECT_EQ(n.FindAttribute("axis")->i, n.name == "inner" ? 3 : 1) << n.name;
    }
  }
  size_t sz_in = 0, sv_in = 0;
  for (const Node& n : m.graph.nodes) {
    if (n.op_type != "Transpose") continue;
    sz_in += n.inputs[0] == "sz" && n.FindAttribute("perm")->ints == kToNhwc;
    sv_in += n.inputs[0] == "sv";
  }
  EXPECT_EQ(sz_in, 1u);
  EXPECT_EQ(sv_in, 0u);
  // In: x and sz; out: e1 for the outer Concat, and y.
  EXPECT_EQ(CountTransposes(m, kToNhwc), 2u);
  EXPECT_EQ(CountTransposes(m, kToNchw), 2u);
}

}  // namespace
}  // namespace vigil::ir
