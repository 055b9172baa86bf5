// Einsum: equation parsing, the CPU kernel against a brute-force float64 sum
// over every label assignment, and shape inference.
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "backends/cpu/elementwise_test_util.h"
#include "backends/cpu/kernel_test_util.h"
#include "ops/einsum_equation.h"

namespace vigil::cpu::testing {
namespace {

std::vector<int> L(const std::string& letters) { return std::vector<int>(letters.begin(), letters.end()); }
constexpr int E0 = ops::kEllipsisLabel;

TEST(EinsumEquation, ExpandsLabels) {
  auto eq = ops::ParseEinsumEquation("ab, bc");
  ASSERT_TRUE(eq.ok());
  std::vector<int64_t> ranks = {2, 2};
  auto l = ops::ExpandEinsumEquation(*eq, ranks);
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->output, L("ac"));

  // Implicit output: ellipsis dims first, then single letters in ASCII order
  // (upper case before lower case).
  eq = ops::ParseEinsumEquation("b...a,...B");
  ASSERT_TRUE(eq.ok());
  ranks = {4, 2};
  l = ops::ExpandEinsumEquation(*eq, ranks);
  ASSERT_TRUE(l.ok()) << l.status().ToString();
  EXPECT_EQ(l->ellipsis_rank, 2);
  EXPECT_EQ(l->inputs[0], (std::vector<int>{'b', E0, E0 + 1, 'a'}));
  EXPECT_EQ(l->inputs[1], (std::vector<int>{E0 + 1, 'B'}));  // right-aligned
  EXPECT_EQ(l->output, (std::vector<int>{E0, E0 + 1, 'B', 'a', 'b'}));

  eq = ops::ParseEinsumEquation("ii");  // a repeated letter is summed
  ranks = {2};
  l = ops::ExpandEinsumEquation(*eq, ranks);
  ASSERT_TRUE(l.ok());
  EXPECT_TRUE(l->output.empty());
}

TEST(EinsumEquation, RejectsMalformed) {
  for (const char* bad : {"i$j", "i..j", "i......", "ij->k-", "ij->ii", "ij,jk->ik,i", "i>j"}) {
    EXPECT_FALSE(ops::ParseEinsumEquation(bad).ok()) << bad;
  }
  std::vector<int64_t> rank1 = {1};
  EXPECT_FALSE(ops::ExpandEinsumEquation(*ops::ParseEinsumEquation("ij"), rank1).ok());  // rank
  EXPECT_FALSE(ops::ExpandEinsumEquation(*ops::ParseEinsumEquation("i,i"), rank1).ok());  // input count
  EXPECT_FALSE(ops::ExpandEinsumEquation(*ops::ParseEinsumEquation("i->j"), rank1).ok());  // unknown label
  std::vector<int64_t> rank3 = {3};
  EXPECT_FALSE(ops::ExpandEinsumEquation(*ops::ParseEinsumEquation("...i->i"), rank3).ok());
  EXPECT_TRUE(ops::ExpandEinsumEquation(*ops::ParseEinsumEquation("...i->i"), rank1).ok());  // empty ellipsis
}

// Brute force: every assignment of every label, the product of the operands'
// elements added into the output element. Size-1 dims broadcast.
std::vector<double> ReferenceEinsum(const std::string& text, const std::vector<std::vector<int64_t>>& shapes,
                                    const std::vector<std::vector<double>>& values, std::vector<int64_t>* out_shape) {
  std::vector<int64_t> ranks;
  for (const auto& s : shapes) ranks.push_back(static_cast<int64_t>(s.size()));
  ops::EinsumLabels labels = ops::ExpandEinsumEquation(ops::ParseEinsumEquation(text).value(), ranks).value();
  std::map<int, int64_t> size;
  for (size_t i = 0; i < shapes.size(); ++i) {
    for (size_t d = 0; d < shapes[i].size(); ++d) {
      int64_t& s = size.emplace(labels.inputs[i][d], 1).first->second;
      if (shapes[i][d] != 1) s = shapes[i][d];
    }
  }
  for (int label : labels.output) size.emplace(label, 1);
  std::vector<int> all;
  std::vector<int64_t> dims;
  for (const auto& [label, s] : size) {
    all.push_back(label);
    dims.push_back(s);
  }
  out_shape->clear();
  for (int label : labels.output) out_shape->push_back(size[label]);
  std::vector<double> out(Product(*out_shape), 0.0);
  if (Product(dims) == 0) return out;
  std::map<int, int64_t> index;
  std::vector<int64_t> counter(all.size(), 0);
  while (true) {
    for (size_t j = 0; j < all.size(); ++j) index[all[j]] = counter[j];
    double p = 1;
    for (size_t i = 0; i < shapes.size(); ++i) {
      int64_t offset = 0;
      for (size_t d = 0; d < shapes[i].size(); ++d) {
        offset = offset * shapes[i][d] + (shapes[i][d] == 1 ? 0 : index[labels.inputs[i][d]]);
      }
      p *= values[i][offset];
    }
    int64_t o = 0;
    for (size_t d = 0; d < labels.output.size(); ++d) o = o * (*out_shape)[d] + index[labels.output[d]];
    out[o] += p;
    size_t j = all.size();
    while (j-- > 0) {
      if (++counter[j] < dims[j]) break;
      counter[j] = 0;
    }
    if (j == static_cast<size_t>(-1)) break;
  }
  return out;
}

ir::Node EinsumNode(const std::string& eq, size_t inputs) {
  std::vector<std::string> names;
  for (size_t i = 0; i < inputs; ++i) names.push_back("x" + std::to_string(i));
  return MakeNode("Einsum", names, {"y"}, {StringAttr("equation", eq)});
}

void CheckEinsum(DataType d, const std::string& eq, const std::vector<std::vector<int64_t>>& shapes) {
  const std::string what = DtypeName(d) + " '" + eq + "'";
  std::vector<std::vector<double>> values;
  std::vector<runtime::Tensor> tensors;
  for (size_t i = 0; i < shapes.size(); ++i) {
    std::vector<double> v = IsFloat(d) ? RandomValues(Product(shapes[i]), -1, 1, 10 + i)
                                       : RandomValues(Product(shapes[i]), -4, 5, 10 + i, true);
    for (double& x : v) x = Quantize(d, x);
    values.push_back(v);
    tensors.push_back(TensorOf(d, shapes[i], v));
  }
  std::vector<const runtime::Tensor*> inputs;
  for (const auto& t : tensors) inputs.push_back(&t);
  std::vector<int64_t> want_shape;
  std::vector<double> want = ReferenceEinsum(eq, shapes, values, &want_shape);
  auto out = RunOk(EinsumNode(eq, shapes.size()), 12, inputs);
  ASSERT_EQ(out.size(), 1u) << what;
  EXPECT_EQ(out[0].dtype(), d) << what;
  EXPECT_EQ(out[0].shape(), want_shape) << what;
  Tolerance tol = ToleranceFor(d);
  if (d == DataType::kFloat32) tol = {1e-5, 1e-5};
  if (d == DataType::kFloat16) tol = {1e-2, 4e-3};
  ExpectNear(DoublesOf(out[0]), want, tol, what);
}

TEST(EinsumKernel, EquationsAgainstBruteForce) {
  const std::vector<std::pair<std::string, std::vector<std::vector<int64_t>>>> cases = {
      {"ij,jk->ik", {{3, 4}, {4, 5}}},
      {"ij,jk", {{3, 4}, {4, 5}}},
      {"bij,bjk->bik", {{2, 3, 4}, {2, 4, 5}}},
      {"bhqd,bhkd->bhqk", {{2, 3, 5, 4}, {2, 3, 6, 4}}},  // B used transposed in place
      {"bhqk,bhkd->bhqd", {{2, 3, 5, 6}, {2, 3, 6, 4}}},
      {"ki,kj->ij", {{4, 3}, {4, 5}}},                    // A used transposed in place
      {"ik,jk->ji", {{3, 4}, {5, 4}}},                    // result transposed
      {"ii->i", {{4, 4}}},                                // diagonal
      {"ii", {{4, 4}}},                                   // trace
      {"iij->ji", {{3, 3, 2}}},
      {"i,i", {{5}, {5}}},                                // inner product
      {"i,j->ij", {{3}, {4}}},                            // outer product
      {"...ij,...jk->...ik", {{5, 1, 2, 3}, {4, 3, 4}}},  // broadcast ellipsis
      {"...ii->...i", {{2, 3, 3}}},                       // batch diagonal
      {"ij->", {{3, 4}}},
      {"ij->ji", {{3, 4}}},
      {"abc->cba", {{2, 3, 4}}},
      {"ba", {{2, 3}}},                                   // implicit: transpose
      {"Ba", {{2, 3}}},                                   // implicit: 'B' < 'a'
      {"a...,...", {{2, 3}, {1}}},
      {"...,...", {{}, {}}},                              // scalars
      {"i,j,k->ijk", {{2}, {3}, {4}}},
      {"ij,jk,kl->il", {{2, 3}, {3, 4}, {4, 5}}},
      {"bn,anm,bm->ba", {{2, 3}, {4, 3, 5}, {2, 5}}},     // bilinear
      {"ij,ij->ij", {{3, 4}, {3, 4}}},                    // batch labels only
      {"bij,jk->bik", {{2, 3, 4}, {4, 5}}},
      {"ij,jk->ik", {{2, 1}, {3, 4}}},                    // size-1 'j' broadcasts
      {"ij,j->i", {{3, 4}, {4}}},
      {"ij,kl->", {{2, 3}, {4, 5}}},
      {"aab,bc->ac", {{3, 3, 4}, {4, 2}}},                // diagonal, then contraction
      {"ab,cd->", {{2, 3}, {1, 2}}},
      {" i i -> i ", {{3, 3}}},                           // spaces
      {"ij,jk->ik", {{0, 3}, {3, 4}}},                    // empty output
      {"ij,jk->ik", {{2, 0}, {0, 3}}},                    // empty sum: zeros
      {"ij->i", {{3, 0}}},
      {"bhqd,bhkd->bhqk", {{2, 4, 33, 16}, {2, 4, 31, 16}}},
  };
  for (DataType d : {DataType::kFloat32, DataType::kFloat64, DataType::kFloat16, DataType::kInt32,
                     DataType::kInt64}) {
    for (const auto& [eq, shapes] : cases) CheckEinsum(d, eq, shapes);
  }
}

TEST(EinsumKernel, KnownValues) {
  // numpy.einsum('ii->i', arange(9).reshape(3,3)) == [0, 4, 8]
  runtime::Tensor x = TensorOf(DataType::kFloat32, {3, 3}, {0, 1, 2, 3, 4, 5, 6, 7, 8});
  auto out = RunOk(EinsumNode("ii->i", 1), 12, {&x});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(DoublesOf(out[0]), (std::vector<double>{0, 4, 8}));
  // uint8 wraps: 16 * 16 = 256 -> 0, + 1 * 1 = 1.
  runtime::Tensor u = TensorOf(DataType::kUint8, {2}, {16, 1});
  out = RunOk(EinsumNode("i,i", 2), 12, {&u, &u});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(DoublesOf(out[0]), (std::vector<double>{1}));
}

TEST(EinsumKernel, Errors) {
  runtime::Tensor a = F32({2, 3}, std::vector<float>(6, 1));
  runtime::Tensor b = F32({4, 5}, std::vector<float>(20, 1));
  ExpectRunFails(EinsumNode("ij,jk", 2), 12, {&a, &b}, "label 'j' has size 3");
  ExpectRunFails(EinsumNode("ij,jk", 1), 12, {&a}, "2 input terms");
  ExpectRunFails(EinsumNode("ijk", 1), 12, {&a}, "does not fit input 0 of rank 2");
  ExpectRunFails(EinsumNode("i$j", 1), 12, {&a}, "'$'");
  ExpectRunFails(EinsumNode("ij->k", 1), 12, {&a}, "'k'");
  ExpectRunFails(EinsumNode("ii", 1), 12, {&a}, "sizes 2 and 3");
  ExpectRunFails(MakeNode("Einsum", {"x"}, {"y"}), 12, {&a}, "equation");
  runtime::Tensor d = TensorOf(DataType::kFloat64, {2, 3}, std::vector<double>(6, 1));
  ExpectRunFails(EinsumNode("ij,ij", 2), 12, {&a, &d}, "dtype");
}

ir::Dim K(int64_t v) { return ir::Dim::Known(v); }
ir::Dim S(const char* name) { return ir::Dim::Symbolic(name); }

TEST(EinsumInference, Shapes) {
  ir::TypeInfo a = ops::TensorType(DataType::kFloat32, {S("B"), S("Q"), K(64)});
  ir::TypeInfo b = ops::TensorType(DataType::kFloat32, {S("B"), S("K"), K(64)});
  auto r = InferNode(EinsumNode("bqd,bkd->bqk", 2), 12, {&a, &b});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(ir::TypeToString((*r)[0]), "float32[B,Q,K]");

  r = InferNode(EinsumNode("bqd,bkd", 2), 12, {&a, &b});  // implicit: k, q
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(ir::TypeToString((*r)[0]), "float32[K,Q]");

  ir::TypeInfo c = ops::TensorType(DataType::kFloat32, {K(1), S("H"), K(3), K(4)});
  ir::TypeInfo e = ops::TensorType(DataType::kFloat32, {K(7), K(1), K(4), K(5)});
  r = InferNode(EinsumNode("...ij,...jk->...ik", 2), 12, {&c, &e});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(ir::TypeToString((*r)[0]), "float32[7,H,3,5]");

  ir::TypeInfo unknown = ops::TensorTypeUnknownShape(DataType::kFloat32);
  r = InferNode(EinsumNode("ij,jk->ik", 2), 12, {&unknown, &b});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)[0].shape.dims.size(), 2u);
  r = InferNode(EinsumNode("...j,jk", 2), 12, {&unknown, &b});
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE((*r)[0].shape.rank_known);

  ir::TypeInfo f = ops::TensorType(DataType::kFloat32, {K(3), K(4)});
  ir::TypeInfo g = ops::TensorType(DataType::kFloat32, {K(5), K(6)});
  r = InferNode(EinsumNode("ij,jk->ik", 2), 12, {&f, &g});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().summary().find("node Einsum 'n'"), std::string::npos) << r.status().ToString();
  EXPECT_NE(r.status().summary().find("label 'j'"), std::string::npos) << r.status().ToString();
  EXPECT_FALSE(InferNode(EinsumNode("ijk,jk->ik", 2), 12, {&f, &g}).ok());
  EXPECT_FALSE(InferNode(EinsumNode("i-j", 1), 12, {&f}).ok());
}

}  // namespace
}  // namespace vigil::cpu::testing
