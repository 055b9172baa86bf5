// ai.vigil.MaxPoolNhwc, AveragePoolNhwc and GlobalAveragePoolNhwc on the CPU:
// against the ONNX pools on the same data laid out NCHW (odd channel
// counts, pads, strides, ceil_mode, dilations, count_include_pad, NaN), on
// the reference code and on the optimised float32 paths of MaxPoolNhwc and
// GlobalAveragePoolNhwc (fast/pool2d.cpp), which give the same values bit
// for bit; and their shape inference and errors.
#include <gtest/gtest.h>

#include <limits>

#include "backends/cpu/float_kernel_test_util.h"
#include "backends/cpu/kernel_test_util.h"
#include "ir/layout_nhwc.h"

namespace vigil::cpu {
namespace {

namespace kt = vigil::cpu::testing;
using namespace vigil::cpu::float_testing;  // NOLINT: test helpers
using ir::DataType;

struct PoolCase {
  std::string op;  // the ONNX op
  Shape x;         // NCHW
  std::vector<ir::Attribute> attrs;
  DataType dtype = DataType::kFloat32;
  bool nan = false;  // a NaN in every 7th element
};

// Runs the ONNX pool on NCHW data and its NHWC twin on the same data
// channels-last; expects the same values (moved) and the inferred dims.
void Check(const PoolCase& c) {
  SCOPED_TRACE(::testing::Message() << c.op << " x " << ::testing::PrintToString(c.x) << " "
                                    << ir::DataTypeName(c.dtype));
  std::vector<double> x = RoundTo(c.dtype, Random(Product(c.x), 1, -4, 4));
  if (c.nan) {
    for (size_t i = 3; i < x.size(); i += 7) x[i] = std::numeric_limits<double>::quiet_NaN();
  }
  runtime::Tensor xt = MakeFloat(c.dtype, c.x, x);
  auto want = kt::RunKernel(kt::MakeNode(c.op, {"x"}, {"y"}, c.attrs), c.op == "MaxPool" ? 12 : 19, {&xt},
                            /*optimised=*/false);
  ASSERT_TRUE(want.ok()) << want.status().ToString();
  const runtime::Tensor& y = (*want)[0];
  const Shape x_nhwc = PermuteShape(c.x, ir::kToNhwc);
  runtime::Tensor xn = MakeFloat(c.dtype, x_nhwc, Permute(x, c.x, ir::kToNhwc));
  ir::Node nhwc = kt::MakeNode(c.op + "Nhwc", {"x"}, {"y"}, c.attrs);
  nhwc.domain = ir::kVigilDomain;
  for (bool optimised : {false, true}) {
    SCOPED_TRACE(optimised ? "optimised path" : "reference code");
    auto got = kt::RunKernel(nhwc, 1, {&xn}, optimised);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ((*got)[0].shape(), PermuteShape(y.shape(), ir::kToNhwc));
    ExpectClose(ReadFloat((*got)[0]), Permute(ReadFloat(y), y.shape(), ir::kToNhwc), 0, 0);  // the same values
  }
  auto got = kt::RunKernel(nhwc, 1, {&xn});
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  ir::TypeInfo tx = ops::TensorType(c.dtype, x_nhwc);
  auto inferred = kt::InferNode(nhwc, 1, {&tx});
  ASSERT_TRUE(inferred.ok()) << inferred.status().ToString();
  EXPECT_EQ(DimsOf((*inferred)[0]), DimsOf(ops::TensorType(c.dtype, (*got)[0].shape())));
}

std::vector<ir::Attribute> Window(Shape kernel, Shape strides, Shape pads) {
  return {kt::IntsAttr("kernel_shape", std::move(kernel)), kt::IntsAttr("strides", std::move(strides)),
          kt::IntsAttr("pads", std::move(pads))};
}

TEST(PoolNhwcCpu, MaxPoolMatchesNchw) {
  for (DataType t : {DataType::kFloat32, DataType::kFloat16, DataType::kBfloat16}) {
    Check({"MaxPool", {2, 13, 11, 9}, Window({3, 3}, {2, 2}, {1, 1, 1, 1}), t});  // the ResNet stem's window
    Check({"MaxPool", {1, 64, 8, 8}, Window({2, 2}, {2, 2}, {0, 0, 0, 0}), t});
  }
  auto ceil = Window({3, 3}, {2, 2}, {0, 1, 2, 0});  // asymmetric pads
  ceil.push_back(kt::IntAttr("ceil_mode", 1));
  Check({"MaxPool", {1, 127, 10, 7}, ceil});
  auto dilated = Window({2, 3}, {1, 2}, {1, 0, 0, 1});
  dilated.push_back(kt::IntsAttr("dilations", {2, 1}));
  Check({"MaxPool", {2, 5, 9, 12}, dilated});
}

TEST(PoolNhwcCpu, NaNWinsItsWindowsAsInTheReference) {
  PoolCase c{"MaxPool", {2, 13, 11, 9}, Window({3, 3}, {2, 2}, {1, 1, 1, 1})};
  c.nan = true;
  Check(c);
  c.attrs = Window({3, 3}, {1, 1}, {2, 2, 2, 2});  // wide padding
  Check(c);
  Check({"GlobalAveragePool", {3, 13, 5, 9}, {}, DataType::kFloat32, true});
  Check({"GlobalAveragePool", {1, 127, 1, 1}, {}, DataType::kFloat32});
}

TEST(PoolNhwcCpu, MaxPoolIgnoresStorageOrder) {
  auto attrs = Window({3, 3}, {2, 2}, {1, 1, 1, 1});
  attrs.push_back(kt::IntAttr("storage_order", 1));
  Check({"MaxPool", {1, 4, 7, 7}, attrs});
}

TEST(PoolNhwcCpu, AveragePoolMatchesNchw) {
  for (int64_t include_pad : {0, 1}) {
    auto attrs = Window({3, 3}, {2, 2}, {1, 1, 1, 1});
    attrs.push_back(kt::IntAttr("count_include_pad", include_pad));
    Check({"AveragePool", {2, 13, 11, 9}, attrs, DataType::kFloat16});
    attrs.push_back(kt::IntAttr("ceil_mode", 1));
    Check({"AveragePool", {1, 7, 10, 10}, attrs});
  }
}

TEST(PoolNhwcCpu, GlobalAveragePoolMatchesNchw) {
  Check({"GlobalAveragePool", {2, 2048, 7, 7}, {}, DataType::kFloat16});
  Check({"GlobalAveragePool", {3, 13, 5, 9}, {}});
}

TEST(PoolNhwcCpu, ShapeInferenceAndErrors) {
  ir::Node pool = kt::MakeNode("MaxPoolNhwc", {"x"}, {"y"}, Window({3, 3}, {2, 2}, {1, 1, 1, 1}));
  pool.domain = ir::kVigilDomain;
  ir::TypeInfo stem = Type(DataType::kFloat16, {S("N"), K(112), K(112), K(64)});
  auto out = kt::InferNode(pool, 1, {&stem});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(DimsOf((*out)[0]), "[N,56,56,64]");
  ir::TypeInfo rank3 = Type(DataType::kFloat16, {K(1), K(8), K(8)});
  EXPECT_FALSE(kt::InferNode(pool, 1, {&rank3}).ok());
  ir::Node gap = kt::MakeNode("GlobalAveragePoolNhwc", {"x"}, {"y"});
  gap.domain = ir::kVigilDomain;
  ir::TypeInfo head = Type(DataType::kFloat16, {S("N"), K(7), K(7), K(2048)});
  auto g = kt::InferNode(gap, 1, {&head});
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_EQ(DimsOf((*g)[0]), "[N,1,1,2048]");
  // The kernel refuses a tensor that is not 4-D.
  runtime::Tensor x3 = MakeFloat(DataType::kFloat32, {1, 8, 8}, Random(64, 1));
  EXPECT_FALSE(kt::RunKernel(pool, 1, {&x3}).ok());
}

}  // namespace
}  // namespace vigil::cpu
