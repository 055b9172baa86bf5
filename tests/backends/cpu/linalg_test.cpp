// CPU kernels and shape inference of MatMul and Gemm, against naive float64
// loops. Einsum: einsum_test.cpp.
#include <algorithm>
#include <cmath>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "backends/cpu/elementwise_test_util.h"
#include "backends/cpu/fast/dnnl_library.h"
#include "backends/cpu/fast/fast_kernels.h"
#include "backends/cpu/gemm.h"
#include "backends/cpu/kernel_test_util.h"

namespace vigil::cpu::testing {
namespace {

// Tolerance of a product with K terms accumulated in float (double for
// float64) and rounded once to dtype.
Tolerance ProductTolerance(DataType d, int64_t k) {
  Tolerance t = ToleranceFor(d);
  const double terms = static_cast<double>(std::max<int64_t>(k, 1));
  if (d == DataType::kFloat32) return {1e-6 * terms, 1e-5};
  if (d == DataType::kFloat64) return {1e-13 * terms, 1e-12};
  return {t.atol * 2, t.rtol * 2};
}

// Values that dtype d holds exactly, so the float64 reference sees the same
// inputs as the kernel: small integers for integer types.
std::vector<double> InputValues(DataType d, int64_t n, uint32_t seed) {
  std::vector<double> v =
      IsFloat(d) ? RandomValues(n, -1, 1, seed) : RandomValues(n, IsUnsigned(d) ? 0 : -5, 6, seed, true);
  for (double& x : v) x = Quantize(d, x);
  return v;
}

// numpy matmul in float64: vectors promoted, batch dims broadcast.
std::vector<double> ReferenceMatMul(std::vector<int64_t> as, std::vector<int64_t> bs, const std::vector<double>& a,
                                    const std::vector<double>& b, std::vector<int64_t>* out_shape) {
  const bool av = as.size() == 1, bv = bs.size() == 1;
  if (av) as.insert(as.begin(), 1);
  if (bv) bs.push_back(1);
  const int64_t m = as[as.size() - 2], k = as.back(), n = bs.back();
  std::vector<int64_t> ab(as.begin(), as.end() - 2), bb(bs.begin(), bs.end() - 2);
  std::vector<int64_t> batch = BroadcastShape(ab, bb).value();
  *out_shape = batch;
  if (!av) out_shape->push_back(m);
  if (!bv) out_shape->push_back(n);
  const int64_t count = Product(batch);
  std::vector<double> out(count * m * n, 0.0);
  // Index of batch element i in an operand's own (right-aligned) batch dims.
  auto operand_batch = [&](const std::vector<int64_t>& own, int64_t i) {
    int64_t index = 0, stride = 1, rest = i;
    std::vector<int64_t> idx(batch.size());
    for (size_t d = batch.size(); d-- > 0;) {
      idx[d] = rest % batch[d];
      rest /= batch[d];
    }
    for (size_t d = own.size(); d-- > 0;) {
      int64_t bi = idx[batch.size() - own.size() + d];
      index += (own[d] == 1 ? 0 : bi) * stride;
      stride *= own[d];
    }
    return index;
  };
  for (int64_t i = 0; i < count; ++i) {
    const double* ap = a.data() + operand_batch(ab, i) * m * k;
    const double* bp = b.data() + operand_batch(bb, i) * k * n;
    for (int64_t r = 0; r < m; ++r) {
      for (int64_t c = 0; c < n; ++c) {
        double s = 0;
        for (int64_t p = 0; p < k; ++p) s += ap[r * k + p] * bp[p * n + c];
        out[(i * m + r) * n + c] = s;
      }
    }
  }
  return out;
}

// Wraps a float64 reference of an integer product to dtype d, as numpy does.
double WrapTo(DataType d, double v) {
  if (IsFloat(d)) return v;
  // Test values keep every product far below 2^53, so v is exact.
  const int64_t i = static_cast<int64_t>(v);
  switch (d) {
    case DataType::kInt8: return static_cast<int8_t>(i);
    case DataType::kUint8: return static_cast<uint8_t>(i);
    case DataType::kInt16: return static_cast<int16_t>(i);
    case DataType::kUint16: return static_cast<uint16_t>(i);
    case DataType::kInt32: return static_cast<int32_t>(i);
    case DataType::kUint32: return static_cast<uint32_t>(i);
    default: return v;
  }
}

void CheckMatMul(DataType d, const std::vector<int64_t>& as, const std::vector<int64_t>& bs) {
  const std::string what = DtypeName(d) + " " + ShapeString(as) + " x " + ShapeString(bs);
  std::vector<double> av = InputValues(d, Product(as), 1), bv = InputValues(d, Product(bs), 2);
  runtime::Tensor a = TensorOf(d, as, av), b = TensorOf(d, bs, bv);
  std::vector<int64_t> want_shape;
  std::vector<double> want = ReferenceMatMul(as, bs, av, bv, &want_shape);
  for (double& w : want) w = WrapTo(d, w);
  auto out = RunOk(MakeNode("MatMul", {"a", "b"}, {"y"}), 13, {&a, &b});
  ASSERT_EQ(out.size(), 1u) << what;
  EXPECT_EQ(out[0].dtype(), d) << what;
  EXPECT_EQ(out[0].shape(), want_shape) << what;
  ExpectNear(DoublesOf(out[0]), want, ProductTolerance(d, as.back()), what);
}

TEST(MatMulKernel, ShapesAgainstReference) {
  const std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> cases = {
      {{7}, {7}},                   // vector . vector -> scalar
      {{7}, {7, 5}},                // vector promoted to a row
      {{13, 7}, {7}},               // vector promoted to a column
      {{5}, {3, 5, 4}},             // vector against a batch
      {{3, 4, 5}, {5}},             //
      {{13, 7}, {7, 5}},            //
      {{1, 1}, {1, 1}},             //
      {{2, 13, 7}, {7, 5}},         // B shared: batch folds into rows
      {{7, 5}, {3, 5, 6}},          // A shared
      {{2, 1, 3, 4}, {5, 4, 6}},    // broadcast batch dims
      {{2, 3, 4, 5}, {2, 3, 5, 2}}, //
      {{4, 1, 3}, {1, 3, 2}},       //
      {{127, 33}, {33, 129}},       // odd sizes past Eigen's small-product path
      {{0, 3}, {3, 4}},             // empty outputs
      {{2, 3}, {3, 0}},             //
      {{0, 2, 3}, {3, 4}},          //
      {{2, 0}, {0, 3}},             // K = 0: zeros
      {{3, 2, 0}, {3, 0, 5}},       //
  };
  for (DataType d : {DataType::kFloat32, DataType::kFloat64, DataType::kFloat16, DataType::kBfloat16,
                     DataType::kInt32, DataType::kInt64, DataType::kUint8, DataType::kInt8, DataType::kUint64}) {
    for (const auto& [as, bs] : cases) CheckMatMul(d, as, bs);
  }
}

TEST(MatMulKernel, LargeProductsSplitAcrossThreads) {
  // Past the threading threshold: row split, column split, batch split.
  CheckMatMul(DataType::kFloat32, {203, 211}, {211, 199});
  CheckMatMul(DataType::kFloat64, {3, 1024}, {1024, 3001});
  CheckMatMul(DataType::kFloat32, {9, 129, 131}, {9, 131, 127});
  CheckMatMul(DataType::kInt32, {210, 220}, {220, 230});
}

TEST(MatMulKernel, ThreadLimitCapsTheSplit) {
  // The session's intra_op_num_threads reaches the products as this limit.
  const double huge = 1e12;
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  EXPECT_EQ(GemmThreadsFor(huge), cores);
  {
    ScopedGemmThreadLimit one(1);
    EXPECT_EQ(GemmThreadsFor(huge), 1);
    {
      ScopedGemmThreadLimit three(3);
      EXPECT_EQ(GemmThreadsFor(huge), std::min(3, cores));
    }
    EXPECT_EQ(GemmThreadsFor(huge), 1);  // restored on leaving the inner scope
    // Limited to one thread, the large products still match the reference.
    CheckMatMul(DataType::kFloat32, {203, 211}, {211, 199});
    CheckMatMul(DataType::kFloat32, {9, 129, 131}, {9, 131, 127});
  }
  EXPECT_EQ(GemmThreadsFor(huge), cores);
  EXPECT_EQ(GemmThreadsFor(1000), 1);  // small products never split
}

TEST(MatMulKernel, IntegerProductsWrap) {
  // int8: 100 * 2 + 100 * 1 = 300 wraps to 44, as numpy's int8 matmul does.
  runtime::Tensor a = TensorOf(DataType::kInt8, {1, 2}, {100, 100});
  runtime::Tensor b = TensorOf(DataType::kInt8, {2, 1}, {2, 1});
  auto out = RunOk(MakeNode("MatMul", {"a", "b"}, {"y"}), 13, {&a, &b});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(DoublesOf(out[0]), std::vector<double>{44});
  // int64 overflow wraps instead of being undefined.
  runtime::Tensor c = I64({1, 2}, {INT64_MAX, 1});
  runtime::Tensor e = I64({2}, {1, 1});
  auto out2 = RunOk(MakeNode("MatMul", {"a", "b"}, {"y"}), 13, {&c, &e});
  ASSERT_EQ(out2.size(), 1u);
  EXPECT_EQ(Values<int64_t>(out2[0]), std::vector<int64_t>{INT64_MIN});
}

TEST(MatMulKernel, Errors) {
  ir::Node node = MakeNode("MatMul", {"a", "b"}, {"y"});
  runtime::Tensor a = F32({2, 3}, std::vector<float>(6, 1));
  runtime::Tensor b = F32({4, 2}, std::vector<float>(8, 1));
  ExpectRunFails(node, 13, {&a, &b}, "inner dims differ");
  runtime::Tensor c = F32({2, 3, 3}, std::vector<float>(18, 1));
  runtime::Tensor e = F32({4, 3, 3}, std::vector<float>(36, 1));
  ExpectRunFails(node, 13, {&c, &e}, "do not broadcast");
  runtime::Tensor s = F32({}, {1});
  ExpectRunFails(node, 13, {&s, &a}, "scalar");
  runtime::Tensor d = TensorOf(DataType::kFloat64, {3, 2}, std::vector<double>(6, 1));
  ExpectRunFails(node, 13, {&a, &d}, "float64");
  runtime::Tensor t = TensorOf(DataType::kBool, {2, 2}, {1, 0, 0, 1});
  auto r = RunKernel(node, 13, {&t, &t});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kUnsupported);
}

ir::TypeInfo Sym(DataType d, std::vector<ir::Dim> dims) { return ops::TensorType(d, std::move(dims)); }
ir::Dim K(int64_t v) { return ir::Dim::Known(v); }
ir::Dim S(const char* name) { return ir::Dim::Symbolic(name); }

TEST(MatMulInference, SymbolicBatchAndVectors) {
  ir::Node node = MakeNode("MatMul", {"a", "b"}, {"y"});
  ir::TypeInfo a = Sym(DataType::kFloat32, {S("B"), S("S"), K(64)});
  ir::TypeInfo b = Sym(DataType::kFloat32, {K(64), K(32)});
  auto r = InferNode(node, 13, {&a, &b});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(ir::TypeToString((*r)[0]), "float32[B,S,32]");

  ir::TypeInfo v = Sym(DataType::kFloat32, {K(64)});
  r = InferNode(node, 13, {&a, &v});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(ir::TypeToString((*r)[0]), "float32[B,S]");
  r = InferNode(node, 13, {&v, &b});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(ir::TypeToString((*r)[0]), "float32[32]");
  r = InferNode(node, 13, {&v, &v});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(ir::TypeToString((*r)[0]), "float32[]");

  ir::TypeInfo c = Sym(DataType::kFloat32, {K(1), S("H"), K(5), K(64)});
  ir::TypeInfo e = Sym(DataType::kFloat32, {S("B"), K(1), K(64), K(7)});
  r = InferNode(node, 13, {&c, &e});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(ir::TypeToString((*r)[0]), "float32[B,H,5,7]");
}

TEST(MatMulInference, UnknownRankAndErrors) {
  ir::Node node = MakeNode("MatMul", {"a", "b"}, {"y"});
  ir::TypeInfo unknown = ops::TensorTypeUnknownShape(DataType::kFloat32);
  ir::TypeInfo b = Sym(DataType::kFloat32, {K(4), K(3)});
  auto r = InferNode(node, 13, {&unknown, &b});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)[0].elem_type, DataType::kFloat32);
  EXPECT_FALSE((*r)[0].shape.rank_known);

  ir::TypeInfo a = Sym(DataType::kFloat32, {K(2), K(5)});
  r = InferNode(node, 13, {&a, &b});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().summary().find("node MatMul 'n'"), std::string::npos) << r.status().ToString();
  EXPECT_NE(r.status().summary().find("5 against 4"), std::string::npos) << r.status().ToString();

  ir::TypeInfo h = Sym(DataType::kFloat16, {K(3), K(4)});
  r = InferNode(node, 13, {&h, &b});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().summary().find("dtype"), std::string::npos);

  ir::TypeInfo s = Sym(DataType::kFloat32, {});
  EXPECT_FALSE(InferNode(node, 13, {&s, &b}).ok());
}

// --- Gemm ------------------------------------------------------------------

struct GemmCase {
  int64_t m, k, n;
  bool ta, tb;
  std::vector<int64_t> c_shape;  // {-1}: no C
  float alpha, beta;
};

void CheckGemm(DataType d, const GemmCase& g) {
  const std::string what = DtypeName(d) + " M=" + std::to_string(g.m) + " K=" + std::to_string(g.k) +
                           " N=" + std::to_string(g.n) + " transA=" + std::to_string(g.ta) +
                           " transB=" + std::to_string(g.tb) + " C=" + ShapeString(g.c_shape) +
                           " alpha=" + std::to_string(g.alpha) + " beta=" + std::to_string(g.beta);
  const bool has_c = g.c_shape != std::vector<int64_t>{-1};
  std::vector<int64_t> as = g.ta ? std::vector<int64_t>{g.k, g.m} : std::vector<int64_t>{g.m, g.k};
  std::vector<int64_t> bs = g.tb ? std::vector<int64_t>{g.n, g.k} : std::vector<int64_t>{g.k, g.n};
  std::vector<double> av = InputValues(d, Product(as), 3), bv = InputValues(d, Product(bs), 4);
  std::vector<double> cv = has_c ? InputValues(d, Product(g.c_shape), 5) : std::vector<double>{};
  runtime::Tensor a = TensorOf(d, as, av), b = TensorOf(d, bs, bv);
  runtime::Tensor c = has_c ? TensorOf(d, g.c_shape, cv) : runtime::Tensor();
  std::vector<double> want(g.m * g.n);
  for (int64_t i = 0; i < g.m; ++i) {
    for (int64_t j = 0; j < g.n; ++j) {
      double s = 0;
      for (int64_t p = 0; p < g.k; ++p) {
        s += (g.ta ? av[p * g.m + i] : av[i * g.k + p]) * (g.tb ? bv[j * g.k + p] : bv[p * g.n + j]);
      }
      s *= g.alpha;
      if (has_c) {
        const size_t r = g.c_shape.size();
        const int64_t rows = r == 2 ? g.c_shape[0] : 1, cols = r >= 1 ? g.c_shape[r - 1] : 1;
        s += static_cast<double>(g.beta) * cv[(rows == 1 ? 0 : i) * cols + (cols == 1 ? 0 : j)];
      }
      want[i * g.n + j] = IsFloat(d) ? s : WrapTo(d, std::trunc(s));
    }
  }
  ir::Node node = MakeNode("Gemm", {"a", "b", has_c ? "c" : ""}, {"y"},
                           {IntAttr("transA", g.ta), IntAttr("transB", g.tb), FloatAttr("alpha", g.alpha),
                            FloatAttr("beta", g.beta)});
  auto out = RunOk(node, 13, {&a, &b, has_c ? &c : nullptr});
  ASSERT_EQ(out.size(), 1u) << what;
  EXPECT_EQ(out[0].shape(), (std::vector<int64_t>{g.m, g.n})) << what;
  ExpectNear(DoublesOf(out[0]), want, ProductTolerance(d, g.k), what);
}

TEST(GemmKernel, AllAttributeCombinations) {
  const int64_t m = 13, k = 7, n = 5;
  const std::vector<std::vector<int64_t>> c_shapes = {{-1}, {}, {1}, {n}, {1, n}, {m, 1}, {m, n}, {1, 1}};
  for (DataType d : {DataType::kFloat32, DataType::kFloat64, DataType::kFloat16, DataType::kBfloat16}) {
    for (bool ta : {false, true}) {
      for (bool tb : {false, true}) {
        for (const auto& cs : c_shapes) {
          CheckGemm(d, {m, k, n, ta, tb, cs, 1.0f, 1.0f});
          CheckGemm(d, {m, k, n, ta, tb, cs, 0.5f, -2.0f});
        }
      }
    }
  }
  for (DataType d : {DataType::kInt32, DataType::kInt64, DataType::kUint32, DataType::kUint64}) {
    for (bool ta : {false, true}) {
      for (bool tb : {false, true}) {
        CheckGemm(d, {m, k, n, ta, tb, {m, n}, 1.0f, 1.0f});
        CheckGemm(d, {m, k, n, ta, tb, {n}, 2.0f, 3.0f});
        CheckGemm(d, {m, k, n, ta, tb, {-1}, 1.0f, 1.0f});
      }
    }
  }
}

TEST(GemmKernel, OddAndEmptySizes) {
  for (DataType d : {DataType::kFloat32, DataType::kFloat64}) {
    CheckGemm(d, {127, 65, 129, false, true, {129}, 1.0f, 1.0f});
    CheckGemm(d, {1, 1, 1, true, true, {1}, 1.0f, 1.0f});
    CheckGemm(d, {4, 0, 3, false, false, {3}, 1.0f, 1.0f});  // K = 0: beta * C
    CheckGemm(d, {0, 3, 4, false, false, {-1}, 1.0f, 1.0f});
    CheckGemm(d, {3, 4, 0, true, false, {-1}, 1.0f, 1.0f});
    CheckGemm(d, {256, 300, 200, true, true, {256, 200}, 0.25f, 0.5f});  // threaded
  }
}

TEST(GemmKernel, EveryInstructionSetVariant) {
  // The Eigen kernels are built per instruction set; run each this CPU has
  // (on the reference code: float32 products do not go to oneDNN here).
  ForceReferenceKernels eigen;
  const GemmIsa original = GemmIsaInUse();
  int ran = 0;
  for (GemmIsa isa : {GemmIsa::kBaseline, GemmIsa::kAvx2, GemmIsa::kAvx512}) {
    if (!UseGemmIsa(isa)) continue;
    ++ran;
    for (DataType d : {DataType::kFloat32, DataType::kFloat64}) {
      CheckMatMul(d, {2, 13, 7}, {7, 5});
      CheckMatMul(d, {127, 33}, {33, 129});
      CheckMatMul(d, {3, 1, 40}, {40, 1});
      for (bool ta : {false, true}) {
        for (bool tb : {false, true}) CheckGemm(d, {37, 29, 31, ta, tb, {31}, 0.5f, 2.0f});
      }
    }
  }
  EXPECT_GE(ran, 1);
  EXPECT_TRUE(UseGemmIsa(original));
}

// oneDNN's sgemm (fast/gemm_dnnl.cpp), where libdnnl.so.2 is loaded, takes
// float32 products of every transpose combination, alpha and accumulation,
// on odd sizes, one thread and several, and agrees with a float64 product.
TEST(GemmKernel, OneDnnSgemmTakesFloatProductsAndMatchesFloat64) {
  if (!fast::DnnlLoaded()) GTEST_SKIP() << fast::DnnlDescription();
  struct Case {
    int64_t m, n, k;
  };
  for (Case c : {Case{13, 127, 7}, Case{1, 129, 65}, Case{127, 1, 33}, Case{200, 300, 256}}) {
    for (int mask = 0; mask < 8; ++mask) {
      GemmShape s{c.m, c.n, c.k, (mask & 1) != 0, (mask & 2) != 0};
      const bool accumulate = (mask & 4) != 0;
      const float alpha = accumulate ? 0.5f : 1.0f;
      std::vector<float> a(static_cast<size_t>(c.m * c.k)), b(static_cast<size_t>(c.k * c.n)),
          out(static_cast<size_t>(c.m * c.n));
      for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>(static_cast<int64_t>(i * 37 % 101) - 50) / 50.0f;
      for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<float>(static_cast<int64_t>(i * 53 % 97) - 48) / 48.0f;
      for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<float>(static_cast<int64_t>(i % 7) - 3);
      const std::vector<float> before = out;
      for (int threads : {1, 2}) {
        out = before;
        ASSERT_TRUE(fast::SgemmDnnl(s, a.data(), b.data(), out.data(), alpha, accumulate, threads));
        double worst = 0;
        for (int64_t i = 0; i < c.m; ++i) {
          for (int64_t j = 0; j < c.n; ++j) {
            double sum = 0;
            for (int64_t p = 0; p < c.k; ++p) {
              const double av = s.trans_a ? a[static_cast<size_t>(p * c.m + i)] : a[static_cast<size_t>(i * c.k + p)];
              const double bv = s.trans_b ? b[static_cast<size_t>(j * c.k + p)] : b[static_cast<size_t>(p * c.n + j)];
              sum += av * bv;
            }
            const double want = alpha * sum + (accumulate ? before[static_cast<size_t>(i * c.n + j)] : 0.0);
            worst = std::max(worst, std::abs(out[static_cast<size_t>(i * c.n + j)] - want));
          }
        }
        // k terms of magnitude <= 1, each rounded once in float32.
        EXPECT_LE(worst, 2e-7 * c.k + 1e-6) << c.m << "x" << c.n << "x" << c.k << " mask " << mask;
      }
    }
  }
}

TEST(GemmKernel, ZeroBetaIgnoresC) {
  // beta = 0: C is not read into the result, so NaN in C does not leak.
  runtime::Tensor a = F32({1, 2}, {1, 2});
  runtime::Tensor b = F32({2, 1}, {3, 4});
  runtime::Tensor c = F32({1}, {NAN});
  ir::Node node = MakeNode("Gemm", {"a", "b", "c"}, {"y"}, {FloatAttr("beta", 0.0f)});
  auto out = RunOk(node, 13, {&a, &b, &c});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(Values<float>(out[0]), std::vector<float>{11});
}

TEST(GemmKernel, Errors) {
  runtime::Tensor a = F32({2, 3}, std::vector<float>(6, 1));
  runtime::Tensor b = F32({2, 4}, std::vector<float>(8, 1));
  ExpectRunFails(MakeNode("Gemm", {"a", "b"}, {"y"}), 13, {&a, &b}, "inner dims differ");
  runtime::Tensor b2 = F32({3, 4}, std::vector<float>(12, 1));
  ExpectRunFails(MakeNode("Gemm", {"a", "b"}, {"y"}, {IntAttr("transA", 1)}), 13, {&a, &b2}, "inner dims differ");
  runtime::Tensor c = F32({3}, std::vector<float>(3, 1));
  ExpectRunFails(MakeNode("Gemm", {"a", "b", "c"}, {"y"}), 13, {&a, &b2, &c}, "does not broadcast");
  runtime::Tensor c3 = F32({1, 2, 4}, std::vector<float>(8, 1));
  ExpectRunFails(MakeNode("Gemm", {"a", "b", "c"}, {"y"}), 13, {&a, &b2, &c3}, "does not broadcast");
  runtime::Tensor a3 = F32({1, 2, 3}, std::vector<float>(6, 1));
  ExpectRunFails(MakeNode("Gemm", {"a", "b"}, {"y"}), 13, {&a3, &b2}, "rank 2");
  ExpectRunFails(MakeNode("Gemm", {"a", "b"}, {"y"}, {StringAttr("alpha", "x")}), 13, {&a, &b2}, "alpha");
}

TEST(GemmKernel, BroadcastAttributeBeforeOpset7) {
  runtime::Tensor a = F32({2, 3}, std::vector<float>(6, 1));
  runtime::Tensor b = F32({3, 2}, std::vector<float>(6, 1));
  runtime::Tensor c = F32({2}, {10, 20});
  ir::Node plain = MakeNode("Gemm", {"a", "b", "c"}, {"y"});
  ExpectRunFails(plain, 6, {&a, &b, &c}, "broadcast=0");
  ir::Node broadcast = MakeNode("Gemm", {"a", "b", "c"}, {"y"}, {IntAttr("broadcast", 1)});
  auto out = RunOk(broadcast, 6, {&a, &b, &c});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(Values<float>(out[0]), (std::vector<float>{13, 23, 13, 23}));
  runtime::Tensor full = F32({2, 2}, {1, 2, 3, 4});
  out = RunOk(plain, 1, {&a, &b, &full});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(Values<float>(out[0]), (std::vector<float>{4, 5, 6, 7}));
  ir::TypeInfo at = ops::TensorType(DataType::kFloat32, std::vector<int64_t>{2, 3});
  ir::TypeInfo bt = ops::TensorType(DataType::kFloat32, std::vector<int64_t>{3, 2});
  ir::TypeInfo ct = ops::TensorType(DataType::kFloat32, std::vector<int64_t>{2});
  EXPECT_FALSE(InferNode(plain, 6, {&at, &bt, &ct}).ok());
  EXPECT_TRUE(InferNode(broadcast, 6, {&at, &bt, &ct}).ok());
}

TEST(GemmInference, ShapesAndChecks) {
  ir::Node node = MakeNode("Gemm", {"a", "b", "c"}, {"y"}, {IntAttr("transA", 1)});
  ir::TypeInfo a = Sym(DataType::kFloat32, {K(64), S("M")});
  ir::TypeInfo b = Sym(DataType::kFloat32, {K(64), K(10)});
  ir::TypeInfo c = Sym(DataType::kFloat32, {K(10)});
  auto r = InferNode(node, 13, {&a, &b, &c});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(ir::TypeToString((*r)[0]), "float32[M,10]");

  ir::TypeInfo bad_c = Sym(DataType::kFloat32, {K(3)});
  r = InferNode(node, 13, {&a, &b, &bad_c});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().summary().find("input C"), std::string::npos) << r.status().ToString();

  ir::TypeInfo bad_b = Sym(DataType::kFloat32, {K(63), K(10)});
  r = InferNode(node, 13, {&a, &bad_b, &c});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().summary().find("64 against 63"), std::string::npos) << r.status().ToString();

  ir::TypeInfo rank3 = Sym(DataType::kFloat32, {K(1), K(64), K(3)});
  r = InferNode(node, 13, {&rank3, &b, &c});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().summary().find("rank 3"), std::string::npos);

  // C is optional from opset 11, required before.
  ir::Node no_c = MakeNode("Gemm", {"a", "b"}, {"y"}, {IntAttr("transA", 1)});
  EXPECT_TRUE(InferNode(no_c, 11, {&a, &b}).ok());
  EXPECT_FALSE(InferNode(no_c, 9, {&a, &b}).ok());

  ir::TypeInfo unknown = ops::TensorTypeUnknownShape(DataType::kFloat32);
  r = InferNode(no_c, 13, {&unknown, &b});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)[0].shape.dims.size(), 2u);
  EXPECT_TRUE((*r)[0].shape.dims[0].is_symbolic());
  EXPECT_EQ((*r)[0].shape.dims[1].value, 10);
}

}  // namespace
}  // namespace vigil::cpu::testing
