// MaxPool, AveragePool, LpPool and the Global pools against a naive float64
// reference; the expected output sizes are worked out by hand per case.
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include <gtest/gtest.h>

#include "backends/cpu/float_kernel_test_util.h"
#include "backends/cpu/kernel_test_util.h"

namespace vigil::cpu {
namespace {

namespace kt = vigil::cpu::testing;
using namespace vigil::cpu::float_testing;  // NOLINT: test helpers
using ir::DataType;

struct PoolCase {
  std::string op;  // MaxPool, AveragePool, LpPool
  Shape x;
  Shape kernel;
  Shape out;       // expected output spatial sizes
  Shape strides = {};
  Shape dilations = {};
  Shape pads = {};  // resolved begins and ends (what auto_pad gives, when set)
  std::string auto_pad = "";
  bool ceil_mode = false;
  bool count_include_pad = false;
  int64_t p = 2;
  int64_t storage_order = 0;
  bool indices = false;
  DataType dtype = DataType::kFloat32;
  int64_t opset = 19;
};

struct PoolResult {
  std::vector<double> values;
  std::vector<double> indices;
};

PoolResult RefPool(const PoolCase& c, const std::vector<double>& x) {
  const size_t n = c.kernel.size();
  const Shape in(c.x.begin() + 2, c.x.end());
  PoolResult r;
  for (int64_t plane = 0; plane < c.x[0] * c.x[1]; ++plane) {
    for (int64_t o = 0; o < Product(c.out); ++o) {
      Shape oi = Unravel(o, c.out);
      double best = -std::numeric_limits<double>::infinity(), sum = 0;
      int64_t best_index = -1, valid = 0, padded = 0;
      for (int64_t k = 0; k < Product(c.kernel); ++k) {
        Shape ki = Unravel(k, c.kernel);
        bool inside = true, in_padding = true;
        int64_t row = 0, col = 0, scale = 1;
        for (size_t d = 0; d < n; ++d) {
          int64_t pos = oi[d] * c.strides[d] - c.pads[d] + ki[d] * c.dilations[d];
          inside = inside && pos >= 0 && pos < in[d];
          in_padding = in_padding && pos >= -c.pads[d] && pos < in[d] + c.pads[d + n];
          row = row * in[d] + pos;
          col += pos * scale;
          scale *= in[d];
        }
        padded += in_padding;
        if (!inside) continue;
        ++valid;
        double v = x[plane * Product(in) + row];
        if (best_index < 0 || v > best) {
          best = v;
          best_index = plane * Product(in) + (c.storage_order ? col : row);
        }
        sum += c.op == "LpPool" ? std::pow(std::abs(v), static_cast<double>(c.p)) : v;
      }
      if (c.op == "MaxPool") {
        r.values.push_back(best);
        r.indices.push_back(static_cast<double>(best_index));
      } else if (c.op == "AveragePool") {
        r.values.push_back(sum / static_cast<double>(c.count_include_pad ? padded : valid));
      } else {
        r.values.push_back(std::pow(sum, 1.0 / static_cast<double>(c.p)));
      }
    }
  }
  return r;
}

ir::Node PoolNode(const PoolCase& c) {
  std::vector<ir::Attribute> attrs{kt::IntsAttr("kernel_shape", c.kernel), kt::IntsAttr("strides", c.strides)};
  if (c.auto_pad.empty()) {
    attrs.push_back(kt::IntsAttr("pads", c.pads));
  } else {
    attrs.push_back(kt::StringAttr("auto_pad", c.auto_pad));
  }
  if (c.dilations != Shape(c.kernel.size(), 1)) attrs.push_back(kt::IntsAttr("dilations", c.dilations));
  if (c.ceil_mode) attrs.push_back(kt::IntAttr("ceil_mode", 1));
  if (c.count_include_pad) attrs.push_back(kt::IntAttr("count_include_pad", 1));
  if (c.storage_order) attrs.push_back(kt::IntAttr("storage_order", c.storage_order));
  if (c.op == "LpPool") attrs.push_back(kt::IntAttr("p", c.p));
  std::vector<std::string> outputs{"y"};
  if (c.indices) outputs.push_back("i");
  return kt::MakeNode(c.op, {"x"}, outputs, attrs);
}

void CheckPool(PoolCase c, uint32_t seed = 3) {
  const size_t n = c.kernel.size();
  if (c.strides.empty()) c.strides.assign(n, 1);
  if (c.dilations.empty()) c.dilations.assign(n, 1);
  if (c.pads.empty()) c.pads.assign(2 * n, 0);
  const bool bytes = c.dtype == DataType::kInt8 || c.dtype == DataType::kUint8;
  std::vector<double> x = RoundTo(c.dtype, Random(Product(c.x), seed, bytes ? 0 : -1, bytes ? 100 : 1));
  runtime::Tensor xt;
  if (bytes) {
    for (double& v : x) v = std::floor(v) - (c.dtype == DataType::kInt8 ? 50 : 0);
    std::vector<int8_t> s8(x.begin(), x.end());
    std::vector<uint8_t> u8(x.begin(), x.end());
    xt = c.dtype == DataType::kInt8 ? kt::MakeTensor(c.dtype, c.x, s8) : kt::MakeTensor(c.dtype, c.x, u8);
  } else {
    xt = MakeFloat(c.dtype, c.x, x);
  }
  ir::Node node = PoolNode(c);
  auto r = kt::RunKernel(node, c.opset, {&xt});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  Shape y_shape = Concat({c.x[0], c.x[1]}, c.out);
  ASSERT_EQ(r->at(0).shape(), y_shape);
  PoolResult want = RefPool(c, x);
  if (bytes) {
    std::vector<double> got;
    for (size_t i = 0; i < r->at(0).element_count(); ++i) {
      got.push_back(c.dtype == DataType::kInt8 ? r->at(0).data<int8_t>()[i] : r->at(0).data<uint8_t>()[i]);
    }
    ExpectClose(got, want.values, 0, 0);
  } else {
    ExpectClose(ReadFloat(r->at(0)), want.values, Tolerance(c.dtype), Tolerance(c.dtype));
  }
  if (c.indices) {
    ASSERT_EQ(r->at(1).dtype(), DataType::kInt64);
    ASSERT_EQ(r->at(1).shape(), y_shape);
    std::vector<int64_t> got = kt::Values<int64_t>(r->at(1));
    ExpectClose(std::vector<double>(got.begin(), got.end()), want.indices, 0, 0);
  }
  ir::TypeInfo xtype = ops::TensorType(c.dtype, c.x);
  auto inferred = kt::InferNode(node, c.opset, {&xtype});
  ASSERT_TRUE(inferred.ok()) << inferred.status().ToString();
  EXPECT_EQ(DimsOf(inferred->at(0)), ir::ShapeToString(ops::TensorType(c.dtype, y_shape).shape));
  if (c.indices) {
    EXPECT_EQ(inferred->at(1).elem_type, DataType::kInt64);
  }
}

TEST(MaxPool, ResNetStemWithIndices) {
  CheckPool({.op = "MaxPool", .x = {2, 13, 11, 11}, .kernel = {3, 3}, .out = {6, 6}, .strides = {2, 2},
             .pads = {1, 1, 1, 1}, .indices = true});
}
TEST(MaxPool, CeilMode) {
  CheckPool({.op = "MaxPool", .x = {1, 2, 4, 4}, .kernel = {3, 3}, .out = {2, 2}, .strides = {2, 2},
             .ceil_mode = true});
  // The last window runs past the input: it keeps what is inside.
  CheckPool({.op = "MaxPool", .x = {1, 2, 5, 5}, .kernel = {2, 2}, .out = {3, 3}, .strides = {2, 2},
             .ceil_mode = true, .indices = true});
  // A last window that would start in the end padding is dropped: 3 -> 2.
  CheckPool({.op = "MaxPool", .x = {1, 3, 4, 4}, .kernel = {2, 2}, .out = {2, 2}, .strides = {2, 2},
             .pads = {0, 0, 1, 1}, .ceil_mode = true});
}
TEST(MaxPool, Dilations) {
  CheckPool({.op = "MaxPool", .x = {1, 2, 9, 8}, .kernel = {2, 3}, .out = {7, 2}, .strides = {1, 2},
             .dilations = {2, 2}, .indices = true});
}
TEST(MaxPool, StorageOrderColumnMajor) {
  CheckPool({.op = "MaxPool", .x = {2, 3, 5, 6}, .kernel = {2, 2}, .out = {2, 3}, .strides = {2, 2},
             .storage_order = 1, .indices = true});
}
TEST(MaxPool, OneDAndThreeD) {
  CheckPool({.op = "MaxPool", .x = {2, 3, 13}, .kernel = {4}, .out = {6}, .strides = {2}, .pads = {1, 0},
             .indices = true});
  CheckPool({.op = "MaxPool", .x = {1, 2, 5, 6, 7}, .kernel = {2, 3, 2}, .out = {4, 3, 4}, .strides = {1, 2, 2},
             .pads = {0, 0, 1, 0, 1, 0}, .indices = true});
}
TEST(MaxPool, AutoPadSame) {
  // in 5, kernel 3, stride 2: out 3, total pad 2 -> 1 and 1.
  CheckPool({.op = "MaxPool", .x = {1, 2, 5, 5}, .kernel = {3, 3}, .out = {3, 3}, .strides = {2, 2},
             .pads = {1, 1, 1, 1}, .auto_pad = "SAME_UPPER"});
  // in 4, kernel 2, stride 1: out 4, total pad 1: at the end (UPPER) or start (LOWER).
  CheckPool({.op = "MaxPool", .x = {1, 2, 4, 4}, .kernel = {2, 2}, .out = {4, 4}, .pads = {0, 0, 1, 1},
             .auto_pad = "SAME_UPPER"});
  CheckPool({.op = "MaxPool", .x = {1, 2, 4, 4}, .kernel = {2, 2}, .out = {4, 4}, .pads = {1, 1, 0, 0},
             .auto_pad = "SAME_LOWER"});
  CheckPool({.op = "MaxPool", .x = {1, 2, 5, 4}, .kernel = {3, 2}, .out = {2, 2}, .strides = {2, 2},
             .auto_pad = "VALID"});
}
TEST(MaxPool, ByteAndHalfTypes) {
  CheckPool({.op = "MaxPool", .x = {1, 3, 6, 6}, .kernel = {3, 3}, .out = {3, 3}, .strides = {2, 2},
             .pads = {1, 1, 0, 0}, .indices = true, .dtype = DataType::kInt8});
  CheckPool({.op = "MaxPool", .x = {1, 3, 6, 6}, .kernel = {3, 3}, .out = {3, 3}, .strides = {2, 2},
             .pads = {1, 1, 0, 0}, .dtype = DataType::kUint8});
  CheckPool({.op = "MaxPool", .x = {1, 3, 6, 6}, .kernel = {2, 2}, .out = {5, 5}, .dtype = DataType::kFloat16});
  CheckPool({.op = "MaxPool", .x = {1, 3, 6, 6}, .kernel = {2, 2}, .out = {5, 5}, .dtype = DataType::kBfloat16});
  CheckPool({.op = "MaxPool", .x = {1, 3, 6, 6}, .kernel = {2, 2}, .out = {5, 5}, .dtype = DataType::kFloat64});
}
TEST(MaxPool, NaNWinsAndTiesTakeTheFirst) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  runtime::Tensor x = kt::F32({1, 1, 2, 2}, {1.f, nan, 3.f, 3.f});
  auto r = kt::RunKernel(
      kt::MakeNode("MaxPool", {"x"}, {"y", "i"}, {kt::IntsAttr("kernel_shape", {1, 2})}), 12, {&x});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  std::vector<float> y = kt::Values<float>(r->at(0));
  EXPECT_TRUE(std::isnan(y[0]));
  EXPECT_EQ(y[1], 3.f);
  EXPECT_EQ(kt::Values<int64_t>(r->at(1)), (std::vector<int64_t>{1, 2}));
}

// The optimised 2D float32 path (fast/pool2d.cpp) against the reference
// code on the same input, bit for bit: odd sizes, strides, pads, dilations,
// ceil_mode, windows wholly in the padding (dilation), NaN and ties.
TEST(MaxPool, OptimisedPathMatchesTheReferenceBitForBit) {
  struct Case {
    Shape x, kernel, strides, dilations, pads;
    bool ceil_mode;
  };
  const std::vector<Case> cases = {
      {{1, 64, 112, 112}, {3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}, false},  // ResNet's stem pool
      {{2, 13, 17, 19}, {3, 2}, {2, 3}, {1, 1}, {1, 0, 2, 1}, true},
      {{1, 127, 9, 8}, {2, 2}, {1, 1}, {1, 1}, {0, 0, 0, 0}, false},
      {{1, 3, 11, 13}, {3, 3}, {1, 2}, {3, 2}, {2, 2, 2, 2}, true},  // dilated
      {{1, 3, 3, 5}, {2, 2}, {1, 1}, {4, 4}, {2, 2, 2, 2}, false},  // row 1's windows lie wholly in the padding
      {{1, 5, 7, 7}, {7, 7}, {1, 1}, {1, 1}, {0, 0, 0, 0}, false},
  };
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-2.f, 2.f);
  for (const Case& c : cases) {
    int64_t n = 1;
    for (int64_t d : c.x) n *= d;
    std::vector<float> values(static_cast<size_t>(n));
    for (size_t i = 0; i < values.size(); ++i) {
      // Coarse values give ties; every 37th is NaN.
      values[i] = i % 37 == 5 ? std::numeric_limits<float>::quiet_NaN() : std::round(dist(rng) * 4.f) / 4.f;
    }
    runtime::Tensor x = kt::F32(c.x, values);
    ir::Node node = kt::MakeNode("MaxPool", {"x"}, {"y"},
                                 {kt::IntsAttr("kernel_shape", c.kernel), kt::IntsAttr("strides", c.strides),
                                  kt::IntsAttr("dilations", c.dilations), kt::IntsAttr("pads", c.pads),
                                  kt::IntAttr("ceil_mode", c.ceil_mode)});
    auto fast = kt::RunKernel(node, 12, {&x}, /*optimised=*/true);
    auto reference = kt::RunKernel(node, 12, {&x}, /*optimised=*/false);
    ASSERT_TRUE(fast.ok()) << fast.status().ToString();
    ASSERT_TRUE(reference.ok()) << reference.status().ToString();
    ASSERT_EQ(fast->at(0).shape(), reference->at(0).shape());
    std::vector<uint32_t> a = kt::Values<uint32_t>(fast->at(0)), b = kt::Values<uint32_t>(reference->at(0));
    ASSERT_EQ(a.size(), b.size());
    int64_t nans = 0, lowest = 0;
    for (size_t i = 0; i < a.size(); ++i) {
      ASSERT_EQ(a[i], b[i]) << "x " << ::testing::PrintToString(c.x) << " output " << i;
      float v;
      std::memcpy(&v, &a[i], sizeof v);
      nans += std::isnan(v);
      lowest += std::isinf(v);
    }
    EXPECT_GT(nans, 0) << "the case should reach NaN windows";
    if (c.dilations[0] == 4) {
      EXPECT_GT(lowest, 0) << "the dilated case should have windows wholly in the padding";
    }
  }
}

TEST(AveragePool, PadsExcludedOrIncluded) {
  CheckPool({.op = "AveragePool", .x = {1, 13, 7, 6}, .kernel = {3, 3}, .out = {4, 3}, .strides = {2, 2},
             .pads = {1, 1, 1, 1}});
  CheckPool({.op = "AveragePool", .x = {1, 13, 7, 6}, .kernel = {3, 3}, .out = {4, 3}, .strides = {2, 2},
             .pads = {1, 1, 1, 1}, .count_include_pad = true});
}
TEST(AveragePool, CeilModeCountsOnlyThePaddedExtent) {
  // in 6, pads 1+1, kernel 3, stride 2: ceil(5/2)+1 = 4; the last window
  // covers 5 (inside), 6 (padding) and 7 (beyond): divides by 2.
  CheckPool({.op = "AveragePool", .x = {1, 2, 6, 6}, .kernel = {3, 3}, .out = {4, 4}, .strides = {2, 2},
             .pads = {1, 1, 1, 1}, .ceil_mode = true, .count_include_pad = true});
  CheckPool({.op = "AveragePool", .x = {1, 2, 6, 6}, .kernel = {3, 3}, .out = {4, 4}, .strides = {2, 2},
             .pads = {1, 1, 1, 1}, .ceil_mode = true});
}
TEST(AveragePool, Dilations) {
  CheckPool({.op = "AveragePool", .x = {1, 2, 8, 8}, .kernel = {2, 2}, .out = {8, 8}, .dilations = {2, 2},
             .pads = {1, 1, 1, 1}, .count_include_pad = true});
  CheckPool({.op = "AveragePool", .x = {1, 2, 8, 8}, .kernel = {2, 2}, .out = {8, 8}, .dilations = {2, 2},
             .pads = {1, 1, 1, 1}});
}
TEST(AveragePool, SameLowerOneDThreeDHalf) {
  CheckPool({.op = "AveragePool", .x = {1, 2, 4, 4}, .kernel = {2, 2}, .out = {4, 4}, .pads = {1, 1, 0, 0},
             .auto_pad = "SAME_LOWER"});
  CheckPool({.op = "AveragePool", .x = {3, 2, 9}, .kernel = {3}, .out = {4}, .strides = {2}});
  CheckPool({.op = "AveragePool", .x = {1, 2, 4, 5, 3}, .kernel = {2, 2, 2}, .out = {3, 4, 2}});
  CheckPool({.op = "AveragePool", .x = {1, 3, 6, 6}, .kernel = {3, 3}, .out = {4, 4}, .dtype = DataType::kFloat16});
}

// Random pooling windows, with the output size worked out from the spec's
// formula: floor or ceil((in + pads - extent) / stride) + 1, dropping a last
// window that would start in the end padding.
TEST(Pools, RandomConfigurations) {
  std::mt19937 gen(7);
  auto pick = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(gen); };
  const char* ops[] = {"MaxPool", "AveragePool", "LpPool"};
  int checked = 0;
  while (checked < 90) {
    PoolCase c;
    c.op = ops[checked % 3];
    const int64_t rank = pick(1, 3);
    c.x = {pick(1, 2), pick(1, 3)};
    c.ceil_mode = pick(0, 1) == 1;
    c.count_include_pad = pick(0, 1) == 1;
    c.indices = c.op == "MaxPool";
    c.storage_order = c.op == "MaxPool" && rank == 2 ? pick(0, 1) : 0;
    c.p = pick(1, 3);
    bool fits = true;
    for (int64_t d = 0; d < rank; ++d) {
      c.x.push_back(pick(1, 9));
      c.kernel.push_back(pick(1, 4));
      c.strides.push_back(pick(1, 3));
      c.dilations.push_back(pick(1, 2));
    }
    for (int64_t d = 0; d < 2 * rank; ++d) {
      int64_t extent = (c.kernel[d % rank] - 1) * c.dilations[d % rank] + 1;
      c.pads.push_back(pick(0, std::min<int64_t>(2, extent - 1)));
    }
    for (int64_t d = 0; d < rank; ++d) {
      int64_t in = c.x[d + 2], pb = c.pads[d], extent = (c.kernel[d] - 1) * c.dilations[d] + 1;
      int64_t span = in + pb + c.pads[d + rank] - extent;
      if (span < 0) {
        fits = false;
        break;
      }
      int64_t out = (c.ceil_mode ? (span + c.strides[d] - 1) / c.strides[d] : span / c.strides[d]) + 1;
      if (c.ceil_mode && (out - 1) * c.strides[d] >= in + pb) --out;
      c.out.push_back(out);
    }
    if (!fits) continue;
    // A window lying wholly in the padding (possible with dilations) has no
    // defined average; the reference would divide by zero.
    if (c.op == "AveragePool" && !c.count_include_pad) {
      bool empty = false;
      for (int64_t d = 0; d < rank; ++d) {
        for (int64_t o = 0; o < c.out[d]; ++o) {
          bool any = false;
          for (int64_t k = 0; k < c.kernel[d]; ++k) {
            int64_t pos = o * c.strides[d] - c.pads[d] + k * c.dilations[d];
            any = any || (pos >= 0 && pos < c.x[d + 2]);
          }
          empty = empty || !any;
        }
      }
      if (empty) continue;
    }
    SCOPED_TRACE(::testing::Message() << "case " << checked << " " << c.op);
    CheckPool(c, static_cast<uint32_t>(checked));
    ++checked;
  }
}

TEST(LpPool, PowersAndPads) {
  for (int64_t p : {1, 2, 3}) {
    CheckPool({.op = "LpPool", .x = {1, 13, 7, 6}, .kernel = {3, 2}, .out = {3, 4}, .strides = {2, 2},
               .pads = {0, 1, 1, 1}, .p = p});
  }
  CheckPool({.op = "LpPool", .x = {1, 2, 7, 7}, .kernel = {2, 2}, .out = {4, 4}, .strides = {2, 2},
             .dilations = {2, 2}, .pads = {0, 1, 1, 1}, .ceil_mode = true});
}
TEST(LpPool, OpsetOneTakesAFloatP) {
  runtime::Tensor x = kt::F32({1, 1, 1, 2}, {3.f, -4.f});
  ir::Node node = kt::MakeNode("LpPool", {"x"}, {"y"}, {kt::IntsAttr("kernel_shape", {1, 2}), kt::FloatAttr("p", 2.f)});
  auto r = kt::RunKernel(node, 1, {&x});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(kt::Values<float>(r->at(0)), std::vector<float>{5.f});
}

void CheckGlobal(const std::string& op, const Shape& shape, DataType dtype, int64_t p = 2) {
  std::vector<double> x = RoundTo(dtype, Random(Product(shape), 11));
  runtime::Tensor xt = MakeFloat(dtype, shape, x);
  std::vector<ir::Attribute> attrs;
  if (op == "GlobalLpPool") attrs.push_back(kt::IntAttr("p", p));
  ir::Node node = kt::MakeNode(op, {"x"}, {"y"}, attrs);
  auto r = kt::RunKernel(node, 2, {&xt});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  Shape y_shape(shape.size(), 1);
  y_shape[0] = shape[0];
  y_shape[1] = shape[1];
  ASSERT_EQ(r->at(0).shape(), y_shape);
  const int64_t size = Product(shape) / (shape[0] * shape[1]);
  std::vector<double> want;
  for (int64_t plane = 0; plane < shape[0] * shape[1]; ++plane) {
    double sum = 0, best = -std::numeric_limits<double>::infinity();
    for (int64_t i = 0; i < size; ++i) {
      double v = x[plane * size + i];
      sum += op == "GlobalLpPool" ? std::pow(std::abs(v), static_cast<double>(p)) : v;
      best = std::max(best, v);
    }
    want.push_back(op == "GlobalMaxPool"   ? best
                   : op == "GlobalLpPool" ? std::pow(sum, 1.0 / static_cast<double>(p))
                                          : sum / static_cast<double>(size));
  }
  ExpectClose(ReadFloat(r->at(0)), want, Tolerance(dtype), Tolerance(dtype));
  ir::TypeInfo xtype = ops::TensorType(dtype, shape);
  auto inferred = kt::InferNode(node, 2, {&xtype});
  ASSERT_TRUE(inferred.ok()) << inferred.status().ToString();
  EXPECT_EQ(DimsOf(inferred->at(0)), ir::ShapeToString(ops::TensorType(dtype, y_shape).shape));
}

TEST(GlobalPools, AllKinds) {
  for (const char* op : {"GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool"}) {
    CheckGlobal(op, {2, 13, 5, 7}, DataType::kFloat32);
    CheckGlobal(op, {1, 127, 9}, DataType::kFloat64);
    CheckGlobal(op, {1, 3, 2, 3, 4}, DataType::kFloat16);
  }
  CheckGlobal("GlobalLpPool", {2, 3, 4, 4}, DataType::kFloat32, 3);
}
TEST(GlobalPools, EmptyBatchAndNaN) {
  runtime::Tensor empty = kt::F32({0, 3, 4, 4}, {});
  auto r = kt::RunKernel(kt::MakeNode("GlobalAveragePool", {"x"}, {"y"}), 1, {&empty});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->at(0).shape(), (Shape{0, 3, 1, 1}));
  runtime::Tensor x = kt::F32({1, 1, 3}, {1.f, std::numeric_limits<float>::quiet_NaN(), 2.f});
  auto m = kt::RunKernel(kt::MakeNode("GlobalMaxPool", {"x"}, {"y"}), 1, {&x});
  ASSERT_TRUE(m.ok());
  EXPECT_TRUE(std::isnan(kt::Values<float>(m->at(0))[0]));
}

void ExpectPoolError(const ir::Node& node, const runtime::Tensor& x, const std::string& text, ErrorCode code) {
  auto r = kt::RunKernel(node, 12, {&x});
  ASSERT_FALSE(r.ok()) << text;
  EXPECT_EQ(r.status().code(), code) << r.status().ToString();
  EXPECT_NE(r.status().summary().find(text), std::string::npos) << r.status().ToString();
  EXPECT_NE(r.status().summary().find("'n'"), std::string::npos);
}

TEST(Pools, Errors) {
  runtime::Tensor x = kt::F32({1, 2, 4, 4}, std::vector<float>(32, 1.f));
  runtime::Tensor x2 = kt::F32({1, 2}, {1.f, 2.f});
  runtime::Tensor xb = kt::MakeTensor(DataType::kBool, {1, 1, 2, 2}, std::vector<uint8_t>{1, 0, 1, 1});
  auto k = kt::IntsAttr("kernel_shape", {2, 2});
  ExpectPoolError(kt::MakeNode("MaxPool", {"x"}, {"y"}), x, "kernel_shape attribute is required",
                  ErrorCode::kInvalidModel);
  ExpectPoolError(kt::MakeNode("AveragePool", {"x"}, {"y"}, {k, kt::IntsAttr("pads", {2, 0, 0, 0})}), x,
                  "smaller than the kernel extent", ErrorCode::kInvalidModel);
  ExpectPoolError(kt::MakeNode("MaxPool", {"x"}, {"y"}, {k, kt::IntAttr("storage_order", 2)}), x, "storage_order",
                  ErrorCode::kInvalidModel);
  ExpectPoolError(kt::MakeNode("MaxPool", {"x"}, {"y"}, {k}), x2, "rank >= 3", ErrorCode::kInvalidInput);
  ExpectPoolError(kt::MakeNode("MaxPool", {"x"}, {"y"}, {k}), xb, "bool", ErrorCode::kUnsupported);
  ExpectPoolError(kt::MakeNode("AveragePool", {"x"}, {"y"}, {kt::IntsAttr("kernel_shape", {5, 5})}), x,
                  "smaller than the kernel extent", ErrorCode::kInvalidModel);
  ExpectPoolError(kt::MakeNode("LpPool", {"x"}, {"y"}, {k, kt::IntAttr("p", 0)}), x, "p is 0",
                  ErrorCode::kInvalidModel);
  ExpectPoolError(kt::MakeNode("GlobalMaxPool", {"x"}, {"y"}), xb, "bool", ErrorCode::kUnsupported);
}

TEST(PoolInference, SymbolicUnknownAndArity) {
  ir::Node node = kt::MakeNode("MaxPool", {"x"}, {"y", "i"},
                               {kt::IntsAttr("kernel_shape", {3, 3}), kt::IntsAttr("strides", {2, 2})});
  ir::TypeInfo x = Type(DataType::kFloat32, {S("N"), K(64), K(112), S("W")});
  auto r = kt::InferNode(node, 12, {&x});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->at(0).shape.dims[0].param, "N");
  EXPECT_EQ(*r->at(0).shape.dims[2].value, 55);
  EXPECT_TRUE(r->at(0).shape.dims[3].is_symbolic());
  EXPECT_EQ(r->at(1).elem_type, DataType::kInt64);
  EXPECT_EQ(DimsOf(r->at(1)), DimsOf(r->at(0)));
  // No Indices output before opset 8.
  EXPECT_FALSE(kt::InferNode(node, 7, {&x}).ok());
  ir::TypeInfo unknown = ops::TensorTypeUnknownShape(DataType::kFloat32);
  auto u = kt::InferNode(node, 12, {&unknown});
  ASSERT_TRUE(u.ok());
  EXPECT_FALSE(u->at(0).shape.rank_known);
  EXPECT_EQ(u->at(1).elem_type, DataType::kInt64);
  ir::TypeInfo small = Type(DataType::kFloat32, {K(1), K(1), K(2), K(2)});
  auto bad = kt::InferNode(node, 12, {&small});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().summary().find("kernel extent 3"), std::string::npos) << bad.status().ToString();
  auto g = kt::InferNode(kt::MakeNode("GlobalAveragePool", {"x"}, {"y"}), 1, {&x});
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(DimsOf(g->at(0)), "[N,64,1,1]");
}

}  // namespace
}  // namespace vigil::cpu
