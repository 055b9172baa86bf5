// Stems on tensor cores (backends/cuda/conv_cudnn.cpp, RunFloatStem): a
// ConvNhwc of at most 4 input channels and stride 2, in float16, bfloat16,
// or float32 with TF32, runs as a stride-1 convolution over 16 channels
// after space to depth (conv_space_to_depth.h). Each case runs with the
// rewrite on and off (VIGIL_STEM_SPACE_TO_DEPTH=0, cuDNN on the stem as it
// is), its output poisoned with NaN first, against a float64 reference on
// the same (rounded) inputs: both must stay within what the dtype's
// rounding allows, and where the rewrite runs (64 output channels) the bits
// must differ somewhere, which shows that it ran; where the rule
// (StemSpaceToDepthPays) leaves a stem alone, the bits must be cuDNN's.
// Odd sizes, 1 to 4 input channels, padding 0 to 3, bias, residual Z, Relu
// and Relu6.
#include <cstdio>
#include <optional>

#include <gtest/gtest.h>

#include "backends/cuda/conv_case.h"
#include "backends/cuda/conv_measure_rule.h"

namespace vigil::cuda {
namespace {

using testing::Backend;
using testing::ConvCase;
using testing::ConvSpec;
using testing::Way;

constexpr const char* kNhwc = ir::kConvNhwcOp;

// Relative L2 bounds of a float32-accumulated convolution whose output is
// rounded to the dtype (2^-11 for float16, 2^-8 for bfloat16, both times
// about 2), or whose inputs are rounded to TF32's 10-bit mantissa.
constexpr double kFloat16Bound = 1e-3, kBfloat16Bound = 8e-3, kTf32Bound = 2e-3;

constexpr const char* kSwitch = "VIGIL_STEM_SPACE_TO_DEPTH";

// The case with the rewrite on and off: both within `bound`; with
// `rewritten`, bits that differ (the rewrite ran), else cuDNN's own bits.
void ExpectStem(ConvSpec spec, Way way, double bound, std::optional<bool> rewritten = true) {
  spec.op = kNhwc;
  spec.nhwc = true;
  const ConvCase k = testing::MakeConvCase(spec);
  SCOPED_TRACE(k.label);
  auto backend = Backend(way);
  ASSERT_TRUE(backend);
  const std::optional<testing::SwitchedRuns> runs = testing::RunConvCaseBothWays(*backend, k, kSwitch);
  ASSERT_TRUE(runs);
  const double err = testing::ConvCaseRelL2(runs->on, k), err_plain = testing::ConvCaseRelL2(runs->off, k);
  EXPECT_LE(err, bound);
  EXPECT_LE(err_plain, bound);
  if (rewritten == true) EXPECT_FALSE(runs->same_bits()) << "the rewrite gave cuDNN's bits: it did not run";
  if (rewritten == false) EXPECT_TRUE(runs->same_bits()) << "a stem the rule leaves alone did not give cuDNN's bits";
  std::printf("[ %s ] rel L2 to float64: switch on %.3g, off %.3g\n", k.label.c_str(), err, err_plain);
  std::fflush(stdout);
}

// The rule (conv_measure_rule.h), without a GPU: ResNet-50's 7x7 stem from
// batch 3 on (112x112 outputs), not at 1; 3x3 and 5x5 windows never.
TEST(ConvStemRule, SevenBySevenOverManyPixels) {
  EXPECT_FALSE(StemSpaceToDepthPays({64, 3, 7, 7}, {1, 64, 112, 112}));
  EXPECT_FALSE(StemSpaceToDepthPays({64, 3, 7, 7}, {2, 64, 112, 112}));
  EXPECT_TRUE(StemSpaceToDepthPays({64, 3, 7, 7}, {3, 64, 112, 112}));
  EXPECT_TRUE(StemSpaceToDepthPays({64, 3, 7, 7}, {64, 64, 112, 112}));
  EXPECT_FALSE(StemSpaceToDepthPays({64, 3, 7, 7}, {1, 64, 128, 255}));  // 32640 pixels
  EXPECT_TRUE(StemSpaceToDepthPays({64, 3, 7, 7}, {1, 64, 128, 256}));   // 32768
  EXPECT_FALSE(StemSpaceToDepthPays({32, 3, 3, 3}, {64, 32, 112, 112}));
  EXPECT_FALSE(StemSpaceToDepthPays({32, 3, 5, 5}, {64, 32, 112, 112}));
  EXPECT_FALSE(StemSpaceToDepthPays({64, 3, 7}, {64, 64, 112}));
}

// Cases over at least 2^15 output pixels (the rule's bound), every 5th
// output against the reference.
TEST(CudaConvStem, Float16) {
  VIGIL_SKIP_WITHOUT_CUDA();
  constexpr ir::DataType f16 = ir::DataType::kFloat16;
  // ResNet's stem on odd sizes: 3 channels, 7x7, stride 2, padding 3; 3 x 106 x 107 outputs.
  ExpectStem({.x = {3, 3, 211, 213}, .w = {64, 3, 7, 7}, .stride = 2, .pad = 3, .bias = true, .act = "Relu",
              .seed = 3, .dtype = f16, .every = 5},
             Way::kTf32x3, kFloat16Bound);
  // One and four input channels, padding 2 and 0, a residual, Relu6 (the epilogue kernel).
  ExpectStem({.x = {2, 1, 263, 257}, .w = {64, 1, 7, 7}, .stride = 2, .pad = 2, .bias = true, .residual = true,
              .seed = 5, .dtype = f16, .every = 5},
             Way::kTf32x3, kFloat16Bound);
  ExpectStem({.x = {1, 4, 371, 375}, .w = {64, 4, 7, 7}, .stride = 2, .act = "Relu6", .seed = 7, .dtype = f16,
              .every = 5},
             Way::kTf32x3, kFloat16Bound);
  // 13 output channels: cuDNN may have no tensor-core plan over Z; whichever runs must be right.
  ExpectStem({.x = {3, 3, 211, 213}, .w = {13, 3, 7, 7}, .stride = 2, .pad = 3, .bias = true, .seed = 9,
              .dtype = f16, .every = 5},
             Way::kTf32x3, kFloat16Bound, /*rewritten=*/std::nullopt);
}

TEST(CudaConvStem, Bfloat16AndTf32) {
  VIGIL_SKIP_WITHOUT_CUDA();
  ExpectStem({.x = {3, 3, 211, 213}, .w = {64, 3, 7, 7}, .stride = 2, .pad = 3, .bias = true, .act = "Relu",
              .seed = 11, .dtype = ir::DataType::kBfloat16, .every = 5},
             Way::kTf32x3, kBfloat16Bound);
  ExpectStem({.x = {3, 3, 211, 213}, .w = {64, 3, 7, 7}, .stride = 2, .pad = 3, .bias = true, .act = "Relu",
              .seed = 13, .every = 5},
             Way::kTf32, kTf32Bound);
}

// What the rule leaves alone gives cuDNN's bits: a stem over few pixels, a
// 3x3 one; and exact float32 (TF32 off), whose stem runs as a product
// (conv_gemm.h).
TEST(CudaConvStem, StemsTheRuleLeavesAloneGiveCudnnBits) {
  VIGIL_SKIP_WITHOUT_CUDA();
  constexpr ir::DataType f16 = ir::DataType::kFloat16;
  ExpectStem({.x = {2, 3, 45, 47}, .w = {64, 3, 7, 7}, .stride = 2, .pad = 3, .bias = true, .act = "Relu",
              .seed = 17, .dtype = f16},
             Way::kTf32x3, kFloat16Bound, false);
  ExpectStem({.x = {3, 3, 211, 213}, .w = {32, 3, 3, 3}, .stride = 2, .pad = 1, .bias = true, .seed = 19,
              .dtype = f16, .every = 5},
             Way::kTf32x3, kFloat16Bound, false);
  ExpectStem({.x = {3, 3, 211, 213}, .w = {64, 3, 7, 7}, .stride = 2, .pad = 3, .bias = true, .act = "Relu",
              .seed = 15, .every = 5},
             Way::kFfma, 2e-6, false);
}

}  // namespace
}  // namespace vigil::cuda
