// CUDA data-movement family (data_movement.cu) and Resize/Upsample
// (resize.cu) against the CPU reference: Transpose, Concat, Split, Slice,
// Gather, GatherElements, Expand, Tile, Pad, DepthToSpace, SpaceToDepth,
// Trilu, Resize and Upsample, on odd sizes (13, 127 channels, sizes that are
// not multiples of the block size), in float32 and float16, and for the ops
// that only copy elements also bool and int64 (1- and 8-byte elements).
#include <cstdint>
#include <cstring>
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

constexpr double kF32Tol = 1e-5;
constexpr double kF16Tol = 1e-2;

double Tol(DataType t) {
  if (t == DataType::kFloat32) return kF32Tol;
  if (t == DataType::kFloat16 || t == DataType::kBfloat16) return kF16Tol;
  return 0;  // integers: exact
}

NodeCase Case(std::string op, std::vector<Tensor> inputs, std::vector<ir::Attribute> attrs = {}, int64_t opset = 17,
              std::vector<bool> constant = {}) {
  return testing::MakeCase(std::move(op), std::move(inputs), std::move(attrs), opset, std::move(constant));
}

Tensor I64(std::vector<int64_t> v) {
  int64_t n = static_cast<int64_t>(v.size());
  return ct::I64({n}, v);
}
Tensor I32(std::vector<int32_t> v) {
  int64_t n = static_cast<int64_t>(v.size());
  return ct::MakeTensor(DataType::kInt32, {n}, v);
}
Tensor F32s(std::vector<float> v) {
  int64_t n = static_cast<int64_t>(v.size());
  return ct::F32({n}, v);
}

// Float dtypes, and dtypes of every element size (these ops copy elements:
// bool for 1 byte, int64 for 8).
const DataType kFloats[] = {DataType::kFloat32, DataType::kFloat16};
const DataType kAll[] = {DataType::kFloat32, DataType::kFloat16, DataType::kBool, DataType::kInt64};

std::string Name(DataType t) { return std::string(ir::DataTypeName(t)); }

// --- Transpose ---------------------------------------------------------------------------

TEST(CudaDataMovement, Transpose) {
  VIGIL_SKIP_WITHOUT_CUDA();
  struct P {
    std::vector<int64_t> shape, perm;  // empty perm: the default (reverse)
  };
  const P cases[] = {{{13}, {}},
                     {{127, 13}, {}},
                     {{2, 13, 127}, {2, 0, 1}},
                     {{2, 13, 127}, {0, 2, 1}},
                     {{3, 5, 7, 11}, {0, 2, 3, 1}},
                     {{3, 1, 7, 1, 5}, {4, 2, 0, 3, 1}},
                     {{2, 3, 1, 4, 5, 2, 3, 2}, {7, 0, 6, 1, 5, 2, 4, 3}},
                     {{4, 0, 3}, {2, 1, 0}},
                     // Block swaps (LaunchBatchedTranspose): NCHW -> NHWC with 3 planes
                     // (short rows), NHWC -> NCHW with 3 channels (short columns), the
                     // 32x32 tiles with leftovers, a 2-D swap, unit axes, 16 on the edge.
                     {{2, 3, 33, 35}, {0, 2, 3, 1}},
                     {{2, 33, 35, 3}, {0, 3, 1, 2}},
                     {{3, 40, 70}, {0, 2, 1}},
                     {{2, 40, 5}, {0, 2, 1}},
                     {{70, 40}, {1, 0}},
                     {{1, 16, 1, 17, 3}, {0, 3, 4, 2, 1}},
                     {{2, 17, 16}, {0, 2, 1}}};
  for (const P& p : cases) {
    for (DataType t : kAll) {
      SCOPED_TRACE(fmt::format("{} [{}] perm [{}]", Name(t), fmt::join(p.shape, ","), fmt::join(p.perm, ",")));
      std::vector<ir::Attribute> attrs;
      if (!p.perm.empty()) attrs.push_back(ct::IntsAttr("perm", p.perm));
      ExpectCudaMatchesCpu(Case("Transpose", {RandomTensor(t, p.shape, 1, -50, 50)}, attrs, 13), Tol(t));
    }
  }
}

// --- Concat and Split ---------------------------------------------------------------------

TEST(CudaDataMovement, Concat) {
  VIGIL_SKIP_WITHOUT_CUDA();
  for (DataType t : kAll) {
    for (int64_t axis : {0, 1, 2, -1}) {
      SCOPED_TRACE(fmt::format("{} axis {}", Name(t), axis));
      int64_t a = axis < 0 ? axis + 3 : axis;
      std::vector<Tensor> inputs;
      for (int64_t k : {13, 1, 127, 0}) {
        std::vector<int64_t> shape = {3, 5, 7};
        shape[a] = k;
        inputs.push_back(RandomTensor(t, shape, static_cast<uint32_t>(k + 3), -50, 50));
      }
      ExpectCudaMatchesCpu(Case("Concat", inputs, {ct::IntAttr("axis", axis)}, 13), Tol(t));
    }
  }
  // Opset 1: axis defaults to 1.
  ExpectCudaMatchesCpu(Case("Concat", {RandomTensor(DataType::kFloat32, {2, 3, 5}, 1),
                                       RandomTensor(DataType::kFloat32, {2, 4, 5}, 2)}, {}, 1),
                       kF32Tol);
}

TEST(CudaDataMovement, Split) {
  VIGIL_SKIP_WITHOUT_CUDA();
  for (DataType t : kAll) {
    SCOPED_TRACE(Name(t));
    Tensor x = RandomTensor(t, {3, 13, 127}, 5, -50, 50);
    // Equal parts (opset 11), the split attribute (opset 11), the split input
    // (opset 13), and num_outputs with a smaller last part (opset 18).
    NodeCase equal = Case("Split", {RandomTensor(t, {4, 126, 3}, 6, -50, 50)}, {ct::IntAttr("axis", 1)}, 11);
    equal.outputs = 3;
    ExpectCudaMatchesCpu(equal, Tol(t));
    NodeCase attr = Case("Split", {x}, {ct::IntAttr("axis", -1), ct::IntsAttr("split", {100, 0, 27})}, 11);
    attr.outputs = 3;
    ExpectCudaMatchesCpu(attr, Tol(t));
    NodeCase input = Case("Split", {x, I64({4, 9})}, {ct::IntAttr("axis", 1)}, 13, {false, true});
    input.outputs = 2;
    ExpectCudaMatchesCpu(input, Tol(t));
    NodeCase num = Case("Split", {x}, {ct::IntAttr("axis", 1), ct::IntAttr("num_outputs", 3)}, 18);
    num.outputs = 3;
    ExpectCudaMatchesCpu(num, Tol(t));
    NodeCase first = Case("Split", {x}, {ct::IntAttr("axis", 0)}, 13);
    first.outputs = 3;
    ExpectCudaMatchesCpu(first, Tol(t));
  }
}

// --- Slice --------------------------------------------------------------------------------

TEST(CudaDataMovement, SliceInputs) {
  VIGIL_SKIP_WITHOUT_CUDA();
  struct P {
    std::vector<int64_t> starts, ends, axes, steps;  // empty axes/steps: omitted
  };
  const P cases[] = {
      {{1, 2}, {3, 100}, {}, {}},
      {{0}, {-1}, {2}, {}},
      {{-5, 1}, {1000, -1}, {-1, 1}, {2, 3}},
      {{126, 12}, {-1000, 0}, {2, 1}, {-1, -2}},      // backwards, end clamped to -1
      {{-1}, {INT64_MIN}, {0}, {-1}},                 // full reverse
      {{200, 0}, {300, 5}, {2, 0}, {1, 1}},           // empty: start clamped to dim
      {{5}, {3}, {1}, {1}},                           // empty: end before start
      {{2}, {INT64_MAX}, {2}, {INT64_MAX}},           // one element, huge step
      {{0, 0, 0}, {3, 13, 127}, {0, 1, 2}, {2, 4, 5}},
  };
  for (const P& p : cases) {
    for (DataType t : kAll) {
      SCOPED_TRACE(fmt::format("{} starts [{}] ends [{}] axes [{}] steps [{}]", Name(t), fmt::join(p.starts, ","),
                               fmt::join(p.ends, ","), fmt::join(p.axes, ","), fmt::join(p.steps, ",")));
      std::vector<Tensor> in = {RandomTensor(t, {3, 13, 127}, 9, -50, 50), I64(p.starts), I64(p.ends),
                                p.axes.empty() ? Tensor() : I64(p.axes), p.steps.empty() ? Tensor() : I64(p.steps)};
      while (in.size() > 3 && in.back().dtype() == DataType::kUndefined) in.pop_back();  // trailing omitted inputs
      std::vector<bool> constant(in.size(), true);
      constant[0] = false;
      ExpectCudaMatchesCpu(Case("Slice", in, {}, 13, constant), Tol(t));
    }
  }
  // int32 parameters.
  ExpectCudaMatchesCpu(Case("Slice", {RandomTensor(DataType::kFloat16, {13, 127}, 3), I32({-3, 100}), I32({0, 3}),
                                      I32({0, 1}), I32({-1, -7})},
                            {}, 13, {false, true, true, true, true}),
                       kF16Tol);
}

TEST(CudaDataMovement, SliceAttributes) {
  VIGIL_SKIP_WITHOUT_CUDA();
  for (DataType t : kFloats) {
    Tensor x = RandomTensor(t, {5, 13, 127}, 4);
    ExpectCudaMatchesCpu(
        Case("Slice", {x}, {ct::IntsAttr("starts", {1, -100}), ct::IntsAttr("ends", {4, 90})}, 9), Tol(t));
    ExpectCudaMatchesCpu(Case("Slice", {x},
                              {ct::IntsAttr("starts", {3, -5}), ct::IntsAttr("ends", {1000, -1}),
                               ct::IntsAttr("axes", {-1, 1})},
                              1),
                         Tol(t));
  }
}

// --- Gather and GatherElements --------------------------------------------------------------

TEST(CudaDataMovement, Gather) {
  VIGIL_SKIP_WITHOUT_CUDA();
  for (DataType t : kAll) {
    Tensor data = RandomTensor(t, {5, 13, 127}, 8, -50, 50);
    for (int64_t axis : {0, 1, 2, -1}) {
      int64_t dim = data.dim(axis < 0 ? axis + 3 : axis);
      SCOPED_TRACE(fmt::format("{} axis {}", Name(t), axis));
      // Negative indices count from the end; repeats are fine.
      Tensor idx64 = ct::I64({2, 3}, {0, dim - 1, -1, -dim, 2, 2});
      Tensor idx32 = ct::MakeTensor(DataType::kInt32, {4}, std::vector<int32_t>{1, 0, -2, 3});
      Tensor scalar = ct::I64({}, {-2});
      for (const Tensor& idx : {idx64, idx32, scalar}) {
        ExpectCudaMatchesCpu(Case("Gather", {data, idx}, {ct::IntAttr("axis", axis)}, 13), Tol(t));
      }
    }
  }
}

TEST(CudaDataMovement, GatherElements) {
  VIGIL_SKIP_WITHOUT_CUDA();
  for (DataType t : kAll) {
    Tensor data = RandomTensor(t, {4, 13, 7}, 12, -50, 50);
    for (int64_t axis : {0, 1, -1}) {
      int64_t a = axis < 0 ? axis + 3 : axis;
      int64_t dim = data.dim(a);
      // indices may be longer along the axis and shorter elsewhere.
      std::vector<int64_t> shape = {3, 11, 5};
      shape[a] = 17;
      std::vector<int64_t> v(static_cast<size_t>(shape[0] * shape[1] * shape[2]));
      for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<int64_t>((i * 7919) % (2 * dim)) - dim;
      SCOPED_TRACE(fmt::format("{} axis {}", Name(t), axis));
      ExpectCudaMatchesCpu(Case("GatherElements", {data, ct::I64(shape, v)}, {ct::IntAttr("axis", axis)}, 13), Tol(t));
      std::vector<int32_t> v32(v.begin(), v.end());
      ExpectCudaMatchesCpu(Case("GatherElements", {data, ct::MakeTensor(DataType::kInt32, shape, v32)},
                                {ct::IntAttr("axis", axis)}, 13),
                           Tol(t));
    }
  }
}

// --- Expand and Tile --------------------------------------------------------------------------

TEST(CudaDataMovement, Expand) {
  VIGIL_SKIP_WITHOUT_CUDA();
  struct P {
    std::vector<int64_t> in, shape;
  };
  const P cases[] = {{{3, 1, 5}, {2, 3, 13, 5}}, {{127}, {13, 1}}, {{1}, {7, 1, 13}}, {{13, 1}, {13, 127}},
                     {{2, 3}, {1, 1}},           {{}, {3, 5}},      {{3, 1}, {3, 0}}};
  for (const P& p : cases) {
    for (DataType t : kAll) {
      SCOPED_TRACE(fmt::format("{} [{}] to [{}]", Name(t), fmt::join(p.in, ","), fmt::join(p.shape, ",")));
      int64_t n = static_cast<int64_t>(p.shape.size());
      ExpectCudaMatchesCpu(
          Case("Expand", {RandomTensor(t, p.in, 2, -50, 50), ct::I64({n}, p.shape)}, {}, 13, {false, true}), Tol(t));
    }
  }
}

TEST(CudaDataMovement, Tile) {
  VIGIL_SKIP_WITHOUT_CUDA();
  for (DataType t : kAll) {
    SCOPED_TRACE(Name(t));
    ExpectCudaMatchesCpu(
        Case("Tile", {RandomTensor(t, {3, 5, 7}, 3, -50, 50), I64({2, 1, 3})}, {}, 13, {false, true}), Tol(t));
    ExpectCudaMatchesCpu(Case("Tile", {RandomTensor(t, {13}, 3, -50, 50), I64({11})}, {}, 13, {false, true}), Tol(t));
    ExpectCudaMatchesCpu(Case("Tile", {RandomTensor(t, {2, 3}, 3, -50, 50), I64({0, 2})}, {}, 13, {false, true}), Tol(t));
  }
}

// --- Pad --------------------------------------------------------------------------------------

TEST(CudaDataMovement, PadModes) {
  VIGIL_SKIP_WITHOUT_CUDA();
  const std::vector<std::vector<int64_t>> pads = {
      {0, 2, 1, 0, 3, 4},     // positive
      {1, -2, 0, 0, -3, 5},   // negative pads crop
      {0, 0, 0, 0, 0, 0},     // none
      {0, 12, 12, 0, 12, 12}, // more than the axis (reflect folds back, wrap repeats)
  };
  for (const char* mode : {"constant", "reflect", "edge", "wrap"}) {
    for (const auto& p : pads) {
      for (DataType t : kAll) {
        SCOPED_TRACE(fmt::format("{} {} pads [{}]", mode, Name(t), fmt::join(p, ",")));
        Tensor x = RandomTensor(t, {2, 7, 13}, 6, -50, 50);
        Tensor value = RandomTensor(t, {}, 7, 3, 3);
        ExpectCudaMatchesCpu(Case("Pad", {x, ct::I64({6}, p), value}, {ct::StringAttr("mode", mode)}, 19,
                                  {false, true, true}),
                             Tol(t));
      }
    }
  }
}

TEST(CudaDataMovement, PadOpsetsAndAxes) {
  VIGIL_SKIP_WITHOUT_CUDA();
  for (DataType t : kFloats) {
    Tensor x = RandomTensor(t, {3, 13, 127}, 8);
    // Opset 2: pads and value attributes.
    ExpectCudaMatchesCpu(Case("Pad", {x}, {ct::IntsAttr("pads", {0, 1, 2, 1, 0, 3}), ct::FloatAttr("value", 1.5f)}, 2),
                         Tol(t));
    ExpectCudaMatchesCpu(
        Case("Pad", {x}, {ct::IntsAttr("pads", {0, 1, 2, 1, 0, 3}), ct::StringAttr("mode", "reflect")}, 2), Tol(t));
    // Opset 11: no constant_value (zero).
    ExpectCudaMatchesCpu(Case("Pad", {x, I64({1, 0, 0, 0, 2, 1})}, {}, 11, {false, true}), Tol(t));
    // Opset 18: axes, negative ones included.
    ExpectCudaMatchesCpu(Case("Pad", {x, I64({3, -1, 4, 2}), Tensor(), I64({-1, 1})},
                              {ct::StringAttr("mode", "edge")}, 18, {false, true, true, true}),
                         Tol(t));
  }
  // The 'value' attribute converted to an integer dtype (rounded half to even).
  ExpectCudaMatchesCpu(Case("Pad", {RandomTensor(DataType::kInt32, {3, 5}, 1, -9, 9)},
                            {ct::IntsAttr("pads", {1, 1, 1, 1}), ct::FloatAttr("value", 2.5f)}, 2),
                       0);
}

// --- DepthToSpace, SpaceToDepth, Trilu -------------------------------------------------------

TEST(CudaDataMovement, DepthToSpaceAndBack) {
  VIGIL_SKIP_WITHOUT_CUDA();
  for (DataType t : kAll) {
    for (const char* mode : {"DCR", "CRD"}) {
      for (int64_t b : {2, 3}) {
        SCOPED_TRACE(fmt::format("{} {} blocksize {}", Name(t), mode, b));
        std::vector<ir::Attribute> attrs = {ct::IntAttr("blocksize", b), ct::StringAttr("mode", mode)};
        ExpectCudaMatchesCpu(Case("DepthToSpace", {RandomTensor(t, {2, 13 * b * b, 5, 7}, 4, -50, 50)}, attrs, 13),
                             Tol(t));
        ExpectCudaMatchesCpu(Case("SpaceToDepth", {RandomTensor(t, {2, 13, 5 * b, 7 * b}, 5, -50, 50)}, attrs, 13),
                             Tol(t));
      }
    }
  }
}

TEST(CudaDataMovement, Trilu) {
  VIGIL_SKIP_WITHOUT_CUDA();
  for (DataType t : kAll) {
    for (int64_t upper : {0, 1}) {
      for (int64_t k : {0, 3, -2, 200, -200}) {
        SCOPED_TRACE(fmt::format("{} upper {} k {}", Name(t), upper, k));
        ExpectCudaMatchesCpu(Case("Trilu", {RandomTensor(t, {3, 13, 17}, 6, -50, 50), ct::I64({}, {k})},
                                  {ct::IntAttr("upper", upper)}, 14, {false, true}),
                             Tol(t));
      }
      ExpectCudaMatchesCpu(Case("Trilu", {RandomTensor(t, {127, 5}, 6, -50, 50)}, {ct::IntAttr("upper", upper)}, 14),
                           Tol(t));
    }
  }
}

// --- Resize and Upsample ------------------------------------------------------------------------

// Resize-19 by scales (inputs X, roi, scales).
NodeCase ResizeScales(Tensor x, std::vector<float> scales, std::vector<ir::Attribute> attrs, int64_t opset = 19) {
  return Case("Resize", {std::move(x), Tensor(), F32s(scales)}, std::move(attrs), opset, {false, true, true});
}
NodeCase ResizeSizes(Tensor x, std::vector<int64_t> sizes, std::vector<ir::Attribute> attrs, int64_t opset = 19) {
  return Case("Resize", {std::move(x), Tensor(), Tensor(), I64(sizes)}, std::move(attrs), opset,
              {false, true, true, true});
}

const char* const kCoords[] = {"half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners",
                               "asymmetric"};

TEST(CudaResize, NearestModes) {
  VIGIL_SKIP_WITHOUT_CUDA();
  const std::vector<std::vector<float>> scales = {{1, 1, 2, 3}, {1, 1, 0.5f, 0.75f}, {1, 1, 1.7f, 0.6f},
                                                {1, 2, 3, 1}};
  for (const char* coord : kCoords) {
    for (const char* nearest : {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"}) {
      for (const auto& s : scales) {
        for (DataType t : {DataType::kFloat32, DataType::kFloat16, DataType::kInt32}) {
          SCOPED_TRACE(fmt::format("{} {} {} scales [{}]", coord, nearest, Name(t), fmt::join(s, ",")));
          std::vector<ir::Attribute> attrs = {ct::StringAttr("mode", "nearest"),
                                              ct::StringAttr("coordinate_transformation_mode", coord),
                                              ct::StringAttr("nearest_mode", nearest)};
          ExpectCudaMatchesCpu(ResizeScales(RandomTensor(t, {2, 13, 9, 11}, 3, 0, 100), s, attrs), 0);
        }
      }
    }
  }
}

TEST(CudaResize, Linear) {
  VIGIL_SKIP_WITHOUT_CUDA();
  const std::vector<std::vector<float>> scales = {{1, 1, 2, 2}, {1, 1, 0.5f, 0.6f}, {1, 1, 1.3f, 2.5f}, {1, 2, 1, 0.7f},
                                                {1, 2, 0.6f, 1}};
  for (const char* coord : kCoords) {
    for (const auto& s : scales) {
      for (DataType t : {DataType::kFloat32, DataType::kFloat16, DataType::kBfloat16}) {
        SCOPED_TRACE(fmt::format("{} {} scales [{}]", coord, Name(t), fmt::join(s, ",")));
        std::vector<ir::Attribute> attrs = {ct::StringAttr("mode", "linear"),
                                            ct::StringAttr("coordinate_transformation_mode", coord)};
        ExpectCudaMatchesCpu(ResizeScales(RandomTensor(t, {2, 13, 9, 11}, 4), s, attrs), Tol(t));
      }
    }
  }
  // Three resized axes (trilinear), and a 1-D resize.
  ExpectCudaMatchesCpu(ResizeScales(RandomTensor(DataType::kFloat32, {1, 3, 5, 6, 7}, 5), {1, 1, 1.5f, 2, 0.5f},
                                    {ct::StringAttr("mode", "linear")}),
                       kF32Tol);
  ExpectCudaMatchesCpu(ResizeScales(RandomTensor(DataType::kFloat32, {127}, 5), {3.3f}, {ct::StringAttr("mode", "linear")}),
                       kF32Tol);
}

// A resize of two adjacent axes runs on the planes kernels (NCHW: the last
// two; NHWC: the middle two, the channels inner), any other on the general
// ones; the same resize of the same data with its axes moved must give the
// same bits: same taps, same sums in the same order. [H, N, W, C] resizes
// axes 0 and 2, which are not adjacent: the general kernels.
TEST(CudaResize, ImagePlanesMatchTheGeneralKernelsBitForBit) {
  VIGIL_SKIP_WITHOUT_CUDA();
  auto cuda = testing::CudaBackendForTests();
  const int64_t n = 2, c = 13, h = 9, w = 11;
  // out[i0, i1, i2, i3] = t[the same indices at axes perm[0..3]] (any dtype).
  auto permute = [](const Tensor& t, std::vector<int64_t> perm) {
    const std::vector<int64_t>& d = t.shape();
    std::vector<int64_t> od(4), in_strides(4, 1);
    for (int k = 2; k >= 0; --k) in_strides[k] = in_strides[k + 1] * d[k + 1];
    for (int k = 0; k < 4; ++k) od[k] = d[perm[k]];
    Tensor r = Tensor::Allocate(t.dtype(), od).value();
    const size_t e = t.byte_size() / t.element_count();
    int64_t to = 0;
    for (int64_t a = 0; a < od[0]; ++a)
      for (int64_t b = 0; b < od[1]; ++b)
        for (int64_t cc = 0; cc < od[2]; ++cc)
          for (int64_t dd = 0; dd < od[3]; ++dd, ++to) {
            const int64_t from = a * in_strides[perm[0]] + b * in_strides[perm[1]] + cc * in_strides[perm[2]] +
                                 dd * in_strides[perm[3]];
            std::memcpy(static_cast<uint8_t*>(r.raw_data()) + to * e,
                        static_cast<const uint8_t*>(t.raw_data()) + from * e, e);
          }
    return r;
  };
  struct Layout {
    const char* name;
    std::vector<int64_t> from_nchw, to_nchw;
    std::vector<float> scales;
  };
  const Layout layouts[] = {{"NHWC (planes, channels inner)", {0, 2, 3, 1}, {0, 3, 1, 2}, {1, 1.3f, 2.5f, 1}},
                            {"HNWC (general)", {2, 0, 3, 1}, {1, 3, 0, 2}, {1.3f, 1, 2.5f, 1}}};
  for (const char* mode : {"linear", "nearest"}) {
    for (DataType t : {DataType::kFloat32, DataType::kFloat16}) {
      const std::vector<ir::Attribute> attrs = {ct::StringAttr("mode", mode)};
      Tensor x = RandomTensor(t, {n, c, h, w}, 21);
      auto planes = testing::RunOn(ResizeScales(x, {1, 1, 1.3f, 2.5f}, attrs), {cuda}, true);
      ASSERT_EQ(planes.size(), 1u);
      ASSERT_EQ(planes[0].tensor.shape(), (std::vector<int64_t>{n, c, 11, 27}));
      for (const Layout& l : layouts) {
        SCOPED_TRACE(fmt::format("{} {} {}", mode, Name(t), l.name));
        auto moved = testing::RunOn(ResizeScales(permute(x, l.from_nchw), l.scales, attrs), {cuda}, true);
        ASSERT_EQ(moved.size(), 1u);
        const Tensor back = permute(moved[0].tensor, l.to_nchw);
        ASSERT_EQ(planes[0].tensor.shape(), back.shape());
        EXPECT_EQ(std::memcmp(planes[0].tensor.raw_data(), back.raw_data(), back.byte_size()), 0);
      }
    }
  }
}

TEST(CudaResize, SizesAxesAndPolicies) {
  VIGIL_SKIP_WITHOUT_CUDA();
  for (DataType t : kFloats) {
    Tensor x = RandomTensor(t, {2, 13, 9, 11}, 6);
    for (const char* mode : {"nearest", "linear"}) {
      SCOPED_TRACE(fmt::format("{} {}", mode, Name(t)));
      ExpectCudaMatchesCpu(ResizeSizes(x, {2, 13, 17, 4}, {ct::StringAttr("mode", mode)}), Tol(t));
      ExpectCudaMatchesCpu(ResizeSizes(x, {2, 13, 1, 1}, {ct::StringAttr("mode", mode),
                                                   ct::StringAttr("coordinate_transformation_mode", "align_corners")}),
                           Tol(t));
      ExpectCudaMatchesCpu(ResizeSizes(x, {20, 31}, {ct::StringAttr("mode", mode), ct::IntsAttr("axes", {-1, 2})}),
                           Tol(t));
      for (const char* policy : {"not_larger", "not_smaller"}) {
        ExpectCudaMatchesCpu(ResizeSizes(x, {20, 31},
                                         {ct::StringAttr("mode", mode), ct::IntsAttr("axes", {2, 3}),
                                          ct::StringAttr("keep_aspect_ratio_policy", policy)}),
                             Tol(t));
      }
      ExpectCudaMatchesCpu(ResizeScales(x, {2.5f, 0.4f}, {ct::StringAttr("mode", mode), ct::IntsAttr("axes", {3, 1})}),
                           Tol(t));
      // Opset 13 (sizes) and 11 (scales with an empty roi).
      ExpectCudaMatchesCpu(ResizeSizes(x, {2, 13, 5, 23}, {ct::StringAttr("mode", mode)}, 13), Tol(t));
      ExpectCudaMatchesCpu(Case("Resize", {x, F32s({}), F32s({1, 1, 1.5f, 0.5f})}, {ct::StringAttr("mode", mode)}, 11,
                                {false, true, true}),
                           Tol(t));
    }
    // tf_half_pixel_for_nn (opset 11-12).
    ExpectCudaMatchesCpu(Case("Resize", {x, F32s({}), F32s({1, 1, 1.5f, 0.5f})},
                              {ct::StringAttr("coordinate_transformation_mode", "tf_half_pixel_for_nn")}, 11,
                              {false, true, true}),
                         0);
  }
}

TEST(CudaResize, LegacyOpsets) {
  VIGIL_SKIP_WITHOUT_CUDA();
  for (DataType t : kFloats) {
    Tensor x = RandomTensor(t, {1, 13, 7, 9}, 7);
    for (const char* mode : {"nearest", "linear"}) {
      for (std::vector<float> s : {std::vector<float>{1, 1, 2, 3}, std::vector<float>{1, 1, 0.5f, 0.7f}}) {
        SCOPED_TRACE(fmt::format("{} {} scales [{}]", mode, Name(t), fmt::join(s, ",")));
        ExpectCudaMatchesCpu(Case("Resize", {x, F32s(s)}, {ct::StringAttr("mode", mode)}, 10, {false, true}), Tol(t));
        ExpectCudaMatchesCpu(Case("Upsample", {x, F32s(s)}, {ct::StringAttr("mode", mode)}, 9, {false, true}), Tol(t));
        ExpectCudaMatchesCpu(Case("Upsample", {x}, {ct::StringAttr("mode", mode), ct::FloatsAttr("scales", s)}, 7),
                             Tol(t));
      }
    }
  }
  ExpectCudaMatchesCpu(Case("Upsample", {RandomTensor(DataType::kFloat32, {1, 3, 5, 6}, 8)},
                            {ct::StringAttr("mode", "bilinear"), ct::FloatsAttr("scales", {1, 1, 2, 2})}, 7),
                       kF32Tol);
  // Nearest on integers copies exactly.
  ExpectCudaMatchesCpu(
      Case("Resize", {RandomTensor(DataType::kInt64, {2, 3, 5}, 9, -1000, 1000), F32s({1, 2.5f, 0.6f})}, {}, 10,
           {false, true}),
      0);
}

}  // namespace
}  // namespace vigil::cuda
