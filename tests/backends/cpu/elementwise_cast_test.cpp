// Cast and CastLike over every pair of supported dtypes, plus the edges:
// float to integer truncation and saturation, NaN, bool, and single rounding
// from float64 to float16/bfloat16. BitCast between every pair of dtypes of
// one width, against the input's bytes.
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

// --- BitCast ----------------------------------------------------------------------

// Every dtype vigil knows except string (pairs of equal width are picked
// below).
std::vector<DataType> BitCastDtypes() {
  std::vector<DataType> all;
  for (int32_t v = 1; v <= 23; ++v) {
    const auto d = static_cast<DataType>(v);
    if (ir::IsKnownDataType(v) && d != DataType::kString) all.push_back(d);
  }
  return all;
}

// A tensor of `count` elements of dtype d holding pseudo-random bytes.
runtime::Tensor RandomBytes(DataType d, int64_t count, uint32_t seed) {
  runtime::Tensor t = runtime::Tensor::Allocate(d, {count}).value();
  auto* p = static_cast<uint8_t*>(t.raw_data());
  uint32_t s = seed * 2654435761u + 1;
  for (size_t i = 0; i < t.byte_size(); ++i) {
    s = s * 1664525u + 1013904223u;
    p[i] = static_cast<uint8_t>(s >> 24);
  }
  return t;
}

TEST(BitCast, EverySameWidthPairKeepsTheBytes) {
  int pairs = 0;
  for (DataType from : BitCastDtypes()) {
    for (DataType to : BitCastDtypes()) {
      if (ir::DataTypeBits(from) != ir::DataTypeBits(to)) continue;
      for (int64_t n : {13, 127}) {
        std::string what = "BitCast " + DtypeName(from) + " -> " + DtypeName(to) + " n=" + std::to_string(n);
        runtime::Tensor in = RandomBytes(from, n, static_cast<uint32_t>(n) + static_cast<uint32_t>(from));
        ir::Node node = MakeNode("BitCast", {"x"}, {"y"}, {IntAttr("to", static_cast<int64_t>(to))});
        auto out = RunOk(node, 26, {&in});
        ASSERT_EQ(out.size(), 1u) << what;
        EXPECT_EQ(out[0].dtype(), to) << what;
        EXPECT_EQ(out[0].shape(), in.shape()) << what;
        ASSERT_EQ(out[0].byte_size(), in.byte_size()) << what;
        EXPECT_EQ(std::memcmp(out[0].raw_data(), in.raw_data(), in.byte_size()), 0) << what;
        ir::TypeInfo t = ops::TensorType(from, std::vector<int64_t>{n});
        auto inferred = InferNode(node, 26, {&t});
        ASSERT_TRUE(inferred.ok()) << what << ": " << inferred.status().ToString();
        EXPECT_EQ(ir::TypeToString((*inferred)[0]), std::string(ir::DataTypeName(to)) + "[" + std::to_string(n) + "]")
            << what;
      }
      ++pairs;
    }
  }
  EXPECT_GE(pairs, 40);
}

TEST(BitCast, KnownValuesAndShapes) {
  runtime::Tensor f = F32({2, 2}, {1.0f, -2.0f, 0.0f, -0.0f});
  auto out = RunOk(MakeNode("BitCast", {"x"}, {"y"}, {IntAttr("to", 6)}), 26, {&f});  // int32
  EXPECT_EQ(out[0].shape(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(Values<int32_t>(out[0]), (std::vector<int32_t>{0x3F800000, static_cast<int32_t>(0xC0000000u), 0,
                                                          static_cast<int32_t>(0x80000000u)}));
  runtime::Tensor s = MakeTensor<uint16_t>(DataType::kUint16, {}, {0xFFFF});
  out = RunOk(MakeNode("BitCast", {"x"}, {"y"}, {IntAttr("to", 5)}), 26, {&s});  // int16
  EXPECT_EQ(out[0].shape(), (std::vector<int64_t>{}));
  EXPECT_EQ(Values<int16_t>(out[0]), (std::vector<int16_t>{-1}));
  runtime::Tensor empty = F32({0, 3}, {});
  out = RunOk(MakeNode("BitCast", {"x"}, {"y"}, {IntAttr("to", 12)}), 26, {&empty});  // uint32
  EXPECT_EQ(out[0].shape(), (std::vector<int64_t>{0, 3}));
}

TEST(BitCast, BadTargetsFail) {
  runtime::Tensor in = F32({2}, {1, 2});
  ExpectRunFails(MakeNode("BitCast", {"x"}, {"y"}), 26, {&in}, "to");
  ExpectRunFails(MakeNode("BitCast", {"x"}, {"y"}, {IntAttr("to", 7)}), 26, {&in},
                 "has 32-bit elements but attribute to is int64 (64 bits)");
  ExpectRunFails(MakeNode("BitCast", {"x"}, {"y"}, {IntAttr("to", 2)}), 26, {&in}, "equal widths");
  ExpectRunFails(MakeNode("BitCast", {"x"}, {"y"}, {IntAttr("to", 8)}), 26, {&in}, "string");
  ExpectRunFails(MakeNode("BitCast", {"x"}, {"y"}, {IntAttr("to", 99)}), 26, {&in}, "not an ONNX dtype");
  ExpectRunFails(MakeNode("BitCast", {"x"}, {"y"}, {IntAttr("to", -1)}), 26, {&in}, "not an ONNX dtype");
  EXPECT_FALSE(RunKernel(MakeNode("BitCast", {"x"}, {"y"}, {IntAttr("to", 1)}), 25, {&in}).ok());  // not before 26

  ir::TypeInfo t = ops::TensorType(DataType::kFloat64, std::vector<int64_t>{3});
  auto r = InferNode(MakeNode("BitCast", {"x"}, {"y"}, {IntAttr("to", 1)}), 26, {&t});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().summary().find("float64 (64 bits)"), std::string::npos) << r.status().ToString();
  EXPECT_NE(r.status().summary().find("node BitCast"), std::string::npos) << r.status().ToString();
  EXPECT_FALSE(InferNode(MakeNode("BitCast", {"x"}, {"y"}, {IntAttr("to", 8)}), 26, {&t}).ok());
  EXPECT_FALSE(InferNode(MakeNode("BitCast", {"x"}, {"y"}), 26, {&t}).ok());
  auto ok = InferNode(MakeNode("BitCast", {"x"}, {"y"}, {IntAttr("to", 13)}), 26, {&t});  // uint64
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ir::TypeToString((*ok)[0]), "uint64[3]");
}

}  // namespace
}  // namespace vigil::cpu::testing
