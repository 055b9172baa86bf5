// ai.vigil.Attention on the GPU (backends/cuda/attention.cu) against a
// double-precision reference written here from the op's definition, for
// float16, bfloat16 and float32, both layouts, every supported head size,
// sequence lengths that leave partial 64-row tiles, and S = 1. The node runs
// on the CUDA backend directly (no session, so no dependence on the op's
// schema or CPU kernel); Y is poisoned with NaN before the run, so an element
// the kernel does not write fails the comparison. float16 / bfloat16 cases
// run through both tensor-core kernels, chosen with VIGIL_ATTENTION_KERNEL:
// the default choice, "mma" (attention_mma.cu, an Unsupported error where it
// cannot run, so a pass shows that it ran) and "wmma" (the fallback); the
// mma kernel's launch shapes are forced with VIGIL_ATTENTION_SHAPE.
#include <array>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "backends/cpu/kernel_test_util.h"
#include "backends/cuda/cuda_test_util.h"
#include "ir/fuse_attention.h"
#include "ir/layout_nhwc.h"  // kVigilDomain
#include "ops/attention_params.h"  // BroadcastStrides4
#include "ops/shape_helpers.h"
#include "vigil/float16.h"
#include "runtime/tensor_compare.h"  // ElementAsDouble

namespace vigil::cuda {
namespace {

using ir::DataType;
using testing::CudaBackendForTests;
using testing::RandomTensor;
using testing::PoisonedDeviceOutputs;
using testing::Backend;
using testing::Way;

constexpr DataType kF32 = DataType::kFloat32;
constexpr DataType kF16 = DataType::kFloat16;
constexpr DataType kBF16 = DataType::kBfloat16;

// Relative L2 error allowed against the float64 reference. fp16/bf16: P is
// rounded to the input dtype for P.V (as flash attention does) and Y once.
// float32: 1e-5 on CUDA cores and as 3xTF32 (the default); with TF32
// allowed, every operand has TF32's 10-bit mantissa, as fp16's P has 10.
constexpr double kTolF16 = 5e-3;
constexpr double kTolBF16 = 2e-2;
constexpr double kTolF32 = 1e-5;
constexpr double kTolTf32 = 5e-3;

double Tolerance(DataType t, Way way = Way::kTf32x3) {
  if (t == kF32) return way == Way::kTf32 ? kTolTf32 : kTolF32;
  return t == kF16 ? kTolF16 : kTolBF16;
}

struct AttentionCase {
  int64_t seq, batch, heads, head_size;
  bool sbe;
  bool negative_scale = false;  // scale = -1/sqrt(D) (the mma kernel refuses it)
  std::string Name() const {
    return "S=" + std::to_string(seq) + " B=" + std::to_string(batch) + " H=" + std::to_string(heads) +
           " D=" + std::to_string(head_size) + (sbe ? " sbe" : " bse") + (negative_scale ? " scale<0" : "");
  }
  int64_t embed() const { return heads * head_size; }
  std::vector<int64_t> InputShape() const {
    return sbe ? std::vector<int64_t>{seq, batch, 3 * embed()} : std::vector<int64_t>{batch, seq, 3 * embed()};
  }
  std::vector<int64_t> OutputShape() const {
    return sbe ? std::vector<int64_t>{seq, batch, embed()} : std::vector<int64_t>{batch, seq, embed()};
  }
  float scale() const { return (negative_scale ? -1.0f : 1.0f) / std::sqrt(static_cast<float>(head_size)); }
};

ir::Node AttentionNode(const AttentionCase& c) {
  ir::Node node = cpu::testing::MakeNode(ir::kAttentionOp, {"qkv"}, {"y"},
                                         {cpu::testing::IntAttr("num_heads", c.heads),
                                          cpu::testing::FloatAttr("scale", c.scale()),
                                          cpu::testing::StringAttr("layout", c.sbe ? "sbe" : "bse")});
  node.domain = ir::kVigilDomain;
  return node;
}

// Y from the definition: per (b, h, s), softmax over t of scale * q.k (+ M
// read through `st`, when `mask` is given) with the max subtracted, then the
// P-weighted sum of V rows; all in double. A row whose softmax is undefined
// (every score -inf) is 0 with `zero_rows`, else NaN.
std::vector<double> ReferenceWithMask(const runtime::Tensor& qkv, const AttentionCase& c,
                                      const runtime::Tensor* mask, const std::array<int64_t, 4>& st, bool zero_rows) {
  const int64_t e = c.embed(), d = c.head_size;
  // Converted once: the loops below read each element many times.
  std::vector<double> x(qkv.element_count());
  for (uint64_t i = 0; i < x.size(); ++i) x[i] = runtime::ElementAsDouble(qkv, i);
  auto in = [&](int64_t s, int64_t b, int64_t col) {
    const int64_t row = c.sbe ? s * c.batch + b : b * c.seq + s;
    return x[static_cast<size_t>(row * 3 * e + col)];
  };
  std::vector<double> y(static_cast<size_t>(c.seq * c.batch * e));
  std::vector<double> p(static_cast<size_t>(c.seq));
  for (int64_t b = 0; b < c.batch; ++b) {
    for (int64_t h = 0; h < c.heads; ++h) {
      for (int64_t s = 0; s < c.seq; ++s) {
        double max = -INFINITY;
        for (int64_t t = 0; t < c.seq; ++t) {
          double dot = 0;
          for (int64_t j = 0; j < d; ++j) dot += in(s, b, h * d + j) * in(t, b, e + h * d + j);
          p[t] = static_cast<double>(c.scale()) * dot;
          if (mask) {
            p[t] += runtime::ElementAsDouble(*mask, static_cast<uint64_t>(b * st[0] + h * st[1] + s * st[2] + t * st[3]));
          }
          max = std::max(max, p[t]);
        }
        double sum = 0;
        if (max > -INFINITY) {
          for (int64_t t = 0; t < c.seq; ++t) sum += p[t] = std::exp(p[t] - max);
        }
        const int64_t out_row = c.sbe ? s * c.batch + b : b * c.seq + s;
        for (int64_t i = 0; i < d; ++i) {
          double acc = 0;
          for (int64_t t = 0; t < c.seq && sum > 0; ++t) acc += p[t] * in(t, b, 2 * e + h * d + i);
          y[static_cast<size_t>(out_row * e + h * d + i)] = sum > 0 ? acc / sum : zero_rows ? 0.0 : NAN;
        }
      }
    }
  }
  return y;
}

std::vector<double> Reference(const runtime::Tensor& qkv, const AttentionCase& c) {
  return ReferenceWithMask(qkv, c, nullptr, {}, false);
}

// Runs the node on the CUDA backend of `way` with `qkv` (device) as input; Y
// on the host.
Result<runtime::Tensor> RunOnDevice(const ir::Node& node, const runtime::Tensor& qkv, Way way = Way::kTf32x3) {
  auto backend = Backend(way);
  if (!backend) return InternalError("no CUDA backend for this way");
  const runtime::Tensor* inputs[] = {&qkv};
  std::vector<runtime::Tensor> outputs;
  PoisonedDeviceOutputs allocator(*backend);
  VIGIL_RETURN_IF_ERROR(backend->Run(node, 1, inputs, outputs, allocator));
  VIGIL_RETURN_IF_ERROR(backend->Synchronize());
  if (outputs.size() != 1) return InternalError("{} outputs", outputs.size());
  return backend->ToHost(outputs[0]);
}

// `host` on the device, starting `offset` elements into its allocation (an
// offset of 1 makes every row start misaligned for 16-byte loads).
Result<runtime::Tensor> OnDevice(const runtime::Tensor& host, int64_t offset) {
  auto backend = CudaBackendForTests();
  const int64_t n = static_cast<int64_t>(host.element_count());
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor padded, runtime::Tensor::Allocate(host.dtype(), {n + offset}));
  const size_t elem = host.byte_size() / std::max<int64_t>(n, 1);
  std::memset(padded.raw_data(), 0, padded.byte_size());
  std::memcpy(static_cast<char*>(padded.raw_data()) + offset * elem, host.raw_data(), host.byte_size());
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor device, backend->ToDevice(padded));
  VIGIL_RETURN_IF_ERROR(backend->Synchronize());
  auto owner = std::make_shared<runtime::Tensor>(device);
  return runtime::Tensor::OnDevice(runtime::Device::kCuda, host.dtype(), host.shape(),
                                   static_cast<char*>(device.raw_data()) + offset * elem, owner);
}

// Sets an environment variable while it lives ("" leaves it unset: the
// default choice); unset again after. VIGIL_ATTENTION_KERNEL picks the
// kernel, VIGIL_ATTENTION_SHAPE the mma kernel's launch shape.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (value.empty()) {
      unsetenv(name_);
    } else {
      setenv(name_, value.c_str(), 1);
    }
  }
  ~ScopedEnv() { unsetenv(name_); }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
};

// The kernel choices a case runs through: for float32, the default, the
// TF32 tensor-core kernel ("tf32": an Unsupported error where it cannot
// run, so a pass shows that it ran; not without TF32 or 3xTF32) and the
// CUDA-core kernel ("rows").
std::vector<std::string> KernelsFor(DataType dtype, Way way = Way::kTf32x3) {
  if (dtype == kF32 && way == Way::kFfma) return {"", "rows"};
  if (dtype == kF32) return {"", "tf32", "rows"};
  return {"", "mma", "wmma"};
}

// Y's relative L2 error against the reference, over its finite elements;
// the others are counted in `not_finite`.
double RelativeError(const runtime::Tensor& y, const std::vector<double>& want, uint64_t* not_finite) {
  double err = 0, norm = 0;
  *not_finite = 0;
  for (uint64_t i = 0; i < want.size() && i < y.element_count(); ++i) {
    const double got = runtime::ElementAsDouble(y, i);
    if (!std::isfinite(got)) {
      ++*not_finite;
      continue;
    }
    err += (got - want[i]) * (got - want[i]);
    norm += want[i] * want[i];
  }
  return norm > 0 ? std::sqrt(err / norm) : std::sqrt(err);
}

// Y against the reference: relative L2 error, and elements not finite.
void ExpectClose(const runtime::Tensor& y, const std::vector<double>& want, DataType dtype, Way way = Way::kTf32x3) {
  ASSERT_EQ(y.element_count(), want.size());
  uint64_t not_finite = 0;
  const double rel = RelativeError(y, want, &not_finite);
  EXPECT_EQ(not_finite, 0u) << "elements not written, or NaN/inf";
  EXPECT_LE(rel, Tolerance(dtype, way)) << "relative L2 error";
}

// Runs the case once per kernel choice in `kernels` (KernelsFor(dtype) when
// empty) and mma launch shape in `shapes` ("" = the default choice) against
// one reference.
void ExpectMatchesReference(DataType dtype, const AttentionCase& c, int64_t misalign = 0,
                            std::vector<std::string> kernels = {}, const std::vector<std::string>& shapes = {""},
                            Way way = Way::kTf32x3) {
  SCOPED_TRACE(std::string(ir::DataTypeName(dtype)) + " " + c.Name() + (misalign ? " misaligned" : ""));
  // [-2, 2]: scores of a few units, so the softmax is far from uniform.
  runtime::Tensor qkv = RandomTensor(dtype, c.InputShape(), static_cast<uint32_t>(c.seq * 131 + c.head_size), -2, 2);
  auto device_qkv = OnDevice(qkv, misalign);
  ASSERT_TRUE(device_qkv.ok()) << device_qkv.status().ToString();
  const std::vector<double> want = Reference(qkv, c);
  if (kernels.empty()) kernels = KernelsFor(dtype, way);
  for (const std::string& kernel : kernels) {
    for (const std::string& shape : shapes) {
      SCOPED_TRACE("VIGIL_ATTENTION_KERNEL=" + kernel + " VIGIL_ATTENTION_SHAPE=" + shape);
      ScopedEnv kernel_choice("VIGIL_ATTENTION_KERNEL", kernel);
      ScopedEnv shape_choice("VIGIL_ATTENTION_SHAPE", shape);
      auto y = RunOnDevice(AttentionNode(c), *device_qkv, way);
      ASSERT_TRUE(y.ok()) << y.status().ToString();
      ASSERT_EQ(y->dtype(), dtype);
      ASSERT_EQ(y->shape(), c.OutputShape());
      ExpectClose(*y, want, dtype, way);
    }
  }
}

std::vector<AttentionCase> Cases() {
  std::vector<AttentionCase> cases;
  for (bool sbe : {true, false}) {
    cases.push_back({197, 2, 12, 64, sbe});  // ViT-B/16's attention, batch 2
    cases.push_back({7, 3, 2, 16, sbe});     // the tiny test model's head size
    cases.push_back({65, 1, 1, 32, sbe});    // one row past a 64-row tile
    cases.push_back({130, 2, 4, 128, sbe});  // largest head size, partial tiles
    cases.push_back({1, 3, 2, 64, sbe});     // one token
    // ViT-B/16 at batch 1, 4 and 8: on an H100 (132 SMs) the mma kernel
    // picks blocks of 1, 2 and 4 warps for these.
    cases.push_back({197, 1, 12, 64, sbe});
    cases.push_back({197, 4, 12, 64, sbe});
    cases.push_back({197, 8, 12, 64, sbe});
    // Sequence lengths around the 16-row and 64-key tiles.
    for (int64_t seq : {1, 15, 64, 65, 128, 197, 256}) cases.push_back({seq, 2, 3, 64, sbe});
    cases.push_back({130, 12, 8, 128, sbe});  // D = 128 in 4-warp blocks (over 48 KB of shared memory)
  }
  return cases;
}

void ExpectAllCasesMatch(DataType dtype) {
  for (const AttentionCase& c : Cases()) ExpectMatchesReference(dtype, c);
}

TEST(CudaAttention, Float16MatchesReference) {
  VIGIL_SKIP_WITHOUT_CUDA();
  ExpectAllCasesMatch(kF16);
}

TEST(CudaAttention, Bfloat16MatchesReference) {
  VIGIL_SKIP_WITHOUT_CUDA();
  ExpectAllCasesMatch(kBF16);
}

// float32 as 3xTF32 (the default), as TF32 (allow_tf32) and on CUDA cores
// (both off: the "rows" kernel, the tf32 kernel refused).
TEST(CudaAttention, Float32MatchesReference) {
  VIGIL_SKIP_WITHOUT_CUDA();
  ExpectAllCasesMatch(kF32);
}

TEST(CudaAttention, Float32OnTf32MatchesReference) {
  VIGIL_SKIP_WITHOUT_CUDA();
  ASSERT_TRUE(Backend(Way::kTf32));
  for (const AttentionCase& c : Cases()) ExpectMatchesReference(kF32, c, 0, {"", "tf32"}, {""}, Way::kTf32);
}

TEST(CudaAttention, Float32OnCudaCoresMatchesReference) {
  VIGIL_SKIP_WITHOUT_CUDA();
  ASSERT_TRUE(Backend(Way::kFfma));
  for (const AttentionCase& c : Cases()) ExpectMatchesReference(kF32, c, 0, {""}, {""}, Way::kFfma);
  const AttentionCase c{65, 2, 2, 64, true};
  runtime::Tensor qkv = RandomTensor(kF32, c.InputShape(), 17);
  auto device_qkv = OnDevice(qkv, 0);
  ASSERT_TRUE(device_qkv.ok()) << device_qkv.status().ToString();
  ScopedEnv choice("VIGIL_ATTENTION_KERNEL", "tf32");
  auto y = RunOnDevice(AttentionNode(c), *device_qkv, Way::kFfma);
  ASSERT_FALSE(y.ok());
  EXPECT_EQ(y.status().code(), ErrorCode::kUnsupported) << y.status().ToString();
  EXPECT_NE(y.status().ToString().find("allow_tf32 and allow_tf32x3 are both off"), std::string::npos)
      << y.status().ToString();
}

// The three ways differ as they should on ViT-B/16's attention (batch 2):
// TF32 an order of magnitude or more further from exact than 3xTF32, and
// 3xTF32 and the CUDA cores within float32's tolerance. A kernel that
// ignored the options, or dropped the small parts, would fail one of these.
TEST(CudaAttention, Float32PrecisionFollowsTheOptions) {
  VIGIL_SKIP_WITHOUT_CUDA();
  ASSERT_TRUE(Backend(Way::kTf32) && Backend(Way::kFfma));
  const AttentionCase c{197, 2, 12, 64, false};
  runtime::Tensor qkv = RandomTensor(kF32, c.InputShape(), 29, -2, 2);
  auto device_qkv = OnDevice(qkv, 0);
  ASSERT_TRUE(device_qkv.ok()) << device_qkv.status().ToString();
  const std::vector<double> want = Reference(qkv, c);
  double err[3] = {};
  const Way ways[3] = {Way::kTf32x3, Way::kTf32, Way::kFfma};
  for (int i = 0; i < 3; ++i) {
    auto y = RunOnDevice(AttentionNode(c), *device_qkv, ways[i]);
    ASSERT_TRUE(y.ok()) << y.status().ToString();
    uint64_t not_finite = 0;
    err[i] = RelativeError(*y, want, &not_finite);
    EXPECT_EQ(not_finite, 0u);
  }
  std::printf("[ info ] attention float32 rel L2 vs float64: 3xTF32 %.3g, TF32 %.3g, CUDA cores %.3g\n", err[0],
              err[1], err[2]);
  std::fflush(stdout);
  EXPECT_LE(err[0], kTolF32);
  EXPECT_GE(err[1], 10 * err[0]) << "TF32 is no less exact than 3xTF32: did the split run?";
  EXPECT_LE(err[2], kTolF32);
}

// The mma kernel's launch shapes (attention_mma.cu): the whole-sequence
// shape (one block of ceil(S / 16) warps per batch x head, at most 16
// warps, 8 for D = 128, else query blocks sharing the row tiles evenly) and
// the tiles of 1, 2 or 4 warps, each forced with VIGIL_ATTENTION_SHAPE (so both
// run whatever the GPU's SM count) and left to the default choice;
// "whole:N" caps the whole-sequence blocks at N warps. Edges: a last warp
// with 5 real rows (S = 197), warps wholly past S in the last query block
// (S = 300: 2 x 10 warps for 19 row tiles; D = 128: 3 x 7 for 19), one and
// two warps (S = 16, 17), one row (S = 1).
std::vector<AttentionCase> ShapeCases() {
  std::vector<AttentionCase> cases = {
      // On an H100 (132 SMs) the default picks the whole-sequence shape for
      // these (at least 264 blocks).
      {197, 24, 12, 64, false},  // ViT-B/16, batch 24: 288 blocks of 13 warps
      {300, 12, 12, 64, true},   // 288 blocks of 10 warps, 2 per (batch, head)
      {16, 64, 12, 64, true},    // 1 warp
      {17, 64, 12, 64, false},   // 2 warps, the second with 1 real row
  };
  for (bool sbe : {true, false}) {
    cases.push_back({1, 3, 2, 64, sbe});
    cases.push_back({600, 1, 2, 64, sbe});   // 38 row tiles: 3 query blocks of 13 warps
    cases.push_back({197, 2, 3, 128, sbe});  // 13 row tiles: 2 query blocks of 7 warps
    cases.push_back({300, 2, 2, 128, sbe});  // 19 row tiles: 3 query blocks of 7 warps
    cases.push_back({65, 2, 3, 16, sbe});
    cases.push_back({130, 2, 3, 32, sbe});
  }
  return cases;
}

TEST(CudaAttention, MmaLaunchShapesMatchReference) {
  VIGIL_SKIP_WITHOUT_CUDA();
  for (DataType dtype : {kF16, kBF16}) {
    for (const AttentionCase& c : ShapeCases()) {
      // whole:3 caps the blocks at 3 warps: more query blocks, the last one
      // mostly past S (S = 197: 5 x 3 warps for 13 row tiles).
      ExpectMatchesReference(dtype, c, 0, {"mma"}, {"", "whole", "tiles", "whole:3"});
    }
  }
  // float32's tensor-core kernel has whole-sequence blocks only ("tiles"
  // gives the default), capped lower with whole:N.
  for (Way way : {Way::kTf32x3, Way::kTf32}) {
    for (const AttentionCase& c : ShapeCases()) {
      ExpectMatchesReference(kF32, c, 0, {"tf32"}, {"", "whole", "tiles", "whole:3", "whole:1"}, way);
    }
  }
}

// QKV not 16-byte aligned: the default choice falls back to the wmma
// kernel's element-wise loads (the mma kernel refuses it, below).
TEST(CudaAttention, MisalignedInputMatchesReference) {
  VIGIL_SKIP_WITHOUT_CUDA();
  for (DataType dtype : {kF16, kBF16, kF32}) {
    const std::vector<std::string> kernels = dtype == kF32 ? std::vector<std::string>{""}
                                                           : std::vector<std::string>{"", "wmma"};
    ExpectMatchesReference(dtype, {70, 2, 2, 64, true}, /*misalign=*/1, kernels);
    ExpectMatchesReference(dtype, {33, 1, 3, 16, false}, /*misalign=*/1, kernels);
    ExpectMatchesReference(dtype, {197, 1, 12, 64, true}, /*misalign=*/1, kernels);
  }
}

// So the default run above cannot have taken the mma kernel: forced, it
// reports the misaligned rows instead of reading them.
// A negative scale (legal, if odd) also takes the wmma kernel: the mma
// kernel takes the row max before scaling.
TEST(CudaAttention, NegativeScaleMatchesReference) {
  VIGIL_SKIP_WITHOUT_CUDA();
  for (DataType dtype : {kF16, kBF16}) {
    ExpectMatchesReference(dtype, {65, 2, 2, 64, true, /*negative_scale=*/true}, 0, {"", "wmma"});
  }
  const AttentionCase c{65, 2, 2, 64, true, /*negative_scale=*/true};
  runtime::Tensor qkv = RandomTensor(kF16, c.InputShape(), 13);
  auto device_qkv = OnDevice(qkv, 0);
  ASSERT_TRUE(device_qkv.ok()) << device_qkv.status().ToString();
  ScopedEnv choice("VIGIL_ATTENTION_KERNEL", "mma");
  auto y = RunOnDevice(AttentionNode(c), *device_qkv);
  ASSERT_FALSE(y.ok());
  EXPECT_EQ(y.status().code(), ErrorCode::kUnsupported) << y.status().ToString();
  EXPECT_NE(y.status().ToString().find("scale > 0"), std::string::npos) << y.status().ToString();
}

TEST(CudaAttention, MmaKernelRefusesMisalignedRows) {
  VIGIL_SKIP_WITHOUT_CUDA();
  const AttentionCase c{70, 2, 2, 64, true};
  runtime::Tensor qkv = RandomTensor(kF16, c.InputShape(), 11);
  auto device_qkv = OnDevice(qkv, /*offset=*/1);
  ASSERT_TRUE(device_qkv.ok()) << device_qkv.status().ToString();
  ScopedEnv choice("VIGIL_ATTENTION_KERNEL", "mma");
  auto y = RunOnDevice(AttentionNode(c), *device_qkv);
  ASSERT_FALSE(y.ok());
  EXPECT_EQ(y.status().code(), ErrorCode::kUnsupported) << y.status().ToString();
  EXPECT_NE(y.status().ToString().find("not 16-byte aligned"), std::string::npos) << y.status().ToString();
}

TEST(CudaAttention, RefusesUnsupportedHeadSize) {
  VIGIL_SKIP_WITHOUT_CUDA();
  const AttentionCase c{5, 1, 2, 48, true};
  ir::Node node = AttentionNode(c);
  ir::TypeInfo in = ops::TensorType(kF16, c.InputShape());
  runtime::NodeTypes types;
  types.inputs = {&in};
  std::string why;
  EXPECT_FALSE(CudaBackendForTests()->SupportsTyped(node, 1, types, &why));
  EXPECT_EQ(why, "head size D=48 (supported: 16, 32, 64, 128)");
  // Run anyway: an Unsupported error, not a launch.
  runtime::Tensor qkv = RandomTensor(kF16, c.InputShape(), 7);
  auto device_qkv = OnDevice(qkv, 0);
  ASSERT_TRUE(device_qkv.ok()) << device_qkv.status().ToString();
  auto y = RunOnDevice(node, *device_qkv);
  ASSERT_FALSE(y.ok());
  EXPECT_EQ(y.status().code(), ErrorCode::kUnsupported) << y.status().ToString();
  EXPECT_NE(y.status().ToString().find("head size D=48"), std::string::npos) << y.status().ToString();
}

// float16 / bfloat16, and float32 where TF32 or 3xTF32 is allowed: without
// tensor cores float32 stays unfused (its CUDA-core kernel still runs when
// asked, as Float32OnCudaCoresMatchesReference does).
TEST(CudaAttention, SupportsFloat32OnTensorCoresOnly) {
  VIGIL_SKIP_WITHOUT_CUDA();
  const AttentionCase c{5, 1, 2, 64, true};
  ir::Node node = AttentionNode(c);
  for (DataType dtype : {kF16, kBF16}) {
    ir::TypeInfo in = ops::TensorType(dtype, c.InputShape());
    runtime::NodeTypes types;
    types.inputs = {&in};
    std::string why;
    EXPECT_TRUE(CudaBackendForTests()->SupportsTyped(node, 1, types, &why)) << why;
  }
  {
    ASSERT_TRUE(Backend(Way::kTf32) && Backend(Way::kFfma));
    ir::TypeInfo in = ops::TensorType(kF32, c.InputShape());
    runtime::NodeTypes types;
    types.inputs = {&in};
    std::string why;
    EXPECT_TRUE(Backend(Way::kTf32x3)->SupportsTyped(node, 1, types, &why)) << why;
    EXPECT_TRUE(Backend(Way::kTf32)->SupportsTyped(node, 1, types, &why)) << why;
    EXPECT_FALSE(Backend(Way::kFfma)->SupportsTyped(node, 1, types, &why));
    EXPECT_NE(why.find("float32 attention runs unfused without TF32 tensor cores"), std::string::npos) << why;
  }
  ir::TypeInfo in = ops::TensorType(DataType::kFloat64, c.InputShape());
  runtime::NodeTypes types;
  types.inputs = {&in};
  std::string why;
  EXPECT_FALSE(CudaBackendForTests()->SupportsTyped(node, 1, types, &why));
  EXPECT_EQ(why, "dtype float64 of input 0");
}

TEST(CudaAttention, BadInputIsAnErrorNotACrash) {
  VIGIL_SKIP_WITHOUT_CUDA();
  const AttentionCase c{4, 2, 2, 16, true};
  // Rank 2 instead of 3.
  runtime::Tensor flat = RandomTensor(kF16, {8, 3 * c.embed()}, 3);
  auto device_flat = OnDevice(flat, 0);
  ASSERT_TRUE(device_flat.ok()) << device_flat.status().ToString();
  auto y = RunOnDevice(AttentionNode(c), *device_flat);
  ASSERT_FALSE(y.ok());
  EXPECT_EQ(y.status().code(), ErrorCode::kInvalidInput) << y.status().ToString();
  // A last dim that is not 3 * E with E divisible by num_heads.
  runtime::Tensor odd = RandomTensor(kF16, {4, 2, 3 * c.embed() + 3}, 4);
  auto device_odd = OnDevice(odd, 0);
  ASSERT_TRUE(device_odd.ok()) << device_odd.status().ToString();
  y = RunOnDevice(AttentionNode(c), *device_odd);
  ASSERT_FALSE(y.ok());
  EXPECT_EQ(y.status().code(), ErrorCode::kInvalidInput) << y.status().ToString();
}

// --- the additive mask and undefined rows --------------------------------------

// A case with a mask M of `mask_shape` (broadcast to [B, H, S, S]): values
// in [-3, 1], -inf where `masked(b, h, i, j)` says; undefined_rows "zero"
// or "nan".
struct MaskCase {
  AttentionCase c;
  std::vector<int64_t> mask_shape;
  bool zero_rows = false;
  int pattern = 0;  // 0: none -inf; 1: keys past S - 1 - 3b (padding); 2: 1 and every key of batch B-1; 3: rows i % 5 == 2
  std::string Name() const {
    std::string shape;
    for (int64_t d : mask_shape) shape += std::to_string(d) + ",";
    return c.Name() + " mask[" + shape + "] pattern " + std::to_string(pattern) + (zero_rows ? " zero" : " nan");
  }
};

// Whether M at full index (b, h, i, j) is -inf for `pattern`.
bool MaskedOut(int pattern, const AttentionCase& c, int64_t b, int64_t i, int64_t j) {
  if (pattern == 1 || pattern == 2) {
    if (pattern == 2 && b == c.batch - 1) return true;
    return j > c.seq - 1 - 3 * b;
  }
  if (pattern == 3) return i % 5 == 2;
  return false;
}

// M as a host tensor of `mask_shape`, written through its broadcast
// strides: an element read by several full indices gets the value of the
// last, and the pattern is chosen per case so that they agree.
runtime::Tensor MaskTensor(DataType dtype, const MaskCase& m) {
  runtime::Tensor t = RandomTensor(dtype, m.mask_shape, 977, -3, 1);
  const AttentionCase& c = m.c;
  auto strides = ops::BroadcastStrides4(m.mask_shape, {c.batch, c.heads, c.seq, c.seq});
  EXPECT_TRUE(strides.has_value());
  if (!strides || m.pattern == 0) return t;
  for (int64_t b = 0; b < c.batch; ++b) {
    for (int64_t h = 0; h < c.heads; ++h) {
      for (int64_t i = 0; i < c.seq; ++i) {
        for (int64_t j = 0; j < c.seq; ++j) {
          if (!MaskedOut(m.pattern, c, b, i, j)) continue;
          const int64_t k = b * (*strides)[0] + h * (*strides)[1] + i * (*strides)[2] + j * (*strides)[3];
          if (dtype == kF32) t.data<float>()[k] = -INFINITY;
          if (dtype == kF16) t.data<uint16_t>()[k] = FloatToFloat16(-INFINITY);
          if (dtype == kBF16) t.data<uint16_t>()[k] = FloatToBfloat16(-INFINITY);
        }
      }
    }
  }
  return t;
}

// Y with M added to the scores; a row whose softmax is undefined (all
// -inf) is 0 ("zero") or NaN.
std::vector<double> MaskedReference(const runtime::Tensor& qkv, const runtime::Tensor& mask, const MaskCase& m) {
  const AttentionCase& c = m.c;
  const auto st = *ops::BroadcastStrides4(m.mask_shape, {c.batch, c.heads, c.seq, c.seq});
  return ReferenceWithMask(qkv, c, &mask, st, m.zero_rows);
}

// As ExpectClose, but where the reference is NaN Y must be NaN too.
void ExpectCloseWithNaN(const runtime::Tensor& y, const std::vector<double>& want, DataType dtype, Way way) {
  ASSERT_EQ(y.element_count(), want.size());
  double err = 0, norm = 0;
  uint64_t wrong_nan = 0, not_finite = 0, nan_rows = 0;
  for (uint64_t i = 0; i < want.size(); ++i) {
    const double got = runtime::ElementAsDouble(y, i);
    if (std::isnan(want[i])) {
      ++nan_rows;
      wrong_nan += !std::isnan(got);
      continue;
    }
    if (!std::isfinite(got)) {
      ++not_finite;
      continue;
    }
    err += (got - want[i]) * (got - want[i]);
    norm += want[i] * want[i];
  }
  EXPECT_EQ(wrong_nan, 0u) << "elements of undefined rows that are not NaN (of " << nan_rows << ")";
  EXPECT_EQ(not_finite, 0u) << "elements not written, or NaN/inf";
  const double rel = norm > 0 ? std::sqrt(err / norm) : std::sqrt(err);
  EXPECT_LE(rel, Tolerance(dtype, way)) << "relative L2 error";
}

void ExpectMaskedMatchesReference(DataType dtype, const MaskCase& m, Way way = Way::kTf32x3) {
  SCOPED_TRACE(std::string(ir::DataTypeName(dtype)) + " " + m.Name());
  const AttentionCase& c = m.c;
  runtime::Tensor qkv = RandomTensor(dtype, c.InputShape(), static_cast<uint32_t>(c.seq * 131 + c.head_size), -2, 2);
  runtime::Tensor mask = MaskTensor(dtype, m);
  auto device_qkv = OnDevice(qkv, 0);
  auto device_mask = OnDevice(mask, 0);
  ASSERT_TRUE(device_qkv.ok() && device_mask.ok());
  const std::vector<double> want = MaskedReference(qkv, mask, m);
  ir::Node node = AttentionNode(c);
  node.inputs.push_back("mask");
  node.attributes.push_back(cpu::testing::StringAttr(ir::kAttentionUndefinedRows, m.zero_rows ? "zero" : "nan"));
  for (const std::string& kernel : KernelsFor(dtype, way)) {
    SCOPED_TRACE("VIGIL_ATTENTION_KERNEL=" + kernel);
    ScopedEnv kernel_choice("VIGIL_ATTENTION_KERNEL", kernel);
    auto backend = Backend(way);
    ASSERT_TRUE(backend);
    const runtime::Tensor* inputs[] = {&*device_qkv, &*device_mask};
    std::vector<runtime::Tensor> outputs;
    PoisonedDeviceOutputs allocator(*backend);
    Status run = backend->Run(node, 1, inputs, outputs, allocator);
    ASSERT_TRUE(run.ok()) << run.ToString();
    ASSERT_TRUE(backend->Synchronize().ok());
    auto y = backend->ToHost(outputs[0]);
    ASSERT_TRUE(y.ok()) << y.status().ToString();
    ExpectCloseWithNaN(*y, want, dtype, way);
  }
}

std::vector<MaskCase> MaskCases() {
  return {
      {{128, 2, 4, 64, false}, {2, 1, 1, 128}, true, 1},    // BERT's padding mask, batch first
      {{128, 3, 4, 64, false}, {3, 1, 1, 128}, true, 2},    // and a batch row with every key masked
      {{197, 2, 3, 64, true}, {2, 1, 197, 197}, false, 0},  // a full [B, 1, S, S] float mask, sequence first
      {{65, 2, 2, 32, false}, {2, 2, 65, 65}, true, 2},     // per head; the last batch row masked
      {{16, 3, 2, 16, false}, {16}, false, 0},              // rank 1: one row of key biases for all
      {{150, 2, 2, 64, false}, {2, 1, 1, 150}, true, 2},    // padding mask, a partial last key tile
      {{130, 1, 2, 128, false}, {1, 1, 130, 1}, false, 3},  // query rows i % 5 == 2 masked: NaN
      {{77, 2, 2, 64, false}, {2, 1, 77, 1}, true, 3},      // the same rows, zero
      // Masks whose rows are 16-byte aligned and contiguous along keys, which
      // the float16 / bfloat16 kernel stages in shared memory:
      {{128, 2, 4, 64, false}, {2, 1, 128, 128}, false, 1},  // BERT's [B, 1, S, S] as exported
      {{136, 2, 3, 64, true}, {2, 3, 136, 136}, true, 2},    // per head; a last key tile of 8
      {{13, 2, 3, 32, false}, {1, 1, 1, 13}, false, 0},      // one row for all: a chunk of 5 keys
  };
}

TEST(CudaAttention, MaskedFloat16MatchesReference) {
  VIGIL_SKIP_WITHOUT_CUDA();
  for (const MaskCase& m : MaskCases()) ExpectMaskedMatchesReference(kF16, m);
}

// The same with every mask read from global memory element by element (the
// staged masks above take the other path).
TEST(CudaAttention, MaskedFloat16MatchesReferenceWithoutStaging) {
  VIGIL_SKIP_WITHOUT_CUDA();
  ScopedEnv unstaged("VIGIL_ATTENTION_MASK_TILE", "0");
  for (const MaskCase& m : MaskCases()) ExpectMaskedMatchesReference(kF16, m);
}

TEST(CudaAttention, MaskedBfloat16MatchesReference) {
  VIGIL_SKIP_WITHOUT_CUDA();
  for (const MaskCase& m : MaskCases()) ExpectMaskedMatchesReference(kBF16, m);
}

TEST(CudaAttention, MaskedFloat32MatchesReference) {
  VIGIL_SKIP_WITHOUT_CUDA();
  for (const MaskCase& m : MaskCases()) {
    ExpectMaskedMatchesReference(kF32, m);
    ExpectMaskedMatchesReference(kF32, m, Way::kTf32);
    ExpectMaskedMatchesReference(kF32, m, Way::kFfma);
  }
}

// A mask that does not broadcast to [B, H, S, S], or of another dtype, is
// an error naming it, not a crash.
TEST(CudaAttention, MaskThatDoesNotBroadcastIsAnError) {
  VIGIL_SKIP_WITHOUT_CUDA();
  const AttentionCase c{16, 2, 2, 16, false};
  for (const auto& [shape, dtype] : std::vector<std::pair<std::vector<int64_t>, DataType>>{
           {{2, 1, 3, 16}, kF16}, {{2, 2, 2, 16, 16}, kF16}, {{2, 1, 1, 16}, kF32}}) {
    runtime::Tensor qkv = RandomTensor(kF16, c.InputShape(), 5);
    runtime::Tensor mask = RandomTensor(dtype, shape, 6);
    auto dq = OnDevice(qkv, 0);
    auto dm = OnDevice(mask, 0);
    ASSERT_TRUE(dq.ok() && dm.ok());
    ir::Node node = AttentionNode(c);
    node.inputs.push_back("mask");
    auto backend = CudaBackendForTests();
    const runtime::Tensor* inputs[] = {&*dq, &*dm};
    std::vector<runtime::Tensor> outputs;
    PoisonedDeviceOutputs allocator(*backend);
    Status run = backend->Run(node, 1, inputs, outputs, allocator);
    EXPECT_FALSE(run.ok());
    EXPECT_NE(run.ToString().find("input 1 (the mask)"), std::string::npos) << run.ToString();
  }
}

}  // namespace
}  // namespace vigil::cuda
