// The dtypes the CUDA elementwise and reduction kernels gained beyond float
// and int32/int64, against the CPU kernels: every integer width (int8 to
// uint64, values over the whole range, uint64 above 2^63 included) in the
// arithmetic, Div/Mod (MIN / -1, unsigned all-ones divisors, mixed signs with
// fmod 0 and 1), Max/Min/Sum, Clip, Pow exponents and the comparisons;
// float64 in the arithmetic, the math functions and every Reduce*; bool
// ReduceMax/ReduceMin; TopK on every integer width and float64 (ties among
// the values decided by index, as on the CPU). Each node runs on the device into outputs poisoned
// with all-ones bytes, on odd sizes (13, 127) with broadcasting, after the
// support function has claimed it. (Dtypes not known at load time:
// unknown_dtype_test.cpp.)
#include <cstdint>
#include <cstring>
#include <iterator>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include <gtest/gtest.h>

#include "backends/cpu/kernel_test_util.h"
#include "backends/cuda/cuda_test_util.h"

namespace vigil::cuda {
namespace {

using ir::DataType;
using runtime::Tensor;
using testing::CudaBackendForTests;
using testing::PoisonedDeviceOutputs;
namespace ct = cpu::testing;

constexpr double kF64Tol = 1e-12;

// --- Running one node on both backends ----------------------------------------------

// The node's outputs from the CUDA backend: inputs copied to the device except
// those in `host_mask` (the kernel reads them on the host), outputs poisoned.
Result<std::vector<Tensor>> RunOnDevice(const ir::Node& node, int64_t opset, const std::vector<const Tensor*>& inputs,
                                        uint32_t host_mask) {
  auto backend = CudaBackendForTests();
  std::vector<Tensor> device(inputs.size());
  std::vector<const Tensor*> args(inputs.size(), nullptr);
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i]) continue;
    if ((host_mask >> i) & 1u) {
      args[i] = inputs[i];
      continue;
    }
    VIGIL_ASSIGN_OR_RETURN(device[i], backend->ToDevice(*inputs[i]));
    args[i] = &device[i];
  }
  VIGIL_RETURN_IF_ERROR(backend->Synchronize());
  std::vector<Tensor> outputs;
  PoisonedDeviceOutputs allocator(*backend);
  VIGIL_RETURN_IF_ERROR(backend->Run(node, opset, args, outputs, allocator));
  VIGIL_RETURN_IF_ERROR(backend->Synchronize());
  std::vector<Tensor> host;
  for (const Tensor& t : outputs) {
    VIGIL_ASSIGN_OR_RETURN(Tensor h, backend->ToHost(t));
    host.push_back(std::move(h));
  }
  return host;
}

// Whether the CUDA backend claims `node` for inputs of these dtypes and shapes.
bool Claims(const ir::Node& node, int64_t opset, const std::vector<const Tensor*>& inputs, std::string* why) {
  std::vector<ir::TypeInfo> infos;
  infos.reserve(inputs.size());
  for (const Tensor* t : inputs) infos.push_back(t ? ops::TensorType(t->dtype(), t->shape()) : ir::TypeInfo{});
  runtime::NodeTypes types;
  for (size_t i = 0; i < inputs.size(); ++i) types.inputs.push_back(inputs[i] ? &infos[i] : nullptr);
  return CudaBackendForTests()->SupportsTyped(node, opset, types, why);
}

bool IsFloat(DataType t) {
  return t == DataType::kFloat32 || t == DataType::kFloat16 || t == DataType::kBfloat16 || t == DataType::kFloat64;
}

// CUDA (claimed by its support function, poisoned outputs) vs the CPU kernel:
// dtype, shape and NaN placement equal; floats within relative L2 `tol`,
// everything else exactly equal.
void ExpectMatchesCpu(const ir::Node& node, int64_t opset, const std::vector<const Tensor*>& inputs,
                      double tol = 0, uint32_t host_mask = 0) {
  std::string why;
  EXPECT_TRUE(Claims(node, opset, inputs, &why)) << node.op_type << ": " << why;
  auto want = ct::RunKernel(node, opset, inputs);
  ASSERT_TRUE(want.ok()) << want.status().ToString();
  auto got = RunOnDevice(node, opset, inputs, host_mask);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  ASSERT_EQ(got->size(), want->size());
  for (size_t i = 0; i < got->size(); ++i) {
    const Tensor& g = (*got)[i];
    const Tensor& w = (*want)[i];
    const bool is_float = IsFloat(w.dtype());
    runtime::TensorComparison cmp = runtime::CompareTensors(w, g, is_float ? 1e300 : 0, is_float ? 1e300 : 0);
    EXPECT_TRUE(cmp.same_dtype && cmp.same_shape) << "got " << g.Describe() << ", expected " << w.Describe();
    EXPECT_EQ(cmp.nan_mismatches, 0u) << cmp.Describe();
    if (is_float) {
      EXPECT_LE(cmp.rel_l2_error, tol) << w.Describe() << ": " << cmp.Describe();
    } else {
      EXPECT_EQ(cmp.mismatches, 0u) << w.Describe() << ": " << cmp.Describe();
    }
  }
}

ir::Node Node(const std::string& op, size_t inputs, std::vector<ir::Attribute> attrs = {}) {
  std::vector<std::string> names;
  for (size_t i = 0; i < inputs; ++i) names.push_back("x" + std::to_string(i));
  return ct::MakeNode(op, names, {"y"}, std::move(attrs));
}

// --- Values ----------------------------------------------------------------------------

// n integers of type T: a third edge values (MIN, MAX, 0, +-1, +-2, and for
// unsigned types 2^(bits-1) and all-ones minus one), a third small values
// (so that comparisons find equal pairs and quotients are not all 0), a third
// random bits over the whole range. `nonzero`: zeros become 3.
template <typename T>
std::vector<T> IntValues(size_t n, uint32_t seed, bool nonzero) {
  using L = std::numeric_limits<T>;
  const T edges[] = {L::min(), L::max(), T(0), T(1), static_cast<T>(-1), T(2), static_cast<T>(-2),
                     static_cast<T>(T(1) << (sizeof(T) * 8 - 1)), static_cast<T>(L::max() - 1)};
  std::mt19937_64 rng(seed);
  std::vector<T> v(n);
  for (auto& x : v) {
    const uint64_t r = rng();
    switch (r % 3) {
      case 0: x = edges[(r >> 8) % std::size(edges)]; break;
      case 1: x = static_cast<T>(static_cast<int64_t>((r >> 8) % 17) - 8); break;
      default: {
        const uint64_t bits = rng();
        std::memcpy(&x, &bits, sizeof(T));
      }
    }
    if (nonzero && x == T(0)) x = T(3);
  }
  return v;
}

// Calls f(dtype, T{}) for every integer dtype.
template <typename F>
void ForEachInteger(F&& f) {
  f(DataType::kInt8, int8_t{});
  f(DataType::kUint8, uint8_t{});
  f(DataType::kInt16, int16_t{});
  f(DataType::kUint16, uint16_t{});
  f(DataType::kInt32, int32_t{});
  f(DataType::kUint32, uint32_t{});
  f(DataType::kInt64, int64_t{});
  f(DataType::kUint64, uint64_t{});
}

int64_t Count(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

template <typename T>
Tensor Ints(DataType t, std::vector<int64_t> shape, uint32_t seed, bool nonzero = false) {
  const auto n = static_cast<size_t>(Count(shape));
  return ct::MakeTensor(t, std::move(shape), IntValues<T>(n, seed, nonzero));
}

Tensor F64(std::vector<int64_t> shape, uint32_t seed, double lo, double hi) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<double> v(static_cast<size_t>(Count(shape)));
  for (double& x : v) x = u(rng);
  return ct::MakeTensor(DataType::kFloat64, std::move(shape), v);
}

struct Shapes {
  std::vector<int64_t> a, b;
};
const Shapes kShapes[] = {
    {{127}, {127}},        // same shape
    {{13, 127}, {}},       // scalar B
    {{}, {3, 13}},         // scalar A
    {{3, 13}, {13}},       // trailing vector
    {{2, 13, 5}, {13, 1}}, // per channel
    {{13, 1}, {1, 127}},   // outer product
};

// --- Integer arithmetic, every width ------------------------------------------------------

TEST(CudaDtypes, IntegerArithmeticEveryWidth) {
  VIGIL_SKIP_WITHOUT_CUDA();
  ForEachInteger([](DataType t, auto tag) {
    using T = decltype(tag);
    uint32_t seed = 1;
    for (const Shapes& s : kShapes) {
      const Tensor a = Ints<T>(t, s.a, seed++);
      const Tensor b = Ints<T>(t, s.b, seed++);
      const Tensor nz = Ints<T>(t, s.b, seed++, /*nonzero=*/true);
      for (const char* op : {"Add", "Sub", "Mul", "Max", "Min", "Sum"}) {
        SCOPED_TRACE(std::string(op) + " " + std::string(ir::DataTypeName(t)));
        ExpectMatchesCpu(Node(op, 2), 14, {&a, &b});
      }
      SCOPED_TRACE(std::string("Div/Mod ") + std::string(ir::DataTypeName(t)));
      ExpectMatchesCpu(Node("Div", 2), 14, {&a, &nz});
      for (int64_t fmod : {0, 1}) ExpectMatchesCpu(Node("Mod", 2, {ct::IntAttr("fmod", fmod)}), 13, {&a, &nz});
    }
  });
}

// MIN / -1 wraps to MIN (and MIN % -1 is 0) for signed types; for unsigned
// types all ones is a divisor like any other (a / MAX is 0 or 1). Negative
// operands of Mod: fmod=0 takes the divisor's sign, fmod=1 the dividend's.
TEST(CudaDtypes, DivModEdgeCases) {
  VIGIL_SKIP_WITHOUT_CUDA();
  ForEachInteger([](DataType t, auto tag) {
    using T = decltype(tag);
    using L = std::numeric_limits<T>;
    const T m1 = static_cast<T>(-1);
    const std::vector<T> a = {L::min(), L::min(), L::max(), L::max(),           static_cast<T>(L::max() - 1),
                              T(7),     static_cast<T>(-7), T(7),     static_cast<T>(-7), T(0),
                              T(5),     L::min(), static_cast<T>(L::min() + 1)};
    const T min_or_2 = std::is_signed_v<T> ? L::min() : T(2);  // no zero divisor
    const std::vector<T> b = {m1,   T(1),  m1,   L::max(), L::max(), static_cast<T>(-3), T(3),
                              T(3), static_cast<T>(-3), m1, min_or_2, L::max(), m1};
    const Tensor ta = ct::MakeTensor(t, {13}, a);
    const Tensor tb = ct::MakeTensor(t, {13}, b);
    SCOPED_TRACE(std::string(ir::DataTypeName(t)));
    ExpectMatchesCpu(Node("Div", 2), 14, {&ta, &tb});
    for (int64_t fmod : {0, 1}) ExpectMatchesCpu(Node("Mod", 2, {ct::IntAttr("fmod", fmod)}), 13, {&ta, &tb});
    // Broadcast: every dividend against one divisor of all ones.
    const Tensor all_ones = ct::MakeTensor(t, {1}, std::vector<T>{m1});
    const Tensor many = Ints<T>(t, {3, 127}, 77);
    ExpectMatchesCpu(Node("Div", 2), 14, {&many, &all_ones});
    ExpectMatchesCpu(Node("Mod", 2), 13, {&many, &all_ones});
  });
}

// An integer Div or Mod by zero: the CPU names the element; the GPU does not
// look (it would need a device read and a synchronisation) and gives 0 there,
// without trapping. docs/cuda.md says so.
TEST(CudaDtypes, IntegerDivisionByZeroGivesZeroOnTheDevice) {
  VIGIL_SKIP_WITHOUT_CUDA();
  for (const char* op : {"Div", "Mod"}) {
    for (DataType t : {DataType::kInt8, DataType::kUint64}) {
      SCOPED_TRACE(std::string(op) + " " + std::string(ir::DataTypeName(t)));
      const Tensor a = t == DataType::kInt8 ? ct::MakeTensor(t, {3}, std::vector<int8_t>{-128, 7, 9})
                                            : ct::MakeTensor(t, {3}, std::vector<uint64_t>{~0ull, 7, 9});
      const Tensor b = t == DataType::kInt8 ? ct::MakeTensor(t, {3}, std::vector<int8_t>{0, 2, 0})
                                            : ct::MakeTensor(t, {3}, std::vector<uint64_t>{0, 2, 0});
      const ir::Node node = Node(op, 2);
      auto cpu = ct::RunKernel(node, 13, {&a, &b});
      ASSERT_FALSE(cpu.ok());
      EXPECT_NE(cpu.status().ToString().find("division by zero"), std::string::npos) << cpu.status().ToString();
      auto gpu = RunOnDevice(node, 13, {&a, &b}, 0);
      ASSERT_TRUE(gpu.ok()) << gpu.status().ToString();
      const Tensor& y = (*gpu)[0];
      const auto* bytes = static_cast<const uint8_t*>(y.raw_data());
      const size_t w = static_cast<size_t>(ir::DataTypeBits(t) / 8);
      for (size_t i : {size_t{0}, size_t{2}}) {
        for (size_t k = 0; k < w; ++k) EXPECT_EQ(bytes[i * w + k], 0) << "element " << i;
      }
      EXPECT_EQ(bytes[w], std::string(op) == "Div" ? 3 : 1);  // 7 / 2, 7 % 2 (little-endian low byte)
    }
  }
}

TEST(CudaDtypes, ComparisonsEveryWidth) {
  VIGIL_SKIP_WITHOUT_CUDA();
  ForEachInteger([](DataType t, auto tag) {
    using T = decltype(tag);
    uint32_t seed = 300;
    for (const Shapes& s : kShapes) {
      const Tensor a = Ints<T>(t, s.a, seed++);
      const Tensor b = Ints<T>(t, s.b, seed++);
      for (const char* op : {"Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual"}) {
        SCOPED_TRACE(std::string(op) + " " + std::string(ir::DataTypeName(t)));
        ExpectMatchesCpu(Node(op, 2), 16, {&a, &b});
        ExpectMatchesCpu(Node(op, 2), 16, {&a, &a});  // equal everywhere
      }
    }
  });
}

TEST(CudaDtypes, ClipEveryIntegerWidth) {
  VIGIL_SKIP_WITHOUT_CUDA();
  ForEachInteger([](DataType t, auto tag) {
    using T = decltype(tag);
    const T lo = std::is_signed_v<T> ? static_cast<T>(-5) : T(5);
    const Tensor x = Ints<T>(t, {2, 127, 3}, 400);
    const Tensor tlo = ct::MakeTensor(t, {}, std::vector<T>{lo});
    const Tensor thi = ct::MakeTensor(t, {}, std::vector<T>{T(100)});
    SCOPED_TRACE(std::string(ir::DataTypeName(t)));
    ExpectMatchesCpu(Node("Clip", 3), 13, {&x, &tlo, &thi}, 0, 0b110);
    ExpectMatchesCpu(Node("Clip", 3), 13, {&x, &thi, &tlo}, 0, 0b110);  // min > max: all max
    ir::Node only_min = ct::MakeNode("Clip", {"x0", "x1"}, {"y"});
    ExpectMatchesCpu(only_min, 13, {&x, &tlo}, 0, 0b10);
  });
}

// Pow with an exponent of any integer width (the CPU converts it to int64, or
// to double for a float base).
TEST(CudaDtypes, PowIntegerExponents) {
  VIGIL_SKIP_WITHOUT_CUDA();
  const Tensor fbase = testing::RandomTensor(DataType::kFloat32, {3, 127}, 500, 0.5f, 2);
  const Tensor ibase = testing::RandomTensor(DataType::kInt64, {3, 127}, 501, -9, 9);
  auto small = [](DataType t, auto tag, std::vector<int64_t> shape) {
    using T = decltype(tag);
    std::vector<T> v(static_cast<size_t>(Count(shape)));
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<T>(i % 5);
    return ct::MakeTensor(t, std::move(shape), v);
  };
  ForEachInteger([&](DataType t, auto tag) {
    SCOPED_TRACE(std::string(ir::DataTypeName(t)));
    const Tensor e = small(t, tag, {127});
    ExpectMatchesCpu(Node("Pow", 2), 15, {&fbase, &e}, 1e-6);
    ExpectMatchesCpu(Node("Pow", 2), 15, {&ibase, &e});
  });
}

// --- float64 ------------------------------------------------------------------------------

TEST(CudaDtypes, Float64Arithmetic) {
  VIGIL_SKIP_WITHOUT_CUDA();
  uint32_t seed = 600;
  for (const Shapes& s : kShapes) {
    const Tensor a = F64(s.a, seed++, -10, 10);
    const Tensor b = F64(s.b, seed++, 0.5, 3);
    const Tensor nb = F64(s.b, seed++, -3, -0.5);
    for (const char* op : {"Add", "Sub", "Mul", "Div", "Max", "Min", "Sum"}) {
      SCOPED_TRACE(op);
      ExpectMatchesCpu(Node(op, 2), 14, {&a, &nb}, kF64Tol);
    }
    for (int64_t fmod : {0, 1}) {
      SCOPED_TRACE(fmod);
      ExpectMatchesCpu(Node("Mod", 2, {ct::IntAttr("fmod", fmod)}), 13, {&a, &b}, kF64Tol);
      ExpectMatchesCpu(Node("Mod", 2, {ct::IntAttr("fmod", fmod)}), 13, {&a, &nb}, kF64Tol);
    }
    for (const char* op : {"Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual"}) {
      SCOPED_TRACE(op);
      ExpectMatchesCpu(Node(op, 2), 16, {&a, &nb});
      ExpectMatchesCpu(Node(op, 2), 16, {&a, &a});
    }
  }
  // Max and Min propagate NaN from either side; Sum of three.
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const Tensor x = ct::MakeTensor(DataType::kFloat64, {5}, std::vector<double>{nan, 1, -2, nan, 1e300});
  const Tensor y = ct::MakeTensor(DataType::kFloat64, {5}, std::vector<double>{1, nan, 3, nan, -1e300});
  for (const char* op : {"Max", "Min"}) ExpectMatchesCpu(Node(op, 2), 13, {&x, &y}, kF64Tol);
  const Tensor z = F64({13}, 650, -1, 1), w = F64({3, 13}, 651, -1, 1), v = F64({3, 1}, 652, -1, 1);
  ExpectMatchesCpu(Node("Sum", 3), 13, {&z, &w, &v}, kF64Tol);
}

TEST(CudaDtypes, Float64Math) {
  VIGIL_SKIP_WITHOUT_CUDA();
  struct R {
    const char* op;
    double lo, hi;
  };
  const R cases[] = {{"Exp", -300, 300},  // beyond float's range; squares stay finite {"Log", 1e-300, 1e300}, {"Sqrt", 0, 1e10}, {"Reciprocal", 0.1, 9},
                     {"Floor", -5, 5},   {"Ceil", -5, 5},        {"Round", -5, 5},  {"Sin", -4, 4},
                     {"Cos", -4, 4},     {"Tan", -1.2, 1.2},     {"Asin", -0.9, 0.9}, {"Acos", -0.9, 0.9},
                     {"Atan", -4, 4},    {"Sinh", -3, 3},        {"Cosh", -3, 3},   {"Asinh", -3, 3},
                     {"Acosh", 1.1, 5},  {"Atanh", -0.9, 0.9},   {"Erf", -3, 3},    {"Tanh", -4, 4},
                     {"Softsign", -5, 5}};
  for (const R& r : cases) {
    SCOPED_TRACE(r.op);
    const Tensor x = F64({2, 127}, 700, r.lo, r.hi);
    ExpectMatchesCpu(Node(r.op, 1), 13, {&x}, kF64Tol);
  }
}

// --- Reductions -----------------------------------------------------------------------------

Tensor Axes(const std::vector<int64_t>& axes) {
  return ct::MakeTensor(DataType::kInt64, {static_cast<int64_t>(axes.size())}, axes);
}

// bool ReduceMax is "any", ReduceMin "all"; bytes other than 0 and 1 read as
// true; the empty set gives false (Max) and true (Min).
TEST(CudaDtypes, BoolReduceMaxMin) {
  VIGIL_SKIP_WITHOUT_CUDA();
  struct C {
    std::vector<int64_t> shape, axes;
    int density;  // 1 in `density` elements is true; 0: all true
  };
  const C cases[] = {{{13}, {0}, 3},         {{3, 127}, {1}, 50},     {{3, 127}, {0}, 2},
                     {{3, 127}, {0, 1}, 400}, {{2, 13, 127}, {0, 2}, 7}, {{0, 13}, {0}, 2},
                     {{5, 4100}, {1}, 4000},  {{5, 4100}, {1}, 0},      {{13, 127}, {0}, 0}};
  uint32_t s = 1;
  for (const C& c : cases) {
    std::vector<uint8_t> v(static_cast<size_t>(Count(c.shape)));
    for (auto& b : v) {
      s = s * 1664525u + 1013904223u;
      const uint32_t r = s >> 8;
      const bool set = c.density == 0 || r % static_cast<uint32_t>(c.density) == 0;
      b = set ? (r % 3 == 0 ? 1 : r % 3 == 1 ? 2 : 255) : 0;
    }
    const Tensor x = ct::MakeTensor(DataType::kBool, c.shape, v);
    const Tensor axes = Axes(c.axes);
    for (const char* op : {"ReduceMax", "ReduceMin"}) {
      for (int64_t keepdims : {0, 1}) {
        SCOPED_TRACE(std::string(op) + " shape " + std::to_string(c.shape.size()) + "-D keepdims " +
                     std::to_string(keepdims));
        ExpectMatchesCpu(Node(op, 2, {ct::IntAttr("keepdims", keepdims)}), 20, {&x, &axes}, 0, 0b10);
      }
    }
  }
}

TEST(CudaDtypes, Float64Reductions) {
  VIGIL_SKIP_WITHOUT_CUDA();
  struct K {
    const char* op;
    double lo, hi;
  };
  const K kinds[] = {{"ReduceSum", -1, 1},       {"ReduceMean", -1, 1}, {"ReduceMax", -1, 1},
                     {"ReduceMin", -1, 1},       {"ReduceProd", 0.9, 1.1}, {"ReduceL1", -1, 1},
                     {"ReduceL2", -1, 1},        {"ReduceSumSquare", -1, 1}, {"ReduceLogSum", 0.1, 2},
                     {"ReduceLogSumExp", 700, 800}};  // exp overflows double without the shift
  const std::vector<std::vector<int64_t>> axes_sets = {{1}, {0, 2}, {0, 1, 2}};
  uint32_t seed = 800;
  for (const K& k : kinds) {
    for (const auto& axes : axes_sets) {
      SCOPED_TRACE(std::string(k.op) + " axes " + std::to_string(axes.size()));
      const Tensor x = F64({3, 13, 127}, seed++, k.lo, k.hi);
      const Tensor ax = Axes(axes);
      ExpectMatchesCpu(Node(k.op, 2), 18, {&x, &ax}, kF64Tol, 0b10);
    }
    // A large set: the per-block path.
    const bool prod = k.op == std::string("ReduceProd");
    const Tensor big = F64({3, 5000}, seed++, prod ? 0.999 : k.lo, prod ? 1.001 : k.hi);
    const Tensor ax = Axes({1});
    ExpectMatchesCpu(Node(k.op, 2), 18, {&big, &ax}, kF64Tol, 0b10);
  }
}

TEST(CudaDtypes, TopKEveryIntegerWidthAndFloat64) {
  VIGIL_SKIP_WITHOUT_CUDA();
  uint32_t seed = 900;
  auto run = [&](const Tensor& x) {
    for (int64_t largest : {1, 0}) {
      for (int64_t axis : {1, -1}) {
        SCOPED_TRACE(std::string(ir::DataTypeName(x.dtype())) + " largest " + std::to_string(largest) + " axis " +
                     std::to_string(axis));
        const Tensor k = ct::MakeTensor(DataType::kInt64, {1}, std::vector<int64_t>{5});
        ir::Node node = ct::MakeNode("TopK", {"x", "k"}, {"values", "indices"},
                                     {ct::IntAttr("axis", axis), ct::IntAttr("largest", largest)});
        ExpectMatchesCpu(node, 11, {&x, &k}, 0, 0b10);
      }
    }
  };
  // IntValues repeats small values, so the top 5 often hold ties.
  ForEachInteger([&](DataType t, auto tag) { run(Ints<decltype(tag)>(t, {3, 13, 127}, seed++)); });
  run(F64({3, 13, 127}, seed++, -1, 1));
}

}  // namespace
}  // namespace vigil::cuda
