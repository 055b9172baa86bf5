// Conv, ConvTranspose and the pooling kernels against naive float64
// references written here, plus their shape inference and error cases.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>

#include <gtest/gtest.h>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/fast/dnnl_library.h"
#include "backends/cpu/fast/fast_kernels.h"
#include "backends/cpu/fast/kernel_cache.h"
#include "backends/cpu/float_kernel_test_util.h"
#include "backends/cpu/kernel_test_util.h"

namespace vigil::cpu {
namespace {

namespace kt = vigil::cpu::testing;
using namespace vigil::cpu::float_testing;  // NOLINT: test helpers
using ir::DataType;

// ------------------------------------------------------------------- Conv

struct ConvCase {
  Shape x;  // N, C, spatial...
  int64_t out_channels;
  Shape kernel;
  Shape strides = {};
  Shape dilations = {};
  Shape pads = {};  // begins, ends (explicit; also what auto_pad resolves to)
  int64_t group = 1;
  std::string auto_pad = "";
  bool bias = true;
  DataType dtype = DataType::kFloat32;
};

void FillDefaults(ConvCase& c) {
  size_t n = c.kernel.size();
  if (c.strides.empty()) c.strides.assign(n, 1);
  if (c.dilations.empty()) c.dilations.assign(n, 1);
  if (c.pads.empty()) c.pads.assign(2 * n, 0);
}

// Output spatial sizes with explicit pads (floor mode).
Shape ConvOut(const ConvCase& c) {
  Shape out;
  for (size_t i = 0; i < c.kernel.size(); ++i) {
    int64_t extent = (c.kernel[i] - 1) * c.dilations[i] + 1;
    out.push_back((c.x[i + 2] + c.pads[i] + c.pads[i + c.kernel.size()] - extent) / c.strides[i] + 1);
  }
  return out;
}

std::vector<double> RefConv(const ConvCase& c, const std::vector<double>& x, const std::vector<double>& w,
                            const std::vector<double>& b, const Shape& out) {
  const size_t n = c.kernel.size();
  const int64_t batch = c.x[0], channels = c.x[1], cg = channels / c.group, mg = c.out_channels / c.group;
  const Shape in(c.x.begin() + 2, c.x.end());
  std::vector<double> y;
  for (int64_t b0 = 0; b0 < batch; ++b0) {
    for (int64_t m = 0; m < c.out_channels; ++m) {
      for (int64_t o = 0; o < Product(out); ++o) {
        Shape oi = Unravel(o, out);
        double sum = c.bias ? b[m] : 0.0;
        for (int64_t ci = 0; ci < cg; ++ci) {
          for (int64_t k = 0; k < Product(c.kernel); ++k) {
            Shape ki = Unravel(k, c.kernel);
            int64_t offset = 0;
            bool inside = true;
            for (size_t d = 0; d < n; ++d) {
              int64_t pos = oi[d] * c.strides[d] - c.pads[d] + ki[d] * c.dilations[d];
              inside = inside && pos >= 0 && pos < in[d];
              offset = offset * in[d] + pos;
            }
            if (!inside) continue;
            int64_t channel = (m / mg) * cg + ci;
            sum += x[(b0 * channels + channel) * Product(in) + offset] * w[(m * cg + ci) * Product(c.kernel) + k];
          }
        }
        y.push_back(sum);
      }
    }
  }
  return y;
}

ir::Node ConvNode(const ConvCase& c, const std::string& op = "Conv") {
  std::vector<ir::Attribute> attrs{kt::IntsAttr("strides", c.strides), kt::IntsAttr("dilations", c.dilations),
                                   kt::IntAttr("group", c.group)};
  if (c.auto_pad.empty()) {
    attrs.push_back(kt::IntsAttr("pads", c.pads));
  } else {
    attrs.push_back(kt::StringAttr("auto_pad", c.auto_pad));
  }
  std::vector<std::string> inputs{"x", "w"};
  if (c.bias) inputs.push_back("b");
  return kt::MakeNode(op, inputs, {"y"}, attrs);
}

void CheckConv(ConvCase c, uint32_t seed = 1) {
  FillDefaults(c);
  const int64_t cg = c.x[1] / c.group;
  Shape w_shape = Concat({c.out_channels, cg}, c.kernel);
  std::vector<double> x = RoundTo(c.dtype, Random(Product(c.x), seed));
  std::vector<double> w = RoundTo(c.dtype, Random(Product(w_shape), seed + 1));
  std::vector<double> b = RoundTo(c.dtype, Random(c.out_channels, seed + 2));
  runtime::Tensor xt = MakeFloat(c.dtype, c.x, x), wt = MakeFloat(c.dtype, w_shape, w),
                  bt = MakeFloat(c.dtype, {c.out_channels}, b);
  ir::Node node = ConvNode(c);
  std::vector<const runtime::Tensor*> inputs{&xt, &wt};
  if (c.bias) inputs.push_back(&bt);
  Shape out = ConvOut(c);
  const std::vector<double> expected = RefConv(c, x, w, b, out);
  // The optimised path (oneDNN, where loaded) and the reference code, each
  // against the float64 sum.
  for (bool optimised : {true, false}) {
    SCOPED_TRACE(optimised ? "optimised path" : "reference code");
    auto result = kt::RunKernel(node, 11, inputs, optimised);
    ASSERT_TRUE(result.ok()) << result.status().ToString();
    ASSERT_EQ(result->at(0).shape(), Concat({c.x[0], c.out_channels}, out));
    // The reference sums up to C/group * kernel terms of magnitude <= 1.
    double scale = std::sqrt(static_cast<double>(cg * Product(c.kernel)));
    ExpectClose(ReadFloat(result->at(0)), expected, Tolerance(c.dtype), Tolerance(c.dtype) * scale);
  }

  // Shape inference agrees with the kernel.
  ir::TypeInfo xtype = ops::TensorType(c.dtype, c.x), wtype = ops::TensorType(c.dtype, w_shape);
  auto inferred = kt::InferNode(node, 11, {&xtype, &wtype});
  ASSERT_TRUE(inferred.ok()) << inferred.status().ToString();
  EXPECT_EQ(DimsOf(inferred->at(0)), ir::ShapeToString(ops::TensorType(c.dtype, Concat({c.x[0], c.out_channels}, out)).shape));
}

// Where libdnnl.so.2 loads, float32 2D convolutions take the oneDNN path
// (so the cases above test it), and a session's constant weights are packed
// once and reused: a second run, and a run with other X, agree with the
// reference code.
TEST(Conv, OneDnnTakesFloat32TwoDAndReusesPackedConstantWeights) {
  if (!fast::DnnlLoaded()) GTEST_SKIP() << fast::DnnlDescription();
  ConvCase c{.x = {2, 13, 17, 11}, .out_channels = 127, .kernel = {3, 3}, .strides = {2, 1}, .pads = {1, 0, 2, 1}};
  FillDefaults(c);
  Shape w_shape = Concat({c.out_channels, c.x[1]}, c.kernel);
  std::vector<double> w = Random(Product(w_shape), 5), b = Random(c.out_channels, 6);
  runtime::Tensor wt = MakeFloat(c.dtype, w_shape, w), bt = MakeFloat(c.dtype, {c.out_channels}, b);
  ir::Tensor constant;
  constant.name = "w";
  constant.dtype = DataType::kFloat32;
  constant.dims = w_shape;
  auto bytes = std::make_shared<std::vector<uint8_t>>(wt.byte_size());
  std::memcpy(bytes->data(), wt.raw_data(), wt.byte_size());
  constant.bytes = *bytes;
  constant.keep_alive = bytes;
  runtime::Tensor wc = runtime::Tensor::FromConstant(constant);
  ASSERT_TRUE(wc.is_constant());
  fast::KernelCache cache;
  ir::Node node = ConvNode(c);
  for (uint32_t seed : {11u, 11u, 12u}) {
    runtime::Tensor xt = MakeFloat(c.dtype, c.x, Random(Product(c.x), seed));
    std::vector<const runtime::Tensor*> inputs{&xt, &wc, &bt};
    std::vector<runtime::Tensor> fast_out(1), ref_out(1);
    kt::HeapAllocator alloc;
    KernelContext fast_ctx(node, 11, inputs, fast_out, alloc);
    fast_ctx.set_cache(&cache);
    ASSERT_TRUE(ConvKernel(fast_ctx).ok());
    auto ref = kt::RunKernel(node, 11, inputs, /*optimised=*/false);
    ASSERT_TRUE(ref.ok()) << ref.status().ToString();
    ExpectClose(ReadFloat(fast_out[0]), ReadFloat(ref->at(0)), 1e-5, 1e-5 * std::sqrt(13.0 * 9));
  }
  EXPECT_EQ(cache.counts().conv_plans, 1u);
  EXPECT_EQ(cache.counts().packed_weights, 1u);
}

// The backend says which convolution path ran: oneDNN and how many shapes it
// planned, or why the reference kernels ran; a backend made with
// reference_kernels says that instead, and its result is the reference's.
TEST(Conv, BackendNotesNameTheConvolutionPath) {
  ConvCase c{.x = {1, 13, 9, 9}, .out_channels = 7, .kernel = {3, 3}, .pads = {1, 1, 1, 1}};
  FillDefaults(c);
  Shape w_shape = Concat({c.out_channels, c.x[1]}, c.kernel);
  runtime::Tensor xt = MakeFloat(c.dtype, c.x, Random(Product(c.x), 1)),
                  wt = MakeFloat(c.dtype, w_shape, Random(Product(w_shape), 2)),
                  bt = MakeFloat(c.dtype, {c.out_channels}, Random(c.out_channels, 3));
  std::vector<const runtime::Tensor*> inputs{&xt, &wt, &bt};
  ir::Node node = ConvNode(c);
  std::vector<std::vector<float>> results;
  for (bool reference : {false, true}) {
    auto backend = MakeCpuBackend(CpuOptions{1, reference});
    std::vector<runtime::Tensor> outputs;
    kt::HeapAllocator alloc;
    ASSERT_TRUE(backend->Run(node, 11, inputs, outputs, alloc).ok());
    results.push_back(kt::Values<float>(outputs[0]));
    const std::vector<std::string> notes = backend->Notes();
    ASSERT_EQ(notes.size(), 1u);
    if (reference) {
      EXPECT_NE(notes[0].find("reference kernel"), std::string::npos) << notes[0];
    } else if (fast::DnnlLoaded()) {
      EXPECT_NE(notes[0].find("oneDNN"), std::string::npos) << notes[0];
      EXPECT_NE(notes[0].find("1 convolution shape(s) planned"), std::string::npos) << notes[0];
    } else {
      EXPECT_NE(notes[0].find("reference kernels"), std::string::npos) << notes[0];
    }
  }
  ExpectClose(std::vector<double>(results[0].begin(), results[0].end()),
              std::vector<double>(results[1].begin(), results[1].end()), 1e-5, 1e-5 * std::sqrt(13.0 * 9));
}

TEST(Conv, Pointwise13To127Channels) { CheckConv({.x = {2, 13, 9, 11}, .out_channels = 127, .kernel = {1, 1}}); }
TEST(Conv, PointwiseStride2) { CheckConv({.x = {1, 13, 9, 11}, .out_channels = 7, .kernel = {1, 1}, .strides = {2, 2}}); }
TEST(Conv, PointwisePadded) {
  CheckConv({.x = {1, 5, 4, 3}, .out_channels = 3, .kernel = {1, 1}, .pads = {1, 0, 0, 2}});
}
TEST(Conv, ThreeByThreePadded) { CheckConv({.x = {2, 13, 10, 7}, .out_channels = 17, .kernel = {3, 3}, .pads = {1, 1, 1, 1}}); }
TEST(Conv, ThreeByThree127Channels) {
  CheckConv({.x = {1, 127, 6, 5}, .out_channels = 13, .kernel = {3, 3}, .pads = {1, 1, 1, 1}});
}
TEST(Conv, Stride2AsymmetricPads) {
  CheckConv({.x = {1, 13, 11, 10}, .out_channels = 9, .kernel = {3, 3}, .strides = {2, 2}, .pads = {0, 1, 2, 1}});
}
TEST(Conv, SevenBySevenStride2Stem) {
  CheckConv({.x = {1, 3, 23, 21}, .out_channels = 8, .kernel = {7, 7}, .strides = {2, 2}, .pads = {3, 3, 3, 3}});
}
TEST(Conv, NonSquareKernelAndStrides) {
  CheckConv({.x = {1, 4, 12, 9}, .out_channels = 5, .kernel = {2, 4}, .strides = {3, 1}, .pads = {0, 2, 1, 0}});
}
TEST(Conv, Depthwise) {
  CheckConv({.x = {2, 13, 8, 9}, .out_channels = 13, .kernel = {3, 3}, .pads = {1, 1, 1, 1}, .group = 13});
}
TEST(Conv, DepthwiseStride2Multiplier2) {
  CheckConv({.x = {1, 5, 9, 9}, .out_channels = 10, .kernel = {3, 3}, .strides = {2, 2}, .pads = {1, 1, 1, 1},
             .group = 5});
}
TEST(Conv, ThreeGroups) { CheckConv({.x = {1, 12, 7, 6}, .out_channels = 9, .kernel = {3, 2}, .group = 3}); }
TEST(Conv, Dilations) {
  CheckConv({.x = {1, 3, 13, 11}, .out_channels = 4, .kernel = {3, 3}, .dilations = {2, 3}, .pads = {2, 1, 2, 3}});
}
TEST(Conv, NoBias) { CheckConv({.x = {1, 3, 5, 5}, .out_channels = 2, .kernel = {3, 3}, .bias = false}); }
TEST(Conv, OneD) { CheckConv({.x = {2, 3, 17}, .out_channels = 5, .kernel = {4}, .strides = {2}, .pads = {1, 2}}); }
TEST(Conv, ThreeD) {
  CheckConv({.x = {1, 3, 5, 6, 7}, .out_channels = 4, .kernel = {3, 2, 3}, .strides = {1, 2, 2},
             .pads = {1, 0, 1, 1, 1, 0}});
}
TEST(Conv, KernelCoversInput) { CheckConv({.x = {1, 2, 3, 3}, .out_channels = 2, .kernel = {3, 3}}); }
TEST(Conv, Float64) {
  CheckConv({.x = {1, 13, 6, 6}, .out_channels = 3, .kernel = {3, 3}, .pads = {1, 1, 1, 1},
             .dtype = DataType::kFloat64});
}
TEST(Conv, Float16) {
  CheckConv({.x = {1, 13, 6, 6}, .out_channels = 3, .kernel = {3, 3}, .pads = {1, 1, 1, 1},
             .dtype = DataType::kFloat16});
}
TEST(Conv, Bfloat16) {
  CheckConv({.x = {1, 5, 6, 6}, .out_channels = 3, .kernel = {3, 3}, .strides = {2, 2}, .dtype = DataType::kBfloat16});
}

// auto_pad: the test resolves the padding itself and the reference uses it.
TEST(Conv, AutoPadSameUpperStride2) {
  // in 10, stride 2, kernel 3: out 5, total pad (5-1)*2+3-10 = 1 -> end.
  CheckConv({.x = {1, 3, 10, 9}, .out_channels = 4, .kernel = {3, 3}, .strides = {2, 2}, .pads = {0, 1, 1, 1},
             .auto_pad = "SAME_UPPER"});
}
TEST(Conv, AutoPadSameLowerStride2) {
  CheckConv({.x = {1, 3, 10, 9}, .out_channels = 4, .kernel = {3, 3}, .strides = {2, 2}, .pads = {1, 1, 0, 1},
             .auto_pad = "SAME_LOWER"});
}
TEST(Conv, AutoPadValid) {
  CheckConv({.x = {1, 3, 10, 9}, .out_channels = 4, .kernel = {3, 3}, .strides = {2, 2}, .auto_pad = "VALID"});
}

// Many small random configurations: every combination of rank, group,
// stride, dilation and asymmetric padding the generator can reach.
TEST(Conv, RandomConfigurations) {
  std::mt19937 gen(42);
  auto pick = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(gen); };
  int checked = 0;
  while (checked < 60) {
    ConvCase c;
    const int64_t rank = pick(1, 3), group = pick(1, 3);
    c.x = {pick(1, 2), group * pick(1, 3)};
    c.out_channels = group * pick(1, 3);
    c.group = group;
    c.bias = pick(0, 1) == 1;
    for (int64_t d = 0; d < rank; ++d) {
      c.x.push_back(pick(1, 9));
      c.kernel.push_back(pick(1, 4));
      c.strides.push_back(pick(1, 3));
      c.dilations.push_back(pick(1, 2));
    }
    for (int64_t d = 0; d < 2 * rank; ++d) c.pads.push_back(pick(0, 2));
    FillDefaults(c);
    bool fits = true;
    for (int64_t d = 0; d < rank; ++d) {
      fits = fits && c.x[d + 2] + c.pads[d] + c.pads[d + rank] >= (c.kernel[d] - 1) * c.dilations[d] + 1;
    }
    if (!fits) continue;
    SCOPED_TRACE(::testing::Message() << "case " << checked);
    CheckConv(c, static_cast<uint32_t>(checked));
    ++checked;
  }
}

TEST(Conv, EmptyBatch) {
  runtime::Tensor x = kt::F32({0, 3, 5, 5}, {}), w = kt::F32({2, 3, 3, 3}, std::vector<float>(54, 1.f));
  auto r = kt::RunKernel(kt::MakeNode("Conv", {"x", "w"}, {"y"}), 11, {&x, &w});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->at(0).shape(), (Shape{0, 2, 3, 3}));
}

TEST(Conv, ZeroInputChannelsGiveBias) {
  runtime::Tensor x = kt::F32({1, 0, 2, 2}, {}), w = kt::F32({2, 0, 1, 1}, {}), b = kt::F32({2}, {1.5f, -2.f});
  auto r = kt::RunKernel(kt::MakeNode("Conv", {"x", "w", "b"}, {"y"}), 11, {&x, &w, &b});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(kt::Values<float>(r->at(0)), (std::vector<float>{1.5f, 1.5f, 1.5f, 1.5f, -2.f, -2.f, -2.f, -2.f}));
}

void ExpectConvError(const ir::Node& node, const std::vector<const runtime::Tensor*>& inputs, const std::string& text,
                     ErrorCode code = ErrorCode::kInvalidInput) {
  auto r = kt::RunKernel(node, 11, inputs);
  ASSERT_FALSE(r.ok()) << "expected an error containing '" << text << "'";
  EXPECT_EQ(r.status().code(), code) << r.status().ToString();
  EXPECT_NE(r.status().summary().find(text), std::string::npos) << r.status().ToString();
  EXPECT_NE(r.status().summary().find("'n'"), std::string::npos) << "error should name the node";
}

TEST(Conv, Errors) {
  runtime::Tensor x = kt::F32({1, 4, 5, 5}, std::vector<float>(100, 1.f));
  runtime::Tensor w = kt::F32({2, 3, 3, 3}, std::vector<float>(54, 1.f));
  runtime::Tensor w3 = kt::F32({2, 4, 3}, std::vector<float>(24, 1.f));
  runtime::Tensor w4 = kt::F32({2, 4, 3, 3}, std::vector<float>(72, 1.f));
  runtime::Tensor big = kt::F32({2, 4, 7, 7}, std::vector<float>(392, 1.f));
  runtime::Tensor b3 = kt::F32({3}, {1, 2, 3});
  runtime::Tensor xi = kt::MakeTensor(DataType::kInt32, {1, 4, 5, 5}, std::vector<int32_t>(100, 1));
  runtime::Tensor wi = kt::MakeTensor(DataType::kInt32, {2, 4, 3, 3}, std::vector<int32_t>(72, 1));
  ir::Node conv = kt::MakeNode("Conv", {"x", "w"}, {"y"});
  ir::Node conv_b = kt::MakeNode("Conv", {"x", "w", "b"}, {"y"});
  ExpectConvError(conv, {&x, &w}, "do not fit group");
  ExpectConvError(conv, {&x, &w3}, "input 1 (W)");
  ExpectConvError(conv_b, {&x, &w4, &b3}, "input 2 (B)");
  ExpectConvError(conv, {&x, &big}, "smaller than the kernel extent", ErrorCode::kInvalidModel);
  ExpectConvError(conv, {&xi, &wi}, "int32", ErrorCode::kUnsupported);
  ExpectConvError(kt::MakeNode("Conv", {"x", "w"}, {"y"}, {kt::StringAttr("auto_pad", "SAME")}), {&x, &w4},
                  "auto_pad", ErrorCode::kInvalidModel);
  ExpectConvError(kt::MakeNode("Conv", {"x", "w"}, {"y"}, {kt::IntsAttr("kernel_shape", {2, 2})}), {&x, &w4},
                  "kernel_shape [2,2] does not match", ErrorCode::kInvalidModel);
  ExpectConvError(kt::MakeNode("Conv", {"x", "w"}, {"y"}, {kt::IntsAttr("pads", {1, 1})}), {&x, &w4}, "pads",
                  ErrorCode::kInvalidModel);
  ExpectConvError(kt::MakeNode("Conv", {"x", "w"}, {"y"}, {kt::IntsAttr("strides", {0, 1})}), {&x, &w4}, "strides",
                  ErrorCode::kInvalidModel);
  ExpectConvError(kt::MakeNode("Conv", {"x", "w"}, {"y"}, {kt::IntAttr("group", 0)}), {&x, &w4}, "group",
                  ErrorCode::kInvalidModel);
  ExpectConvError(conv, {&x}, "required input 1 is missing");
}

TEST(ConvInference, SymbolicBatchAndSpatial) {
  ir::Node node = kt::MakeNode("Conv", {"x", "w"}, {"y"},
                               {kt::IntsAttr("strides", {2, 2}), kt::IntsAttr("pads", {3, 3, 3, 3})});
  ir::TypeInfo x = Type(DataType::kFloat32, {S("N"), K(3), K(224), S("W")});
  ir::TypeInfo w = Type(DataType::kFloat32, {K(64), K(3), K(7), K(7)});
  auto r = kt::InferNode(node, 11, {&x, &w});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const auto& dims = r->at(0).shape.dims;
  ASSERT_EQ(dims.size(), 4u);
  EXPECT_EQ(dims[0].param, "N");
  EXPECT_EQ(*dims[1].value, 64);
  EXPECT_EQ(*dims[2].value, 112);
  EXPECT_TRUE(dims[3].is_symbolic());
}

TEST(ConvInference, UnknownWeightsUseKernelShape) {
  ir::Node node = kt::MakeNode("Conv", {"x", "w"}, {"y"}, {kt::IntsAttr("kernel_shape", {3})});
  ir::TypeInfo x = Type(DataType::kFloat32, {K(1), K(2), K(10)});
  auto r = kt::InferNode(node, 11, {&x, nullptr});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->at(0).shape.dims[1].is_symbolic());
  EXPECT_EQ(*r->at(0).shape.dims[2].value, 8);
  // Without kernel_shape the spatial dims are unknown but the rank is kept.
  auto r2 = kt::InferNode(kt::MakeNode("Conv", {"x", "w"}, {"y"}), 11, {&x, nullptr});
  ASSERT_TRUE(r2.ok());
  ASSERT_EQ(r2->at(0).shape.dims.size(), 3u);
  EXPECT_TRUE(r2->at(0).shape.dims[2].is_symbolic());
}

TEST(ConvInference, UnknownRank) {
  ir::TypeInfo x = ops::TensorTypeUnknownShape(DataType::kFloat32);
  auto r = kt::InferNode(kt::MakeNode("Conv", {"x", "w"}, {"y"}), 11, {&x, nullptr});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->at(0).kind, ir::TypeInfo::Kind::kTensor);
  EXPECT_FALSE(r->at(0).shape.rank_known);
}

TEST(ConvInference, Inconsistencies) {
  ir::Node node = kt::MakeNode("Conv", {"x", "w", "b"}, {"y"}, {kt::IntAttr("group", 2)});
  ir::TypeInfo x = Type(DataType::kFloat32, {K(1), K(4), K(8), K(8)});
  ir::TypeInfo w_rank = Type(DataType::kFloat32, {K(6), K(2), K(3)});
  ir::TypeInfo w_chan = Type(DataType::kFloat32, {K(6), K(4), K(3), K(3)});
  ir::TypeInfo w_ok = Type(DataType::kFloat32, {K(6), K(2), K(3), K(3)});
  ir::TypeInfo w_f64 = Type(DataType::kFloat64, {K(6), K(2), K(3), K(3)});
  ir::TypeInfo b_bad = Type(DataType::kFloat32, {K(5)});
  ir::TypeInfo x_rank2 = Type(DataType::kFloat32, {K(1), K(4)});
  auto fails_with = [&](std::vector<const ir::TypeInfo*> types, const std::string& text) {
    auto r = kt::InferNode(node, 11, types);
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_EQ(r.status().code(), ErrorCode::kInvalidModel);
    EXPECT_NE(r.status().summary().find(text), std::string::npos) << r.status().ToString();
  };
  fails_with({&x, &w_rank, nullptr}, "input 1 (W) has rank 3");
  fails_with({&x, &w_chan, nullptr}, "expects 4 per group x group 2");
  fails_with({&x, &w_f64, nullptr}, "dtype float64");
  fails_with({&x, &w_ok, &b_bad}, "input 2 (B) has 5 elements");
  fails_with({&x_rank2, &w_ok, nullptr}, "rank >= 3");
  auto ok = kt::InferNode(node, 11, {&x, &w_ok, nullptr});
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(DimsOf(ok->at(0)), "[1,6,6,6]");
}

// Timings of ResNet-50's conv shapes (batch 1, float32), for Release builds:
//   vigil_cpu_kernel_tests --gtest_also_run_disabled_tests --gtest_filter='*ResNet50*'
TEST(ConvBenchmark, DISABLED_ResNet50Layers) {
  struct Layer {
    const char* name;
    int64_t c, m, hw, k, stride;
  };
  const Layer layers[] = {{"conv1 7x7/2", 3, 64, 224, 7, 2},     {"1x1 64->64", 64, 64, 56, 1, 1},
                          {"3x3 64->64", 64, 64, 56, 3, 1},      {"1x1 64->256", 64, 256, 56, 1, 1},
                          {"1x1/2 256->512", 256, 512, 56, 1, 2}, {"3x3 128->128", 128, 128, 28, 3, 1},
                          {"3x3 256->256", 256, 256, 14, 3, 1},  {"3x3 512->512", 512, 512, 7, 3, 1}};
  for (const Layer& l : layers) {
    const int64_t pad = l.k / 2;
    runtime::Tensor x = MakeFloat(DataType::kFloat32, {1, l.c, l.hw, l.hw}, Random(l.c * l.hw * l.hw, 1));
    runtime::Tensor w = MakeFloat(DataType::kFloat32, {l.m, l.c, l.k, l.k}, Random(l.m * l.c * l.k * l.k, 2));
    runtime::Tensor b = MakeFloat(DataType::kFloat32, {l.m}, Random(l.m, 3));
    ir::Node node = kt::MakeNode("Conv", {"x", "w", "b"}, {"y"},
                                 {kt::IntsAttr("strides", {l.stride, l.stride}),
                                  kt::IntsAttr("pads", {pad, pad, pad, pad})});
    const int reps = 5;
    auto start = std::chrono::steady_clock::now();
    int64_t outputs = 0;
    for (int i = 0; i < reps; ++i) {
      auto r = kt::RunKernel(node, 11, {&x, &w, &b});
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      outputs = static_cast<int64_t>(r->at(0).element_count());
    }
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / reps;
    double gflop = 2.0 * static_cast<double>(outputs * l.c * l.k * l.k) / 1e9;
    std::printf("%-16s %8.3f ms  %6.1f GFLOP/s\n", l.name, seconds * 1e3, gflop / seconds);
  }
}

// ---------------------------------------------------------- ConvTranspose

struct ConvTransposeCase {
  Shape x;  // N, C, spatial...
  int64_t out_per_group;
  Shape kernel;
  Shape strides = {};
  Shape dilations = {};
  Shape pads = {};            // what the reference crops (resolved)
  Shape output_padding = {};
  Shape output_shape = {};    // attribute, when set
  int64_t group = 1;
  std::string auto_pad = "";
  bool explicit_pads = true;  // pass `pads` as the attribute
  bool bias = true;
  DataType dtype = DataType::kFloat32;
};

void CheckConvTranspose(ConvTransposeCase c, const Shape& expected_spatial, uint32_t seed = 7) {
  const size_t n = c.kernel.size();
  if (c.strides.empty()) c.strides.assign(n, 1);
  if (c.dilations.empty()) c.dilations.assign(n, 1);
  if (c.pads.empty()) c.pads.assign(2 * n, 0);
  if (c.output_padding.empty()) c.output_padding.assign(n, 0);
  const int64_t channels = c.x[1], cg = channels / c.group, m = c.out_per_group * c.group;
  Shape w_shape = Concat({channels, c.out_per_group}, c.kernel);
  std::vector<double> x = RoundTo(c.dtype, Random(Product(c.x), seed));
  std::vector<double> w = RoundTo(c.dtype, Random(Product(w_shape), seed + 1));
  std::vector<double> b = RoundTo(c.dtype, Random(m, seed + 2));
  // Reference: scatter every input element through the kernel, then crop.
  const Shape in(c.x.begin() + 2, c.x.end());
  const Shape& out = expected_spatial;
  std::vector<double> y(c.x[0] * m * Product(out), 0.0);
  for (int64_t b0 = 0; b0 < c.x[0]; ++b0) {
    for (int64_t ci = 0; ci < channels; ++ci) {
      for (int64_t i = 0; i < Product(in); ++i) {
        Shape ii = Unravel(i, in);
        for (int64_t mm = 0; mm < c.out_per_group; ++mm) {
          for (int64_t k = 0; k < Product(c.kernel); ++k) {
            Shape ki = Unravel(k, c.kernel);
            int64_t offset = 0;
            bool inside = true;
            for (size_t d = 0; d < n; ++d) {
              int64_t pos = ii[d] * c.strides[d] + ki[d] * c.dilations[d] - c.pads[d];
              inside = inside && pos >= 0 && pos < out[d];
              offset = offset * out[d] + pos;
            }
            if (!inside) continue;
            int64_t oc = (ci / cg) * c.out_per_group + mm;
            y[(b0 * m + oc) * Product(out) + offset] +=
                x[(b0 * channels + ci) * Product(in) + i] * w[(ci * c.out_per_group + mm) * Product(c.kernel) + k];
          }
        }
      }
    }
    for (int64_t oc = 0; oc < m && c.bias; ++oc) {
      for (int64_t o = 0; o < Product(out); ++o) y[(b0 * m + oc) * Product(out) + o] += b[oc];
    }
  }
  std::vector<ir::Attribute> attrs{kt::IntsAttr("strides", c.strides), kt::IntsAttr("dilations", c.dilations),
                                   kt::IntAttr("group", c.group), kt::IntsAttr("output_padding", c.output_padding)};
  if (c.explicit_pads) attrs.push_back(kt::IntsAttr("pads", c.pads));
  if (!c.auto_pad.empty()) attrs.push_back(kt::StringAttr("auto_pad", c.auto_pad));
  if (!c.output_shape.empty()) attrs.push_back(kt::IntsAttr("output_shape", c.output_shape));
  std::vector<std::string> names{"x", "w"};
  if (c.bias) names.push_back("b");
  ir::Node node = kt::MakeNode("ConvTranspose", names, {"y"}, attrs);
  runtime::Tensor xt = MakeFloat(c.dtype, c.x, x), wt = MakeFloat(c.dtype, w_shape, w),
                  bt = MakeFloat(c.dtype, {m}, b);
  std::vector<const runtime::Tensor*> inputs{&xt, &wt};
  if (c.bias) inputs.push_back(&bt);
  auto r = kt::RunKernel(node, 11, inputs);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->at(0).shape(), Concat({c.x[0], m}, out));
  double scale = std::sqrt(static_cast<double>(channels * Product(c.kernel)));
  ExpectClose(ReadFloat(r->at(0)), y, Tolerance(c.dtype), Tolerance(c.dtype) * scale);

  ir::TypeInfo xtype = ops::TensorType(c.dtype, c.x), wtype = ops::TensorType(c.dtype, w_shape);
  auto inferred = kt::InferNode(node, 11, {&xtype, &wtype});
  ASSERT_TRUE(inferred.ok()) << inferred.status().ToString();
  EXPECT_EQ(DimsOf(inferred->at(0)), ir::ShapeToString(ops::TensorType(c.dtype, r->at(0).shape()).shape));
}

TEST(ConvTranspose, Basic) { CheckConvTranspose({.x = {1, 3, 4, 5}, .out_per_group = 2, .kernel = {3, 3}}, {6, 7}); }
TEST(ConvTranspose, Stride2PadsOutputPadding) {
  // 2*(5-1) + 1 + 3 - 1 - 2 = 9; 2*(4-1) + 0 + 3 - 0 - 1 = 8
  CheckConvTranspose({.x = {2, 13, 5, 4}, .out_per_group = 7, .kernel = {3, 3}, .strides = {2, 2},
                      .pads = {1, 0, 2, 1}, .output_padding = {1, 0}},
                     {9, 8});
}
TEST(ConvTranspose, Dilations) {
  CheckConvTranspose({.x = {1, 2, 4, 4}, .out_per_group = 3, .kernel = {2, 3}, .dilations = {2, 2}}, {6, 8});
}
TEST(ConvTranspose, Groups) {
  CheckConvTranspose({.x = {1, 6, 3, 4}, .out_per_group = 2, .kernel = {3, 2}, .strides = {2, 1}, .group = 3}, {7, 5});
}
TEST(ConvTranspose, Depthwise) {
  CheckConvTranspose({.x = {1, 13, 5, 5}, .out_per_group = 1, .kernel = {3, 3}, .strides = {2, 2},
                      .pads = {1, 1, 1, 1}, .group = 13},
                     {9, 9});
}
TEST(ConvTranspose, Pointwise) { CheckConvTranspose({.x = {2, 13, 3, 5}, .out_per_group = 9, .kernel = {1, 1}}, {3, 5}); }
TEST(ConvTranspose, OutputShapeSetsPads) {
  // full = 3*(3-1) + 3 = 9 and 2*(3-1) + 3 = 7; asking 10x8 gives total -1: cropped -1 at the end.
  CheckConvTranspose({.x = {1, 1, 3, 3}, .out_per_group = 2, .kernel = {3, 3}, .strides = {3, 2},
                      .pads = {0, 0, -1, -1}, .output_shape = {10, 8}, .explicit_pads = false},
                     {10, 8});
  // Smaller than full: total 2 and 1, the odd one cropped at the start (NOTSET).
  CheckConvTranspose({.x = {1, 1, 3, 3}, .out_per_group = 2, .kernel = {3, 3}, .strides = {3, 2},
                      .pads = {1, 1, 1, 0}, .output_shape = {7, 6}, .explicit_pads = false},
                     {7, 6});
}
TEST(ConvTranspose, AutoPadSameUpperAndLower) {
  // out = in * stride = 6; full = 2*2 + 3 = 7; total 1.
  CheckConvTranspose({.x = {1, 1, 3, 3}, .out_per_group = 2, .kernel = {3, 3}, .strides = {2, 2},
                      .pads = {0, 0, 1, 1}, .auto_pad = "SAME_UPPER", .explicit_pads = false},
                     {6, 6});
  CheckConvTranspose({.x = {1, 1, 3, 3}, .out_per_group = 2, .kernel = {3, 3}, .strides = {2, 2},
                      .pads = {1, 1, 0, 0}, .auto_pad = "SAME_LOWER", .explicit_pads = false},
                     {6, 6});
}
TEST(ConvTranspose, OneDAndThreeD) {
  CheckConvTranspose({.x = {1, 3, 5}, .out_per_group = 2, .kernel = {3}, .strides = {2}, .pads = {1, 0}}, {10});
  CheckConvTranspose({.x = {1, 2, 3, 4, 2}, .out_per_group = 2, .kernel = {2, 3, 2}, .strides = {1, 2, 2}}, {4, 9, 4});
}
TEST(ConvTranspose, Float16NoBias) {
  CheckConvTranspose({.x = {1, 4, 3, 3}, .out_per_group = 2, .kernel = {2, 2}, .strides = {2, 2}, .bias = false,
                      .dtype = DataType::kFloat16},
                     {6, 6});
}

TEST(ConvTranspose, Errors) {
  runtime::Tensor x = kt::F32({1, 4, 3, 3}, std::vector<float>(36, 1.f));
  runtime::Tensor w = kt::F32({3, 2, 3, 3}, std::vector<float>(54, 1.f));
  ExpectConvError(kt::MakeNode("ConvTranspose", {"x", "w"}, {"y"}), {&x, &w}, "W.dims[0] must equal");
  runtime::Tensor w4 = kt::F32({4, 2, 3, 3}, std::vector<float>(72, 1.f));
  ExpectConvError(kt::MakeNode("ConvTranspose", {"x", "w"}, {"y"}, {kt::IntsAttr("pads", {3, 3, 3, 3})}), {&x, &w4},
                  "negative output size", ErrorCode::kInvalidModel);
  ExpectConvError(kt::MakeNode("ConvTranspose", {"x", "w"}, {"y"}, {kt::IntsAttr("output_shape", {5})}), {&x, &w4},
                  "output_shape", ErrorCode::kInvalidModel);
}

TEST(ConvTransposeInference, SymbolicAndOutputShape) {
  ir::TypeInfo x = Type(DataType::kFloat32, {S("N"), K(4), S("H"), K(5)});
  ir::TypeInfo w = Type(DataType::kFloat32, {K(4), K(3), K(3), K(3)});
  auto r = kt::InferNode(kt::MakeNode("ConvTranspose", {"x", "w"}, {"y"},
                                      {kt::IntsAttr("strides", {2, 2}), kt::IntAttr("group", 2)}),
                         11, {&x, &w});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->at(0).shape.dims[0].param, "N");
  EXPECT_EQ(*r->at(0).shape.dims[1].value, 6);
  EXPECT_TRUE(r->at(0).shape.dims[2].is_symbolic());
  EXPECT_EQ(*r->at(0).shape.dims[3].value, 11);
  auto r2 = kt::InferNode(kt::MakeNode("ConvTranspose", {"x", "w"}, {"y"}, {kt::IntsAttr("output_shape", {20, 30})}),
                          11, {&x, &w});
  ASSERT_TRUE(r2.ok()) << r2.status().ToString();
  EXPECT_EQ(*r2->at(0).shape.dims[2].value, 20);
  EXPECT_EQ(*r2->at(0).shape.dims[3].value, 30);
  ir::TypeInfo w_bad = Type(DataType::kFloat32, {K(5), K(3), K(3), K(3)});
  auto bad = kt::InferNode(kt::MakeNode("ConvTranspose", {"x", "w"}, {"y"}), 11, {&x, &w_bad});
  EXPECT_FALSE(bad.ok());
}

}  // namespace
}  // namespace vigil::cpu
