// Selection ops: Unique, Compress and ReverseSequence, against plain
// references written from the spec (Unique's is a quadratic first-occurrence
// scan, sorted afterwards, not the kernel's sort-and-group), on odd sizes and
// many dtypes, plus their error paths and shape inference.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "backends/cpu/elementwise_test_util.h"

namespace vigil::cpu::testing {
namespace {

using Shape = std::vector<int64_t>;

void ExpectError(const ir::Node& node, int64_t opset, const std::vector<const runtime::Tensor*>& inputs,
                 const std::string& needle) {
  ExpectRunFails(node, opset, inputs, needle);
}

// ---------------------------------------------------------------- Unique

struct UniqueResult {
  Shape y_shape;
  std::vector<double> y, indices, inverse, counts;
};

// Slices along `axis` of `shape` ([outer, n, inner]); without an axis the
// flattened elements.
UniqueResult UniqueReference(const std::vector<double>& x, Shape shape, bool has_axis, int64_t axis, bool sorted) {
  if (!has_axis) {
    shape = {static_cast<int64_t>(x.size())};
    axis = 0;
  }
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < axis; ++i) outer *= shape[i];
  for (size_t i = axis + 1; i < shape.size(); ++i) inner *= shape[i];
  const int64_t n = shape[axis];
  auto slice = [&](int64_t j) {
    std::vector<double> s;
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) s.push_back(x[(o * n + j) * inner + i]);
    return s;
  };
  auto same = [](const std::vector<double>& a, const std::vector<double>& b) {
    for (size_t i = 0; i < a.size(); ++i) {
      if (!(a[i] == b[i] || (std::isnan(a[i]) && std::isnan(b[i])))) return false;
    }
    return true;
  };
  // First-occurrence order.
  std::vector<std::vector<double>> uniq;
  std::vector<int64_t> first, count, inverse;
  for (int64_t j = 0; j < n; ++j) {
    const std::vector<double> s = slice(j);
    size_t k = 0;
    while (k < uniq.size() && !same(uniq[k], s)) ++k;
    if (k == uniq.size()) {
      uniq.push_back(s);
      first.push_back(j);
      count.push_back(0);
    }
    ++count[k];
    inverse.push_back(static_cast<int64_t>(k));
  }
  std::vector<size_t> perm(uniq.size());  // output position -> first-occurrence group
  std::iota(perm.begin(), perm.end(), size_t{0});
  if (sorted) {
    auto less = [](double a, double b) {  // NaN last
      if (std::isnan(a) || std::isnan(b)) return !std::isnan(a) && std::isnan(b);
      return a < b;
    };
    std::sort(perm.begin(), perm.end(), [&](size_t a, size_t b) {
      return std::lexicographical_compare(uniq[a].begin(), uniq[a].end(), uniq[b].begin(), uniq[b].end(), less);
    });
  }
  std::vector<int64_t> where(perm.size());
  for (size_t p = 0; p < perm.size(); ++p) where[perm[p]] = static_cast<int64_t>(p);
  UniqueResult r;
  r.y_shape = shape;
  r.y_shape[axis] = static_cast<int64_t>(perm.size());
  const int64_t m = static_cast<int64_t>(perm.size());
  r.y.resize(static_cast<size_t>(outer * m * inner));
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t p = 0; p < m; ++p)
      for (int64_t i = 0; i < inner; ++i) r.y[(o * m + p) * inner + i] = uniq[perm[p]][o * inner + i];
  for (size_t p = 0; p < perm.size(); ++p) {
    r.indices.push_back(static_cast<double>(first[perm[p]]));
    r.counts.push_back(static_cast<double>(count[perm[p]]));
  }
  for (int64_t k : inverse) r.inverse.push_back(static_cast<double>(where[k]));
  return r;
}

ir::Node UniqueNode(bool has_axis, int64_t axis, int64_t sorted, size_t outputs = 4) {
  std::vector<ir::Attribute> attrs = {IntAttr("sorted", sorted)};
  if (has_axis) attrs.push_back(IntAttr("axis", axis));
  std::vector<std::string> outs = {"y", "indices", "inverse", "counts"};
  outs.resize(outputs);
  return MakeNode("Unique", {"x"}, outs, attrs);
}

void CheckUnique(DataType dt, const Shape& shape, const std::vector<double>& x, bool has_axis, int64_t axis,
                 bool sorted) {
  SCOPED_TRACE(DtypeName(dt) + " shape " + ShapeString(shape) + (has_axis ? " axis " + std::to_string(axis) : "") +
               (sorted ? " sorted" : " unsorted"));
  runtime::Tensor t = TensorOf(dt, shape, x);
  std::vector<double> stored = DoublesOf(t);
  const int64_t norm = axis < 0 ? axis + static_cast<int64_t>(shape.size()) : axis;
  UniqueResult want = UniqueReference(stored, shape, has_axis, norm, sorted);
  auto out = RunOk(UniqueNode(has_axis, axis, sorted ? 1 : 0), 11, {&t});
  ASSERT_EQ(out.size(), 4u);
  EXPECT_EQ(out[0].dtype(), dt);
  EXPECT_EQ(out[0].shape(), want.y_shape);
  ExpectNear(DoublesOf(out[0]), want.y, {0, 0}, "Y");
  for (size_t i = 1; i < 4; ++i) EXPECT_EQ(out[i].dtype(), DataType::kInt64);
  ExpectNear(DoublesOf(out[1]), want.indices, {0, 0}, "indices");
  ExpectNear(DoublesOf(out[2]), want.inverse, {0, 0}, "inverse_indices");
  ExpectNear(DoublesOf(out[3]), want.counts, {0, 0}, "counts");
}

TEST(UniqueKernel, FlattenedAgainstFirstOccurrenceScan) {
  std::vector<DataType> dtypes = FloatDtypes();
  for (DataType d : IntDtypes()) dtypes.push_back(d);
  for (DataType dt : dtypes) {
    for (bool sorted : {true, false}) {
      const Shape shape = {127};
      std::vector<double> x = RandomValues(127, 0, 23, 11, true);
      CheckUnique(dt, shape, x, false, 0, sorted);
      CheckUnique(dt, {13, 1, 7}, RandomValues(91, 0, 9, 5, true), false, 0, sorted);
    }
  }
}

TEST(UniqueKernel, AlongEveryAxis) {
  // Slices repeat: slice j of axis 1 is pattern (j * 5) % 4 of a [3, 13, 5] input.
  const Shape shape = {3, 13, 5};
  std::vector<double> x(3 * 13 * 5);
  for (int64_t o = 0; o < 3; ++o)
    for (int64_t j = 0; j < 13; ++j)
      for (int64_t i = 0; i < 5; ++i) x[(o * 13 + j) * 5 + i] = static_cast<double>(((j * 5) % 4 + o * i) % 3);
  for (DataType dt : {DataType::kFloat32, DataType::kInt64, DataType::kUint8, DataType::kBfloat16}) {
    for (bool sorted : {true, false}) {
      for (int64_t axis : {0, 1, 2, -1, -3}) CheckUnique(dt, shape, x, true, axis, sorted);
    }
  }
}

TEST(UniqueKernel, BoolInput) {
  std::vector<double> x = {1, 0, 0, 1, 1};
  CheckUnique(DataType::kBool, {5}, x, false, 0, true);
  CheckUnique(DataType::kBool, {5}, x, false, 0, false);
}

TEST(UniqueKernel, SignedZerosAreOneValueAndNansSortLast) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  runtime::Tensor t = TensorOf(DataType::kFloat32, {6}, {nan, 0.0, 2.0, -0.0, nan, -1.0});
  auto out = RunOk(UniqueNode(false, 0, 1), 11, {&t});
  ASSERT_EQ(out.size(), 4u);
  ExpectNear(DoublesOf(out[0]), {-1, 0, 2, nan}, {0, 0}, "Y");
  ExpectNear(DoublesOf(out[1]), {5, 1, 2, 0}, {0, 0}, "indices");
  ExpectNear(DoublesOf(out[2]), {3, 1, 2, 1, 3, 0}, {0, 0}, "inverse");
  ExpectNear(DoublesOf(out[3]), {1, 2, 1, 2}, {0, 0}, "counts");
}

TEST(UniqueKernel, OnlyTheWantedOutputsAndEmptyInput) {
  runtime::Tensor t = I64({4}, {3, 1, 3, 2});
  auto out = RunOk(UniqueNode(false, 0, 0, 1), 11, {&t});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(Values<int64_t>(out[0]), (std::vector<int64_t>{3, 1, 2}));
  runtime::Tensor empty = I64({0, 3}, {});
  auto e = RunOk(UniqueNode(false, 0, 1), 11, {&empty});
  ASSERT_EQ(e.size(), 4u);
  EXPECT_EQ(e[0].shape(), Shape{0});
  EXPECT_EQ(e[2].shape(), Shape{0});
}

TEST(UniqueKernel, Errors) {
  runtime::Tensor t = I64({2, 3}, {1, 2, 3, 4, 5, 6});
  ExpectError(UniqueNode(true, 2, 1), 11, {&t}, "axis 2 is out of range");
  ExpectError(UniqueNode(true, -3, 1), 11, {&t}, "axis -3 is out of range");
  ExpectError(UniqueNode(false, 0, 2), 11, {&t}, "sorted is 2");
  runtime::Tensor scalar = I64({}, {7});
  ExpectError(UniqueNode(true, 0, 1), 11, {&scalar}, "scalar");
}

TEST(UniqueInfer, Shapes) {
  ir::TypeInfo x = ops::TensorType(DataType::kFloat32, std::vector<ir::Dim>{ir::Dim::Known(4), ir::Dim::Known(6)});
  auto flat = InferNode(UniqueNode(false, 0, 1), 11, {&x});
  ASSERT_TRUE(flat.ok()) << flat.status().ToString();
  ASSERT_EQ(flat->size(), 4u);
  ASSERT_EQ((*flat)[0].shape.dims.size(), 1u);
  EXPECT_TRUE((*flat)[0].shape.dims[0].is_symbolic());
  EXPECT_EQ((*flat)[1].shape.dims[0].param, (*flat)[0].shape.dims[0].param);
  EXPECT_EQ((*flat)[2].shape.dims[0].value, 24);
  EXPECT_EQ((*flat)[3].elem_type, DataType::kInt64);
  auto along = InferNode(UniqueNode(true, -1, 1), 11, {&x});
  ASSERT_TRUE(along.ok()) << along.status().ToString();
  ASSERT_EQ((*along)[0].shape.dims.size(), 2u);
  EXPECT_EQ((*along)[0].shape.dims[0].value, 4);
  EXPECT_TRUE((*along)[0].shape.dims[1].is_symbolic());
  EXPECT_EQ((*along)[2].shape.dims[0].value, 6);
  auto bad = InferNode(UniqueNode(true, 2, 1), 11, {&x});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().summary().find("node Unique"), std::string::npos) << bad.status().summary();
}

// ---------------------------------------------------------------- Compress

ir::Node CompressNode(bool has_axis, int64_t axis) {
  std::vector<ir::Attribute> attrs;
  if (has_axis) attrs.push_back(IntAttr("axis", axis));
  return MakeNode("Compress", {"x", "condition"}, {"y"}, attrs);
}

// Keeps slice j along the axis where j < cond.size() and cond[j].
std::vector<double> CompressReference(const std::vector<double>& x, const Shape& shape, int64_t axis,
                                      const std::vector<double>& cond, Shape* out_shape) {
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < axis; ++i) outer *= shape[i];
  for (size_t i = axis + 1; i < shape.size(); ++i) inner *= shape[i];
  const int64_t n = shape[axis];
  std::vector<double> y;
  int64_t kept = 0;
  for (size_t j = 0; j < cond.size(); ++j) kept += cond[j] != 0;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < n; ++j)
      if (j < static_cast<int64_t>(cond.size()) && cond[j] != 0)
        for (int64_t i = 0; i < inner; ++i) y.push_back(x[(o * n + j) * inner + i]);
  *out_shape = shape;
  (*out_shape)[axis] = kept;
  return y;
}

TEST(CompressKernel, EveryAxisAndFlattened) {
  const Shape shape = {13, 5, 3};
  const std::vector<double> x = RandomValues(13 * 5 * 3, -50, 50, 3, true);
  for (DataType dt : {DataType::kFloat32, DataType::kFloat64, DataType::kBfloat16, DataType::kInt8, DataType::kInt64,
                      DataType::kBool}) {
    runtime::Tensor xt = TensorOf(dt, shape, x);
    const std::vector<double> stored = DoublesOf(xt);
    for (int64_t axis : {0, 1, 2, -1, -3}) {
      const int64_t norm = axis < 0 ? axis + 3 : axis;
      for (int64_t len : {shape[norm], shape[norm] - 2, int64_t{0}}) {
        SCOPED_TRACE(DtypeName(dt) + " axis " + std::to_string(axis) + " condition length " + std::to_string(len));
        std::vector<double> cond = RandomValues(static_cast<size_t>(len), 0, 2, 9 + len, true);
        runtime::Tensor ct = TensorOf(DataType::kBool, {len}, cond);
        Shape want_shape;
        std::vector<double> want = CompressReference(stored, shape, norm, cond, &want_shape);
        auto out = RunOk(CompressNode(true, axis), 11, {&xt, &ct});
        ASSERT_EQ(out.size(), 1u);
        EXPECT_EQ(out[0].shape(), want_shape);
        ExpectNear(DoublesOf(out[0]), want, {0, 0}, "Y");
      }
    }
    // No axis: the flattened input.
    std::vector<double> cond = RandomValues(150, 0, 2, 4, true);
    runtime::Tensor ct = TensorOf(DataType::kBool, {150}, cond);
    Shape want_shape;
    std::vector<double> want = CompressReference(stored, {195}, 0, cond, &want_shape);
    auto out = RunOk(CompressNode(false, 0), 11, {&xt, &ct});
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].shape(), want_shape);
    ExpectNear(DoublesOf(out[0]), want, {0, 0}, "Y flattened");
  }
}

TEST(CompressKernel, Errors) {
  runtime::Tensor x = F32({2, 3}, {1, 2, 3, 4, 5, 6});
  runtime::Tensor long_cond = TensorOf(DataType::kBool, {4}, {1, 0, 1, 1});
  ExpectError(CompressNode(true, 1), 11, {&x, &long_cond}, "has only 3");
  runtime::Tensor too_long_flat = TensorOf(DataType::kBool, {7}, {1, 0, 1, 1, 0, 0, 1});
  ExpectError(CompressNode(false, 0), 11, {&x, &too_long_flat}, "has only 6");
  runtime::Tensor int_cond = I64({2}, {1, 0});
  ExpectError(CompressNode(true, 0), 11, {&x, &int_cond}, "expected bool");
  runtime::Tensor cond2d = TensorOf(DataType::kBool, {1, 2}, {1, 0});
  ExpectError(CompressNode(true, 0), 11, {&x, &cond2d}, "expected rank 1");
  runtime::Tensor cond = TensorOf(DataType::kBool, {2}, {1, 0});
  ExpectError(CompressNode(true, 2), 11, {&x, &cond}, "axis 2 is out of range");
  ExpectError(CompressNode(true, -1), 9, {&x, &cond}, "before opset 11");
  ExpectError(CompressNode(true, 0), 11, {&x, nullptr}, "missing");
}

TEST(CompressInfer, Shapes) {
  ir::TypeInfo x = ops::TensorType(DataType::kFloat32, std::vector<ir::Dim>{ir::Dim::Known(4), ir::Dim::Known(6)});
  ir::TypeInfo c = ops::TensorType(DataType::kBool, std::vector<ir::Dim>{ir::Dim::Known(3)});
  auto r = InferNode(CompressNode(true, -1), 11, {&x, &c});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ((*r)[0].shape.dims.size(), 2u);
  EXPECT_EQ((*r)[0].shape.dims[0].value, 4);
  EXPECT_TRUE((*r)[0].shape.dims[1].is_symbolic());
  auto flat = InferNode(CompressNode(false, 0), 11, {&x, &c});
  ASSERT_TRUE(flat.ok()) << flat.status().ToString();
  EXPECT_EQ((*flat)[0].shape.dims.size(), 1u);
  ir::TypeInfo c9 = ops::TensorType(DataType::kBool, std::vector<ir::Dim>{ir::Dim::Known(9)});
  auto bad = InferNode(CompressNode(true, 0), 11, {&x, &c9});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().summary().find("node Compress"), std::string::npos) << bad.status().summary();
}

// ---------------------------------------------------------------- ReverseSequence

ir::Node ReverseNode(int64_t batch_axis, int64_t time_axis) {
  return MakeNode("ReverseSequence", {"x", "lens"}, {"y"},
                  {IntAttr("batch_axis", batch_axis), IntAttr("time_axis", time_axis)});
}

TEST(ReverseSequenceKernel, BothLayoutsAgainstIndexMath) {
  for (int64_t batch_axis : {0, 1}) {
    const int64_t time_axis = 1 - batch_axis;
    const int64_t batch = 5, steps = 13;
    Shape shape = {0, 0, 2, 3};
    shape[batch_axis] = batch;
    shape[time_axis] = steps;
    const std::vector<double> x = RandomValues(static_cast<size_t>(Product(shape)), -100, 100, 21, true);
    const std::vector<int64_t> lens = {13, 0, 1, 7, 12};
    for (DataType dt : {DataType::kFloat32, DataType::kFloat16, DataType::kInt32, DataType::kBool}) {
      SCOPED_TRACE(DtypeName(dt) + " batch_axis " + std::to_string(batch_axis));
      runtime::Tensor xt = TensorOf(dt, shape, x);
      const std::vector<double> stored = DoublesOf(xt);
      runtime::Tensor lt = I64({batch}, lens);
      std::vector<double> want(stored.size());
      const int64_t inner = 6;
      for (int64_t b = 0; b < batch; ++b) {
        for (int64_t t = 0; t < steps; ++t) {
          const int64_t src_t = t < lens[b] ? lens[b] - 1 - t : t;
          for (int64_t i = 0; i < inner; ++i) {
            auto at = [&](int64_t tt) {
              return batch_axis == 0 ? (b * steps + tt) * inner + i : (tt * batch + b) * inner + i;
            };
            want[at(t)] = stored[at(src_t)];
          }
        }
      }
      auto out = RunOk(ReverseNode(batch_axis, time_axis), 10, {&xt, &lt});
      ASSERT_EQ(out.size(), 1u);
      EXPECT_EQ(out[0].shape(), shape);
      ExpectNear(DoublesOf(out[0]), want, {0, 0}, "Y");
    }
  }
}

TEST(ReverseSequenceKernel, Errors) {
  runtime::Tensor x = F32({3, 2}, {1, 2, 3, 4, 5, 6});  // time 3, batch 2
  runtime::Tensor too_long = I64({2}, {4, 1});
  ExpectError(ReverseNode(1, 0), 10, {&x, &too_long}, "expected 0 to 3");
  runtime::Tensor negative = I64({2}, {1, -1});
  ExpectError(ReverseNode(1, 0), 10, {&x, &negative}, "expected 0 to 3");
  runtime::Tensor wrong_count = I64({3}, {1, 1, 1});
  ExpectError(ReverseNode(1, 0), 10, {&x, &wrong_count}, "expected [2]");
  runtime::Tensor int32_lens = MakeTensor<int32_t>(DataType::kInt32, {2}, {1, 1});
  ExpectError(ReverseNode(1, 0), 10, {&x, &int32_lens}, "expected int64");
  runtime::Tensor lens = I64({2}, {1, 1});
  ExpectError(ReverseNode(1, 1), 10, {&x, &lens}, "batch_axis 1 and time_axis 1");
  ExpectError(ReverseNode(2, 0), 10, {&x, &lens}, "batch_axis 2");
  runtime::Tensor vec = F32({2}, {1, 2});
  ExpectError(ReverseNode(1, 0), 10, {&vec, &lens}, "rank 2 or more");
}

TEST(ReverseSequenceInfer, Shapes) {
  ir::TypeInfo x = ops::TensorType(DataType::kFloat32, std::vector<ir::Dim>{ir::Dim::Known(4), ir::Dim::Known(6)});
  ir::TypeInfo good = ops::TensorType(DataType::kInt64, std::vector<ir::Dim>{ir::Dim::Known(6)});
  auto r = InferNode(ReverseNode(1, 0), 10, {&x, &good});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(ir::ShapeToString((*r)[0].shape), ir::ShapeToString(x.shape));
  ir::TypeInfo bad = ops::TensorType(DataType::kInt64, std::vector<ir::Dim>{ir::Dim::Known(4)});
  auto e = InferNode(ReverseNode(1, 0), 10, {&x, &bad});
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().summary().find("node ReverseSequence"), std::string::npos) << e.status().summary();
}

}  // namespace
}  // namespace vigil::cpu::testing
