// MatMulInteger, ConvInteger, QLinearMatMul and QLinearConv: CPU kernels
// against references computed here with plain loops (int64 sums, double
// requantization, explicit round-half-to-even), on odd sizes; zero points
// and scales per tensor, per row/column and per output channel; numpy
// broadcasting; groups, strides, pads, dilations and auto_pad; saturation
// and ties; shape inference; errors.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "backends/cpu/kernel_test_util.h"
#include "vigil/float16.h"

namespace vigil::cpu::testing {
namespace {

using ir::DataType;

int64_t Count(const std::vector<int64_t>& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

std::vector<int64_t> Random(size_t n, int64_t lo, int64_t hi, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int64_t> d(lo, hi);
  std::vector<int64_t> v(n);
  for (int64_t& x : v) x = d(rng);
  return v;
}

runtime::Tensor Q(DataType t, std::vector<int64_t> shape, const std::vector<int64_t>& v) {
  if (t == DataType::kInt8) return MakeTensor(t, std::move(shape), std::vector<int8_t>(v.begin(), v.end()));
  if (t == DataType::kUint8) return MakeTensor(t, std::move(shape), std::vector<uint8_t>(v.begin(), v.end()));
  return MakeTensor(t, std::move(shape), std::vector<int32_t>(v.begin(), v.end()));
}

std::vector<int64_t> Ints(const runtime::Tensor& t) {
  std::vector<int64_t> v(t.element_count());
  for (size_t i = 0; i < v.size(); ++i) {
    if (t.dtype() == DataType::kInt8)
      v[i] = t.data<int8_t>()[i];
    else if (t.dtype() == DataType::kUint8)
      v[i] = t.data<uint8_t>()[i];
    else
      v[i] = t.data<int32_t>()[i];
  }
  return v;
}

std::pair<int64_t, int64_t> RangeOf(DataType t) {
  return t == DataType::kInt8 ? std::pair<int64_t, int64_t>{-128, 127} : std::pair<int64_t, int64_t>{0, 255};
}

// Round half to even, written out (not std::nearbyint, which the kernel uses).
double RoundHalfEven(double v) {
  const double f = std::floor(v);
  const double diff = v - f;
  if (diff > 0.5) return f + 1;
  if (diff < 0.5) return f;
  return std::fmod(f, 2.0) == 0 ? f : f + 1;
}

// The requantized value of an int32 sum, as the ONNX reference computes it:
// the multiplier in float32 (or float16), then double arithmetic.
int64_t Requantize(int64_t acc, float multiplier, int64_t zp, DataType out) {
  const double v = RoundHalfEven(static_cast<double>(acc) * multiplier + static_cast<double>(zp));
  auto [lo, hi] = RangeOf(out);
  return static_cast<int64_t>(std::min<double>(std::max<double>(v, lo), hi));
}

float F16(float v) { return Float16ToFloat(FloatToFloat16(v)); }

// ---- matmul references ------------------------------------------------------------

// Unravels flat index i of `shape`.
std::vector<int64_t> Unravel(int64_t i, const std::vector<int64_t>& shape) {
  std::vector<int64_t> c(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    c[d] = i % shape[d];
    i /= shape[d];
  }
  return c;
}

// Flat index into `shape` of the coordinates `c` of a larger shape it
// broadcasts to (right-aligned, size-1 dims read index 0).
int64_t BroadcastFlat(const std::vector<int64_t>& c, const std::vector<int64_t>& shape) {
  int64_t k = 0;
  for (size_t d = 0; d < shape.size(); ++d) {
    const int64_t x = c[c.size() - shape.size() + d];
    k = k * shape[d] + (shape[d] == 1 ? 0 : x);
  }
  return k;
}

// A matmul operand with its per-row (A) or per-column (B) parameter: the
// parameter's shape as given, and how to read it for row/column r of
// batch coordinates `batch`.
struct MatParam {
  std::vector<int64_t> shape;  // {} : scalar
  std::vector<int64_t> values;
};

// The parameter value for element (batch coords, r = row of A / column of B).
int64_t ParamAt(const MatParam& p, const std::vector<int64_t>& batch, int64_t r, bool per_row) {
  if (p.values.size() == 1) return p.values[0];
  if (p.shape.size() == 1) return p.values[r];
  std::vector<int64_t> c = batch;
  if (per_row) {
    c.push_back(r);
    c.push_back(0);
  } else {
    c.push_back(0);
    c.push_back(r);
  }
  return p.values[BroadcastFlat(c, p.shape)];
}

// Centred int64 matmul of A (ashape, 2-D+) and B (bshape, 2-D+), batch dims
// broadcast; zero points per tensor, per row of A, per column of B.
std::vector<int64_t> RefMatMul(const std::vector<int64_t>& a, std::vector<int64_t> ashape, const MatParam& azp,
                               const std::vector<int64_t>& b, std::vector<int64_t> bshape, const MatParam& bzp,
                               std::vector<int64_t>* out_shape) {
  const int64_t m = ashape[ashape.size() - 2], k = ashape.back(), n = bshape.back();
  std::vector<int64_t> ab(ashape.begin(), ashape.end() - 2), bb(bshape.begin(), bshape.end() - 2);
  const size_t rank = std::max(ab.size(), bb.size());
  std::vector<int64_t> ob(rank, 1);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t x = i + ab.size() >= rank ? ab[i + ab.size() - rank] : 1;
    const int64_t y = i + bb.size() >= rank ? bb[i + bb.size() - rank] : 1;
    ob[i] = std::max(x, y);
  }
  *out_shape = ob;
  out_shape->push_back(m);
  out_shape->push_back(n);
  std::vector<int64_t> out;
  for (int64_t bi = 0; bi < Count(ob); ++bi) {
    const std::vector<int64_t> c = Unravel(bi, ob);
    std::vector<int64_t> ca(c.end() - ab.size(), c.end()), cb(c.end() - bb.size(), c.end());
    const int64_t a0 = BroadcastFlat(c, ab) * m * k, b0 = BroadcastFlat(c, bb) * k * n;
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        int64_t s = 0;
        for (int64_t t = 0; t < k; ++t) {
          s += (a[a0 + i * k + t] - ParamAt(azp, ca, i, true)) * (b[b0 + t * n + j] - ParamAt(bzp, cb, j, false));
        }
        out.push_back(s);
      }
    }
  }
  return out;
}

struct MatCase {
  std::vector<int64_t> ashape, bshape;
  DataType at = DataType::kUint8, bt = DataType::kInt8;
  std::vector<int64_t> azp_shape, bzp_shape;  // {-1}: no zero point; {} scalar
};

MatParam MakeParam(const std::vector<int64_t>& shape, DataType t, uint32_t seed) {
  MatParam p{shape, {}};
  auto [lo, hi] = RangeOf(t);
  p.values = Random(static_cast<size_t>(Count(shape)), lo, hi, seed);
  return p;
}

void CheckMatMulInteger(const MatCase& c, uint32_t seed) {
  SCOPED_TRACE(fmt::format("A {} B {}", fmt::join(c.ashape, ","), fmt::join(c.bshape, ",")));
  auto [alo, ahi] = RangeOf(c.at);
  auto [blo, bhi] = RangeOf(c.bt);
  std::vector<int64_t> a = Random(Count(c.ashape), alo, ahi, seed), b = Random(Count(c.bshape), blo, bhi, seed + 1);
  const bool has_azp = c.azp_shape != std::vector<int64_t>{-1}, has_bzp = c.bzp_shape != std::vector<int64_t>{-1};
  MatParam azp = has_azp ? MakeParam(c.azp_shape, c.at, seed + 2) : MatParam{{}, {0}};
  MatParam bzp = has_bzp ? MakeParam(c.bzp_shape, c.bt, seed + 3) : MatParam{{}, {0}};
  runtime::Tensor at = Q(c.at, c.ashape, a), bt = Q(c.bt, c.bshape, b);
  runtime::Tensor azt = Q(c.at, azp.shape, azp.values), bzt = Q(c.bt, bzp.shape, bzp.values);
  ir::Node node = MakeNode("MatMulInteger", {"A", "B", has_azp ? "az" : "", has_bzp ? "bz" : ""}, {"Y"});
  auto r = RunKernel(node, 10, {&at, &bt, has_azp ? &azt : nullptr, has_bzp ? &bzt : nullptr});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  // The reference works on matrices: vectors are promoted here, then the
  // added dim is dropped from the expected shape.
  std::vector<int64_t> as = c.ashape, bs = c.bshape;
  if (as.size() == 1) as.insert(as.begin(), 1);
  if (bs.size() == 1) bs.push_back(1);
  std::vector<int64_t> shape;
  std::vector<int64_t> want = RefMatMul(a, as, azp, b, bs, bzp, &shape);
  if (c.ashape.size() == 1) shape.erase(shape.end() - 2);
  if (c.bshape.size() == 1) shape.pop_back();
  EXPECT_EQ((*r)[0].dtype(), DataType::kInt32);
  EXPECT_EQ((*r)[0].shape(), shape);
  EXPECT_EQ(Ints((*r)[0]), want);
}

TEST(MatMulInteger, MatchesReferenceWithZeroPointsAndBroadcasting) {
  // Per-tensor zero points, all four type combinations.
  for (DataType at : {DataType::kUint8, DataType::kInt8})
    for (DataType bt : {DataType::kUint8, DataType::kInt8})
      CheckMatMulInteger({{13, 127}, {127, 11}, at, bt, {}, {}}, 1);
  CheckMatMulInteger({{13, 127}, {127, 11}, DataType::kUint8, DataType::kInt8, {-1}, {-1}}, 2);  // no zero points
  CheckMatMulInteger({{13, 127}, {127, 11}, DataType::kUint8, DataType::kInt8, {1}, {-1}}, 3);   // [1]: per tensor
  // Per row of A ([M]) and per column of B ([N]).
  CheckMatMulInteger({{13, 31}, {31, 7}, DataType::kUint8, DataType::kUint8, {13}, {7}}, 4);
  // Broadcast batch dims; N-D zero points [..., M, 1] and [..., 1, N].
  CheckMatMulInteger({{2, 1, 13, 17}, {3, 17, 5}, DataType::kInt8, DataType::kUint8, {2, 1, 13, 1}, {3, 1, 5}}, 5);
  CheckMatMulInteger({{3, 13, 9}, {9, 5}, DataType::kUint8, DataType::kInt8, {13, 1}, {5}}, 6);
  CheckMatMulInteger({{13, 9}, {4, 9, 5}, DataType::kUint8, DataType::kInt8, {}, {4, 1, 5}}, 7);
  // Vector operands.
  CheckMatMulInteger({{17}, {17, 5}, DataType::kUint8, DataType::kInt8, {}, {5}}, 8);
  CheckMatMulInteger({{3, 13, 17}, {17}, DataType::kInt8, DataType::kInt8, {13}, {}}, 9);
  CheckMatMulInteger({{0, 17}, {17, 5}, DataType::kUint8, DataType::kInt8, {}, {}}, 10);  // empty
}

TEST(MatMulInteger, ExtremeValuesAreExact) {
  // 255 * 255 products summed over K = 127, with zero points at the far end.
  std::vector<int64_t> a(3 * 127, 255), b(127 * 2, 0);
  runtime::Tensor at = Q(DataType::kUint8, {3, 127}, a), bt = Q(DataType::kUint8, {127, 2}, b);
  runtime::Tensor az = Q(DataType::kUint8, {}, {0}), bz = Q(DataType::kUint8, {}, {255});
  auto r = RunKernel(MakeNode("MatMulInteger", {"A", "B", "a", "b"}, {"Y"}), 10, {&at, &bt, &az, &bz});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Ints((*r)[0]), std::vector<int64_t>(6, -255 * 255 * 127));
}

TEST(MatMulInteger, BadInputsFailNamingTheOperator) {
  runtime::Tensor a = Q(DataType::kUint8, {3, 4}, std::vector<int64_t>(12, 1));
  runtime::Tensor b = Q(DataType::kInt8, {4, 5}, std::vector<int64_t>(20, 1));
  runtime::Tensor b3 = Q(DataType::kInt8, {3, 5}, std::vector<int64_t>(15, 1));
  runtime::Tensor zp2 = Q(DataType::kUint8, {2}, {1, 2});
  runtime::Tensor zp_i8 = Q(DataType::kInt8, {}, {1});
  runtime::Tensor i32 = Q(DataType::kInt32, {3, 4}, std::vector<int64_t>(12, 1));
  runtime::Tensor scalar = Q(DataType::kUint8, {}, {1});
  ir::Node n = MakeNode("MatMulInteger", {"A", "B", "az"}, {"Y"});
  auto expect_fail = [&](std::vector<const runtime::Tensor*> in, const char* needle) {
    auto r = RunKernel(n, 10, in);
    ASSERT_FALSE(r.ok()) << needle;
    EXPECT_NE(r.status().summary().find("MatMulInteger"), std::string::npos) << r.status().summary();
    EXPECT_NE(r.status().summary().find(needle), std::string::npos) << r.status().summary();
  };
  expect_fail({&a, &b3, nullptr}, "inner dims");
  expect_fail({&a, &b, &zp2}, "a_zero_point");    // 2 values for 3 rows
  expect_fail({&a, &b, &zp_i8}, "a_zero_point");  // dtype differs from A
  expect_fail({&i32, &b, nullptr}, "int8 or uint8");
  expect_fail({&scalar, &b, nullptr}, "scalar");
}

// ---- QLinearMatMul ------------------------------------------------------------------

struct QMatCase {
  std::vector<int64_t> ashape, bshape;
  DataType at = DataType::kUint8, bt = DataType::kUint8, yt = DataType::kUint8;
  std::vector<int64_t> a_param_shape, b_param_shape;  // scale and zero point shapes
  DataType scale_type = DataType::kFloat32;
  int64_t opset = 10;
};

runtime::Tensor ScaleTensor(DataType t, std::vector<int64_t> shape, const std::vector<float>& v) {
  if (t == DataType::kFloat32) return F32(std::move(shape), v);
  std::vector<uint16_t> h(v.size());
  for (size_t i = 0; i < v.size(); ++i) h[i] = t == DataType::kFloat16 ? FloatToFloat16(v[i]) : FloatToBfloat16(v[i]);
  return MakeTensor(t, std::move(shape), h);
}

void CheckQLinearMatMul(const QMatCase& c, uint32_t seed) {
  SCOPED_TRACE(fmt::format("A {} B {} opset {}", fmt::join(c.ashape, ","), fmt::join(c.bshape, ","), c.opset));
  auto [alo, ahi] = RangeOf(c.at);
  auto [blo, bhi] = RangeOf(c.bt);
  std::vector<int64_t> a = Random(Count(c.ashape), alo, ahi, seed), b = Random(Count(c.bshape), blo, bhi, seed + 1);
  MatParam azp = MakeParam(c.a_param_shape, c.at, seed + 2), bzp = MakeParam(c.b_param_shape, c.bt, seed + 3);
  std::mt19937 rng(seed + 4);
  std::uniform_real_distribution<float> ud(0.002f, 0.02f);
  const bool f16 = c.scale_type == DataType::kFloat16;
  auto scale_values = [&](const std::vector<int64_t>& shape) {
    std::vector<float> v(Count(shape));
    for (float& x : v) x = f16 ? F16(ud(rng)) : ud(rng);
    return v;
  };
  std::vector<float> as = scale_values(c.a_param_shape), bs = scale_values(c.b_param_shape);
  const float ys = f16 ? F16(ud(rng) * 40) : ud(rng) * 40;
  auto [ylo, yhi] = RangeOf(c.yt);
  const int64_t yzp = Random(1, ylo, yhi, seed + 5)[0];
  runtime::Tensor at = Q(c.at, c.ashape, a), bt = Q(c.bt, c.bshape, b);
  runtime::Tensor azt = Q(c.at, c.a_param_shape, azp.values), bzt = Q(c.bt, c.b_param_shape, bzp.values);
  runtime::Tensor ast = ScaleTensor(c.scale_type, c.a_param_shape, as),
                  bst = ScaleTensor(c.scale_type, c.b_param_shape, bs);
  runtime::Tensor yst = ScaleTensor(c.scale_type, {}, {ys}), yzt = Q(c.yt, {}, {yzp});
  ir::Node node = MakeNode("QLinearMatMul", {"a", "as", "az", "b", "bs", "bz", "ys", "yz"}, {"y"});
  auto r = RunKernel(node, c.opset, {&at, &ast, &azt, &bt, &bst, &bzt, &yst, &yzt});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  std::vector<int64_t> shape;
  std::vector<int64_t> acc = RefMatMul(a, c.ashape, azp, b, c.bshape, bzp, &shape);
  ASSERT_EQ((*r)[0].shape(), shape);
  ASSERT_EQ((*r)[0].dtype(), c.yt);
  std::vector<int64_t> got = Ints((*r)[0]);
  const int64_t m = shape[shape.size() - 2], n = shape.back();
  std::vector<int64_t> ob(shape.begin(), shape.end() - 2);
  std::vector<int64_t> ab(c.ashape.begin(), c.ashape.end() - 2), bb(c.bshape.begin(), c.bshape.end() - 2);
  for (size_t i = 0; i < got.size(); ++i) {
    const int64_t o = static_cast<int64_t>(i) / (m * n), r0 = (static_cast<int64_t>(i) / n) % m,
                  c0 = static_cast<int64_t>(i) % n;
    const std::vector<int64_t> co = Unravel(o, ob);
    const std::vector<int64_t> ca(co.end() - ab.size(), co.end()), cb(co.end() - bb.size(), co.end());
    // Scale indices: the same layout rule as the zero points (index vectors).
    MatParam ai{c.a_param_shape, {}}, bi{c.b_param_shape, {}};
    for (int64_t k = 0; k < Count(c.a_param_shape); ++k) ai.values.push_back(k);
    for (int64_t k = 0; k < Count(c.b_param_shape); ++k) bi.values.push_back(k);
    const float sa = as[ParamAt(ai, ca, r0, true)], sb = bs[ParamAt(bi, cb, c0, false)];
    // numpy: a_scale * b_scale / y_scale in the scales' dtype.
    const float mult = f16 ? F16(F16(sa * sb) / ys) : (sa * sb) / ys;
    ASSERT_EQ(got[i], Requantize(static_cast<int32_t>(acc[i]), mult, yzp, c.yt))
        << "element " << i << " acc " << acc[i];
  }
}

TEST(QLinearMatMul, MatchesReference) {
  for (DataType at : {DataType::kUint8, DataType::kInt8})
    for (DataType yt : {DataType::kUint8, DataType::kInt8})
      CheckQLinearMatMul({{13, 127}, {127, 11}, at, DataType::kInt8, yt, {}, {}}, 11);
  // Per row of a, per column of b.
  CheckQLinearMatMul({{13, 31}, {31, 7}, DataType::kUint8, DataType::kUint8, DataType::kUint8, {13}, {7}}, 12);
  // Batches broadcast, N-D parameters.
  CheckQLinearMatMul(
      {{2, 1, 13, 9}, {3, 9, 5}, DataType::kInt8, DataType::kUint8, DataType::kInt8, {2, 1, 13, 1}, {3, 1, 5}}, 13);
  CheckQLinearMatMul({{3, 13, 9}, {9, 5}, DataType::kUint8, DataType::kInt8, DataType::kUint8, {1}, {5}}, 14);
  // Opset 21: float16 and float32 scales.
  CheckQLinearMatMul(
      {{13, 31}, {31, 7}, DataType::kUint8, DataType::kInt8, DataType::kInt8, {13}, {}, DataType::kFloat16, 21}, 15);
  CheckQLinearMatMul(
      {{2, 13, 9}, {2, 9, 5}, DataType::kInt8, DataType::kInt8, DataType::kUint8, {}, {5}, DataType::kFloat32, 21}, 16);
}

// The ONNX node test's 2-D uint8 case, with its expected output.
TEST(QLinearMatMul, OnnxExample) {
  runtime::Tensor a = Q(DataType::kUint8, {2, 4}, {208, 236, 0, 238, 3, 214, 255, 29});
  runtime::Tensor b = Q(DataType::kUint8, {4, 3}, {152, 51, 244, 60, 26, 255, 0, 127, 246, 127, 254, 247});
  runtime::Tensor as = F32({1}, {0.0066f}), bs = F32({1}, {0.00705f}), ys = F32({1}, {0.0107f});
  runtime::Tensor az = Q(DataType::kUint8, {1}, {113}), bz = Q(DataType::kUint8, {1}, {114}),
                  yz = Q(DataType::kUint8, {1}, {118});
  auto r = RunKernel(MakeNode("QLinearMatMul", {"a", "as", "az", "b", "bs", "bz", "ys", "yz"}, {"y"}), 10,
                     {&a, &as, &az, &b, &bs, &bz, &ys, &yz});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Ints((*r)[0]), (std::vector<int64_t>{168, 115, 255, 1, 66, 151}));
}

// acc * 0.5 lands on .5 for odd sums: ties go to even; large sums saturate.
TEST(QLinearMatMul, RoundsHalfToEvenAndSaturatesBothEnds) {
  // a is a column of sums, b = [1]: y = a * 0.5 + zp.
  std::vector<int64_t> sums = {1, 3, 5, -1, -3, -5, 7, 127, -128};
  runtime::Tensor a = Q(DataType::kInt8, {9, 1}, sums), b = Q(DataType::kInt8, {1, 1}, {1});
  runtime::Tensor half = F32({}, {0.5f}), one = F32({}, {1.0f});
  runtime::Tensor z8 = Q(DataType::kInt8, {}, {0});
  runtime::Tensor yz = Q(DataType::kInt8, {}, {0});
  ir::Node node = MakeNode("QLinearMatMul", {"a", "as", "az", "b", "bs", "bz", "ys", "yz"}, {"y"});
  auto r = RunKernel(node, 10, {&a, &half, &z8, &b, &one, &z8, &one, &yz});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Ints((*r)[0]), (std::vector<int64_t>{0, 2, 2, 0, -2, -2, 4, 64, -64}));
  // Saturation: y_scale small, both ends of int8 and uint8.
  runtime::Tensor tiny = F32({}, {0.01f});
  r = RunKernel(node, 10, {&a, &one, &z8, &b, &one, &z8, &tiny, &yz});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(Ints((*r)[0]), (std::vector<int64_t>{100, 127, 127, -100, -128, -128, 127, 127, -128}));
  runtime::Tensor yzu = Q(DataType::kUint8, {}, {128});
  r = RunKernel(node, 10, {&a, &one, &z8, &b, &one, &z8, &tiny, &yzu});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(Ints((*r)[0]), (std::vector<int64_t>{228, 255, 255, 28, 0, 0, 255, 255, 0}));
}

TEST(QLinearMatMul, BadInputsFail) {
  runtime::Tensor a = Q(DataType::kUint8, {3, 4}, std::vector<int64_t>(12, 1));
  runtime::Tensor b = Q(DataType::kUint8, {4, 5}, std::vector<int64_t>(20, 1));
  runtime::Tensor s = F32({}, {0.5f}), s4 = F32({4}, {1, 1, 1, 1}), s5 = F32({5}, {1, 1, 1, 1, 1});
  runtime::Tensor z = Q(DataType::kUint8, {}, {1}), zi = Q(DataType::kInt8, {}, {1});
  runtime::Tensor h = ScaleTensor(DataType::kFloat16, {}, {0.5f});
  ir::Node node = MakeNode("QLinearMatMul", {"a", "as", "az", "b", "bs", "bz", "ys", "yz"}, {"y"});
  auto fails = [&](int64_t opset, std::vector<const runtime::Tensor*> in, const char* needle) {
    auto r = RunKernel(node, opset, in);
    ASSERT_FALSE(r.ok()) << needle;
    EXPECT_NE(r.status().summary().find("QLinearMatMul"), std::string::npos) << r.status().summary();
    EXPECT_NE(r.status().summary().find(needle), std::string::npos) << r.status().summary();
  };
  EXPECT_TRUE(RunKernel(node, 10, {&a, &s, &z, &b, &s5, &z, &s, &z}).ok());
  fails(10, {&a, &s4, &z, &b, &s, &z, &s, &z}, "a_scale");  // 4 values for 3 rows
  fails(10, {&a, &s, &z, &b, &s4, &z, &s, &z}, "b_scale");  // 4 values for 5 columns
  fails(10, {&a, &s, &zi, &b, &s, &z, &s, &z}, "a_zero_point");
  fails(10, {&a, &s, &z, &b, &s, &z, &s5, &z}, "y_scale");
  fails(10, {&a, &h, &z, &b, &h, &z, &h, &z}, "float32");  // float16 scales need opset 21
  EXPECT_TRUE(RunKernel(node, 21, {&a, &h, &z, &b, &h, &z, &h, &z}).ok());
  fails(21, {&a, &h, &z, &b, &s, &z, &h, &z}, "must match");
  fails(10, {&a, &s, &z, &b, &s, &z, &s, nullptr}, "y_zero_point");
}

// ---- convolution references ---------------------------------------------------------

struct ConvCase {
  std::vector<int64_t> xshape, wshape;
  int64_t group = 1;
  std::vector<int64_t> strides{}, dilations{}, pads{};  // empty: defaults
  std::string auto_pad{};                             // "" : NOTSET
  bool kernel_shape_attr = false;
  DataType xt = DataType::kUint8, wt = DataType::kInt8;
  bool x_zp = true;
  int w_zp = 2;  // 0: none, 1: per tensor, 2: per output channel
};

// Explicit pads for the case (auto_pad resolved as the spec says).
std::vector<int64_t> ResolvePads(const ConvCase& c, const std::vector<int64_t>& strides,
                                 const std::vector<int64_t>& dil) {
  const size_t r = c.xshape.size() - 2;
  std::vector<int64_t> pads = c.pads.empty() ? std::vector<int64_t>(2 * r, 0) : c.pads;
  if (c.auto_pad == "VALID") return std::vector<int64_t>(2 * r, 0);
  if (c.auto_pad.rfind("SAME", 0) == 0) {
    for (size_t i = 0; i < r; ++i) {
      const int64_t in = c.xshape[i + 2], out = (in + strides[i] - 1) / strides[i];
      const int64_t eff = (c.wshape[i + 2] - 1) * dil[i] + 1;
      const int64_t total = std::max<int64_t>(0, (out - 1) * strides[i] + eff - in);
      const int64_t small = total / 2, big = total - small;
      pads[i] = c.auto_pad == "SAME_UPPER" ? small : big;
      pads[i + r] = total - pads[i];
    }
  }
  return pads;
}

// Direct convolution in int64; positions outside x read x_zero_point.
std::vector<int64_t> RefConv(const ConvCase& c, const std::vector<int64_t>& x, int64_t xzp,
                             const std::vector<int64_t>& w, const std::vector<int64_t>& wzp,
                             std::vector<int64_t>* out_shape) {
  const size_t r = c.xshape.size() - 2;
  std::vector<int64_t> strides = c.strides.empty() ? std::vector<int64_t>(r, 1) : c.strides;
  std::vector<int64_t> dil = c.dilations.empty() ? std::vector<int64_t>(r, 1) : c.dilations;
  std::vector<int64_t> pads = ResolvePads(c, strides, dil);
  const int64_t N = c.xshape[0], C = c.xshape[1], M = c.wshape[0], cg = C / c.group, mg = M / c.group;
  std::vector<int64_t> xs(c.xshape.begin() + 2, c.xshape.end()), ks(c.wshape.begin() + 2, c.wshape.end()), os(r);
  for (size_t i = 0; i < r; ++i) {
    os[i] = (xs[i] + pads[i] + pads[i + r] - ((ks[i] - 1) * dil[i] + 1)) / strides[i] + 1;
  }
  *out_shape = {N, M};
  out_shape->insert(out_shape->end(), os.begin(), os.end());
  std::vector<int64_t> out;
  const int64_t image = Count(xs), taps = Count(ks);
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t m = 0; m < M; ++m) {
      const int64_t g = m / mg;
      for (int64_t o = 0; o < Count(os); ++o) {
        const std::vector<int64_t> oc = Unravel(o, os);
        int64_t s = 0;
        for (int64_t ci = 0; ci < cg; ++ci) {
          const int64_t ch = g * cg + ci;
          for (int64_t t = 0; t < taps; ++t) {
            const std::vector<int64_t> kc = Unravel(t, ks);
            int64_t flat = 0;
            bool inside = true;
            for (size_t d = 0; d < r; ++d) {
              const int64_t p = oc[d] * strides[d] - pads[d] + kc[d] * dil[d];
              inside = inside && p >= 0 && p < xs[d];
              flat = flat * xs[d] + p;
            }
            const int64_t xv = inside ? x[(n * C + ch) * image + flat] : xzp;
            s += (xv - xzp) * (w[(m * cg + ci) * taps + t] - wzp[m]);
          }
        }
        out.push_back(s);
      }
    }
  }
  return out;
}

std::vector<ir::Attribute> ConvAttrs(const ConvCase& c) {
  std::vector<ir::Attribute> attrs;
  if (c.group != 1) attrs.push_back(IntAttr("group", c.group));
  if (!c.strides.empty()) attrs.push_back(IntsAttr("strides", c.strides));
  if (!c.dilations.empty()) attrs.push_back(IntsAttr("dilations", c.dilations));
  if (!c.pads.empty()) attrs.push_back(IntsAttr("pads", c.pads));
  if (!c.auto_pad.empty()) attrs.push_back(StringAttr("auto_pad", c.auto_pad));
  if (c.kernel_shape_attr) attrs.push_back(IntsAttr("kernel_shape", {c.wshape.begin() + 2, c.wshape.end()}));
  return attrs;
}

struct ConvData {
  std::vector<int64_t> x, w, wzp;
  int64_t xzp = 0;
};

ConvData MakeConvData(const ConvCase& c, uint32_t seed) {
  ConvData d;
  auto [xlo, xhi] = RangeOf(c.xt);
  auto [wlo, whi] = RangeOf(c.wt);
  d.x = Random(Count(c.xshape), xlo, xhi, seed);
  d.w = Random(Count(c.wshape), wlo, whi, seed + 1);
  d.xzp = c.x_zp ? Random(1, xlo, xhi, seed + 2)[0] : 0;
  const int64_t M = c.wshape[0];
  if (c.w_zp == 2)
    d.wzp = Random(M, wlo, whi, seed + 3);
  else
    d.wzp.assign(M, c.w_zp == 1 ? Random(1, wlo, whi, seed + 3)[0] : 0);
  return d;
}

runtime::Tensor WZeroPoint(const ConvCase& c, const ConvData& d) {
  return c.w_zp == 2 ? Q(c.wt, {c.wshape[0]}, d.wzp) : Q(c.wt, {}, {d.wzp[0]});
}

void CheckConvInteger(const ConvCase& c, uint32_t seed) {
  SCOPED_TRACE(fmt::format("x {} w {} group {} auto_pad '{}'", fmt::join(c.xshape, ","), fmt::join(c.wshape, ","),
                           c.group, c.auto_pad));
  ConvData d = MakeConvData(c, seed);
  runtime::Tensor xt = Q(c.xt, c.xshape, d.x), wt = Q(c.wt, c.wshape, d.w);
  runtime::Tensor xz = Q(c.xt, {}, {d.xzp}), wz = WZeroPoint(c, d);
  ir::Node node = MakeNode("ConvInteger", {"x", "w", c.x_zp ? "xz" : "", c.w_zp ? "wz" : ""}, {"y"}, ConvAttrs(c));
  auto r = RunKernel(node, 10, {&xt, &wt, c.x_zp ? &xz : nullptr, c.w_zp ? &wz : nullptr});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  std::vector<int64_t> shape;
  std::vector<int64_t> want = RefConv(c, d.x, d.xzp, d.w, d.wzp, &shape);
  EXPECT_EQ((*r)[0].dtype(), DataType::kInt32);
  ASSERT_EQ((*r)[0].shape(), shape);
  EXPECT_EQ(Ints((*r)[0]), want);
  // Shape inference agrees.
  ir::TypeInfo xi = ops::TensorType(c.xt, c.xshape), wi = ops::TensorType(c.wt, c.wshape);
  auto inferred = InferNode(node, 10, {&xi, &wi, nullptr, nullptr});
  ASSERT_TRUE(inferred.ok()) << inferred.status().ToString();
  EXPECT_EQ(ir::TypeToString((*inferred)[0]), ir::TypeToString(ops::TensorType(DataType::kInt32, shape)));
}

TEST(ConvInteger, MatchesReference) {
  // 127 input channels, 13 output channels, odd spatial sizes, padding that
  // reads the x zero point.
  CheckConvInteger({{1, 127, 7, 9}, {13, 127, 3, 3}, 1, {}, {}, {1, 1, 1, 1}}, 21);
  // Groups, strides, dilations, asymmetric pads; every type pairing.
  for (DataType xt : {DataType::kUint8, DataType::kInt8})
    for (DataType wt : {DataType::kUint8, DataType::kInt8})
      CheckConvInteger({{2, 12, 13, 11}, {9, 4, 3, 2}, 3, {2, 1}, {2, 1}, {1, 0, 2, 1}, "", true, xt, wt}, 22);
  // Depthwise, per-tensor w zero point, no x zero point.
  CheckConvInteger({{1, 13, 9, 7},
                    {13, 1, 3, 3},
                    13,
                    {1, 2},
                    {},
                    {1, 1, 1, 1},
                    "",
                    false,
                    DataType::kUint8,
                    DataType::kUint8,
                    false,
                    1},
                   23);
  // auto_pad.
  for (const char* pad : {"SAME_UPPER", "SAME_LOWER", "VALID"})
    CheckConvInteger({{1, 5, 13, 10}, {7, 5, 4, 3}, 1, {2, 3}, {}, {}, pad}, 24);
  // 1-D and 3-D, kernel_shape given; no zero points at all.
  CheckConvInteger({{2, 3, 127}, {5, 3, 5}, 1, {3}, {2}, {2, 3}, "", true, DataType::kUint8, DataType::kInt8, false, 0},
                   25);
  CheckConvInteger({{1, 2, 5, 7, 3}, {3, 2, 3, 3, 1}, 1, {1, 2, 1}, {}, {1, 0, 0, 1, 1, 0}, "", true}, 26);
}

TEST(ConvInteger, BadInputsFail) {
  runtime::Tensor x = Q(DataType::kUint8, {1, 4, 5, 5}, std::vector<int64_t>(100, 1));
  runtime::Tensor w = Q(DataType::kInt8, {6, 2, 3, 3}, std::vector<int64_t>(108, 1));
  runtime::Tensor wz5 = Q(DataType::kInt8, {5}, {0, 0, 0, 0, 0});
  runtime::Tensor xz2 = Q(DataType::kUint8, {2}, {0, 0});
  runtime::Tensor x2 = Q(DataType::kUint8, {4, 25}, std::vector<int64_t>(100, 1));
  ir::Node n = MakeNode("ConvInteger", {"x", "w", "xz", "wz"}, {"y"}, {IntAttr("group", 2)});
  auto fails = [&](const ir::Node& node, std::vector<const runtime::Tensor*> in, const char* needle) {
    auto r = RunKernel(node, 10, in);
    ASSERT_FALSE(r.ok()) << needle;
    EXPECT_NE(r.status().summary().find("ConvInteger"), std::string::npos) << r.status().summary();
    EXPECT_NE(r.status().summary().find(needle), std::string::npos) << r.status().summary();
  };
  EXPECT_TRUE(RunKernel(n, 10, {&x, &w, nullptr, nullptr}).ok());
  fails(n, {&x, &w, nullptr, &wz5}, "w_zero_point");
  fails(n, {&x, &w, &xz2, nullptr}, "x_zero_point");
  fails(n, {&x2, &w, nullptr, nullptr}, "rank");
  fails(MakeNode("ConvInteger", {"x", "w"}, {"y"}, {IntAttr("group", 3)}), {&x, &w}, "group");
  fails(MakeNode("ConvInteger", {"x", "w"}, {"y"}, {IntAttr("group", 2), IntsAttr("strides", {0, 1})}), {&x, &w},
        "stride");
  fails(n, {&x, &x, nullptr, nullptr}, "w");
}

// ---- QLinearConv ----------------------------------------------------------------------

void CheckQLinearConv(const ConvCase& c, DataType yt, bool per_channel_scale, bool bias, uint32_t seed) {
  SCOPED_TRACE(fmt::format("x {} w {} group {} y {}", fmt::join(c.xshape, ","), fmt::join(c.wshape, ","), c.group,
                           ir::DataTypeName(yt)));
  ConvData d = MakeConvData(c, seed);
  const int64_t M = c.wshape[0];
  std::mt19937 rng(seed + 7);
  std::uniform_real_distribution<float> ud(0.001f, 0.01f);
  const float xs = ud(rng), ys = ud(rng) * 30;
  std::vector<float> ws(per_channel_scale ? M : 1);
  for (float& v : ws) v = ud(rng);
  std::vector<int64_t> b = bias ? Random(M, -20000, 20000, seed + 8) : std::vector<int64_t>(M, 0);
  auto [ylo, yhi] = RangeOf(yt);
  const int64_t yzp = Random(1, ylo, yhi, seed + 9)[0];
  runtime::Tensor xt = Q(c.xt, c.xshape, d.x), wt = Q(c.wt, c.wshape, d.w);
  runtime::Tensor xz = Q(c.xt, {}, {d.xzp}), wz = WZeroPoint(c, d);
  runtime::Tensor xst = F32({}, {xs}), yst = F32({}, {ys}), yz = Q(yt, {}, {yzp});
  runtime::Tensor wst = per_channel_scale ? F32({M}, ws) : F32({}, ws);
  runtime::Tensor bt = Q(DataType::kInt32, {M}, b);
  std::vector<std::string> names = {"x", "xs", "xz", "w", "ws", "wz", "ys", "yz"};
  if (bias) names.push_back("B");
  ir::Node node = MakeNode("QLinearConv", names, {"y"}, ConvAttrs(c));
  std::vector<const runtime::Tensor*> in = {&xt, &xst, &xz, &wt, &wst, &wz, &yst, &yz};
  if (bias) in.push_back(&bt);
  auto r = RunKernel(node, 10, in);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  std::vector<int64_t> shape;
  std::vector<int64_t> acc = RefConv(c, d.x, d.xzp, d.w, d.wzp, &shape);
  ASSERT_EQ((*r)[0].shape(), shape);
  ASSERT_EQ((*r)[0].dtype(), yt);
  std::vector<int64_t> got = Ints((*r)[0]);
  const int64_t cols = Count(shape) / (shape[0] * M);
  for (size_t i = 0; i < got.size(); ++i) {
    const int64_t m = (static_cast<int64_t>(i) / cols) % M;
    const float mult = (xs * ws[per_channel_scale ? m : 0]) / ys;
    ASSERT_EQ(got[i], Requantize(acc[i] + b[m], mult, yzp, yt)) << "element " << i;
  }
  ir::TypeInfo xi = ops::TensorType(c.xt, c.xshape), wi = ops::TensorType(c.wt, c.wshape);
  ir::TypeInfo yzi = ops::TensorType(yt, std::vector<int64_t>{});
  std::vector<const ir::TypeInfo*> types = {&xi, nullptr, nullptr, &wi, nullptr, nullptr, nullptr, &yzi};
  if (bias) types.push_back(nullptr);
  auto inferred = InferNode(node, 10, types);
  ASSERT_TRUE(inferred.ok()) << inferred.status().ToString();
  EXPECT_EQ(ir::TypeToString((*inferred)[0]), ir::TypeToString(ops::TensorType(yt, shape)));
}

TEST(QLinearConv, MatchesReference) {
  CheckQLinearConv({{1, 127, 7, 9}, {13, 127, 3, 3}, 1, {}, {}, {1, 1, 1, 1}}, DataType::kUint8, true, true, 31);
  CheckQLinearConv({{1, 127, 7, 9}, {13, 127, 3, 3}, 1, {}, {}, {1, 1, 1, 1}}, DataType::kInt8, false, false, 32);
  CheckQLinearConv(
      {{2, 12, 13, 11}, {9, 4, 3, 2}, 3, {2, 1}, {2, 1}, {1, 0, 2, 1}, "", true, DataType::kInt8, DataType::kUint8},
      DataType::kInt8, true, true, 33);
  CheckQLinearConv(
      {{1, 5, 13, 10}, {7, 5, 4, 3}, 1, {2, 3}, {}, {}, "SAME_LOWER", true, DataType::kUint8, DataType::kInt8, true, 1},
      DataType::kUint8, false, true, 34);
  CheckQLinearConv({{2, 3, 127}, {5, 3, 5}, 1, {3}, {2}, {2, 3}}, DataType::kUint8, true, false, 35);
}

// The ONNX node test's case (test_qlinearconv), with its expected output.
TEST(QLinearConv, OnnxExample) {
  runtime::Tensor x = Q(DataType::kUint8, {1, 1, 7, 7},
                        {255, 174, 162, 25,  203, 168, 58,  15,  59,  237, 95,  129, 0,  64,  56, 242, 153,
                         221, 168, 12,  166, 232, 178, 186, 195, 237, 162, 237, 188, 39, 124, 77, 80,  102,
                         43,  127, 230, 21,  83,  41,  40,  134, 255, 154, 92,  141, 42, 148, 247});
  runtime::Tensor xs = F32({}, {0.00369204697f}), ws = F32({1}, {0.00172794575f}), ys = F32({}, {0.00162681262f});
  runtime::Tensor xz = Q(DataType::kUint8, {}, {132}), w = Q(DataType::kUint8, {1, 1, 1, 1}, {0});
  runtime::Tensor wz = Q(DataType::kUint8, {}, {255}), yz = Q(DataType::kUint8, {}, {123});
  auto r = RunKernel(MakeNode("QLinearConv", {"x", "xs", "xz", "w", "ws", "wz", "ys", "yz"}, {"y"}), 10,
                     {&x, &xs, &xz, &w, &ws, &wz, &ys, &yz});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Ints((*r)[0]),
            (std::vector<int64_t>{0,   81,  93,  230, 52,  87,  197, 240, 196, 18,  160, 126, 255, 191, 199, 13,  102,
                                  34,  87,  243, 89,  23,  77,  69,  60,  18,  93,  18,  67,  216, 131, 178, 175, 153,
                                  212, 128, 25,  234, 172, 214, 215, 121, 0,   101, 163, 114, 213, 107, 8}));
}

// sum * 0.5: ties to even; sums beyond the range saturate at both ends.
TEST(QLinearConv, RoundsHalfToEvenAndSaturates) {
  runtime::Tensor x = Q(DataType::kInt8, {1, 1, 1, 9}, {1, 3, 5, -1, -3, -5, 7, 127, -128});
  runtime::Tensor w = Q(DataType::kInt8, {2, 1, 1, 1}, {1, 100});
  runtime::Tensor half = F32({}, {0.5f}), one = F32({}, {1.0f}), ws = F32({2}, {1.0f, 1.0f});
  runtime::Tensor z = Q(DataType::kInt8, {}, {0}), wz = Q(DataType::kInt8, {2}, {0, 0});
  runtime::Tensor yz = Q(DataType::kUint8, {}, {10});
  auto r = RunKernel(MakeNode("QLinearConv", {"x", "xs", "xz", "w", "ws", "wz", "ys", "yz"}, {"y"}), 10,
                     {&x, &half, &z, &w, &ws, &wz, &one, &yz});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Ints((*r)[0]), (std::vector<int64_t>{10, 12, 12, 10, 8, 8, 14, 74, 0,        // channel 0: x * 0.5 + 10
                                                 60, 160, 255, 0, 0, 0, 255, 255, 0}));  // channel 1: x * 50 + 10
}

TEST(QLinearConv, BadInputsFail) {
  runtime::Tensor x = Q(DataType::kUint8, {1, 2, 5, 5}, std::vector<int64_t>(50, 1));
  runtime::Tensor w = Q(DataType::kInt8, {3, 2, 3, 3}, std::vector<int64_t>(54, 1));
  runtime::Tensor s = F32({}, {0.1f}), s2 = F32({2}, {0.1f, 0.1f}),
                  d = MakeTensor(DataType::kFloat64, {}, std::vector<double>{0.1});
  runtime::Tensor xz = Q(DataType::kUint8, {}, {0}), wz = Q(DataType::kInt8, {}, {0}),
                  yz = Q(DataType::kUint8, {}, {0});
  runtime::Tensor b3 = Q(DataType::kInt32, {3}, {1, 2, 3}), b2 = Q(DataType::kInt32, {2}, {1, 2});
  runtime::Tensor b3u = Q(DataType::kUint8, {3}, {1, 2, 3});
  ir::Node node = MakeNode("QLinearConv", {"x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "B"}, {"y"});
  auto fails = [&](std::vector<const runtime::Tensor*> in, const char* needle) {
    auto r = RunKernel(node, 10, in);
    ASSERT_FALSE(r.ok()) << needle;
    EXPECT_NE(r.status().summary().find("QLinearConv"), std::string::npos) << r.status().summary();
    EXPECT_NE(r.status().summary().find(needle), std::string::npos) << r.status().summary();
  };
  EXPECT_TRUE(RunKernel(node, 10, {&x, &s, &xz, &w, &s, &wz, &s, &yz, &b3}).ok());
  fails({&x, &s, &xz, &w, &s2, &wz, &s, &yz, &b3}, "w_scale");  // 2 scales for 3 channels
  fails({&x, &s2, &xz, &w, &s, &wz, &s, &yz, &b3}, "x_scale");
  fails({&x, &s, &xz, &w, &s, &wz, &s, &yz, &b2}, "B");
  fails({&x, &s, &xz, &w, &s, &wz, &s, &yz, &b3u}, "B");
  fails({&x, &d, &xz, &w, &s, &wz, &s, &yz, &b3}, "float32");
  fails({&x, &s, &xz, &w, &s, &wz, &s, &s, &b3}, "y_zero_point");
  fails({&x, &s, nullptr, &w, &s, &wz, &s, &yz, &b3}, "x_zero_point");
}

// ---- shape inference -------------------------------------------------------------------

TEST(QuantizedLinearInference, TypesShapesAndErrors) {
  using ir::Dim;
  ir::TypeInfo a =
      ops::TensorType(DataType::kUint8, std::vector<Dim>{Dim::Symbolic("B"), Dim::Known(13), Dim::Known(7)});
  ir::TypeInfo b = ops::TensorType(DataType::kInt8, std::vector<int64_t>{7, 5});
  ir::TypeInfo b6 = ops::TensorType(DataType::kInt8, std::vector<int64_t>{6, 5});
  ir::TypeInfo zpa = ops::TensorType(DataType::kUint8, std::vector<int64_t>{13});
  ir::TypeInfo zpa_nd_bad = ops::TensorType(DataType::kUint8, std::vector<int64_t>{13, 2});
  ir::TypeInfo zpb_wrong = ops::TensorType(DataType::kUint8, std::vector<int64_t>{});
  ir::TypeInfo f = ops::TensorType(DataType::kFloat32, std::vector<int64_t>{7, 5});
  ir::Node mmi = MakeNode("MatMulInteger", {"a", "b", "az", "bz"}, {"y"});
  auto out = InferNode(mmi, 10, {&a, &b, &zpa, nullptr});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(ir::TypeToString((*out)[0]), "int32[B,13,5]");
  EXPECT_FALSE(InferNode(mmi, 10, {&a, &b6, nullptr, nullptr}).ok());     // inner dims
  EXPECT_FALSE(InferNode(mmi, 10, {&a, &f, nullptr, nullptr}).ok());      // float B
  EXPECT_FALSE(InferNode(mmi, 10, {&a, &b, &zpa_nd_bad, nullptr}).ok());  // [M, 2]
  EXPECT_FALSE(InferNode(mmi, 10, {&a, &b, nullptr, &zpb_wrong}).ok());   // uint8 zero point for int8 B

  ir::TypeInfo s = ops::TensorType(DataType::kFloat32, std::vector<int64_t>{});
  ir::TypeInfo h = ops::TensorType(DataType::kFloat16, std::vector<int64_t>{});
  ir::TypeInfo za = ops::TensorType(DataType::kUint8, std::vector<int64_t>{});
  ir::TypeInfo zb = ops::TensorType(DataType::kInt8, std::vector<int64_t>{});
  ir::Node qmm = MakeNode("QLinearMatMul", {"a", "as", "az", "b", "bs", "bz", "ys", "yz"}, {"y"});
  out = InferNode(qmm, 10, {&a, &s, &za, &b, &s, &zb, &s, &zb});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(ir::TypeToString((*out)[0]), "int8[B,13,5]");                      // y_zero_point's dtype
  EXPECT_FALSE(InferNode(qmm, 10, {&a, &h, &za, &b, &h, &zb, &h, &zb}).ok());  // float16 scales before 21
  EXPECT_TRUE(InferNode(qmm, 21, {&a, &h, &za, &b, &h, &zb, &h, &zb}).ok());
  EXPECT_FALSE(InferNode(qmm, 21, {&a, &h, &za, &b, &s, &zb, &h, &zb}).ok());  // mixed scale dtypes
  ir::TypeInfo s3 = ops::TensorType(DataType::kFloat32, std::vector<int64_t>{3});
  EXPECT_FALSE(InferNode(qmm, 10, {&a, &s, &za, &b, &s, &zb, &s3, &zb}).ok());  // y_scale per tensor

  ir::TypeInfo x = ops::TensorType(DataType::kUint8,
                                   std::vector<Dim>{Dim::Symbolic("N"), Dim::Known(4), Dim::Known(9), Dim::Known(7)});
  ir::TypeInfo w = ops::TensorType(DataType::kInt8, std::vector<int64_t>{6, 2, 3, 3});
  ir::TypeInfo wz6 = ops::TensorType(DataType::kInt8, std::vector<int64_t>{6});
  ir::TypeInfo wz5 = ops::TensorType(DataType::kInt8, std::vector<int64_t>{5});
  ir::Node ci =
      MakeNode("ConvInteger", {"x", "w", "", "wz"}, {"y"}, {IntAttr("group", 2), IntsAttr("strides", {2, 2})});
  out = InferNode(ci, 10, {&x, &w, nullptr, &wz6});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(ir::TypeToString((*out)[0]), "int32[N,6,4,3]");
  EXPECT_FALSE(InferNode(ci, 10, {&x, &w, nullptr, &wz5}).ok());
  ir::Node ci3 = MakeNode("ConvInteger", {"x", "w"}, {"y"}, {IntAttr("group", 3)});
  EXPECT_FALSE(InferNode(ci3, 10, {&x, &w}).ok());
  ir::TypeInfo unknown = ops::TensorTypeUnknownShape(DataType::kUint8);
  out = InferNode(MakeNode("ConvInteger", {"x", "w"}, {"y"}), 10, {&unknown, &w});
  ASSERT_TRUE(out.ok());
  EXPECT_EQ((*out)[0].elem_type, DataType::kInt32);

  ir::TypeInfo bias = ops::TensorType(DataType::kInt32, std::vector<int64_t>{6});
  ir::TypeInfo bias_f = ops::TensorType(DataType::kFloat32, std::vector<int64_t>{6});
  ir::TypeInfo bias5 = ops::TensorType(DataType::kInt32, std::vector<int64_t>{5});
  ir::Node qc = MakeNode("QLinearConv", {"x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "B"}, {"y"},
                         {IntAttr("group", 2), IntsAttr("pads", {1, 1, 1, 1})});
  out = InferNode(qc, 10, {&x, &s, &za, &w, &s, &zb, &s, &zb, &bias});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(ir::TypeToString((*out)[0]), "int8[N,6,9,7]");
  EXPECT_FALSE(InferNode(qc, 10, {&x, &s, &za, &w, &s, &zb, &s, &zb, &bias_f}).ok());
  EXPECT_FALSE(InferNode(qc, 10, {&x, &s, &za, &w, &s, &zb, &s, &zb, &bias5}).ok());
  EXPECT_FALSE(InferNode(qc, 10, {&x, &s, &za, &w, &s3, &zb, &s, &zb, &bias}).ok());  // 3 w scales for 6 channels
  EXPECT_FALSE(InferNode(qc, 10, {&x, &s3, &za, &w, &s, &zb, &s, &zb, &bias}).ok());  // x_scale per tensor
}

}  // namespace
}  // namespace vigil::cpu::testing
