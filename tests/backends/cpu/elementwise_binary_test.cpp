// Broadcasting binary kernels, comparisons, logic, bit ops, Pow, Mod and the
// broadcast walk itself, against naive float64 references that index every
// output element by division (the way the kernels deliberately do not).
#include <climits>
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "backends/cpu/broadcast.h"
#include "backends/cpu/elementwise_test_util.h"

namespace vigil::cpu::testing {
namespace {

using Shape = std::vector<int64_t>;
using BinaryRef = std::function<double(double, double)>;

// Flat index into `in` (right-aligned, size-1 dims broadcast) of output
// element `o` of shape `out`.
int64_t NaiveIndex(const Shape& out, const Shape& in, int64_t o) {
  int64_t index = 0, stride = 1;
  for (size_t k = 0; k < out.size(); ++k) {
    size_t i = out.size() - 1 - k;
    int64_t coord = o % out[i];
    o /= out[i];
    if (k < in.size()) {
      int64_t d = in[in.size() - 1 - k];
      index += (d == 1 ? 0 : coord) * stride;
      stride *= d;
    }
  }
  return index;
}

std::vector<double> NaiveBinary(const Shape& out, const Shape& sa, const std::vector<double>& a, const Shape& sb,
                                const std::vector<double>& b, const BinaryRef& f) {
  std::vector<double> r(static_cast<size_t>(Product(out)));
  for (int64_t o = 0; o < static_cast<int64_t>(r.size()); ++o) {
    r[o] = f(a[NaiveIndex(out, sa, o)], b[NaiveIndex(out, sb, o)]);
  }
  return r;
}

struct ShapePair {
  Shape a, b, out;
};

const std::vector<ShapePair>& BroadcastCases() {
  static const std::vector<ShapePair> k = {
      {{13}, {13}, {13}},
      {{2, 3, 4}, {4}, {2, 3, 4}},
      {{2, 3, 4}, {3, 1}, {2, 3, 4}},
      {{1, 3, 1}, {2, 1, 5}, {2, 3, 5}},
      {{}, {5, 2}, {5, 2}},
      {{5, 2}, {}, {5, 2}},
      {{2, 1, 127}, {1, 13, 1}, {2, 13, 127}},
      {{3, 1, 2, 1}, {1, 4, 1, 5}, {3, 4, 2, 5}},
      {{2, 13, 3, 3}, {1, 13, 1, 1}, {2, 13, 3, 3}},
      {{1}, {1}, {1}},
      {{0, 3}, {1, 3}, {0, 3}},
      {{4, 1}, {4, 0}, {4, 0}},
  };
  return k;
}

struct BinaryCase {
  std::string op;
  int opset;
  BinaryRef ref;
  double lo_a, hi_a, lo_b, hi_b;
  bool integral = false;           // integral-valued inputs (equalities happen)
  bool bool_out = false;           // comparisons
  std::vector<ir::Attribute> attrs = {};
};

void CheckBinary(const BinaryCase& c, DataType d) {
  for (const ShapePair& s : BroadcastCases()) {
    std::string what = c.op + " " + DtypeName(d) + " " + ShapeString(s.a) + " x " + ShapeString(s.b);
    auto a = RandomValues(static_cast<size_t>(Product(s.a)), c.lo_a, c.hi_a, 1, c.integral || !IsFloat(d));
    auto b = RandomValues(static_cast<size_t>(Product(s.b)), c.lo_b, c.hi_b, 2, c.integral || !IsFloat(d));
    for (double& v : a) v = Quantize(d, v);
    for (double& v : b) v = Quantize(d, v);
    runtime::Tensor ta = TensorOf(d, s.a, a), tb = TensorOf(d, s.b, b);
    auto out = RunOk(MakeNode(c.op, {"a", "b"}, {"y"}, c.attrs), c.opset, {&ta, &tb});
    ASSERT_EQ(out.size(), 1u) << what;
    EXPECT_EQ(out[0].shape(), s.out) << what;
    EXPECT_EQ(out[0].dtype(), c.bool_out ? DataType::kBool : d) << what;
    auto want = NaiveBinary(s.out, s.a, a, s.b, b, c.ref);
    ExpectNear(DoublesOf(out[0]), want, c.bool_out ? Tolerance{0, 0} : ToleranceFor(d), what);
  }
}

double Bool(bool v) { return v ? 1 : 0; }

TEST(ElementwiseBinary, ArithmeticFloats) {
  const std::vector<BinaryCase> cases = {
      {"Add", 14, [](double a, double b) { return a + b; }, -5, 5, -5, 5},
      {"Sub", 14, [](double a, double b) { return a - b; }, -5, 5, -5, 5},
      {"Mul", 14, [](double a, double b) { return a * b; }, -5, 5, -5, 5},
      {"Div", 14, [](double a, double b) { return a / b; }, -5, 5, 0.5, 4},
      {"Add", 7, [](double a, double b) { return a + b; }, -5, 5, -5, 5},
      {"Pow", 15, [](double a, double b) { return std::pow(a, b); }, 0.1, 3, -2, 2},
      {"Mod", 13, [](double a, double b) { return std::fmod(a, b); }, -9, 9, -4, 4, false, false,
       {IntAttr("fmod", 1)}},
  };
  for (const auto& c : cases) {
    for (DataType d : FloatDtypes()) CheckBinary(c, d);
  }
}

TEST(ElementwiseBinary, ArithmeticIntegers) {
  auto trunc_div = [](double a, double b) { return std::trunc(a / b); };
  auto floor_mod = [](double a, double b) { return a - std::floor(a / b) * b; };
  for (DataType d : IntDtypes()) {
    const double lo = IsUnsigned(d) ? 0 : -11;
    const std::vector<BinaryCase> cases = {
        {"Add", 14, [](double a, double b) { return a + b; }, lo, 50, lo, 50},
        {"Sub", 14, [](double a, double b) { return a - b; }, 50, 100, lo, 50},
        {"Mul", 14, [](double a, double b) { return a * b; }, lo, 11, lo, 11},
        // Divisors stay away from 0 (a zero divisor is an error, tested below).
        {"Div", 14, trunc_div, lo, 100, 1, 9},
        {"Mod", 13, [](double a, double b) { return std::fmod(a, b); }, lo, 100, 1, 9, false, false,
         {IntAttr("fmod", 1)}},
        {"Mod", 13, floor_mod, lo, 100, 1, 9},
        {"Max", 13, [](double a, double b) { return std::max(a, b); }, lo, 100, lo, 100},
        {"Min", 13, [](double a, double b) { return std::min(a, b); }, lo, 100, lo, 100},
        {"Sum", 13, [](double a, double b) { return a + b; }, lo, 50, lo, 50},
        {"BitwiseAnd", 18, [](double a, double b) { return double(int64_t(a) & int64_t(b)); }, lo, 100, lo, 100},
        {"BitwiseOr", 18, [](double a, double b) { return double(int64_t(a) | int64_t(b)); }, lo, 100, lo, 100},
        {"BitwiseXor", 18, [](double a, double b) { return double(int64_t(a) ^ int64_t(b)); }, lo, 100, lo, 100},
    };
    for (const auto& c : cases) CheckBinary(c, d);
    if (!IsUnsigned(d)) {  // negative divisors: truncation and sign rules
      CheckBinary({"Div", 14, trunc_div, -100, 100, -9, -1}, d);
      CheckBinary({"Mod", 13, floor_mod, -100, 100, -9, -1}, d);
    }
  }
}

TEST(ElementwiseBinary, ModFloatFollowsDivisorSignWithoutFmod) {
  auto floor_mod = [](double a, double b) { return a - std::floor(a / b) * b; };
  for (DataType d : {DataType::kFloat32, DataType::kFloat64}) {
    CheckBinary({"Mod", 13, floor_mod, -9, 9, 0.5, 4}, d);
    CheckBinary({"Mod", 13, floor_mod, -9, 9, -4, -0.5}, d);
  }
}

TEST(ElementwiseBinary, Comparisons) {
  const std::vector<BinaryCase> cases = {
      {"Equal", 19, [](double a, double b) { return Bool(a == b); }, -3, 3, -3, 3, true, true},
      {"Less", 13, [](double a, double b) { return Bool(a < b); }, -3, 3, -3, 3, true, true},
      {"LessOrEqual", 16, [](double a, double b) { return Bool(a <= b); }, -3, 3, -3, 3, true, true},
      {"Greater", 13, [](double a, double b) { return Bool(a > b); }, -3, 3, -3, 3, true, true},
      {"GreaterOrEqual", 16, [](double a, double b) { return Bool(a >= b); }, -3, 3, -3, 3, true, true},
  };
  for (const auto& c : cases) {
    for (DataType d : FloatDtypes()) CheckBinary(c, d);
    for (DataType d : IntDtypes()) {
      BinaryCase u = c;
      if (IsUnsigned(d)) u.lo_a = u.lo_b = 0;
      CheckBinary(u, d);
    }
  }
  // NaN compares unequal to everything, itself included.
  const double nan = std::numeric_limits<double>::quiet_NaN();
  runtime::Tensor a = TensorOf(DataType::kFloat32, {3}, {nan, nan, 1});
  runtime::Tensor b = TensorOf(DataType::kFloat32, {3}, {nan, 1, 1});
  for (const char* op : {"Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"}) {
    auto out = RunOk(MakeNode(op, {"a", "b"}, {"y"}), 19, {&a, &b});
    ASSERT_EQ(out.size(), 1u);
    std::string name = op;
    double same = name == "Equal" || name == "LessOrEqual" || name == "GreaterOrEqual" ? 1 : 0;
    ExpectNear(DoublesOf(out[0]), {0, 0, same}, {0, 0}, name + " NaN");
  }
}

TEST(ElementwiseBinary, LogicalOps) {
  const std::vector<BinaryCase> cases = {
      {"And", 7, [](double a, double b) { return Bool(a != 0 && b != 0); }, 0, 2, 0, 2, true, true},
      {"Or", 7, [](double a, double b) { return Bool(a != 0 || b != 0); }, 0, 2, 0, 2, true, true},
      {"Xor", 7, [](double a, double b) { return Bool((a != 0) != (b != 0)); }, 0, 2, 0, 2, true, true},
      {"Equal", 11, [](double a, double b) { return Bool(a == b); }, 0, 2, 0, 2, true, true},
  };
  for (const auto& c : cases) CheckBinary(c, DataType::kBool);
}

TEST(ElementwiseBinary, IntegerOverflowWraps) {
  runtime::Tensor a = MakeTensor<int32_t>(DataType::kInt32, {3}, {INT32_MAX, INT32_MIN, 65536});
  runtime::Tensor b = MakeTensor<int32_t>(DataType::kInt32, {3}, {1, -1, 65536});
  auto add = RunOk(MakeNode("Add", {"a", "b"}, {"y"}), 14, {&a, &b});
  ASSERT_EQ(add.size(), 1u);
  EXPECT_EQ(Values<int32_t>(add[0]), (std::vector<int32_t>{INT32_MIN, INT32_MAX, 131072}));
  auto mul = RunOk(MakeNode("Mul", {"a", "b"}, {"y"}), 14, {&a, &b});
  ASSERT_EQ(mul.size(), 1u);
  EXPECT_EQ(Values<int32_t>(mul[0]), (std::vector<int32_t>{INT32_MAX, INT32_MIN, 0}));
  auto div = RunOk(MakeNode("Div", {"a", "b"}, {"y"}), 14, {&a, &b});
  ASSERT_EQ(div.size(), 1u);
  EXPECT_EQ(Values<int32_t>(div[0]), (std::vector<int32_t>{INT32_MAX, INT32_MIN, 1}));
  auto mod = RunOk(MakeNode("Mod", {"a", "b"}, {"y"}), 13, {&a, &b});
  ASSERT_EQ(mod.size(), 1u);
  EXPECT_EQ(Values<int32_t>(mod[0]), (std::vector<int32_t>{0, 0, 0}));
  runtime::Tensor u = MakeTensor<uint16_t>(DataType::kUint16, {1}, {65535});
  auto umul = RunOk(MakeNode("Mul", {"a", "b"}, {"y"}), 14, {&u, &u});
  ASSERT_EQ(umul.size(), 1u);
  EXPECT_EQ(Values<uint16_t>(umul[0]), (std::vector<uint16_t>{1}));
}

TEST(ElementwiseBinary, IntegerDivisionByZeroFails) {
  runtime::Tensor a = I64({3}, {1, 2, 3});
  runtime::Tensor b = I64({3}, {1, 0, 3});
  ExpectRunFails(MakeNode("Div", {"a", "b"}, {"y"}), 14, {&a, &b}, "division by zero");
  ExpectRunFails(MakeNode("Div", {"a", "b"}, {"y"}), 14, {&a, &b}, "flat index 1");
  ExpectRunFails(MakeNode("Mod", {"a", "b"}, {"y"}), 13, {&a, &b}, "division by zero");
  // Floats divide by zero to infinities and NaN.
  runtime::Tensor fa = F32({3}, {1, -1, 0});
  runtime::Tensor fb = F32({3}, {0, 0, 0});
  auto out = RunOk(MakeNode("Div", {"a", "b"}, {"y"}), 14, {&fa, &fb});
  ASSERT_EQ(out.size(), 1u);
  const double inf = std::numeric_limits<double>::infinity();
  ExpectNear(DoublesOf(out[0]), {inf, -inf, std::numeric_limits<double>::quiet_NaN()}, {0, 0}, "Div by 0.0");
}

TEST(ElementwiseBinary, PowMixedTypes) {
  const Shape sa = {2, 3}, sb = {3};
  struct Case {
    DataType base, exp;
    double lo_a, hi_a, lo_b, hi_b;
  };
  const std::vector<Case> cases = {
      {DataType::kFloat32, DataType::kInt64, -3, 3, 0, 4},    {DataType::kFloat32, DataType::kInt32, -3, 3, -2, 3},
      {DataType::kFloat32, DataType::kUint8, -3, 3, 0, 4},    {DataType::kFloat64, DataType::kFloat32, 0.5, 3, -2, 2},
      {DataType::kFloat16, DataType::kFloat32, 0.5, 3, -2, 2}, {DataType::kInt32, DataType::kInt32, -5, 5, 0, 6},
      {DataType::kInt64, DataType::kInt64, -5, 5, 0, 6},      {DataType::kInt64, DataType::kFloat32, 1, 9, 0, 2},
      {DataType::kInt32, DataType::kFloat64, 1, 9, -1, 2},    {DataType::kBfloat16, DataType::kInt64, -3, 3, 0, 3},
  };
  for (const Case& c : cases) {
    std::string what = "Pow " + DtypeName(c.base) + "^" + DtypeName(c.exp);
    bool int_base = !IsFloat(c.base);
    auto a = RandomValues(6, c.lo_a, c.hi_a, 5, int_base);
    auto b = RandomValues(3, c.lo_b, c.hi_b, 6, !IsFloat(c.exp));
    for (double& v : a) v = Quantize(c.base, v);
    for (double& v : b) v = Quantize(c.exp, v);
    runtime::Tensor ta = TensorOf(c.base, sa, a), tb = TensorOf(c.exp, sb, b);
    auto out = RunOk(MakeNode("Pow", {"a", "b"}, {"y"}), 15, {&ta, &tb});
    ASSERT_EQ(out.size(), 1u) << what;
    EXPECT_EQ(out[0].dtype(), c.base) << what;
    auto want = NaiveBinary(sa, sa, a, sb, b, [&](double x, double n) {
      double p = std::pow(x, n);
      return int_base ? std::trunc(p) : p;
    });
    ExpectNear(DoublesOf(out[0]), want, ToleranceFor(c.base), what);
  }
}

TEST(ElementwiseBinary, PowIntegerNegativeExponentsAndWrap) {
  runtime::Tensor base = MakeTensor<int32_t>(DataType::kInt32, {5}, {2, 1, -1, -1, 3});
  runtime::Tensor exp = MakeTensor<int32_t>(DataType::kInt32, {5}, {-1, -5, -3, -2, 21});
  auto out = RunOk(MakeNode("Pow", {"a", "b"}, {"y"}), 15, {&base, &exp});
  ASSERT_EQ(out.size(), 1u);
  // 3^21 = 10460353203 wraps to 10460353203 - 2^33 = 1870418611 in int32.
  EXPECT_EQ(Values<int32_t>(out[0]), (std::vector<int32_t>{0, 1, -1, 1, 1870418611}));
}

// The opset-28 rule: shifts below 0 or of the bit width or more give the
// sign fill alone (-1 for a right shift of a negative value, else 0); a left
// shift wraps modulo 2^bits, a right shift floors (arithmetic for signed).
double BitShiftReference(DataType d, bool left, double a, double b) {
  const double bits = ir::DataTypeBits(d);
  const bool is_signed = !IsUnsigned(d);
  if (b < 0 || b >= bits) return !left && a < 0 ? -1 : 0;
  if (!left) return std::floor(a / std::pow(2.0, b));
  // fmod keeps a's sign; both corrections are exact in double (r is a
  // small integer times a power of two).
  double r = std::fmod(a * std::pow(2.0, b), std::pow(2.0, bits));
  if (is_signed && r >= std::pow(2.0, bits - 1)) r -= std::pow(2.0, bits);
  if (is_signed && r < -std::pow(2.0, bits - 1)) r += std::pow(2.0, bits);
  return r;
}

TEST(ElementwiseBinary, BitShift) {
  for (DataType d : IntDtypes()) {
    const double bits = ir::DataTypeBits(d);
    const double lo = IsUnsigned(d) ? 0 : -100;
    auto a = RandomValues(127, lo, 100, 9, true);
    std::vector<double> b(127);
    // Shifts from -2 (signed) or 0 up to past the width.
    const double first = IsUnsigned(d) ? 0 : -2;
    for (size_t i = 0; i < b.size(); ++i) b[i] = std::fmod(static_cast<double>(i) * 5, bits + 5) + first;
    runtime::Tensor ta = TensorOf(d, {127}, a), tb = TensorOf(d, {127}, b);
    for (std::string dir : {"LEFT", "RIGHT"}) {
      auto out = RunOk(MakeNode("BitShift", {"a", "b"}, {"y"}, {StringAttr("direction", dir)}), 28, {&ta, &tb});
      ASSERT_EQ(out.size(), 1u);
      std::vector<double> want(127);
      for (size_t i = 0; i < want.size(); ++i) want[i] = BitShiftReference(d, dir == "LEFT", a[i], b[i]);
      ExpectNear(DoublesOf(out[0]), want, {0, 0}, "BitShift " + dir + " " + DtypeName(d));
    }
  }
}

TEST(ElementwiseBinary, BitShiftSignedEdges) {
  // int8: the sign bit is shifted into and past; -128 >> 7 is -1; shifts of
  // -1, 8 and 127 are out of range.
  runtime::Tensor a = MakeTensor<int8_t>(DataType::kInt8, {7}, {1, 3, -128, -128, -5, 5, -1});
  runtime::Tensor b = MakeTensor<int8_t>(DataType::kInt8, {7}, {7, 7, 7, 1, -1, 8, 127});
  auto left = RunOk(MakeNode("BitShift", {"a", "b"}, {"y"}, {StringAttr("direction", "LEFT")}), 28, {&a, &b});
  EXPECT_EQ(Values<int8_t>(left[0]), (std::vector<int8_t>{-128, -128, 0, 0, 0, 0, 0}));
  auto right = RunOk(MakeNode("BitShift", {"a", "b"}, {"y"}, {StringAttr("direction", "RIGHT")}), 28, {&a, &b});
  EXPECT_EQ(Values<int8_t>(right[0]), (std::vector<int8_t>{0, 0, -1, -64, -1, 0, -1}));
  // int64 at the full width.
  runtime::Tensor c = MakeTensor<int64_t>(DataType::kInt64, {3}, {1, INT64_MIN, -7});
  runtime::Tensor s = MakeTensor<int64_t>(DataType::kInt64, {3}, {63, 63, 64});
  auto l64 = RunOk(MakeNode("BitShift", {"a", "b"}, {"y"}, {StringAttr("direction", "LEFT")}), 28, {&c, &s});
  EXPECT_EQ(Values<int64_t>(l64[0]), (std::vector<int64_t>{INT64_MIN, 0, 0}));
  auto r64 = RunOk(MakeNode("BitShift", {"a", "b"}, {"y"}, {StringAttr("direction", "RIGHT")}), 28, {&c, &s});
  EXPECT_EQ(Values<int64_t>(r64[0]), (std::vector<int64_t>{0, -1, -1}));
}

TEST(ElementwiseBinary, BitShiftBadAttributesAndTypes) {
  runtime::Tensor x = MakeTensor<uint8_t>(DataType::kUint8, {1}, {1});
  ExpectRunFails(MakeNode("BitShift", {"a", "b"}, {"y"}, {StringAttr("direction", "UP")}), 11, {&x, &x},
                 "direction");
  ExpectRunFails(MakeNode("BitShift", {"a", "b"}, {"y"}), 11, {&x, &x}, "direction");
  runtime::Tensor f = F32({1}, {1});
  ExpectRunFails(MakeNode("BitShift", {"a", "b"}, {"y"}, {StringAttr("direction", "LEFT")}), 28, {&f, &f},
                 "dtype float32 of input 0");
  runtime::Tensor i = I64({1}, {1});
  ExpectRunFails(MakeNode("BitShift", {"a", "b"}, {"y"}, {StringAttr("direction", "LEFT")}), 28, {&x, &i},
                 "input 1 has dtype int64");
}

TEST(ElementwiseBinary, MismatchesFail) {
  runtime::Tensor a = F32({2, 3}, {1, 2, 3, 4, 5, 6});
  runtime::Tensor b = F32({2}, {1, 2});
  runtime::Tensor c = I64({3}, {1, 2, 3});
  ExpectRunFails(MakeNode("Add", {"a", "b"}, {"y"}), 14, {&a, &b}, "cannot broadcast input 0 of shape [2,3]");
  ExpectRunFails(MakeNode("Mul", {"a", "c"}, {"y"}), 14, {&a, &c}, "input 1 has dtype int64");
  ExpectRunFails(MakeNode("Less", {"a", "b"}, {"y"}), 13, {&a, &b}, "[2]");
  auto unsupported = RunKernel(MakeNode("And", {"a", "b"}, {"y"}), 7, {&a, &a});
  ASSERT_FALSE(unsupported.ok());
  EXPECT_EQ(unsupported.status().code(), ErrorCode::kUnsupported);
}

// Before opset 7: B broadcasts onto A only with broadcast=1, aligned at axis.
TEST(ElementwiseBinary, LegacyBroadcastBeforeOpset7) {
  const Shape sa = {2, 3, 4};
  auto a = RandomValues(24, -5, 5, 1);
  runtime::Tensor ta = TensorOf(DataType::kFloat32, sa, a);
  struct Case {
    Shape b;
    int64_t axis;  // -1: attribute absent
    Shape as_numpy;
  };
  const std::vector<Case> cases = {
      {{3}, 1, {3, 1}}, {{4}, -1, {4}}, {{2, 1}, 0, {2, 1, 1}}, {{3, 4}, -1, {3, 4}}, {{1}, -1, {1}}, {{}, -1, {}},
  };
  for (const Case& c : cases) {
    auto b = RandomValues(static_cast<size_t>(Product(c.b)), -5, 5, 2);
    runtime::Tensor tb = TensorOf(DataType::kFloat32, c.b, b);
    std::vector<ir::Attribute> attrs = {IntAttr("broadcast", 1)};
    if (c.axis >= 0) attrs.push_back(IntAttr("axis", c.axis));
    auto out = RunOk(MakeNode("Sub", {"a", "b"}, {"y"}, attrs), 6, {&ta, &tb});
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].shape(), sa);
    auto want = NaiveBinary(sa, sa, a, c.as_numpy, b, [](double x, double y) { return x - y; });
    ExpectNear(DoublesOf(out[0]), want, ToleranceFor(DataType::kFloat32), "Sub-6 b " + ShapeString(c.b));
  }
  runtime::Tensor b3 = TensorOf(DataType::kFloat32, {3}, {1, 2, 3});
  runtime::Tensor b4 = TensorOf(DataType::kFloat32, {4}, {1, 2, 3, 4});
  ExpectRunFails(MakeNode("Add", {"a", "b"}, {"y"}), 6, {&ta, &b4}, "needs attribute broadcast=1");
  ExpectRunFails(MakeNode("Add", {"a", "b"}, {"y"}, {IntAttr("broadcast", 1)}), 6, {&ta, &b3}, "at axis 2");
  ExpectRunFails(MakeNode("Add", {"a", "b"}, {"y"}, {IntAttr("broadcast", 1), IntAttr("axis", 3)}), 6, {&ta, &b3},
                 "does not fit");
  // Opset 7 ignores the attributes and broadcasts numpy-style.
  auto numpy = RunOk(MakeNode("Add", {"a", "b"}, {"y"}), 7, {&ta, &b4});
  ASSERT_EQ(numpy.size(), 1u);
}

// Random shapes of rank up to 5: the merged, strided walk must agree with
// naive index division everywhere.
TEST(ElementwiseBinary, RandomBroadcastShapesAgreeWithNaiveIndexing) {
  auto dims = RandomValues(4000, 0, 1, 42);
  size_t next = 0;
  auto pick = [&](double p) { return dims[next++ % dims.size()] < p; };
  for (int trial = 0; trial < 300; ++trial) {
    size_t rank = 1 + static_cast<size_t>(dims[next++ % dims.size()] * 5);
    Shape out(rank), a, b;
    for (size_t i = 0; i < rank; ++i) out[i] = 1 + static_cast<int64_t>(dims[next++ % dims.size()] * 4);
    size_t ra = pick(0.3) ? rank - static_cast<size_t>(pick(0.5)) : rank;
    size_t rb = pick(0.3) ? rank - static_cast<size_t>(pick(0.5)) : rank;
    for (size_t i = rank - ra; i < rank; ++i) a.push_back(pick(0.4) ? 1 : out[i]);
    for (size_t i = rank - rb; i < rank; ++i) b.push_back(pick(0.4) ? 1 : out[i]);
    auto want_shape = BroadcastShape(a, b);
    ASSERT_TRUE(want_shape.has_value());
    auto va = RandomValues(static_cast<size_t>(Product(a)), -10, 10, trial, true);
    auto vb = RandomValues(static_cast<size_t>(Product(b)), -10, 10, trial + 1000, true);
    runtime::Tensor ta = TensorOf(DataType::kInt64, a, va), tb = TensorOf(DataType::kInt64, b, vb);
    auto out_t = RunOk(MakeNode("Sub", {"a", "b"}, {"y"}), 14, {&ta, &tb});
    ASSERT_EQ(out_t.size(), 1u);
    ASSERT_EQ(out_t[0].shape(), *want_shape);
    auto want = NaiveBinary(*want_shape, a, va, b, vb, [](double x, double y) { return x - y; });
    ExpectNear(DoublesOf(out_t[0]), want, {0, 0}, "Sub " + ShapeString(a) + " - " + ShapeString(b));
  }
}

TEST(Broadcast, ShapeRules) {
  EXPECT_EQ(BroadcastShape({2, 1, 4}, {3, 1}), (Shape{2, 3, 4}));
  EXPECT_EQ(BroadcastShape({}, {}), (Shape{}));
  EXPECT_EQ(BroadcastShape({0}, {1}), (Shape{0}));
  EXPECT_FALSE(BroadcastShape({0}, {2}).has_value());
  EXPECT_FALSE(BroadcastShape({2, 3}, {2}).has_value());
}

TEST(Broadcast, WalkMergesDims) {
  Shape x = {8, 16, 7, 7}, bias = {1, 16, 1, 1};
  auto w = PlanBroadcast<2>(x, {&x, &bias});
  EXPECT_EQ(w.dims, (Shape{8, 16, 49}));
  Shape same = {3, 4, 5};
  auto flat = PlanBroadcast<2>(same, {&same, &same});
  EXPECT_EQ(flat.dims, (Shape{60}));
  Shape row = {5};
  auto rows = PlanBroadcast<2>(same, {&same, &row});
  EXPECT_EQ(rows.dims, (Shape{12, 5}));
  Shape scalar = {};
  auto sc = PlanBroadcast<1>(scalar, {&scalar});
  EXPECT_EQ(sc.dims, (Shape{1}));
  EXPECT_EQ(sc.count, 1);
}

}  // namespace
}  // namespace vigil::cpu::testing
