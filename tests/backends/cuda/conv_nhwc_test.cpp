// Channels-last convolution on the GPU: the ai.vigil.ConvNhwc kernel (cuDNN
// with NHWC strides and the fused bias/residual/Relu/Relu6 epilogue, or our
// epilogue kernel with VIGIL_CONV_FUSION=0) against the CPU reference, and
// a small float16 CNN run with the session's NHWC layout pass on the CUDA
// backend against the CPU run.
#include <cmath>
#include <cstdlib>

#include "session_test_util.h"

namespace vigil::cuda::testing {
namespace {

void ExpectClose(const std::vector<runtime::NamedTensor>& got, const std::vector<runtime::NamedTensor>& want,
                 double tol, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    runtime::TensorComparison cmp = runtime::CompareTensors(want[i].tensor, got[i].tensor, 1e300, 1e300);
    EXPECT_TRUE(cmp.same_dtype && cmp.same_shape) << what << ": got " << got[i].tensor.Describe() << ", expected "
                                                  << want[i].tensor.Describe();
    EXPECT_EQ(cmp.nan_mismatches, 0u) << what << ": " << cmp.Describe();
    EXPECT_LE(cmp.rel_l2_error, tol) << what << ": " << cmp.Describe();
  }
}

struct NhwcCase {
  std::vector<int64_t> x, w;  // NHWC, KRSC
  std::vector<ir::Attribute> attrs;
  bool bias = true;
};

void CheckConvNhwc(const NhwcCase& k, ir::DataType t, bool relu = false) {
  runtime::Tensor x = RandomTensor(t, k.x, 1), w = RandomTensor(t, k.w, 2), b = RandomTensor(t, {k.w[0]}, 3);
  std::vector<ir::Attribute> attrs = k.attrs;
  if (relu) attrs.push_back(StringAttr("activation", "Relu"));
  ir::Model m = ConvNhwcModel(x, w, k.bias ? &b : nullptr, attrs);
  std::vector<std::string> placement;
  auto got =
      RunWithLayout(m, {CudaBackendForTests(), cpu::MakeCpuBackend()}, x, runtime::ConvLayout::kAsModel, &placement);
  ASSERT_EQ(placement.size(), 1u);
  EXPECT_EQ(placement[0], "ConvNhwc 'conv_nhwc' on cuda");
  auto want = RunWithLayout(m, {cpu::MakeCpuBackend()}, x);
  ExpectClose(got, want, ConvTolerance(t), fmt::format("ConvNhwc {} x[{}] w[{}] relu {}", ir::DataTypeName(t),
                                                       fmt::join(k.x, ","), fmt::join(k.w, ","), relu));
}

TEST(CudaConvNhwc, OddChannelsPadsStridesDilations) {
  VIGIL_SKIP_WITHOUT_CUDA();
  for (ir::DataType t : {kF16, kF32, kBF16}) {
    CheckConvNhwc({{2, 17, 15, 13}, {127, 3, 3, 13}, {IntsAttr("pads", {1, 1, 1, 1})}}, t);
    CheckConvNhwc({{1, 31, 29, 3}, {8, 7, 7, 3}, {IntsAttr("pads", {3, 2, 1, 3}), IntsAttr("strides", {2, 2})}}, t);
    CheckConvNhwc({{1, 19, 19, 8}, {16, 3, 3, 8}, {IntsAttr("dilations", {2, 2})}, false}, t);
    CheckConvNhwc({{2, 10, 13, 64}, {64, 1, 1, 64}, {}}, t, /*relu=*/true);
  }
}

// ConvNhwc with a residual Z (and `act`) on the GPU against the CPU.
void CheckFused(const NhwcCase& k, ir::DataType t, const std::string& act, bool residual) {
  runtime::Tensor x = RandomTensor(t, k.x, 1), w = RandomTensor(t, k.w, 2), b = RandomTensor(t, {k.w[0]}, 3);
  std::vector<ir::Attribute> attrs = k.attrs;
  if (!act.empty()) attrs.push_back(StringAttr("activation", act));
  // Y's shape from a run without Z; Z of magnitude ~4 so that Relu6 clips.
  auto plain = RunWithLayout(ConvNhwcModel(x, w, k.bias ? &b : nullptr, attrs), {cpu::MakeCpuBackend()}, x);
  ASSERT_EQ(plain.size(), 1u);
  runtime::Tensor z = RandomTensor(t, plain[0].tensor.shape(), 4, -4.0f, 4.0f);
  ir::Model m = ConvNhwcModel(x, w, k.bias ? &b : nullptr, attrs, residual ? &z : nullptr);
  std::vector<std::string> placement;
  auto got = RunWithLayout(m, {CudaBackendForTests(), cpu::MakeCpuBackend()}, x, runtime::ConvLayout::kAsModel,
                           &placement);
  ASSERT_EQ(placement.size(), 1u);
  EXPECT_EQ(placement[0], "ConvNhwc 'conv_nhwc' on cuda");
  auto want = RunWithLayout(m, {cpu::MakeCpuBackend()}, x);
  const char* fusion = std::getenv("VIGIL_CONV_FUSION");
  ExpectClose(got, want, ConvTolerance(t),
              fmt::format("ConvNhwc {} x[{}] w[{}] act '{}' residual {} fusion {}", ir::DataTypeName(t),
                          fmt::join(k.x, ","), fmt::join(k.w, ","), act, residual, fusion ? fusion : "default"));
}

void CheckAllFusions() {
  for (ir::DataType t : {kF16, kBF16, kF32}) {
    const NhwcCase k{{2, 10, 13, 64}, {64, 3, 3, 64}, {IntsAttr("pads", {1, 1, 1, 1})}};
    CheckFused(k, t, "", true);
    CheckFused(k, t, "Relu", true);
    CheckFused(k, t, "Relu6", false);
    CheckFused(k, t, "Relu6", true);
    NhwcCase no_bias = k;
    no_bias.bias = false;
    CheckFused(no_bias, t, "Relu", true);
    CheckFused({{1, 9, 7, 13}, {21, 3, 3, 13}, {IntsAttr("strides", {2, 2})}}, t, "Relu", true);  // odd channels
  }
}

TEST(CudaConvNhwc, ResidualAndRelu6Fused) {
  VIGIL_SKIP_WITHOUT_CUDA();
  CheckAllFusions();
}

TEST(CudaConvNhwc, ResidualAndRelu6ThroughTheEpilogueKernel) {
  VIGIL_SKIP_WITHOUT_CUDA();
  // FusionEnabled reads the variable on every call.
  setenv("VIGIL_CONV_FUSION", "0", 1);
  CheckAllFusions();
  unsetenv("VIGIL_CONV_FUSION");
}

TEST(CudaConvNhwc, GroupedAndDepthwise) {
  VIGIL_SKIP_WITHOUT_CUDA();
  for (ir::DataType t : {kF16, kF32}) {
    CheckConvNhwc({{1, 15, 15, 32}, {32, 3, 3, 1}, {IntAttr("group", 32), IntsAttr("pads", {1, 1, 1, 1})}}, t, true);
    CheckConvNhwc({{2, 9, 11, 12}, {18, 3, 3, 4}, {IntAttr("group", 3)}}, t);
  }
}

TEST(CudaConvNhwc, AutoPadAndNoBias) {
  VIGIL_SKIP_WITHOUT_CUDA();
  CheckConvNhwc({{1, 10, 13, 4}, {6, 3, 3, 4}, {StringAttr("auto_pad", "SAME_UPPER"), IntsAttr("strides", {2, 2})}},
                kF16);
  CheckConvNhwc({{3, 8, 8, 16}, {24, 3, 3, 16}, {IntsAttr("pads", {1, 1, 1, 1})}, false}, kF16, /*relu=*/true);
}

ir::Attribute Ints(std::string name, std::vector<int64_t> v) { return IntsAttr(std::move(name), std::move(v)); }

// A small ResNet/MobileNet-like fp16 network: stem Conv+Relu, a residual
// block, a depthwise Conv + Clip, a projection, a per-channel Mul, then
// GlobalAveragePool.
ir::Model SmallCnn(ir::DataType t) {
  ir::Model m;
  m.ir_version = 8;
  m.opset_imports = {{"", 17}};
  m.graph.inputs = {TypedValue("x", t, {4, 3, 32, 32})};
  m.graph.outputs = {TypedValue("y", t, {4, 24, 1, 1})};
  m.graph.initializers = {RandomConstant("w0", t, {16, 3, 3, 3}, 10), RandomConstant("b0", t, {16}, 11),
                          RandomConstant("w1", t, {16, 16, 3, 3}, 12), RandomConstant("b1", t, {16}, 13),
                          RandomConstant("w2", t, {16, 16, 3, 3}, 14), RandomConstant("wd", t, {16, 1, 3, 3}, 15),
                          RandomConstant("wp", t, {24, 16, 1, 1}, 16), RandomConstant("s", t, {24, 1, 1}, 17),
                          RandomConstant("lo", t, {}, 18), RandomConstant("hi", t, {}, 19)};
  auto conv = [](std::string x, std::string w, std::string b, std::string y, std::vector<ir::Attribute> a) {
    ir::Node n;
    n.op_type = "Conv";
    n.name = y;
    n.inputs = {std::move(x), std::move(w)};
    if (!b.empty()) n.inputs.push_back(std::move(b));
    n.outputs = {std::move(y)};
    n.attributes = std::move(a);
    return n;
  };
  auto op = [](std::string type, std::vector<std::string> in, std::string out) {
    ir::Node n;
    n.op_type = std::move(type);
    n.name = out;
    n.inputs = std::move(in);
    n.outputs = {std::move(out)};
    return n;
  };
  const std::vector<ir::Attribute> same = {Ints("pads", {1, 1, 1, 1})};
  m.graph.nodes = {conv("x", "w0", "b0", "c0", {Ints("pads", {1, 1, 1, 1}), Ints("strides", {2, 2})}),
                   op("Relu", {"c0"}, "r0"),
                   conv("r0", "w1", "b1", "c1", same),
                   op("Relu", {"c1"}, "r1"),
                   conv("r1", "w2", "", "c2", same),
                   op("Add", {"c2", "r0"}, "a"),
                   op("Relu", {"a"}, "r2"),
                   conv("r2", "wd", "", "cd", {Ints("pads", {1, 1, 1, 1}), IntAttr("group", 16)}),
                   op("Clip", {"cd", "lo", "hi"}, "d"),
                   conv("d", "wp", "", "p", {}),
                   op("Mul", {"p", "s"}, "q"),
                   op("GlobalAveragePool", {"q"}, "y")};
  return m;
}

TEST(CudaConvNhwc, SessionLayoutPassMatchesTheCpu) {
  VIGIL_SKIP_WITHOUT_CUDA();
  for (ir::DataType t : {kF16, kBF16}) {
    ir::Model m = SmallCnn(t);
    runtime::Tensor x = RandomTensor(t, {4, 3, 32, 32}, 7);
    auto want = RunWithLayout(m, {cpu::MakeCpuBackend()}, x);
    std::vector<std::string> placement;
    auto nhwc = RunWithLayout(m, {CudaBackendForTests(), cpu::MakeCpuBackend()}, x, runtime::ConvLayout::kNhwcWhereFaster,
                              &placement);
    size_t nhwc_nodes = 0;
    for (const std::string& p : placement) {
      if (p.rfind("ConvNhwc", 0) == 0) {
        ++nhwc_nodes;
        EXPECT_NE(p.find(" on cuda"), std::string::npos) << p;
      }
    }
    // All five convolutions, the depthwise one (group 16) included: it runs
    // channels-last on our kernel (runtime/conv_layout.cpp).
    EXPECT_EQ(nhwc_nodes, 5u);
    for (const std::string& p : placement) {
      // The residual Add and every Relu were fused into ConvNhwc nodes.
      EXPECT_NE(p.rfind("Add ", 0), 0u) << p;
      EXPECT_NE(p.rfind("Relu ", 0), 0u) << p;
    }
    ExpectClose(nhwc, want, 1e-2, fmt::format("NHWC session, {}", ir::DataTypeName(t)));

    std::vector<std::string> as_model;
    auto nchw =
        RunWithLayout(m, {CudaBackendForTests(), cpu::MakeCpuBackend()}, x, runtime::ConvLayout::kAsModel, &as_model);
    // --layout nchw: no convolution moves; each stays a Conv, or a FusedConv
    // with its Add and Relu (ir/fuse_conv_epilogue.h), on the GPU.
    size_t nchw_convs = 0;
    for (const std::string& p : as_model) {
      EXPECT_EQ(p.find("ConvNhwc"), std::string::npos) << p;
      EXPECT_EQ(p.find("Transpose"), std::string::npos) << p;
      if (p.rfind("Conv ", 0) == 0 || p.rfind("FusedConv ", 0) == 0) {
        ++nchw_convs;
        EXPECT_NE(p.find(" on cuda"), std::string::npos) << p;
      }
    }
    EXPECT_EQ(nchw_convs, 5u);
    ExpectClose(nchw, want, 1e-2, fmt::format("NCHW session, {}", ir::DataTypeName(t)));
  }
}

}  // namespace
}  // namespace vigil::cuda::testing
