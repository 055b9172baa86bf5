// The com.microsoft quantized ops of onnxruntime's QOperator format
// (QLinearAdd, QLinearMul, QLinearSigmoid, QLinearLeakyRelu,
// QLinearGlobalAveragePool, QLinearAveragePool, QLinearConcat) on the CPU;
// the golden vectors also hold QLinearSoftmax (qlinear_softmax_test.cpp).
//
// Two kinds of expected values:
// - float64 references computed here (exact arithmetic, round half to even,
//   saturation). onnxruntime's outputs are defined by float32 arithmetic, so
//   an element whose exact value lies within 1e-3 of a .5 tie may take either
//   neighbour; every other element must be equal, and the near-tie elements
//   are counted and must stay rare.
// - fixed vectors from onnxruntime 1.32 CPU (data/qlinear_contrib_golden.inc,
//   made by tools/quant/gen_qlinear_golden.py), which include the elements
//   where float32 operation order decides a tie; these must match bit for bit.
// Plus exact ties built from powers of two, saturation at both ends,
// channels_last both ways, shape inference and errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "backends/cpu/kernel_test_util.h"

namespace vigil::cpu::testing {
namespace {

using ir::DataType;

constexpr const char kMs[] = "com.microsoft";

struct GoldenData {
  std::vector<int64_t> shape;
  std::vector<int> values;
};
struct GoldenInts {
  const char* name;
  std::vector<int64_t> v;
};
struct GoldenFloat {
  const char* name;
  float v;
};
struct GoldenString {
  const char* name;
  const char* v;
};
struct GoldenCase {
  const char* op;
  bool int8;
  std::vector<GoldenData> data;
  std::vector<float> scales;
  std::vector<int> zps;
  std::vector<GoldenInts> ints;
  std::vector<GoldenFloat> floats;
  std::vector<GoldenString> strings;
  GoldenData y;
};

const GoldenCase kGolden[] = {
#include "backends/cpu/data/qlinear_contrib_golden.inc"
};

int64_t Count(const std::vector<int64_t>& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

std::vector<int64_t> Random(size_t n, DataType t, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int64_t> d(t == DataType::kInt8 ? -128 : 0, t == DataType::kInt8 ? 127 : 255);
  std::vector<int64_t> v(n);
  for (int64_t& x : v) x = d(rng);
  return v;
}

runtime::Tensor Q(DataType t, std::vector<int64_t> shape, const std::vector<int64_t>& v) {
  if (t == DataType::kInt8) return MakeTensor(t, std::move(shape), std::vector<int8_t>(v.begin(), v.end()));
  return MakeTensor(t, std::move(shape), std::vector<uint8_t>(v.begin(), v.end()));
}
runtime::Tensor Zp(DataType t, int64_t v) { return Q(t, {}, {v}); }
runtime::Tensor S(float v) { return F32({}, {v}); }

std::vector<int64_t> Ints(const runtime::Tensor& t) {
  std::vector<int64_t> v(t.element_count());
  for (size_t i = 0; i < v.size(); ++i) {
    v[i] = t.dtype() == DataType::kInt8 ? t.data<int8_t>()[i] : t.data<uint8_t>()[i];
  }
  return v;
}

std::pair<int64_t, int64_t> RangeOf(DataType t) {
  return t == DataType::kInt8 ? std::pair<int64_t, int64_t>{-128, 127} : std::pair<int64_t, int64_t>{0, 255};
}

// Round half to even, written out.
double RoundHalfEven(double v) {
  const double f = std::floor(v);
  const double diff = v - f;
  if (diff > 0.5) return f + 1;
  if (diff < 0.5) return f;
  return std::fmod(f, 2.0) == 0 ? f : f + 1;
}

int64_t Clamp(double v, DataType t) {
  auto [lo, hi] = RangeOf(t);
  return static_cast<int64_t>(std::min<double>(std::max<double>(v, static_cast<double>(lo)), static_cast<double>(hi)));
}

// y against exact (zero point included) values: equal to the rounded exact
// value, or (only within 1e-3 of a tie) its other neighbour, which at most 1%
// of the elements may take. Returns the number of those.
int64_t ExpectMatchesExact(const std::vector<int64_t>& y, const std::vector<double>& exact, DataType t,
                           const std::string& what) {
  EXPECT_EQ(y.size(), exact.size()) << what;
  int64_t near_ties = 0, bad = 0;
  for (size_t i = 0; i < std::min(y.size(), exact.size()); ++i) {
    const int64_t want = Clamp(RoundHalfEven(exact[i]), t);
    if (y[i] == want) continue;
    const double frac = exact[i] - std::floor(exact[i]);
    const bool near_tie = std::abs(frac - 0.5) < 1e-3;
    const double f = std::floor(exact[i]);
    const int64_t other = Clamp(RoundHalfEven(exact[i]) == f ? f + 1 : f, t);
    if (near_tie && y[i] == other) {
      ++near_ties;
      continue;
    }
    if (++bad <= 5) ADD_FAILURE() << what << ": element " << i << " is " << y[i] << ", expected " << want << " (exact " << exact[i] << ")";
  }
  EXPECT_EQ(bad, 0) << what;
  // Near ties are rare: at most 1% of the elements (and 1).
  EXPECT_LE(near_ties, static_cast<int64_t>(y.size()) / 100 + 1) << what;
  return near_ties;
}

ir::Node MsNode(std::string op, std::vector<std::string> inputs, std::vector<ir::Attribute> attrs = {}) {
  ir::Node n = MakeNode(std::move(op), std::move(inputs), {"y"}, std::move(attrs));
  n.domain = kMs;
  return n;
}

std::vector<std::string> Names(size_t n) {
  std::vector<std::string> v;
  for (size_t i = 0; i < n; ++i) v.push_back("i" + std::to_string(i));
  return v;
}

// Runs the node and its shape inference; checks that the inferred type is the
// output's. Returns the output (or the kernel's error).
Result<runtime::Tensor> RunChecked(const ir::Node& node, const std::vector<const runtime::Tensor*>& in) {
  std::vector<ir::TypeInfo> types;
  types.reserve(in.size());
  for (const runtime::Tensor* t : in) types.push_back(t ? ops::TensorType(t->dtype(), t->shape()) : ir::TypeInfo{});
  std::vector<const ir::TypeInfo*> type_ptrs;
  for (size_t i = 0; i < in.size(); ++i) type_ptrs.push_back(in[i] ? &types[i] : nullptr);
  VIGIL_ASSIGN_OR_RETURN(std::vector<runtime::Tensor> out, RunKernel(node, 1, in));
  auto inferred = InferNode(node, 1, type_ptrs);
  EXPECT_TRUE(inferred.ok()) << inferred.status().ToString();
  if (inferred.ok()) {
    EXPECT_EQ(inferred.value()[0].elem_type, out[0].dtype()) << node.op_type;
    std::vector<int64_t> dims;
    for (const ir::Dim& d : inferred.value()[0].shape.dims) dims.push_back(d.value.value_or(-1));
    EXPECT_EQ(dims, out[0].shape()) << node.op_type;
  }
  return std::move(out[0]);
}

// ---- references ---------------------------------------------------------------

struct QParams {
  float scale;
  int64_t zp;
};

double Deq(int64_t q, QParams p) { return static_cast<double>(q - p.zp) * p.scale; }

// Flat index into `shape` for output coordinates c (right-aligned, size-1
// dims read index 0).
int64_t BroadcastFlat(int64_t i, const std::vector<int64_t>& out, const std::vector<int64_t>& shape) {
  std::vector<int64_t> c(out.size());
  for (size_t d = out.size(); d-- > 0;) {
    c[d] = i % out[d];
    i /= out[d];
  }
  int64_t k = 0;
  for (size_t d = 0; d < shape.size(); ++d) {
    const int64_t x = c[c.size() - shape.size() + d];
    k = k * shape[d] + (shape[d] == 1 ? 0 : x);
  }
  return k;
}

// ---- golden vectors from onnxruntime ------------------------------------------

TEST(QLinearContrib, MatchesOnnxruntimeGoldenVectorsBitForBit) {
  int64_t elements = 0;
  for (const GoldenCase& g : kGolden) {
    const DataType t = g.int8 ? DataType::kInt8 : DataType::kUint8;
    const std::string op = g.op;
    std::vector<runtime::Tensor> owned;
    owned.reserve(32);
    auto data = [&](size_t k) -> const runtime::Tensor* {
      owned.push_back(Q(t, g.data[k].shape, std::vector<int64_t>(g.data[k].values.begin(), g.data[k].values.end())));
      return &owned.back();
    };
    auto scale = [&](size_t k) -> const runtime::Tensor* {
      owned.push_back(S(g.scales[k]));
      return &owned.back();
    };
    auto zp = [&](size_t k) -> const runtime::Tensor* {
      owned.push_back(Zp(t, g.zps[k]));
      return &owned.back();
    };
    std::vector<const runtime::Tensor*> in;
    if (op == "QLinearAdd" || op == "QLinearMul") {
      in = {data(0), scale(0), zp(0), data(1), scale(1), zp(1), scale(2), zp(2)};
    } else if (op == "QLinearConcat") {
      in = {scale(0), zp(0)};
      for (size_t k = 0; k < g.data.size(); ++k) {
        in.push_back(data(k));
        in.push_back(scale(k + 1));
        in.push_back(zp(k + 1));
      }
    } else {
      in = {data(0), scale(0), zp(0), scale(1), zp(1)};
    }
    std::vector<ir::Attribute> attrs;
    for (const GoldenInts& a : g.ints) {
      const bool list = std::string(a.name) == "kernel_shape" || std::string(a.name) == "strides" ||
                        std::string(a.name) == "pads";
      attrs.push_back(list ? IntsAttr(a.name, a.v) : IntAttr(a.name, a.v[0]));
    }
    for (const GoldenFloat& a : g.floats) attrs.push_back(FloatAttr(a.name, a.v));
    for (const GoldenString& a : g.strings) attrs.push_back(StringAttr(a.name, a.v));
    auto y = RunChecked(MsNode(op, Names(in.size()), attrs), in);
    ASSERT_TRUE(y.ok()) << op << ": " << y.status().ToString();
    EXPECT_EQ(y.value().shape(), g.y.shape) << op;
    EXPECT_EQ(Ints(y.value()), std::vector<int64_t>(g.y.values.begin(), g.y.values.end()))
        << op << (g.int8 ? " int8" : " uint8");
    elements += static_cast<int64_t>(g.y.values.size());
  }
  EXPECT_GT(elements, 20000);
}

// ---- QLinearAdd, QLinearMul -------------------------------------------------------

std::vector<double> BinaryExact(bool add, const std::vector<int64_t>& a, const std::vector<int64_t>& as,
                                const std::vector<int64_t>& b, const std::vector<int64_t>& bs,
                                const std::vector<int64_t>& out, QParams pa, QParams pb, QParams pc) {
  std::vector<double> e(Count(out));
  for (int64_t i = 0; i < Count(out); ++i) {
    const double x = Deq(a[BroadcastFlat(i, out, as)], pa), y = Deq(b[BroadcastFlat(i, out, bs)], pb);
    e[i] = (add ? x + y : x * y) / pc.scale + static_cast<double>(pc.zp);
  }
  return e;
}

Result<runtime::Tensor> RunBinary(bool add, DataType t, const runtime::Tensor& a, QParams pa, const runtime::Tensor& b,
                                  QParams pb, QParams pc) {
  runtime::Tensor sa = S(pa.scale), sb = S(pb.scale), sc = S(pc.scale);
  runtime::Tensor za = Zp(t, pa.zp), zb = Zp(t, pb.zp), zc = Zp(t, pc.zp);
  return RunChecked(MsNode(add ? "QLinearAdd" : "QLinearMul", Names(8)), {&a, &sa, &za, &b, &sb, &zb, &sc, &zc});
}

TEST(QLinearAddMul, AllPairsMatchFloat64ReferenceAwayFromTies) {
  for (DataType t : {DataType::kUint8, DataType::kInt8}) {
    auto [lo, hi] = RangeOf(t);
    std::vector<int64_t> a, b;
    for (int64_t x = lo; x <= hi; ++x) {
      for (int64_t y = lo; y <= hi; ++y) {
        a.push_back(x);
        b.push_back(y);
      }
    }
    runtime::Tensor ta = Q(t, {65536}, a), tb = Q(t, {65536}, b);
    for (bool add : {true, false}) {
      const QParams pa{0.0371f, lo + 77}, pb{0.0123f, hi - 13}, pc{add ? 0.071f : 0.9f, lo + 129};
      auto y = RunBinary(add, t, ta, pa, tb, pb, pc);
      ASSERT_TRUE(y.ok()) << y.status().ToString();
      ExpectMatchesExact(Ints(y.value()), BinaryExact(add, a, {65536}, b, {65536}, {65536}, pa, pb, pc),
                                              t, add ? "QLinearAdd" : "QLinearMul");
    }
  }
}

TEST(QLinearAddMul, BroadcastsLikeNumpy) {
  struct Case {
    std::vector<int64_t> a, b, out;
  } cases[] = {
      {{2, 13, 1, 5}, {13, 7, 1}, {2, 13, 7, 5}},
      {{13, 1}, {1, 127}, {13, 127}},
      {{13, 127}, {127}, {13, 127}},
      {{127}, {}, {127}},
      {{1}, {3, 13}, {3, 13}},
  };
  uint32_t seed = 1;
  for (DataType t : {DataType::kUint8, DataType::kInt8}) {
    for (const Case& c : cases) {
      std::vector<int64_t> a = Random(Count(c.a), t, seed++), b = Random(Count(c.b), t, seed++);
      for (bool add : {true, false}) {
        const QParams pa{0.021f, RangeOf(t).first + 100}, pb{0.047f, RangeOf(t).first + 140},
            pc{add ? 0.05f : 0.3f, RangeOf(t).first + 128};
        auto y = RunBinary(add, t, Q(t, c.a, a), pa, Q(t, c.b, b), pb, pc);
        ASSERT_TRUE(y.ok()) << y.status().ToString();
        EXPECT_EQ(y.value().shape(), c.out);
        ExpectMatchesExact(Ints(y.value()), BinaryExact(add, a, c.a, b, c.b, c.out, pa, pb, pc), t, "broadcast");
      }
    }
  }
}

TEST(QLinearAddMul, ExactTiesRoundHalfToEven) {
  // Scales of powers of two make every float32 step exact: 0.5 * q.
  for (DataType t : {DataType::kUint8, DataType::kInt8}) {
    const int64_t z = t == DataType::kInt8 ? 0 : 128;
    std::vector<int64_t> a = {z + 1, z + 3, z - 1, z - 3, z + 5, z + 2};
    std::vector<int64_t> b = {z, z, z, z, z + 2, z + 1};
    runtime::Tensor ta = Q(t, {6}, a), tb = Q(t, {6}, b);
    // Add: (a + b) * 0.5 -> 0.5, 1.5, -0.5, -1.5, 3.5, 1.5.
    auto y = RunBinary(true, t, ta, {0.5f, z}, tb, {0.5f, z}, {1.0f, z});
    ASSERT_TRUE(y.ok());
    EXPECT_EQ(Ints(y.value()), (std::vector<int64_t>{z + 0, z + 2, z + 0, z - 2, z + 4, z + 2}));
    // Mul: a*b*0.25/0.5 ... with b' = 1: a * 0.5 -> 0.5, 1.5, -0.5, -1.5, 2.5.
    std::vector<int64_t> ones(6, z + 1);
    y = RunBinary(false, t, ta, {0.5f, z}, Q(t, {6}, ones), {1.0f, z}, {1.0f, z});
    ASSERT_TRUE(y.ok());
    EXPECT_EQ(Ints(y.value()), (std::vector<int64_t>{z + 0, z + 2, z + 0, z - 2, z + 2, z + 1}));
  }
}

TEST(QLinearAddMul, SaturatesAtBothEnds) {
  for (DataType t : {DataType::kUint8, DataType::kInt8}) {
    auto [lo, hi] = RangeOf(t);
    runtime::Tensor a = Q(t, {3}, {lo, hi, hi}), b = Q(t, {3}, {lo, hi, lo});
    const int64_t mid = (lo + hi + 1) / 2;
    auto y = RunBinary(true, t, a, {1.0f, mid}, b, {1.0f, mid}, {0.1f, mid});
    ASSERT_TRUE(y.ok());
    EXPECT_EQ(Ints(y.value()), (std::vector<int64_t>{lo, hi, mid - 10}));
    y = RunBinary(false, t, a, {1.0f, mid}, b, {1.0f, mid}, {1.0f, mid});
    ASSERT_TRUE(y.ok());
    EXPECT_EQ(Ints(y.value()), (std::vector<int64_t>{hi, hi, lo}));
  }
}

TEST(QLinearAddMul, OmittedZeroPointsAreZero) {
  const DataType t = DataType::kInt8;
  runtime::Tensor a = Q(t, {3}, {10, -20, 7}), b = Q(t, {3}, {1, 2, -3});
  runtime::Tensor s1 = S(1.0f);
  auto y = RunChecked(MsNode("QLinearAdd", {"a", "as", "", "b", "bs", "", "cs"}), {&a, &s1, nullptr, &b, &s1, nullptr, &s1});
  ASSERT_TRUE(y.ok()) << y.status().ToString();
  EXPECT_EQ(Ints(y.value()), (std::vector<int64_t>{11, -18, 4}));
}

// ---- QLinearSigmoid, QLinearLeakyRelu ----------------------------------------------

Result<runtime::Tensor> RunUnary(const std::string& op, DataType t, const runtime::Tensor& x, QParams px, QParams py,
                                 std::vector<ir::Attribute> attrs = {}) {
  runtime::Tensor sx = S(px.scale), sy = S(py.scale), zx = Zp(t, px.zp), zy = Zp(t, py.zp);
  return RunChecked(MsNode(op, Names(5), std::move(attrs)), {&x, &sx, &zx, &sy, &zy});
}

TEST(QLinearSigmoidLeakyRelu, AllValuesMatchFloat64Reference) {
  for (DataType t : {DataType::kUint8, DataType::kInt8}) {
    auto [lo, hi] = RangeOf(t);
    std::vector<int64_t> x;
    for (int64_t v = lo; v <= hi; ++v) x.push_back(v);
    runtime::Tensor tx = Q(t, {13, 1, 1}, std::vector<int64_t>(x.begin(), x.begin() + 13));
    runtime::Tensor all = Q(t, {256}, x);
    for (float xs : {0.013f, 0.05f, 0.11f}) {
      const QParams px{xs, lo + 131}, py{1.0f / 256.0f, lo}, py2{0.021f, lo + 100};
      auto y = RunUnary("QLinearSigmoid", t, all, px, py);
      ASSERT_TRUE(y.ok()) << y.status().ToString();
      std::vector<double> e;
      for (int64_t v : x) e.push_back(1.0 / (1.0 + std::exp(-Deq(v, px))) / py.scale + static_cast<double>(py.zp));
      ExpectMatchesExact(Ints(y.value()), e, t, "QLinearSigmoid");
      y = RunUnary("QLinearLeakyRelu", t, all, px, py2, {FloatAttr("alpha", 0.2f)});
      ASSERT_TRUE(y.ok()) << y.status().ToString();
      e.clear();
      for (int64_t v : x) {
        const double d = Deq(v, px);
        e.push_back((d >= 0 ? d : d * static_cast<double>(0.2f)) / py2.scale + static_cast<double>(py2.zp));
      }
      ExpectMatchesExact(Ints(y.value()), e, t, "QLinearLeakyRelu");
    }
    // Shape kept; default alpha 0.01.
    auto y = RunUnary("QLinearLeakyRelu", t, tx, {1.0f, lo + 13}, {0.01f, lo + 13});
    ASSERT_TRUE(y.ok());
    EXPECT_EQ(y.value().shape(), (std::vector<int64_t>{13, 1, 1}));
    for (size_t i = 0; i < 13; ++i) {
      const int64_t d = x[i] - (lo + 13);
      EXPECT_EQ(Ints(y.value())[i], Clamp(RoundHalfEven(d >= 0 ? d * 100.0 : d * 1.0) + lo + 13, t)) << i;
    }
  }
}

TEST(QLinearSigmoidLeakyRelu, TiesAndSaturation) {
  for (DataType t : {DataType::kUint8, DataType::kInt8}) {
    auto [lo, hi] = RangeOf(t);
    const int64_t z = t == DataType::kInt8 ? 0 : 128;
    // LeakyRelu alpha 0.5, scales 1: -1 -> -0.5 -> 0, -3 -> -1.5 -> -2, -5 -> -2.5 -> -2.
    runtime::Tensor x = Q(t, {5}, {z - 1, z - 3, z - 5, z + 3, hi});
    auto y = RunUnary("QLinearLeakyRelu", t, x, {1.0f, z}, {1.0f, z}, {FloatAttr("alpha", 0.5f)});
    ASSERT_TRUE(y.ok());
    EXPECT_EQ(Ints(y.value()), (std::vector<int64_t>{z, z - 2, z - 2, z + 3, hi}));
    y = RunUnary("QLinearLeakyRelu", t, Q(t, {2}, {lo, hi}), {1.0f, z}, {0.25f, z}, {FloatAttr("alpha", 0.5f)});
    ASSERT_TRUE(y.ok());
    EXPECT_EQ(Ints(y.value()), (std::vector<int64_t>{lo, hi}));
    // Sigmoid(0) = 0.5 exactly: / 1 -> tie -> 0; / 0.2 -> 2.5 -> 2; the ends
    // saturate at 1 / (1/512) = 512.
    y = RunUnary("QLinearSigmoid", t, Q(t, {1}, {z}), {0.1f, z}, {1.0f, lo});
    ASSERT_TRUE(y.ok());
    EXPECT_EQ(Ints(y.value()), (std::vector<int64_t>{lo}));
    y = RunUnary("QLinearSigmoid", t, Q(t, {1}, {z}), {0.1f, z}, {0.2f, lo});
    ASSERT_TRUE(y.ok());
    EXPECT_EQ(Ints(y.value()), (std::vector<int64_t>{lo + 2}));
    y = RunUnary("QLinearSigmoid", t, Q(t, {2}, {lo, hi}), {1.0f, z}, {1.0f / 512.0f, lo});
    ASSERT_TRUE(y.ok());
    EXPECT_EQ(Ints(y.value()), (std::vector<int64_t>{lo, hi}));
  }
}

// ---- QLinearGlobalAveragePool, QLinearAveragePool ------------------------------------

// [N,C,spatial...] values -> [N,spatial...,C].
std::vector<int64_t> ToChannelsLast(const std::vector<int64_t>& v, int64_t n, int64_t c, int64_t s) {
  std::vector<int64_t> out(v.size());
  for (int64_t b = 0; b < n; ++b)
    for (int64_t k = 0; k < c; ++k)
      for (int64_t i = 0; i < s; ++i) out[(b * s + i) * c + k] = v[(b * c + k) * s + i];
  return out;
}

Result<runtime::Tensor> RunPool(const std::string& op, DataType t, const runtime::Tensor& x, QParams px, QParams py,
                                std::vector<ir::Attribute> attrs) {
  return RunUnary(op, t, x, px, py, std::move(attrs));
}

TEST(QLinearGlobalAveragePool, MatchesFloat64ReferenceBothLayouts) {
  for (DataType t : {DataType::kUint8, DataType::kInt8}) {
    for (auto [n, c, h, w] : {std::array<int64_t, 4>{2, 13, 3, 5}, std::array<int64_t, 4>{1, 127, 7, 7}}) {
      const std::vector<int64_t> x = Random(n * c * h * w, t, static_cast<uint32_t>(c + h));
      const QParams px{0.037f, RangeOf(t).first + 111}, py{0.011f, RangeOf(t).first + 120};
      std::vector<double> e;
      for (int64_t b = 0; b < n; ++b) {
        for (int64_t k = 0; k < c; ++k) {
          double sum = 0;
          for (int64_t i = 0; i < h * w; ++i) sum += Deq(x[(b * c + k) * h * w + i], px);
          e.push_back(sum / static_cast<double>(h * w) / py.scale + static_cast<double>(py.zp));
        }
      }
      auto y = RunPool("QLinearGlobalAveragePool", t, Q(t, {n, c, h, w}, x), px, py, {});
      ASSERT_TRUE(y.ok()) << y.status().ToString();
      EXPECT_EQ(y.value().shape(), (std::vector<int64_t>{n, c, 1, 1}));
      ExpectMatchesExact(Ints(y.value()), e, t, "QLinearGlobalAveragePool NCHW");
      auto yl = RunPool("QLinearGlobalAveragePool", t, Q(t, {n, h, w, c}, ToChannelsLast(x, n, c, h * w)), px, py,
                        {IntAttr("channels_last", 1)});
      ASSERT_TRUE(yl.ok()) << yl.status().ToString();
      EXPECT_EQ(yl.value().shape(), (std::vector<int64_t>{n, 1, 1, c}));
      EXPECT_EQ(Ints(yl.value()), Ints(y.value()));  // [N,1,1,C] and [N,C,1,1] hold the same order
    }
  }
}

TEST(QLinearGlobalAveragePool, TiesSaturationAndOneSpatialDim) {
  for (DataType t : {DataType::kUint8, DataType::kInt8}) {
    auto [lo, hi] = RangeOf(t);
    const int64_t z = t == DataType::kInt8 ? 0 : 128;
    // Means of two: 0.5 -> 0, 1.5 -> 2, -0.5 -> 0, -2.5 -> -2; then both ends.
    runtime::Tensor x = Q(t, {1, 6, 2}, {z, z + 1, z + 1, z + 2, z, z - 1, z - 2, z - 3, lo, lo, hi, hi});
    auto y = RunPool("QLinearGlobalAveragePool", t, x, {1.0f, z}, {1.0f, z}, {});
    ASSERT_TRUE(y.ok()) << y.status().ToString();
    EXPECT_EQ(y.value().shape(), (std::vector<int64_t>{1, 6, 1}));
    EXPECT_EQ(Ints(y.value()), (std::vector<int64_t>{z, z + 2, z, z - 2, lo, hi}));
    y = RunPool("QLinearGlobalAveragePool", t, Q(t, {1, 2, 1}, {lo, hi}), {1.0f, z}, {0.25f, z}, {});
    ASSERT_TRUE(y.ok());
    EXPECT_EQ(Ints(y.value()), (std::vector<int64_t>{lo, hi}));
  }
}

struct PoolCase {
  std::vector<int64_t> spatial, kernel, strides, pads;
  int64_t cip, ceil;
};

// onnxruntime's QLinearAveragePool: with count_include_pad the divisor is the
// kernel size; ceil_mode drops a window that starts past the padded input.
std::vector<double> AvgPoolExact(const std::vector<int64_t>& x, int64_t n, int64_t c, const PoolCase& p, QParams px,
                                 QParams py, std::vector<int64_t>* out_spatial) {
  const size_t nd = p.spatial.size();
  out_spatial->clear();
  for (size_t d = 0; d < nd; ++d) {
    const int64_t span = p.spatial[d] + p.pads[d] + p.pads[d + nd] - p.kernel[d];
    int64_t o = (p.ceil ? (span + p.strides[d] - 1) / p.strides[d] : span / p.strides[d]) + 1;
    if (p.ceil && (o - 1) * p.strides[d] >= p.spatial[d] + p.pads[d]) --o;
    out_spatial->push_back(o);
  }
  const int64_t in_n = Count(p.spatial), out_n = Count(*out_spatial);
  std::vector<double> e;
  for (int64_t b = 0; b < n; ++b) {
    for (int64_t k = 0; k < c; ++k) {
      for (int64_t o = 0; o < out_n; ++o) {
        // Out coordinates, then every in-range input position of the window.
        std::vector<int64_t> oc(nd);
        for (int64_t r = o, d = static_cast<int64_t>(nd) - 1; d >= 0; --d) {
          oc[d] = r % (*out_spatial)[d];
          r /= (*out_spatial)[d];
        }
        double sum = 0;
        int64_t valid = 0;
        for (int64_t w = 0; w < Count(p.kernel); ++w) {
          int64_t flat = 0;
          bool inside = true;
          for (int64_t r = w, d = static_cast<int64_t>(nd) - 1; d >= 0; --d) {
            const int64_t kd = r % p.kernel[d];
            r /= p.kernel[d];
            const int64_t pos = oc[d] * p.strides[d] - p.pads[d] + kd;
            inside = inside && pos >= 0 && pos < p.spatial[d];
          }
          if (!inside) continue;
          for (size_t d = 0; d < nd; ++d) {
            int64_t r = w;
            for (size_t dd = nd - 1; dd > d; --dd) r /= p.kernel[dd];
            flat = flat * p.spatial[d] + oc[d] * p.strides[d] - p.pads[d] + r % p.kernel[d];
          }
          sum += Deq(x[(b * c + k) * in_n + flat], px);
          ++valid;
        }
        const double count = p.cip ? static_cast<double>(Count(p.kernel)) : static_cast<double>(valid);
        e.push_back(sum / count / py.scale + static_cast<double>(py.zp));
      }
    }
  }
  return e;
}

TEST(QLinearAveragePool, MatchesFloat64ReferenceBothLayouts) {
  const PoolCase cases[] = {
      {{7, 9}, {3, 3}, {2, 2}, {1, 1, 1, 1}, 1, 1}, {{7, 9}, {3, 3}, {2, 2}, {1, 0, 1, 2}, 0, 1},
      {{13, 5}, {2, 3}, {1, 2}, {0, 1, 1, 1}, 1, 0}, {{13, 5}, {3, 2}, {2, 1}, {0, 0, 0, 0}, 0, 0},
      {{127}, {5}, {3}, {2, 1}, 0, 1},              {{4, 5, 6}, {2, 3, 2}, {2, 2, 2}, {1, 0, 1, 0, 1, 1}, 1, 1},
  };
  uint32_t seed = 7;
  for (DataType t : {DataType::kUint8, DataType::kInt8}) {
    for (const PoolCase& p : cases) {
      const int64_t n = 2, c = 13;
      const std::vector<int64_t> x = Random(n * c * Count(p.spatial), t, seed++);
      const QParams px{0.029f, RangeOf(t).first + 140}, py{0.017f, RangeOf(t).first + 100};
      std::vector<int64_t> out_spatial;
      const std::vector<double> e = AvgPoolExact(x, n, c, p, px, py, &out_spatial);
      std::vector<ir::Attribute> attrs = {IntsAttr("kernel_shape", p.kernel), IntsAttr("strides", p.strides),
                                          IntsAttr("pads", p.pads), IntAttr("count_include_pad", p.cip),
                                          IntAttr("ceil_mode", p.ceil)};
      std::vector<int64_t> shape = {n, c};
      shape.insert(shape.end(), p.spatial.begin(), p.spatial.end());
      auto y = RunPool("QLinearAveragePool", t, Q(t, shape, x), px, py, attrs);
      ASSERT_TRUE(y.ok()) << y.status().ToString();
      std::vector<int64_t> want = {n, c};
      want.insert(want.end(), out_spatial.begin(), out_spatial.end());
      EXPECT_EQ(y.value().shape(), want);
      ExpectMatchesExact(Ints(y.value()), e, t, "QLinearAveragePool");
      // channels_last: the same values, transposed.
      std::vector<int64_t> lshape = {n};
      lshape.insert(lshape.end(), p.spatial.begin(), p.spatial.end());
      lshape.push_back(c);
      attrs.push_back(IntAttr("channels_last", 1));
      auto yl = RunPool("QLinearAveragePool", t, Q(t, lshape, ToChannelsLast(x, n, c, Count(p.spatial))), px, py,
                        attrs);
      ASSERT_TRUE(yl.ok()) << yl.status().ToString();
      EXPECT_EQ(Ints(yl.value()), ToChannelsLast(Ints(y.value()), n, c, Count(out_spatial)));
    }
  }
}

TEST(QLinearAveragePool, TiesAndSaturation) {
  for (DataType t : {DataType::kUint8, DataType::kInt8}) {
    auto [lo, hi] = RangeOf(t);
    const int64_t z = t == DataType::kInt8 ? 0 : 128;
    // kernel 2, stride 2 over [1,1,8]: means 0.5, 1.5, -2.5, then the ends.
    runtime::Tensor x = Q(t, {1, 1, 10}, {z, z + 1, z + 1, z + 2, z - 2, z - 3, lo, lo, hi, hi});
    auto y = RunPool("QLinearAveragePool", t, x, {1.0f, z}, {1.0f, z},
                     {IntsAttr("kernel_shape", {2}), IntsAttr("strides", {2})});
    ASSERT_TRUE(y.ok()) << y.status().ToString();
    EXPECT_EQ(Ints(y.value()), (std::vector<int64_t>{z, z + 2, z - 2, lo, hi}));
    y = RunPool("QLinearAveragePool", t, Q(t, {1, 1, 2}, {lo, hi}), {1.0f, z}, {0.25f, z},
                {IntsAttr("kernel_shape", {1})});
    ASSERT_TRUE(y.ok());
    EXPECT_EQ(Ints(y.value()), (std::vector<int64_t>{lo, hi}));
  }
}

// ---- QLinearConcat -----------------------------------------------------------------

TEST(QLinearConcat, RequantizesEachInputAndJoins) {
  for (DataType t : {DataType::kUint8, DataType::kInt8}) {
    auto [lo, hi] = RangeOf(t);
    struct In {
      std::vector<int64_t> shape;
      QParams p;
    };
    const QParams py{0.05f, lo + 120};
    for (int64_t axis : {1, -1}) {
      const std::vector<In> ins = {{{2, 13, 3}, py}, {{2, 1, 3}, {0.1f, lo + 3}}, {{2, 127, 3}, {0.0137f, hi - 9}}};
      const int64_t ax = 1;
      std::vector<std::vector<int64_t>> values;
      std::vector<runtime::Tensor> owned;
      owned.reserve(16);
      runtime::Tensor sy = S(py.scale), zy = Zp(t, py.zp);
      std::vector<const runtime::Tensor*> in = {&sy, &zy};
      for (size_t k = 0; k < ins.size(); ++k) {
        values.push_back(Random(Count(ins[k].shape), t, static_cast<uint32_t>(100 + k)));
        owned.push_back(Q(t, ins[k].shape, values.back()));
        in.push_back(&owned.back());
        owned.push_back(S(ins[k].p.scale));
        in.push_back(&owned.back());
        owned.push_back(Zp(t, ins[k].p.zp));
        in.push_back(&owned.back());
      }
      // axis -1 joins the last dim: make all shapes [2, 3, k] instead.
      if (axis == -1) {
        for (size_t k = 0; k < ins.size(); ++k) {
          std::vector<int64_t> s = {2, 3, ins[k].shape[1]};
          owned[3 * k] = Q(t, s, values[k]);
        }
      }
      auto y = RunChecked(MsNode("QLinearConcat", Names(in.size()), {IntAttr("axis", axis)}), in);
      ASSERT_TRUE(y.ok()) << y.status().ToString();
      const int64_t total = 13 + 1 + 127;
      EXPECT_EQ(y.value().shape(), axis == 1 ? (std::vector<int64_t>{2, total, 3}) : (std::vector<int64_t>{2, 3, total}));
      // Expected, in output order.
      std::vector<double> e;
      const int64_t outer = axis == 1 ? 2 : 6, inner = axis == 1 ? 3 : 1;
      for (int64_t o = 0; o < outer; ++o) {
        for (size_t k = 0; k < ins.size(); ++k) {
          const int64_t len = ins[k].shape[ax] * inner;
          for (int64_t j = 0; j < len; ++j) {
            e.push_back(Deq(values[k][o * len + j], ins[k].p) / py.scale + static_cast<double>(py.zp));
          }
        }
      }
      ExpectMatchesExact(Ints(y.value()), e, t, "QLinearConcat");
      // The first input has the output's parameters: copied unchanged.
      const std::vector<int64_t> got = Ints(y.value());
      if (axis == 1) {
        for (int64_t i = 0; i < 13 * 3; ++i) EXPECT_EQ(got[i], values[0][i]);
      }
    }
    // Ties: scale 0.5 -> 1: q * 0.5 = 0.5, 1.5, -0.5, -2.5; then saturation.
    const int64_t z = t == DataType::kInt8 ? 0 : 128;
    runtime::Tensor a = Q(t, {4}, {z + 1, z + 3, z - 1, z - 5}), b = Q(t, {2}, {lo, hi});
    runtime::Tensor s1 = S(1.0f), s05 = S(0.5f), s4 = S(4.0f), zz = Zp(t, z);
    auto y = RunChecked(MsNode("QLinearConcat", Names(8), {IntAttr("axis", 0)}), {&s1, &zz, &a, &s05, &zz, &b, &s4, &zz});
    ASSERT_TRUE(y.ok()) << y.status().ToString();
    EXPECT_EQ(Ints(y.value()), (std::vector<int64_t>{z, z + 2, z, z - 2, lo, hi}));
  }
}

// ---- errors and shape inference ------------------------------------------------------

void ExpectError(const Result<runtime::Tensor>& r, const std::string& op, const std::string& fragment) {
  ASSERT_FALSE(r.ok()) << op << ": expected an error containing '" << fragment << "'";
  const std::string msg = r.status().ToString();
  EXPECT_NE(msg.find(op), std::string::npos) << msg;
  EXPECT_NE(msg.find(fragment), std::string::npos) << msg;
}

TEST(QLinearContrib, BadInputsFailNamingTheOpInputAndExpectation) {
  const DataType t = DataType::kUint8;
  runtime::Tensor a = Q(t, {3, 4}, Random(12, t, 1)), b5 = Q(t, {5}, Random(5, t, 2)), s = S(0.1f), z = Zp(t, 3);
  runtime::Tensor s2 = F32({2}, {0.1f, 0.2f}), zi8 = Zp(DataType::kInt8, 1), f = F32({3, 4}, std::vector<float>(12));
  runtime::Tensor i8 = Q(DataType::kInt8, {3, 4}, Random(12, DataType::kInt8, 3));
  auto run = [&](const std::string& op, std::vector<const runtime::Tensor*> in, std::vector<ir::Attribute> attrs) {
    auto r = RunKernel(MsNode(op, Names(in.size()), std::move(attrs)), 1, in);
    return r.ok() ? Result<runtime::Tensor>(std::move(r.value()[0])) : Result<runtime::Tensor>(r.status());
  };
  auto add = [&](std::vector<const runtime::Tensor*> in) { return run("QLinearAdd", std::move(in), {}); };
  ExpectError(add({&a, &s, &z, &b5, &s, &z, &s, &z}), "QLinearAdd", "do not broadcast");
  ExpectError(add({&a, &s2, &z, &a, &s, &z, &s, &z}), "QLinearAdd", "A_scale");
  ExpectError(add({&a, &s, &zi8, &a, &s, &z, &s, &z}), "QLinearAdd", "expected a uint8 scalar");
  ExpectError(add({&f, &s, &z, &a, &s, &z, &s, &z}), "QLinearAdd", "expected int8 or uint8");
  ExpectError(add({&a, &s, &z, &i8, &s, &z, &s, &z}), "QLinearAdd", "like input 0 (A)");
  ExpectError(run("QLinearSigmoid", {&a, &s, &z, &s2, &z}, {}), "QLinearSigmoid", "Y_scale");
  ExpectError(run("QLinearGlobalAveragePool", {&a, &s, &z, &s, &z}, {}), "QLinearGlobalAveragePool", "rank >= 3");
  runtime::Tensor x4 = Q(t, {1, 2, 3, 3}, Random(18, t, 4));
  ExpectError(run("QLinearGlobalAveragePool", {&x4, &s, &z, &s, &z}, {IntAttr("channels_last", 2)}),
              "QLinearGlobalAveragePool", "channels_last");
  ExpectError(run("QLinearAveragePool", {&x4, &s, &z, &s, &z}, {IntsAttr("kernel_shape", {3})}), "QLinearAveragePool",
              "kernel_shape has 1 values");
  ExpectError(run("QLinearAveragePool", {&x4, &s, &z, &s, &z}, {IntsAttr("kernel_shape", {5, 5})}),
              "QLinearAveragePool", "larger than the padded input");
  ExpectError(run("QLinearAveragePool", {&x4, &s, &z, &s, &z}, {}), "QLinearAveragePool", "kernel_shape");
  runtime::Tensor c1 = Q(t, {2, 3}, Random(6, t, 5)), c2 = Q(t, {3, 3}, Random(9, t, 6));
  ExpectError(run("QLinearConcat", {&s, &z, &c1, &s, &z, &c2, &s, &z}, {IntAttr("axis", 1)}), "QLinearConcat",
              "except along axis 1");
  ExpectError(run("QLinearConcat", {&s, &z, &c1, &s}, {IntAttr("axis", 0)}), "QLinearConcat", "triples");
  ExpectError(run("QLinearConcat", {&s, &z, &c1, &s, &zi8}, {IntAttr("axis", 0)}), "QLinearConcat", "X_zero_point");
}

TEST(QLinearContrib, ShapeInferenceTypesShapesAndErrors) {
  using ir::Dim;
  const ir::TypeInfo a = ops::TensorType(DataType::kUint8, std::vector<Dim>{Dim::Symbolic("N"), Dim::Known(13), Dim::Known(1)});
  const ir::TypeInfo b = ops::TensorType(DataType::kUint8, std::vector<int64_t>{127});
  const ir::TypeInfo s = ops::TensorType(DataType::kFloat32, std::vector<int64_t>{});
  const ir::TypeInfo s3 = ops::TensorType(DataType::kFloat32, std::vector<int64_t>{3});
  const ir::TypeInfo z = ops::TensorType(DataType::kUint8, std::vector<int64_t>{1});
  const ir::TypeInfo zi8 = ops::TensorType(DataType::kInt8, std::vector<int64_t>{});
  const ir::TypeInfo d = ops::TensorType(DataType::kFloat64, std::vector<int64_t>{});
  auto out = InferNode(MsNode("QLinearAdd", Names(8)), 1, {&a, &s, &z, &b, &s, &z, &s, &z});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(out.value()[0].elem_type, DataType::kUint8);
  ASSERT_EQ(out.value()[0].shape.dims.size(), 3u);
  EXPECT_EQ(out.value()[0].shape.dims[0].param, "N");
  EXPECT_EQ(out.value()[0].shape.dims[2].value, 127);
  EXPECT_FALSE(InferNode(MsNode("QLinearMul", Names(8)), 1, {&a, &s3, &z, &b, &s, &z, &s, &z}).ok());
  EXPECT_FALSE(InferNode(MsNode("QLinearMul", Names(8)), 1, {&a, &d, &z, &b, &s, &z, &s, &z}).ok());
  EXPECT_FALSE(InferNode(MsNode("QLinearMul", Names(8)), 1, {&a, &s, &zi8, &b, &s, &z, &s, &z}).ok());
  auto err = InferNode(MsNode("QLinearMul", Names(8)), 1, {&a, &s, &z, &b, &s, &z, &s, &zi8});
  ASSERT_FALSE(err.ok());
  EXPECT_NE(err.status().ToString().find("C_zero_point"), std::string::npos) << err.status().ToString();
  // Unary keeps the type; pools.
  out = InferNode(MsNode("QLinearLeakyRelu", Names(5)), 1, {&a, &s, nullptr, &s, nullptr});
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out.value()[0].shape.dims.size(), 3u);
  const ir::TypeInfo x = ops::TensorType(DataType::kInt8, std::vector<int64_t>{2, 7, 9, 13});
  out = InferNode(MsNode("QLinearGlobalAveragePool", Names(5), {IntAttr("channels_last", 1)}), 1,
                  {&x, &s, &zi8, &s, &zi8});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(ir::ShapeToString(out.value()[0].shape), ir::ShapeToString(ops::TensorType(DataType::kInt8, std::vector<int64_t>{2, 1, 1, 13}).shape));
  out = InferNode(MsNode("QLinearAveragePool", Names(5),
                         {IntsAttr("kernel_shape", {3, 3}), IntsAttr("strides", {2, 2}), IntsAttr("pads", {1, 1, 1, 1}),
                          IntAttr("ceil_mode", 1), IntAttr("channels_last", 1)}),
                  1, {&x, &s, &zi8, &s, &zi8});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(ir::ShapeToString(out.value()[0].shape), ir::ShapeToString(ops::TensorType(DataType::kInt8, std::vector<int64_t>{2, 4, 5, 13}).shape));
  EXPECT_FALSE(InferNode(MsNode("QLinearAveragePool", Names(5), {IntsAttr("kernel_shape", {3})}), 1,
                         {&x, &s, &zi8, &s, &zi8}).ok());
  // Concat.
  const ir::TypeInfo c1 = ops::TensorType(DataType::kInt8, std::vector<int64_t>{2, 13});
  const ir::TypeInfo c2 = ops::TensorType(DataType::kInt8, std::vector<int64_t>{2, 127});
  out = InferNode(MsNode("QLinearConcat", Names(8), {IntAttr("axis", -1)}), 1, {&s, &zi8, &c1, &s, &zi8, &c2, &s, &zi8});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(out.value()[0].shape.dims[1].value, 140);
  EXPECT_FALSE(InferNode(MsNode("QLinearConcat", Names(8), {IntAttr("axis", 0)}), 1,
                         {&s, &zi8, &c1, &s, &zi8, &c2, &s, &zi8}).ok());
  EXPECT_FALSE(InferNode(MsNode("QLinearConcat", Names(8), {IntAttr("axis", 1)}), 1,
                         {&s, &z, &c1, &s, &zi8, &c2, &s, &zi8}).ok());
  EXPECT_FALSE(InferNode(MsNode("QLinearConcat", Names(7), {IntAttr("axis", 1)}), 1,
                         {&s, &zi8, &c1, &s, &zi8, &c2, &s}).ok());
}

}  // namespace
}  // namespace vigil::cpu::testing
