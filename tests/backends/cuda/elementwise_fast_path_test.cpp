// The fast paths of the CUDA elementwise kernels (elementwise_common.cuh)
// against the CPU reference: packs of up to 16 bytes per thread with a
// scalar tail (sizes 0, 1, 13, 127, 1031: not multiples of any pack width),
// the cheap broadcasts (a trailing vector, a per-channel and a per-row
// operand, scalars; shorter than a pack too, so that a pack wraps around
// them) on either side of a non-commutative op, and broadcasts that must
// take the generic map. float32, float16 and bfloat16, integers, and mixed
// storage widths (Pow's exponent, comparisons to bool, Cast).
#include <cstdint>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include "backends/cpu/kernel_test_util.h"
#include "backends/cuda/cuda_test_util.h"

namespace vigil::cuda {
namespace {

using ir::DataType;
using runtime::Tensor;
using testing::ExpectCudaMatchesCpu;
using testing::NodeCase;
using testing::RandomTensor;
namespace ct = cpu::testing;

using Shape = std::vector<int64_t>;

double Tol(DataType t) {
  if (t == DataType::kFloat32) return 1e-5;
  if (t == DataType::kFloat16 || t == DataType::kBfloat16) return 1e-2;
  return 0;
}

NodeCase Case(std::string op, std::vector<Tensor> inputs, std::vector<ir::Attribute> attrs = {}, int64_t opset = 17) {
  return testing::MakeCase(std::move(op), std::move(inputs), std::move(attrs), opset);
}

const DataType kFloats[] = {DataType::kFloat32, DataType::kFloat16, DataType::kBfloat16};
const Shape kOddSizes[] = {{0}, {1}, {13}, {127}, {1031}, {3, 0, 5}};

std::string Trace(const char* op, DataType t, const Shape& a, const Shape& b) {
  return fmt::format("{} {} [{}] [{}]", op, ir::DataTypeName(t), fmt::join(a, ","), fmt::join(b, ","));
}

TEST(CudaElementwiseFastPath, UnaryPacksAndTails) {
  VIGIL_SKIP_WITHOUT_CUDA();
  for (const char* op : {"Relu", "Sigmoid", "Erf", "Tanh"}) {
    for (DataType t : kFloats) {
      for (const Shape& s : kOddSizes) {
        SCOPED_TRACE(Trace(op, t, s, {}));
        ExpectCudaMatchesCpu(Case(op, {RandomTensor(t, s, 3, -4, 4)}, {}, 14), Tol(t));
      }
    }
  }
  // Integers (4 and 2 per pack) and Clip with bounds.
  for (DataType t : {DataType::kInt32, DataType::kInt64}) {
    for (const Shape& s : kOddSizes) {
      SCOPED_TRACE(Trace("Relu/Neg", t, s, {}));
      ExpectCudaMatchesCpu(Case("Relu", {RandomTensor(t, s, 4, -100, 100)}, {}, 14), 0);
      ExpectCudaMatchesCpu(Case("Neg", {RandomTensor(t, s, 5, -100, 100)}, {}, 13), 0);
    }
  }
  for (DataType t : {DataType::kFloat32, DataType::kFloat16}) {
    for (const Shape& s : kOddSizes) {
      SCOPED_TRACE(Trace("Clip", t, s, {}));
      ExpectCudaMatchesCpu(
          Case("Clip", {RandomTensor(t, s, 6, -8, 8)}, {ct::FloatAttr("min", 0.0f), ct::FloatAttr("max", 6.0f)}, 6),
          Tol(t));
    }
  }
}

TEST(CudaElementwiseFastPath, CastAcrossStorageWidths) {
  VIGIL_SKIP_WITHOUT_CUDA();
  const std::pair<DataType, DataType> casts[] = {
      {DataType::kFloat32, DataType::kFloat16}, {DataType::kFloat16, DataType::kFloat32},
      {DataType::kFloat32, DataType::kInt64},   {DataType::kInt64, DataType::kFloat16},
      {DataType::kFloat64, DataType::kFloat32}, {DataType::kFloat16, DataType::kBool},
      {DataType::kBool, DataType::kFloat32},    {DataType::kUint8, DataType::kBfloat16}};
  for (auto [from, to] : casts) {
    for (const Shape& s : kOddSizes) {
      SCOPED_TRACE(Trace("Cast", from, s, {}) + " to " + std::string(ir::DataTypeName(to)));
      ExpectCudaMatchesCpu(Case("Cast", {RandomTensor(from, s, 7, -50, 50)},
                                {ct::IntAttr("to", static_cast<int64_t>(to))}, 13),
                           Tol(to));
    }
  }
}

// Shapes of (A, B) broadcast pairs, each of which hits one operand plan.
struct Pair {
  Shape a, b;
};

// Same shapes (both operands contiguous) and scalars.
const Pair kFlatPairs[] = {{{0}, {0}},       {{1}, {1}},     {{13}, {13}},     {{127}, {127}},
                           {{3, 1031}, {3, 1031}}, {{13}, {}}, {{}, {127}}, {{5, 7}, {1, 1}}};
// One cheap broadcast each: a trailing vector (also shorter than a pack of 8
// halves, so a pack wraps around it more than once), a per-channel NCHW
// operand, a per-row [N,C,1,1] one, a leading one ([C,1,1] against [C,H,W])
// and a middle one that merges ([1,C,1] against [N,C,W]).
const Pair kCheapPairs[] = {{{3, 13, 127}, {127}},     {{2, 197, 24}, {24}},       {{4, 3}, {3}},
                            {{7, 5}, {5}},             {{2, 13, 5, 7}, {13, 1, 1}}, {{2, 3, 4, 4}, {3, 1, 1}},
                            {{2, 13, 5, 7}, {2, 13, 1, 1}}, {{13, 5, 7}, {13, 1, 1}}, {{3, 7, 2}, {1, 7, 1}},
                            {{5, 1, 13}, {1, 13}}};
// Both operands broadcast, or an operand strided along two merged dims: the
// generic map.
const Pair kGenericPairs[] = {{{2, 1, 5}, {1, 3, 1}}, {{2, 3, 1, 5}, {3, 4, 1}}, {{13, 1}, {1, 127}},
                              {{2, 3, 5, 7}, {2, 1, 5, 1}}};

void ExpectBinary(const char* op, DataType t, const Pair& p, float lo, float hi, bool swap) {
  const Shape& a = swap ? p.b : p.a;
  const Shape& b = swap ? p.a : p.b;
  SCOPED_TRACE(Trace(op, t, a, b));
  ExpectCudaMatchesCpu(Case(op, {RandomTensor(t, a, 11, lo, hi), RandomTensor(t, b, 12, lo, hi)}, {}, 14), Tol(t));
}

TEST(CudaElementwiseFastPath, BinaryContiguousAndScalar) {
  VIGIL_SKIP_WITHOUT_CUDA();
  for (const char* op : {"Add", "Sub", "Mul", "Div"}) {
    for (DataType t : kFloats) {
      for (const Pair& p : kFlatPairs) ExpectBinary(op, t, p, 0.5f, 2, false);
    }
  }
  for (DataType t : {DataType::kInt32, DataType::kInt64}) {
    for (const Pair& p : kFlatPairs) ExpectBinary("Add", t, p, -100, 100, false);
  }
}

TEST(CudaElementwiseFastPath, BinaryCheapBroadcasts) {
  VIGIL_SKIP_WITHOUT_CUDA();
  for (const char* op : {"Add", "Sub", "Div"}) {
    for (DataType t : kFloats) {
      for (const Pair& p : kCheapPairs) {
        ExpectBinary(op, t, p, 0.5f, 2, false);
        ExpectBinary(op, t, p, 0.5f, 2, true);  // the broadcast operand first
      }
    }
  }
  for (const Pair& p : kCheapPairs) ExpectBinary("Mul", DataType::kInt64, p, -100, 100, true);
}

TEST(CudaElementwiseFastPath, BinaryGenericBroadcasts) {
  VIGIL_SKIP_WITHOUT_CUDA();
  for (DataType t : kFloats) {
    for (const Pair& p : kGenericPairs) {
      ExpectBinary("Sub", t, p, -2, 2, false);
      ExpectBinary("Sub", t, p, -2, 2, true);
    }
  }
}

TEST(CudaElementwiseFastPath, MixedStorageWidths) {
  VIGIL_SKIP_WITHOUT_CUDA();
  // Comparisons: 8 halves per pack in, 8 bools out; And: 16 bools per pack.
  for (const Pair& p : {Pair{{3, 127}, {3, 127}}, Pair{{3, 13, 127}, {127}}, Pair{{2, 13, 5, 7}, {13, 1, 1}}}) {
    SCOPED_TRACE(Trace("Less/And", DataType::kFloat16, p.a, p.b));
    ExpectCudaMatchesCpu(Case("Less", {RandomTensor(DataType::kFloat16, p.a, 1), RandomTensor(DataType::kFloat16, p.b, 2)},
                              {}, 13),
                         0);
    ExpectCudaMatchesCpu(Case("And", {RandomTensor(DataType::kBool, p.a, 3), RandomTensor(DataType::kBool, p.b, 4)},
                              {}, 7),
                         0);
  }
  // Pow: a float16 base with a float32 or int64 exponent (packs of 4, 2).
  for (DataType e : {DataType::kFloat32, DataType::kInt64}) {
    for (const Pair& p : {Pair{{1031}, {1031}}, Pair{{3, 13, 127}, {127}}, Pair{{13}, {}}}) {
      SCOPED_TRACE(Trace("Pow", e, p.a, p.b));
      ExpectCudaMatchesCpu(
          Case("Pow", {RandomTensor(DataType::kFloat16, p.a, 5, 0.5f, 2), RandomTensor(e, p.b, 6, 0, 3)}, {}, 15),
          1e-2);
    }
  }
}

TEST(CudaElementwiseFastPath, VariadicAndWhereBroadcasts) {
  VIGIL_SKIP_WITHOUT_CUDA();
  for (DataType t : kFloats) {
    SCOPED_TRACE(ir::DataTypeName(t));
    // Sum accumulates into its output: contiguous, trailing and generic.
    ExpectCudaMatchesCpu(Case("Sum", {RandomTensor(t, {127}, 1), RandomTensor(t, {3, 127}, 2),
                                      RandomTensor(t, {3, 1}, 3), RandomTensor(t, {1, 127}, 4)},
                              {}, 13),
                         Tol(t));
    ExpectCudaMatchesCpu(Case("Where", {RandomTensor(DataType::kBool, {13, 1}, 5), RandomTensor(t, {13, 127}, 6),
                                        RandomTensor(t, {127}, 7)},
                              {}, 16),
                         0);
  }
}

}  // namespace
}  // namespace vigil::cuda
