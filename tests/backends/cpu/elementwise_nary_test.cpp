// Variadic Max/Min/Sum/Mean, Where and PRelu against naive references.
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "backends/cpu/elementwise_test_util.h"

namespace vigil::cpu::testing {
namespace {

using Shape = std::vector<int64_t>;

// Flat index into an input of shape `in` for output element `o` of `out`.
int64_t NaiveIndex(const Shape& out, const Shape& in, int64_t o) {
  int64_t index = 0, stride = 1;
  for (size_t k = 0; k < out.size(); ++k) {
    size_t i = out.size() - 1 - k;
    int64_t coord = o % out[i];
    o /= out[i];
    if (k < in.size()) {
      int64_t d = in[in.size() - 1 - k];
      index += (d == 1 ? 0 : coord) * stride;
      stride *= d;
    }
  }
  return index;
}

struct VariadicCase {
  std::vector<Shape> shapes;
  Shape out;
};

TEST(ElementwiseVariadic, MaxMinSumMean) {
  const std::vector<VariadicCase> shapes = {
      {{{13}}, {13}},
      {{{3, 1, 4}, {1, 5, 1}, {4}}, {3, 5, 4}},
      {{{2, 3}, {2, 3}, {2, 3}, {}}, {2, 3}},
      {{{}, {1, 127}}, {1, 127}},
      {{{0, 2}, {1, 2}}, {0, 2}},
  };
  struct OpCase {
    std::string op;
    std::function<double(double, double)> fold;
    bool mean;
  };
  const std::vector<OpCase> ops = {
      {"Max", [](double a, double b) { return std::max(a, b); }, false},
      {"Min", [](double a, double b) { return std::min(a, b); }, false},
      {"Sum", [](double a, double b) { return a + b; }, false},
      {"Mean", [](double a, double b) { return a + b; }, true},
  };
  std::vector<DataType> dtypes = FloatDtypes();
  dtypes.push_back(DataType::kInt32);
  dtypes.push_back(DataType::kUint8);
  for (const auto& op : ops) {
    for (DataType d : dtypes) {
      if (op.mean && !IsFloat(d)) continue;  // Mean is float-only
      for (const auto& c : shapes) {
        std::string what = op.op + " " + DtypeName(d) + " x" + std::to_string(c.shapes.size());
        std::vector<std::vector<double>> values;
        std::vector<runtime::Tensor> tensors;
        std::vector<std::string> names;
        for (size_t i = 0; i < c.shapes.size(); ++i) {
          auto v = RandomValues(static_cast<size_t>(Product(c.shapes[i])), 0, 50, 20 + i, !IsFloat(d));
          for (double& x : v) x = Quantize(d, x);
          tensors.push_back(TensorOf(d, c.shapes[i], v));
          values.push_back(std::move(v));
          names.push_back("x" + std::to_string(i));
        }
        std::vector<const runtime::Tensor*> inputs;
        for (const auto& t : tensors) inputs.push_back(&t);
        auto out = RunOk(MakeNode(op.op, names, {"y"}), 13, inputs);
        ASSERT_EQ(out.size(), 1u) << what;
        EXPECT_EQ(out[0].shape(), c.out) << what;
        std::vector<double> want(static_cast<size_t>(Product(c.out)));
        for (int64_t o = 0; o < static_cast<int64_t>(want.size()); ++o) {
          double acc = values[0][NaiveIndex(c.out, c.shapes[0], o)];
          for (size_t i = 1; i < values.size(); ++i) acc = op.fold(acc, values[i][NaiveIndex(c.out, c.shapes[i], o)]);
          want[o] = op.mean ? acc / static_cast<double>(values.size()) : acc;
        }
        // Sums of several float16 values round at each step.
        Tolerance tol = ToleranceFor(d);
        tol.rtol *= static_cast<double>(values.size());
        ExpectNear(DoublesOf(out[0]), want, tol, what);
      }
    }
  }
}

TEST(ElementwiseVariadic, MaxMinPropagateNaN) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  runtime::Tensor a = TensorOf(DataType::kFloat32, {3}, {nan, 1, 2});
  runtime::Tensor b = TensorOf(DataType::kFloat32, {3}, {1, nan, 0});
  for (const char* op : {"Max", "Min"}) {
    auto out = RunOk(MakeNode(op, {"a", "b"}, {"y"}), 13, {&a, &b});
    ASSERT_EQ(out.size(), 1u);
    ExpectNear(DoublesOf(out[0]), {nan, nan, std::string(op) == "Max" ? 2.0 : 0.0}, {0, 0}, op);
  }
}

TEST(ElementwiseVariadic, MismatchesFail) {
  runtime::Tensor a = F32({2, 3}, {1, 2, 3, 4, 5, 6});
  runtime::Tensor b = F32({2}, {1, 2});
  runtime::Tensor c = I64({3}, {1, 2, 3});
  ExpectRunFails(MakeNode("Sum", {"a", "a", "b"}, {"y"}), 13, {&a, &a, &b}, "[2,3], [2,3], [2]");
  ExpectRunFails(MakeNode("Max", {"a", "c"}, {"y"}), 13, {&a, &c}, "input 1 has dtype int64");
}

// --- Where ------------------------------------------------------------------------

TEST(ElementwiseWhere, BroadcastsThreeInputs) {
  struct Case {
    Shape c, x, y, out;
  };
  const std::vector<Case> cases = {
      {{13}, {13}, {13}, {13}},
      {{2, 1, 4}, {1, 3, 1}, {4}, {2, 3, 4}},
      {{}, {2, 5}, {5}, {2, 5}},
      {{3, 1}, {}, {}, {3, 1}},
      {{0, 1}, {1, 4}, {1}, {0, 4}},
  };
  for (DataType d : {DataType::kFloat32, DataType::kFloat16, DataType::kInt64, DataType::kInt8, DataType::kBool,
                     DataType::kFloat64}) {
    for (const Case& c : cases) {
      std::string what = "Where " + DtypeName(d) + " " + ShapeString(c.out);
      auto cv = RandomValues(static_cast<size_t>(Product(c.c)), 0, 2, 1, true);
      auto xv = RandomValues(static_cast<size_t>(Product(c.x)), 0, 2, 2, true);
      auto yv = RandomValues(static_cast<size_t>(Product(c.y)), 0, 100, 3, true);
      if (d == DataType::kBool) {
        for (double& v : yv) v = v > 50;
      }
      runtime::Tensor tc = TensorOf(DataType::kBool, c.c, cv), tx = TensorOf(d, c.x, xv), ty = TensorOf(d, c.y, yv);
      auto out = RunOk(MakeNode("Where", {"c", "x", "y"}, {"z"}), 16, {&tc, &tx, &ty});
      ASSERT_EQ(out.size(), 1u) << what;
      EXPECT_EQ(out[0].shape(), c.out) << what;
      EXPECT_EQ(out[0].dtype(), d) << what;
      std::vector<double> want(static_cast<size_t>(Product(c.out)));
      for (int64_t o = 0; o < static_cast<int64_t>(want.size()); ++o) {
        want[o] = cv[NaiveIndex(c.out, c.c, o)] != 0 ? xv[NaiveIndex(c.out, c.x, o)] : yv[NaiveIndex(c.out, c.y, o)];
      }
      ExpectNear(DoublesOf(out[0]), want, {0, 0}, what);
    }
  }
}

TEST(ElementwiseWhere, BadInputsFail) {
  runtime::Tensor c = MakeTensor<uint8_t>(DataType::kBool, {2}, {1, 0});
  runtime::Tensor notbool = F32({2}, {1, 0});
  runtime::Tensor x = F32({2}, {1, 2});
  runtime::Tensor y64 = I64({2}, {1, 2});
  runtime::Tensor y3 = F32({3}, {1, 2, 3});
  ExpectRunFails(MakeNode("Where", {"c", "x", "y"}, {"z"}), 16, {&notbool, &x, &x}, "expected bool");
  ExpectRunFails(MakeNode("Where", {"c", "x", "y"}, {"z"}), 16, {&c, &x, &y64}, "input 2 (Y) has dtype int64");
  ExpectRunFails(MakeNode("Where", {"c", "x", "y"}, {"z"}), 16, {&c, &x, &y3}, "cannot broadcast");
}

// --- PRelu ------------------------------------------------------------------------

TEST(ElementwisePRelu, SlopeShapes) {
  const Shape x_shape = {2, 3, 4, 5};
  struct Case {
    Shape slope;
    Shape as_broadcast;  // the slope's shape as applied to X
  };
  const std::vector<Case> cases = {
      {{3, 1, 1}, {3, 1, 1}}, {{5}, {5}}, {{1}, {1}}, {{}, {}}, {{2, 3, 4, 5}, {2, 3, 4, 5}},
      {{3}, {3, 1, 1}},  // 1-D slope matching one dim of X: applied along it (ONNX reference)
  };
  for (DataType d : {DataType::kFloat32, DataType::kFloat64, DataType::kFloat16, DataType::kInt32}) {
    for (const Case& c : cases) {
      std::string what = "PRelu " + DtypeName(d) + " slope " + ShapeString(c.slope);
      auto xv = RandomValues(static_cast<size_t>(Product(x_shape)), -5, 5, 4, !IsFloat(d));
      auto sv = RandomValues(static_cast<size_t>(Product(c.slope)), -1, 1, 5, false);
      if (!IsFloat(d)) {
        for (double& v : sv) v = std::round(v * 3);
      }
      for (double& v : xv) v = Quantize(d, v);
      for (double& v : sv) v = Quantize(d, v);
      runtime::Tensor tx = TensorOf(d, x_shape, xv), ts = TensorOf(d, c.slope, sv);
      auto out = RunOk(MakeNode("PRelu", {"x", "s"}, {"y"}), 16, {&tx, &ts});
      ASSERT_EQ(out.size(), 1u) << what;
      EXPECT_EQ(out[0].shape(), x_shape) << what;
      std::vector<double> want(xv.size());
      for (int64_t o = 0; o < static_cast<int64_t>(want.size()); ++o) {
        double x = xv[o], s = sv[NaiveIndex(x_shape, c.as_broadcast, o)];
        want[o] = x > 0 ? x : x * s;
      }
      ExpectNear(DoublesOf(out[0]), want, ToleranceFor(d), what);
    }
  }
}

TEST(ElementwisePRelu, Opset6SlopeIsPerChannel) {
  // [3] against [2,3,3]: per channel at opset 6 (dim 1), numpy's trailing dim at 7+.
  auto xv = RandomValues(18, -5, 5, 4);
  runtime::Tensor x = TensorOf(DataType::kFloat32, {2, 3, 3}, xv);
  runtime::Tensor s = F32({3}, {0.5f, 0.25f, 2.0f});
  for (int opset : {6, 7}) {
    auto out = RunOk(MakeNode("PRelu", {"x", "s"}, {"y"}), opset, {&x, &s});
    ASSERT_EQ(out.size(), 1u);
    std::vector<double> want(18);
    for (int64_t i = 0; i < 18; ++i) {
      double slope = DoublesOf(s)[opset == 6 ? (i / 3) % 3 : i % 3];
      want[i] = xv[i] > 0 ? xv[i] : xv[i] * slope;
    }
    ExpectNear(DoublesOf(out[0]), want, ToleranceFor(DataType::kFloat32), "PRelu-" + std::to_string(opset));
  }
}

TEST(ElementwisePRelu, BadSlopeFails) {
  runtime::Tensor x = F32({2, 3}, {1, 2, 3, 4, 5, 6});
  runtime::Tensor s7 = F32({7}, {1, 1, 1, 1, 1, 1, 1});
  runtime::Tensor s23x = F32({1, 2, 3}, {1, 1, 1, 1, 1, 1});
  ExpectRunFails(MakeNode("PRelu", {"x", "s"}, {"y"}), 16, {&x, &s7}, "slope of shape [7]");
  // Unidirectional: the slope may not grow X.
  ExpectRunFails(MakeNode("PRelu", {"x", "s"}, {"y"}), 16, {&x, &s23x}, "does not broadcast to X");
}

}  // namespace
}  // namespace vigil::cpu::testing
