// The fast paths of the CUDA strided copy (strided_copy.cu) behind
// Transpose, Slice, Split and Expand, and the wide-word rows of Gather and
// Concat (data_movement_common.cuh), against the CPU reference, bit for bit:
// transposes of rank 2 to 6 whose dims collapse or not, with the innermost
// dim kept (rows in words of 16 bytes down to one element, depending on the
// row size) or moved (32x32 tiles, with partial tiles at the edges; too
// small for tiles), in float32, float16, bfloat16 and integers of 1, 4 and 8
// bytes.
#include <cstdint>
#include <string>
#include <utility>
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

NodeCase Case(std::string op, std::vector<Tensor> inputs, std::vector<ir::Attribute> attrs = {}, int64_t opset = 13,
              std::vector<bool> constant = {}) {
  return testing::MakeCase(std::move(op), std::move(inputs), std::move(attrs), opset, std::move(constant));
}

Tensor I64(std::vector<int64_t> v) {
  const auto n = static_cast<int64_t>(v.size());
  return ct::I64({n}, v);
}

const DataType kTypes[] = {DataType::kFloat32, DataType::kFloat16, DataType::kBfloat16,
                           DataType::kInt64,   DataType::kInt32,   DataType::kBool};

struct Perm {
  Shape shape, perm;
};

void ExpectTransposes(const std::vector<Perm>& cases) {
  for (const Perm& p : cases) {
    for (DataType t : kTypes) {
      SCOPED_TRACE(fmt::format("{} [{}] perm [{}]", ir::DataTypeName(t), fmt::join(p.shape, ","),
                               fmt::join(p.perm, ",")));
      // Data movement is exact: tolerance 0 for every dtype.
      ExpectCudaMatchesCpu(Case("Transpose", {RandomTensor(t, p.shape, 9, -50, 50)}, {ct::IntsAttr("perm", p.perm)}),
                           0);
    }
  }
}

TEST(CudaStridedCopy, TransposeInnermostKept) {
  VIGIL_SKIP_WITHOUT_CUDA();
  ExpectTransposes({
      {{3, 19, 12, 64}, {0, 2, 1, 3}},         // rows of 64: 16-byte words for every dtype
      {{3, 19, 12, 24}, {0, 2, 1, 3}},         // 48 or 96 bytes
      {{3, 19, 12, 13}, {0, 2, 1, 3}},         // odd rows: one element per word
      {{3, 19, 12, 4}, {0, 2, 1, 3}},          // 8 bytes of float16
      {{2, 3, 4, 5, 6, 7}, {1, 0, 2, 3, 4, 5}},  // dims 2..5 collapse into one row
      {{2, 8, 3, 16, 4}, {0, 3, 2, 1, 4}},     // rank 5, nothing collapses
      {{4, 5, 6, 2, 3, 8}, {2, 0, 1, 4, 3, 5}},  // rank 6: [4,5] stay together
  });
}

TEST(CudaStridedCopy, TransposeInnermostMoved) {
  VIGIL_SKIP_WITHOUT_CUDA();
  ExpectTransposes({
      {{127, 13}, {1, 0}},                     // rank 2, partial tiles both ways
      {{33, 65}, {1, 0}},
      {{5, 100}, {1, 0}},                      // 5 < a tile's minimum: element map
      {{1000, 3}, {1, 0}},
      {{4, 197, 64}, {0, 2, 1}},               // batched tiles
      {{2, 12, 37, 64}, {0, 1, 3, 2}},         // dims 0, 1 collapse into the batch
      {{2, 37, 12, 64}, {0, 2, 3, 1}},         // k and l not adjacent in the output
      {{2, 9, 10, 16}, {0, 3, 1, 2}},          // NHWC to NCHW: H, W collapse
      {{2, 16, 9, 10}, {0, 2, 3, 1}},          // NCHW to NHWC
      {{2, 3, 4, 5, 6, 7}, {5, 4, 3, 2, 1, 0}},  // innermost output dim of 2: element map
      {{2, 3, 4, 9, 10}, {0, 1, 2, 4, 3}},     // rank 5
      {{3, 2, 9, 2, 10, 11}, {1, 0, 5, 2, 3, 4}},  // rank 6
  });
}

TEST(CudaStridedCopy, SliceSplitExpand) {
  VIGIL_SKIP_WITHOUT_CUDA();
  for (DataType t : kTypes) {
    SCOPED_TRACE(ir::DataTypeName(t));
    Tensor x = RandomTensor(t, {4, 13, 64}, 3, -50, 50);
    // Rows that start aligned (16 bytes), misaligned (start 3), a stepped
    // innermost dim and a negative step (the generic map).
    for (const Shape& se : {Shape{0, 32}, Shape{3, 60}, Shape{8, 64}}) {
      ExpectCudaMatchesCpu(
          Case("Slice", {x, I64({se[0]}), I64({se[1]}), I64({2})}, {}, 13, {false, true, true, true}), 0);
    }
    ExpectCudaMatchesCpu(
        Case("Slice", {x, I64({1, 2}), I64({13, 64}), I64({1, 2}), I64({1, 2})}, {}, 13,
             {false, true, true, true, true}),
        0);
    ExpectCudaMatchesCpu(
        Case("Slice", {x, I64({-1}), I64({-100}), I64({2}), I64({-1})}, {}, 13, {false, true, true, true, true}), 0);
    NodeCase split = Case("Split", {x, I64({8, 3, 53})}, {ct::IntAttr("axis", 2)}, 13, {false, true});
    split.outputs = 3;
    ExpectCudaMatchesCpu(split, 0);
    // Expand: a row broadcast down (contiguous rows, stride 0 outside) and a
    // column broadcast across (a tile with a source stride of 0).
    ExpectCudaMatchesCpu(Case("Expand", {RandomTensor(t, {1, 13, 64}, 4, -50, 50), I64({3, 13, 64})}, {}, 13,
                              {false, true}),
                         0);
    ExpectCudaMatchesCpu(Case("Expand", {RandomTensor(t, {1, 13, 1}, 5, -50, 50), I64({3, 13, 40})}, {}, 13,
                              {false, true}),
                         0);
  }
}

TEST(CudaStridedCopy, GatherAndConcatRows) {
  VIGIL_SKIP_WITHOUT_CUDA();
  for (DataType t : kTypes) {
    SCOPED_TRACE(ir::DataTypeName(t));
    const std::pair<Shape, int64_t> gathers[] = {{{50, 64}, 0}, {{50, 24}, 0}, {{50, 13}, 0}, {{4, 50, 16}, 1},
                                                 {{50, 4, 6}, 0}};
    for (const auto& [shape, axis] : gathers) {
      Tensor data = RandomTensor(t, shape, 6, -50, 50);
      ExpectCudaMatchesCpu(Case("Gather", {data, ct::I64({2, 3}, {0, 49, -1, -50, 7, 7})}, {ct::IntAttr("axis", axis)}),
                           0);
      ExpectCudaMatchesCpu(Case("Gather", {data, ct::I64({}, {3})}, {ct::IntAttr("axis", axis)}), 0);
    }
    // Concat: parts of 16 bytes' multiples, then an odd part that misaligns
    // the ones after it.
    ExpectCudaMatchesCpu(Case("Concat",
                              {RandomTensor(t, {2, 8, 16}, 1, -50, 50), RandomTensor(t, {2, 8, 16}, 2, -50, 50),
                               RandomTensor(t, {2, 3, 16}, 3, -50, 50), RandomTensor(t, {2, 1, 16}, 4, -50, 50)},
                              {ct::IntAttr("axis", 1)}),
                         0);
    ExpectCudaMatchesCpu(Case("Concat", {RandomTensor(t, {3, 8}, 1, -50, 50), RandomTensor(t, {3, 5}, 2, -50, 50),
                                         RandomTensor(t, {3, 16}, 3, -50, 50)},
                              {ct::IntAttr("axis", 1)}),
                         0);
  }
}

}  // namespace
}  // namespace vigil::cuda
