// CUDA elementwise family (elementwise.cu, elementwise_activation.cu) against
// the CPU reference: unary math, activations, Clip, broadcasting binary ops,
// comparisons and logic, variadic ops, Where, PRelu and Cast, on odd sizes
// (13, 127 channels, sizes that are not multiples of the block size), in
// float32 and float16 (bfloat16 and integers where the op takes them).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "backends/cpu/kernel_test_util.h"
#include "backends/cuda/cuda_test_util.h"
#include "vigil/float16.h"

namespace vigil::cuda {
namespace {

using ir::DataType;
using runtime::Tensor;
using testing::ExpectCudaMatchesCpu;
using testing::NodeCase;
using testing::RandomTensor;
namespace ct = cpu::testing;

constexpr double kF32Tol = 1e-5;
constexpr double kF16Tol = 1e-2;

double Tol(DataType t) { return t == DataType::kFloat32 ? kF32Tol : kF16Tol; }

NodeCase Case(std::string op, std::vector<Tensor> inputs, std::vector<ir::Attribute> attrs = {}, int64_t opset = 17) {
  return testing::MakeCase(std::move(op), std::move(inputs), std::move(attrs), opset);
}

// A bool tensor with a pseudo-random pattern (about half true).
Tensor RandomBool(std::vector<int64_t> shape, uint32_t seed) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::vector<uint8_t> v(static_cast<size_t>(n));
  uint32_t s = seed * 2654435761u + 12345u;
  for (auto& b : v) {
    s = s * 1664525u + 1013904223u;
    b = (s >> 16) & 1u;
  }
  return ct::MakeTensor(DataType::kBool, std::move(shape), v);
}

const DataType kFloats[] = {DataType::kFloat32, DataType::kFloat16};

// --- Unary math and activations ------------------------------------------------------

struct UnaryCase {
  const char* op;
  float lo, hi;
  int64_t opset;
};

TEST(CudaElementwise, UnaryMath) {
  VIGIL_SKIP_WITHOUT_CUDA();
  const UnaryCase cases[] = {
      {"Abs", -3, 3, 13},       {"Neg", -3, 3, 13},        {"Sign", -3, 3, 13},      {"Reciprocal", 0.2f, 4, 13},
      {"Floor", -5, 5, 13},     {"Ceil", -5, 5, 13},       {"Round", -5, 5, 13},     {"Sqrt", 0, 9, 13},
      {"Exp", -5, 5, 13},       {"Log", 0.05f, 9, 13},     {"Sin", -4, 4, 13},       {"Cos", -4, 4, 13},
      {"Tan", -1.2f, 1.2f, 13}, {"Asin", -0.9f, 0.9f, 13}, {"Acos", -0.9f, 0.9f, 13}, {"Atan", -4, 4, 13},
      {"Sinh", -3, 3, 13},      {"Cosh", -3, 3, 13},       {"Asinh", -3, 3, 13},     {"Acosh", 1.1f, 5, 13},
      {"Atanh", -0.9f, 0.9f, 13}, {"Erf", -3, 3, 13},      {"Tanh", -4, 4, 13},      {"Sigmoid", -20, 20, 13},
      {"Relu", -3, 3, 14},      {"Softplus", -30, 30, 13}, {"Softsign", -5, 5, 13},  {"Mish", -10, 10, 18},
      {"HardSwish", -5, 5, 14}, {"IsNaN", -1, 1, 13},
  };
  for (const auto& u : cases) {
    for (DataType t : kFloats) {
      for (auto shape : {std::vector<int64_t>{13}, std::vector<int64_t>{2, 127, 5}}) {
        SCOPED_TRACE(std::string(u.op) + " " + std::string(ir::DataTypeName(t)) + " rank " +
                     std::to_string(shape.size()));
        ExpectCudaMatchesCpu(Case(u.op, {RandomTensor(t, shape, 7, u.lo, u.hi)}, {}, u.opset), Tol(t));
      }
    }
  }
}

TEST(CudaElementwise, RoundHalvesToEven) {
  VIGIL_SKIP_WITHOUT_CUDA();
  Tensor x = ct::F32({9}, {-2.5f, -1.5f, -0.5f, 0.5f, 1.5f, 2.5f, 3.5f, 0.49999997f, -7.5f});
  ExpectCudaMatchesCpu(Case("Round", {x}, {}, 13), 0);
}

TEST(CudaElementwise, UnaryIntegers) {
  VIGIL_SKIP_WITHOUT_CUDA();
  for (const char* op : {"Abs", "Neg", "Sign", "Relu"}) {
    for (DataType t : {DataType::kInt32, DataType::kInt64}) {
      SCOPED_TRACE(std::string(op) + " " + std::string(ir::DataTypeName(t)));
      ExpectCudaMatchesCpu(Case(op, {RandomTensor(t, {3, 127}, 3, -100, 100)}, {}, 14), 0);
    }
  }
  ExpectCudaMatchesCpu(Case("Not", {RandomBool({1031}, 4)}, {}, 1), 0);
}

TEST(CudaElementwise, UnaryBfloat16) {
  VIGIL_SKIP_WITHOUT_CUDA();
  for (const char* op : {"Exp", "Sigmoid", "Tanh", "Relu", "Sqrt"}) {
    SCOPED_TRACE(op);
    ExpectCudaMatchesCpu(Case(op, {RandomTensor(DataType::kBfloat16, {4, 127}, 5, 0, 3)}, {}, 14), kF16Tol);
  }
}

TEST(CudaElementwise, IsInf) {
  VIGIL_SKIP_WITHOUT_CUDA();
  const float inf = std::numeric_limits<float>::infinity();
  Tensor x = ct::F32({6}, {inf, -inf, 1.0f, -2.0f, std::numeric_limits<float>::quiet_NaN(), 0.0f});
  for (int neg : {0, 1}) {
    for (int pos : {0, 1}) {
      ExpectCudaMatchesCpu(
          Case("IsInf", {x}, {ct::IntAttr("detect_negative", neg), ct::IntAttr("detect_positive", pos)}, 10), 0);
    }
  }
}

TEST(CudaElementwise, ActivationsWithAttributes) {
  VIGIL_SKIP_WITHOUT_CUDA();
  struct A {
    const char* op;
    std::vector<ir::Attribute> attrs;
    int64_t opset;
  };
  const std::vector<A> cases = {
      {"LeakyRelu", {}, 16},
      {"LeakyRelu", {ct::FloatAttr("alpha", 0.3f)}, 16},
      {"ThresholdedRelu", {}, 10},
      {"ThresholdedRelu", {ct::FloatAttr("alpha", -0.5f)}, 10},
      {"Elu", {}, 6},
      {"Elu", {ct::FloatAttr("alpha", 0.7f)}, 6},
      {"Selu", {}, 6},
      {"Selu", {ct::FloatAttr("alpha", 2.0f), ct::FloatAttr("gamma", 0.5f)}, 6},
      {"Celu", {}, 12},
      {"Celu", {ct::FloatAttr("alpha", 2.5f)}, 12},
      {"HardSigmoid", {}, 6},
      {"HardSigmoid", {ct::FloatAttr("alpha", 0.3f), ct::FloatAttr("beta", 0.4f)}, 6},
      {"Gelu", {}, 20},
      {"Gelu", {ct::StringAttr("approximate", "none")}, 20},
      {"Gelu", {ct::StringAttr("approximate", "tanh")}, 20},
      {"Shrink", {}, 9},
      {"Shrink", {ct::FloatAttr("lambd", 1.5f), ct::FloatAttr("bias", 0.25f)}, 9},
  };
  for (const auto& a : cases) {
    for (DataType t : kFloats) {
      SCOPED_TRACE(std::string(a.op) + " " + std::string(ir::DataTypeName(t)));
      ExpectCudaMatchesCpu(Case(a.op, {RandomTensor(t, {3, 127, 7}, 11, -4, 4)}, a.attrs, a.opset), Tol(t));
    }
  }
}

// Gelu in float16 and bfloat16 (elementwise_activation.cu's GeluHalfOp) over
// every input bit pattern, against GELU computed in double and rounded once
// to the dtype: float16 within 1 unit in the last place everywhere,
// bfloat16 too for x >= -6; below, where GELU is under 1e-8, within 10% of
// the exact value while that is a normal number, and under 2^-125 in
// magnitude after. NaN gives NaN, +inf gives +inf, -inf NaN (as the CPU).
TEST(CudaElementwise, GeluHalfOverEveryInput) {
  VIGIL_SKIP_WITHOUT_CUDA();
  auto cuda = testing::CudaBackendForTests();
  for (DataType t : {DataType::kFloat16, DataType::kBfloat16}) {
    SCOPED_TRACE(std::string(ir::DataTypeName(t)));
    const bool half = t == DataType::kFloat16;
    auto x = Tensor::Allocate(t, {65536});
    ASSERT_TRUE(x.ok());
    for (uint32_t i = 0; i < 65536; ++i) x->data<uint16_t>()[i] = static_cast<uint16_t>(i);
    auto out = testing::RunOn(Case("Gelu", {*x}, {}, 20), {cuda}, /*no_fallback=*/true);
    ASSERT_EQ(out.size(), 1u);
    const Tensor& y = out[0].tensor;
    ASSERT_EQ(y.element_count(), 65536u);
    auto to_float = [&](uint16_t b) { return half ? Float16ToFloat(b) : Bfloat16ToFloat(b); };
    // Position on one line of all values (negative ones mirrored), so that
    // neighbouring representable values differ by 1.
    auto ordered = [](uint16_t b) { return b & 0x8000 ? -static_cast<int32_t>(b & 0x7fff) : static_cast<int32_t>(b); };
    int64_t off_by_one = 0, worst = 0;
    for (uint32_t i = 0; i < 65536; ++i) {
      const uint16_t xb = static_cast<uint16_t>(i), yb = y.data<uint16_t>()[i];
      const double xv = to_float(xb), got = to_float(yb);
      if (std::isnan(xv) || xv == -std::numeric_limits<double>::infinity()) {
        EXPECT_TRUE(std::isnan(got)) << "x " << xv;
        continue;
      }
      const double exact = 0.5 * xv * std::erfc(-xv / std::sqrt(2.0));
      const uint16_t wb = half ? FloatToFloat16(static_cast<float>(exact)) : FloatToBfloat16(static_cast<float>(exact));
      const int64_t ulps = std::abs(int64_t{ordered(yb)} - ordered(wb));
      off_by_one += ulps == 1;
      if (half || xv >= -6.0) {
        EXPECT_LE(ulps, 1) << "x " << xv << ": got " << got << ", exact " << exact;
        worst = std::max(worst, ulps);
      } else if (std::abs(exact) >= std::numeric_limits<float>::min()) {
        EXPECT_LE(std::abs(got - exact), 0.1 * std::abs(exact)) << "x " << xv << ": got " << got;
      } else {
        EXPECT_LE(std::abs(got), std::ldexp(1.0, -125)) << "x " << xv << ": got " << got;
      }
    }
    std::printf("[ info ] Gelu %s over every input: %lld off by one unit in the last place, worst %lld\n",
                std::string(ir::DataTypeName(t)).c_str(), static_cast<long long>(off_by_one),
                static_cast<long long>(worst));
  }
}

// --- Clip --------------------------------------------------------------------------------

TEST(CudaElementwise, ClipAttributes) {
  VIGIL_SKIP_WITHOUT_CUDA();
  const std::vector<std::vector<ir::Attribute>> attrs = {
      {},
      {ct::FloatAttr("min", -0.5f)},
      {ct::FloatAttr("max", 0.25f)},
      {ct::FloatAttr("min", -0.5f), ct::FloatAttr("max", 0.25f)},
      {ct::FloatAttr("min", 0.5f), ct::FloatAttr("max", -0.5f)},  // min > max: all max
  };
  for (const auto& a : attrs) {
    for (DataType t : kFloats) {
      ExpectCudaMatchesCpu(Case("Clip", {RandomTensor(t, {5, 13}, 2, -1, 1)}, a, 6), Tol(t));
    }
  }
}

TEST(CudaElementwise, ClipInputs) {
  VIGIL_SKIP_WITHOUT_CUDA();
  for (DataType t : {DataType::kFloat32, DataType::kFloat16, DataType::kInt32, DataType::kInt64}) {
    const bool is_int = t == DataType::kInt32 || t == DataType::kInt64;
    const float scale = is_int ? 50 : 1;
    Tensor lo = RandomTensor(t, {}, 21, -0.5f * scale, -0.5f * scale);
    Tensor hi = RandomTensor(t, {}, 22, 0.3f * scale, 0.3f * scale);
    struct Bounds {
      Tensor min, max;
    };
    const std::vector<Bounds> bounds = {{lo, hi}, {lo, Tensor()}, {Tensor(), hi}, {Tensor(), Tensor()}, {hi, lo}};
    for (const auto& b : bounds) {
      NodeCase c = Case("Clip", {RandomTensor(t, {2, 127, 3}, 23, -scale, scale), b.min, b.max}, {}, 13);
      c.constant = {false, true, true};
      SCOPED_TRACE(std::string(ir::DataTypeName(t)));
      ExpectCudaMatchesCpu(c, is_int ? 0 : Tol(t));
    }
  }
}

// --- Binary arithmetic with broadcasting ------------------------------------------------------

struct ShapePair {
  std::vector<int64_t> a, b;
};
const std::vector<ShapePair> kBroadcasts = {
    {{1031}, {1031}},                   // same shape: the flat path
    {{2, 127, 5}, {}},                  // scalar B
    {{}, {3, 13}},                      // scalar A
    {{2, 3, 13}, {3, 1}},               // trailing 1
    {{4, 127, 5, 7}, {1, 127, 1, 1}},   // per-channel
    {{127, 1}, {1, 13}},                // outer product
    {{2, 1, 3, 1, 5}, {7, 1, 4, 1}},    // both broadcast, rank differs
    {{0, 3}, {3}},                      // empty output
};

TEST(CudaElementwise, BinaryArithmeticFloat) {
  VIGIL_SKIP_WITHOUT_CUDA();
  for (const char* op : {"Add", "Sub", "Mul", "Div"}) {
    for (DataType t : {DataType::kFloat32, DataType::kFloat16, DataType::kBfloat16}) {
      for (const auto& s : kBroadcasts) {
        SCOPED_TRACE(std::string(op) + " " + std::string(ir::DataTypeName(t)));
        // Divisors kept away from 0.
        Tensor a = RandomTensor(t, s.a, 31, -2, 2);
        Tensor b = RandomTensor(t, s.b, 32, 0.5f, 2);
        ExpectCudaMatchesCpu(Case(op, {a, b}, {}, 14), Tol(t));
      }
    }
  }
}

TEST(CudaElementwise, BinaryArithmeticInteger) {
  VIGIL_SKIP_WITHOUT_CUDA();
  for (const char* op : {"Add", "Sub", "Mul", "Div"}) {
    for (DataType t : {DataType::kInt32, DataType::kInt64}) {
      for (const auto& s : kBroadcasts) {
        SCOPED_TRACE(std::string(op) + " " + std::string(ir::DataTypeName(t)));
        Tensor a = RandomTensor(t, s.a, 33, -1000, 1000);
        Tensor b = RandomTensor(t, s.b, 34, 1, 9);  // Div truncates toward zero
        ExpectCudaMatchesCpu(Case(op, {a, b}, {}, 14), 0);
        Tensor nb = RandomTensor(t, s.b, 35, -9, -1);
        ExpectCudaMatchesCpu(Case(op, {a, nb}, {}, 14), 0);
      }
    }
  }
  // Position ids: int64 arithmetic against a scalar.
  ExpectCudaMatchesCpu(Case("Sub", {RandomTensor(DataType::kInt64, {1, 77}, 36, 0, 100), ct::I64({}, {1})}, {}, 14),
                       0);
  // Wrapping: INT32_MAX + 1 and MIN / -1.
  Tensor big = ct::MakeTensor(DataType::kInt32, {2}, std::vector<int32_t>{INT32_MAX, INT32_MIN});
  ExpectCudaMatchesCpu(Case("Add", {big, ct::MakeTensor(DataType::kInt32, {1}, std::vector<int32_t>{1})}, {}, 14), 0);
  ExpectCudaMatchesCpu(Case("Div", {big, ct::MakeTensor(DataType::kInt32, {1}, std::vector<int32_t>{-1})}, {}, 14), 0);
}

// int8 / uint8 Add, Sub and Mul wrap as numpy does (the values are chosen to
// overflow often). Div, Mod and the other widths: dtypes_test.cpp.
TEST(CudaElementwise, BinaryArithmeticSmallIntegers) {
  VIGIL_SKIP_WITHOUT_CUDA();
  for (const char* op : {"Add", "Sub", "Mul"}) {
    for (DataType t : {DataType::kInt8, DataType::kUint8}) {
      const float lo = t == DataType::kInt8 ? -128 : 0, hi = t == DataType::kInt8 ? 128 : 256;
      for (const auto& s : kBroadcasts) {
        SCOPED_TRACE(std::string(op) + " " + std::string(ir::DataTypeName(t)));
        ExpectCudaMatchesCpu(Case(op, {RandomTensor(t, s.a, 37, lo, hi), RandomTensor(t, s.b, 38, lo, hi)}, {}, 14), 0);
      }
    }
  }
}

TEST(CudaElementwise, LegacyBroadcastAttribute) {
  VIGIL_SKIP_WITHOUT_CUDA();
  Tensor a = RandomTensor(DataType::kFloat32, {2, 127, 5, 3}, 41);
  Tensor b = RandomTensor(DataType::kFloat32, {127}, 42);
  ExpectCudaMatchesCpu(Case("Add", {a, b}, {ct::IntAttr("broadcast", 1), ct::IntAttr("axis", 1)}, 6), kF32Tol);
  Tensor c = RandomTensor(DataType::kFloat32, {5, 3}, 43);
  ExpectCudaMatchesCpu(Case("Mul", {a, c}, {ct::IntAttr("broadcast", 1)}, 6), kF32Tol);
  ExpectCudaMatchesCpu(Case("Sub", {a, a}, {}, 6), kF32Tol);
}

TEST(CudaElementwise, Mod) {
  VIGIL_SKIP_WITHOUT_CUDA();
  for (int fmod : {0, 1}) {
    for (DataType t : {DataType::kFloat32, DataType::kFloat16}) {
      Tensor a = RandomTensor(t, {3, 127}, 51, -10, 10);
      Tensor b = RandomTensor(t, {127}, 52, 0.5f, 3);
      Tensor nb = RandomTensor(t, {127}, 53, -3, -0.5f);
      ExpectCudaMatchesCpu(Case("Mod", {a, b}, {ct::IntAttr("fmod", fmod)}, 13), Tol(t));
      ExpectCudaMatchesCpu(Case("Mod", {a, nb}, {ct::IntAttr("fmod", fmod)}, 13), Tol(t));
    }
    for (DataType t : {DataType::kInt32, DataType::kInt64}) {
      Tensor a = RandomTensor(t, {3, 127}, 54, -100, 100);
      Tensor b = RandomTensor(t, {127}, 55, 1, 7);
      Tensor nb = RandomTensor(t, {1}, 56, -7, -2);
      ExpectCudaMatchesCpu(Case("Mod", {a, b}, {ct::IntAttr("fmod", fmod)}, 13), 0);
      ExpectCudaMatchesCpu(Case("Mod", {a, nb}, {ct::IntAttr("fmod", fmod)}, 13), 0);
    }
  }
}

TEST(CudaElementwise, Pow) {
  VIGIL_SKIP_WITHOUT_CUDA();
  for (DataType t : kFloats) {
    Tensor base = RandomTensor(t, {3, 127}, 61, 0.1f, 3);
    // pow is accurate to a few ulp in float; the CPU computes in double.
    ExpectCudaMatchesCpu(Case("Pow", {base, RandomTensor(t, {127}, 62, -2, 3)}, {}, 15), Tol(t));
    Tensor signed_base = RandomTensor(t, {3, 127}, 63, -3, 3);
    ExpectCudaMatchesCpu(Case("Pow", {signed_base, ct::I64({}, {2})}, {}, 15), Tol(t));
    ExpectCudaMatchesCpu(Case("Pow", {signed_base, ct::I64({}, {3})}, {}, 15), Tol(t));
    ExpectCudaMatchesCpu(Case("Pow", {signed_base, ct::F32({}, {2.0f})}, {}, 15), Tol(t));
  }
  for (DataType t : {DataType::kInt32, DataType::kInt64}) {
    Tensor base = RandomTensor(t, {2, 13}, 64, -5, 5);
    ExpectCudaMatchesCpu(Case("Pow", {base, RandomTensor(DataType::kInt64, {13}, 65, -2, 6)}, {}, 15), 0);
    ExpectCudaMatchesCpu(Case("Pow", {base, RandomTensor(DataType::kInt32, {2, 1}, 66, 0, 4)}, {}, 15), 0);
  }
}

// --- Comparisons and logic ----------------------------------------------------------------------

TEST(CudaElementwise, Comparisons) {
  VIGIL_SKIP_WITHOUT_CUDA();
  for (const char* op : {"Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual"}) {
    for (DataType t : {DataType::kFloat32, DataType::kFloat16, DataType::kInt32, DataType::kInt64, DataType::kInt8,
                       DataType::kUint8}) {
      for (const auto& s : kBroadcasts) {
        SCOPED_TRACE(std::string(op) + " " + std::string(ir::DataTypeName(t)));
        // A small range so that Equal finds equal pairs (uint8 takes the
        // non-negative half).
        Tensor a = RandomTensor(t, s.a, 71, -3, 3);
        Tensor b = RandomTensor(t, s.b, 72, -3, 3);
        ExpectCudaMatchesCpu(Case(op, {a, b}, {}, 16), 0);
      }
    }
  }
  ExpectCudaMatchesCpu(Case("Equal", {RandomBool({3, 13}, 73), RandomBool({13}, 74)}, {}, 13), 0);
}

TEST(CudaElementwise, Logic) {
  VIGIL_SKIP_WITHOUT_CUDA();
  for (const char* op : {"And", "Or", "Xor"}) {
    for (const auto& s : kBroadcasts) {
      SCOPED_TRACE(op);
      ExpectCudaMatchesCpu(Case(op, {RandomBool(s.a, 81), RandomBool(s.b, 82)}, {}, 7), 0);
    }
  }
}

// --- Variadic -------------------------------------------------------------------------------------

TEST(CudaElementwise, Variadic) {
  VIGIL_SKIP_WITHOUT_CUDA();
  const std::vector<std::vector<std::vector<int64_t>>> shape_sets = {
      {{2, 127, 3}},
      {{2, 127, 3}, {2, 127, 3}},
      {{127, 1}, {1, 13}},
      {{3}, {2, 1, 3}, {4, 1}},
      {{13}, {13}, {1}, {2, 13}},
  };
  for (const char* op : {"Sum", "Mean", "Max", "Min"}) {
    for (DataType t : kFloats) {
      for (const auto& shapes : shape_sets) {
        std::vector<Tensor> inputs;
        for (size_t i = 0; i < shapes.size(); ++i) inputs.push_back(RandomTensor(t, shapes[i], 90 + i, -2, 2));
        SCOPED_TRACE(std::string(op) + " " + std::string(ir::DataTypeName(t)) + " inputs " +
                     std::to_string(shapes.size()));
        ExpectCudaMatchesCpu(Case(op, inputs, {}, 13), Tol(t));
      }
    }
  }
  for (const char* op : {"Sum", "Max", "Min"}) {
    for (DataType t : {DataType::kInt64, DataType::kInt8, DataType::kUint8}) {
      SCOPED_TRACE(std::string(op) + " " + std::string(ir::DataTypeName(t)));
      const float lo = t == DataType::kUint8 ? 0 : t == DataType::kInt8 ? -128 : -50;
      const float hi = t == DataType::kUint8 ? 256 : t == DataType::kInt8 ? 128 : 50;
      std::vector<Tensor> inputs = {RandomTensor(t, {3, 13}, 95, lo, hi), RandomTensor(t, {13}, 96, lo, hi),
                                    RandomTensor(t, {3, 1}, 97, lo, hi)};
      ExpectCudaMatchesCpu(Case(op, inputs, {}, 13), 0);
    }
  }
}

// --- Where, PRelu --------------------------------------------------------------------------------------

TEST(CudaElementwise, Where) {
  VIGIL_SKIP_WITHOUT_CUDA();
  const std::vector<std::vector<std::vector<int64_t>>> shape_sets = {
      {{1031}, {1031}, {1031}},
      {{2, 127, 3}, {}, {2, 127, 3}},
      {{127, 1}, {1, 13}, {13}},
      {{1, 1, 5}, {4, 1, 1}, {3, 1}},
  };
  for (DataType t : {DataType::kFloat32, DataType::kFloat16, DataType::kInt64, DataType::kInt32}) {
    for (const auto& s : shape_sets) {
      SCOPED_TRACE(std::string(ir::DataTypeName(t)));
      ExpectCudaMatchesCpu(
          Case("Where", {RandomBool(s[0], 101), RandomTensor(t, s[1], 102, -9, 9), RandomTensor(t, s[2], 103, -9, 9)},
               {}, 16),
          0);
    }
  }
  ExpectCudaMatchesCpu(Case("Where", {RandomBool({13}, 104), RandomBool({13}, 105), RandomBool({1}, 106)}, {}, 16), 0);
}

TEST(CudaElementwise, PRelu) {
  VIGIL_SKIP_WITHOUT_CUDA();
  for (DataType t : kFloats) {
    Tensor x = RandomTensor(t, {2, 127, 5, 3}, 111, -2, 2);
    ExpectCudaMatchesCpu(Case("PRelu", {x, RandomTensor(t, {127, 1, 1}, 112, 0, 0.5f)}, {}, 16), Tol(t));
    ExpectCudaMatchesCpu(Case("PRelu", {x, RandomTensor(t, {1}, 113, 0, 0.5f)}, {}, 16), Tol(t));
    ExpectCudaMatchesCpu(Case("PRelu", {x, RandomTensor(t, {3}, 114, 0, 0.5f)}, {}, 16), Tol(t));
    // A [C] slope on NCHW: along the only dim equal to C (the reference's rule).
    ExpectCudaMatchesCpu(Case("PRelu", {x, RandomTensor(t, {127}, 115, 0, 0.5f)}, {}, 9), Tol(t));
    ExpectCudaMatchesCpu(Case("PRelu", {x, RandomTensor(t, {127}, 116, 0, 0.5f)}, {}, 6), Tol(t));
  }
}

// --- Cast -------------------------------------------------------------------------------------------------

TEST(CudaElementwise, Cast) {
  VIGIL_SKIP_WITHOUT_CUDA();
  const DataType types[] = {DataType::kFloat32, DataType::kFloat16, DataType::kBfloat16, DataType::kFloat64,
                            DataType::kInt8,    DataType::kUint8,   DataType::kInt32,    DataType::kInt64,
                            DataType::kBool};
  for (DataType from : types) {
    for (DataType to : types) {
      SCOPED_TRACE(std::string(ir::DataTypeName(from)) + " -> " + std::string(ir::DataTypeName(to)));
      // Values beyond int8's range and fractions: saturation and truncation.
      Tensor x = from == DataType::kBool ? RandomBool({3, 127}, 121) : RandomTensor(from, {3, 127}, 121, -300, 300);
      ExpectCudaMatchesCpu(Case("Cast", {x}, {ct::IntAttr("to", static_cast<int64_t>(to))}, 19), 0);
    }
  }
  // Rounding once: just above a float16 tie, which a float in between would
  // round onto the tie (round to odd keeps the difference).
  Tensor d = ct::MakeTensor(DataType::kFloat64, {4},
                            std::vector<double>{1.00048828125 + 1e-12, 65504.0, -2049.0000001, 3.14159});
  ExpectCudaMatchesCpu(Case("Cast", {d}, {ct::IntAttr("to", static_cast<int64_t>(DataType::kFloat16))}, 19), 0);
  Tensor nan = ct::F32({3}, {std::numeric_limits<float>::quiet_NaN(), 1e20f, -1e20f});
  ExpectCudaMatchesCpu(Case("Cast", {nan}, {ct::IntAttr("to", static_cast<int64_t>(DataType::kInt32))}, 19), 0);
  ExpectCudaMatchesCpu(Case("Cast", {nan}, {ct::IntAttr("to", static_cast<int64_t>(DataType::kBool))}, 19), 0);
}

TEST(CudaElementwise, CastLike) {
  VIGIL_SKIP_WITHOUT_CUDA();
  Tensor x = RandomTensor(DataType::kFloat32, {127}, 131, -4, 4);
  ExpectCudaMatchesCpu(Case("CastLike", {x, RandomTensor(DataType::kFloat16, {1}, 132)}, {}, 15), 0);
  ExpectCudaMatchesCpu(Case("CastLike", {x, RandomTensor(DataType::kInt64, {1}, 133)}, {}, 15), 0);
}

}  // namespace
}  // namespace vigil::cuda
