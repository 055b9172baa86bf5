// TfIdfVectorizer against a brute-force count written from the spec (every
// pooled n-gram, at every skip distance and start, unigrams at distance 1
// only), on odd sizes, every mode with and without weights, int32 and int64
// inputs, plus its error paths and shape inference.
#include <string>
#include <vector>

#include "backends/cpu/elementwise_test_util.h"

namespace vigil::cpu::testing {
namespace {

using Shape = std::vector<int64_t>;

struct Pool {
  std::vector<int64_t> values;         // pool_int64s
  std::vector<int64_t> counts;         // ngram_counts
  std::vector<int64_t> indexes;        // ngram_indexes
  std::vector<std::vector<int64_t>> grams;  // the n-grams, in pool order
};

// Unigrams {0, 2, 5}, bigrams (0,1) (2,2) (5,3) (1,0), trigrams (0,1,2)
// (3,3,3); columns with a gap (5 is never written).
Pool TestPool() {
  Pool p;
  p.grams = {{0}, {2}, {5}, {0, 1}, {2, 2}, {5, 3}, {1, 0}, {0, 1, 2}, {3, 3, 3}};
  for (const auto& g : p.grams) p.values.insert(p.values.end(), g.begin(), g.end());
  p.counts = {0, 3, 11};
  p.indexes = {3, 0, 9, 1, 4, 7, 2, 8, 6};
  return p;
}

struct Config {
  int64_t min_gram, max_gram, max_skip;
  std::string mode;
  std::vector<float> weights;
};

ir::Node TfIdfNode(const Pool& p, const Config& c) {
  std::vector<ir::Attribute> attrs = {IntAttr("min_gram_length", c.min_gram), IntAttr("max_gram_length", c.max_gram),
                                      IntAttr("max_skip_count", c.max_skip),  StringAttr("mode", c.mode),
                                      IntsAttr("pool_int64s", p.values),      IntsAttr("ngram_counts", p.counts),
                                      IntsAttr("ngram_indexes", p.indexes)};
  if (!c.weights.empty()) attrs.push_back(FloatsAttr("weights", c.weights));
  return MakeNode("TfIdfVectorizer", {"x"}, {"y"}, attrs);
}

std::vector<double> Reference(const Pool& p, const Config& c, const std::vector<double>& x, int64_t rows, int64_t cols,
                              int64_t out_size) {
  std::vector<double> y;
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<double> f(out_size, 0);
    for (size_t g = 0; g < p.grams.size(); ++g) {
      const auto& gram = p.grams[g];
      const int64_t n = static_cast<int64_t>(gram.size());
      if (n < c.min_gram || n > c.max_gram) continue;
      for (int64_t s = 1; s <= (n == 1 ? 1 : c.max_skip + 1); ++s) {
        for (int64_t start = 0; start + (n - 1) * s < cols; ++start) {
          bool match = true;
          for (int64_t k = 0; k < n; ++k) match = match && x[r * cols + start + k * s] == gram[k];
          if (match) f[p.indexes[g]] += 1;
        }
      }
    }
    for (int64_t i = 0; i < out_size; ++i) {
      const double w = c.weights.empty() ? 1.0 : c.weights[i];
      if (c.mode == "TF") y.push_back(f[i]);
      if (c.mode == "IDF") y.push_back(f[i] > 0 ? w : 0);
      if (c.mode == "TFIDF") y.push_back(w * f[i]);
    }
  }
  return y;
}

TEST(TfIdfVectorizerKernel, AgainstBruteForceCounts) {
  const Pool pool = TestPool();
  const std::vector<float> weights = {0.5f, 1.5f, 2.0f, 0.25f, 3.0f, 9.0f, 1.0f, 0.75f, 4.0f, 2.5f};
  std::vector<Config> configs;
  for (std::string mode : {"TF", "IDF", "TFIDF"}) {
    for (const auto& w : {std::vector<float>{}, weights}) {
      configs.push_back({1, 3, 0, mode, w});
      configs.push_back({2, 3, 4, mode, w});
      configs.push_back({1, 1, 3, mode, w});
      configs.push_back({1, 2, 2, mode, w});
      configs.push_back({3, 3, 2, mode, w});
    }
  }
  for (const Config& c : configs) {
    for (DataType dt : {DataType::kInt32, DataType::kInt64}) {
      for (const Shape& shape : {Shape{13, 127}, Shape{127}, Shape{3, 2}, Shape{2, 0}}) {
        SCOPED_TRACE(c.mode + (c.weights.empty() ? "" : " weighted") + " grams " + std::to_string(c.min_gram) + ".." +
                     std::to_string(c.max_gram) + " skip " + std::to_string(c.max_skip) + " " + DtypeName(dt) + " " +
                     ShapeString(shape));
        const std::vector<double> x = RandomValues(static_cast<size_t>(Product(shape)), 0, 6, 29, true);
        runtime::Tensor xt = TensorOf(dt, shape, x);
        const int64_t rows = shape.size() == 2 ? shape[0] : 1, cols = shape.back();
        const std::vector<double> want = Reference(pool, c, x, rows, cols, 10);
        auto out = RunOk(TfIdfNode(pool, c), 9, {&xt});
        ASSERT_EQ(out.size(), 1u);
        EXPECT_EQ(out[0].dtype(), DataType::kFloat32);
        EXPECT_EQ(out[0].shape(), shape.size() == 2 ? Shape({rows, 10}) : Shape{10});
        ExpectNear(DoublesOf(out[0]), want, {0, 1e-7}, "Y");
      }
    }
  }
}

TEST(TfIdfVectorizerKernel, SpecExampleOnlyBigrams) {
  Pool p;
  p.values = {2, 3, 5, 4, 5, 6, 7, 8, 6, 7};
  p.counts = {0, 4};
  p.indexes = {0, 1, 2, 3, 4, 5, 6};
  runtime::Tensor x = MakeTensor<int32_t>(DataType::kInt32, {12}, {1, 1, 3, 3, 3, 7, 8, 6, 7, 5, 6, 8});
  auto skip0 = RunOk(TfIdfNode(p, {2, 2, 0, "TF", {}}), 9, {&x});
  ASSERT_EQ(skip0.size(), 1u);
  EXPECT_EQ(Values<float>(skip0[0]), (std::vector<float>{0, 0, 0, 0, 1, 1, 1}));
  auto skip5 = RunOk(TfIdfNode(p, {2, 2, 5, "TF", {}}), 9, {&x});
  ASSERT_EQ(skip5.size(), 1u);
  EXPECT_EQ(Values<float>(skip5[0]), (std::vector<float>{0, 0, 0, 0, 1, 3, 1}));
}

TEST(TfIdfVectorizerKernel, RepeatedNgramKeepsItsLastColumn) {
  Pool p;
  p.values = {4, 4, 7};
  p.counts = {0};
  p.indexes = {0, 1, 2};
  runtime::Tensor x = I64({4}, {4, 7, 4, 1});
  auto out = RunOk(TfIdfNode(p, {1, 1, 0, "TF", {}}), 9, {&x});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(Values<float>(out[0]), (std::vector<float>{0, 2, 1}));
}

TEST(TfIdfVectorizerKernel, Errors) {
  const Pool pool = TestPool();
  runtime::Tensor x = I64({2, 3}, {0, 1, 2, 3, 4, 5});
  ExpectRunFails(TfIdfNode(pool, {1, 3, 0, "BM25", {}}), 9, {&x}, "mode is 'BM25'");
  ExpectRunFails(TfIdfNode(pool, {3, 2, 0, "TF", {}}), 9, {&x}, "min_gram_length 3 and max_gram_length 2");
  ExpectRunFails(TfIdfNode(pool, {0, 2, 0, "TF", {}}), 9, {&x}, "min_gram_length 0");
  ExpectRunFails(TfIdfNode(pool, {1, 2, -1, "TF", {}}), 9, {&x}, "max_skip_count is -1");
  ExpectRunFails(TfIdfNode(pool, {1, 3, 0, "TFIDF", {1.0f, 2.0f}}), 9, {&x}, "weights has 2 entries");
  Pool short_indexes = pool;
  short_indexes.indexes.pop_back();
  ExpectRunFails(TfIdfNode(short_indexes, {1, 3, 0, "TF", {}}), 9, {&x}, "ngram_indexes has 8 entries");
  Pool negative = pool;
  negative.indexes[2] = -1;
  ExpectRunFails(TfIdfNode(negative, {1, 3, 0, "TF", {}}), 9, {&x}, "ngram_indexes[2] is -1");
  Pool bad_counts = pool;
  bad_counts.counts = {0, 18};
  ExpectRunFails(TfIdfNode(bad_counts, {1, 3, 0, "TF", {}}), 9, {&x}, "ngram_counts[1] is 18");
  Pool ragged = pool;
  ragged.counts = {0, 4};  // 7 values of bigrams
  ExpectRunFails(TfIdfNode(ragged, {1, 3, 0, "TF", {}}), 9, {&x}, "not a whole number of 2-grams");
  runtime::Tensor rank3 = I64({1, 2, 3}, {0, 1, 2, 3, 4, 5});
  ExpectRunFails(TfIdfNode(pool, {1, 3, 0, "TF", {}}), 9, {&rank3}, "expected rank 1");
  runtime::Tensor floats = F32({3}, {0, 1, 2});
  ExpectRunFails(TfIdfNode(pool, {1, 3, 0, "TF", {}}), 9, {&floats}, "float32");
  ir::Node strings = TfIdfNode(pool, {1, 3, 0, "TF", {}});
  ir::Attribute s;
  s.name = "pool_strings";
  s.type = ir::AttributeType::kStrings;
  s.strings = {"a"};
  strings.attributes.push_back(s);
  ExpectRunFails(strings, 9, {&x}, "pool_strings");
}

TEST(TfIdfVectorizerInfer, Shapes) {
  const Pool pool = TestPool();
  const ir::Node node = TfIdfNode(pool, {1, 3, 0, "TF", {}});
  ir::TypeInfo x2 = ops::TensorType(DataType::kInt64, std::vector<ir::Dim>{ir::Dim::Symbolic("n"), ir::Dim::Known(9)});
  auto r = InferNode(node, 9, {&x2});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)[0].elem_type, DataType::kFloat32);
  ASSERT_EQ((*r)[0].shape.dims.size(), 2u);
  EXPECT_EQ((*r)[0].shape.dims[0].param, "n");
  EXPECT_EQ((*r)[0].shape.dims[1].value, 10);
  ir::TypeInfo x1 = ops::TensorType(DataType::kInt32, std::vector<ir::Dim>{ir::Dim::Known(9)});
  auto r1 = InferNode(node, 9, {&x1});
  ASSERT_TRUE(r1.ok()) << r1.status().ToString();
  ASSERT_EQ((*r1)[0].shape.dims.size(), 1u);
  EXPECT_EQ((*r1)[0].shape.dims[0].value, 10);
  ir::TypeInfo f = ops::TensorType(DataType::kFloat32, std::vector<ir::Dim>{ir::Dim::Known(9)});
  auto e = InferNode(node, 9, {&f});
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().summary().find("node TfIdfVectorizer"), std::string::npos) << e.status().summary();
}

}  // namespace
}  // namespace vigil::cpu::testing
