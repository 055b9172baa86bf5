// Tensor generators: Constant, ConstantOfShape, Range, Shape, Size, EyeLike.
#include <climits>
#include <cmath>

#include "backends/cpu/shape_ops_test_util.h"

namespace vigil::cpu::testing {
namespace {

using ir::DataType;

ir::Attribute TensorAttribute(std::string name, const runtime::Tensor& t) {
  ir::Attribute a;
  a.name = std::move(name);
  a.type = ir::AttributeType::kTensor;
  a.t = t.AsConstant("v");
  return a;
}

// ---------------------------------------------------------------- Constant

TEST(ConstantKernel, EveryValueAttributeKind) {
  auto v = MakeTensor(DataType::kInt32, {2, 2}, std::vector<int32_t>{1, -2, 3, -4});
  auto out = RunOk(MakeNode("Constant", {}, {"y"}, {TensorAttribute("value", v)}), 13, {});
  EXPECT_EQ(out[0].shape(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(Values<int32_t>(out[0]), (std::vector<int32_t>{1, -2, 3, -4}));
  EXPECT_NE(out[0].raw_data(), v.raw_data()) << "the output gets its own aligned buffer";
  out = RunOk(MakeNode("Constant", {}, {"y"}, {FloatAttr("value_float", 2.5f)}), 13, {});
  EXPECT_TRUE(out[0].shape().empty());
  ExpectFloatsEq(Values<float>(out[0]), {2.5f});
  out = RunOk(MakeNode("Constant", {}, {"y"}, {FloatsAttr("value_floats", {1, 2, 3})}), 13, {});
  ExpectFloatsEq(Values<float>(out[0]), {1, 2, 3});
  out = RunOk(MakeNode("Constant", {}, {"y"}, {IntAttr("value_int", -7)}), 13, {});
  EXPECT_EQ(Values<int64_t>(out[0]), (std::vector<int64_t>{-7}));
  out = RunOk(MakeNode("Constant", {}, {"y"}, {IntsAttr("value_ints", {})}), 13, {});
  EXPECT_EQ(out[0].shape(), (std::vector<int64_t>{0}));
  RunError(MakeNode("Constant", {}, {"y"}, {StringAttr("value_string", "hi")}), 13, {});
  RunError(MakeNode("Constant", {}, {"y"}), 13, {});
}

TEST(ConstantInfer, TypesOfEveryKind) {
  auto v = MakeTensor(DataType::kFloat16, {3, 1}, std::vector<uint16_t>{0, 0, 0});
  EXPECT_EQ(ShapeOf(InferOk(MakeNode("Constant", {}, {"y"}, {TensorAttribute("value", v)}), 13, {})[0]),
            "float16[3,1]");
  EXPECT_EQ(ShapeOf(InferOk(MakeNode("Constant", {}, {"y"}, {IntsAttr("value_ints", {1, 2})}), 13, {})[0]),
            "int64[2]");
  EXPECT_EQ(ShapeOf(InferOk(MakeNode("Constant", {}, {"y"}, {FloatAttr("value_float", 1)}), 13, {})[0]), "float32[]");
  InferError(MakeNode("Constant", {}, {"y"}, {IntAttr("value_int", 1), FloatAttr("value_float", 1)}), 13, {});
  InferError(MakeNode("Constant", {}, {"y"}), 13, {});
}

// ---------------------------------------------------------------- ConstantOfShape

TEST(ConstantOfShapeKernel, DefaultZeroTypedValueScalarAndEmpty) {
  auto shape = I64({3}, {2, 1, 3});
  auto out = RunOk(MakeNode("ConstantOfShape", {"s"}, {"y"}), 13, {&shape});
  EXPECT_EQ(out[0].dtype(), DataType::kFloat32);
  ExpectFloatsEq(Values<float>(out[0]), std::vector<float>(6, 0.0f));
  auto value = MakeTensor(DataType::kInt32, {1}, std::vector<int32_t>{-9});
  out = RunOk(MakeNode("ConstantOfShape", {"s"}, {"y"}, {TensorAttribute("value", value)}), 13, {&shape});
  EXPECT_EQ(Values<int32_t>(out[0]), std::vector<int32_t>(6, -9));
  auto scalar = I64({0}, {});
  out = RunOk(MakeNode("ConstantOfShape", {"s"}, {"y"}), 13, {&scalar});
  EXPECT_TRUE(out[0].shape().empty());
  ExpectFloatsEq(Values<float>(out[0]), {0.0f});
  auto zero = I64({2}, {4, 0});
  out = RunOk(MakeNode("ConstantOfShape", {"s"}, {"y"}), 13, {&zero});
  EXPECT_EQ(out[0].shape(), (std::vector<int64_t>{4, 0}));
  auto negative = I64({1}, {-1});
  RunError(MakeNode("ConstantOfShape", {"s"}, {"y"}), 13, {&negative});
}

TEST(ConstantOfShapeInfer, KnownAndUnknownShapeValue) {
  auto st = I64T({D(2)});
  auto s = I64({2}, {5, 7}).AsConstant();
  auto value = MakeTensor(DataType::kInt64, {1}, std::vector<int64_t>{1});
  auto node = MakeNode("ConstantOfShape", {"s"}, {"y"}, {TensorAttribute("value", value)});
  EXPECT_EQ(ShapeOf(InferOk(node, 13, {&st}, {&s})[0]), "int64[5,7]");
  auto out = InferOk(node, 13, {&st})[0];
  EXPECT_EQ(out.shape.dims.size(), 2u);
  EXPECT_TRUE(out.shape.dims[0].is_symbolic());
  auto bad = MakeTensor(DataType::kInt64, {2}, std::vector<int64_t>{1, 2});
  InferError(MakeNode("ConstantOfShape", {"s"}, {"y"}, {TensorAttribute("value", bad)}), 13, {&st});
}

// ---------------------------------------------------------------- Range

TEST(RangeKernel, FloatIntAndEmptyRanges) {
  auto s = F32({}, {1}), l = F32({}, {2.05f}), d = F32({}, {0.25f});
  auto out = RunOk(MakeNode("Range", {"s", "l", "d"}, {"y"}), 11, {&s, &l, &d});
  ExpectFloatsEq(Values<float>(out[0]), {1, 1.25f, 1.5f, 1.75f, 2});
  auto si = MakeTensor(DataType::kInt32, {}, std::vector<int32_t>{10});
  auto li = MakeTensor(DataType::kInt32, {}, std::vector<int32_t>{4});
  auto di = MakeTensor(DataType::kInt32, {}, std::vector<int32_t>{-3});
  out = RunOk(MakeNode("Range", {"s", "l", "d"}, {"y"}), 11, {&si, &li, &di});
  EXPECT_EQ(Values<int32_t>(out[0]), (std::vector<int32_t>{10, 7}));
  auto s64 = I64({}, {INT64_MIN}), l64 = I64({}, {INT64_MAX}), d64 = I64({}, {INT64_MAX});
  out = RunOk(MakeNode("Range", {"s", "l", "d"}, {"y"}), 11, {&s64, &l64, &d64});
  EXPECT_EQ(Values<int64_t>(out[0]), (std::vector<int64_t>{INT64_MIN, -1, INT64_MAX - 1}));
  out = RunOk(MakeNode("Range", {"s", "l", "d"}, {"y"}), 11, {&li, &si, &di});  // wrong direction: empty
  EXPECT_EQ(out[0].shape(), (std::vector<int64_t>{0}));
  auto zero = MakeTensor(DataType::kInt32, {}, std::vector<int32_t>{0});
  RunError(MakeNode("Range", {"s", "l", "d"}, {"y"}), 11, {&si, &li, &zero});
  RunError(MakeNode("Range", {"s", "l", "d"}, {"y"}), 11, {&s, &li, &di});  // mixed dtypes
}

TEST(RangeKernel, Float16ComputesInFloat) {
  auto h = [](float f) { return MakeTensor(DataType::kFloat16, {}, std::vector<uint16_t>{FloatToFloat16(f)}); };
  auto s = h(2048), l = h(2052), d = h(1);
  auto out = RunOk(MakeNode("Range", {"s", "l", "d"}, {"y"}), 27, {&s, &l, &d});
  auto got = Values<uint16_t>(out[0]);
  ASSERT_EQ(got.size(), 4u);
  // 2049 and 2051 are not representable in float16: they round to even.
  std::vector<float> want{2048, 2048, 2050, 2052};
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(Float16ToFloat(got[i]), want[i]) << i;
}

TEST(RangeInfer, KnownValuesGiveTheLength) {
  auto t = I64T({});
  auto s = I64({}, {0}).AsConstant(), l = I64({}, {10}).AsConstant(), d = I64({}, {3}).AsConstant();
  auto node = MakeNode("Range", {"s", "l", "d"}, {"y"});
  EXPECT_EQ(ShapeOf(InferOk(node, 11, {&t, &t, &t}, {&s, &l, &d})[0]), "int64[4]");
  auto out = InferOk(node, 11, {&t, &t, &t}, {&s, nullptr, &d})[0];
  EXPECT_TRUE(out.shape.dims[0].is_symbolic());
  auto z = I64({}, {0}).AsConstant();
  InferError(node, 11, {&t, &t, &t}, {&s, &l, &z});
  auto ft = F32T({});
  InferError(node, 11, {&t, &ft, &t});
  auto lo = I64({}, {INT64_MIN}).AsConstant(), hi = I64({}, {INT64_MAX}).AsConstant(), one = I64({}, {1}).AsConstant();
  InferError(node, 11, {&t, &t, &t}, {&lo, &hi, &one});
}

// ---------------------------------------------------------------- Shape / Size

TEST(ShapeKernel, StartAndEndClampLikeSlice) {
  auto x = F32({2, 3, 5, 7}, std::vector<float>(210, 0));
  struct Case {
    std::vector<ir::Attribute> attrs;
    std::vector<int64_t> want;
  } cases[] = {
      {{}, {2, 3, 5, 7}},
      {{IntAttr("start", 1)}, {3, 5, 7}},
      {{IntAttr("end", -1)}, {2, 3, 5}},
      {{IntAttr("start", -10), IntAttr("end", 10)}, {2, 3, 5, 7}},
      {{IntAttr("start", 3), IntAttr("end", 1)}, {}},
      {{IntAttr("start", -2), IntAttr("end", -1)}, {5}},
  };
  for (const Case& c : cases) {
    auto out = RunOk(MakeNode("Shape", {"x"}, {"y"}, c.attrs), 15, {&x});
    EXPECT_EQ(Values<int64_t>(out[0]), c.want);
    auto xt = F32T({S("N"), D(3), D(5), D(7)});
    auto t = InferOk(MakeNode("Shape", {"x"}, {"y"}, c.attrs), 15, {&xt})[0];
    EXPECT_EQ(ShapeOf(t), "int64[" + std::to_string(c.want.size()) + "]");
  }
  // Before opset 15 start/end do not exist.
  EXPECT_EQ(Values<int64_t>(RunOk(MakeNode("Shape", {"x"}, {"y"}, {IntAttr("start", 2)}), 13, {&x})[0]).size(), 4u);
}

TEST(SizeKernel, CountsElements) {
  auto x = F32({2, 0, 3}, {});
  auto out = RunOk(MakeNode("Size", {"x"}, {"y"}), 13, {&x});
  EXPECT_TRUE(out[0].shape().empty());
  EXPECT_EQ(Values<int64_t>(out[0]), (std::vector<int64_t>{0}));
  auto y = MakeTensor(DataType::kBool, {3, 5}, std::vector<uint8_t>(15, 1));
  EXPECT_EQ(Values<int64_t>(RunOk(MakeNode("Size", {"x"}, {"y"}), 13, {&y})[0]), (std::vector<int64_t>{15}));
  auto xt = F32T({S("N")});
  EXPECT_EQ(ShapeOf(InferOk(MakeNode("Size", {"x"}, {"y"}), 13, {&xt})[0]), "int64[]");
}

// ---------------------------------------------------------------- EyeLike

TEST(EyeLikeKernel, DiagonalOffsetsAndDtypes) {
  auto x = F32({3, 5}, std::vector<float>(15, 7));
  for (int64_t k : {-4, -1, 0, 2, 5}) {
    auto out = RunOk(MakeNode("EyeLike", {"x"}, {"y"}, {IntAttr("k", k)}), 13, {&x});
    std::vector<float> want(15, 0);
    for (int64_t i = 0; i < 3; ++i) {
      if (i + k >= 0 && i + k < 5) want[i * 5 + i + k] = 1;
    }
    ExpectFloatsEq(Values<float>(out[0]), want);
  }
  auto out = RunOk(MakeNode("EyeLike", {"x"}, {"y"}, {IntAttr("dtype", static_cast<int64_t>(DataType::kInt64))}), 13,
                   {&x});
  EXPECT_EQ(out[0].dtype(), DataType::kInt64);
  EXPECT_EQ(Values<int64_t>(out[0])[6], 1);
  out = RunOk(MakeNode("EyeLike", {"x"}, {"y"}, {IntAttr("dtype", static_cast<int64_t>(DataType::kFloat16))}), 13, {&x});
  EXPECT_EQ(Values<uint16_t>(out[0])[0], FloatToFloat16(1.0f));
  auto v = F32({3}, {1, 2, 3});
  RunError(MakeNode("EyeLike", {"x"}, {"y"}), 13, {&v});
  auto xt = F32T({S("N"), S("M")});
  EXPECT_EQ(ShapeOf(InferOk(MakeNode("EyeLike", {"x"}, {"y"}, {IntAttr("dtype", 6)}), 13, {&xt})[0]), "int32[N,M]");
}

}  // namespace
}  // namespace vigil::cpu::testing
