// Pad (every mode, negative pads, attribute and input forms, axes),
// DepthToSpace (DCR, CRD) and SpaceToDepth against naive index formulas.
#include "backends/cpu/shape_ops_test_util.h"

namespace vigil::cpu::testing {
namespace {

using ir::DataType;

// Source index of padded position i (relative to the original start) as
// numpy.pad computes it, by repeated mirroring/wrapping; -1 for constant.
int64_t PadSource(int64_t i, int64_t n, const std::string& mode) {
  if (i >= 0 && i < n) return i;
  if (mode == "constant") return -1;
  if (mode == "edge") return i < 0 ? 0 : n - 1;
  if (mode == "wrap") {
    while (i < 0) i += n;
    while (i >= n) i -= n;
    return i;
  }
  if (n == 1) return 0;
  while (i < 0 || i >= n) {
    if (i < 0) i = -i;
    if (i >= n) i = 2 * (n - 1) - i;
  }
  return i;
}

// Naive pad of non-negative pads.
std::vector<float> NaivePad(const std::vector<float>& in, const std::vector<int64_t>& shape,
                            const std::vector<int64_t>& pads, const std::string& mode, float value) {
  size_t r = shape.size();
  std::vector<int64_t> out_shape(r), strides = Strides(shape);
  for (size_t a = 0; a < r; ++a) out_shape[a] = shape[a] + pads[a] + pads[a + r];
  std::vector<float> out;
  for (int64_t o = 0; o < Count(out_shape); ++o) {
    auto idx = Unflatten(o, out_shape);
    int64_t src = 0;
    bool fill = false;
    for (size_t a = 0; a < r; ++a) {
      int64_t s = PadSource(idx[a] - pads[a], shape[a], mode);
      if (s < 0) fill = true;
      src += s * strides[a];
    }
    out.push_back(fill ? value : in[src]);
  }
  return out;
}

TEST(PadKernel, EveryModeWithPadsLargerThanTheInputMatchesNumpy) {
  std::vector<int64_t> shape{2, 3, 5};
  auto data = Iota(30);
  auto x = F32(shape, data);
  std::vector<int64_t> pads{1, 0, 7, 0, 4, 2};
  auto p = I64({6}, pads);
  auto value = F32({}, {-2.5f});
  for (std::string mode : {"constant", "reflect", "edge", "wrap"}) {
    auto out = RunOk(MakeNode("Pad", {"x", "p", "v"}, {"y"}, {StringAttr("mode", mode)}), 19, {&x, &p, &value});
    EXPECT_EQ(out[0].shape(), (std::vector<int64_t>{3, 7, 14})) << mode;
    ExpectFloatsEq(Values<float>(out[0]), NaivePad(data, shape, pads, mode, -2.5f));
  }
}

TEST(PadKernel, NegativePadsCropAndAxesSelectDims) {
  auto x = F32({3, 4}, Iota(12));
  auto p = I64({4}, {-1, 1, 0, -2});  // crop a row at the top, two columns right; pad a column left
  auto out = RunOk(MakeNode("Pad", {"x", "p"}, {"y"}), 13, {&x, &p});
  EXPECT_EQ(out[0].shape(), (std::vector<int64_t>{2, 3}));
  ExpectFloatsEq(Values<float>(out[0]), {0, 5, 6, 0, 9, 10});
  auto axes = I64({1}, {-1});
  auto p2 = I64({2}, {2, 1});
  out = RunOk(MakeNode("Pad", {"x", "p", "", "a"}, {"y"}, {StringAttr("mode", "edge")}), 18, {&x, &p2, nullptr, &axes});
  EXPECT_EQ(out[0].shape(), (std::vector<int64_t>{3, 7}));
  ExpectFloatsEq(Values<float>(out[0]), NaivePad(Iota(12), {3, 4}, {0, 2, 0, 1}, "edge", 0));
}

TEST(PadKernel, Opset2AttributesAndIntegerDtypes) {
  auto x = MakeTensor(DataType::kInt32, {3}, std::vector<int32_t>{1, 2, 3});
  auto out = RunOk(MakeNode("Pad", {"x"}, {"y"}, {IntsAttr("pads", {2, 1}), FloatAttr("value", 7.0f)}), 2, {&x});
  EXPECT_EQ(Values<int32_t>(out[0]), (std::vector<int32_t>{7, 7, 1, 2, 3, 7}));
  out = RunOk(MakeNode("Pad", {"x"}, {"y"}, {IntsAttr("paddings", {1, 1}), StringAttr("mode", "reflect")}), 1, {&x});
  EXPECT_EQ(Values<int32_t>(out[0]), (std::vector<int32_t>{2, 1, 2, 3, 2}));
}

TEST(PadKernel, Errors) {
  auto x = F32({3}, Iota(3));
  auto short_pads = I64({1}, {1});
  RunError(MakeNode("Pad", {"x", "p"}, {"y"}), 13, {&x, &short_pads});
  auto crop_all = I64({2}, {-2, -2});
  RunError(MakeNode("Pad", {"x", "p"}, {"y"}), 13, {&x, &crop_all});
  auto p = I64({2}, {1, 1});
  RunError(MakeNode("Pad", {"x", "p"}, {"y"}, {StringAttr("mode", "mirror")}), 13, {&x, &p});
  auto empty = F32({0}, {});
  RunError(MakeNode("Pad", {"x", "p"}, {"y"}, {StringAttr("mode", "reflect")}), 13, {&empty, &p});
  auto wrong_value = I64({}, {1});
  RunError(MakeNode("Pad", {"x", "p", "v"}, {"y"}), 13, {&x, &p, &wrong_value});
}

TEST(PadInfer, KnownAndSymbolicDims) {
  auto xt = F32T({S("N"), D(3)});
  auto pt = I64T({D(4)});
  auto p = I64({4}, {0, 1, 0, 2}).AsConstant();
  EXPECT_EQ(ShapeOf(InferOk(MakeNode("Pad", {"x", "p"}, {"y"}), 13, {&xt, &pt}, {nullptr, &p})[0]), "float32[N,6]");
  auto out = InferOk(MakeNode("Pad", {"x", "p"}, {"y"}), 13, {&xt, &pt})[0];
  EXPECT_EQ(out.shape.dims.size(), 2u);
  EXPECT_EQ(ShapeOf(InferOk(MakeNode("Pad", {"x"}, {"y"}, {IntsAttr("pads", {1, 1, 1, 1})}), 10, {&xt})[0]),
            "float32[unk_0,5]");
  auto bad = I64({2}, {0, 1}).AsConstant();
  auto bt = I64T({D(2)});
  InferError(MakeNode("Pad", {"x", "p"}, {"y"}), 13, {&xt, &bt}, {nullptr, &bad});
}

// ---------------------------------------------------------------- DepthToSpace / SpaceToDepth

TEST(DepthToSpaceKernel, BothModesMatchTheSpecFormula) {
  int64_t n = 2, c = 12, h = 3, w = 2, b = 2;
  std::vector<int64_t> shape{n, c, h, w};
  auto data = Iota(Count(shape));
  auto x = F32(shape, data);
  int64_t oc = c / (b * b);
  for (std::string mode : {"DCR", "CRD"}) {
    auto out = RunOk(MakeNode("DepthToSpace", {"x"}, {"y"}, {IntAttr("blocksize", b), StringAttr("mode", mode)}), 13, {&x});
    EXPECT_EQ(out[0].shape(), (std::vector<int64_t>{n, oc, h * b, w * b}));
    std::vector<float> want;
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t k = 0; k < oc; ++k) {
        for (int64_t y = 0; y < h * b; ++y) {
          for (int64_t z = 0; z < w * b; ++z) {
            int64_t by = y % b, bz = z % b;
            int64_t ch = mode == "DCR" ? (by * b + bz) * oc + k : k * b * b + by * b + bz;
            want.push_back(data[((i * c + ch) * h + y / b) * w + z / b]);
          }
        }
      }
    }
    ExpectFloatsEq(Values<float>(out[0]), want);
    // SpaceToDepth in the same mode is the inverse.
    auto back = RunOk(MakeNode("SpaceToDepth", {"y"}, {"z"}, {IntAttr("blocksize", b), StringAttr("mode", mode)}), 25,
                      {&out[0]});
    ExpectFloatsEq(Values<float>(back[0]), data);
  }
  auto odd = F32({1, 3, 1, 1}, Iota(3));
  RunError(MakeNode("DepthToSpace", {"x"}, {"y"}, {IntAttr("blocksize", 2)}), 13, {&odd});
  RunError(MakeNode("SpaceToDepth", {"x"}, {"y"}, {IntAttr("blocksize", 2)}), 13, {&odd});
}

TEST(DepthToSpaceInfer, Shapes) {
  auto xt = F32T({S("N"), D(8), D(3), S("W")});
  auto out = InferOk(MakeNode("DepthToSpace", {"x"}, {"y"}, {IntAttr("blocksize", 2)}), 13, {&xt})[0];
  EXPECT_EQ(ir::ShapeToString(out.shape), "[N,2,6,unk_0]");
  auto st = F32T({D(1), D(3), D(4), D(6)});
  EXPECT_EQ(ShapeOf(InferOk(MakeNode("SpaceToDepth", {"x"}, {"y"}, {IntAttr("blocksize", 2)}), 13, {&st})[0]),
            "float32[1,12,2,3]");
  auto bad = F32T({D(1), D(3), D(4), D(5)});
  InferError(MakeNode("SpaceToDepth", {"x"}, {"y"}, {IntAttr("blocksize", 2)}), 13, {&bad});
  InferError(MakeNode("DepthToSpace", {"x"}, {"y"}, {IntAttr("blocksize", 2)}), 13, {&bad});
}

}  // namespace
}  // namespace vigil::cpu::testing
