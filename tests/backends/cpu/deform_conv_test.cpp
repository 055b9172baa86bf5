// DeformConv against a 2D nested-loop reference with explicit bilinear
// sampling written here, against the Conv kernel when every offset is 0 (1D,
// 2D and 3D), plus its shape inference and error cases.
#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "backends/cpu/float_kernel_test_util.h"
#include "backends/cpu/kernel_test_util.h"

namespace vigil::cpu {
namespace {

namespace kt = vigil::cpu::testing;
using namespace vigil::cpu::float_testing;  // NOLINT: test helpers
using ir::DataType;

struct DeformCase {
  Shape x;  // N, C, H, W
  int64_t out_channels;
  Shape kernel;
  Shape strides = {1, 1};
  Shape dilations = {1, 1};
  Shape pads = {0, 0, 0, 0};
  int64_t group = 1;
  int64_t offset_group = 1;
  bool bias = false;
  bool mask = false;
};

int64_t OutSize(int64_t in, int64_t k, int64_t s, int64_t d, int64_t pad_sum) {
  return (in + pad_sum - (k - 1) * d - 1) / s + 1;
}

// X[n, c] at (h, w): bilinear between the four pixels around it, each outside
// the image counting as 0.
double Bilinear(const std::vector<double>& x, const Shape& xs, int64_t n, int64_t c, double h, double w) {
  const int64_t H = xs[2], W = xs[3];
  const double h0 = std::floor(h), w0 = std::floor(w);
  double sum = 0;
  for (int dh = 0; dh < 2; ++dh) {
    for (int dw = 0; dw < 2; ++dw) {
      const int64_t ph = static_cast<int64_t>(h0) + dh, pw = static_cast<int64_t>(w0) + dw;
      if (ph < 0 || ph >= H || pw < 0 || pw >= W) continue;
      const double weight = (dh ? h - h0 : 1 - (h - h0)) * (dw ? w - w0 : 1 - (w - w0));
      sum += weight * x[static_cast<size_t>(((n * xs[1] + c) * H + ph) * W + pw)];
    }
  }
  return sum;
}

void CheckDeformConv(const DeformCase& c, DataType dt = DataType::kFloat32) {
  const int64_t N = c.x[0], C = c.x[1], H = c.x[2], W = c.x[3], M = c.out_channels;
  const int64_t KH = c.kernel[0], KW = c.kernel[1];
  const int64_t OH = OutSize(H, KH, c.strides[0], c.dilations[0], c.pads[0] + c.pads[2]);
  const int64_t OW = OutSize(W, KW, c.strides[1], c.dilations[1], c.pads[1] + c.pads[3]);
  const int64_t G = c.offset_group, Cg = C / c.group, Mg = M / c.group;
  const Shape ws = {M, Cg, KH, KW}, os = {N, G * KH * KW * 2, OH, OW}, ms = {N, G * KH * KW, OH, OW};
  auto x = RoundTo(dt, Random(Product(c.x), 1));
  auto w = RoundTo(dt, Random(Product(ws), 2));
  // Offsets of up to +-2.5 pixels: many samples fall between pixels, some off the image.
  auto off = RoundTo(dt, Random(Product(os), 3, -2.5, 2.5));
  auto b = RoundTo(dt, Random(static_cast<size_t>(M), 4));
  auto m = RoundTo(dt, Random(Product(ms), 5, 0, 1));
  std::vector<double> want(static_cast<size_t>(N * M * OH * OW));
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t oc = 0; oc < M; ++oc) {
      for (int64_t oh = 0; oh < OH; ++oh) {
        for (int64_t ow = 0; ow < OW; ++ow) {
          double acc = c.bias ? b[static_cast<size_t>(oc)] : 0;
          for (int64_t ci = 0; ci < Cg; ++ci) {
            const int64_t ch = (oc / Mg) * Cg + ci, g = ch / (C / G);
            for (int64_t kh = 0; kh < KH; ++kh) {
              for (int64_t kw = 0; kw < KW; ++kw) {
                const int64_t tap = (g * KH + kh) * KW + kw;
                auto offset_at = [&](int64_t dim) {
                  return off[static_cast<size_t>(((n * G * KH * KW * 2 + tap * 2 + dim) * OH + oh) * OW + ow)];
                };
                const int64_t h0 = oh * c.strides[0] - c.pads[0] + kh * c.dilations[0];
                const int64_t w0 = ow * c.strides[1] - c.pads[1] + kw * c.dilations[1];
                const double h = static_cast<double>(h0) + offset_at(0);
                const double wp = static_cast<double>(w0) + offset_at(1);
                double v = Bilinear(x, c.x, n, ch, h, wp);
                if (c.mask) v *= m[static_cast<size_t>(((n * G * KH * KW + tap) * OH + oh) * OW + ow)];
                acc += v * w[static_cast<size_t>(((oc * Cg + ci) * KH + kh) * KW + kw)];
              }
            }
          }
          want[static_cast<size_t>(((n * M + oc) * OH + oh) * OW + ow)] = acc;
        }
      }
    }
  }
  auto xt = MakeFloat(dt, c.x, x), wt = MakeFloat(dt, ws, w), ot = MakeFloat(dt, os, off);
  auto bt = MakeFloat(dt, {M}, b), mt = MakeFloat(dt, ms, m);
  std::vector<std::string> inputs = {"x", "w", "o"};
  std::vector<const runtime::Tensor*> values = {&xt, &wt, &ot};
  if (c.bias || c.mask) {
    inputs.push_back(c.bias ? "b" : "");
    values.push_back(c.bias ? &bt : nullptr);
  }
  if (c.mask) {
    inputs.push_back("m");
    values.push_back(&mt);
  }
  ir::Node node = kt::MakeNode("DeformConv", inputs, {"y"},
                               {kt::IntsAttr("strides", c.strides), kt::IntsAttr("dilations", c.dilations),
                                kt::IntsAttr("pads", c.pads), kt::IntAttr("group", c.group),
                                kt::IntAttr("offset_group", c.offset_group)});
  auto r = kt::RunKernel(node, 22, values);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->at(0).shape(), (Shape{N, M, OH, OW}));
  const double tol = dt == DataType::kFloat32 ? 1e-5 : Tolerance(dt) * 4;
  ExpectClose(ReadFloat(r->at(0)), RoundTo(dt, want), tol, tol);

  std::vector<ir::TypeInfo> types;
  for (const runtime::Tensor* v : values) types.push_back(v ? Type(dt, {}) : ir::TypeInfo{});
  std::vector<const ir::TypeInfo*> type_ptrs;
  for (size_t i = 0; i < values.size(); ++i) {
    if (values[i]) types[i] = ops::TensorType(dt, values[i]->shape());
    type_ptrs.push_back(values[i] ? &types[i] : nullptr);
  }
  auto inferred = kt::InferNode(node, 22, type_ptrs);
  ASSERT_TRUE(inferred.ok()) << inferred.status().ToString();
  EXPECT_EQ(DimsOf(inferred->at(0)), ir::ShapeToString(ops::TensorType(dt, Shape{N, M, OH, OW}).shape));
}

TEST(DeformConv, Basic3x3) { CheckDeformConv({.x = {1, 1, 7, 13}, .out_channels = 1, .kernel = {3, 3}}); }
TEST(DeformConv, PaddedStridedDilatedWithBiasAndMask) {
  CheckDeformConv({.x = {2, 3, 13, 11}, .out_channels = 4, .kernel = {3, 2}, .strides = {2, 1}, .dilations = {1, 2},
                   .pads = {1, 0, 2, 1}, .bias = true, .mask = true});
}
TEST(DeformConv, GroupsAndOffsetGroups) {
  CheckDeformConv({.x = {1, 4, 9, 8}, .out_channels = 6, .kernel = {2, 2}, .group = 2, .offset_group = 4,
                   .mask = true});
  CheckDeformConv({.x = {2, 6, 5, 13}, .out_channels = 3, .kernel = {3, 3}, .pads = {1, 1, 1, 1}, .group = 3,
                   .offset_group = 2, .bias = true});
}
TEST(DeformConv, OtherDtypes) {
  for (DataType dt : {DataType::kFloat64, DataType::kFloat16, DataType::kBfloat16}) {
    CheckDeformConv({.x = {1, 2, 6, 7}, .out_channels = 2, .kernel = {2, 3}, .pads = {1, 1, 0, 0}, .bias = true,
                     .mask = true},
                    dt);
  }
}

// With every offset 0 (and no mask), DeformConv is Conv: 1D, 2D and 3D.
TEST(DeformConv, ZeroOffsetsGiveConv) {
  struct Case {
    Shape x, w, strides, pads, dilations;
    int64_t group;
  } cases[] = {
      {{2, 3, 13}, {4, 3, 3}, {2}, {1, 2}, {1}, 1},
      {{1, 4, 7, 9}, {6, 2, 3, 2}, {1, 2}, {1, 0, 1, 1}, {2, 1}, 2},
      {{1, 2, 4, 5, 6}, {3, 2, 2, 3, 2}, {1, 1, 2}, {0, 1, 0, 1, 0, 1}, {1, 1, 1}, 1},
  };
  for (const Case& c : cases) {
    auto xt = MakeFloat(DataType::kFloat32, c.x, RoundTo(DataType::kFloat32, Random(Product(c.x), 7)));
    auto wt = MakeFloat(DataType::kFloat32, c.w, RoundTo(DataType::kFloat32, Random(Product(c.w), 8)));
    std::vector<ir::Attribute> attrs = {kt::IntsAttr("strides", c.strides), kt::IntsAttr("pads", c.pads),
                                        kt::IntsAttr("dilations", c.dilations), kt::IntAttr("group", c.group)};
    auto conv = kt::RunKernel(kt::MakeNode("Conv", {"x", "w"}, {"y"}, attrs), 11, {&xt, &wt});
    ASSERT_TRUE(conv.ok()) << conv.status().ToString();
    const Shape& out = conv->at(0).shape();
    int64_t taps = 1;
    for (size_t i = 2; i < c.w.size(); ++i) taps *= c.w[i];
    Shape os = {c.x[0], taps * static_cast<int64_t>(c.x.size() - 2)};
    os.insert(os.end(), out.begin() + 2, out.end());
    auto ot = MakeFloat(DataType::kFloat32, os, std::vector<double>(static_cast<size_t>(Product(os)), 0.0));
    auto deform = kt::RunKernel(kt::MakeNode("DeformConv", {"x", "w", "o"}, {"y"}, attrs), 19, {&xt, &wt, &ot});
    ASSERT_TRUE(deform.ok()) << deform.status().ToString();
    ASSERT_EQ(deform->at(0).shape(), out);
    ExpectClose(ReadFloat(deform->at(0)), ReadFloat(conv->at(0)), 1e-5, 1e-5);
  }
}

// An integer offset moves the tap by whole pixels: a 1x1 kernel with offset
// (+1, -1) everywhere reads X shifted, zero where it leaves the image.
TEST(DeformConv, IntegerOffsetShifts) {
  auto x = kt::F32({1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  auto w = kt::F32({1, 1, 1, 1}, {1});
  std::vector<float> offsets(18);
  for (size_t i = 0; i < 9; ++i) {
    offsets[i] = 1;       // dh
    offsets[9 + i] = -1;  // dw
  }
  auto o = kt::F32({1, 2, 3, 3}, offsets);
  auto r = kt::RunKernel(kt::MakeNode("DeformConv", {"x", "w", "o"}, {"y"}), 19, {&x, &w, &o});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(kt::Values<float>(r->at(0)), (std::vector<float>{0, 4, 5, 0, 7, 8, 0, 0, 0}));
}

TEST(DeformConv, Errors) {
  auto x = kt::F32({1, 2, 4, 4}, std::vector<float>(32, 1));
  auto w = kt::F32({2, 2, 3, 3}, std::vector<float>(36, 1));
  auto o = kt::F32({1, 18, 2, 2}, std::vector<float>(72, 0));
  auto run = [&](const ir::Node& node, std::vector<const runtime::Tensor*> in) {
    auto r = kt::RunKernel(node, 22, in);
    EXPECT_FALSE(r.ok());
    EXPECT_NE(r.status().summary().find("node DeformConv"), std::string::npos) << r.status().ToString();
    return r.ok() ? std::string() : r.status().summary();
  };
  auto node = [](std::vector<std::string> in, std::vector<ir::Attribute> attrs = {}) {
    return kt::MakeNode("DeformConv", std::move(in), {"y"}, std::move(attrs));
  };
  auto o_bad = kt::F32({1, 16, 2, 2}, std::vector<float>(64, 0));
  EXPECT_NE(run(node({"x", "w", "o"}), {&x, &w, &o_bad}).find("input 2 (offset)"), std::string::npos);
  auto o_wrong_spatial = kt::F32({1, 18, 3, 2}, std::vector<float>(108, 0));
  EXPECT_NE(run(node({"x", "w", "o"}), {&x, &w, &o_wrong_spatial}).find("expected [1,18,2,2]"), std::string::npos);
  auto mask = kt::F32({1, 18, 2, 2}, std::vector<float>(72, 1));
  EXPECT_NE(run(node({"x", "w", "o", "", "m"}), {&x, &w, &o, nullptr, &mask}).find("input 4 (mask)"),
            std::string::npos);
  auto bias = kt::F32({3}, {0, 0, 0});
  EXPECT_NE(run(node({"x", "w", "o", "b"}), {&x, &w, &o, &bias}).find("input 3 (B)"), std::string::npos);
  EXPECT_NE(run(node({"x", "w", "o"}, {kt::IntAttr("group", 2)}), {&x, &w, &o}).find("group 2"), std::string::npos);
  EXPECT_NE(run(node({"x", "w", "o"}, {kt::IntAttr("offset_group", 3)}), {&x, &w, &o}).find("offset_group 3"),
            std::string::npos);
  EXPECT_NE(run(node({"x", "w", "o"}, {kt::IntAttr("offset_group", 0)}), {&x, &w, &o}).find("offset_group"),
            std::string::npos);
  auto w_big = kt::F32({2, 2, 5, 5}, std::vector<float>(100, 1));
  auto o_big = kt::F32({1, 50, 1, 1}, std::vector<float>(50, 0));
  run(node({"x", "w", "o"}), {&x, &w_big, &o_big});  // the kernel does not fit the image
  auto o64 = kt::MakeTensor(DataType::kFloat64, {1, 18, 2, 2}, std::vector<double>(72, 0));
  EXPECT_NE(run(node({"x", "w", "o"}), {&x, &w, &o64}).find("dtypes must match"), std::string::npos);
  auto xi = kt::MakeTensor(DataType::kInt32, {1, 2, 4, 4}, std::vector<int32_t>(32, 1));
  auto wi = kt::MakeTensor(DataType::kInt32, {2, 2, 3, 3}, std::vector<int32_t>(36, 1));
  auto oi = kt::MakeTensor(DataType::kInt32, {1, 18, 2, 2}, std::vector<int32_t>(72, 0));
  auto u = kt::RunKernel(node({"x", "w", "o"}), 22, {&xi, &wi, &oi});
  ASSERT_FALSE(u.ok());
  EXPECT_EQ(u.status().code(), ErrorCode::kUnsupported);

  // Shape inference.
  ir::TypeInfo xt = Type(DataType::kFloat32, {S("N"), K(2), K(4), K(4)});
  ir::TypeInfo wt = Type(DataType::kFloat32, {K(2), K(2), K(3), K(3)});
  ir::TypeInfo ot = Type(DataType::kFloat32, {S("N"), K(18), K(2), K(2)});
  auto ok = kt::InferNode(node({"x", "w", "o"}), 22, {&xt, &wt, &ot});
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(DimsOf(ok->at(0)), "[N,2,2,2]");
  ir::TypeInfo xs = Type(DataType::kFloat32, {S("N"), K(2), S("H"), S("W")});
  ir::TypeInfo os = Type(DataType::kFloat32, {S("N"), K(18), S("OH"), S("OW")});
  ok = kt::InferNode(node({"x", "w", "o"}), 22, {&xs, &wt, &os});
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(DimsOf(ok->at(0)), "[N,2,OH,OW]");
  ir::TypeInfo ot_bad = Type(DataType::kFloat32, {S("N"), K(16), K(2), K(2)});
  EXPECT_FALSE(kt::InferNode(node({"x", "w", "o"}), 22, {&xt, &wt, &ot_bad}).ok());
  ir::TypeInfo ot_spatial = Type(DataType::kFloat32, {S("N"), K(18), K(3), K(2)});
  EXPECT_FALSE(kt::InferNode(node({"x", "w", "o"}), 22, {&xt, &wt, &ot_spatial}).ok());
  ir::TypeInfo mt = Type(DataType::kFloat32, {S("N"), K(18), K(2), K(2)});
  EXPECT_FALSE(kt::InferNode(node({"x", "w", "o", "", "m"}), 22, {&xt, &wt, &ot, nullptr, &mt}).ok());
  ir::TypeInfo bt = Type(DataType::kFloat32, {K(3)});
  EXPECT_FALSE(kt::InferNode(node({"x", "w", "o", "b"}), 22, {&xt, &wt, &ot, &bt}).ok());
  EXPECT_FALSE(kt::InferNode(node({"x", "w", "o"}, {kt::IntAttr("offset_group", 3)}), 22, {&xt, &wt, &ot}).ok());
  ir::TypeInfo x16 = Type(DataType::kFloat16, {S("N"), K(2), K(4), K(4)});
  EXPECT_FALSE(kt::InferNode(node({"x", "w", "o"}), 22, {&x16, &wt, &ot}).ok());
  EXPECT_FALSE(kt::InferNode(node({"x", "w", "o"}), 18, {&xt, &wt, &ot}).ok());  // no schema before 19
}

}  // namespace
}  // namespace vigil::cpu
