// CPU kernels and shape inference of ArgMax, ArgMin, CumSum, CumProd and TopK, against
// float64 loops over [outer, n, inner] views of the input.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "backends/cpu/elementwise_test_util.h"
#include "backends/cpu/kernel_test_util.h"

namespace vigil::cpu::testing {
namespace {

struct Around {
  int64_t outer = 1, n = 1, inner = 1;
};
Around ViewAround(const std::vector<int64_t>& shape, int64_t axis) {
  Around v;
  for (int64_t i = 0; i < static_cast<int64_t>(shape.size()); ++i) {
    if (i < axis) v.outer *= shape[i];
    else if (i == axis) v.n = shape[i];
    else v.inner *= shape[i];
  }
  return v;
}

const std::vector<std::vector<int64_t>> kShapes = {{13}, {3, 4, 5}, {2, 1, 7}, {127, 3}, {0, 4}};

// Values with ties: few distinct values.
std::vector<double> TiedValues(DataType d, int64_t n, uint32_t seed) {
  std::vector<double> v = RandomValues(n, IsUnsigned(d) ? 0 : -3, 3, seed, true);
  if (IsFloat(d)) {
    for (double& x : v) x *= 0.5;
  }
  return v;
}

// --- ArgMax / ArgMin ---------------------------------------------------------

void CheckArg(const std::string& op, DataType d, const std::vector<int64_t>& shape, int64_t axis, int64_t keepdims,
              int64_t last) {
  const int64_t rank = static_cast<int64_t>(shape.size());
  const int64_t ax = axis < 0 ? axis + rank : axis;
  const std::string what = op + " " + DtypeName(d) + " " + ShapeString(shape) + " axis=" + std::to_string(axis) +
                           " keepdims=" + std::to_string(keepdims) + " last=" + std::to_string(last);
  std::vector<double> xv = TiedValues(d, Product(shape), 3);
  runtime::Tensor x = TensorOf(d, shape, xv);
  const Around v = ViewAround(shape, ax);
  std::vector<int64_t> want;
  for (int64_t o = 0; o < v.outer; ++o) {
    for (int64_t j = 0; j < v.inner; ++j) {
      int64_t best = 0;
      for (int64_t i = 1; i < v.n; ++i) {
        double a = xv[(o * v.n + i) * v.inner + j], b = xv[(o * v.n + best) * v.inner + j];
        bool better = op == "ArgMax" ? a > b : a < b;
        if (better || (last && a == b)) best = i;
      }
      want.push_back(best);
    }
  }
  std::vector<int64_t> want_shape = shape;
  if (keepdims) want_shape[ax] = 1;
  else want_shape.erase(want_shape.begin() + ax);
  ir::Node node = MakeNode(op, {"x"}, {"y"},
                           {IntAttr("axis", axis), IntAttr("keepdims", keepdims), IntAttr("select_last_index", last)});
  auto out = RunOk(node, 13, {&x});
  ASSERT_EQ(out.size(), 1u) << what;
  EXPECT_EQ(out[0].dtype(), DataType::kInt64) << what;
  EXPECT_EQ(out[0].shape(), want_shape) << what;
  EXPECT_EQ(Values<int64_t>(out[0]), want) << what;
}

TEST(ArgReduceKernels, AgainstReference) {
  for (const char* op : {"ArgMax", "ArgMin"}) {
    for (DataType d : {DataType::kFloat32, DataType::kFloat16, DataType::kFloat64, DataType::kInt32,
                       DataType::kInt64, DataType::kUint8, DataType::kInt8}) {
      for (const auto& shape : kShapes) {
        for (int64_t axis = -static_cast<int64_t>(shape.size()); axis < static_cast<int64_t>(shape.size()); ++axis) {
          if (shape[axis < 0 ? axis + shape.size() : axis] == 0) continue;  // no index to return
          for (int64_t keepdims : {0, 1}) {
            for (int64_t last : {0, 1}) CheckArg(op, d, shape, axis, keepdims, last);
          }
        }
      }
    }
  }
}

TEST(ArgReduceKernels, NaNWinsAndEmptyAxisFails) {
  runtime::Tensor x = F32({4}, {1, NAN, 3, NAN});
  for (const char* op : {"ArgMax", "ArgMin"}) {
    auto out = RunOk(MakeNode(op, {"x"}, {"y"}), 13, {&x});
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(Values<int64_t>(out[0]), std::vector<int64_t>{1}) << op;
    out = RunOk(MakeNode(op, {"x"}, {"y"}, {IntAttr("select_last_index", 1)}), 13, {&x});
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(Values<int64_t>(out[0]), std::vector<int64_t>{3}) << op;
  }
  runtime::Tensor empty = F32({2, 0}, {});
  ExpectRunFails(MakeNode("ArgMax", {"x"}, {"y"}, {IntAttr("axis", 1)}), 13, {&empty}, "empty");
  ExpectRunFails(MakeNode("ArgMin", {"x"}, {"y"}, {IntAttr("axis", 2)}), 13, {&empty}, "out of range");
  runtime::Tensor b = TensorOf(DataType::kBool, {2}, {1, 0});
  auto r = RunKernel(MakeNode("ArgMax", {"x"}, {"y"}), 13, {&b});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kUnsupported);
}

// --- CumSum, CumProd -------------------------------------------------------------

// An integer result reduced to dtype d's width, as wrapping arithmetic gives it.
double WrapToWidth(DataType d, uint64_t u) {
  switch (d) {
    case DataType::kInt32: return static_cast<int32_t>(u);
    case DataType::kUint32: return static_cast<uint32_t>(u);
    case DataType::kUint64: return static_cast<double>(u);
    default: return static_cast<double>(static_cast<int64_t>(u));
  }
}

void CheckCumulative(const std::string& op, DataType d, const std::vector<int64_t>& shape, int64_t axis,
                     int64_t exclusive, int64_t reverse, DataType axis_dtype) {
  const bool product = op == "CumProd";
  const int64_t rank = static_cast<int64_t>(shape.size());
  const int64_t ax = axis < 0 ? axis + rank : axis;
  const std::string what = op + " " + DtypeName(d) + " " + ShapeString(shape) + " axis=" + std::to_string(axis) +
                           " exclusive=" + std::to_string(exclusive) + " reverse=" + std::to_string(reverse);
  std::vector<double> xv = IsFloat(d) ? RandomValues(Product(shape), -1, 1, 5) : TiedValues(d, Product(shape), 5);
  if (product && IsFloat(d)) {
    // Magnitudes near 1, so that long products neither vanish nor overflow.
    for (double& x : xv) x = (x < 0 ? -1 : 1) * (0.75 + 0.5 * std::fabs(x));
  }
  for (double& x : xv) x = Quantize(d, x);
  runtime::Tensor x = TensorOf(d, shape, xv);
  runtime::Tensor a = TensorOf(axis_dtype, {}, {static_cast<double>(axis)});
  const Around v = ViewAround(shape, ax);
  std::vector<double> want(xv.size());
  for (int64_t o = 0; o < v.outer; ++o) {
    for (int64_t j = 0; j < v.inner; ++j) {
      // Floats in double; integers in uint64, which wraps like the kernel.
      double acc = product ? 1 : 0;
      uint64_t iacc = product ? 1 : 0;
      for (int64_t s = 0; s < v.n; ++s) {
        const int64_t i = reverse ? v.n - 1 - s : s;
        const int64_t at = (o * v.n + i) * v.inner + j;
        const double before = IsFloat(d) ? acc : WrapToWidth(d, iacc);
        const uint64_t xi = IsFloat(d) ? 0 : static_cast<uint64_t>(static_cast<int64_t>(xv[at]));
        acc = product ? acc * xv[at] : acc + xv[at];
        iacc = product ? iacc * xi : iacc + xi;
        want[at] = exclusive ? before : (IsFloat(d) ? acc : WrapToWidth(d, iacc));
      }
    }
  }
  for (double& w : want) w = Quantize(d, w);
  ir::Node node = MakeNode(op, {"x", "axis"}, {"y"}, {IntAttr("exclusive", exclusive), IntAttr("reverse", reverse)});
  auto out = RunOk(node, product ? 26 : 14, {&x, &a});
  ASSERT_EQ(out.size(), 1u) << what;
  EXPECT_EQ(out[0].shape(), shape) << what;
  ExpectNear(DoublesOf(out[0]), want, ToleranceFor(d), what);
}

void CheckCumulativeAll(const std::string& op, const std::vector<DataType>& dtypes) {
  for (DataType d : dtypes) {
    for (const auto& shape : kShapes) {
      for (int64_t axis = -static_cast<int64_t>(shape.size()); axis < static_cast<int64_t>(shape.size()); ++axis) {
        for (int64_t exclusive : {0, 1}) {
          for (int64_t reverse : {0, 1}) {
            CheckCumulative(op, d, shape, axis, exclusive, reverse, axis == 0 ? DataType::kInt32 : DataType::kInt64);
          }
        }
      }
    }
  }
}

TEST(CumSumKernel, AgainstReference) {
  CheckCumulativeAll("CumSum", {DataType::kFloat32, DataType::kFloat64, DataType::kFloat16, DataType::kBfloat16,
                                DataType::kInt32, DataType::kInt64});
}

TEST(CumProdKernel, AgainstReference) {
  // Integer products of up to 127 values in [-3, 3) wrap; the reference wraps too.
  CheckCumulativeAll("CumProd", {DataType::kFloat32, DataType::kFloat64, DataType::kFloat16, DataType::kBfloat16,
                                 DataType::kInt32, DataType::kInt64, DataType::kUint32, DataType::kUint64});
}

TEST(CumProdKernel, Example) {
  runtime::Tensor x = F32({3}, {1, 2, 3});
  runtime::Tensor axis = I64({}, {0});
  auto run = [&](int64_t exclusive, int64_t reverse) {
    auto out = RunOk(MakeNode("CumProd", {"x", "axis"}, {"y"},
                              {IntAttr("exclusive", exclusive), IntAttr("reverse", reverse)}),
                     26, {&x, &axis});
    return Values<float>(out[0]);
  };
  EXPECT_EQ(run(0, 0), (std::vector<float>{1, 2, 6}));
  EXPECT_EQ(run(1, 0), (std::vector<float>{1, 1, 2}));
  EXPECT_EQ(run(0, 1), (std::vector<float>{6, 6, 3}));
  EXPECT_EQ(run(1, 1), (std::vector<float>{6, 3, 1}));
}

TEST(CumSumKernel, Errors) {
  for (const char* op : {"CumSum", "CumProd"}) {
    const int64_t opset = std::string(op) == "CumProd" ? 26 : 14;
    runtime::Tensor x = F32({2, 3}, std::vector<float>(6, 1));
    runtime::Tensor bad = I64({}, {2});
    ExpectRunFails(MakeNode(op, {"x", "axis"}, {"y"}), opset, {&x, &bad}, "out of range");
    runtime::Tensor neg = I64({}, {-3});
    ExpectRunFails(MakeNode(op, {"x", "axis"}, {"y"}), opset, {&x, &neg}, "out of range");
    runtime::Tensor two = I64({2}, {0, 1});
    ExpectRunFails(MakeNode(op, {"x", "axis"}, {"y"}), opset, {&x, &two}, "single value");
    runtime::Tensor f = F32({}, {0});
    ExpectRunFails(MakeNode(op, {"x", "axis"}, {"y"}), opset, {&x, &f}, "int32 or int64");
    runtime::Tensor s = F32({}, {1});
    runtime::Tensor zero = I64({}, {0});
    ExpectRunFails(MakeNode(op, {"x", "axis"}, {"y"}), opset, {&s, &zero}, std::string(op) + " needs rank 1");
  }
}

// --- TopK --------------------------------------------------------------------

void CheckTopK(DataType d, const std::vector<int64_t>& shape, int64_t axis, int64_t k, int64_t largest,
               int64_t opset) {
  const int64_t rank = static_cast<int64_t>(shape.size());
  const int64_t ax = axis < 0 ? axis + rank : axis;
  const std::string what = "TopK opset " + std::to_string(opset) + " " + DtypeName(d) + " " + ShapeString(shape) +
                           " axis=" + std::to_string(axis) + " k=" + std::to_string(k) +
                           " largest=" + std::to_string(largest);
  std::vector<double> xv = TiedValues(d, Product(shape), 9);
  runtime::Tensor x = TensorOf(d, shape, xv);
  runtime::Tensor kt = I64({1}, {k});
  const Around v = ViewAround(shape, ax);
  std::vector<int64_t> want_shape = shape;
  want_shape[ax] = k;
  std::vector<double> want_values(Product(want_shape));
  std::vector<int64_t> want_indices(want_values.size());
  for (int64_t o = 0; o < v.outer; ++o) {
    for (int64_t j = 0; j < v.inner; ++j) {
      std::vector<int64_t> order(v.n);
      std::iota(order.begin(), order.end(), 0);
      auto value = [&](int64_t i) { return xv[(o * v.n + i) * v.inner + j]; };
      // Stable: ties keep the lower index first.
      std::stable_sort(order.begin(), order.end(),
                       [&](int64_t a, int64_t b) { return largest ? value(a) > value(b) : value(a) < value(b); });
      for (int64_t i = 0; i < k; ++i) {
        want_values[(o * k + i) * v.inner + j] = value(order[i]);
        want_indices[(o * k + i) * v.inner + j] = order[i];
      }
    }
  }
  std::vector<ir::Attribute> attrs = {IntAttr("axis", axis)};
  if (opset >= 11) attrs.push_back(IntAttr("largest", largest));
  if (opset < 10) attrs.push_back(IntAttr("k", k));
  ir::Node node = MakeNode("TopK", opset < 10 ? std::vector<std::string>{"x"} : std::vector<std::string>{"x", "k"},
                           {"values", "indices"}, attrs);
  auto out = RunOk(node, opset, opset < 10 ? std::vector<const runtime::Tensor*>{&x}
                                           : std::vector<const runtime::Tensor*>{&x, &kt});
  ASSERT_EQ(out.size(), 2u) << what;
  EXPECT_EQ(out[0].shape(), want_shape) << what;
  EXPECT_EQ(out[1].shape(), want_shape) << what;
  EXPECT_EQ(out[0].dtype(), d) << what;
  EXPECT_EQ(DoublesOf(out[0]), want_values) << what;
  EXPECT_EQ(Values<int64_t>(out[1]), want_indices) << what;
}

TEST(TopKKernel, AgainstReference) {
  for (DataType d : {DataType::kFloat32, DataType::kFloat64, DataType::kFloat16, DataType::kInt32, DataType::kInt64,
                     DataType::kUint8}) {
    for (const auto& shape : kShapes) {
      for (int64_t axis = -static_cast<int64_t>(shape.size()); axis < static_cast<int64_t>(shape.size()); ++axis) {
        const int64_t n = shape[axis < 0 ? axis + shape.size() : axis];
        for (int64_t k : {int64_t{0}, int64_t{1}, n / 2, n}) {
          if (k > n) continue;
          for (int64_t largest : {0, 1}) CheckTopK(d, shape, axis, k, largest, 11);
          if (axis == -1) CheckTopK(d, shape, axis, k, 1, 1);  // k as an attribute
        }
      }
    }
  }
}

TEST(TopKKernel, NaNSortsAsLargest) {
  runtime::Tensor x = F32({5}, {1, NAN, 3, NAN, 2});
  runtime::Tensor k = I64({1}, {3});
  auto out = RunOk(MakeNode("TopK", {"x", "k"}, {"v", "i"}), 11, {&x, &k});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(Values<int64_t>(out[1]), (std::vector<int64_t>{1, 3, 2}));
  out = RunOk(MakeNode("TopK", {"x", "k"}, {"v", "i"}, {IntAttr("largest", 0)}), 11, {&x, &k});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(Values<int64_t>(out[1]), (std::vector<int64_t>{0, 4, 2}));
}

TEST(TopKKernel, Errors) {
  runtime::Tensor x = F32({2, 3}, std::vector<float>(6, 1));
  runtime::Tensor big = I64({1}, {4});
  ExpectRunFails(MakeNode("TopK", {"x", "k"}, {"v", "i"}), 11, {&x, &big}, "out of range");
  runtime::Tensor neg = I64({1}, {-1});
  ExpectRunFails(MakeNode("TopK", {"x", "k"}, {"v", "i"}), 11, {&x, &neg}, "out of range");
  runtime::Tensor two = I64({2}, {1, 1});
  ExpectRunFails(MakeNode("TopK", {"x", "k"}, {"v", "i"}), 11, {&x, &two}, "single value");
  runtime::Tensor one = I64({1}, {1});
  ExpectRunFails(MakeNode("TopK", {"x", "k"}, {"v", "i"}, {IntAttr("axis", 2)}), 11, {&x, &one}, "out of range");
  ExpectRunFails(MakeNode("TopK", {"x"}, {"v", "i"}), 1, {&x}, "'k'");
}

ir::Dim K(int64_t v) { return ir::Dim::Known(v); }
ir::Dim S(const char* name) { return ir::Dim::Symbolic(name); }

TEST(AxisReductionInference, Shapes) {
  ir::TypeInfo x = ops::TensorType(DataType::kFloat32, {S("N"), K(5), S("L")});
  auto r = InferNode(MakeNode("ArgMax", {"x"}, {"y"}, {IntAttr("axis", 1)}), 13, {&x});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(ir::TypeToString((*r)[0]), "int64[N,1,L]");
  r = InferNode(MakeNode("ArgMin", {"x"}, {"y"}, {IntAttr("axis", -1), IntAttr("keepdims", 0)}), 13, {&x});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(ir::TypeToString((*r)[0]), "int64[N,5]");
  EXPECT_FALSE(InferNode(MakeNode("ArgMin", {"x"}, {"y"}, {IntAttr("axis", 3)}), 13, {&x}).ok());

  ir::TypeInfo axis_type = ops::TensorType(DataType::kInt64, std::vector<int64_t>{});
  r = InferNode(MakeNode("CumSum", {"x", "axis"}, {"y"}), 14, {&x, &axis_type});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(ir::TypeToString((*r)[0]), "float32[N,5,L]");
  ir::TypeInfo bad_axis = ops::TensorType(DataType::kFloat32, std::vector<int64_t>{});
  EXPECT_FALSE(InferNode(MakeNode("CumSum", {"x", "axis"}, {"y"}), 14, {&x, &bad_axis}).ok());
  r = InferNode(MakeNode("CumProd", {"x", "axis"}, {"y"}), 26, {&x, &axis_type});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(ir::TypeToString((*r)[0]), "float32[N,5,L]");
  EXPECT_FALSE(InferNode(MakeNode("CumProd", {"x", "axis"}, {"y"}), 26, {&x, &bad_axis}).ok());
  EXPECT_FALSE(InferNode(MakeNode("CumProd", {"x", "axis"}, {"y"}), 25, {&x, &axis_type}).ok());

  runtime::Tensor k = I64({1}, {3});
  ir::Tensor kc = k.AsConstant("k");
  ir::TypeInfo k_type = ops::TensorType(DataType::kInt64, std::vector<int64_t>{1});
  r = InferNode(MakeNode("TopK", {"x", "k"}, {"v", "i"}, {IntAttr("axis", 1)}), 11, {&x, &k_type}, {nullptr, &kc});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(ir::TypeToString((*r)[0]), "float32[N,3,L]");
  EXPECT_EQ(ir::TypeToString((*r)[1]), "int64[N,3,L]");
  r = InferNode(MakeNode("TopK", {"x", "k"}, {"v", "i"}), 11, {&x, &k_type});  // k unknown
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE((*r)[0].shape.dims[2].is_symbolic());
  r = InferNode(MakeNode("TopK", {"x"}, {"v", "i"}, {IntAttr("k", 2), IntAttr("axis", 1)}), 1, {&x});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(ir::TypeToString((*r)[0]), "float32[N,2,L]");
  runtime::Tensor big = I64({1}, {9});
  ir::Tensor bigc = big.AsConstant("k");
  r = InferNode(MakeNode("TopK", {"x", "k"}, {"v", "i"}, {IntAttr("axis", 1)}), 11, {&x, &k_type}, {nullptr, &bigc});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().summary().find("node TopK 'n'"), std::string::npos) << r.status().ToString();
}

}  // namespace
}  // namespace vigil::cpu::testing
