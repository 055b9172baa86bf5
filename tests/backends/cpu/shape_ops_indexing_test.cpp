// Indexing ops: Slice, Gather, GatherElements, GatherND, ScatterND,
// ScatterElements, Scatter, TensorScatter, NonZero, OneHot, Trilu.
#include <algorithm>
#include <climits>
#include <limits>

#include "backends/cpu/shape_ops_test_util.h"

namespace vigil::cpu::testing {
namespace {

using ir::DataType;

// ---------------------------------------------------------------- Slice

// The indices Python's slice(start, stop, step).indices(dim) visits.
std::vector<int64_t> PythonSlice(int64_t start, int64_t stop, int64_t step, int64_t dim) {
  int64_t lower = step < 0 ? -1 : 0, upper = step < 0 ? dim - 1 : dim;
  auto fix = [&](int64_t v) {
    if (v < 0) {
      v += dim;
      if (v < lower) v = lower;
    } else if (v > upper) {
      v = upper;
    }
    return v;
  };
  start = fix(start);
  stop = fix(stop);
  std::vector<int64_t> out;
  for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) out.push_back(i);
  return out;
}

// Naive n-D slice with per-axis index lists.
std::vector<float> Gathered(const std::vector<float>& in, const std::vector<int64_t>& shape,
                            const std::vector<std::vector<int64_t>>& picks) {
  std::vector<int64_t> out_shape, strides = Strides(shape);
  for (const auto& p : picks) out_shape.push_back(static_cast<int64_t>(p.size()));
  std::vector<float> out;
  for (int64_t o = 0; o < Count(out_shape); ++o) {
    auto idx = Unflatten(o, out_shape);
    int64_t src = 0;
    for (size_t a = 0; a < idx.size(); ++a) src += picks[a][idx[a]] * strides[a];
    out.push_back(in[src]);
  }
  return out;
}

TEST(SliceKernel, StepsClampingAndNegativeAxesMatchPythonSlicing) {
  std::vector<int64_t> shape{5, 13, 4};
  auto data = Iota(Count(shape));
  auto x = F32(shape, data);
  struct Case {
    std::vector<int64_t> starts, ends, axes, steps;
  } cases[] = {
      {{1, 0}, {4, 13}, {0, 1}, {1, 3}},
      {{-1}, {INT64_MIN}, {1}, {-1}},                       // reverse the whole axis
      {{12}, {-100}, {-2}, {-4}},                           // clamped end, negative axis
      {{-100, 100}, {100, -100}, {0, 2}, {2, -1}},
      {{3}, {3}, {0}, {1}},                                 // empty
      {{INT64_MAX}, {0}, {1}, {-5}},                        // start clamped to dim-1
      {{0, 0, 0}, {INT64_MAX, INT64_MAX, INT64_MAX}, {2, 1, 0}, {7, 7, INT64_MAX}},
  };
  for (const Case& c : cases) {
    auto starts = I64({static_cast<int64_t>(c.starts.size())}, c.starts);
    auto ends = I64({static_cast<int64_t>(c.ends.size())}, c.ends);
    auto axes = I64({static_cast<int64_t>(c.axes.size())}, c.axes);
    auto steps = I64({static_cast<int64_t>(c.steps.size())}, c.steps);
    auto out = RunOk(MakeNode("Slice", {"x", "s", "e", "a", "t"}, {"y"}), 13, {&x, &starts, &ends, &axes, &steps});
    std::vector<std::vector<int64_t>> picks(3);
    for (int64_t a = 0; a < 3; ++a) {
      for (int64_t i = 0; i < shape[a]; ++i) picks[a].push_back(i);
    }
    for (size_t j = 0; j < c.axes.size(); ++j) {
      int64_t a = c.axes[j] < 0 ? c.axes[j] + 3 : c.axes[j];
      picks[a] = PythonSlice(c.starts[j], c.ends[j], c.steps[j], shape[a]);
    }
    ExpectFloatsEq(Values<float>(out[0]), Gathered(data, shape, picks));
  }
}

TEST(SliceKernel, DefaultAxesAndStepsAndOpset1Attributes) {
  auto x = F32({3, 4}, Iota(12));
  auto starts = I64({2}, {1, -3});
  auto ends = I64({2}, {3, 100});
  auto out = RunOk(MakeNode("Slice", {"x", "s", "e"}, {"y"}), 10, {&x, &starts, &ends});
  EXPECT_EQ(out[0].shape(), (std::vector<int64_t>{2, 3}));
  ExpectFloatsEq(Values<float>(out[0]), {6, 7, 8, 10, 11, 12});
  out = RunOk(MakeNode("Slice", {"x"}, {"y"}, {IntsAttr("starts", {1}), IntsAttr("ends", {2}), IntsAttr("axes", {1})}),
              9, {&x});
  ExpectFloatsEq(Values<float>(out[0]), {2, 6, 10});
}

TEST(SliceKernel, Errors) {
  auto x = F32({3, 4}, Iota(12));
  auto s = I64({1}, {0});
  auto e = I64({1}, {2});
  auto zero_step = I64({1}, {0});
  auto axes = I64({1}, {0});
  RunError(MakeNode("Slice", {"x", "s", "e", "a", "t"}, {"y"}), 13, {&x, &s, &e, &axes, &zero_step});
  auto bad_axis = I64({1}, {2});
  RunError(MakeNode("Slice", {"x", "s", "e", "a"}, {"y"}), 13, {&x, &s, &e, &bad_axis});
  auto e2 = I64({2}, {2, 2});
  RunError(MakeNode("Slice", {"x", "s", "e"}, {"y"}), 13, {&x, &s, &e2});
}

TEST(SliceInfer, KnownValuesGiveExactDims) {
  auto xt = F32T({S("N"), D(13), D(4)});
  auto t1 = I64T({D(1)});
  auto s = I64({1}, {-1}).AsConstant();
  auto e = I64({1}, {INT64_MIN}).AsConstant();
  auto a = I64({1}, {1}).AsConstant();
  auto st = I64({1}, {-3}).AsConstant();
  auto out = InferOk(MakeNode("Slice", {"x", "s", "e", "a", "t"}, {"y"}), 13, {&xt, &t1, &t1, &t1, &t1},
                     {nullptr, &s, &e, &a, &st});
  EXPECT_EQ(ShapeOf(out[0]), "float32[N,5,4]");
  // The whole of a symbolic axis keeps its symbol; a part of it does not.
  auto s0 = I64({1}, {0}).AsConstant();
  auto big = I64({1}, {INT64_MAX}).AsConstant();
  auto a0 = I64({1}, {0}).AsConstant();
  out = InferOk(MakeNode("Slice", {"x", "s", "e", "a"}, {"y"}), 13, {&xt, &t1, &t1, &t1}, {nullptr, &s0, &big, &a0});
  EXPECT_EQ(ShapeOf(out[0]), "float32[N,13,4]");
  auto two = I64({1}, {2}).AsConstant();
  out = InferOk(MakeNode("Slice", {"x", "s", "e", "a"}, {"y"}), 13, {&xt, &t1, &t1, &t1}, {nullptr, &s0, &two, &a0});
  EXPECT_TRUE(out[0].shape.dims[0].is_symbolic());
  EXPECT_NE(out[0].shape.dims[0].param, "N");
  // Unknown starts: the sliced axes become symbols, the rest stay.
  out = InferOk(MakeNode("Slice", {"x", "s", "e", "a"}, {"y"}), 13, {&xt, &t1, &t1, &t1}, {nullptr, nullptr, nullptr, &a0});
  EXPECT_TRUE(out[0].shape.dims[0].is_symbolic());
  EXPECT_EQ(*out[0].shape.dims[1].value, 13);
  // Shape-computation idiom: Slice of a known 1-D int64.
  auto vt = I64T({D(4)});
  auto s1 = I64({1}, {1}).AsConstant();
  auto e3 = I64({1}, {3}).AsConstant();
  EXPECT_EQ(ShapeOf(InferOk(MakeNode("Slice", {"v", "s", "e"}, {"y"}), 13, {&vt, &t1, &t1}, {nullptr, &s1, &e3})[0]),
            "int64[2]");
}

// ---------------------------------------------------------------- Gather

TEST(GatherKernel, AxesAndNegativeIndicesMatchNaiveLoops) {
  std::vector<int64_t> shape{3, 5, 2};
  auto data = Iota(30);
  auto x = F32(shape, data);
  auto idx = I64({2, 2}, {4, -1, 0, 2});
  for (int64_t axis : {1, -2}) {
    auto out = RunOk(MakeNode("Gather", {"x", "i"}, {"y"}, {IntAttr("axis", axis)}), 13, {&x, &idx});
    EXPECT_EQ(out[0].shape(), (std::vector<int64_t>{3, 2, 2, 2}));
    std::vector<float> want;
    for (int64_t a = 0; a < 3; ++a) {
      for (int64_t j : {4, 4, 0, 2}) {
        for (int64_t c = 0; c < 2; ++c) want.push_back(data[a * 10 + j * 2 + c]);
      }
    }
    ExpectFloatsEq(Values<float>(out[0]), want);
  }
  auto scalar = MakeTensor(DataType::kInt32, {}, std::vector<int32_t>{2});
  auto out = RunOk(MakeNode("Gather", {"x", "i"}, {"y"}), 13, {&x, &scalar});
  EXPECT_EQ(out[0].shape(), (std::vector<int64_t>{5, 2}));
  ExpectFloatsEq(Values<float>(out[0]), Iota(10, 21));
}

TEST(GatherKernel, OutOfRangeIndexIsAnErrorNamingIt) {
  auto x = F32({3, 2}, Iota(6));
  auto idx = I64({2}, {0, 3});
  std::string e = RunError(MakeNode("Gather", {"x", "i"}, {"y"}), 13, {&x, &idx});
  EXPECT_NE(e.find("3 is out of range"), std::string::npos) << e;
  auto neg = I64({1}, {-4});
  RunError(MakeNode("Gather", {"x", "i"}, {"y"}), 13, {&x, &neg});
  auto f = F32({1}, {0});
  RunError(MakeNode("Gather", {"x", "i"}, {"y"}), 13, {&x, &f});
  // A required input given as "" is an error, not a crash.
  EXPECT_NE(RunError(MakeNode("Gather", {"x", ""}, {"y"}), 13, {&x, nullptr}).find("input 1 is missing"),
            std::string::npos);
  RunError(MakeNode("ScatterND", {"x", "i", ""}, {"y"}), 13, {&x, &idx, nullptr});
}

TEST(GatherInfer, ShapesAndSymbols) {
  auto xt = F32T({S("N"), D(5), D(2)});
  auto it = I64T({D(7)});
  EXPECT_EQ(ShapeOf(InferOk(MakeNode("Gather", {"x", "i"}, {"y"}, {IntAttr("axis", 1)}), 13, {&xt, &it})[0]),
            "float32[N,7,2]");
  auto scalar = I64T({});
  EXPECT_EQ(ShapeOf(InferOk(MakeNode("Gather", {"x", "i"}, {"y"}), 13, {&xt, &scalar})[0]), "float32[5,2]");
  InferError(MakeNode("Gather", {"x", "i"}, {"y"}, {IntAttr("axis", 3)}), 13, {&xt, &it});
}

// ---------------------------------------------------------------- GatherElements

TEST(GatherElementsKernel, EachAxisAgainstNaiveLoops) {
  std::vector<int64_t> shape{3, 4};
  auto data = Iota(12);
  auto x = F32(shape, data);
  auto idx = I64({2, 3}, {0, -1, 2, 1, 1, 0});
  for (int64_t axis : {0, 1}) {
    auto out = RunOk(MakeNode("GatherElements", {"x", "i"}, {"y"}, {IntAttr("axis", axis)}), 13, {&x, &idx});
    EXPECT_EQ(out[0].shape(), (std::vector<int64_t>{2, 3}));
    std::vector<float> want;
    std::vector<int64_t> iv{0, -1, 2, 1, 1, 0};
    for (int64_t r = 0; r < 2; ++r) {
      for (int64_t c = 0; c < 3; ++c) {
        int64_t k = iv[r * 3 + c];
        if (k < 0) k += shape[axis];
        want.push_back(axis == 0 ? data[k * 4 + c] : data[r * 4 + k]);
      }
    }
    ExpectFloatsEq(Values<float>(out[0]), want);
  }
  auto bad = I64({1, 1}, {3});
  RunError(MakeNode("GatherElements", {"x", "i"}, {"y"}), 13, {&x, &bad});
  auto too_wide = I64({1, 5}, {0, 0, 0, 0, 0});
  RunError(MakeNode("GatherElements", {"x", "i"}, {"y"}), 13, {&x, &too_wide});
}

// ---------------------------------------------------------------- GatherND

TEST(GatherNDKernel, TuplesSlicesAndBatchDims) {
  auto x = F32({2, 3, 2}, Iota(12));
  auto full = I64({2, 3}, {1, 2, 0, 0, 0, 1});
  auto out = RunOk(MakeNode("GatherND", {"x", "i"}, {"y"}), 13, {&x, &full});
  EXPECT_EQ(out[0].shape(), (std::vector<int64_t>{2}));
  ExpectFloatsEq(Values<float>(out[0]), {11, 2});
  auto part = I64({1, 1}, {-1});
  out = RunOk(MakeNode("GatherND", {"x", "i"}, {"y"}), 13, {&x, &part});
  EXPECT_EQ(out[0].shape(), (std::vector<int64_t>{1, 3, 2}));
  ExpectFloatsEq(Values<float>(out[0]), Iota(6, 7));
  // batch_dims=1: each batch indexes its own [3,2] slice.
  auto batched = I64({2, 1, 2}, {2, 1, 0, 0});
  out = RunOk(MakeNode("GatherND", {"x", "i"}, {"y"}, {IntAttr("batch_dims", 1)}), 13, {&x, &batched});
  EXPECT_EQ(out[0].shape(), (std::vector<int64_t>{2, 1}));
  ExpectFloatsEq(Values<float>(out[0]), {6, 7});
  auto bad = I64({1, 2}, {0, 3});
  RunError(MakeNode("GatherND", {"x", "i"}, {"y"}), 13, {&x, &bad});
  auto too_long = I64({1, 4}, {0, 0, 0, 0});
  RunError(MakeNode("GatherND", {"x", "i"}, {"y"}), 13, {&x, &too_long});
}

TEST(GatherNDInfer, Shape) {
  auto xt = F32T({S("B"), D(3), D(2)});
  auto it = I64T({S("B"), D(5), D(1)});
  EXPECT_EQ(ShapeOf(InferOk(MakeNode("GatherND", {"x", "i"}, {"y"}, {IntAttr("batch_dims", 1)}), 13, {&xt, &it})[0]),
            "float32[B,5,2]");
  auto bad = I64T({D(4), D(4)});
  InferError(MakeNode("GatherND", {"x", "i"}, {"y"}), 13, {&xt, &bad});
}

// ---------------------------------------------------------------- ScatterND

TEST(ScatterNDKernel, EveryReductionWithDuplicateIndices) {
  auto x = F32({4, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  auto idx = I64({3, 1}, {1, -1, 1});
  auto upd = F32({3, 2}, {10, 20, 30, 40, 0.5f, 5});
  struct Case {
    const char* reduction;
    std::vector<float> want;
  } cases[] = {
      {"none", {1, 2, 0.5f, 5, 5, 6, 30, 40}},
      {"add", {1, 2, 13.5f, 29, 5, 6, 37, 48}},
      {"mul", {1, 2, 15, 400, 5, 6, 210, 320}},
      {"max", {1, 2, 10, 20, 5, 6, 30, 40}},
      {"min", {1, 2, 0.5f, 4, 5, 6, 7, 8}},
  };
  for (const Case& c : cases) {
    auto out = RunOk(MakeNode("ScatterND", {"x", "i", "u"}, {"y"}, {StringAttr("reduction", c.reduction)}), 18,
                     {&x, &idx, &upd});
    ExpectFloatsEq(Values<float>(out[0]), c.want);
  }
  auto oob = I64({1, 1}, {4});
  auto u1 = F32({1, 2}, {0, 0});
  RunError(MakeNode("ScatterND", {"x", "i", "u"}, {"y"}), 13, {&x, &oob, &u1});
  auto wrong_updates = F32({3, 3}, Iota(9));
  RunError(MakeNode("ScatterND", {"x", "i", "u"}, {"y"}), 13, {&x, &idx, &wrong_updates});
}

TEST(ScatterNDKernel, IntegerAddWrapsInsteadOfOverflowing) {
  auto x = I64({2}, {std::numeric_limits<int64_t>::max(), 0});
  auto idx = I64({1, 1}, {0});
  auto upd = I64({1}, {1});
  auto out = RunOk(MakeNode("ScatterND", {"x", "i", "u"}, {"y"}, {StringAttr("reduction", "add")}), 16,
                   {&x, &idx, &upd});
  EXPECT_EQ(Values<int64_t>(out[0]), (std::vector<int64_t>{std::numeric_limits<int64_t>::min(), 0}));
}

// ---------------------------------------------------------------- ScatterElements

TEST(ScatterElementsKernel, AxesReductionsAndScatterAlias) {
  auto x = F32({3, 3}, Iota(9));
  auto idx = I64({2, 2}, {1, 0, -1, 1});
  auto upd = F32({2, 2}, {10, 20, 30, 40});
  // axis 0: out[idx[i][j]][j] = upd[i][j]
  auto out = RunOk(MakeNode("ScatterElements", {"x", "i", "u"}, {"y"}), 13, {&x, &idx, &upd});
  ExpectFloatsEq(Values<float>(out[0]), {1, 20, 3, 10, 40, 6, 30, 8, 9});
  out = RunOk(MakeNode("ScatterElements", {"x", "i", "u"}, {"y"}, {IntAttr("axis", 1), StringAttr("reduction", "add")}),
              16, {&x, &idx, &upd});
  ExpectFloatsEq(Values<float>(out[0]), {21, 12, 3, 4, 45, 36, 7, 8, 9});
  out = RunOk(MakeNode("Scatter", {"x", "i", "u"}, {"y"}), 10, {&x, &idx, &upd});
  ExpectFloatsEq(Values<float>(out[0]), {1, 20, 3, 10, 40, 6, 30, 8, 9});
  auto oob = I64({1, 1}, {3});
  auto u1 = F32({1, 1}, {0});
  RunError(MakeNode("ScatterElements", {"x", "i", "u"}, {"y"}), 13, {&x, &oob, &u1});
  RunError(MakeNode("ScatterElements", {"x", "i", "u"}, {"y"}, {StringAttr("reduction", "avg")}), 18, {&x, &idx, &upd});
}

// ---------------------------------------------------------------- TensorScatter

// The spec's loop: every element of update, at its multi-index with the
// sequence coordinate moved to write_indices[batch] + s (modulo the cache
// length in circular mode, Python-style for negatives).
std::vector<float> TensorScatterReference(const std::vector<float>& past, const std::vector<int64_t>& past_shape,
                                          const std::vector<float>& update, const std::vector<int64_t>& update_shape,
                                          const std::vector<int64_t>& writes, int64_t axis, bool circular) {
  std::vector<float> out = past;
  const auto strides = Strides(past_shape);
  const int64_t max_seq = past_shape[axis];
  for (int64_t u = 0; u < Count(update_shape); ++u) {
    auto idx = Unflatten(u, update_shape);
    int64_t at = writes[idx[0]] + idx[axis];
    if (circular) at = ((at % max_seq) + max_seq) % max_seq;
    idx[axis] = at;
    int64_t flat = 0;
    for (size_t a = 0; a < idx.size(); ++a) flat += idx[a] * strides[a];
    out[flat] = update[u];
  }
  return out;
}

TEST(TensorScatterKernel, LinearAndCircularAgainstTheSpecLoop) {
  struct Case {
    std::vector<int64_t> past_shape, update_shape;
    int64_t axis;  // as given (may be negative or absent: -2)
    bool circular;
    std::vector<int64_t> writes;  // empty: input omitted (zeros)
  } cases[] = {
      {{2, 3, 13, 5}, {2, 3, 4, 5}, -2, false, {}},
      {{2, 3, 13, 5}, {2, 3, 4, 5}, -2, false, {9, 0}},
      {{2, 3, 13, 5}, {2, 3, 4, 5}, 2, true, {11, -3}},
      {{3, 127, 2}, {3, 13, 2}, 1, true, {120, 0, -130}},
      {{3, 127, 2}, {3, 13, 2}, 1, false, {114, 0, 57}},
      {{2, 4, 13}, {2, 4, 13}, -1, true, {5, 12}},   // the whole cache, rotated
      {{2, 4, 13}, {2, 4, 0}, -1, false, {13, 0}},   // an empty update
      {{1, 2, 3, 7, 2}, {1, 2, 3, 7, 2}, 3, false, {0}},
  };
  for (const Case& c : cases) {
    const int64_t rank = static_cast<int64_t>(c.past_shape.size());
    const int64_t axis = c.axis < 0 ? c.axis + rank : c.axis;
    auto past_values = Iota(Count(c.past_shape));
    auto update_values = Iota(Count(c.update_shape), 1000.0f);
    auto past = F32(c.past_shape, past_values);
    auto update = F32(c.update_shape, update_values);
    const bool given = !c.writes.empty();
    auto writes = given ? I64({c.past_shape[0]}, c.writes) : I64({0}, {});
    std::vector<ir::Attribute> attrs = {StringAttr("mode", c.circular ? "circular" : "linear")};
    if (c.axis != -2) attrs.push_back(IntAttr("axis", c.axis));
    ir::Node node = MakeNode("TensorScatter", given ? std::vector<std::string>{"p", "u", "w"}
                                                    : std::vector<std::string>{"p", "u"},
                             {"y"}, attrs);
    auto out = given ? RunOk(node, 24, {&past, &update, &writes}) : RunOk(node, 24, {&past, &update});
    std::vector<int64_t> w = given ? c.writes : std::vector<int64_t>(c.past_shape[0], 0);
    ASSERT_EQ(out[0].shape(), c.past_shape);
    ExpectFloatsEq(Values<float>(out[0]), TensorScatterReference(past_values, c.past_shape, update_values,
                                                                 c.update_shape, w, axis, c.circular));
  }
}

TEST(TensorScatterKernel, ByteAndWideElements) {
  auto past = MakeTensor(DataType::kInt8, {2, 3, 1}, std::vector<int8_t>{1, 2, 3, 4, 5, 6});
  auto update = MakeTensor(DataType::kInt8, {2, 2, 1}, std::vector<int8_t>{-1, -2, -3, -4});
  auto w = I64({2}, {2, 0});
  auto out = RunOk(MakeNode("TensorScatter", {"p", "u", "w"}, {"y"}, {StringAttr("mode", "circular")}), 24,
                   {&past, &update, &w});
  EXPECT_EQ(Values<int8_t>(out[0]), (std::vector<int8_t>{-2, 2, -1, -3, -4, 6}));
  auto dpast = MakeTensor(DataType::kFloat64, {1, 2, 2}, std::vector<double>{1, 2, 3, 4});
  auto dupdate = MakeTensor(DataType::kFloat64, {1, 1, 2}, std::vector<double>{9, 8});
  auto w1 = I64({1}, {1});
  out = RunOk(MakeNode("TensorScatter", {"p", "u", "w"}, {"y"}), 24, {&dpast, &dupdate, &w1});
  EXPECT_EQ(Values<double>(out[0]), (std::vector<double>{1, 2, 9, 8}));
}

TEST(TensorScatterKernel, Errors) {
  auto past = F32({2, 5, 3}, Iota(30));
  auto update = F32({2, 2, 3}, Iota(12));
  auto node = [](std::vector<ir::Attribute> attrs = {}) {
    return MakeNode("TensorScatter", {"p", "u", "w"}, {"y"}, std::move(attrs));
  };
  auto late = I64({2}, {0, 4});
  EXPECT_NE(RunError(node(), 24, {&past, &update, &late}).find("write_indices[1] is 4"), std::string::npos);
  auto negative = I64({2}, {-1, 0});
  EXPECT_NE(RunError(node(), 24, {&past, &update, &negative}).find("linear mode"), std::string::npos);
  auto short_writes = I64({1}, {0});
  EXPECT_NE(RunError(node(), 24, {&past, &update, &short_writes}).find("one index per batch"), std::string::npos);
  auto ok = I64({2}, {0, 0});
  EXPECT_NE(RunError(node({StringAttr("mode", "ring")}), 24, {&past, &update, &ok}).find("'linear' or 'circular'"),
            std::string::npos);
  EXPECT_NE(RunError(node({IntAttr("axis", 0)}), 24, {&past, &update, &ok}).find("batch axis"), std::string::npos);
  EXPECT_NE(RunError(node({IntAttr("axis", -4)}), 24, {&past, &update, &ok}).find("axis"), std::string::npos);
  auto too_long = F32({2, 6, 3}, Iota(36));
  EXPECT_NE(RunError(node(), 24, {&past, &too_long, &ok}).find("does not fit"), std::string::npos);
  auto other_dim = F32({2, 2, 4}, Iota(16));
  EXPECT_NE(RunError(node(), 24, {&past, &other_dim, &ok}).find("does not fit"), std::string::npos);
  auto ints = I64({2, 2, 3}, std::vector<int64_t>(12, 0));
  EXPECT_NE(RunError(node(), 24, {&past, &ints, &ok}).find("dtype"), std::string::npos);
  auto flat = F32({5}, Iota(5));
  auto flat_update = F32({2}, Iota(2));
  EXPECT_NE(RunError(MakeNode("TensorScatter", {"p", "u"}, {"y"}), 24, {&flat, &flat_update}).find("rank >= 2"),
            std::string::npos);
}

TEST(TensorScatterInfer, ShapesAndErrors) {
  auto pt = F32T({S("B"), D(4), D(13), D(8)});
  auto ut = F32T({S("B"), D(4), D(1), D(8)});
  auto wt = I64T({S("B")});
  EXPECT_EQ(ShapeOf(InferOk(MakeNode("TensorScatter", {"p", "u", "w"}, {"y"}), 24, {&pt, &ut, &wt})[0]),
            "float32[B,4,13,8]");
  EXPECT_EQ(ShapeOf(InferOk(MakeNode("TensorScatter", {"p", "u"}, {"y"}), 24, {&pt, &ut})[0]), "float32[B,4,13,8]");
  auto long_update = F32T({S("B"), D(4), D(14), D(8)});
  InferError(MakeNode("TensorScatter", {"p", "u"}, {"y"}), 24, {&pt, &long_update});
  InferError(MakeNode("TensorScatter", {"p", "u"}, {"y"}, {IntAttr("axis", 0)}), 24, {&pt, &ut});
  InferError(MakeNode("TensorScatter", {"p", "u"}, {"y"}, {IntAttr("axis", 4)}), 24, {&pt, &ut});
  InferError(MakeNode("TensorScatter", {"p", "u"}, {"y"}, {StringAttr("mode", "wrap")}), 24, {&pt, &ut});
  auto i32 = T(DataType::kInt32, {S("B")});
  InferError(MakeNode("TensorScatter", {"p", "u", "w"}, {"y"}), 24, {&pt, &ut, &i32});
  auto w2 = I64T({D(2), D(1)});
  InferError(MakeNode("TensorScatter", {"p", "u", "w"}, {"y"}), 24, {&pt, &ut, &w2});
  auto ht = T(DataType::kFloat16, {S("B"), D(4), D(1), D(8)});
  InferError(MakeNode("TensorScatter", {"p", "u"}, {"y"}), 24, {&pt, &ht});
}

// ---------------------------------------------------------------- NonZero

TEST(NonZeroKernel, FloatsBoolsAndEmpty) {
  float nan = std::numeric_limits<float>::quiet_NaN();
  auto x = F32({2, 3}, {0, -0.0f, nan, 1, 0, -2});
  auto out = RunOk(MakeNode("NonZero", {"x"}, {"y"}), 13, {&x});
  EXPECT_EQ(out[0].shape(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(Values<int64_t>(out[0]), (std::vector<int64_t>{0, 1, 1, 2, 0, 2}));
  auto b = MakeTensor(DataType::kBool, {4}, std::vector<uint8_t>{0, 1, 1, 0});
  out = RunOk(MakeNode("NonZero", {"x"}, {"y"}), 13, {&b});
  EXPECT_EQ(Values<int64_t>(out[0]), (std::vector<int64_t>{1, 2}));
  auto empty = F32({0, 5}, {});
  out = RunOk(MakeNode("NonZero", {"x"}, {"y"}), 13, {&empty});
  EXPECT_EQ(out[0].shape(), (std::vector<int64_t>{2, 0}));
  auto xt = F32T({S("N"), D(3)});
  auto t = InferOk(MakeNode("NonZero", {"x"}, {"y"}), 13, {&xt})[0];
  EXPECT_EQ(t.elem_type, DataType::kInt64);
  EXPECT_EQ(*t.shape.dims[0].value, 2);
}

// ---------------------------------------------------------------- OneHot

TEST(OneHotKernel, AxesNegativeAndOutOfRangeIndices) {
  auto idx = F32({2, 2}, {0, 2.7f, -1, 5});  // float indices truncate
  auto depth = F32({}, {3});
  auto values = I64({2}, {-1, 9});
  auto out = RunOk(MakeNode("OneHot", {"i", "d", "v"}, {"y"}), 11, {&idx, &depth, &values});
  EXPECT_EQ(out[0].shape(), (std::vector<int64_t>{2, 2, 3}));
  EXPECT_EQ(Values<int64_t>(out[0]), (std::vector<int64_t>{9, -1, -1, -1, -1, 9, -1, -1, 9, -1, -1, -1}));
  out = RunOk(MakeNode("OneHot", {"i", "d", "v"}, {"y"}, {IntAttr("axis", 0)}), 11, {&idx, &depth, &values});
  EXPECT_EQ(out[0].shape(), (std::vector<int64_t>{3, 2, 2}));
  EXPECT_EQ(Values<int64_t>(out[0]), (std::vector<int64_t>{9, -1, -1, -1, -1, -1, -1, -1, -1, 9, 9, -1}));
  auto zero_depth = I64({1}, {0});
  RunError(MakeNode("OneHot", {"i", "d", "v"}, {"y"}), 11, {&idx, &zero_depth, &values});
  auto three_values = I64({3}, {0, 1, 2});
  RunError(MakeNode("OneHot", {"i", "d", "v"}, {"y"}), 11, {&idx, &depth, &three_values});
}

TEST(OneHotInfer, DepthValueAndAxis) {
  auto it = I64T({S("N"), D(4)});
  auto dt = I64T({});
  auto vt = F32T({D(2)});
  auto d = I64({}, {10}).AsConstant();
  EXPECT_EQ(ShapeOf(InferOk(MakeNode("OneHot", {"i", "d", "v"}, {"y"}, {IntAttr("axis", 1)}), 11, {&it, &dt, &vt},
                            {nullptr, &d})[0]),
            "float32[N,10,4]");
  // A depth of a less common type is read at run time: the dim stays symbolic.
  auto d8 = MakeTensor(DataType::kInt8, {}, std::vector<int8_t>{5}).AsConstant();
  auto d8t = T(DataType::kInt8, {});
  auto out = InferOk(MakeNode("OneHot", {"i", "d", "v"}, {"y"}), 11, {&it, &d8t, &vt}, {nullptr, &d8})[0];
  EXPECT_TRUE(out.shape.dims[2].is_symbolic());
  auto zero = I64({}, {0}).AsConstant();
  InferError(MakeNode("OneHot", {"i", "d", "v"}, {"y"}), 11, {&it, &dt, &vt}, {nullptr, &zero});
}

// ---------------------------------------------------------------- Trilu

TEST(TriluKernel, UpperLowerAndEveryDiagonalAgainstNaive) {
  std::vector<int64_t> shape{2, 3, 5};
  auto data = Iota(30);
  auto x = F32(shape, data);
  for (int upper : {0, 1}) {
    for (int64_t k : {-7, -1, 0, 2, 6}) {
      auto kt = I64({}, {k});
      auto out = RunOk(MakeNode("Trilu", {"x", "k"}, {"y"}, {IntAttr("upper", upper)}), 14, {&x, &kt});
      std::vector<float> want(data.size());
      for (int64_t n = 0; n < 30; ++n) {
        auto idx = Unflatten(n, shape);
        bool keep = upper ? idx[2] - idx[1] >= k : idx[2] - idx[1] <= k;
        want[n] = keep ? data[n] : 0;
      }
      ExpectFloatsEq(Values<float>(out[0]), want);
    }
  }
  auto out = RunOk(MakeNode("Trilu", {"x"}, {"y"}), 14, {&x});  // k defaults to 0, upper to 1
  EXPECT_EQ(Values<float>(out[0])[5], 0.0f);
  auto v = F32({3}, Iota(3));
  RunError(MakeNode("Trilu", {"x"}, {"y"}), 14, {&v});
}

}  // namespace
}  // namespace vigil::cpu::testing
