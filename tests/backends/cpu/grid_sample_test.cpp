// GridSample against a plain reference written here: every mode, padding
// mode and align_corners, in 1, 2 and 3 spatial dims, with grids reaching
// past the image; plus shape inference and the errors on bad input.
#include <cmath>
#include <string>

#include <gtest/gtest.h>

#include "backends/cpu/float_kernel_test_util.h"
#include "backends/cpu/kernel_test_util.h"

namespace vigil::cpu {
namespace {

namespace kt = vigil::cpu::testing;
using namespace vigil::cpu::float_testing;  // NOLINT: test helpers
using ir::DataType;

struct GridCase {
  Shape x;     // N, C, D1, ..., Dr
  Shape out;   // D1_out, ..., Dr_out
  std::string mode = "linear";
  std::string padding = "zeros";
  bool align_corners = false;
  int64_t opset = 20;
  DataType dtype = DataType::kFloat32;
  DataType grid_dtype = DataType::kFloat32;
  double reach = 1.4;  // grid values in [-reach, reach]
};

// Folds x back into [lo, hi] one reflection at a time.
double Fold(double x, double lo, double hi) {
  if (hi <= lo) return lo;
  while (x < lo || x > hi) x = x < lo ? 2 * lo - x : 2 * hi - x;
  return x;
}

struct Ref {
  const GridCase& c;
  size_t r;

  double lo(size_t d) const { return c.align_corners ? 0 : -0.5; }
  double hi(size_t d) const { return c.align_corners ? c.x[d + 2] - 1.0 : c.x[d + 2] - 0.5; }

  // The element at integer pixel position idx, through the padding mode.
  double Pixel(const double* image, std::vector<int64_t> idx) const {
    int64_t offset = 0;
    for (size_t d = 0; d < r; ++d) {
      int64_t size = c.x[d + 2];
      if (idx[d] < 0 || idx[d] >= size) {
        if (c.padding == "zeros") return 0;
        if (c.padding == "border") idx[d] = std::min(std::max<int64_t>(idx[d], 0), size - 1);
        if (c.padding == "reflection") idx[d] = static_cast<int64_t>(Fold(static_cast<double>(idx[d]), lo(d), hi(d)));
      }
      offset = offset * size + idx[d];
    }
    return image[offset];
  }

  // Keys' cubic kernel, a = -0.75.
  static double Cubic(double s) {
    const double a = -0.75;
    s = std::abs(s);
    if (s <= 1) return (a + 2) * s * s * s - (a + 3) * s * s + 1;
    if (s < 2) return a * s * s * s - 5 * a * s * s + 8 * a * s - 4 * a;
    return 0;
  }

  // The value at normalized position g (innermost axis first, as in grid).
  double Sample(const double* image, const double* g) const {
    // Pixel coordinates are float, or double for a double grid.
    const bool in_double = c.grid_dtype == DataType::kFloat64;
    auto stored = [&](double v) { return in_double ? v : static_cast<double>(static_cast<float>(v)); };
    std::vector<double> p(r);
    for (size_t d = 0; d < r; ++d) {
      double size = static_cast<double>(c.x[d + 2]);
      if (in_double) {
        double n = g[r - 1 - d];
        p[d] = c.align_corners ? (n + 1) / 2 * (size - 1) : ((n + 1) * size - 1) / 2;
      } else {
        float n = static_cast<float>(g[r - 1 - d]), s = static_cast<float>(size);
        p[d] = c.align_corners ? (n + 1) / 2 * (s - 1) : ((n + 1) * s - 1) / 2;
      }
      if (c.mode == "nearest") p[d] = std::nearbyint(p[d]);
      if (p[d] < lo(d) || p[d] > hi(d)) {
        if (c.padding == "border") p[d] = std::min(std::max(p[d], 0.0), size - 1);
        if (c.padding == "reflection") p[d] = stored(Fold(p[d], lo(d), hi(d)));
      }
    }
    if (c.mode == "nearest") {
      std::vector<int64_t> idx(r);
      for (size_t d = 0; d < r; ++d) idx[d] = static_cast<int64_t>(p[d]);
      return Pixel(image, idx);
    }
    const int64_t taps = c.mode == "cubic" ? 4 : 2, first = c.mode == "cubic" ? -1 : 0;
    double sum = 0;
    for (int64_t k = 0; k < static_cast<int64_t>(std::pow(taps, r)); ++k) {
      std::vector<int64_t> idx(r);
      double w = 1;
      int64_t rest = k;
      for (size_t d = r; d-- > 0;) {
        int64_t t = rest % taps + first;
        rest /= taps;
        double base = std::floor(p[d]);
        idx[d] = static_cast<int64_t>(base) + t;
        double s = p[d] - idx[d];
        w *= c.mode == "cubic" ? Cubic(s) : 1 - std::abs(s);
      }
      sum += w * Pixel(image, idx);
    }
    return sum;
  }
};

std::string ModeName(const GridCase& c) {
  if (c.opset >= 20 || c.mode == "nearest") return c.mode;
  return "bi" + c.mode;  // bilinear, bicubic
}

ir::Node GridNode(const GridCase& c) {
  return kt::MakeNode("GridSample", {"x", "grid"}, {"y"},
                      {kt::StringAttr("mode", ModeName(c)), kt::StringAttr("padding_mode", c.padding),
                       kt::IntAttr("align_corners", c.align_corners)});
}

void CheckGridSample(const GridCase& c, uint32_t seed = 9) {
  const size_t r = c.x.size() - 2;
  std::vector<double> x = RoundTo(c.dtype, Random(Product(c.x), seed));
  Shape grid_shape = Concat(Concat({c.x[0]}, c.out), {static_cast<int64_t>(r)});
  std::vector<double> grid = RoundTo(c.grid_dtype, Random(Product(grid_shape), seed + 1, -c.reach, c.reach));
  runtime::Tensor xt = MakeFloat(c.dtype, c.x, x);
  runtime::Tensor gt = MakeFloat(c.grid_dtype, grid_shape, grid);
  ir::Node node = GridNode(c);
  auto res = kt::RunKernel(node, c.opset, {&xt, &gt});
  ASSERT_TRUE(res.ok()) << res.status().ToString();
  Shape y_shape = Concat({c.x[0], c.x[1]}, c.out);
  ASSERT_EQ(res->at(0).shape(), y_shape);

  Ref ref{c, r};
  const int64_t image = Product(Shape(c.x.begin() + 2, c.x.end())), positions = Product(c.out);
  std::vector<double> want;
  for (int64_t n = 0; n < c.x[0]; ++n) {
    for (int64_t ch = 0; ch < c.x[1]; ++ch) {
      for (int64_t p = 0; p < positions; ++p) {
        want.push_back(ref.Sample(&x[(n * c.x[1] + ch) * image], &grid[(n * positions + p) * r]));
      }
    }
  }
  ExpectClose(ReadFloat(res->at(0)), want, Tolerance(c.dtype), Tolerance(c.dtype));

  ir::TypeInfo xtype = ops::TensorType(c.dtype, c.x);
  ir::TypeInfo gtype = ops::TensorType(c.grid_dtype, grid_shape);
  auto inferred = kt::InferNode(node, c.opset, {&xtype, &gtype});
  ASSERT_TRUE(inferred.ok()) << inferred.status().ToString();
  EXPECT_EQ(DimsOf(inferred->at(0)), ir::ShapeToString(ops::TensorType(c.dtype, y_shape).shape));
}

class GridSampleModes : public ::testing::TestWithParam<std::tuple<std::string, std::string, bool>> {};

TEST_P(GridSampleModes, TwoD) {
  auto [mode, padding, align] = GetParam();
  CheckGridSample({.x = {2, 13, 5, 7}, .out = {4, 6}, .mode = mode, .padding = padding, .align_corners = align});
  // The same at opset 16, where the modes are bilinear and bicubic.
  CheckGridSample({.x = {1, 3, 6, 4}, .out = {5, 3}, .mode = mode, .padding = padding, .align_corners = align,
                   .opset = 16});
}

TEST_P(GridSampleModes, OneAndThreeD) {
  auto [mode, padding, align] = GetParam();
  CheckGridSample({.x = {2, 3, 9}, .out = {11}, .mode = mode, .padding = padding, .align_corners = align});
  CheckGridSample({.x = {1, 3, 4, 3, 5}, .out = {2, 3, 4}, .mode = mode, .padding = padding, .align_corners = align});
}

TEST_P(GridSampleModes, FarOutsideTheImage) {
  auto [mode, padding, align] = GetParam();
  CheckGridSample({.x = {1, 2, 4, 5}, .out = {7, 7}, .mode = mode, .padding = padding, .align_corners = align,
                   .reach = 4.5});
}

INSTANTIATE_TEST_SUITE_P(All, GridSampleModes,
                         ::testing::Combine(::testing::Values("nearest", "linear", "cubic"),
                                            ::testing::Values("zeros", "border", "reflection"),
                                            ::testing::Bool()));

TEST(GridSample, OtherFloatTypes) {
  CheckGridSample({.x = {1, 3, 5, 6}, .out = {4, 4}, .dtype = DataType::kFloat64, .grid_dtype = DataType::kFloat64});
  CheckGridSample({.x = {1, 3, 5, 6}, .out = {4, 4}, .mode = "cubic", .dtype = DataType::kFloat16,
                   .grid_dtype = DataType::kFloat16});
  CheckGridSample({.x = {1, 3, 5, 6}, .out = {4, 4}, .padding = "border", .dtype = DataType::kBfloat16,
                   .grid_dtype = DataType::kFloat32});
}

TEST(GridSample, SingletonAxesAndEmptyOutput) {
  // A one-pixel axis with align_corners: the reflection range is a point.
  for (std::string padding : {"zeros", "border", "reflection"}) {
    CheckGridSample({.x = {1, 2, 1, 4}, .out = {3, 3}, .mode = "cubic", .padding = padding, .align_corners = true});
  }
  CheckGridSample({.x = {2, 3, 4, 4}, .out = {0, 5}});
}

TEST(GridSample, NearestRoundsHalfToEven) {
  // Width 5 with align_corners: x = (n + 1) * 2, so n = -0.75, 0.25 and
  // -0.25 fall on 0.5, 2.5 and 1.5, which round to 0, 2 and 2.
  GridCase c{.x = {1, 1, 1, 5}, .out = {1, 3}, .mode = "nearest", .align_corners = true};
  runtime::Tensor x = kt::F32(c.x, {10, 11, 12, 13, 14});
  runtime::Tensor grid = kt::F32({1, 1, 3, 2}, {-0.75f, 0, 0.25f, 0, -0.25f, 0});
  auto r = kt::RunKernel(GridNode(c), 20, {&x, &grid});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(kt::Values<float>(r->at(0)), (std::vector<float>{10, 12, 12}));
}

TEST(GridSample, BadInputsAreErrors) {
  GridCase c{.x = {1, 2, 3, 4}, .out = {2, 2}};
  runtime::Tensor x = kt::F32(c.x, std::vector<float>(24, 1));
  auto fails = [&](const ir::Node& node, int64_t opset, const runtime::Tensor& xt, const runtime::Tensor& grid,
                   const std::string& text) {
    auto r = kt::RunKernel(node, opset, {&xt, &grid});
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_NE(r.status().ToString().find(text), std::string::npos) << r.status().ToString();
    EXPECT_NE(r.status().ToString().find("GridSample"), std::string::npos) << r.status().ToString();
  };
  ir::Node node = GridNode(c);
  fails(node, 20, x, kt::F32({1, 2, 2, 3}, std::vector<float>(12, 0)), "(grid)");
  fails(node, 20, x, kt::F32({2, 2, 2, 2}, std::vector<float>(16, 0)), "(grid)");
  fails(node, 20, x, kt::F32({1, 4, 2}, std::vector<float>(8, 0)), "(grid)");
  fails(node, 20, kt::F32({2, 3}, std::vector<float>(6, 0)), kt::F32({2, 3}, std::vector<float>(6, 0)), "(X)");
  runtime::Tensor x3 = kt::F32({1, 1, 2, 2, 2}, std::vector<float>(8, 0));
  GridCase old = c;
  old.opset = 16;
  fails(GridNode(old), 16, x3, kt::F32({1, 1, 1, 1, 3}, {0, 0, 0}), "rank 4");
  GridCase linear_at_16 = c;  // opset 16 spells it bilinear
  fails(GridNode(linear_at_16), 16, x, kt::F32({1, 2, 2, 2}, std::vector<float>(8, 0)), "mode is 'linear'");
  GridCase bicubic_at_20 = c;
  bicubic_at_20.mode = "cubic";
  bicubic_at_20.opset = 16;
  fails(GridNode(bicubic_at_20), 20, x, kt::F32({1, 2, 2, 2}, std::vector<float>(8, 0)), "mode is 'bicubic'");
  GridCase bad_padding = c;
  bad_padding.padding = "wrap";
  fails(GridNode(bad_padding), 20, x, kt::F32({1, 2, 2, 2}, std::vector<float>(8, 0)), "padding_mode is 'wrap'");
  ir::Node bad_align = kt::MakeNode("GridSample", {"x", "grid"}, {"y"}, {kt::IntAttr("align_corners", 2)});
  fails(bad_align, 20, x, kt::F32({1, 2, 2, 2}, std::vector<float>(8, 0)), "align_corners is 2");
  runtime::Tensor int_x = kt::I64({1, 1, 1, 1}, {3});
  runtime::Tensor one = kt::F32({1, 1, 1, 2}, {0, 0});
  auto r = kt::RunKernel(node, 20, {&int_x, &one});
  EXPECT_FALSE(r.ok());

  ir::TypeInfo xtype = ops::TensorType(DataType::kFloat32, c.x);
  for (Shape g : {Shape{1, 2, 2, 3}, Shape{2, 2, 2, 2}, Shape{1, 2, 2}}) {
    ir::TypeInfo gtype = ops::TensorType(DataType::kFloat32, g);
    EXPECT_FALSE(kt::InferNode(node, 20, {&xtype, &gtype}).ok()) << ir::ShapeToString(gtype.shape);
  }
  ir::TypeInfo x5 = ops::TensorType(DataType::kFloat32, Shape{1, 1, 2, 2, 2});
  ir::TypeInfo g5 = ops::TensorType(DataType::kFloat32, Shape{1, 1, 1, 1, 3});
  EXPECT_FALSE(kt::InferNode(GridNode(old), 16, {&x5, &g5}).ok());
  EXPECT_TRUE(kt::InferNode(node, 20, {&x5, &g5}).ok());
  EXPECT_FALSE(kt::InferNode(GridNode(bad_padding), 20, {&x5, &g5}).ok());
}

}  // namespace
}  // namespace vigil::cpu
