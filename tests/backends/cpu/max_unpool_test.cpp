// MaxUnpool: MaxPool's values and indices scattered back, against a plain
// scatter written here, with and without output_shape; shape inference and
// the errors on bad input.
#include <string>

#include <gtest/gtest.h>

#include "backends/cpu/float_kernel_test_util.h"
#include "backends/cpu/kernel_test_util.h"

namespace vigil::cpu {
namespace {

namespace kt = vigil::cpu::testing;
using namespace vigil::cpu::float_testing;  // NOLINT: test helpers
using ir::DataType;

struct UnpoolCase {
  // MaxPool's input, whose shape MaxUnpool gives back: the windows must end
  // on its last element along every dim.
  Shape x;
  Shape kernel;
  Shape strides;
  Shape pads = {};
  Shape output_shape = {};  // empty: input omitted
  DataType dtype = DataType::kFloat32;
  int64_t opset = 11;
};

std::vector<ir::Attribute> WindowAttrs(const UnpoolCase& c) {
  std::vector<ir::Attribute> attrs{kt::IntsAttr("kernel_shape", c.kernel), kt::IntsAttr("strides", c.strides)};
  if (!c.pads.empty()) attrs.push_back(kt::IntsAttr("pads", c.pads));
  return attrs;
}

ir::Node UnpoolNode(const UnpoolCase& c) {
  std::vector<std::string> inputs{"x", "i"};
  if (!c.output_shape.empty()) inputs.push_back("shape");
  return kt::MakeNode("MaxUnpool", inputs, {"y"}, WindowAttrs(c));
}

void CheckUnpool(const UnpoolCase& c, uint32_t seed = 4) {
  // Pool first, for realistic indices.
  std::vector<double> input = RoundTo(c.dtype, Random(Product(c.x), seed));
  runtime::Tensor xt = MakeFloat(c.dtype, c.x, input);
  auto pooled = kt::RunKernel(kt::MakeNode("MaxPool", {"x"}, {"y", "i"}, WindowAttrs(c)), 12, {&xt});
  ASSERT_TRUE(pooled.ok()) << pooled.status().ToString();
  const runtime::Tensor& values = pooled->at(0);
  const runtime::Tensor& indices = pooled->at(1);
  runtime::Tensor shape = kt::I64({static_cast<int64_t>(c.output_shape.size())}, c.output_shape);
  ir::Node node = UnpoolNode(c);
  auto r = kt::RunKernel(node, c.opset, {&values, &indices, c.output_shape.empty() ? nullptr : &shape});
  ASSERT_TRUE(r.ok()) << r.status().ToString();

  // Plain scatter into the unpooled shape, then placed at the start of
  // output_shape.
  Shape out_shape = c.output_shape.empty() ? c.x : c.output_shape;
  std::vector<double> unpooled(Product(c.x), 0), want(Product(out_shape), 0);
  std::vector<double> v = ReadFloat(values);
  std::vector<int64_t> idx = kt::Values<int64_t>(indices);
  for (size_t i = 0; i < idx.size(); ++i) unpooled[idx[i]] = v[i];
  for (int64_t i = 0; i < Product(c.x); ++i) {
    Shape at = Unravel(i, c.x);
    int64_t o = 0;
    for (size_t d = 0; d < at.size(); ++d) o = o * out_shape[d] + at[d];
    want[o] = unpooled[i];
  }
  ASSERT_EQ(r->at(0).shape(), out_shape);
  ExpectClose(ReadFloat(r->at(0)), want, 0, 0);

  ir::TypeInfo vtype = ops::TensorType(c.dtype, values.shape());
  ir::TypeInfo itype = ops::TensorType(DataType::kInt64, indices.shape());
  ir::TypeInfo stype = ops::TensorType(DataType::kInt64, shape.shape());
  ir::Tensor shape_value = shape.AsConstant("shape");
  auto inferred = c.output_shape.empty() ? kt::InferNode(node, c.opset, {&vtype, &itype})
                                         : kt::InferNode(node, c.opset, {&vtype, &itype, &stype},
                                                         {nullptr, nullptr, &shape_value});
  ASSERT_TRUE(inferred.ok()) << inferred.status().ToString();
  EXPECT_EQ(DimsOf(inferred->at(0)), ir::ShapeToString(ops::TensorType(c.dtype, out_shape).shape));
}

TEST(MaxUnpool, InvertsMaxPool) {
  CheckUnpool({.x = {2, 13, 8, 6}, .kernel = {2, 2}, .strides = {2, 2}});
  // Overlapping windows: a value chosen by two windows lands once.
  CheckUnpool({.x = {1, 3, 7, 9}, .kernel = {3, 3}, .strides = {2, 2}});
  CheckUnpool({.x = {1, 5, 9, 10}, .kernel = {3, 2}, .strides = {2, 2}, .pads = {1, 0, 1, 0}});
}

TEST(MaxUnpool, OneAndThreeD) {
  CheckUnpool({.x = {2, 3, 13}, .kernel = {3}, .strides = {3}, .pads = {1, 1}});
  CheckUnpool({.x = {1, 2, 4, 6, 6}, .kernel = {2, 2, 3}, .strides = {2, 2, 2}, .pads = {0, 0, 1, 0, 0, 0}});
}

TEST(MaxUnpool, OutputShapeLargerThanUnpooled) {
  // MaxPool of 9 x 11 with kernel 2, stride 2 reads only 8 x 10.
  CheckUnpool({.x = {1, 3, 8, 10}, .kernel = {2, 2}, .strides = {2, 2}, .output_shape = {1, 3, 9, 11}});
  CheckUnpool({.x = {1, 3, 8, 10}, .kernel = {2, 2}, .strides = {2, 2}, .output_shape = {2, 4, 8, 12}, .opset = 9});
}

TEST(MaxUnpool, OtherFloatTypes) {
  CheckUnpool({.x = {1, 3, 6, 6}, .kernel = {2, 2}, .strides = {2, 2}, .dtype = DataType::kFloat64});
  CheckUnpool({.x = {1, 3, 6, 6}, .kernel = {2, 2}, .strides = {2, 2}, .dtype = DataType::kFloat16});
  CheckUnpool({.x = {1, 3, 6, 6}, .kernel = {2, 2}, .strides = {2, 2}, .dtype = DataType::kBfloat16, .opset = 22});
}

TEST(MaxUnpool, BadInputsAreErrors) {
  UnpoolCase c{.x = {1, 1, 4, 4}, .kernel = {2, 2}, .strides = {2, 2}};
  runtime::Tensor x = kt::F32({1, 1, 2, 2}, {1, 2, 3, 4});
  runtime::Tensor good = kt::I64({1, 1, 2, 2}, {0, 3, 9, 15});
  auto fails = [&](const ir::Node& node, const runtime::Tensor& xt, const runtime::Tensor& it,
                   const runtime::Tensor* shape, const std::string& text) {
    auto r = kt::RunKernel(node, 11, {&xt, &it, shape});
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_NE(r.status().ToString().find(text), std::string::npos) << r.status().ToString();
    EXPECT_NE(r.status().ToString().find("MaxUnpool"), std::string::npos) << r.status().ToString();
  };
  ir::Node node = UnpoolNode(c);
  fails(node, x, kt::I64({1, 1, 2, 2}, {0, 3, 9, 16}), nullptr, "has 16 at position 3");
  fails(node, x, kt::I64({1, 1, 2, 2}, {-1, 3, 9, 15}), nullptr, "has -1 at position 0");
  fails(node, x, kt::I64({1, 1, 4}, {0, 3, 9, 15}), nullptr, "(I)");
  fails(node, kt::F32({1, 4}, {1, 2, 3, 4}), kt::I64({1, 4}, {0, 1, 2, 3}), nullptr, "rank >= 3");
  runtime::Tensor int32 = kt::MakeTensor(DataType::kInt32, {1, 1, 2, 2}, std::vector<int32_t>{0, 3, 9, 15});
  fails(node, x, int32, nullptr, "int32");
  UnpoolCase shaped = c;
  shaped.output_shape = {1, 1, 3, 5};
  runtime::Tensor small = kt::I64({4}, {1, 1, 3, 5});
  fails(UnpoolNode(shaped), x, good, &small, "smaller than the unpooled shape [1,1,4,4] along dim 2");
  runtime::Tensor short_shape = kt::I64({2}, {5, 5});
  fails(UnpoolNode(shaped), x, good, &short_shape, "(output_shape)");
  fails(kt::MakeNode("MaxUnpool", {"x", "i"}, {"y"}), x, good, nullptr, "kernel_shape attribute is required");
  fails(kt::MakeNode("MaxUnpool", {"x", "i"}, {"y"}, {kt::IntsAttr("kernel_shape", {2})}), x, good, nullptr,
        "kernel_shape has 1 values");

  // Shape inference: an output_shape known only at run time leaves the dims
  // symbolic; a known one of the wrong length is an error.
  ir::TypeInfo xtype = ops::TensorType(DataType::kFloat32, Shape{1, 1, 2, 2});
  ir::TypeInfo stype = ops::TensorType(DataType::kInt64, Shape{4});
  auto r = kt::InferNode(UnpoolNode(shaped), 11, {&xtype, &xtype, &stype});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->at(0).shape.dims.size(), 4u);
  EXPECT_FALSE(r->at(0).shape.dims[2].is_known());
  runtime::Tensor three_values = kt::I64({3}, {1, 4, 4});
  ir::Tensor three = three_values.AsConstant("shape");
  EXPECT_FALSE(kt::InferNode(UnpoolNode(shaped), 11, {&xtype, &xtype, &stype}, {nullptr, nullptr, &three}).ok());
  ir::TypeInfo x3 = ops::TensorType(DataType::kFloat32, Shape{1, 2, 2});
  EXPECT_FALSE(kt::InferNode(node, 11, {&xtype, &x3}).ok());
  auto plain = kt::InferNode(node, 11, {&xtype, &xtype});
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  EXPECT_EQ(DimsOf(plain->at(0)), "[1,1,4,4]");
}

}  // namespace
}  // namespace vigil::cpu
