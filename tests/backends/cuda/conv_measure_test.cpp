// Large, memory-bound exact float32 convolutions measure cuDNN's
// candidates on their first run without --tune, with the fused epilogue
// among them (conv_measure_rule.h, conv_cudnn.cpp). The rule itself is
// plain C++ and runs without a GPU; on a GPU, such convolutions (odd sizes
// included) must match the CPU reference whichever engine won, measured or
// not (VIGIL_MEASURE_CONVS=0 while the session's plans are built).
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>

#include "backends/cuda/conv_measure_rule.h"
#include "session_test_util.h"

namespace vigil::cuda::testing {
namespace {

TEST(ConvMeasureRule, FlopsPerByteEstimate) {
  // 1x1, 24 -> 144: 2 * 144 * 24 / (4 * (24 + 144)).
  EXPECT_DOUBLE_EQ(ConvFlopsPerByte({64, 24, 56, 56}, {144, 24, 1, 1}, {1, 1}), 6912.0 / 672.0);
  // A strided 3x3 stem, 3 -> 32: each input element is read once per 2x2 step.
  EXPECT_DOUBLE_EQ(ConvFlopsPerByte({64, 3, 224, 224}, {32, 3, 3, 3}, {2, 2}), 1728.0 / (4.0 * (0.75 + 32.0)));
  // Malformed shapes estimate 0.
  EXPECT_EQ(ConvFlopsPerByte({}, {144, 24, 1, 1}, {1, 1}), 0.0);
  EXPECT_EQ(ConvFlopsPerByte({64, 0, 56, 56}, {144, 0, 1, 1}, {1, 1}), 0.0);
}

TEST(ConvMeasureRule, LargeMemoryBoundConvolutionsOnly) {
  // MobileNetV2 at batch 64: its 1x1 expansion 24 -> 144 (10.3 flops per
  // byte) and its stem (13.2) are measured; not at batch 1 (8.7M and 10.8M
  // multiply-adds); nor its expansion 64 -> 384 (27.4 flops per byte).
  EXPECT_TRUE(MemoryBoundLargeConv({64, 24, 56, 56}, {144, 24, 1, 1}, {64, 144, 56, 56}, {1, 1}));
  EXPECT_TRUE(MemoryBoundLargeConv({64, 3, 224, 224}, {32, 3, 3, 3}, {64, 32, 112, 112}, {2, 2}));
  EXPECT_FALSE(MemoryBoundLargeConv({1, 24, 56, 56}, {144, 24, 1, 1}, {1, 144, 56, 56}, {1, 1}));
  EXPECT_FALSE(MemoryBoundLargeConv({1, 3, 224, 224}, {32, 3, 3, 3}, {1, 32, 112, 112}, {2, 2}));
  EXPECT_FALSE(MemoryBoundLargeConv({64, 64, 14, 14}, {384, 64, 1, 1}, {64, 384, 14, 14}, {1, 1}));
  // ResNet-50 at batch 64: its 1x1 64 -> 64 sits on the edge (16) and is
  // measured; 64 -> 256 (25.6), the 3x3 64 -> 64 (144) and the stem (72.7)
  // are not.
  EXPECT_TRUE(MemoryBoundLargeConv({64, 64, 56, 56}, {64, 64, 1, 1}, {64, 64, 56, 56}, {1, 1}));
  EXPECT_FALSE(MemoryBoundLargeConv({64, 64, 56, 56}, {256, 64, 1, 1}, {64, 256, 56, 56}, {1, 1}));
  EXPECT_FALSE(MemoryBoundLargeConv({64, 64, 56, 56}, {64, 64, 3, 3}, {64, 64, 56, 56}, {1, 1}));
  EXPECT_FALSE(MemoryBoundLargeConv({64, 3, 224, 224}, {64, 3, 7, 7}, {64, 64, 112, 112}, {2, 2}));
  // The size edge: 2^28 multiply-adds are large, one output row fewer not.
  EXPECT_TRUE(MemoryBoundLargeConv({1, 16, 1024, 1024}, {16, 16, 1, 1}, {1, 16, 1024, 1024}, {1, 1}));
  EXPECT_FALSE(MemoryBoundLargeConv({1, 16, 1024, 1024}, {16, 16, 1, 1}, {1, 16, 1023, 1024}, {1, 1}));
  // A 1D convolution's dims.
  EXPECT_TRUE(MemoryBoundLargeConv({64, 8, 1 << 20}, {8, 8, 3}, {64, 8, 1 << 20}, {1}));
  // Malformed shapes are not measured.
  EXPECT_FALSE(MemoryBoundLargeConv({64, 24, 56, 56}, {144, 24, 1, 1}, {}, {1, 1}));
  EXPECT_FALSE(MemoryBoundLargeConv({64, 0, 56, 56}, {144, 0, 1, 1}, {64, 144, 56, 56}, {1, 1}));
}

TEST(ConvMeasureRule, LargeFullResolutionConvolutions) {
  // A base-32 UNet at 224x224: its 3x3 convolutions at full resolution (96
  // -> 32, 108 flops per byte) and at 112x112, from batch 1 on.
  EXPECT_TRUE(LargeImageConv({64, 96, 224, 224}, {32, 96, 3, 3}, {64, 32, 224, 224}, {1, 1}));
  EXPECT_TRUE(LargeImageConv({1, 96, 224, 224}, {32, 96, 3, 3}, {1, 32, 224, 224}, {1, 1}));
  EXPECT_TRUE(LargeImageConv({8, 64, 112, 112}, {64, 64, 3, 3}, {8, 64, 112, 112}, {1, 1}));
  // Not: one pixel row under 112x112 (ResNet-50's 56x56 levels too), a
  // stride (stems), 1x1 and 1x3 windows, under 2^28 multiply-adds, 1D.
  EXPECT_FALSE(LargeImageConv({64, 64, 111, 112}, {64, 64, 3, 3}, {64, 64, 111, 112}, {1, 1}));
  EXPECT_FALSE(LargeImageConv({64, 64, 56, 56}, {64, 64, 3, 3}, {64, 64, 56, 56}, {1, 1}));
  EXPECT_FALSE(LargeImageConv({64, 3, 224, 224}, {64, 3, 7, 7}, {64, 64, 112, 112}, {2, 2}));
  EXPECT_FALSE(LargeImageConv({64, 96, 224, 224}, {32, 96, 1, 1}, {64, 32, 224, 224}, {1, 1}));
  EXPECT_FALSE(LargeImageConv({64, 96, 224, 224}, {32, 96, 1, 3}, {64, 32, 224, 222}, {1, 1}));
  EXPECT_FALSE(LargeImageConv({1, 8, 112, 112}, {8, 8, 3, 3}, {1, 8, 112, 112}, {1, 1}));
  EXPECT_FALSE(LargeImageConv({64, 8, 1 << 20}, {8, 8, 3}, {64, 8, 1 << 20}, {1}));
}

TEST(ConvMeasureRule, LargeBatchesMeasureOnTheirFirstImages) {
  // The UNet's 32 -> 32 3x3 at 224x224 (462M multiply-adds an image): 10
  // images make 2^32; at batch 64 those are measured, at 16 and under the whole.
  EXPECT_EQ(MeasuredImages({32, 32, 3, 3}, {64, 32, 224, 224}), 10);
  EXPECT_EQ(MeasuredImages({32, 32, 3, 3}, {20, 32, 224, 224}), 10);
  EXPECT_EQ(MeasuredImages({32, 32, 3, 3}, {19, 32, 224, 224}), 19);
  EXPECT_EQ(MeasuredImages({32, 32, 3, 3}, {1, 32, 224, 224}), 1);
  // Its first convolution (3 -> 32, 43M an image) measures the whole batch
  // of 64; ResNet-50's largest (64 -> 64 3x3 at 56x56, 116M) too.
  EXPECT_EQ(MeasuredImages({32, 3, 3, 3}, {64, 32, 224, 224}), 64);
  EXPECT_EQ(MeasuredImages({64, 64, 3, 3}, {64, 64, 56, 56}), 64);
  EXPECT_EQ(MeasuredImages({64, 64, 3, 3}, {256, 64, 56, 56}), 38);
  // Odd sizes: 13 -> 13 3x3 on 227 x 229 (79.1M): 55 of 110.
  EXPECT_EQ(MeasuredImages({13, 13, 3, 3}, {110, 13, 227, 229}), 55);
  EXPECT_EQ(MeasuredImages({13, 13, 3, 3}, {109, 13, 227, 229}), 109);
  // Malformed shapes keep their batch.
  EXPECT_EQ(MeasuredImages({13, 0, 3, 3}, {110, 13, 227, 229}), 110);
  EXPECT_EQ(MeasuredImages({}, {110, 13, 227, 229}), 110);
  EXPECT_EQ(MeasuredImages({13, 13, 3, 3}, {}), 0);
}

// The backend's note on what its first runs measured ("" if none).
std::string MeasuredNote(const std::vector<std::string>& notes) {
  for (const std::string& n : notes) {
    if (n.starts_with("first runs measured")) return n;
  }
  return "";
}

// One exact float32 ConvNhwc (bias, residual Z, `act`) on the GPU against
// the CPU, with the measuring on (default) and off. By default these
// convolutions run as cuBLASLt products (conv_gemm.h); the tests here keep
// them on cuDNN (VIGIL_CONV_GEMM=0), whose measuring they test, as NCHW
// sessions and convolutions the products leave to cuDNN run it.
void CheckMeasured(const std::vector<int64_t>& x_shape, const std::vector<int64_t>& w_shape,
                   std::vector<ir::Attribute> attrs, const std::string& act) {
  runtime::Tensor x = RandomTensor(kF32, x_shape, 11), w = RandomTensor(kF32, w_shape, 12);
  runtime::Tensor b = RandomTensor(kF32, {w_shape[0]}, 13);
  if (!act.empty()) attrs.push_back(StringAttr("activation", act));
  auto plain = RunWithLayout(ConvNhwcModel(x, w, &b, attrs), {cpu::MakeCpuBackend()}, x);
  ASSERT_EQ(plain.size(), 1u);
  const std::vector<int64_t>& y = plain[0].tensor.shape();
  // The rule must take this case (logical NCHW dims), or the test would not test it.
  std::vector<int64_t> strides = {1, 1};
  for (const ir::Attribute& a : attrs) {
    if (a.name == "strides") strides = a.ints;
  }
  ASSERT_TRUE(MemoryBoundLargeConv({x_shape[0], x_shape[3], x_shape[1], x_shape[2]},
                                   {w_shape[0], w_shape[3], w_shape[1], w_shape[2]}, {y[0], y[3], y[1], y[2]},
                                   strides));
  runtime::Tensor z = RandomTensor(kF32, y, 14, -4.0f, 4.0f);
  ir::Model m = ConvNhwcModel(x, w, &b, attrs, &z);
  auto want = RunWithLayout(m, {cpu::MakeCpuBackend()}, x);
  ASSERT_EQ(want.size(), 1u);
  ScopedSwitchOff cudnn("VIGIL_CONV_GEMM");
  for (const char* measure : {"", "0"}) {
    if (*measure) setenv("VIGIL_MEASURE_CONVS", measure, 1);
    std::vector<std::string> placement;
    auto got = RunWithLayout(m, {CudaBackendForTests(), cpu::MakeCpuBackend()}, x, runtime::ConvLayout::kAsModel,
                             &placement);
    unsetenv("VIGIL_MEASURE_CONVS");
    ASSERT_EQ(placement.size(), 1u);
    EXPECT_EQ(placement[0], "ConvNhwc 'conv_nhwc' on cuda");
    ASSERT_EQ(got.size(), 1u);
    runtime::TensorComparison cmp = runtime::CompareTensors(want[0].tensor, got[0].tensor, 1e300, 1e300);
    const std::string what = fmt::format("x[{}] w[{}] act '{}' VIGIL_MEASURE_CONVS '{}'", fmt::join(x_shape, ","),
                                         fmt::join(w_shape, ","), act, measure);
    EXPECT_TRUE(cmp.same_dtype && cmp.same_shape) << what;
    EXPECT_EQ(cmp.nan_mismatches, 0u) << what << ": " << cmp.Describe();
    EXPECT_LE(cmp.rel_l2_error, ConvTolerance(kF32)) << what << ": " << cmp.Describe();
  }
}

TEST(CudaConvMeasure, MemoryBoundExactFloat32ConvolutionsMatchTheCpu) {
  VIGIL_SKIP_WITHOUT_CUDA();
  // A 1x1 64 -> 64 (16 flops per byte), 2^28 multiply-adds.
  CheckMeasured({4, 128, 128, 64}, {64, 1, 1, 64}, {}, "Relu");
  // Odd sizes: a 1x1 13 -> 31 on a 383 x 367 image.
  CheckMeasured({5, 383, 367, 13}, {31, 1, 1, 13}, {}, "");
  // A strided, padded 3x3 stem of 3 channels.
  CheckMeasured({24, 229, 229, 3}, {32, 3, 3, 3}, {IntsAttr("pads", {1, 1, 1, 1}), IntsAttr("strides", {2, 2})},
                "Relu");
}

// The session option measure_first_run (on by default) decides whether such
// a convolution is measured (on cuDNN), and the backend's notes say what was: one
// convolution on a fresh backend with it on, nothing with it off. Both match
// the CPU.
TEST(CudaConvMeasure, TheOptionDecidesAndTheBackendSaysWhatWasMeasured) {
  VIGIL_SKIP_WITHOUT_CUDA();
  runtime::Tensor x = RandomTensor(kF32, {4, 128, 128, 64}, 21), w = RandomTensor(kF32, {64, 1, 1, 64}, 22);
  runtime::Tensor b = RandomTensor(kF32, {64}, 23);
  ASSERT_TRUE(MemoryBoundLargeConv({4, 64, 128, 128}, {64, 64, 1, 1}, {4, 64, 128, 128}, {1, 1}));
  ir::Model m = ConvNhwcModel(x, w, &b, {StringAttr("activation", "Relu")});
  auto want = RunWithLayout(m, {cpu::MakeCpuBackend()}, x);
  ASSERT_EQ(want.size(), 1u);
  ScopedSwitchOff cudnn("VIGIL_CONV_GEMM");  // cuDNN's measuring, as CheckMeasured says
  for (bool measure : {true, false}) {
    SCOPED_TRACE(measure ? "measure_first_run on" : "measure_first_run off");
    backends::CudaBackendOptions o;
    o.measure_first_run = measure;
    auto backend = CheckConvNhwcOnFreshBackend(m, x, want[0].tensor, o, ConvTolerance(kF32));
    ASSERT_TRUE(backend);
    // The measuring note, where there is one (another may say what cuDNN
    // compiled at run time).
    const std::string note = MeasuredNote(backend->Notes());
    if (measure) {
      EXPECT_NE(note.find("measured the candidates of 1 convolution(s) and 0 matrix product(s)"), std::string::npos)
          << note;
      EXPECT_NE(note.find("--no-measure-first-run"), std::string::npos) << note;
    } else {
      EXPECT_TRUE(note.empty()) << note;
    }
  }
}

// A full-resolution convolution at a large batch measures its candidates
// on its first 55 of 110 images (MeasuredImages) and runs the winner on the
// whole batch: the backend's note says so, and every image matches the CPU;
// with VIGIL_MEASURE_PART_OF_BATCH=0 the whole batch measures. Odd sizes:
// 13 -> 13 channels, 227 x 229 pixels.
TEST(CudaConvMeasure, LargeBatchesMeasureOnTheirFirstImagesAndMatchTheCpu) {
  VIGIL_SKIP_WITHOUT_CUDA();
  runtime::Tensor x = RandomTensor(kF32, {110, 227, 229, 13}, 31), w = RandomTensor(kF32, {13, 3, 3, 13}, 32);
  runtime::Tensor b = RandomTensor(kF32, {13}, 33);
  ASSERT_TRUE(LargeImageConv({110, 13, 227, 229}, {13, 13, 3, 3}, {110, 13, 227, 229}, {1, 1}));
  ASSERT_EQ(MeasuredImages({13, 13, 3, 3}, {110, 13, 227, 229}), 55);
  ir::Model m = ConvNhwcModel(x, w, &b, {IntsAttr("pads", {1, 1, 1, 1}), StringAttr("activation", "Relu")});
  auto want = RunWithLayout(m, {cpu::MakeCpuBackend()}, x);
  ASSERT_EQ(want.size(), 1u);
  ScopedSwitchOff cudnn("VIGIL_CONV_GEMM");
  for (bool part : {true, false}) {
    SCOPED_TRACE(part ? "on part of the batch" : "VIGIL_MEASURE_PART_OF_BATCH=0");
    std::optional<ScopedSwitchOff> whole;
    if (!part) whole.emplace("VIGIL_MEASURE_PART_OF_BATCH");
    auto loaded = backends::LoadCudaBackend(backends::CudaBackendOptions{});
    ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
    auto got = RunWithLayout(m, {loaded->backend, cpu::MakeCpuBackend()}, x);
    ASSERT_EQ(got.size(), 1u);
    runtime::TensorComparison cmp = runtime::CompareTensors(want[0].tensor, got[0].tensor, 1e300, 1e300);
    EXPECT_TRUE(cmp.same_dtype && cmp.same_shape) << cmp.Describe();
    EXPECT_EQ(cmp.nan_mismatches, 0u) << cmp.Describe();
    EXPECT_LE(cmp.rel_l2_error, ConvTolerance(kF32)) << cmp.Describe();
    // The last image too, which the measuring did not write.
    const size_t image = size_t{227} * 229 * 13;
    const float* g = static_cast<const float*>(got[0].tensor.raw_data()) + 109 * image;
    const float* r = static_cast<const float*>(want[0].tensor.raw_data()) + 109 * image;
    double err = 0, ref = 0;
    for (size_t i = 0; i < image; ++i) {
      err += (double(g[i]) - r[i]) * (double(g[i]) - r[i]);
      ref += double(r[i]) * r[i];
    }
    EXPECT_GT(ref, 0.0);
    EXPECT_LE(std::sqrt(err / ref), ConvTolerance(kF32));
    const std::string note = MeasuredNote(loaded->backend->Notes());
    const std::string want_note =
        part ? "measured the candidates of 1 convolution(s) (1 on part of their batch) and 0 matrix product(s)"
             : "measured the candidates of 1 convolution(s) and 0 matrix product(s)";
    EXPECT_NE(note.find(want_note), std::string::npos) << note;
  }
  // --tune measures and records the whole batch's problem, not part of it.
  const std::filesystem::path cache = std::filesystem::temp_directory_path() / "vigil_measure_part_tune.tsv";
  std::filesystem::remove(cache);
  backends::CudaBackendOptions tune;
  tune.tune = true;
  tune.tuning_cache = cache.string();
  auto loaded = backends::LoadCudaBackend(tune);
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  auto got = RunWithLayout(m, {loaded->backend, cpu::MakeCpuBackend()}, x);
  ASSERT_EQ(got.size(), 1u);
  runtime::TensorComparison cmp = runtime::CompareTensors(want[0].tensor, got[0].tensor, 1e300, 1e300);
  EXPECT_EQ(cmp.nan_mismatches, 0u) << cmp.Describe();
  EXPECT_LE(cmp.rel_l2_error, ConvTolerance(kF32)) << cmp.Describe();
  // (TuningCache::Record appends each choice as it is measured.)
  std::ifstream in(cache);
  const std::string recorded((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(recorded.find("|x110,13,227,229|"), std::string::npos) << recorded;
  EXPECT_EQ(recorded.find("|x55,13,227,229|"), std::string::npos) << recorded;
  std::filesystem::remove(cache);
}

}  // namespace
}  // namespace vigil::cuda::testing
