// Exact float32 channels-last convolutions as cuBLASLt products
// (backends/cuda/conv_gemm.h): ConvNhwc without TF32 against a float64
// reference on odd sizes (13 and 127 channels), 1x1 with and without
// stride, padded 3x3, 5x5 and 7x7 with stride, dilation, every epilogue
// (bias, residual Z, Relu, Relu6), and a gather over the scratch that runs
// in slices, with the output poisoned with NaN first. Each must stay within
// the bound of a CUDA-core convolution and must differ bitwise from cuDNN's
// result (VIGIL_CONV_GEMM=0) over a reduction of 256 terms or more, which
// shows the product ran; a shape the rule leaves to cuDNN must give cuDNN's
// bits. The rule is plain C++ and checked
// without a GPU; where the test program has the gather compiled in (a CUDA
// build), the shape test runs without a GPU and the gather is launched on a
// buffer poisoned with 0xFF bytes and compared byte for byte.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "backends/cuda/conv_case.h"
#include "backends/cuda/conv_measure_rule.h"

#ifdef VIGIL_TESTS_LAUNCH_CUDA_KERNELS
#include <cuda_runtime_api.h>

#include "backends/cuda/conv_gemm.h"
#include "backends/cuda/poisoned_gather.h"
#endif

namespace vigil::cuda {
namespace {

using testing::Backend;
using testing::ConvCase;
using testing::ConvSpec;
using testing::Way;

TEST(ConvGemmRule, PointwiseStridedOrFewPixels) {
  // ResNet-50 at batch 64 (logical NCHW W and Y): every 1x1 and every
  // strided convolution is a product; the 3x3 ones of stride 1 on 56x56,
  // 28x28 and 14x14 stay on cuDNN, the one on 7x7 (3136 pixels) is a product.
  EXPECT_TRUE(GemmConvPays({256, 64, 1, 1}, {64, 256, 56, 56}, {1, 1}));
  EXPECT_TRUE(GemmConvPays({512, 256, 1, 1}, {64, 512, 28, 28}, {2, 2}));
  EXPECT_TRUE(GemmConvPays({64, 3, 7, 7}, {64, 64, 112, 112}, {2, 2}));
  EXPECT_TRUE(GemmConvPays({128, 128, 3, 3}, {64, 128, 28, 28}, {2, 2}));
  EXPECT_FALSE(GemmConvPays({64, 64, 3, 3}, {64, 64, 56, 56}, {1, 1}));
  EXPECT_FALSE(GemmConvPays({256, 256, 3, 3}, {64, 256, 14, 14}, {1, 1}));
  EXPECT_TRUE(GemmConvPays({512, 512, 3, 3}, {64, 512, 7, 7}, {1, 1}));
  // At batch 1 every convolution of ResNet-50 is a product.
  EXPECT_TRUE(GemmConvPays({64, 64, 3, 3}, {1, 64, 56, 56}, {1, 1}));
  // The edge: 8191 pixels are a product, 8192 are not; one stride of 2 suffices.
  EXPECT_TRUE(GemmConvPays({8, 8, 3, 3}, {1, 8, 8191, 1}, {1, 1}));
  EXPECT_FALSE(GemmConvPays({8, 8, 3, 3}, {1, 8, 8192, 1}, {1, 1}));
  EXPECT_FALSE(GemmConvPays({8, 8, 5, 1}, {2, 8, 64, 64}, {1, 1}));
  EXPECT_TRUE(GemmConvPays({8, 8, 5, 1}, {2, 8, 64, 64}, {1, 2}));
  // Malformed dims never are.
  EXPECT_FALSE(GemmConvPays({8, 8, 1}, {1, 8, 4, 4}, {1, 1}));
  EXPECT_FALSE(GemmConvPays({8, 8, 1, 1}, {1, 8, 4, 4}, {1}));
}

// The case on the default CUDA backend (TF32 off) with the product path on
// and off; checks the bound, and that the bits differ (`product`: the rule
// sends it to the product) or are cuDNN's own (!product).
void ExpectProduct(const ConvSpec& spec, bool product = true) {
  const ConvCase k = testing::MakeConvCase(spec);
  SCOPED_TRACE(k.label);
  auto backend = Backend(Way::kTf32x3);
  ASSERT_TRUE(backend);
  const std::optional<testing::SwitchedRuns> runs = testing::RunConvCaseBothWays(*backend, k, "VIGIL_CONV_GEMM");
  ASSERT_TRUE(runs);
  const double err = testing::ConvCaseRelL2(runs->on, k), err_cudnn = testing::ConvCaseRelL2(runs->off, k);
  // The bound of a CUDA-core float32 convolution (conv_tf32x3_test.cpp).
  EXPECT_LE(err, 2e-6);
  EXPECT_LE(err_cudnn, 2e-6);
  const bool same = runs->same_bits();
  // Over a short reduction cuDNN's channels-last kernels and the product can
  // sum in the same order and agree to the bit (on an H200: C*kH*kW of 117
  // and 147, the 13- and 3-channel cases below), so bits show which ran
  // only over 256 terms or more.
  const int64_t reduction = spec.w[1] * spec.w[2] * spec.w[3];
  if (product && reduction >= 256) {
    EXPECT_FALSE(same) << "the product and cuDNN gave the same bits: the product did not run";
  } else if (!product) {
    EXPECT_TRUE(same) << "a shape the rule leaves to cuDNN did not give cuDNN's bits";
  }
  std::printf("[ %s ] rel L2 to float64: %s %.3g, cuDNN %.3g\n", k.label.c_str(), product ? "product" : "cuDNN",
              err, err_cudnn);
  std::fflush(stdout);
}

constexpr const char* kNhwc = ir::kConvNhwcOp;

TEST(CudaConvGemm, PointwiseConvolutions) {
  VIGIL_SKIP_WITHOUT_CUDA();
  // X is the matrix: 127 -> 13 channels on odd sizes, bias and Relu in the epilogue.
  ExpectProduct({.op = kNhwc, .nhwc = true, .x = {2, 127, 13, 11}, .w = {13, 127, 1, 1}, .bias = true,
                 .act = "Relu", .seed = 3});
  // Strided: the gather picks every other pixel; bias and residual.
  ExpectProduct({.op = kNhwc, .nhwc = true, .x = {2, 64, 15, 17}, .w = {127, 64, 1, 1}, .stride = 2, .bias = true,
                 .residual = true, .seed = 5});
  // The residual without a bias, and Relu after it.
  ExpectProduct({.op = kNhwc, .nhwc = true, .x = {1, 13, 9, 7}, .w = {64, 13, 1, 1}, .residual = true,
                 .act = "Relu", .seed = 7});
}

TEST(CudaConvGemm, GatheredConvolutions) {
  VIGIL_SKIP_WITHOUT_CUDA();
  // 3x3, stride 1, padded, on few pixels: 64 -> 127 channels, every epilogue.
  ExpectProduct({.op = kNhwc, .nhwc = true, .x = {1, 64, 19, 17}, .w = {127, 64, 3, 3}, .pad = 1, .bias = true,
                 .residual = true, .act = "Relu", .seed = 11});
  // 13 input channels (runs of 52 bytes: one float per copy), stride 2, Relu6 after the product.
  ExpectProduct({.op = kNhwc, .nhwc = true, .x = {3, 13, 23, 21}, .w = {127, 13, 3, 3}, .stride = 2, .pad = 1,
                 .bias = true, .act = "Relu6", .seed = 13});
  // A stem: 3 channels, 7x7, stride 2, padding 3.
  ExpectProduct({.op = kNhwc, .nhwc = true, .x = {2, 3, 45, 47}, .w = {64, 3, 7, 7}, .stride = 2, .pad = 3,
                 .bias = true, .act = "Relu", .seed = 17});
  // Dilation 2, and a 5x5 of stride 2 without bias.
  ExpectProduct({.op = kNhwc, .nhwc = true, .x = {2, 32, 20, 20}, .w = {29, 32, 3, 3}, .pad = 2, .dilation = 2,
                 .bias = true, .seed = 19});
  ExpectProduct({.op = kNhwc, .nhwc = true, .x = {2, 8, 27, 25}, .w = {13, 8, 5, 5}, .stride = 2, .pad = 2,
                 .seed = 23});
}

TEST(CudaConvGemm, WinogradShapesStayOnCudnn) {
  VIGIL_SKIP_WITHOUT_CUDA();
  // 3x3, stride 1, 2 x 70 x 70 = 9800 output pixels: GemmConvPays leaves it to cuDNN.
  ExpectProduct({.op = kNhwc, .nhwc = true, .x = {2, 16, 70, 70}, .w = {13, 16, 3, 3}, .pad = 1, .bias = true,
                 .act = "Relu", .seed = 29, .every = 7},
                false);
}

TEST(CudaConvGemm, LargeGatherRunsInSlices) {
  VIGIL_SKIP_WITHOUT_CUDA();
  // P is 76800 rows of 325 floats (99.8 MB, over the 64 MiB bound): two
  // slices of 38400 rows, the first ending halfway through image 1. Every
  // 7th output of all three images is checked.
  ExpectProduct({.op = kNhwc, .nhwc = true, .x = {3, 13, 320, 320}, .w = {5, 13, 5, 5}, .stride = 2, .pad = 2,
                 .bias = true, .residual = true, .seed = 31, .every = 7});
}

// The backend's answer to the layout pass (CudaBackend::PrefersChannelsLast,
// ConvNhwcPrefersChannelsLast): an exact float32 ConvNhwc is better
// channels-last where it runs as a product, and not where cuDNN keeps it
// (a 3x3 of stride 1 over 8192 or more pixels, the batch 1 where unknown);
// float16 ones, and float32 ones with TF32 or split convolutions, always.
bool Prefers(Way way, ir::DataType t, ir::Dim n, int64_t hw, int64_t k, int64_t stride) {
  const int64_t out = (hw + 2 * (k / 2) - k) / stride + 1;
  ir::Node node;
  node.domain = ir::kVigilDomain;
  node.op_type = kNhwc;
  node.inputs = {"x", "w"};
  node.outputs = {"y"};
  node.attributes = {cpu::testing::IntsAttr("strides", {stride, stride}),
                     cpu::testing::IntsAttr("pads", {k / 2, k / 2, k / 2, k / 2})};
  auto type = [&](std::vector<ir::Dim> dims) { return ops::TensorType(t, std::move(dims)); };
  using D = ir::Dim;
  const ir::TypeInfo x = type({n, D::Known(hw), D::Known(hw), D::Known(32)});
  const ir::TypeInfo w = type({D::Known(64), D::Known(k), D::Known(k), D::Known(32)});
  const ir::TypeInfo y = type({n, D::Known(out), D::Known(out), D::Known(64)});
  return Backend(way)->PrefersChannelsLast(node, ir::kVigilOpsetVersion, {{&x, &w}, {&y}});
}

TEST(CudaConvGemm, CudnnKeptExactConvolutionsPreferNchw) {
  VIGIL_SKIP_WITHOUT_CUDA();
  const ir::Dim batch = ir::Dim::Symbolic("N");
  constexpr ir::DataType f32 = ir::DataType::kFloat32, f16 = ir::DataType::kFloat16;
  // 96x96 = 9216 pixels per image: cuDNN keeps the 3x3, so NCHW is better.
  EXPECT_FALSE(Prefers(Way::kFfma, f32, batch, 96, 3, 1));
  EXPECT_FALSE(Prefers(Way::kTf32x3, f32, batch, 96, 3, 1));
  // 64x64 = 4096: a product at batch 1; at a known batch of 4, 16384 pixels go to cuDNN.
  EXPECT_TRUE(Prefers(Way::kFfma, f32, batch, 64, 3, 1));
  EXPECT_FALSE(Prefers(Way::kFfma, f32, ir::Dim::Known(4), 64, 3, 1));
  // 1x1 and strided ones are products at any size.
  EXPECT_TRUE(Prefers(Way::kFfma, f32, batch, 96, 1, 1));
  EXPECT_TRUE(Prefers(Way::kFfma, f32, ir::Dim::Known(64), 96, 3, 2));
  // Not exact float32: channels-last is cuDNN's own layout.
  EXPECT_TRUE(Prefers(Way::kFfma, f16, batch, 96, 3, 1));
  EXPECT_TRUE(Prefers(Way::kTf32, f32, batch, 96, 3, 1));
  EXPECT_TRUE(Prefers(Way::kTf32x3Convs, f32, batch, 96, 3, 1));
  // VIGIL_CONV_GEMM=0: no products, and the library keeps float32 NCHW anyway.
  testing::ScopedSwitchOff off("VIGIL_CONV_GEMM");
  EXPECT_TRUE(Prefers(Way::kFfma, f32, batch, 96, 3, 1));
}

#ifdef VIGIL_TESTS_LAUNCH_CUDA_KERNELS
constexpr ir::DataType kF32 = ir::DataType::kFloat32;
constexpr ir::DataType kF16 = ir::DataType::kFloat16;

// The product geometry of NHWC X [N, H, W, C] and W [M, k, k, C] with a
// square stride, padding and dilation, as ConvNhwc passes them.
std::optional<GemmConvShape> ShapeOf(const std::vector<int64_t>& x, int64_t m, int64_t k, int64_t stride,
                                     int64_t pad, int64_t dilation, int64_t group = 1) {
  auto out = [&](int64_t in) { return (in + 2 * pad - dilation * (k - 1) - 1) / stride + 1; };
  return GemmConvShapeOf(x, {m, k, k, x[3] / group}, {x[0], out(x[1]), out(x[2]), m}, group, {stride, stride},
                         {pad, pad}, {pad, pad}, {dilation, dilation});
}

TEST(CudaConvGemm, ShapeOfTakesGroupOneConvolutionsWhoseDimsAgree) {
  // Host code: no GPU needed.
  std::optional<GemmConvShape> s = ShapeOf({2, 19, 17, 13}, 127, 3, 2, 1, 1);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->out_h, 10);
  EXPECT_EQ(s->out_w, 9);
  EXPECT_EQ(s->rows(), 2 * 10 * 9);
  EXPECT_EQ(s->depth(), 3 * 3 * 13);
  EXPECT_FALSE(s->direct());
  std::optional<GemmConvShape> one = ShapeOf({2, 19, 17, 13}, 127, 1, 1, 0, 1);
  ASSERT_TRUE(one.has_value());
  EXPECT_TRUE(one->direct());
  EXPECT_FALSE(ShapeOf({2, 19, 17, 13}, 127, 1, 2, 0, 1)->direct());
  // Grouped; Y not what the convolution gives; W's channels not X's; malformed or empty dims.
  EXPECT_FALSE(ShapeOf({2, 19, 17, 16}, 32, 3, 1, 1, 1, 2));
  EXPECT_FALSE(GemmConvShapeOf({1, 8, 8, 3}, {4, 3, 3, 3}, {1, 7, 8, 4}, 1, {1, 1}, {1, 1}, {1, 1}, {1, 1}));
  EXPECT_FALSE(GemmConvShapeOf({1, 8, 8, 3}, {4, 3, 3, 2}, {1, 8, 8, 4}, 1, {1, 1}, {1, 1}, {1, 1}, {1, 1}));
  EXPECT_FALSE(GemmConvShapeOf({1, 8, 8}, {4, 3, 3, 3}, {1, 8, 8, 4}, 1, {1, 1}, {1, 1}, {1, 1}, {1, 1}));
  EXPECT_FALSE(GemmConvShapeOf({1, 8, 8, 3}, {4, 3, 3, 3}, {1, 8, 8, 4}, 1, {0, 1}, {1, 1}, {1, 1}, {1, 1}));
  EXPECT_FALSE(GemmConvShapeOf({0, 8, 8, 3}, {4, 3, 3, 3}, {0, 8, 8, 4}, 1, {1, 1}, {1, 1}, {1, 1}, {1, 1}));
  EXPECT_FALSE(GemmConvShapeOf({1, 8, 8, 3}, {4, 3, 3, 3}, {1, 8, 8, 4}, 1, {1, 1}, {-1, 1}, {3, 1}, {1, 1}));
  // Beyond 32-bit indexing: X would have 2^31 elements.
  EXPECT_FALSE(GemmConvShapeOf({2048, 1024, 1024, 1}, {8, 1, 1, 1}, {2048, 1024, 1024, 8}, 1, {1, 1}, {0, 0},
                               {0, 0}, {1, 1}));
}

TEST(CudaConvGemm, SwitchIsReadOnEveryCall) {
  unsetenv("VIGIL_CONV_GEMM");
  EXPECT_TRUE(GemmConvEnabled());
  {
    testing::ScopedSwitchOff off("VIGIL_CONV_GEMM");
    EXPECT_FALSE(GemmConvEnabled());
  }
  EXPECT_TRUE(GemmConvEnabled());
}

// Rows [row0, row0 + rows) of P on the host, as bytes: row (n, oy, ox),
// column (kh, kw, c) = X[n, oy*s - p + kh*d, ox*s - p + kw*d, c], or zeros.
std::vector<uint8_t> HostGather(const GemmConvShape& s, const runtime::Tensor& x, int64_t row0, int64_t rows) {
  const auto elem = static_cast<size_t>(ir::DataTypeBits(x.dtype()) / 8);
  const auto* xb = static_cast<const uint8_t*>(x.raw_data());
  std::vector<uint8_t> p;
  for (int64_t row = row0; row < row0 + rows; ++row) {
    const int64_t n = row / (s.out_h * s.out_w), oy = row / s.out_w % s.out_h, ox = row % s.out_w;
    for (int64_t kh = 0; kh < s.kernel_h; ++kh) {
      for (int64_t kw = 0; kw < s.kernel_w; ++kw) {
        const int64_t iy = oy * s.stride_h - s.pad_top + kh * s.dilation_h;
        const int64_t ix = ox * s.stride_w - s.pad_left + kw * s.dilation_w;
        const size_t bytes = static_cast<size_t>(s.channels) * elem;
        if (iy < 0 || iy >= s.in_h || ix < 0 || ix >= s.in_w) {
          p.insert(p.end(), bytes, uint8_t{0});
          continue;
        }
        const auto first = static_cast<size_t>(((n * s.in_h + iy) * s.in_w + ix) * s.channels) * elem;
        p.insert(p.end(), xb + first, xb + first + bytes);
      }
    }
  }
  return p;
}

struct GatherCase {
  std::vector<int64_t> x;  // NHWC
  int64_t k, stride, pad, dilation;
  ir::DataType t;
};

// Rows [row0, row0 + rows) into a buffer of 0xFF bytes (`shift` bytes into
// X's and P's allocations, for narrower copies), with a poisoned guard after.
void CheckGather(const GatherCase& g, int64_t row0, int64_t rows, size_t shift) {
  std::optional<GemmConvShape> s = ShapeOf(g.x, 7, g.k, g.stride, g.pad, g.dilation);
  ASSERT_TRUE(s.has_value());
  if (rows < 0) rows = s->rows() - row0;
  const std::string what = fmt::format("x[{}] {}x{} s{} p{} d{} {} rows [{}, {}) shift {}", fmt::join(g.x, ","), g.k,
                                       g.k, g.stride, g.pad, g.dilation, ir::DataTypeName(g.t), row0, row0 + rows,
                                       shift);
  runtime::Tensor x = testing::RandomTensor(g.t, g.x, 5);
  const std::vector<uint8_t> want = HostGather(*s, x, row0, rows);
  testing::ExpectGatherWrites(x, want, shift, what, [&](const void* xs, void* ps) {
    return LaunchConvGather(*s, g.t, xs, ps, row0, rows, nullptr);
  });
}

TEST(CudaConvGemm, GatherWritesEveryElementOfAPoisonedBuffer) {
  VIGIL_SKIP_WITHOUT_CUDA();
  const std::vector<GatherCase> cases = {
      {{2, 9, 11, 8}, 3, 1, 1, 1, kF32},   // runs of 32 bytes: 16-byte copies
      {{2, 9, 11, 2}, 3, 2, 1, 1, kF32},   // runs of 8 bytes
      {{2, 9, 11, 13}, 3, 2, 1, 1, kF32},  // runs of 52 bytes: one float per copy
      {{1, 23, 21, 3}, 7, 2, 3, 1, kF32},  // a stem: mostly padding at the edges
      {{2, 12, 12, 5}, 3, 1, 2, 2, kF32},  // dilation 2
      {{2, 15, 17, 8}, 1, 2, 0, 1, kF32},  // strided 1x1
      {{2, 9, 11, 8}, 3, 1, 1, 1, kF16},   // runs of 16 bytes
      {{1, 7, 7, 3}, 3, 1, 1, 1, kF16},    // runs of 6 bytes: one element per copy
  };
  for (const GatherCase& g : cases) {
    const int elem = ir::DataTypeBits(g.t) / 8;
    CheckGather(g, 0, -1, 0);
    CheckGather(g, 0, -1, static_cast<size_t>(elem));
    CheckGather(g, 17, 29, 0);  // a slice that starts and ends inside images
  }
}

TEST(CudaConvGemm, GatherRefusesRowsOutsideTheConvolution) {
  std::optional<GemmConvShape> s = ShapeOf({1, 8, 8, 3}, 4, 3, 1, 1, 1);
  ASSERT_TRUE(s.has_value());
  EXPECT_FALSE(LaunchConvGather(*s, kF32, nullptr, nullptr, 60, 5, nullptr).ok());  // 64 rows
  EXPECT_FALSE(LaunchConvGather(*s, kF32, nullptr, nullptr, -1, 5, nullptr).ok());
  EXPECT_FALSE(LaunchConvGather(*s, ir::DataType::kFloat64, nullptr, nullptr, 0, 5, nullptr).ok());
  EXPECT_TRUE(LaunchConvGather(*s, kF32, nullptr, nullptr, 64, 0, nullptr).ok());  // nothing to do
}
#else
TEST(CudaConvGemm, GatherWritesEveryElementOfAPoisonedBuffer) {
  GTEST_SKIP() << "the convolution gather is compiled into this test program only in a CUDA build";
}
#endif

}  // namespace
}  // namespace vigil::cuda
