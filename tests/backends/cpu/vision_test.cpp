// Image-geometry ops: CenterCropPad, Col2Im and AffineGrid, against plain
// nested-loop references written from the spec, their error paths and their
// shape inference.
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "backends/cpu/elementwise_test_util.h"

namespace vigil::cpu::testing {
namespace {

using Shape = std::vector<int64_t>;

int64_t Count(const Shape& shape) { return Product(shape); }

Shape Strides(const Shape& shape) {
  Shape s(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;) s[i - 1] = s[i] * shape[i];
  return s;
}

Shape Unflatten(int64_t flat, const Shape& shape) {
  Shape idx(shape.size());
  for (size_t a = shape.size(); a-- > 0;) {
    idx[a] = flat % shape[a];
    flat /= shape[a];
  }
  return idx;
}

std::vector<float> Iota(size_t n) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<float>(i + 1);
  return v;
}

// The error summary of a run that must fail (and name the node).
std::string RunError(const ir::Node& node, int64_t opset, const std::vector<const runtime::Tensor*>& inputs) {
  auto r = RunKernel(node, opset, inputs);
  EXPECT_FALSE(r.ok()) << "expected an error";
  if (r.ok()) return {};
  EXPECT_NE(r.status().summary().find("node " + node.op_type), std::string::npos) << r.status().summary();
  return r.status().summary();
}

ir::Dim D(int64_t v) { return ir::Dim::Known(v); }
ir::Dim S(const std::string& name) { return ir::Dim::Symbolic(name); }
ir::TypeInfo F32T(std::vector<ir::Dim> dims) { return ops::TensorType(DataType::kFloat32, std::move(dims)); }
ir::TypeInfo I64T(std::vector<ir::Dim> dims) { return ops::TensorType(DataType::kInt64, std::move(dims)); }
std::string ShapeOf(const ir::TypeInfo& t) { return ir::TypeToString(t); }

std::vector<ir::TypeInfo> InferOk(const ir::Node& node, int64_t opset, const std::vector<const ir::TypeInfo*>& types,
                                  const std::vector<const ir::Tensor*>& values = {}) {
  auto r = InferNode(node, opset, types, values);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  if (!r.ok()) return std::vector<ir::TypeInfo>(node.outputs.size());
  return std::move(r).value();
}

void InferError(const ir::Node& node, int64_t opset, const std::vector<const ir::TypeInfo*>& types,
                const std::vector<const ir::Tensor*>& values = {}) {
  auto r = InferNode(node, opset, types, values);
  EXPECT_FALSE(r.ok()) << node.op_type << ": expected a shape inference error";
  if (!r.ok()) EXPECT_NE(r.status().summary().find("node " + node.op_type), std::string::npos) << r.status().summary();
}

void ExpectFloatsEq(const std::vector<float>& got, const std::vector<float>& want) {
  EXPECT_EQ(got, want);
}

std::string Join(const Shape& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? "," : "") + std::to_string(s[i]);
  return out + "]";
}

// ---------------------------------------------------------------- CenterCropPad

// Output element at multi-index `o` reads input index o + (in - out) / 2 when
// cropping and o - (out - in) / 2 when padding (floor divisions), 0 outside.
std::vector<double> CenterCropPadReference(const std::vector<double>& x, const Shape& in, const Shape& out) {
  std::vector<double> y(static_cast<size_t>(Count(out)));
  const Shape in_strides = Strides(in);
  for (int64_t flat = 0; flat < Count(out); ++flat) {
    Shape o = Unflatten(flat, out);
    int64_t src = 0;
    bool inside = true;
    for (size_t a = 0; a < in.size(); ++a) {
      int64_t i = in[a] >= out[a] ? o[a] + (in[a] - out[a]) / 2 : o[a] - (out[a] - in[a]) / 2;
      inside = inside && i >= 0 && i < in[a];
      src += i * in_strides[a];
    }
    y[static_cast<size_t>(flat)] = inside ? x[static_cast<size_t>(src)] : 0;
  }
  return y;
}

TEST(CenterCropPadKernel, CropsAndPadsAroundTheCentre) {
  struct Case {
    Shape in;
    std::vector<int64_t> axes;  // empty: attribute absent (every axis)
    std::vector<int64_t> sizes;
    Shape out;
  } cases[] = {
      {{13, 127}, {}, {7, 130}, {7, 130}},
      {{13, 127}, {}, {13, 127}, {13, 127}},
      {{13, 127}, {}, {14, 1}, {14, 1}},
      {{3, 13, 5}, {-1, 0}, {8, 2}, {2, 13, 8}},
      {{3, 13, 5}, {1}, {4}, {3, 4, 5}},
      {{2, 0, 3}, {1, 2}, {3, 0}, {2, 3, 0}},
      {{4, 3}, {0, 1}, {0, 6}, {0, 6}},
      {{5, 1, 13}, {1}, {127}, {5, 127, 13}},
  };
  for (const Case& c : cases) {
    for (DataType d : {DataType::kFloat32, DataType::kInt8, DataType::kInt64, DataType::kFloat16, DataType::kBool}) {
      const std::string what = "CenterCropPad " + DtypeName(d) + " " + Join(c.in) + " -> " + Join(c.out);
      std::vector<double> xv = RandomValues(static_cast<size_t>(Count(c.in)), 1, 100, 3, true);
      if (d == DataType::kBool) {
        for (double& v : xv) v = std::fmod(v, 2);
      }
      runtime::Tensor x = TensorOf(d, c.in, xv);
      runtime::Tensor sizes = I64({static_cast<int64_t>(c.sizes.size())}, c.sizes);
      std::vector<ir::Attribute> attrs;
      if (!c.axes.empty()) attrs.push_back(IntsAttr("axes", c.axes));
      ir::Node node = MakeNode("CenterCropPad", {"x", "s"}, {"y"}, attrs);
      auto out = RunOk(node, 18, {&x, &sizes});
      ASSERT_EQ(out.size(), 1u) << what;
      EXPECT_EQ(out[0].dtype(), d) << what;
      ASSERT_EQ(out[0].shape(), c.out) << what;
      ExpectNear(DoublesOf(out[0]), CenterCropPadReference(xv, c.in, c.out), {0, 0}, what);

      ir::TypeInfo xt = ops::TensorType(d, c.in);
      ir::TypeInfo st = I64T({D(static_cast<int64_t>(c.sizes.size()))});
      ir::Tensor sc = sizes.AsConstant("s");
      auto inferred = InferOk(node, 18, {&xt, &st}, {nullptr, &sc});
      EXPECT_EQ(ShapeOf(inferred[0]), ShapeOf(ops::TensorType(d, c.out))) << what;
    }
  }
}

TEST(CenterCropPadKernel, Errors) {
  auto x = F32({3, 4}, Iota(12));
  auto two = I64({2}, {2, 2});
  auto one = I64({1}, {2});
  auto node = [](std::vector<ir::Attribute> attrs = {}) {
    return MakeNode("CenterCropPad", {"x", "s"}, {"y"}, std::move(attrs));
  };
  EXPECT_NE(RunError(node(), 18, {&x, &one}).find("input shape has 1 values but there are 2 axes"), std::string::npos);
  EXPECT_NE(RunError(node({IntsAttr("axes", {0, -2})}), 18, {&x, &two}).find("names axis 0 twice"), std::string::npos);
  EXPECT_NE(RunError(node({IntsAttr("axes", {2})}), 18, {&x, &one}).find("axes"), std::string::npos);
  auto negative = I64({2}, {2, -1});
  EXPECT_NE(RunError(node(), 18, {&x, &negative}).find("must not be negative"), std::string::npos);
  auto floats = F32({2}, {2, 2});
  EXPECT_NE(RunError(node(), 18, {&x, &floats}).find("int64 or int32"), std::string::npos);
  auto matrix = I64({1, 2}, {2, 2});
  EXPECT_NE(RunError(node(), 18, {&x, &matrix}).find("1-D"), std::string::npos);

  auto xt = F32T({S("N"), D(4), D(9)});
  auto st = I64T({D(2)});
  auto sizes = I64({2}, {6, 3}).AsConstant("s");
  auto out = InferOk(node({IntsAttr("axes", {2, 1})}), 18, {&xt, &st}, {nullptr, &sizes});
  EXPECT_EQ(ShapeOf(out[0]), "float32[N,3,6]");
  out = InferOk(node({IntsAttr("axes", {2, 1})}), 18, {&xt, &st});  // sizes known only at run time
  EXPECT_TRUE(out[0].shape.dims[1].is_symbolic());
  EXPECT_EQ(out[0].shape.dims[0].param, "N");
  InferError(node(), 18, {&xt, &st});  // 2 sizes for 3 axes
  InferError(node({IntsAttr("axes", {1, 1})}), 18, {&xt, &st});
  auto bad = I64({2}, {-6, 3}).AsConstant("s");
  InferError(node({IntsAttr("axes", {2, 1})}), 18, {&xt, &st}, {nullptr, &bad});
}

// ---------------------------------------------------------------- Col2Im

struct Col2ImCase {
  Shape image, block, dilations, strides, pads;  // pads: begins then ends
  int64_t batch, channels;
};

// Block positions along one dim.
int64_t Positions(int64_t image, int64_t block, int64_t dilation, int64_t stride, int64_t pad_sum) {
  return (image + pad_sum - dilation * (block - 1) - 1) / stride + 1;
}

// 2D fold as PyTorch writes it: for every column (c, kh, kw) and position
// (ph, pw), add it at (ph * sh - pad_top + kh * dh, pw * sw - pad_left + kw * dw).
std::vector<double> Col2Im2dReference(const std::vector<double>& x, const Col2ImCase& c) {
  const int64_t H = c.image[0], W = c.image[1], KH = c.block[0], KW = c.block[1];
  const int64_t PH = Positions(H, KH, c.dilations[0], c.strides[0], c.pads[0] + c.pads[2]);
  const int64_t PW = Positions(W, KW, c.dilations[1], c.strides[1], c.pads[1] + c.pads[3]);
  std::vector<double> y(static_cast<size_t>(c.batch * c.channels * H * W), 0.0);
  for (int64_t n = 0; n < c.batch; ++n) {
    for (int64_t ch = 0; ch < c.channels; ++ch) {
      for (int64_t kh = 0; kh < KH; ++kh) {
        for (int64_t kw = 0; kw < KW; ++kw) {
          const int64_t row = (n * c.channels + ch) * KH * KW + kh * KW + kw;
          for (int64_t ph = 0; ph < PH; ++ph) {
            for (int64_t pw = 0; pw < PW; ++pw) {
              const int64_t h = ph * c.strides[0] - c.pads[0] + kh * c.dilations[0];
              const int64_t w = pw * c.strides[1] - c.pads[1] + kw * c.dilations[1];
              if (h < 0 || h >= H || w < 0 || w >= W) continue;
              y[static_cast<size_t>(((n * c.channels + ch) * H + h) * W + w)] +=
                  x[static_cast<size_t>(row * PH * PW + ph * PW + pw)];
            }
          }
        }
      }
    }
  }
  return y;
}

// 3D: the same with a depth loop.
std::vector<double> Col2Im3dReference(const std::vector<double>& x, const Col2ImCase& c) {
  const int64_t Dd = c.image[0], H = c.image[1], W = c.image[2];
  const int64_t KD = c.block[0], KH = c.block[1], KW = c.block[2];
  const int64_t PD = Positions(Dd, KD, c.dilations[0], c.strides[0], c.pads[0] + c.pads[3]);
  const int64_t PH = Positions(H, KH, c.dilations[1], c.strides[1], c.pads[1] + c.pads[4]);
  const int64_t PW = Positions(W, KW, c.dilations[2], c.strides[2], c.pads[2] + c.pads[5]);
  std::vector<double> y(static_cast<size_t>(c.batch * c.channels * Dd * H * W), 0.0);
  for (int64_t plane = 0; plane < c.batch * c.channels; ++plane) {
    for (int64_t kd = 0; kd < KD; ++kd) {
      for (int64_t kh = 0; kh < KH; ++kh) {
        for (int64_t kw = 0; kw < KW; ++kw) {
          const int64_t row = plane * KD * KH * KW + (kd * KH + kh) * KW + kw;
          for (int64_t pd = 0; pd < PD; ++pd) {
            for (int64_t ph = 0; ph < PH; ++ph) {
              for (int64_t pw = 0; pw < PW; ++pw) {
                const int64_t d = pd * c.strides[0] - c.pads[0] + kd * c.dilations[0];
                const int64_t h = ph * c.strides[1] - c.pads[1] + kh * c.dilations[1];
                const int64_t w = pw * c.strides[2] - c.pads[2] + kw * c.dilations[2];
                if (d < 0 || d >= Dd || h < 0 || h >= H || w < 0 || w >= W) continue;
                y[static_cast<size_t>(((plane * Dd + d) * H + h) * W + w)] +=
                    x[static_cast<size_t>(row * PD * PH * PW + (pd * PH + ph) * PW + pw)];
              }
            }
          }
        }
      }
    }
  }
  return y;
}

void CheckCol2Im(const Col2ImCase& c, DataType d) {
  const size_t n = c.image.size();
  int64_t block_size = 1, positions = 1;
  for (size_t i = 0; i < n; ++i) {
    block_size *= c.block[i];
    positions *= Positions(c.image[i], c.block[i], c.dilations[i], c.strides[i], c.pads[i] + c.pads[n + i]);
  }
  const Shape in_shape = {c.batch, c.channels * block_size, positions};
  const std::string what = "Col2Im " + DtypeName(d) + " image " + Join(c.image) + " block " + Join(c.block) +
                           " dil " + Join(c.dilations) + " str " + Join(c.strides) + " pads " + Join(c.pads);
  std::vector<double> xv = IsFloat(d) ? RandomValues(static_cast<size_t>(Count(in_shape)), -1, 1, 11)
                                      : RandomValues(static_cast<size_t>(Count(in_shape)), -20, 20, 11, true);
  for (double& v : xv) v = Quantize(d, v);
  runtime::Tensor x = TensorOf(d, in_shape, xv);
  runtime::Tensor image = I64({static_cast<int64_t>(n)}, c.image);
  runtime::Tensor block = I64({static_cast<int64_t>(n)}, c.block);
  ir::Node node = MakeNode(
      "Col2Im", {"x", "i", "b"}, {"y"},
      {IntsAttr("dilations", c.dilations), IntsAttr("strides", c.strides), IntsAttr("pads", c.pads)});
  auto out = RunOk(node, 18, {&x, &image, &block});
  ASSERT_EQ(out.size(), 1u) << what;
  Shape want_shape = {c.batch, c.channels};
  want_shape.insert(want_shape.end(), c.image.begin(), c.image.end());
  ASSERT_EQ(out[0].shape(), want_shape) << what;
  std::vector<double> want = n == 2 ? Col2Im2dReference(xv, c) : Col2Im3dReference(xv, c);
  for (double& v : want) v = Quantize(d, v);
  ExpectNear(DoublesOf(out[0]), want, ToleranceFor(d), what);

  ir::TypeInfo xt = ops::TensorType(d, in_shape);
  ir::TypeInfo vt = I64T({D(static_cast<int64_t>(n))});
  ir::Tensor ic = image.AsConstant("i"), bc = block.AsConstant("b");
  auto inferred = InferOk(node, 18, {&xt, &vt, &vt}, {nullptr, &ic, &bc});
  EXPECT_EQ(ShapeOf(inferred[0]), ShapeOf(ops::TensorType(d, want_shape))) << what;
}

TEST(Col2ImKernel, TwoAndThreeDimsAgainstNestedLoops) {
  const std::vector<Col2ImCase> cases = {
      {{5, 5}, {1, 5}, {1, 1}, {1, 1}, {0, 0, 0, 0}, 1, 1},
      {{13, 11}, {3, 2}, {1, 1}, {1, 1}, {0, 0, 0, 0}, 2, 3},
      {{13, 11}, {3, 3}, {2, 1}, {2, 3}, {1, 0, 2, 1}, 1, 2},
      {{127, 3}, {5, 2}, {3, 1}, {4, 1}, {2, 1, 0, 3}, 1, 1},
      {{4, 4}, {4, 4}, {1, 1}, {1, 1}, {0, 0, 0, 0}, 0, 2},  // empty batch
      {{5, 6, 7}, {2, 3, 2}, {1, 2, 1}, {2, 1, 3}, {1, 0, 1, 0, 2, 1}, 2, 2},
      {{3, 13, 4}, {1, 2, 3}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0, 0, 0, 0}, 1, 3},
  };
  for (const Col2ImCase& c : cases) {
    for (DataType d : {DataType::kFloat32, DataType::kFloat64, DataType::kFloat16, DataType::kInt32}) {
      CheckCol2Im(c, d);
    }
  }
}

TEST(Col2ImKernel, DefaultAttributes) {
  // [1, 2*2, 4] folds 2x2 blocks at the 4 positions of a 3x3 image.
  auto x = F32({1, 4, 4}, Iota(16));
  auto image = I64({2}, {3, 3});
  auto block = I64({2}, {2, 2});
  auto out = RunOk(MakeNode("Col2Im", {"x", "i", "b"}, {"y"}), 18, {&x, &image, &block});
  // Rows: k = (0,0): 1..4, (0,1): 5..8, (1,0): 9..12, (1,1): 13..16 over positions (0,0),(0,1),(1,0),(1,1).
  ExpectFloatsEq(Values<float>(out[0]), {1, 2 + 5, 6, 3 + 9, 4 + 7 + 10 + 13, 8 + 14, 11, 12 + 15, 16});
}

TEST(Col2ImKernel, Errors) {
  auto x = F32({1, 4, 4}, Iota(16));
  auto image = I64({2}, {3, 3});
  auto block = I64({2}, {2, 2});
  auto node = [](std::vector<ir::Attribute> attrs = {}) {
    return MakeNode("Col2Im", {"x", "i", "b"}, {"y"}, std::move(attrs));
  };
  auto block3 = I64({2}, {3, 2});
  EXPECT_NE(RunError(node(), 18, {&x, &image, &block3}).find("not a multiple of the block size 6"), std::string::npos);
  auto big_image = I64({2}, {4, 3});
  EXPECT_NE(RunError(node(), 18, {&x, &big_image, &block}).find("input dim 2 is 4 but the image holds 6"),
            std::string::npos);
  auto one = I64({1}, {3});
  EXPECT_NE(RunError(node(), 18, {&x, &image, &one}).find("block_shape has 1 values but image_shape has 2"),
            std::string::npos);
  auto zero_block = I64({2}, {0, 2});
  EXPECT_NE(RunError(node(), 18, {&x, &image, &zero_block}).find("block_shape"), std::string::npos);
  auto huge_block = I64({2}, {5, 2});
  EXPECT_NE(RunError(node(), 18, {&x, &image, &huge_block}).find("a block spans 5"), std::string::npos);
  EXPECT_NE(RunError(node({IntsAttr("strides", {1})}), 18, {&x, &image, &block}).find("strides has 1 values"),
            std::string::npos);
  EXPECT_NE(RunError(node({IntsAttr("strides", {0, 1})}), 18, {&x, &image, &block}).find("strides"),
            std::string::npos);
  EXPECT_NE(RunError(node({IntsAttr("pads", {0, 0, -1, 0})}), 18, {&x, &image, &block}).find("pads"),
            std::string::npos);
  EXPECT_NE(RunError(node({IntsAttr("dilations", {0, 1})}), 18, {&x, &image, &block}).find("dilations"),
            std::string::npos);
  auto flat = F32({4, 4}, Iota(16));
  EXPECT_NE(RunError(node(), 18, {&flat, &image, &block}).find("rank 3"), std::string::npos);
  auto empty = I64({0}, {});
  EXPECT_NE(RunError(node(), 18, {&x, &empty, &empty}).find("at least one spatial dim"), std::string::npos);
  auto strings = MakeTensor<uint8_t>(DataType::kBool, {1, 4, 4}, std::vector<uint8_t>(16, 1));
  auto r = RunKernel(node(), 18, {&strings, &image, &block});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kUnsupported);

  auto xt = F32T({S("N"), D(4), D(4)});
  auto vt = I64T({D(2)});
  auto ic = image.AsConstant("i"), bc = block.AsConstant("b");
  EXPECT_EQ(ShapeOf(InferOk(node(), 18, {&xt, &vt, &vt}, {nullptr, &ic, &bc})[0]), "float32[N,1,3,3]");
  auto unknown = InferOk(node(), 18, {&xt, &vt, &vt});
  ASSERT_EQ(unknown[0].shape.dims.size(), 4u);
  EXPECT_EQ(unknown[0].shape.dims[0].param, "N");
  auto v3 = I64T({D(3)});
  InferError(node(), 18, {&xt, &vt, &v3});
  auto x2 = F32T({D(4), D(4)});
  InferError(node(), 18, {&x2, &vt, &vt});
  auto big = big_image.AsConstant("i");
  InferError(node(), 18, {&xt, &vt, &vt}, {nullptr, &big, &bc});
}

// ---------------------------------------------------------------- AffineGrid

// numpy's arange the ONNX reference uses: -1 + i * 2 / (n - 1) with
// align_corners, else -1 + 1 / n + i * 2 / n.
double GridPoint(int64_t i, int64_t n, bool align) {
  if (align) return n == 1 ? -1.0 : -1.0 + static_cast<double>(i) * 2.0 / static_cast<double>(n - 1);
  return -1.0 + 1.0 / static_cast<double>(n) + static_cast<double>(i) * 2.0 / static_cast<double>(n);
}

TEST(AffineGridKernel, TwoDimsAgainstNestedLoops) {
  const int64_t N = 3;
  for (Shape hw : {Shape{13, 127}, Shape{1, 5}, Shape{4, 1}}) {
    for (bool align : {false, true}) {
      for (DataType d : {DataType::kFloat32, DataType::kFloat64, DataType::kFloat16}) {
        const std::string what = "AffineGrid 2D " + DtypeName(d) + " " + Join(hw) + " align " + std::to_string(align);
        std::vector<double> theta = RandomValues(N * 6, -2, 2, 5);
        for (double& v : theta) v = Quantize(d, v);
        runtime::Tensor t = TensorOf(d, {N, 2, 3}, theta);
        runtime::Tensor size = I64({4}, {N, 3, hw[0], hw[1]});
        ir::Node node = MakeNode("AffineGrid", {"t", "s"}, {"g"}, {IntAttr("align_corners", align)});
        auto out = RunOk(node, 20, {&t, &size});
        ASSERT_EQ(out.size(), 1u) << what;
        ASSERT_EQ(out[0].shape(), (Shape{N, hw[0], hw[1], 2})) << what;
        std::vector<double> want;
        for (int64_t n = 0; n < N; ++n) {
          const double* m = theta.data() + n * 6;
          for (int64_t h = 0; h < hw[0]; ++h) {
            for (int64_t w = 0; w < hw[1]; ++w) {
              const double x = GridPoint(w, hw[1], align), y = GridPoint(h, hw[0], align);
              want.push_back(Quantize(d, m[0] * x + m[1] * y + m[2]));
              want.push_back(Quantize(d, m[3] * x + m[4] * y + m[5]));
            }
          }
        }
        ExpectNear(DoublesOf(out[0]), want, ToleranceFor(d), what);
      }
    }
  }
}

TEST(AffineGridKernel, ThreeDimsAgainstNestedLoops) {
  const int64_t N = 2, Dd = 3, H = 5, W = 13;
  for (bool align : {false, true}) {
    std::vector<double> theta = RandomValues(N * 12, -2, 2, 7);
    for (double& v : theta) v = Quantize(DataType::kFloat32, v);
    runtime::Tensor t = TensorOf(DataType::kFloat32, {N, 3, 4}, theta);
    runtime::Tensor size = I64({5}, {N, 1, Dd, H, W});
    auto out = RunOk(MakeNode("AffineGrid", {"t", "s"}, {"g"}, {IntAttr("align_corners", align)}), 20, {&t, &size});
    ASSERT_EQ(out[0].shape(), (Shape{N, Dd, H, W, 3}));
    std::vector<double> want;
    for (int64_t n = 0; n < N; ++n) {
      const double* m = theta.data() + n * 12;
      for (int64_t z = 0; z < Dd; ++z) {
        for (int64_t h = 0; h < H; ++h) {
          for (int64_t w = 0; w < W; ++w) {
            const double base[4] = {GridPoint(w, W, align), GridPoint(h, H, align), GridPoint(z, Dd, align), 1};
            for (int r = 0; r < 3; ++r) {
              double v = 0;
              for (int j = 0; j < 4; ++j) v += m[r * 4 + j] * base[j];
              want.push_back(v);
            }
          }
        }
      }
    }
    ExpectNear(DoublesOf(out[0]), want, ToleranceFor(DataType::kFloat32), "AffineGrid 3D");
  }
}

TEST(AffineGridKernel, Errors) {
  auto theta = F32({2, 2, 3}, Iota(12));
  auto size = I64({4}, {2, 1, 3, 4});
  auto node = [](std::vector<ir::Attribute> attrs = {}) {
    return MakeNode("AffineGrid", {"t", "s"}, {"g"}, std::move(attrs));
  };
  EXPECT_NE(RunError(node({IntAttr("align_corners", 2)}), 20, {&theta, &size}).find("align_corners is 2"),
            std::string::npos);
  auto size3 = I64({3}, {2, 1, 3});
  EXPECT_NE(RunError(node(), 20, {&theta, &size3}).find("[N, C, H, W]"), std::string::npos);
  auto size5 = I64({5}, {2, 1, 3, 4, 5});
  EXPECT_NE(RunError(node(), 20, {&theta, &size5}).find("needs [N, 3, 4]"), std::string::npos);
  auto other_n = I64({4}, {3, 1, 3, 4});
  EXPECT_NE(RunError(node(), 20, {&theta, &other_n}).find("size[0] (N) is 3"), std::string::npos);
  auto negative = I64({4}, {2, 1, -3, 4});
  EXPECT_NE(RunError(node(), 20, {&theta, &negative}).find("each value must be in"), std::string::npos);
  auto int_theta = I64({2, 2, 3}, std::vector<int64_t>(12, 1));
  auto r = RunKernel(node(), 20, {&int_theta, &size});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kUnsupported);

  auto tt = F32T({S("N"), D(2), D(3)});
  auto st = I64T({D(4)});
  auto sc = I64({4}, {2, 1, 3, 4}).AsConstant("s");
  auto tk = F32T({D(2), D(2), D(3)});
  EXPECT_EQ(ShapeOf(InferOk(node(), 20, {&tk, &st}, {nullptr, &sc})[0]), "float32[2,3,4,2]");
  auto unknown = InferOk(node(), 20, {&tt, &st});
  ASSERT_EQ(unknown[0].shape.dims.size(), 4u);
  EXPECT_EQ(unknown[0].shape.dims[0].param, "N");
  EXPECT_EQ(unknown[0].shape.dims[3].value, 2);
  auto st5 = I64T({D(5)});
  InferError(node(), 20, {&tt, &st5});
  InferError(node({IntAttr("align_corners", -1)}), 20, {&tt, &st});
  auto t34 = F32T({D(2), D(3), D(4)});
  InferError(node(), 20, {&t34, &st}, {nullptr, &sc});
}

}  // namespace
}  // namespace vigil::cpu::testing
