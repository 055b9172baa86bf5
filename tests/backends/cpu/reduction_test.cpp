// CPU kernels and shape inference of the Reduce* ops, against float64
// loops over each output element's set of input elements. ArgMax, ArgMin,
// CumSum and TopK: reduction_axis_test.cpp.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "backends/cpu/elementwise_test_util.h"
#include "backends/cpu/kernel_test_util.h"

namespace vigil::cpu::testing {
namespace {

const std::vector<std::string> kReduceOps = {"ReduceSum", "ReduceMean",  "ReduceMax",    "ReduceMin",
                                             "ReduceProd", "ReduceL1",   "ReduceL2",     "ReduceLogSum",
                                             "ReduceLogSumExp", "ReduceSumSquare"};

// The first opset where `op` takes axes as an input.
int AxesInputSince(const std::string& op) { return op == "ReduceSum" ? 13 : 18; }

bool FloatOnly(const std::string& op) { return op == "ReduceLogSum" || op == "ReduceLogSumExp"; }

// One output element from its set, in float64 (integers: as numpy computes
// them, truncating mean and L2).
double ReduceSet(const std::string& op, const std::vector<double>& v, bool integral) {
  const double inf = std::numeric_limits<double>::infinity();
  double s = 0;
  if (op == "ReduceProd") {
    s = 1;
    for (double x : v) s *= x;
  } else if (op == "ReduceMax") {
    s = -inf;
    for (double x : v) s = std::max(s, x);
  } else if (op == "ReduceMin") {
    s = inf;
    for (double x : v) s = std::min(s, x);
  } else if (op == "ReduceL1") {
    for (double x : v) s += std::fabs(x);
  } else if (op == "ReduceL2" || op == "ReduceSumSquare") {
    for (double x : v) s += x * x;
    if (op == "ReduceL2") s = std::sqrt(s);
  } else if (op == "ReduceLogSumExp") {
    for (double x : v) s += std::exp(x);
    s = std::log(s);
  } else {
    for (double x : v) s += x;
    if (op == "ReduceMean") s /= static_cast<double>(v.size());
    if (op == "ReduceLogSum") s = std::log(s);
  }
  return integral ? std::trunc(s) : s;
}

// Output shape and values: each output element reduces the input elements
// that agree with it on every kept dim.
std::vector<double> ReferenceReduce(const std::string& op, const std::vector<int64_t>& shape,
                                    const std::vector<double>& x, const std::vector<bool>& reduced, bool keepdims,
                                    bool integral, std::vector<int64_t>* out_shape) {
  out_shape->clear();
  std::vector<int64_t> kept_dims;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (!reduced[d]) kept_dims.push_back(shape[d]);
    if (!reduced[d] || keepdims) out_shape->push_back(reduced[d] ? 1 : shape[d]);
  }
  std::vector<std::vector<double>> sets(Product(kept_dims));
  for (int64_t i = 0; i < static_cast<int64_t>(x.size()); ++i) {
    int64_t rest = i, out = 0, stride = 1;
    for (size_t d = shape.size(); d-- > 0;) {
      const int64_t idx = rest % shape[d];
      rest /= shape[d];
      if (!reduced[d]) {
        out += idx * stride;
        stride *= shape[d];
      }
    }
    sets[out].push_back(x[i]);
  }
  std::vector<double> want;
  for (const auto& s : sets) want.push_back(ReduceSet(op, s, integral));
  return want;
}

// A Reduce node with `axes` as an attribute (opset < AxesInputSince) or as
// input 1; `axes` null means not given.
struct ReduceRun {
  ir::Node node;
  runtime::Tensor axes_tensor;
  bool axes_input = false;
};

ReduceRun MakeReduce(const std::string& op, int64_t opset, const std::vector<int64_t>* axes, int64_t keepdims,
                     int64_t noop = 0) {
  ReduceRun r;
  std::vector<ir::Attribute> attrs = {IntAttr("keepdims", keepdims)};
  r.axes_input = opset >= AxesInputSince(op) && axes != nullptr;
  if (opset >= AxesInputSince(op)) {
    attrs.push_back(IntAttr("noop_with_empty_axes", noop));
    if (axes) r.axes_tensor = I64({static_cast<int64_t>(axes->size())}, *axes);
  } else if (axes) {
    attrs.push_back(IntsAttr("axes", *axes));
  }
  r.node = MakeNode(op, r.axes_input ? std::vector<std::string>{"x", "axes"} : std::vector<std::string>{"x"}, {"y"},
                    attrs);
  return r;
}

std::vector<double> OpValues(const std::string& op, DataType d, int64_t n, uint32_t seed) {
  std::vector<double> v;
  if (!IsFloat(d)) {
    // Small integers keep every product and sum exact in float64.
    v = op == "ReduceProd" ? RandomValues(n, -1, 2, seed, true) : RandomValues(n, -3, 4, seed, true);
  } else if (op == "ReduceLogSum") {
    v = RandomValues(n, 0.1, 2, seed);  // positive sums
  } else {
    v = RandomValues(n, -1, 1, seed);
  }
  for (double& x : v) x = Quantize(d, x);
  return v;
}

void CheckReduce(const std::string& op, DataType d, int64_t opset, const std::vector<int64_t>& shape,
                 const std::vector<int64_t>* axes, int64_t keepdims) {
  std::string what = op + " opset " + std::to_string(opset) + " " + DtypeName(d) + " " + ShapeString(shape) +
                     " axes=" + (axes ? ShapeString(*axes) : "none") + " keepdims=" + std::to_string(keepdims);
  std::vector<double> xv = OpValues(op, d, Product(shape), 7);
  runtime::Tensor x = TensorOf(d, shape, xv);
  ReduceRun run = MakeReduce(op, opset, axes, keepdims);
  std::vector<const runtime::Tensor*> inputs = {&x};
  if (run.axes_input) inputs.push_back(&run.axes_tensor);
  const int64_t rank = static_cast<int64_t>(shape.size());
  std::vector<bool> reduced(rank, !axes || axes->empty());
  if (axes) {
    for (int64_t a : *axes) reduced[a < 0 ? a + rank : a] = true;
  }
  std::vector<int64_t> want_shape;
  std::vector<double> want = ReferenceReduce(op, shape, xv, reduced, keepdims != 0, !IsFloat(d), &want_shape);
  auto out = RunOk(run.node, opset, inputs);
  ASSERT_EQ(out.size(), 1u) << what;
  EXPECT_EQ(out[0].dtype(), d) << what;
  EXPECT_EQ(out[0].shape(), want_shape) << what;
  std::vector<double> got = DoublesOf(out[0]);
  for (size_t i = 0; i < got.size() && i < want.size(); ++i) {
    // Empty sets of integers: max/min give the type's lowest/highest value
    // (EmptySetValues checks them), the mean is undefined (0 here).
    if (!IsFloat(d) && !std::isfinite(want[i])) {
      want[i] = op == "ReduceMean" ? 0 : got[i];
    } else {
      want[i] = Quantize(d, want[i]);  // the result rounded to dtype
    }
  }
  ExpectNear(got, want, ToleranceFor(d), what);
}

TEST(ReduceKernels, AllOpsAxesAndKeepdimsAgainstReference) {
  const std::vector<std::vector<int64_t>> shapes = {{3, 4, 5}, {13, 1, 7}, {2, 0, 3}, {127}, {}};
  const std::vector<std::vector<int64_t>> axes_sets = {{}, {0}, {-1}, {1}, {0, 2}, {2, 0, 1}, {1, 2}};
  for (const std::string& op : kReduceOps) {
    std::vector<DataType> dtypes = FloatDtypes();
    if (!FloatOnly(op)) {
      dtypes.push_back(DataType::kInt32);
      dtypes.push_back(DataType::kInt64);
    }
    if (op == "ReduceMax" || op == "ReduceMin") dtypes.push_back(DataType::kInt8);  // 8-bit: only these
    for (DataType d : dtypes) {
      for (int64_t opset : {AxesInputSince(op) - 1, AxesInputSince(op)}) {
        for (const auto& shape : shapes) {
          for (int64_t keepdims : {0, 1}) {
            CheckReduce(op, d, opset, shape, nullptr, keepdims);
            for (const auto& axes : axes_sets) {
              const int64_t rank = static_cast<int64_t>(shape.size());
              bool fits = true;
              for (int64_t a : axes) fits = fits && a < rank && -a <= rank;
              if (fits) CheckReduce(op, d, opset, shape, &axes, keepdims);
            }
          }
        }
      }
    }
  }
}

std::vector<double> RunReduce(const std::string& op, DataType d, const std::vector<int64_t>& shape,
                              const std::vector<double>& values, const std::vector<int64_t>* axes, int64_t opset = 18,
                              int64_t keepdims = 1, int64_t noop = 0) {
  runtime::Tensor x = TensorOf(d, shape, values);
  ReduceRun run = MakeReduce(op, opset, axes, keepdims, noop);
  std::vector<const runtime::Tensor*> inputs = {&x};
  if (run.axes_input) inputs.push_back(&run.axes_tensor);
  auto out = RunOk(run.node, opset, inputs);
  return out.empty() ? std::vector<double>{} : DoublesOf(out[0]);
}

TEST(ReduceKernels, EmptySetValues) {
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<int64_t> axis1 = {1};
  const std::vector<std::pair<std::string, double>> floats = {
      {"ReduceSum", 0},     {"ReduceProd", 1},    {"ReduceMax", -inf},     {"ReduceMin", inf},
      {"ReduceL1", 0},      {"ReduceL2", 0},      {"ReduceSumSquare", 0},  {"ReduceLogSum", -inf},
      {"ReduceLogSumExp", -inf}};
  for (const auto& [op, value] : floats) {
    std::vector<double> got = RunReduce(op, DataType::kFloat32, {2, 0, 3}, {}, &axis1);
    ExpectNear(got, std::vector<double>(6, value), {0, 0}, op + " of an empty set");
  }
  std::vector<double> mean = RunReduce("ReduceMean", DataType::kFloat32, {2, 0}, {}, &axis1);
  ASSERT_EQ(mean.size(), 2u);
  EXPECT_TRUE(std::isnan(mean[0]) && std::isnan(mean[1]));
  EXPECT_EQ(RunReduce("ReduceMax", DataType::kInt32, {0}, {}, nullptr), std::vector<double>{INT32_MIN});
  EXPECT_EQ(RunReduce("ReduceMin", DataType::kUint8, {0}, {}, nullptr), std::vector<double>{255});
  EXPECT_EQ(RunReduce("ReduceMean", DataType::kInt64, {0}, {}, nullptr), std::vector<double>{0});
}

TEST(ReduceKernels, NoopWithEmptyAxes) {
  const std::vector<double> x = {1, -2, 4, 0.5};
  const std::vector<int64_t> none;
  // No axes and noop_with_empty_axes: every set has one element, so only the
  // elementwise steps remain.
  const std::vector<std::pair<std::string, std::vector<double>>> cases = {
      {"ReduceSum", {1, -2, 4, 0.5}},       {"ReduceMean", {1, -2, 4, 0.5}}, {"ReduceMax", {1, -2, 4, 0.5}},
      {"ReduceSumSquare", {1, 4, 16, 0.25}}, {"ReduceL1", {1, 2, 4, 0.5}},    {"ReduceL2", {1, 2, 4, 0.5}},
      {"ReduceLogSumExp", {1, -2, 4, 0.5}}};
  for (const auto& [op, want] : cases) {
    ExpectNear(RunReduce(op, DataType::kFloat64, {2, 2}, x, nullptr, 18, 1, 1), want, {1e-12, 1e-12}, op);
    ExpectNear(RunReduce(op, DataType::kFloat64, {2, 2}, x, &none, 18, 0, 1), want, {1e-12, 1e-12}, op);
  }
  // An empty axes input without noop reduces everything.
  EXPECT_EQ(RunReduce("ReduceSum", DataType::kFloat64, {2, 2}, x, &none, 18, 0, 0), std::vector<double>{3.5});
}

TEST(ReduceKernels, SpecialValues) {
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<int64_t> all = {0};
  // Shifted by the largest finite value: no overflow for large inputs.
  ExpectNear(RunReduce("ReduceLogSumExp", DataType::kFloat32, {2}, {1000, 1000}, &all), {1000 + std::log(2.0)},
             {1e-4, 1e-6}, "LogSumExp of large values");
  EXPECT_EQ(RunReduce("ReduceLogSumExp", DataType::kFloat32, {2}, {inf, 1}, &all), std::vector<double>{inf});
  EXPECT_EQ(RunReduce("ReduceLogSumExp", DataType::kFloat32, {2}, {-inf, -inf}, &all), std::vector<double>{-inf});
  EXPECT_TRUE(std::isnan(RunReduce("ReduceLogSumExp", DataType::kFloat32, {2}, {NAN, 1}, &all).at(0)));
  // NaN propagates through max and min wherever it is.
  for (const char* op : {"ReduceMax", "ReduceMin"}) {
    EXPECT_TRUE(std::isnan(RunReduce(op, DataType::kFloat32, {3}, {1, NAN, 2}, &all).at(0))) << op;
    EXPECT_TRUE(std::isnan(RunReduce(op, DataType::kFloat32, {3}, {NAN, 1, 2}, &all).at(0))) << op;
  }
  // Integer sums wrap like numpy's: int8 100 + 100 = -56.
  EXPECT_EQ(RunReduce("ReduceSum", DataType::kInt8, {2}, {100, 100}, &all), std::vector<double>{-56});
  EXPECT_EQ(RunReduce("ReduceMean", DataType::kInt32, {2}, {-3, 0}, &all), std::vector<double>{-1});
  EXPECT_EQ(RunReduce("ReduceL1", DataType::kInt64, {2}, {-3, 2}, &all), std::vector<double>{5});
  // bool max/min (opset 20): any / all.
  EXPECT_EQ(RunReduce("ReduceMax", DataType::kBool, {2, 2}, {0, 1, 0, 0}, &all, 20, 0),
            (std::vector<double>{0, 1}));
  EXPECT_EQ(RunReduce("ReduceMin", DataType::kBool, {2, 2}, {1, 1, 0, 1}, &all, 20, 0),
            (std::vector<double>{0, 1}));
}

TEST(ReduceKernels, Errors) {
  runtime::Tensor x = F32({2, 3}, std::vector<float>(6, 1));
  ExpectRunFails(MakeNode("ReduceSum", {"x"}, {"y"}, {IntsAttr("axes", {2})}), 11, {&x}, "out of range");
  runtime::Tensor axes = I64({1}, {-3});
  ExpectRunFails(MakeNode("ReduceMean", {"x", "axes"}, {"y"}), 18, {&x, &axes}, "out of range");
  runtime::Tensor float_axes = F32({1}, {0});
  ExpectRunFails(MakeNode("ReduceSum", {"x", "axes"}, {"y"}), 13, {&x, &float_axes}, "int64");
  runtime::Tensor ints = I64({2}, {1, 2});
  auto r = RunKernel(MakeNode("ReduceLogSum", {"x"}, {"y"}), 13, {&ints});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kUnsupported);
  runtime::Tensor b = TensorOf(DataType::kBool, {2}, {1, 0});
  r = RunKernel(MakeNode("ReduceSum", {"x"}, {"y"}), 13, {&b});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kUnsupported);
}

ir::Dim K(int64_t v) { return ir::Dim::Known(v); }
ir::Dim S(const char* name) { return ir::Dim::Symbolic(name); }

TEST(ReduceInference, Shapes) {
  ir::TypeInfo x = ops::TensorType(DataType::kFloat32, {S("N"), K(3), S("L")});
  auto infer = [&](const ir::Node& node, int64_t opset, const ir::TypeInfo* axes_type = nullptr,
                   const ir::Tensor* axes_value = nullptr) {
    std::vector<const ir::TypeInfo*> types = {&x};
    std::vector<const ir::Tensor*> values = {nullptr};
    if (node.inputs.size() > 1) {
      types.push_back(axes_type);
      values.push_back(axes_value);
    }
    auto r = InferNode(node, opset, types, values);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? ir::TypeToString((*r)[0]) : std::string("error");
  };
  EXPECT_EQ(infer(MakeNode("ReduceMean", {"x"}, {"y"}, {IntsAttr("axes", {-1})}), 13), "float32[N,3,1]");
  EXPECT_EQ(infer(MakeNode("ReduceMean", {"x"}, {"y"}, {IntsAttr("axes", {1}), IntAttr("keepdims", 0)}), 13),
            "float32[N,L]");
  EXPECT_EQ(infer(MakeNode("ReduceMax", {"x"}, {"y"}, {IntAttr("keepdims", 0)}), 13), "float32[]");

  runtime::Tensor axes_t = I64({1}, {0});
  ir::Tensor axes_c = axes_t.AsConstant("axes");
  ir::TypeInfo axes_type = ops::TensorType(DataType::kInt64, std::vector<int64_t>{1});
  EXPECT_EQ(infer(MakeNode("ReduceSum", {"x", "axes"}, {"y"}), 13, &axes_type, &axes_c), "float32[1,3,L]");
  // Axes known only at run time: the rank stays with keepdims.
  ir::Node dynamic = MakeNode("ReduceSum", {"x", "axes"}, {"y"});
  auto r = InferNode(dynamic, 13, {&x, &axes_type});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)[0].shape.dims.size(), 3u);
  ir::Node dynamic_flat = MakeNode("ReduceSum", {"x", "axes"}, {"y"}, {IntAttr("keepdims", 0)});
  r = InferNode(dynamic_flat, 13, {&x, &axes_type});
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE((*r)[0].shape.rank_known);
  // noop_with_empty_axes without axes: the input's type.
  EXPECT_EQ(infer(MakeNode("ReduceL2", {"x"}, {"y"}, {IntAttr("noop_with_empty_axes", 1)}), 18), "float32[N,3,L]");
  EXPECT_EQ(infer(MakeNode("ReduceL2", {"x"}, {"y"}), 18), "float32[1,1,1]");
}

TEST(ReduceInference, Errors) {
  ir::TypeInfo x = ops::TensorType(DataType::kFloat32, {K(2), K(3)});
  auto r = InferNode(MakeNode("ReduceSum", {"x"}, {"y"}, {IntsAttr("axes", {2})}), 11, {&x});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().summary().find("node ReduceSum 'n'"), std::string::npos) << r.status().ToString();
  // From opset 18 axes is an input.
  r = InferNode(MakeNode("ReduceProd", {"x"}, {"y"}, {IntsAttr("axes", {0})}), 18, {&x});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().summary().find("input"), std::string::npos);
  // Before opset 13, ReduceSum has no axes input.
  ir::TypeInfo axes_type = ops::TensorType(DataType::kInt64, std::vector<int64_t>{1});
  EXPECT_FALSE(InferNode(MakeNode("ReduceSum", {"x", "axes"}, {"y"}), 11, {&x, &axes_type}).ok());
}

}  // namespace
}  // namespace vigil::cpu::testing
