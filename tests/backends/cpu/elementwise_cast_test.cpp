// Cast and CastLike over every pair of supported dtypes, plus the edges:
// float to integer truncation and saturation, NaN, bool, and single rounding
// from float64 to float16/bfloat16.
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "backends/cpu/elementwise_test_util.h"

namespace vigil::cpu::testing {
namespace {

const std::vector<DataType>& AllDtypes() {
  static const std::vector<DataType> k = [] {
    std::vector<DataType> all = FloatDtypes();
    for (DataType d : IntDtypes()) all.push_back(d);
    all.push_back(DataType::kBool);
    return all;
  }();
  return k;
}

// Values every dtype holds exactly (0..100 and, for signed ones, negatives).
std::vector<double> SafeValues(DataType from, DataType to) {
  bool unsigned_involved = IsUnsigned(from) || IsUnsigned(to) || from == DataType::kBool || to == DataType::kBool;
  std::vector<double> v = RandomValues(13, unsigned_involved ? 0 : -100, 100, 17, true);
  if (from == DataType::kBool || to == DataType::kBool) {
    for (double& x : v) x = x > 50 ? 1 : 0;
  }
  return v;
}

TEST(ElementwiseCast, EveryPairOnExactValues) {
  for (DataType from : AllDtypes()) {
    for (DataType to : AllDtypes()) {
      std::string what = "Cast " + DtypeName(from) + " -> " + DtypeName(to);
      auto v = SafeValues(from, to);
      runtime::Tensor in = TensorOf(from, {13}, v);
      auto out = RunOk(MakeNode("Cast", {"x"}, {"y"}, {IntAttr("to", static_cast<int64_t>(to))}), 21, {&in});
      ASSERT_EQ(out.size(), 1u) << what;
      EXPECT_EQ(out[0].dtype(), to) << what;
      EXPECT_EQ(out[0].shape(), (std::vector<int64_t>{13})) << what;
      ExpectNear(DoublesOf(out[0]), v, {0, 0}, what);
      // CastLike takes the dtype from its second input.
      runtime::Tensor like = TensorOf(to, {0}, {});
      auto out2 = RunOk(MakeNode("CastLike", {"x", "t"}, {"y"}), 21, {&in, &like});
      ASSERT_EQ(out2.size(), 1u) << what;
      EXPECT_EQ(out2[0].dtype(), to) << what;
      ExpectNear(DoublesOf(out2[0]), v, {0, 0}, "CastLike " + what);
    }
  }
}

TEST(ElementwiseCast, FloatToIntegerTruncatesAndSaturates) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<double> in = {2.9, -2.9, 0.5, -0.5, 1e10, -1e10, nan, inf, -inf, 127.5, -128.7};
  struct Case {
    DataType to;
    std::vector<double> want;
  };
  const std::vector<Case> cases = {
      {DataType::kInt8, {2, -2, 0, 0, 127, -128, 0, 127, -128, 127, -128}},
      {DataType::kUint8, {2, 0, 0, 0, 255, 0, 0, 255, 0, 127, 0}},
      {DataType::kInt32, {2, -2, 0, 0, 2147483647, -2147483648.0, 0, 2147483647, -2147483648.0, 127, -128}},
      {DataType::kInt64, {2, -2, 0, 0, 1e10, -1e10, 0, 9223372036854775807.0, -9223372036854775808.0, 127, -128}},
      {DataType::kBool, {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}},
  };
  for (DataType from : {DataType::kFloat32, DataType::kFloat64}) {
    runtime::Tensor t = TensorOf(from, {static_cast<int64_t>(in.size())}, in);
    for (const Case& c : cases) {
      auto out = RunOk(MakeNode("Cast", {"x"}, {"y"}, {IntAttr("to", static_cast<int64_t>(c.to))}), 13, {&t});
      ASSERT_EQ(out.size(), 1u);
      ExpectNear(DoublesOf(out[0]), c.want, {0, 0}, "Cast " + DtypeName(from) + " -> " + DtypeName(c.to));
    }
  }
  // Exact int64 extremes, not via double.
  runtime::Tensor big = TensorOf(DataType::kFloat64, {2}, {1e19, -1e19});
  auto out = RunOk(MakeNode("Cast", {"x"}, {"y"}, {IntAttr("to", 7)}), 13, {&big});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(Values<int64_t>(out[0]), (std::vector<int64_t>{INT64_MAX, INT64_MIN}));
}

TEST(ElementwiseCast, NarrowingToHalfRoundsOnce) {
  // 1 + 2^-11 + 2^-40 lies just above the midpoint between two float16
  // neighbours: rounding via float (to 1 + 2^-11, a tie) would round down to
  // 1; rounding once goes up to 1 + 2^-10.
  const double just_above_tie = 1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40);
  runtime::Tensor in = TensorOf(DataType::kFloat64, {3}, {just_above_tie, 65520.0, 1e-9});
  auto out = RunOk(MakeNode("Cast", {"x"}, {"y"}, {IntAttr("to", 10)}), 13, {&in});
  ASSERT_EQ(out.size(), 1u);
  auto bits = Values<uint16_t>(out[0]);
  EXPECT_EQ(bits[0], 0x3C01);  // 1 + 2^-10
  EXPECT_EQ(bits[1], 0x7C00);  // 65520 rounds to infinity
  EXPECT_EQ(bits[2], 0x0000);  // below half the smallest subnormal
  // Same for bfloat16 (8 significant bits): 1 + 2^-8 + 2^-40 rounds up.
  runtime::Tensor in2 = TensorOf(DataType::kFloat64, {1}, {1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -40)});
  auto out2 = RunOk(MakeNode("Cast", {"x"}, {"y"}, {IntAttr("to", 16)}), 13, {&in2});
  ASSERT_EQ(out2.size(), 1u);
  EXPECT_EQ(Values<uint16_t>(out2[0])[0], 0x3F81);
}

TEST(ElementwiseCast, NaNAndInfinityBetweenFloatTypes) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  for (DataType from : FloatDtypes()) {
    for (DataType to : FloatDtypes()) {
      runtime::Tensor in = TensorOf(from, {3}, {nan, inf, -inf});
      auto out = RunOk(MakeNode("Cast", {"x"}, {"y"}, {IntAttr("to", static_cast<int64_t>(to))}), 19, {&in});
      ASSERT_EQ(out.size(), 1u);
      ExpectNear(DoublesOf(out[0]), {nan, inf, -inf}, {0, 0}, "Cast " + DtypeName(from) + " -> " + DtypeName(to));
    }
  }
}

TEST(ElementwiseCast, BoolInputBytesAreNormalised) {
  runtime::Tensor in = MakeTensor<uint8_t>(DataType::kBool, {3}, {0, 1, 7});
  auto out = RunOk(MakeNode("Cast", {"x"}, {"y"}, {IntAttr("to", 1)}), 13, {&in});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(Values<float>(out[0]), (std::vector<float>{0, 1, 1}));
}

TEST(ElementwiseCast, BadTargetsFail) {
  runtime::Tensor in = F32({2}, {1, 2});
  ExpectRunFails(MakeNode("Cast", {"x"}, {"y"}), 13, {&in}, "to");
  ExpectRunFails(MakeNode("Cast", {"x"}, {"y"}, {IntAttr("to", 99)}), 13, {&in}, "not an ONNX dtype");
  auto str = RunKernel(MakeNode("Cast", {"x"}, {"y"}, {IntAttr("to", 8)}), 13, {&in});
  ASSERT_FALSE(str.ok());
  EXPECT_EQ(str.status().code(), ErrorCode::kUnsupported);
  EXPECT_NE(str.status().summary().find("str"), std::string::npos) << str.status().ToString();
}

}  // namespace
}  // namespace vigil::cpu::testing
