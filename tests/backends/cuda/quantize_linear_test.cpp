// QuantizeLinear and DequantizeLinear on the GPU (backends/cuda/quantize_linear.cu)
// against the CPU kernels, bit for bit: every output element must be equal,
// the float outputs of DequantizeLinear too. Each case runs as a one-node
// session on the CUDA backend without fallback, so a node the CUDA kernel
// refused would fail the test at load. Covered: float32, float16 and
// bfloat16 data and scales; uint8, int8, uint16, int16 (and int32 into
// DequantizeLinear); per-tensor, per-axis (axis 1 and -1) and blocked scales
// with a short last block, on odd sizes (13, 127); with and without a zero
// point; quotients exactly on a half (round half to even), NaN, infinities
// and values far past the integer range (saturation). DynamicQuantizeLinear
// on sizes from 0 to 20,000 elements, ranges of both signs, all-zero input,
// and NaN (the GPU's NaN scale where the CPU fails). Also: the dtypes the
// kernels leave to the CPU are refused at load with the reason.
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "backends/cpu/kernel_test_util.h"
#include "backends/cuda/cuda_test_util.h"

namespace vigil::cuda {
namespace {

using ir::DataType;
using runtime::Tensor;
using testing::ExpectCudaMatchesCpu;
using testing::NodeCase;
namespace ct = cpu::testing;

const Tensor kOmitted;  // an omitted optional input

// A float tensor of dtype t: random multiples of 1/4 in [-range, range], so
// that x / 0.5 often lies exactly on a half, with NaN, +-inf and values far
// out of range at fixed places.
Tensor QuantizeInput(DataType t, std::vector<int64_t> shape, uint32_t seed, float range) {
  Tensor x = testing::RandomTensor(t, std::move(shape), seed, -range, range);
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> quarter(static_cast<int>(-4 * range), static_cast<int>(4 * range));
  const size_t n = x.element_count();
  for (size_t i = 0; i < n; ++i) {
    float v = quarter(rng) / 4.0f;
    if (i % 97 == 5) v = NAN;
    if (i % 89 == 7) v = (i % 2) ? INFINITY : -INFINITY;
    if (i % 83 == 11) v = (i % 2 ? 1 : -1) * 1e6f;
    switch (t) {
      case DataType::kFloat32: x.data<float>()[i] = v; break;
      case DataType::kFloat16: x.data<uint16_t>()[i] = FloatToFloat16(v); break;
      case DataType::kBfloat16: x.data<uint16_t>()[i] = FloatToBfloat16(v); break;
      default: ADD_FAILURE() << "QuantizeInput: dtype";
    }
  }
  return x;
}

// Random integers of a quantized dtype over its whole range.
Tensor IntTensor(DataType t, std::vector<int64_t> shape, uint32_t seed) {
  Tensor x = Tensor::Allocate(t, std::move(shape)).value();
  std::mt19937 rng(seed);
  const size_t n = x.element_count();
  for (size_t i = 0; i < n; ++i) {
    const uint32_t r = rng();
    switch (t) {
      case DataType::kUint8: x.data<uint8_t>()[i] = static_cast<uint8_t>(r); break;
      case DataType::kInt8: x.data<int8_t>()[i] = static_cast<int8_t>(r); break;
      case DataType::kUint16: x.data<uint16_t>()[i] = static_cast<uint16_t>(r); break;
      case DataType::kInt16: x.data<int16_t>()[i] = static_cast<int16_t>(r); break;
      case DataType::kInt32: x.data<int32_t>()[i] = static_cast<int32_t>(r); break;
      default: ADD_FAILURE() << "IntTensor: dtype";
    }
  }
  return x;
}

// Scales: positive, some exactly 0.5 (ties), of dtype t.
Tensor Scales(DataType t, std::vector<int64_t> shape, uint32_t seed) {
  Tensor s = testing::RandomTensor(t, std::move(shape), seed, 0.01f, 3.0f);
  if (s.element_count() > 0) {
    for (size_t i = 0; i < s.element_count(); i += 2) {
      switch (t) {
        case DataType::kFloat32: s.data<float>()[i] = 0.5f; break;
        case DataType::kFloat16: s.data<uint16_t>()[i] = FloatToFloat16(0.5f); break;
        case DataType::kBfloat16: s.data<uint16_t>()[i] = FloatToBfloat16(0.5f); break;
        default: break;
      }
    }
  }
  return s;
}

struct Layout {
  const char* name;
  std::vector<int64_t> x;      // x's shape
  std::vector<int64_t> scale;  // the scale's (and zero point's) shape
  int64_t axis;
  int64_t block_size;  // 0: not blocked
  int64_t opset;
};

const Layout kLayouts[] = {
    {"per-tensor", {3, 127}, {}, 1, 0, 13},
    {"per-tensor [1]", {13}, {1}, 1, 0, 13},
    {"per-tensor, 7 blocks of the 4-wide kernel and a tail of 3", {7, 1001}, {}, 1, 0, 13},
    {"per-axis 1", {2, 13, 5}, {13}, 1, 0, 13},
    {"per-axis -1", {3, 5, 127}, {127}, -1, 0, 19},
    {"blocked", {2, 13, 3}, {2, 4, 3}, 1, 4, 21},  // 13 = 4 + 4 + 4 + 1
};

std::vector<ir::Attribute> Attrs(const Layout& l) {
  std::vector<ir::Attribute> a = {ct::IntAttr("axis", l.axis)};
  if (l.block_size) a.push_back(ct::IntAttr("block_size", l.block_size));
  return a;
}

TEST(CudaQuantizeLinear, MatchesCpuBitForBit) {
  VIGIL_SKIP_WITHOUT_CUDA();
  uint32_t seed = 100;
  for (const Layout& l : kLayouts) {
    for (DataType xt : {DataType::kFloat32, DataType::kFloat16, DataType::kBfloat16}) {
      // A scale of x's own type (and float32 for 16-bit x; opset 19+ allows it).
      std::vector<DataType> scale_types = {xt};
      if (xt != DataType::kFloat32 && l.opset >= 19) scale_types.push_back(DataType::kFloat32);
      for (DataType st : scale_types) {
        if (l.opset < 19 && st != DataType::kFloat32) continue;
        for (DataType qt : {DataType::kUint8, DataType::kInt8, DataType::kUint16, DataType::kInt16}) {
          for (bool with_zp : {true, false}) {
            if (!with_zp && qt != DataType::kUint8) continue;  // without a zero point the output is uint8
            SCOPED_TRACE(std::string(l.name) + " x " + std::string(ir::DataTypeName(xt)) + " scale " +
                         std::string(ir::DataTypeName(st)) + " to " + std::string(ir::DataTypeName(qt)) +
                         (with_zp ? " with zero point" : ""));
            const int64_t opset = (qt == DataType::kUint16 || qt == DataType::kInt16) ? std::max<int64_t>(l.opset, 21)
                                                                                      : l.opset;
            std::vector<Tensor> inputs = {QuantizeInput(xt, l.x, ++seed, 300), Scales(st, l.scale, ++seed)};
            if (with_zp) inputs.push_back(IntTensor(qt, l.scale, ++seed));
            ExpectCudaMatchesCpu(testing::MakeCase("QuantizeLinear", inputs, Attrs(l), opset), 0);
          }
        }
      }
    }
  }
}

TEST(CudaDequantizeLinear, MatchesCpuBitForBit) {
  VIGIL_SKIP_WITHOUT_CUDA();
  uint32_t seed = 500;
  for (const Layout& l : kLayouts) {
    for (DataType qt : {DataType::kUint8, DataType::kInt8, DataType::kUint16, DataType::kInt16, DataType::kInt32}) {
      for (DataType st : {DataType::kFloat32, DataType::kFloat16, DataType::kBfloat16}) {
        if (l.opset < 19 && st != DataType::kFloat32) continue;
        for (bool with_zp : {true, false}) {
          SCOPED_TRACE(std::string(l.name) + " x " + std::string(ir::DataTypeName(qt)) + " scale " +
                       std::string(ir::DataTypeName(st)) + (with_zp ? " with zero point" : ""));
          const int64_t opset =
              (qt == DataType::kUint16 || qt == DataType::kInt16) ? std::max<int64_t>(l.opset, 21) : l.opset;
          std::vector<Tensor> inputs = {IntTensor(qt, l.x, ++seed), Scales(st, l.scale, ++seed)};
          if (with_zp) inputs.push_back(IntTensor(qt, l.scale, ++seed));
          ExpectCudaMatchesCpu(testing::MakeCase("DequantizeLinear", inputs, Attrs(l), opset), 0);
        }
      }
    }
  }
}

// A QDQ pair as quantization tools write it, through one session: both
// nodes on the device, the round trip equal to the CPU's.
TEST(CudaQuantizeLinear, RoundTripInOneSession) {
  VIGIL_SKIP_WITHOUT_CUDA();
  for (DataType qt : {DataType::kInt8, DataType::kUint8}) {
    NodeCase q = testing::MakeCase("QuantizeLinear",
                                   {QuantizeInput(DataType::kFloat32, {1, 13, 7, 7}, 7, 60),
                                    Scales(DataType::kFloat32, {13}, 8), IntTensor(qt, {13}, 9)},
                                   {ct::IntAttr("axis", 1)}, 13);
    ExpectCudaMatchesCpu(q, 0);
  }
}

TEST(CudaDynamicQuantizeLinear, MatchesCpuBitForBit) {
  VIGIL_SKIP_WITHOUT_CUDA();
  struct Range {
    std::vector<int64_t> shape;
    float lo, hi;
  };
  const Range ranges[] = {{{13}, -3, 5},       {{3, 127}, -1, 1},   {{2, 5, 127}, 0.5f, 9},
                          {{127}, -7, -0.25f}, {{20000}, -60, 20},  {{1}, 2, 2},
                          {{0}, -1, 1},        {{7, 13}, 0, 0}};
  uint32_t seed = 900;
  for (const Range& r : ranges) {
    SCOPED_TRACE("values in [" + std::to_string(r.lo) + ", " + std::to_string(r.hi) + "), " +
                 std::to_string(r.shape.size()) + "-D");
    NodeCase c = testing::MakeCase(
        "DynamicQuantizeLinear", {testing::RandomTensor(DataType::kFloat32, r.shape, ++seed, r.lo, r.hi)}, {}, 11);
    c.outputs = 3;
    ExpectCudaMatchesCpu(c, 0);
  }
}

TEST(CudaDynamicQuantizeLinear, NanGivesANanScale) {
  VIGIL_SKIP_WITHOUT_CUDA();
  Tensor x = testing::RandomTensor(DataType::kFloat32, {127}, 3, -1, 1);
  x.data<float>()[100] = NAN;
  NodeCase c = testing::MakeCase("DynamicQuantizeLinear", {x}, {}, 11);
  c.outputs = 3;
  auto got = testing::RunOn(c, {testing::CudaBackendForTests(), cpu::MakeCpuBackend()}, /*no_fallback=*/true);
  ASSERT_EQ(got.size(), 3u);
  EXPECT_TRUE(std::isnan(got[1].tensor.data<float>()[0]));
  EXPECT_EQ(got[2].tensor.data<uint8_t>()[0], 0);
}

TEST(CudaQuantizeLinear, RefusesWhatStaysOnTheCpu) {
  VIGIL_SKIP_WITHOUT_CUDA();
  auto backend = testing::CudaBackendForTests();
  const ir::Node q = ct::MakeNode("QuantizeLinear", {"x", "s", "z"}, {"y"});
  const ir::Node dq = ct::MakeNode("DequantizeLinear", {"x", "s", "z"}, {"y"});
  const ir::Node dyn = ct::MakeNode("DynamicQuantizeLinear", {"x"}, {"y", "s", "z"});
  auto type = [](DataType t) { return ops::TensorType(t, std::vector<int64_t>{13}); };
  const ir::TypeInfo f64 = type(DataType::kFloat64), f32 = type(DataType::kFloat32), u8 = type(DataType::kUint8),
                     i32 = type(DataType::kInt32), f8 = type(DataType::kFloat8E4M3FN), f16 = type(DataType::kFloat16);
  struct Refusal {
    const ir::Node* node;
    std::vector<const ir::TypeInfo*> in, out;
    const char* reason;
  };
  const Refusal refusals[] = {
      {&q, {&f64, &f64, &u8}, {&u8}, "float64"},
      {&q, {&i32, &f32, &u8}, {&u8}, "int32"},
      {&q, {&f32, &f32, &f8}, {&f8}, "float8_e4m3fn"},
      {&dq, {&f8, &f32, &f8}, {&f32}, "float8_e4m3fn"},
      {&dq, {&u8, &f64, &u8}, {&f64}, "float64"},
      {&dyn, {&f16}, {&u8}, "float16"},
  };
  for (const Refusal& r : refusals) {
    runtime::NodeTypes types;
    types.inputs = r.in;
    types.outputs = r.out;
    std::string why;
    EXPECT_FALSE(backend->SupportsTyped(*r.node, 21, types, &why)) << r.node->op_type << " " << r.reason;
    EXPECT_NE(why.find(r.reason), std::string::npos) << why;
  }
  runtime::NodeTypes ok;
  ok.inputs = {&f16, &f16, &u8};
  ok.outputs = {&u8};
  std::string why;
  EXPECT_TRUE(backend->SupportsTyped(q, 21, ok, &why)) << why;
}

}  // namespace
}  // namespace vigil::cuda
