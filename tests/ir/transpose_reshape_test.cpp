// The Transpose -> Reshape -> Transpose cancellation (ir/transpose_reshape.h):
// which chains it takes and leaves, and that every rewritten graph gives
// bitwise the same outputs as the original on the CPU backend (odd sizes:
// N=2, H=3, W=5, C=7).
#include "ir/transpose_reshape.h"

#include <cstring>
#include <random>

#include <gtest/gtest.h>

#include "backends/cpu/cpu_backend.h"
#include "ir/validate.h"
#include "runtime/session.h"
#include "graph_builder.h"

namespace vigil::ir {
namespace {

using namespace vigil::ir::testing;

Node Transpose(std::string in, std::string out, std::vector<int64_t> perm, std::string name) {
  Node n = MakeNode("Transpose", {std::move(in)}, {std::move(out)}, std::move(name));
  n.attributes.push_back(IntsAttr("perm", std::move(perm)));
  return n;
}

Tensor Shape64(std::string name, std::vector<int64_t> v) {
  const int64_t n = static_cast<int64_t>(v.size());
  return OwnedInitializer<int64_t>(std::move(name), DataType::kInt64, {n}, std::move(v));
}

// x [2,3,5,7] (NHWC) -> Transpose(0,3,1,2) [2,7,3,5] -> Reshape [2,7,15]
// -> Transpose(p2) -> y, as the ViT patch embedding after the layout pass.
Model PatchChain(std::vector<int64_t> p2, std::vector<int64_t> y_dims) {
  Model m;
  m.ir_version = 8;
  m.opset_imports = {{"", 17}};
  m.graph.name = "patch";
  m.graph.inputs = {TensorValue("x", DataType::kFloat32, {2, 3, 5, 7})};
  m.graph.outputs = {TensorValue("y", DataType::kFloat32, std::move(y_dims))};
  m.graph.initializers = {Shape64("target", {2, 7, 15})};
  m.graph.nodes = {Transpose("x", "a", {0, 3, 1, 2}, "patch_embed/to_nchw"),
                   MakeNode("Reshape", {"a", "target"}, {"r"}, "flatten"), Transpose("r", "y", std::move(p2), "swap")};
  return m;
}

// The same with a symbolic batch and the target computed the way torch.onnx
// writes it: Concat(Unsqueeze(Gather(Shape(x), 0)), [7], [15]).
Model SymbolicPatchChain() {
  Model m = PatchChain({0, 2, 1}, {2, 15, 7});
  m.graph.inputs[0].type.shape.dims[0] = Dim::Symbolic("N");
  m.graph.outputs[0].type.shape.dims[0] = Dim::Symbolic("N");
  m.graph.initializers = {Shape64("zero", {0}), Shape64("seven", {7}), Shape64("fifteen", {15}),
                          OwnedInitializer<int64_t>("index0", DataType::kInt64, {}, {0})};
  std::vector<Node> arithmetic = {MakeNode("Shape", {"x"}, {"shape"}, "shape"),
                                  MakeNode("Gather", {"shape", "index0"}, {"n"}, "gather"),
                                  MakeNode("Unsqueeze", {"n", "zero"}, {"n1"}, "unsqueeze"),
                                  MakeNode("Concat", {"n1", "seven", "fifteen"}, {"target"}, "concat")};
  arithmetic[3].attributes.push_back(IntAttr("axis", 0));
  m.graph.nodes.insert(m.graph.nodes.begin(), arithmetic.begin(), arithmetic.end());
  return m;
}

// x's values, fixed pseudo-random.
std::vector<float> Input(size_t n) {
  std::vector<float> v(n);
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1, 1);
  for (float& f : v) f = u(rng);
  return v;
}

// The bytes of every output of `m` on the CPU backend, x [2,3,5,7].
std::vector<std::vector<uint8_t>> RunCpu(const Model& m) {
  runtime::SessionOptions o;
  o.backends.push_back(cpu::MakeCpuBackend());
  auto s = runtime::Session::Create(m, std::move(o));
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  if (!s.ok()) return {};
  std::vector<float> x = Input(2 * 3 * 5 * 7);
  auto out = (*s)->Run({{"x", DataType::kFloat32, {2, 3, 5, 7}, x.data(), x.size() * 4, ""}});
  EXPECT_TRUE(out.ok()) << out.status().ToString();
  if (!out.ok()) return {};
  std::vector<std::vector<uint8_t>> bytes;
  for (const auto& t : *out) {
    const auto* p = static_cast<const uint8_t*>(t.tensor.raw_data());
    bytes.emplace_back(p, p + t.tensor.byte_size());
  }
  return bytes;
}

// Applies the pass to a copy of `m`; returns the copy and the count.
std::pair<Model, size_t> Cancelled(const Model& m) {
  Model out = m;
  std::unordered_map<std::string, TypeInfo> types = InputTypes(out);
  auto n = CancelTransposeReshape(out, types);
  EXPECT_TRUE(n.ok()) << n.status().ToString();
  EXPECT_TRUE(ValidateModel(out).ok());
  return {std::move(out), n.ok() ? *n : 0};
}

std::vector<int64_t> TargetOf(const Model& m, const Node& reshape) {
  for (const Tensor& t : m.graph.initializers) {
    if (t.name == reshape.inputs[1]) {
      const auto* p = reinterpret_cast<const int64_t*>(t.bytes.data());
      return std::vector<int64_t>(p, p + t.bytes.size() / 8);
    }
  }
  return {};
}

TEST(TransposeReshape, TheVitPatchChainBecomesOneReshape) {
  const Model before = PatchChain({0, 2, 1}, {2, 15, 7});
  auto [after, n] = Cancelled(before);
  EXPECT_EQ(n, 1u);
  ASSERT_EQ(after.graph.nodes.size(), 1u);
  const Node& r = after.graph.nodes[0];
  EXPECT_EQ(r.op_type, "Reshape");
  EXPECT_EQ(r.inputs[0], "x");
  EXPECT_EQ(r.outputs[0], "y");
  EXPECT_EQ(TargetOf(after, r), (std::vector<int64_t>{2, 15, 7}));
  // The old target is read by nothing now, and goes.
  EXPECT_EQ(after.graph.initializers.size(), 1u);
  const auto want = RunCpu(before), got = RunCpu(after);
  ASSERT_EQ(want.size(), 1u);
  EXPECT_EQ(got, want);
}

TEST(TransposeReshape, ASymbolicBatchUsesZeroAndDropsTheShapeArithmetic) {
  const Model before = SymbolicPatchChain();
  auto [after, n] = Cancelled(before);
  EXPECT_EQ(n, 1u);
  ASSERT_EQ(after.graph.nodes.size(), 1u);
  const Node& r = after.graph.nodes[0];
  EXPECT_EQ(r.op_type, "Reshape");
  EXPECT_EQ(TargetOf(after, r), (std::vector<int64_t>{0, 15, 7}));
  EXPECT_EQ(after.graph.initializers.size(), 1u);  // Shape, Gather, Unsqueeze, Concat and their constants went
  const auto want = RunCpu(before), got = RunCpu(after);
  ASSERT_EQ(want.size(), 1u);
  EXPECT_EQ(got, want);
}

TEST(TransposeReshape, AChainThatIsNoIdentityBecomesReshapeThenOneTranspose) {
  // [2,7,15] -> (1,0,2) -> [7,2,15]: x viewed as [2,15,7], then (2,0,1).
  const Model before = PatchChain({1, 0, 2}, {7, 2, 15});
  auto [after, n] = Cancelled(before);
  EXPECT_EQ(n, 1u);
  ASSERT_EQ(after.graph.nodes.size(), 2u);
  EXPECT_EQ(after.graph.nodes[0].op_type, "Reshape");
  EXPECT_EQ(after.graph.nodes[0].inputs[0], "x");
  EXPECT_EQ(TargetOf(after, after.graph.nodes[0]), (std::vector<int64_t>{2, 15, 7}));
  EXPECT_EQ(CountTransposes(after, {2, 0, 1}), 1u);
  EXPECT_EQ(after.graph.nodes[1].outputs[0], "y");
  const auto want = RunCpu(before), got = RunCpu(after);
  ASSERT_EQ(want.size(), 1u);
  EXPECT_EQ(got, want);
}

TEST(TransposeReshape, AReshapeThatMergesNonAdjacentInputDimsIsLeftAlone) {
  // [2,7,3,5] -> [14,15]: the first run is x's axes 0 and 3.
  Model m = PatchChain({1, 0}, {15, 14});
  m.graph.initializers = {Shape64("target", {14, 15})};
  EXPECT_EQ(Cancelled(m).second, 0u);
  // Transpose(0,2,1,3) [2,5,3,7] -> [2,15,7]: the run is x's axes 2, 1.
  Model swapped = PatchChain({0, 2, 1}, {2, 7, 15});
  swapped.graph.nodes[0] = Transpose("x", "a", {0, 2, 1, 3}, "t");
  swapped.graph.initializers = {Shape64("target", {2, 15, 7})};
  auto [after, n] = Cancelled(swapped);
  EXPECT_EQ(n, 0u);
  EXPECT_EQ(after.graph.nodes.size(), 3u);
  // A Reshape that splits: [2,7,3,5] -> [2,7,15] is fine, [2,7,5,3] is not a merge.
  Model split = PatchChain({0, 1, 3, 2}, {2, 7, 3, 5});
  split.graph.initializers = {Shape64("target", {2, 7, 5, 3})};
  EXPECT_EQ(Cancelled(split).second, 0u);
}

TEST(TransposeReshape, ValuesWithOtherReadersOrGraphOutputsAreLeftAlone) {
  Model shared = PatchChain({0, 2, 1}, {2, 15, 7});
  shared.graph.outputs.push_back(TensorValue("s", DataType::kFloat32, {2, 7, 15}));
  shared.graph.nodes.push_back(MakeNode("Relu", {"r"}, {"s"}, "other"));
  EXPECT_EQ(Cancelled(shared).second, 0u);

  Model read_twice = PatchChain({0, 2, 1}, {2, 15, 7});
  read_twice.graph.outputs.push_back(TensorValue("s", DataType::kFloat32, {2, 7, 3, 5}));
  read_twice.graph.nodes.push_back(MakeNode("Relu", {"a"}, {"s"}, "other"));
  EXPECT_EQ(Cancelled(read_twice).second, 0u);

  Model output = PatchChain({0, 2, 1}, {2, 15, 7});
  output.graph.outputs.push_back(TensorValue("r", DataType::kFloat32, {2, 7, 15}));
  EXPECT_EQ(Cancelled(output).second, 0u);
}

// x -> Transpose(p1) -> Transpose(p2) -> Relu -> y.
Model TransposePair(std::vector<int64_t> p1, std::vector<int64_t> p2, std::vector<int64_t> y_dims) {
  Model m = PatchChain({0}, std::move(y_dims));
  m.graph.initializers.clear();
  m.graph.nodes = {Transpose("x", "a", std::move(p1), "t1"), Transpose("a", "b", std::move(p2), "t2"),
                   MakeNode("Relu", {"b"}, {"y"}, "relu")};
  return m;
}

TEST(TransposeReshape, TwoTransposesThatUndoEachOtherDisappear) {
  const Model before = TransposePair({0, 2, 3, 1}, {0, 3, 1, 2}, {2, 3, 5, 7});
  auto [after, n] = Cancelled(before);
  EXPECT_EQ(n, 1u);
  ASSERT_EQ(after.graph.nodes.size(), 1u);
  EXPECT_EQ(after.graph.nodes[0].inputs[0], "x");
  EXPECT_EQ(RunCpu(after), RunCpu(before));
}

TEST(TransposeReshape, TwoTransposesComposeIntoOne) {
  // a = [2,7,3,5]; b = a(0,2,1,3) = [2,3,7,5] = x(0,1,3,2).
  const Model before = TransposePair({0, 3, 1, 2}, {0, 2, 1, 3}, {2, 3, 7, 5});
  auto [after, n] = Cancelled(before);
  EXPECT_EQ(n, 1u);
  ASSERT_EQ(after.graph.nodes.size(), 2u);
  EXPECT_EQ(CountTransposes(after, {0, 1, 3, 2}), 1u);
  EXPECT_EQ(RunCpu(after), RunCpu(before));
}

TEST(TransposeReshape, AnIdentityPairWritingAGraphOutputStays) {
  Model m = TransposePair({0, 2, 3, 1}, {0, 3, 1, 2}, {2, 3, 5, 7});
  m.graph.nodes.pop_back();
  m.graph.outputs[0].name = "b";
  EXPECT_EQ(Cancelled(m).second, 0u);
}

}  // namespace
}  // namespace vigil::ir
