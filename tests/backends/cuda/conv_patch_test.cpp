// Non-overlapping "patchify" convolutions (ViT's patch embedding): a
// ConvNhwc with stride == kernel, no pads, dilation 1 and group 1, which the
// CUDA backend runs as a gather plus one cuBLASLt product
// (backends/cuda/conv_patch.h), against a float64 run of the CPU reference:
// odd channel counts and sizes whose last rows and columns are left out of
// every patch, with and without bias, residual Z, Relu and Relu6, in
// float32, float16 and bfloat16. Shapes the patch path must refuse (stride
// != kernel, pads, group 2, dilation 2) still run (on cuDNN) and match, and
// VIGIL_PATCH_GEMM=0 sends patch shapes to cuDNN too. Where the test program
// has the gather compiled in (a CUDA build), the shape test and the copy
// width run without a GPU, and the gather is launched directly on a buffer
// poisoned with 0xFF bytes and compared byte for byte.
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "session_test_util.h"

#ifdef VIGIL_TESTS_LAUNCH_CUDA_KERNELS
#include <cuda_runtime_api.h>

#include "backends/cuda/conv_patch.h"
#include "backends/cuda/poisoned_gather.h"
#endif

namespace vigil::cuda::testing {
namespace {

struct PatchCase {
  std::vector<int64_t> x;  // [N, H, W, C]
  int64_t m = 13;          // output channels
  int64_t kh = 4, kw = 4;
  std::vector<int64_t> strides = {};  // empty: the kernel's size (a patch shape)
  std::vector<int64_t> pads = {0, 0, 0, 0};
  std::vector<int64_t> dilations = {1, 1};
  int64_t group = 1;
  bool bias = true;
  bool residual = false;
  std::string act = {};  // "", "Relu" or "Relu6"
};

std::vector<int64_t> StridesOf(const PatchCase& k) {
  return k.strides.empty() ? std::vector<int64_t>{k.kh, k.kw} : k.strides;
}

std::string Describe(const PatchCase& k, ir::DataType t) {
  return fmt::format("patch conv {} x[{}] m {} k{}x{} s[{}] p[{}] d[{}] g {} bias {} z {} act '{}'",
                     ir::DataTypeName(t), fmt::join(k.x, ","), k.m, k.kh, k.kw, fmt::join(StridesOf(k), ","),
                     fmt::join(k.pads, ","), fmt::join(k.dilations, ","), k.group, k.bias, k.residual, k.act);
}

int64_t OutDim(int64_t in, int64_t k, int64_t stride, int64_t pad_begin, int64_t pad_end, int64_t dilation) {
  return (in + pad_begin + pad_end - (k - 1) * dilation - 1) / stride + 1;
}

std::vector<int64_t> OutShape(const PatchCase& k) {
  const std::vector<int64_t> s = StridesOf(k);
  return {k.x[0], OutDim(k.x[1], k.kh, s[0], k.pads[0], k.pads[2], k.dilations[0]),
          OutDim(k.x[2], k.kw, s[1], k.pads[1], k.pads[3], k.dilations[1]), k.m};
}

// X, W [M, kH, kW, C/group], B [M], Z (Y's shape, ~4 in magnitude so that
// Relu6 clips).
struct Operands {
  runtime::Tensor x, w, b, z;
};

Operands MakeOperands(const PatchCase& k, ir::DataType t) {
  return {RandomTensor(t, k.x, 1), RandomTensor(t, {k.m, k.kh, k.kw, k.x[3] / k.group}, 2),
          RandomTensor(t, {k.m}, 3), RandomTensor(t, OutShape(k), 4, -4.0f, 4.0f)};
}

// A float64 copy of `t` (exact for every float dtype).
runtime::Tensor ToFloat64(const runtime::Tensor& t) {
  runtime::Tensor d = runtime::Tensor::Allocate(ir::DataType::kFloat64, t.shape()).value();
  for (uint64_t i = 0; i < t.element_count(); ++i) d.data<double>()[i] = runtime::ElementAsDouble(t, i);
  return d;
}

Operands ToFloat64(const Operands& o) { return {ToFloat64(o.x), ToFloat64(o.w), ToFloat64(o.b), ToFloat64(o.z)}; }

ir::Model PatchModel(const PatchCase& k, const Operands& o) {
  std::vector<ir::Attribute> attrs = {IntAttr("group", k.group), IntsAttr("kernel_shape", {k.kh, k.kw}),
                                      IntsAttr("strides", StridesOf(k)), IntsAttr("pads", k.pads),
                                      IntsAttr("dilations", k.dilations)};
  if (!k.act.empty()) attrs.push_back(StringAttr("activation", k.act));
  return ConvNhwcModel(o.x, o.w, k.bias ? &o.b : nullptr, std::move(attrs), k.residual ? &o.z : nullptr);
}

// The case in float64 on the CPU: the operands are exact in float64, so
// this is the convolution of the very values the GPU got, unrounded.
runtime::Tensor Float64Reference(const PatchCase& k, const Operands& o) {
  Operands d = ToFloat64(o);
  return RunSingleOutput(PatchModel(k, d), {cpu::MakeCpuBackend()}, d.x);
}

void ExpectClose(const runtime::Tensor& got, const runtime::Tensor& want, double tol, const std::string& what) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  runtime::TensorComparison cmp = runtime::CompareTensors(want, ToFloat64(got), 1e300, 1e300);
  // The reference has no NaN: a NaN here is an element nobody wrote.
  EXPECT_EQ(cmp.nan_mismatches, 0u) << what << ": " << cmp.Describe();
  EXPECT_LE(cmp.rel_l2_error, tol) << what << ": " << cmp.Describe();
}

// The case through a CUDA session (placed on cuda) against float64.
void CheckSession(const PatchCase& k, ir::DataType t) {
  Operands o = MakeOperands(k, t);
  std::vector<std::string> placement;
  runtime::Tensor got = RunSingleOutput(PatchModel(k, o), {CudaBackendForTests(), cpu::MakeCpuBackend()}, o.x, &placement);
  ASSERT_EQ(placement.size(), 1u);
  EXPECT_EQ(placement[0], "ConvNhwc 'conv_nhwc' on cuda");
  runtime::Tensor want = Float64Reference(k, o);
  ASSERT_EQ(want.shape(), OutShape(k)) << Describe(k, t);
  const char* env = std::getenv("VIGIL_PATCH_GEMM");
  ExpectClose(got, want, ConvTolerance(t), Describe(k, t) + (env ? " VIGIL_PATCH_GEMM=" + std::string(env) : ""));
}

// Patch shapes: ViT's (smaller), odd C and M, sizes that leave rows and
// columns out (18 = 4*4 + 2, 22 = 5*4 + 2), runs of kW*C elements that are
// and are not a multiple of 16 bytes, and every epilogue.
std::vector<PatchCase> PatchCases() {
  std::vector<PatchCase> c;
  c.push_back({.x = {2, 18, 22, 3}});
  c.push_back({.x = {2, 18, 22, 3}, .bias = false});
  c.push_back({.x = {2, 18, 22, 3}, .residual = true, .act = "Relu"});
  c.push_back({.x = {1, 18, 22, 3}, .bias = false, .residual = true});
  c.push_back({.x = {2, 18, 22, 3}, .act = "Relu6"});
  c.push_back({.x = {2, 9, 11, 8}, .m = 16, .kh = 3, .kw = 2});                          // 16-byte runs
  c.push_back({.x = {2, 9, 11, 8}, .m = 16, .kh = 3, .kw = 2, .residual = true, .act = "Relu6"});
  c.push_back({.x = {1, 6, 23, 4}, .m = 7, .kh = 2, .kw = 2, .act = "Relu"});              // odd W
  c.push_back({.x = {1, 7, 7, 3}, .m = 5, .kh = 3, .kw = 3, .bias = false});              // 18-byte runs (float16)
  c.push_back({.x = {1, 8, 9, 5}, .m = 13, .kh = 1, .kw = 3});                            // 1x3
  c.push_back({.x = {2, 32, 32, 3}, .m = 48, .kh = 16, .kw = 16, .act = "Relu"});         // ViT-like
  return c;
}

// Shapes the patch path must leave to cuDNN.
std::vector<PatchCase> RefusedCases() {
  std::vector<PatchCase> c;
  c.push_back({.x = {2, 18, 22, 3}, .strides = {2, 2}});                                   // overlapping
  c.push_back({.x = {2, 18, 22, 3}, .strides = {4, 2}});
  c.push_back({.x = {2, 18, 22, 3}, .pads = {1, 1, 1, 1}, .act = "Relu"});                 // padded
  c.push_back({.x = {2, 18, 22, 8}, .m = 12, .group = 2, .residual = true});               // grouped
  c.push_back({.x = {2, 18, 22, 3}, .kh = 2, .kw = 2, .strides = {2, 2}, .dilations = {2, 2}});  // dilated
  c.push_back({.x = {2, 9, 11, 8}, .m = 16, .kh = 1, .kw = 1});                            // 1x1
  return c;
}

TEST(CudaConvPatch, MatchesFloat64ThroughTheSession) {
  VIGIL_SKIP_WITHOUT_CUDA();
  for (ir::DataType t : {kF32, kF16, kBF16}) {
    for (const PatchCase& k : PatchCases()) CheckSession(k, t);
  }
}

TEST(CudaConvPatch, RefusedShapesStillMatchThroughCudnn) {
  VIGIL_SKIP_WITHOUT_CUDA();
  for (ir::DataType t : {kF32, kF16}) {
    for (const PatchCase& k : RefusedCases()) CheckSession(k, t);
  }
}

TEST(CudaConvPatch, SwitchedOffPatchShapesRunOnCudnn) {
  VIGIL_SKIP_WITHOUT_CUDA();
  // PatchGemmEnabled reads the variable on every run.
  setenv("VIGIL_PATCH_GEMM", "0", 1);
  for (ir::DataType t : {kF32, kF16}) {
    CheckSession({.x = {2, 18, 22, 3}, .residual = true, .act = "Relu"}, t);
    CheckSession({.x = {2, 32, 32, 3}, .m = 48, .kh = 16, .kw = 16}, t);
  }
  unsetenv("VIGIL_PATCH_GEMM");
}

// A float32 patch convolution follows the convolutions' precision (exact
// on CUDA cores unless TF32 or tf32x3_convolutions is on), not the
// products' 3xTF32 default. The operands make the difference visible: X
// holds odd integers in [2049, 4095] and each output channel of W has one
// odd integer weight in that range, so every output is one product below
// 2^24, exact in float32; 3xTF32 drops the product of the two operands'
// low parts (x - tf32(x) = +-1 here), which is +-1 on every output. The
// product is large enough for the split (2^26 multiply-adds and more).
TEST(CudaConvPatch, Float32PatchProductIsExactUnlessConvolutionsMaySplit) {
  VIGIL_SKIP_WITHOUT_CUDA();
  const PatchCase k{.x = {8, 256, 256, 3}, .m = 256, .kh = 16, .kw = 16, .bias = false};
  const int64_t depth = k.kh * k.kw * k.x[3];
  Operands o;
  o.x = runtime::Tensor::Allocate(kF32, k.x).value();
  for (uint64_t i = 0; i < o.x.element_count(); ++i) o.x.data<float>()[i] = float(2049 + 2 * ((i * 7919) % 1023));
  o.w = runtime::Tensor::Allocate(kF32, {k.m, k.kh, k.kw, k.x[3]}).value();
  std::memset(o.w.raw_data(), 0, o.w.byte_size());
  for (int64_t m = 0; m < k.m; ++m) o.w.data<float>()[m * depth + (m * 37) % depth] = float(4095 - 2 * m);
  const runtime::Tensor want = Float64Reference(k, o);
  auto mismatches = [&](const runtime::Tensor& got) {
    EXPECT_EQ(got.shape(), want.shape());
    size_t n = 0;
    for (uint64_t i = 0; i < want.element_count(); ++i) n += double(got.data<float>()[i]) != want.data<double>()[i];
    return n;
  };
  auto run = [&](Way way) { return RunSingleOutput(PatchModel(k, o), {Backend(way), cpu::MakeCpuBackend()}, o.x); };
  EXPECT_EQ(mismatches(run(Way::kTf32x3)), 0u) << "the default: exact";
  EXPECT_EQ(mismatches(run(Way::kFfma)), 0u) << "CUDA cores only";
  // The test's own check: with convolutions allowed to split, the same
  // product loses the low parts' product.
  EXPECT_GT(mismatches(run(Way::kTf32x3Convs)), want.element_count() / 2) << "tf32x3_convolutions";
}

#ifdef VIGIL_TESTS_LAUNCH_CUDA_KERNELS
std::optional<PatchShape> ShapeOf(const PatchCase& k) {
  const std::vector<int64_t> w = {k.m, k.kh, k.kw, k.x[3] / k.group};
  return PatchShapeOf(k.x, w, OutShape(k), k.group, StridesOf(k), {k.pads[0], k.pads[1]}, {k.pads[2], k.pads[3]},
                      k.dilations);
}

TEST(CudaConvPatch, OnlyNonOverlappingUnpaddedPatchesTakeTheGemm) {
  // Host code: no GPU needed.
  for (const PatchCase& k : PatchCases()) {
    std::optional<PatchShape> s = ShapeOf(k);
    ASSERT_TRUE(s.has_value()) << Describe(k, kF16);
    EXPECT_EQ(s->out_h, k.x[1] / k.kh);
    EXPECT_EQ(s->out_w, k.x[2] / k.kw);
    EXPECT_EQ(s->rows(), k.x[0] * s->out_h * s->out_w);
    EXPECT_EQ(s->depth(), k.kh * k.kw * k.x[3]);
  }
  for (const PatchCase& k : RefusedCases()) EXPECT_FALSE(ShapeOf(k).has_value()) << Describe(k, kF16);
  // ViT-B/16's embedding.
  std::optional<PatchShape> vit = PatchShapeOf({64, 224, 224, 3}, {768, 16, 16, 3}, {64, 14, 14, 768}, 1, {16, 16},
                                               {0, 0}, {0, 0}, {1, 1});
  ASSERT_TRUE(vit.has_value());
  EXPECT_EQ(vit->rows(), 64 * 14 * 14);
  EXPECT_EQ(vit->depth(), 768);
  // Only a pad at the end; a Y that does not agree with X; W's channels not X's.
  EXPECT_FALSE(PatchShapeOf({1, 8, 8, 3}, {4, 4, 4, 3}, {1, 2, 2, 4}, 1, {4, 4}, {0, 0}, {0, 1}, {1, 1}));
  EXPECT_FALSE(PatchShapeOf({1, 8, 8, 3}, {4, 4, 4, 3}, {1, 3, 2, 4}, 1, {4, 4}, {0, 0}, {0, 0}, {1, 1}));
  EXPECT_FALSE(PatchShapeOf({1, 8, 8, 3}, {4, 4, 4, 2}, {1, 2, 2, 4}, 1, {4, 4}, {0, 0}, {0, 0}, {1, 1}));
  // Beyond 32-bit indexing: P would have 2^31 elements.
  EXPECT_FALSE(PatchShapeOf({2048, 1024, 1024, 1}, {8, 2, 2, 1}, {2048, 512, 512, 8}, 1, {2, 2}, {0, 0}, {0, 0},
                            {1, 1}));
  // Malformed input gets nullopt, not a crash.
  EXPECT_FALSE(PatchShapeOf({1, 8, 8}, {4, 4, 4, 3}, {1, 2, 2, 4}, 1, {4, 4}, {0, 0}, {0, 0}, {1, 1}));
  EXPECT_FALSE(PatchShapeOf({1, 8, 8, 3}, {4, 0, 4, 3}, {1, 2, 2, 4}, 1, {0, 4}, {0, 0}, {0, 0}, {1, 1}));
}

TEST(CudaConvPatch, SwitchIsReadOnEveryCall) {
  unsetenv("VIGIL_PATCH_GEMM");
  EXPECT_TRUE(PatchGemmEnabled());
  setenv("VIGIL_PATCH_GEMM", "0", 1);
  EXPECT_FALSE(PatchGemmEnabled());
  setenv("VIGIL_PATCH_GEMM", "1", 1);
  EXPECT_TRUE(PatchGemmEnabled());
  unsetenv("VIGIL_PATCH_GEMM");
}

// A gather case: the shape, the dtype, and the copy width expected with
// 256-byte aligned pointers.
struct GatherCase {
  PatchCase k;
  ir::DataType t;
  int unit;
};

std::vector<GatherCase> GatherCases() {
  return {
      {{.x = {2, 9, 11, 8}, .m = 16, .kh = 3, .kw = 2}, kF16, 16},  // runs of 32 bytes, rows of 176
      {{.x = {2, 9, 11, 8}, .m = 16, .kh = 3, .kw = 2}, kF32, 16},
      {{.x = {2, 32, 32, 3}, .m = 48, .kh = 16, .kw = 16}, kF16, 16},  // ViT-like: runs of 96 bytes
      {{.x = {2, 18, 22, 3}}, kF32, 8},                              // runs of 48 bytes, but rows of 264
      {{.x = {1, 6, 23, 4}, .m = 7, .kh = 2, .kw = 2}, kF16, 8},     // runs of 16 bytes, rows of 184
      {{.x = {2, 18, 22, 3}}, kF16, 4},                              // runs of 24 bytes, rows of 132
      {{.x = {1, 7, 7, 3}, .m = 5, .kh = 3, .kw = 3}, kF16, 2},      // runs of 18 bytes: one element
      {{.x = {1, 8, 10, 5}, .m = 13, .kh = 1, .kw = 3}, kF32, 4},    // runs of 60 bytes: one element
  };
}

TEST(CudaConvPatch, GatherCopiesTheWidestUnitTheOperandsAllow) {
  // Host code: no GPU needed. Fake device addresses, 256-byte aligned or one element off.
  const auto* aligned = reinterpret_cast<const void*>(uintptr_t{1} << 20);
  for (const GatherCase& g : GatherCases()) {
    std::optional<PatchShape> s = ShapeOf(g.k);
    ASSERT_TRUE(s.has_value()) << Describe(g.k, g.t);
    const int elem = ir::DataTypeBits(g.t) / 8;
    const auto* off = reinterpret_cast<const void*>((uintptr_t{1} << 20) + static_cast<uintptr_t>(elem));
    EXPECT_EQ(PatchGatherUnitBytes(*s, g.t, aligned, aligned), g.unit) << Describe(g.k, g.t);
    EXPECT_EQ(PatchGatherUnitBytes(*s, g.t, off, aligned), elem) << Describe(g.k, g.t);
    EXPECT_EQ(PatchGatherUnitBytes(*s, g.t, aligned, off), elem) << Describe(g.k, g.t);
  }
}

// P on the host: row (n, oy, ox), column (kh, kw, c) = X[n, oy*kH + kh, ox*kW + kw, c], as bytes.
std::vector<uint8_t> HostPatches(const PatchShape& s, const runtime::Tensor& x) {
  const size_t elem = static_cast<size_t>(ir::DataTypeBits(x.dtype()) / 8);
  const auto* xb = static_cast<const uint8_t*>(x.raw_data());
  std::vector<uint8_t> p;
  for (int64_t n = 0; n < s.batch; ++n) {
    for (int64_t oy = 0; oy < s.out_h; ++oy) {
      for (int64_t ox = 0; ox < s.out_w; ++ox) {
        for (int64_t kh = 0; kh < s.kernel_h; ++kh) {
          const int64_t first = ((n * s.in_h + oy * s.kernel_h + kh) * s.in_w + ox * s.kernel_w) * s.channels;
          const size_t bytes = static_cast<size_t>(s.kernel_w * s.channels) * elem;
          p.insert(p.end(), xb + first * static_cast<int64_t>(elem), xb + first * static_cast<int64_t>(elem) + bytes);
        }
      }
    }
  }
  return p;
}

// The gather into a buffer of 0xFF bytes (`shift` bytes into X's and P's
// allocations, to force narrower copies), with a poisoned guard after P.
void CheckGather(const GatherCase& g, size_t shift) {
  const std::string what = fmt::format("{} shift {}", Describe(g.k, g.t), shift);
  std::optional<PatchShape> s = ShapeOf(g.k);
  ASSERT_TRUE(s.has_value()) << what;
  runtime::Tensor x = RandomTensor(g.t, g.k.x, 5);
  const std::vector<uint8_t> want = HostPatches(*s, x);
  ExpectGatherWrites(x, want, shift, what, [&](const void* xs, void* ps) {
    EXPECT_EQ(PatchGatherUnitBytes(*s, g.t, xs, ps), shift == 0 ? g.unit : ir::DataTypeBits(g.t) / 8) << what;
    return LaunchPatchGather(*s, g.t, xs, ps, nullptr);
  });
}

TEST(CudaConvPatch, GatherWritesEveryElementOfAPoisonedBuffer) {
  VIGIL_SKIP_WITHOUT_CUDA();
  for (const GatherCase& g : GatherCases()) {
    CheckGather(g, 0);
    CheckGather(g, static_cast<size_t>(ir::DataTypeBits(g.t) / 8));
  }
}

TEST(CudaConvPatch, GatherRefusesWhatIsNotAPatchShape) {
  PatchShape s{1, 8, 8, 3, 4, 4, 2, 2, 5};
  s.out_h = 3;  // 8 / 4 is 2
  Status st = LaunchPatchGather(s, kF16, nullptr, nullptr, nullptr);
  EXPECT_FALSE(st.ok());
  st = LaunchPatchGather(PatchShape{1, 8, 8, 3, 4, 4, 2, 2, 5}, ir::DataType::kFloat64, nullptr, nullptr, nullptr);
  EXPECT_FALSE(st.ok());
}
#else
TEST(CudaConvPatch, GatherWritesEveryElementOfAPoisonedBuffer) {
  GTEST_SKIP() << "the patch gather is compiled into this test program only in a CUDA build";
}
#endif

}  // namespace
}  // namespace vigil::cuda::testing
