// The ai.onnx.ml ops (backends/cpu/classic_ml.cpp): TreeEnsemble against a
// recursive evaluation written here from the spec, on random forests over 13
// features with every branch mode, NaN inputs and every aggregate function and
// post transform; hand-checked cases (a one-leaf tree, NaN routing, MIN with a
// target no leaf reaches); the attribute checks (a cycle, an index out of
// range, missing membership sets); ArrayFeatureExtractor and Binarizer.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "backends/cpu/elementwise_test_util.h"

namespace vigil::cpu::testing {
namespace {

using ir::DataType;

ir::Node MlNode(std::string op, std::vector<std::string> in, std::vector<std::string> out,
                std::vector<ir::Attribute> attrs = {}) {
  ir::Node n = MakeNode(std::move(op), std::move(in), std::move(out), std::move(attrs));
  n.domain = "ai.onnx.ml";
  return n;
}

ir::Attribute TensorAttribute(std::string name, const runtime::Tensor& t) {
  ir::Attribute a;
  a.name = std::move(name);
  a.type = ir::AttributeType::kTensor;
  a.t = t.AsConstant(a.name);
  return a;
}

runtime::Tensor Floats(DataType dtype, const std::vector<double>& v) {
  const int64_t n = static_cast<int64_t>(v.size());
  if (dtype == DataType::kFloat64) return MakeTensor(dtype, {n}, v);
  return MakeTensor(dtype, {n}, std::vector<float>(v.begin(), v.end()));
}

std::vector<double> AsDoubles(const runtime::Tensor& t) {
  std::vector<double> out;
  if (t.dtype() == DataType::kFloat64) return Values<double>(t);
  for (float f : Values<float>(t)) out.push_back(f);
  return out;
}

// A forest in TreeEnsemble's encoding, with the structure kept for the
// reference evaluation.
struct Forest {
  std::vector<uint8_t> modes;
  std::vector<int64_t> features, true_ids, false_ids, true_leafs, false_leafs, missing;
  std::vector<double> splits;
  std::vector<std::vector<double>> sets;  // per node (empty unless BRANCH_MEMBER)
  std::vector<double> weights;
  std::vector<int64_t> targets, roots;
  int64_t n_targets = 3;

  ir::Node Node(DataType dtype, int64_t aggregate, int64_t post) const {
    std::vector<double> membership;
    for (size_t i = 0; i < modes.size(); ++i) {
      if (modes[i] != 6) continue;
      membership.insert(membership.end(), sets[i].begin(), sets[i].end());
      membership.push_back(std::numeric_limits<double>::quiet_NaN());
    }
    std::vector<ir::Attribute> attrs = {
        IntAttr("aggregate_function", aggregate),
        IntAttr("post_transform", post),
        IntsAttr("tree_roots", roots),
        TensorAttribute("nodes_modes", MakeTensor(DataType::kUint8, {static_cast<int64_t>(modes.size())}, modes)),
        IntsAttr("nodes_featureids", features),
        TensorAttribute("nodes_splits", Floats(dtype, splits)),
        IntsAttr("nodes_truenodeids", true_ids),
        IntsAttr("nodes_falsenodeids", false_ids),
        IntsAttr("nodes_trueleafs", true_leafs),
        IntsAttr("nodes_falseleafs", false_leafs),
        IntsAttr("nodes_missing_value_tracks_true", missing),
        TensorAttribute("leaf_weights", Floats(dtype, weights)),
        IntsAttr("leaf_targetids", targets),
        IntAttr("n_targets", n_targets)};
    if (!membership.empty()) attrs.push_back(TensorAttribute("membership_values", Floats(dtype, membership)));
    return MlNode("TreeEnsemble", {"x"}, {"y"}, attrs);
  }

  // Recursive walk, straight from the spec's wording.
  int64_t Leaf(int64_t node, bool is_leaf, const double* x) const {
    if (is_leaf) return node;
    const size_t i = static_cast<size_t>(node);
    const double v = x[features[i]];
    bool go_true;
    if (std::isnan(v) && missing[i]) {
      go_true = true;
    } else if (modes[i] == 6) {
      go_true = std::find(sets[i].begin(), sets[i].end(), v) != sets[i].end();
    } else {
      const double s = splits[i];
      const bool results[] = {v <= s, v < s, v >= s, v > s, v == s, v != s};
      go_true = results[modes[i]];
    }
    return go_true ? Leaf(true_ids[i], true_leafs[i] != 0, x) : Leaf(false_ids[i], false_leafs[i] != 0, x);
  }
};

// Random trees of up to depth 4, interior nodes numbered in creation order.
// Splits and set members are drawn from a small grid that the inputs also
// use, so that equality, membership and ties at the split are exercised.
Forest RandomForest(std::mt19937& rng, int trees, int features) {
  Forest f;
  std::uniform_int_distribution<int> mode(0, 6), feature(0, features - 1), coin(0, 1), grid(-4, 4);
  std::uniform_real_distribution<double> weight(-2.0, 2.0);
  auto add_leaf = [&]() {
    f.weights.push_back(std::round(weight(rng) * 64) / 64);  // exact in float16 too
    f.targets.push_back(static_cast<int64_t>(f.weights.size()) % f.n_targets);
    return static_cast<int64_t>(f.weights.size()) - 1;
  };
  // Returns (index, is_leaf).
  std::function<std::pair<int64_t, bool>(int)> grow = [&](int depth) -> std::pair<int64_t, bool> {
    if (depth == 4 || (depth > 1 && coin(rng) && coin(rng))) return {add_leaf(), true};
    const int64_t id = static_cast<int64_t>(f.modes.size());
    f.modes.push_back(static_cast<uint8_t>(mode(rng)));
    f.features.push_back(feature(rng));
    f.splits.push_back(grid(rng) * 0.5);
    f.missing.push_back(coin(rng));
    std::vector<double> set;
    if (f.modes.back() == 6) {
      for (int k = 0; k < 3; ++k) set.push_back(grid(rng) * 0.5);
    }
    f.sets.push_back(set);
    for (auto* v : {&f.true_ids, &f.false_ids, &f.true_leafs, &f.false_leafs}) v->push_back(0);
    auto [t, tl] = grow(depth + 1);
    auto [e, el] = grow(depth + 1);
    f.true_ids[id] = t;
    f.true_leafs[id] = tl;
    f.false_ids[id] = e;
    f.false_leafs[id] = el;
    return {id, false};
  };
  for (int t = 0; t < trees; ++t) f.roots.push_back(grow(0).first);
  return f;
}

std::vector<double> ReferenceEnsemble(const Forest& f, const std::vector<double>& x, int64_t rows, int64_t cols,
                                      int64_t aggregate, int64_t post, double largest) {
  std::vector<double> out;
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<double> s(f.n_targets, aggregate == 2 ? largest : aggregate == 3 ? -largest : 0.0);
    for (int64_t root : f.roots) {
      const int64_t leaf = f.Leaf(root, false, x.data() + r * cols);
      double& t = s[f.targets[leaf]];
      const double w = f.weights[leaf];
      if (aggregate == 0) t += w / static_cast<double>(f.roots.size());
      if (aggregate == 1) t += w;
      if (aggregate == 2) t = std::min(t, w);
      if (aggregate == 3) t = std::max(t, w);
    }
    if (post == 1) {  // softmax
      const double m = *std::max_element(s.begin(), s.end());
      double sum = 0;
      for (double v : s) sum += std::exp(v - m);
      for (double& v : s) v = std::exp(v - m) / sum;
    } else if (post == 2) {  // logistic
      for (double& v : s) v = 1.0 / (1.0 + std::exp(-v));
    }
    out.insert(out.end(), s.begin(), s.end());
  }
  return out;
}

TEST(TreeEnsembleKernel, RandomForestsAgainstRecursiveWalk) {
  std::mt19937 rng(13);
  const int64_t rows = 127, cols = 13;
  const Forest f = RandomForest(rng, 5, static_cast<int>(cols));
  ASSERT_GT(std::count(f.modes.begin(), f.modes.end(), 6), 0) << "the forest should have a BRANCH_MEMBER node";
  std::uniform_int_distribution<int> grid(-5, 5), one_in(0, 9);
  std::vector<double> x(static_cast<size_t>(rows * cols));
  for (double& v : x) v = one_in(rng) == 0 ? std::numeric_limits<double>::quiet_NaN() : grid(rng) * 0.5;
  for (DataType dtype : {DataType::kFloat32, DataType::kFloat64}) {
    const runtime::Tensor input = dtype == DataType::kFloat64
                                      ? MakeTensor(dtype, {rows, cols}, x)
                                      : MakeTensor(dtype, {rows, cols}, std::vector<float>(x.begin(), x.end()));
    const double largest = dtype == DataType::kFloat64 ? std::numeric_limits<double>::max()
                                                       : std::numeric_limits<float>::max();
    for (int64_t aggregate = 0; aggregate <= 3; ++aggregate) {
      for (int64_t post : {0, 1, 2}) {
        SCOPED_TRACE(DtypeName(dtype) + " aggregate " + std::to_string(aggregate) + " post " + std::to_string(post));
        auto out = RunOk(f.Node(dtype, aggregate, post), 5, {&input});
        ASSERT_EQ(out.size(), 1u);
        EXPECT_EQ(out[0].shape(), (std::vector<int64_t>{rows, f.n_targets}));
        const std::vector<double> want = ReferenceEnsemble(f, x, rows, cols, aggregate, post, largest);
        const std::vector<double> got = AsDoubles(out[0]);
        ASSERT_EQ(got.size(), want.size());
        for (size_t i = 0; i < got.size(); ++i) {
          // The kernel computes in double and rounds once. The reference's
          // logistic, 1 / (1 + exp(-v)), is the same function as the
          // kernel's 1 - 1 / (1 + exp(-|v|)) for v < 0, up to rounding.
          const double rel = dtype == DataType::kFloat32 ? 1e-7 : post == 2 ? 1e-12 : 1e-15;
          ASSERT_NEAR(got[i], want[i], std::fabs(want[i]) * rel) << "element " << i;
        }
      }
    }
  }
}

// One tree: node 0 (feature 0 <= 1, NaN to false) -> node 1 or leaf 2;
// node 1 (feature 1 != 2, NaN to false by default) -> leaf 0 or leaf 1.
// A second tree is a single leaf (3, target 2).
Forest HandForest() {
  Forest f;
  f.modes = {0, 5, 0};
  f.features = {0, 1, 0};
  f.splits = {1.0, 2.0, 0.0};
  f.sets = {{}, {}, {}};
  f.true_ids = {1, 0, 3};
  f.false_ids = {2, 1, 3};
  f.true_leafs = {0, 1, 1};
  f.false_leafs = {1, 1, 1};
  f.missing = {0, 0, 0};
  f.weights = {10, 20, 30, 0.5};
  f.targets = {0, 1, 1, 2};
  f.roots = {0, 2};
  f.n_targets = 4;  // target 3 is never reached
  return f;
}

TEST(TreeEnsembleKernel, HandCheckedRouting) {
  const Forest f = HandForest();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  // Rows: (1, 5) -> node 1, 5 != 2 -> leaf 0; (1, 2) -> leaf 1; (3, 0) -> leaf 2;
  // (NaN, 0) -> NaN <= 1 is false -> leaf 2; (0, NaN) -> NaN != 2 holds -> leaf 0.
  const auto x = MakeTensor(DataType::kFloat64, {5, 2}, std::vector<double>{1, 5, 1, 2, 3, 0, nan, 0, 0, nan});
  auto sum = RunOk(f.Node(DataType::kFloat64, 1, 0), 5, {&x});
  ASSERT_EQ(sum.size(), 1u);
  EXPECT_EQ(Values<double>(sum[0]), (std::vector<double>{10, 0, 0.5, 0,  0, 20, 0.5, 0,  0, 30, 0.5, 0,
                                                          0, 30, 0.5, 0,  10, 0, 0.5, 0}));
  // MIN: a target no leaf reaches keeps the largest finite double.
  auto min = RunOk(f.Node(DataType::kFloat64, 2, 0), 5, {&x});
  ASSERT_EQ(min.size(), 1u);
  const double big = std::numeric_limits<double>::max();
  EXPECT_EQ(Values<double>(min[0])[0], 10);
  EXPECT_EQ(Values<double>(min[0])[1], big);
  EXPECT_EQ(Values<double>(min[0])[3], big);
  // With NaN sent to the true branch at node 0, (NaN, 0) goes to node 1: 0 != 2 -> leaf 0.
  Forest g = f;
  g.missing = {1, 0, 0};
  auto routed = RunOk(g.Node(DataType::kFloat64, 1, 0), 5, {&x});
  ASSERT_EQ(routed.size(), 1u);
  EXPECT_EQ(Values<double>(routed[0])[12], 10);
  // SOFTMAX_ZERO leaves zero scores at exp(-max) * 0 = 0; PROBIT(0.5) is 0.
  auto softmax_zero = RunOk(f.Node(DataType::kFloat64, 1, 3), 5, {&x});
  ASSERT_EQ(softmax_zero.size(), 1u);
  const std::vector<double> sz = Values<double>(softmax_zero[0]);
  const double e0 = std::exp(10.0 - 10.0), e2 = std::exp(0.5 - 10.0);
  EXPECT_DOUBLE_EQ(sz[0], e0 / (e0 + e2));
  EXPECT_EQ(sz[1], 0.0);
  EXPECT_DOUBLE_EQ(sz[2], e2 / (e0 + e2));
}

TEST(TreeEnsembleKernel, AttributeErrorsNameTheProblem) {
  const auto x = MakeTensor(DataType::kFloat32, {1, 2}, std::vector<float>{0, 0});
  Forest cycle = HandForest();
  cycle.true_leafs[1] = 0;  // node 1's true branch back to node 0
  ExpectRunFails(cycle.Node(DataType::kFloat32, 1, 0), 5, {&x}, "a cycle");
  Forest out_of_range = HandForest();
  out_of_range.false_ids[0] = 7;
  ExpectRunFails(out_of_range.Node(DataType::kFloat32, 1, 0), 5, {&x}, "nodes_falsenodeids[0] is 7");
  Forest target = HandForest();
  target.n_targets = 2;
  ExpectRunFails(target.Node(DataType::kFloat32, 1, 0), 5, {&x}, "n_targets is 2");
  Forest member = HandForest();
  member.modes[1] = 6;  // a BRANCH_MEMBER node, then no membership_values at all
  ir::Node no_sets = member.Node(DataType::kFloat32, 1, 0);
  std::erase_if(no_sets.attributes, [](const ir::Attribute& a) { return a.name == "membership_values"; });
  ExpectRunFails(no_sets, 5, {&x}, "no NaN-terminated set for node 1");
  // X narrower than the features read; X of another dtype than the splits.
  const auto narrow = MakeTensor(DataType::kFloat32, {1, 1}, std::vector<float>{0});
  ExpectRunFails(HandForest().Node(DataType::kFloat32, 1, 0), 5, {&narrow}, "read feature 1");
  ExpectRunFails(HandForest().Node(DataType::kFloat64, 1, 0), 5, {&x}, "nodes_splits");
}

TEST(TreeEnsembleKernel, ShapeInference) {
  const Forest f = HandForest();
  ir::TypeInfo x;
  x.kind = ir::TypeInfo::Kind::kTensor;
  x.elem_type = DataType::kFloat32;
  x.shape.rank_known = true;
  x.shape.dims = {ir::Dim::Symbolic("n"), ir::Dim::Known(2)};
  auto types = InferNode(f.Node(DataType::kFloat32, 1, 0), 5, {&x});
  ASSERT_TRUE(types.ok()) << types.status().ToString();
  ASSERT_EQ(types->size(), 1u);
  ASSERT_EQ((*types)[0].shape.dims.size(), 2u);
  EXPECT_EQ((*types)[0].shape.dims[0].param, "n");
  EXPECT_EQ((*types)[0].shape.dims[1].value.value_or(-1), 4);
}

// ---------------------------------------------------------------- ArrayFeatureExtractor

TEST(ArrayFeatureExtractorKernel, GathersTheLastAxis) {
  const int64_t a = 2, b = 3, c = 13;
  std::vector<float> xv(static_cast<size_t>(a * b * c));
  for (size_t i = 0; i < xv.size(); ++i) xv[i] = static_cast<float>(i) * 0.5f - 7.0f;
  const auto x = F32({a, b, c}, xv);
  const std::vector<int64_t> idx = {12, 0, 5, 5};
  const auto y = I64({2, 2}, idx);  // any shape of indices, taken flat
  auto out = RunOk(MlNode("ArrayFeatureExtractor", {"x", "y"}, {"z"}), 1, {&x, &y});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].shape(), (std::vector<int64_t>{a, b, 4}));
  const std::vector<float> got = Values<float>(out[0]);
  for (int64_t r = 0; r < a * b; ++r) {
    for (size_t k = 0; k < idx.size(); ++k) EXPECT_EQ(got[r * 4 + k], xv[r * c + idx[k]]);
  }
  // A 1-D X gives one row, as onnxruntime does.
  const auto v = MakeTensor(DataType::kInt64, {5}, std::vector<int64_t>{9, 8, 7, 6, 5});
  const auto one = I64({1}, {3});
  auto row = RunOk(MlNode("ArrayFeatureExtractor", {"x", "y"}, {"z"}), 1, {&v, &one});
  ASSERT_EQ(row.size(), 1u);
  EXPECT_EQ(row[0].shape(), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(Values<int64_t>(row[0]), std::vector<int64_t>{6});
  const auto bad = I64({2}, {1, 13});
  ExpectRunFails(MlNode("ArrayFeatureExtractor", {"x", "y"}, {"z"}), 1, {&x, &bad}, "input Y[1] is 13");
}

// ---------------------------------------------------------------- Binarizer

TEST(BinarizerKernel, GreaterThanThresholdEveryDtype) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const auto x = F32({7}, {-1.0f, 0.5f, 0.50001f, 2.0f, nan, 0.0f, 1e30f});
  auto out = RunOk(MlNode("Binarizer", {"x"}, {"y"}, {FloatAttr("threshold", 0.5f)}), 1, {&x});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(Values<float>(out[0]), (std::vector<float>{0, 0, 1, 1, 0, 0, 1}));
  const auto i = MakeTensor(DataType::kInt32, {4}, std::vector<int32_t>{-3, 0, 1, 2});
  auto ints = RunOk(MlNode("Binarizer", {"x"}, {"y"}, {FloatAttr("threshold", 0.5f)}), 1, {&i});
  ASSERT_EQ(ints.size(), 1u);
  EXPECT_EQ(Values<int32_t>(ints[0]), (std::vector<int32_t>{0, 0, 1, 1}));
  const auto h = MakeTensor(DataType::kFloat16, {1}, std::vector<uint16_t>{0});
  ExpectRunFails(MlNode("Binarizer", {"x"}, {"y"}), 1, {&h}, "float16");
}

}  // namespace
}  // namespace vigil::cpu::testing
