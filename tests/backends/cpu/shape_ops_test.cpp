// Layout ops: Reshape, Flatten, Squeeze, Unsqueeze, Transpose, Concat, Split,
// Expand, Tile — kernels against naive loops, views, shape inference with
// known and symbolic inputs, and errors.
#include <climits>
#include <numeric>

#include "backends/cpu/shape_ops_test_util.h"

namespace vigil::cpu::testing {
namespace {

using ir::DataType;

// ---------------------------------------------------------------- Reshape

TEST(ReshapeKernel, ZeroCopiesDimAndMinusOneInfersAndOutputIsAView) {
  auto x = F32({2, 3, 4}, Iota(24));
  auto shape = I64({3}, {0, -1, 2});
  auto out = RunOk(MakeNode("Reshape", {"x", "s"}, {"y"}), 14, {&x, &shape});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].shape(), (std::vector<int64_t>{2, 6, 2}));
  EXPECT_EQ(out[0].raw_data(), x.raw_data()) << "Reshape must not copy";
  ExpectFloatsEq(Values<float>(out[0]), Iota(24));
}

TEST(ReshapeKernel, AllowZeroMakesZeroALiteralDim) {
  auto x = F32({0, 3}, {});
  auto shape = I64({2}, {3, 0});
  auto out = RunOk(MakeNode("Reshape", {"x", "s"}, {"y"}, {IntAttr("allowzero", 1)}), 14, {&x, &shape});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].shape(), (std::vector<int64_t>{3, 0}));
  // Before opset 14 allowzero does not exist: 0 copies the input dim.
  auto shape2 = I64({2}, {0, 3});
  auto out2 = RunOk(MakeNode("Reshape", {"x", "s"}, {"y"}, {IntAttr("allowzero", 1)}), 13, {&x, &shape2});
  ASSERT_EQ(out2.size(), 1u);
  EXPECT_EQ(out2[0].shape(), (std::vector<int64_t>{0, 3}));
}

TEST(ReshapeKernel, Opset1TakesTheShapeAttribute) {
  auto x = F32({6}, Iota(6));
  auto out = RunOk(MakeNode("Reshape", {"x"}, {"y"}, {IntsAttr("shape", {3, -1})}), 4, {&x});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].shape(), (std::vector<int64_t>{3, 2}));
}

TEST(ReshapeKernel, ErrorsNameTheProblem) {
  auto x = F32({2, 3}, Iota(6));
  auto two_minus = I64({2}, {-1, -1});
  EXPECT_NE(RunError(MakeNode("Reshape", {"x", "s"}, {"y"}), 14, {&x, &two_minus}).find("more than one -1"),
            std::string::npos);
  auto wrong = I64({2}, {4, 2});
  EXPECT_NE(RunError(MakeNode("Reshape", {"x", "s"}, {"y"}), 14, {&x, &wrong}).find("8 elements"), std::string::npos);
  auto indivisible = I64({2}, {4, -1});
  RunError(MakeNode("Reshape", {"x", "s"}, {"y"}), 14, {&x, &indivisible});
  auto negative = I64({2}, {-2, 3});
  RunError(MakeNode("Reshape", {"x", "s"}, {"y"}), 14, {&x, &negative});
  auto zero_past_rank = I64({3}, {1, 6, 0});
  RunError(MakeNode("Reshape", {"x", "s"}, {"y"}), 14, {&x, &zero_past_rank});
}

TEST(ReshapeInfer, UsesTheKnownShapeValue) {
  auto xt = F32T({D(2), D(3), D(4)});
  auto st = I64T({D(3)});
  auto shape = I64({3}, {0, -1, 2}).AsConstant("s");
  auto out = InferOk(MakeNode("Reshape", {"x", "s"}, {"y"}), 14, {&xt, &st}, {nullptr, &shape});
  EXPECT_EQ(ShapeOf(out[0]), "float32[2,6,2]");
}

TEST(ReshapeInfer, SymbolsCancelAcrossTheMinusOne) {
  auto xt = F32T({S("N"), D(3), D(4)});
  auto st = I64T({D(2)});
  auto s1 = I64({2}, {0, -1}).AsConstant("s");
  EXPECT_EQ(ShapeOf(InferOk(MakeNode("Reshape", {"x", "s"}, {"y"}), 14, {&xt, &st}, {nullptr, &s1})[0]),
            "float32[N,12]");
  auto s2 = I64({3}, {-1, 4, 3}).AsConstant("s");
  auto st3 = I64T({D(3)});
  EXPECT_EQ(ShapeOf(InferOk(MakeNode("Reshape", {"x", "s"}, {"y"}), 14, {&xt, &st3}, {nullptr, &s2})[0]),
            "float32[N,4,3]");
  // Not resolvable: a fresh symbol.
  auto s3 = I64({2}, {2, -1}).AsConstant("s");
  auto out = InferOk(MakeNode("Reshape", {"x", "s"}, {"y"}), 14, {&xt, &st}, {nullptr, &s3})[0];
  ASSERT_EQ(out.shape.dims.size(), 2u);
  EXPECT_TRUE(out.shape.dims[1].is_symbolic());
}

TEST(ReshapeInfer, UnknownShapeValueGivesRankFromItsLength) {
  auto xt = F32T({S("N"), D(3)});
  auto st = I64T({D(4)});
  auto out = InferOk(MakeNode("Reshape", {"x", "s"}, {"y"}), 14, {&xt, &st})[0];
  EXPECT_EQ(out.shape.dims.size(), 4u);
  auto st_unknown = I64T({S("K")});
  out = InferOk(MakeNode("Reshape", {"x", "s"}, {"y"}), 14, {&xt, &st_unknown})[0];
  EXPECT_FALSE(out.shape.rank_known);
}

TEST(ReshapeInfer, FailsOnAnImpossibleKnownShape) {
  auto xt = F32T({D(2), D(3)});
  auto st = I64T({D(2)});
  auto s = I64({2}, {4, 2}).AsConstant("s");
  InferError(MakeNode("Reshape", {"x", "s"}, {"y"}), 14, {&xt, &st}, {nullptr, &s});
  auto s2 = I64({2}, {4, -1}).AsConstant("s");
  InferError(MakeNode("Reshape", {"x", "s"}, {"y"}), 14, {&xt, &st}, {nullptr, &s2});
}

// ---------------------------------------------------------------- Flatten

TEST(FlattenKernel, EveryAxisIncludingNegativeAndRank) {
  auto x = F32({2, 3, 1, 5}, Iota(30));
  struct Case {
    int64_t axis;
    std::vector<int64_t> shape;
  } cases[] = {{0, {1, 30}}, {1, {2, 15}}, {2, {6, 5}}, {4, {30, 1}}, {-1, {6, 5}}, {-4, {1, 30}}};
  for (const Case& c : cases) {
    auto out = RunOk(MakeNode("Flatten", {"x"}, {"y"}, {IntAttr("axis", c.axis)}), 13, {&x});
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].shape(), c.shape) << "axis " << c.axis;
    EXPECT_EQ(out[0].raw_data(), x.raw_data());
  }
  RunError(MakeNode("Flatten", {"x"}, {"y"}, {IntAttr("axis", 5)}), 13, {&x});
}

TEST(FlattenInfer, SymbolicProducts) {
  auto xt = F32T({S("N"), D(3), D(4)});
  EXPECT_EQ(ShapeOf(InferOk(MakeNode("Flatten", {"x"}, {"y"}), 13, {&xt})[0]), "float32[N,12]");
  auto out = InferOk(MakeNode("Flatten", {"x"}, {"y"}, {IntAttr("axis", 2)}), 13, {&xt})[0];
  EXPECT_TRUE(out.shape.dims[0].is_symbolic());
  EXPECT_NE(out.shape.dims[0].param, "N");  // N*3 is not N
  EXPECT_EQ(*out.shape.dims[1].value, 4);
  InferError(MakeNode("Flatten", {"x"}, {"y"}, {IntAttr("axis", -4)}), 13, {&xt});
}

// ---------------------------------------------------------------- Squeeze / Unsqueeze

TEST(SqueezeKernel, AxesAsAttributeAndAsInput) {
  auto x = F32({1, 3, 1, 2}, Iota(6));
  auto out = RunOk(MakeNode("Squeeze", {"x"}, {"y"}, {IntsAttr("axes", {0, -2})}), 11, {&x});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].shape(), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(out[0].raw_data(), x.raw_data());
  auto axes = I64({1}, {2});
  out = RunOk(MakeNode("Squeeze", {"x", "a"}, {"y"}), 13, {&x, &axes});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].shape(), (std::vector<int64_t>{1, 3, 2}));
  out = RunOk(MakeNode("Squeeze", {"x"}, {"y"}), 13, {&x});  // no axes: every 1
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].shape(), (std::vector<int64_t>{3, 2}));
  auto bad = I64({1}, {1});
  EXPECT_NE(RunError(MakeNode("Squeeze", {"x", "a"}, {"y"}), 13, {&x, &bad}).find("axis 1"), std::string::npos);
  auto out_of_range = I64({1}, {4});
  RunError(MakeNode("Squeeze", {"x", "a"}, {"y"}), 13, {&x, &out_of_range});
}

TEST(UnsqueezeKernel, AxesRefersToTheOutputRank) {
  auto x = F32({3, 2}, Iota(6));
  auto axes = I64({3}, {-1, 0, 2});
  auto out = RunOk(MakeNode("Unsqueeze", {"x", "a"}, {"y"}), 13, {&x, &axes});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].shape(), (std::vector<int64_t>{1, 3, 1, 2, 1}));
  EXPECT_EQ(out[0].raw_data(), x.raw_data());
  out = RunOk(MakeNode("Unsqueeze", {"x"}, {"y"}, {IntsAttr("axes", {1})}), 11, {&x});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].shape(), (std::vector<int64_t>{3, 1, 2}));
  auto repeated = I64({2}, {0, -5});
  RunError(MakeNode("Unsqueeze", {"x", "a"}, {"y"}), 13, {&x, &repeated});
}

TEST(SqueezeUnsqueezeInfer, KnownAndUnknownAxes) {
  auto xt = F32T({D(1), S("N"), D(1)});
  auto at = I64T({D(1)});
  auto axes = I64({1}, {0}).AsConstant("a");
  EXPECT_EQ(ShapeOf(InferOk(MakeNode("Squeeze", {"x", "a"}, {"y"}), 13, {&xt, &at}, {nullptr, &axes})[0]),
            "float32[N,1]");
  EXPECT_EQ(ShapeOf(InferOk(MakeNode("Squeeze", {"x"}, {"y"}, {IntsAttr("axes", {2})}), 11, {&xt})[0]),
            "float32[1,N]");
  // Without axes a symbolic dim might be 1: rank unknown.
  EXPECT_FALSE(InferOk(MakeNode("Squeeze", {"x"}, {"y"}), 13, {&xt})[0].shape.rank_known);
  // Unknown axes value of known length: rank known.
  EXPECT_EQ(InferOk(MakeNode("Squeeze", {"x", "a"}, {"y"}), 13, {&xt, &at})[0].shape.dims.size(), 2u);
  auto xt2 = F32T({D(2), D(3)});
  auto axes1 = I64({1}, {1}).AsConstant("a");
  InferError(MakeNode("Squeeze", {"x", "a"}, {"y"}), 13, {&xt2, &at}, {nullptr, &axes1});
  auto uaxes = I64({2}, {0, 3}).AsConstant("a");
  auto at2 = I64T({D(2)});
  EXPECT_EQ(ShapeOf(InferOk(MakeNode("Unsqueeze", {"x", "a"}, {"y"}), 13, {&xt, &at2}, {nullptr, &uaxes})[0]),
            "float32[1,1,N,1,1]");
  EXPECT_EQ(ShapeOf(InferOk(MakeNode("Unsqueeze", {"x"}, {"y"}, {IntsAttr("axes", {-1})}), 11, {&xt2})[0]),
            "float32[2,3,1]");
}

// ---------------------------------------------------------------- Transpose

// out[i] = in[perm-permuted index], by naive index arithmetic.
template <typename T>
std::vector<T> NaiveTranspose(const std::vector<T>& in, const std::vector<int64_t>& shape,
                              const std::vector<int64_t>& perm) {
  std::vector<int64_t> out_shape;
  for (int64_t p : perm) out_shape.push_back(shape[p]);
  std::vector<int64_t> in_strides = Strides(shape);
  std::vector<T> out(in.size());
  for (int64_t o = 0; o < Count(out_shape); ++o) {
    std::vector<int64_t> idx = Unflatten(o, out_shape);
    int64_t src = 0;
    for (size_t k = 0; k < perm.size(); ++k) src += idx[k] * in_strides[perm[k]];
    out[o] = in[src];
  }
  return out;
}

TEST(TransposeKernel, AllPermutationsOfA4DTensorMatchNaiveLoops) {
  std::vector<int64_t> shape{2, 3, 1, 5};
  auto x = F32(shape, Iota(30));
  std::vector<int64_t> perm{0, 1, 2, 3};
  do {
    auto out = RunOk(MakeNode("Transpose", {"x"}, {"y"}, {IntsAttr("perm", perm)}), 13, {&x});
    ASSERT_EQ(out.size(), 1u);
    ExpectFloatsEq(Values<float>(out[0]), NaiveTranspose(Iota(30), shape, perm));
  } while (std::next_permutation(perm.begin(), perm.end()));
}

// Sizes past the 16 x 16 tiles the copy uses where the source's contiguous
// axis is not the innermost (NHWC <-> NCHW), with partial tiles at the
// edges, for every permutation and element size.
TEST(TransposeKernel, LargeOddShapesMatchNaiveLoopsInEveryPermutation) {
  std::vector<int64_t> shape{2, 37, 19, 23};
  const size_t n = 2 * 37 * 19 * 23;
  std::vector<int8_t> i8(n);
  std::vector<uint16_t> f16(n);
  std::vector<int64_t> i64(n);
  for (size_t i = 0; i < n; ++i) {
    i8[i] = static_cast<int8_t>(i * 7);
    f16[i] = static_cast<uint16_t>(i * 13);
    i64[i] = static_cast<int64_t>(i) * 1000000007LL;
  }
  auto x = F32(shape, Iota(n));
  auto a = MakeTensor(DataType::kInt8, shape, i8);
  auto b = MakeTensor(DataType::kUint16, shape, f16);
  auto c = MakeTensor(DataType::kInt64, shape, i64);
  std::vector<int64_t> perm{0, 1, 2, 3};
  do {
    SCOPED_TRACE(::testing::PrintToString(perm));
    auto node = MakeNode("Transpose", {"x"}, {"y"}, {IntsAttr("perm", perm)});
    ExpectFloatsEq(Values<float>(RunOk(node, 13, {&x})[0]), NaiveTranspose(Iota(n), shape, perm));
    EXPECT_EQ(Values<int8_t>(RunOk(node, 13, {&a})[0]), NaiveTranspose(i8, shape, perm));
    EXPECT_EQ(Values<uint16_t>(RunOk(node, 13, {&b})[0]), NaiveTranspose(f16, shape, perm));
    EXPECT_EQ(Values<int64_t>(RunOk(node, 13, {&c})[0]), NaiveTranspose(i64, shape, perm));
  } while (std::next_permutation(perm.begin(), perm.end()));
}

TEST(TransposeKernel, DefaultReversesAndEveryElementSizeWorks) {
  std::vector<int64_t> shape{3, 13, 2};
  std::vector<int64_t> rev{2, 1, 0};
  std::vector<int8_t> i8(78);
  std::vector<uint16_t> f16(78);
  std::vector<int64_t> i64(78);
  for (size_t i = 0; i < 78; ++i) {
    i8[i] = static_cast<int8_t>(i);
    f16[i] = FloatToFloat16(static_cast<float>(i));
    i64[i] = static_cast<int64_t>(i) * 1000000007LL;
  }
  auto a = MakeTensor(DataType::kInt8, shape, i8);
  auto b = MakeTensor(DataType::kFloat16, shape, f16);
  auto c = MakeTensor(DataType::kInt64, shape, i64);
  auto node = MakeNode("Transpose", {"x"}, {"y"});
  EXPECT_EQ(Values<int8_t>(RunOk(node, 13, {&a})[0]), NaiveTranspose(i8, shape, rev));
  EXPECT_EQ(Values<uint16_t>(RunOk(node, 13, {&b})[0]), NaiveTranspose(f16, shape, rev));
  EXPECT_EQ(Values<int64_t>(RunOk(node, 13, {&c})[0]), NaiveTranspose(i64, shape, rev));
  auto empty = F32({0, 3}, {});
  EXPECT_EQ(RunOk(node, 13, {&empty})[0].shape(), (std::vector<int64_t>{3, 0}));
}

TEST(TransposeKernel, RejectsABadPerm) {
  auto x = F32({2, 3}, Iota(6));
  RunError(MakeNode("Transpose", {"x"}, {"y"}, {IntsAttr("perm", {0, 0})}), 13, {&x});
  RunError(MakeNode("Transpose", {"x"}, {"y"}, {IntsAttr("perm", {0, 1, 2})}), 13, {&x});
}

TEST(TransposeInfer, PermutesSymbolicDims) {
  auto xt = F32T({S("N"), D(3), S("H")});
  EXPECT_EQ(ShapeOf(InferOk(MakeNode("Transpose", {"x"}, {"y"}, {IntsAttr("perm", {2, 0, 1})}), 13, {&xt})[0]),
            "float32[H,N,3]");
  EXPECT_EQ(ShapeOf(InferOk(MakeNode("Transpose", {"x"}, {"y"}), 13, {&xt})[0]), "float32[H,3,N]");
  InferError(MakeNode("Transpose", {"x"}, {"y"}, {IntsAttr("perm", {0, 1})}), 13, {&xt});
}

// ---------------------------------------------------------------- Concat

TEST(ConcatKernel, OddSizesAlongEachAxisMatchNaiveLoops) {
  std::vector<std::vector<int64_t>> shapes{{2, 3, 5}, {2, 1, 5}, {2, 7, 5}};
  std::vector<runtime::Tensor> ins;
  float start = 1;
  for (auto& s : shapes) {
    ins.push_back(F32(s, Iota(Count(s), start)));
    start += 1000;
  }
  auto out = RunOk(MakeNode("Concat", {"a", "b", "c"}, {"y"}, {IntAttr("axis", -2)}), 13,
                   {&ins[0], &ins[1], &ins[2]});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].shape(), (std::vector<int64_t>{2, 11, 5}));
  std::vector<float> want;
  for (int64_t i = 0; i < 2; ++i) {
    for (size_t t = 0; t < 3; ++t) {
      auto v = Values<float>(ins[t]);
      for (int64_t j = 0; j < shapes[t][1] * 5; ++j) want.push_back(v[i * shapes[t][1] * 5 + j]);
    }
  }
  ExpectFloatsEq(Values<float>(out[0]), want);
}

// Blocks of several hundred KiB (copied in pieces, on several threads where
// the pool is loaded), of odd lengths, along the channel axis of NCHW.
TEST(ConcatKernel, LargeBlocksMatchNaiveLoops) {
  std::vector<std::vector<int64_t>> shapes{{2, 37, 61, 67}, {2, 3, 61, 67}, {2, 29, 61, 67}};
  std::vector<runtime::Tensor> ins;
  float start = 1;
  for (auto& s : shapes) {
    ins.push_back(F32(s, Iota(Count(s), start)));
    start += 1e6f;
  }
  auto out = RunOk(MakeNode("Concat", {"a", "b", "c"}, {"y"}, {IntAttr("axis", 1)}), 13,
                   {&ins[0], &ins[1], &ins[2]});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].shape(), (std::vector<int64_t>{2, 69, 61, 67}));
  std::vector<float> want;
  const int64_t plane = 61 * 67;
  for (int64_t i = 0; i < 2; ++i) {
    for (size_t t = 0; t < 3; ++t) {
      auto v = Values<float>(ins[t]);
      const int64_t block = shapes[t][1] * plane;
      for (int64_t j = 0; j < block; ++j) want.push_back(v[static_cast<size_t>(i * block + j)]);
    }
  }
  ExpectFloatsEq(Values<float>(out[0]), want);
}

TEST(ConcatKernel, EmptyInputsAndErrors) {
  auto a = F32({0, 2}, {});
  auto b = F32({3, 2}, Iota(6));
  auto out = RunOk(MakeNode("Concat", {"a", "b"}, {"y"}, {IntAttr("axis", 0)}), 13, {&a, &b});
  ASSERT_EQ(out.size(), 1u);
  ExpectFloatsEq(Values<float>(out[0]), Iota(6));
  auto c = F32({3, 3}, Iota(9));
  RunError(MakeNode("Concat", {"b", "c"}, {"y"}, {IntAttr("axis", 0)}), 13, {&b, &c});
  auto d = I64({3, 2}, {1, 2, 3, 4, 5, 6});
  RunError(MakeNode("Concat", {"b", "d"}, {"y"}, {IntAttr("axis", 0)}), 13, {&b, &d});
  RunError(MakeNode("Concat", {"b"}, {"y"}), 13, {&b});  // axis is required
}

TEST(ConcatInfer, SumsKnownDimsAndKeepsSymbols) {
  auto a = F32T({S("N"), D(3)});
  auto b = F32T({D(2), D(4)});
  auto c = F32T({S("N"), D(3)});
  EXPECT_EQ(ShapeOf(InferOk(MakeNode("Concat", {"a", "c"}, {"y"}, {IntAttr("axis", 1)}), 13, {&a, &c})[0]),
            "float32[N,6]");
  auto out = InferOk(MakeNode("Concat", {"a", "c"}, {"y"}, {IntAttr("axis", 0)}), 13, {&a, &c})[0];
  EXPECT_TRUE(out.shape.dims[0].is_symbolic());
  EXPECT_EQ(*out.shape.dims[1].value, 3);
  InferError(MakeNode("Concat", {"a", "b"}, {"y"}, {IntAttr("axis", 0)}), 13, {&a, &b});
  auto i1 = I64T({D(1)});
  auto i2 = I64T({D(2)});
  EXPECT_EQ(ShapeOf(InferOk(MakeNode("Concat", {"a", "b"}, {"y"}, {IntAttr("axis", 0)}), 13, {&i1, &i2})[0]),
            "int64[3]");
}

// ---------------------------------------------------------------- Split

std::vector<std::vector<int64_t>> ShapesOf(const std::vector<runtime::Tensor>& ts) {
  std::vector<std::vector<int64_t>> s;
  for (const auto& t : ts) s.push_back(t.shape());
  return s;
}

TEST(SplitKernel, EqualPartsSizesAttributeAndInput) {
  auto x = F32({2, 6}, Iota(12));
  auto out = RunOk(MakeNode("Split", {"x"}, {"a", "b", "c"}, {IntAttr("axis", 1)}), 13, {&x});
  ASSERT_EQ(out.size(), 3u);
  ExpectFloatsEq(Values<float>(out[0]), {1, 2, 7, 8});
  ExpectFloatsEq(Values<float>(out[2]), {5, 6, 11, 12});
  out = RunOk(MakeNode("Split", {"x"}, {"a", "b"}, {IntAttr("axis", -1), IntsAttr("split", {1, 5})}), 11, {&x});
  ASSERT_EQ(out.size(), 2u);
  ExpectFloatsEq(Values<float>(out[0]), {1, 7});
  ExpectFloatsEq(Values<float>(out[1]), {2, 3, 4, 5, 6, 8, 9, 10, 11, 12});
  auto sizes = I64({3}, {0, 2, 0});
  out = RunOk(MakeNode("Split", {"x", "s"}, {"a", "b", "c"}), 13, {&x, &sizes});
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(ShapesOf(out), (std::vector<std::vector<int64_t>>{{0, 6}, {2, 6}, {0, 6}}));
  ExpectFloatsEq(Values<float>(out[1]), Iota(12));
}

TEST(SplitKernel, NumOutputsGivesASmallerLastChunk) {
  auto x = F32({7}, Iota(7));
  auto out = RunOk(MakeNode("Split", {"x"}, {"a", "b", "c"}, {IntAttr("num_outputs", 3)}), 18, {&x});
  ASSERT_EQ(out.size(), 3u);
  ExpectFloatsEq(Values<float>(out[0]), {1, 2, 3});
  ExpectFloatsEq(Values<float>(out[1]), {4, 5, 6});
  ExpectFloatsEq(Values<float>(out[2]), {7});
  // Without num_outputs uneven parts are an error.
  RunError(MakeNode("Split", {"x"}, {"a", "b", "c"}), 13, {&x});
  auto bad = I64({2}, {3, 3});
  RunError(MakeNode("Split", {"x", "s"}, {"a", "b"}), 13, {&x, &bad});
}

TEST(SplitInfer, KnownSizesEqualPartsAndSymbols) {
  auto xt = F32T({S("N"), D(7)});
  auto st = I64T({D(2)});
  auto s = I64({2}, {3, 4}).AsConstant("s");
  auto out = InferOk(MakeNode("Split", {"x", "s"}, {"a", "b"}, {IntAttr("axis", 1)}), 13, {&xt, &st}, {nullptr, &s});
  EXPECT_EQ(ShapeOf(out[0]), "float32[N,3]");
  EXPECT_EQ(ShapeOf(out[1]), "float32[N,4]");
  out = InferOk(MakeNode("Split", {"x"}, {"a", "b", "c"}, {IntAttr("axis", 1), IntAttr("num_outputs", 3)}), 18, {&xt});
  EXPECT_EQ(ShapeOf(out[2]), "float32[N,1]");
  out = InferOk(MakeNode("Split", {"x"}, {"a", "b"}), 13, {&xt});
  EXPECT_EQ(out[0].shape.dims[0].param, out[1].shape.dims[0].param) << "equal parts share one symbol";
  InferError(MakeNode("Split", {"x"}, {"a", "b"}, {IntAttr("axis", 1)}), 13, {&xt});
  auto bad = I64({2}, {3, 3}).AsConstant("s");
  InferError(MakeNode("Split", {"x", "s"}, {"a", "b"}, {IntAttr("axis", 1)}), 13, {&xt, &st}, {nullptr, &bad});
}

// ---------------------------------------------------------------- Expand / Tile

TEST(ExpandKernel, BroadcastsBothWaysLikeNumpy) {
  auto x = F32({3, 1}, {1, 2, 3});
  auto shape = I64({3}, {2, 1, 4});
  auto out = RunOk(MakeNode("Expand", {"x", "s"}, {"y"}), 13, {&x, &shape});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].shape(), (std::vector<int64_t>{2, 3, 4}));
  std::vector<float> want;
  for (int b = 0; b < 2; ++b) {
    for (int i = 0; i < 3; ++i) {
      for (int j = 0; j < 4; ++j) want.push_back(static_cast<float>(i + 1));
    }
  }
  ExpectFloatsEq(Values<float>(out[0]), want);
  auto small = I64({1}, {1});  // a shorter shape of ones leaves the input as is
  out = RunOk(MakeNode("Expand", {"x", "s"}, {"y"}), 13, {&x, &small});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].shape(), (std::vector<int64_t>{3, 1}));
  auto bad = I64({2}, {2, 2});
  RunError(MakeNode("Expand", {"x", "s"}, {"y"}), 13, {&x, &bad});
}

TEST(ExpandInfer, BroadcastsWithTheKnownShape) {
  auto xt = F32T({S("N"), D(1)});
  auto st = I64T({D(3)});
  auto s = I64({3}, {2, 1, 5}).AsConstant("s");
  EXPECT_EQ(ShapeOf(InferOk(MakeNode("Expand", {"x", "s"}, {"y"}), 13, {&xt, &st}, {nullptr, &s})[0]),
            "float32[2,N,5]");
  auto out = InferOk(MakeNode("Expand", {"x", "s"}, {"y"}), 13, {&xt, &st})[0];
  EXPECT_EQ(out.shape.dims.size(), 3u);
}

TEST(TileKernel, MatchesNaiveModuloIndexing) {
  std::vector<int64_t> shape{2, 3, 1};
  auto x = F32(shape, Iota(6));
  auto reps = I64({3}, {2, 1, 3});
  auto out = RunOk(MakeNode("Tile", {"x", "r"}, {"y"}), 13, {&x, &reps});
  ASSERT_EQ(out.size(), 1u);
  std::vector<int64_t> out_shape{4, 3, 3};
  EXPECT_EQ(out[0].shape(), out_shape);
  std::vector<float> want;
  for (int64_t o = 0; o < Count(out_shape); ++o) {
    auto idx = Unflatten(o, out_shape);
    want.push_back(Iota(6)[(idx[0] % 2) * 3 + idx[1] % 3]);
  }
  ExpectFloatsEq(Values<float>(out[0]), want);
  auto zero = I64({3}, {1, 0, 1});
  EXPECT_EQ(RunOk(MakeNode("Tile", {"x", "r"}, {"y"}), 13, {&x, &zero})[0].shape(), (std::vector<int64_t>{2, 0, 1}));
  auto short_reps = I64({2}, {1, 1});
  RunError(MakeNode("Tile", {"x", "r"}, {"y"}), 13, {&x, &short_reps});
  auto huge = I64({3}, {INT64_MAX, 1, 1});  // overflows, refused before any allocation
  RunError(MakeNode("Tile", {"x", "r"}, {"y"}), 13, {&x, &huge});
}

TEST(TileInfer, MultipliesKnownDims) {
  auto xt = F32T({S("N"), D(3)});
  auto rt = I64T({D(2)});
  auto r = I64({2}, {1, 4}).AsConstant("r");
  EXPECT_EQ(ShapeOf(InferOk(MakeNode("Tile", {"x", "r"}, {"y"}), 13, {&xt, &rt}, {nullptr, &r})[0]),
            "float32[N,12]");
}

}  // namespace
}  // namespace vigil::cpu::testing
