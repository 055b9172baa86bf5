// Det (linalg family) against a long-double Gaussian elimination with full
// pivoting (the kernel pivots partially, in double) and against matrices
// built as P * L * U, whose determinant is known, on odd sizes and every
// float dtype, plus its error paths and shape inference.
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "backends/cpu/elementwise_test_util.h"

namespace vigil::cpu::testing {
namespace {

using Shape = std::vector<int64_t>;

// Full pivoting: the largest remaining element becomes the pivot.
double ReferenceDet(std::vector<long double> a, int64_t m) {
  long double det = 1;
  for (int64_t k = 0; k < m; ++k) {
    int64_t pr = k, pc = k;
    for (int64_t r = k; r < m; ++r)
      for (int64_t c = k; c < m; ++c)
        if (std::fabs(a[r * m + c]) > std::fabs(a[pr * m + pc])) pr = r, pc = c;
    if (a[pr * m + pc] == 0) return 0;
    if (pr != k) {
      for (int64_t c = 0; c < m; ++c) std::swap(a[k * m + c], a[pr * m + c]);
      det = -det;
    }
    if (pc != k) {
      for (int64_t r = 0; r < m; ++r) std::swap(a[r * m + k], a[r * m + pc]);
      det = -det;
    }
    det *= a[k * m + k];
    for (int64_t r = k + 1; r < m; ++r) {
      const long double f = a[r * m + k] / a[k * m + k];
      for (int64_t c = k; c < m; ++c) a[r * m + c] -= f * a[k * m + c];
    }
  }
  return static_cast<double>(det);
}

ir::Node DetNode() { return MakeNode("Det", {"x"}, {"y"}); }

Tolerance DetTolerance(DataType d) {
  switch (d) {
    case DataType::kFloat64: return {1e-12, 1e-10};
    case DataType::kFloat32: return {1e-6, 1e-6};  // one rounding to float, plus double's error
    case DataType::kFloat16: return {1e-3, 1e-3};
    default: return {1e-2, 8e-3};  // bfloat16
  }
}

TEST(DetKernel, BatchedRandomMatricesAgainstFullPivoting) {
  for (DataType dt : FloatDtypes()) {
    for (const Shape& shape : {Shape{13, 13}, Shape{2, 3, 7, 7}, Shape{5, 1, 1}, Shape{3, 2, 2}}) {
      SCOPED_TRACE(DtypeName(dt) + " " + ShapeString(shape));
      const int64_t m = shape.back();
      runtime::Tensor x = TensorOf(dt, shape, RandomValues(static_cast<size_t>(Product(shape)), -2, 2, 17 + m));
      const std::vector<double> stored = DoublesOf(x);
      const int64_t count = Product(shape) / (m * m);
      std::vector<double> want;
      for (int64_t b = 0; b < count; ++b) {
        std::vector<long double> a(stored.begin() + b * m * m, stored.begin() + (b + 1) * m * m);
        want.push_back(Quantize(dt, ReferenceDet(a, m)));
      }
      auto out = RunOk(DetNode(), 22, {&x});
      ASSERT_EQ(out.size(), 1u);
      EXPECT_EQ(out[0].dtype(), dt);
      EXPECT_EQ(out[0].shape(), Shape(shape.begin(), shape.end() - 2));
      ExpectNear(DoublesOf(out[0]), want, DetTolerance(dt), "det");
    }
  }
}

TEST(DetKernel, KnownDeterminantOfPermutedLU) {
  // A = P * L * U: L unit lower triangular, U upper triangular with diagonal
  // d, P a permutation of sign s: det(A) = s * prod(d).
  const int64_t m = 13;
  std::vector<double> l(m * m, 0), u(m * m, 0), d(m);
  std::vector<double> r = RandomValues(2 * m * m, -1, 1, 5);
  double want = 1;
  for (int64_t i = 0; i < m; ++i) {
    d[i] = (i % 3 == 0 ? -1 : 1) * (0.5 + 0.1 * i);
    want *= d[i];
    for (int64_t j = 0; j < m; ++j) {
      if (j < i) l[i * m + j] = r[i * m + j];
      if (j == i) l[i * m + j] = 1, u[i * m + j] = d[i];
      if (j > i) u[i * m + j] = r[m * m + i * m + j];
    }
  }
  // Row i of L * U goes to row (5 * i + 3) % 13; the sign is that of its inversions.
  std::vector<int64_t> perm(m);
  for (int64_t i = 0; i < m; ++i) perm[i] = (5 * i + 3) % m;
  int inversions = 0;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = i + 1; j < m; ++j) inversions += perm[i] > perm[j];
  if (inversions % 2) want = -want;
  std::vector<double> a(m * m, 0);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < m; ++j)
      for (int64_t k = 0; k < m; ++k) a[perm[i] * m + j] += l[i * m + k] * u[k * m + j];
  runtime::Tensor x = TensorOf(DataType::kFloat64, {m, m}, a);
  auto out = RunOk(DetNode(), 11, {&x});
  ASSERT_EQ(out.size(), 1u);
  ExpectNear(DoublesOf(out[0]), {want}, {1e-12, 1e-9}, "det of P*L*U");
}

TEST(DetKernel, SingularAndEmptyMatrices) {
  runtime::Tensor x = F32({2, 3, 3}, {1, 2, 3, 2, 4, 6, 7, 8, 9,  // rows 0 and 1 proportional
                                      0, 1, 2, 0, 3, 4, 0, 5, 6});  // a zero column
  auto out = RunOk(DetNode(), 11, {&x});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(Values<float>(out[0]), (std::vector<float>{0, 0}));
  runtime::Tensor e = F32({2, 0, 0}, {});
  auto empty = RunOk(DetNode(), 11, {&e});
  ASSERT_EQ(empty.size(), 1u);
  EXPECT_EQ(Values<float>(empty[0]), (std::vector<float>{1, 1}));  // the empty product, as numpy
}

TEST(DetKernel, Errors) {
  runtime::Tensor rect = F32({2, 3}, {1, 2, 3, 4, 5, 6});
  ExpectRunFails(DetNode(), 11, {&rect}, "square");
  runtime::Tensor vec = F32({4}, {1, 2, 3, 4});
  ExpectRunFails(DetNode(), 11, {&vec}, "square");
  runtime::Tensor ints = I64({2, 2}, {1, 2, 3, 4});
  ExpectRunFails(DetNode(), 11, {&ints}, "int64");
}

TEST(DetInfer, Shapes) {
  ir::TypeInfo x = ops::TensorType(DataType::kFloat32, std::vector<ir::Dim>{ir::Dim::Symbolic("b"), ir::Dim::Known(5),
                                                                            ir::Dim::Known(5)});
  auto r = InferNode(DetNode(), 11, {&x});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(ir::ShapeToString((*r)[0].shape), ir::ShapeToString(ops::TensorType(DataType::kFloat32,
                                                                  std::vector<ir::Dim>{ir::Dim::Symbolic("b")}).shape));
  ir::TypeInfo rect = ops::TensorType(DataType::kFloat32, std::vector<ir::Dim>{ir::Dim::Known(4), ir::Dim::Known(5)});
  auto e = InferNode(DetNode(), 11, {&rect});
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().summary().find("node Det"), std::string::npos) << e.status().summary();
  ir::TypeInfo ints = ops::TensorType(DataType::kInt32, std::vector<ir::Dim>{ir::Dim::Known(4), ir::Dim::Known(4)});
  EXPECT_FALSE(InferNode(DetNode(), 11, {&ints}).ok());
}

}  // namespace
}  // namespace vigil::cpu::testing
