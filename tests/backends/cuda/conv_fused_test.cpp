// ai.vigil.FusedConv on the GPU (ir/fuse_conv_epilogue.h): a device session
// that keeps convolutions in the model's layout fuses Conv, its residual
// Add and its Relu or Clip(0, 6) into one node, whose one-pass epilogue
// must match the CPU session (which runs them apart), at odd sizes (13 in,
// 127 out), 1D, 2D and 3D, float32 and float16; VIGIL_FUSE_CONV_EPILOGUE=0
// keeps them apart, with the same result. ResNet-50's residual float16
// convolutions fuse on precompiled engines.
#include <cstdlib>

#include "session_test_util.h"

namespace vigil::cuda::testing {
namespace {

// x [N, 13, spatial...] -> Conv(w1, b1) -> c1; Conv(w2) -> c2 (same shape);
// y = act(c1 + c2), act "Relu", "Relu6" (Clip(0, 6)) or "".
ir::Model ResidualBlock(ir::DataType t, const std::vector<int64_t>& x, int64_t out_channels, const std::string& act) {
  std::vector<int64_t> w = {out_channels, x[1]};
  std::vector<int64_t> pads;
  for (size_t i = 2; i < x.size(); ++i) w.push_back(3);
  pads.assign(2 * (x.size() - 2), 1);
  ir::Model m;
  m.ir_version = 8;
  m.opset_imports = {{"", 17}};
  m.graph.inputs = {TypedValue("x", t, x)};
  m.graph.initializers = {RandomConstant("w1", t, w, 31), RandomConstant("b1", t, {out_channels}, 32),
                          RandomConstant("w2", t, w, 33)};
  ir::Node c1 = cpu::testing::MakeNode("Conv", {"x", "w1", "b1"}, {"c1"}, {IntsAttr("pads", pads)});
  ir::Node c2 = cpu::testing::MakeNode("Conv", {"x", "w2"}, {"c2"}, {IntsAttr("pads", pads)});
  ir::Node add = cpu::testing::MakeNode("Add", {"c1", "c2"}, {act.empty() ? "y" : "s"});
  m.graph.nodes = {c1, c2, add};
  if (act == "Relu") m.graph.nodes.push_back(cpu::testing::MakeNode("Relu", {"s"}, {"y"}));
  if (act == "Relu6") {
    m.graph.initializers.push_back(RandomTensor(t, {}, 1, 0.0f, 0.0f).AsConstant("lo"));
    m.graph.initializers.push_back(RandomTensor(t, {}, 1, 6.0f, 6.0f).AsConstant("hi"));
    m.graph.nodes.push_back(cpu::testing::MakeNode("Clip", {"s", "lo", "hi"}, {"y"}));
  }
  m.graph.outputs = {ir::ValueInfo{"y", false, {}, {}}};
  return m;
}

void CheckBlock(ir::DataType t, const std::vector<int64_t>& x_shape, const std::string& act) {
  SCOPED_TRACE(::testing::Message() << ir::DataTypeName(t) << " x " << ::testing::PrintToString(x_shape) << " act '"
                                    << act << "'");
  const ir::Model m = ResidualBlock(t, x_shape, 127, act);
  // Inputs scaled so that sums cross 0 and 6.
  runtime::Tensor x = RandomTensor(t, x_shape, 34, -4.0f, 4.0f);
  auto want = RunWithLayout(m, {cpu::MakeCpuBackend()}, x);
  ASSERT_EQ(want.size(), 1u);
  for (const char* fuse : {"", "0"}) {
    if (*fuse) setenv("VIGIL_FUSE_CONV_EPILOGUE", fuse, 1);
    std::vector<std::string> placement;
    auto got = RunWithLayout(m, {CudaBackendForTests(), cpu::MakeCpuBackend()}, x, runtime::ConvLayout::kAsModel,
                             &placement);
    unsetenv("VIGIL_FUSE_CONV_EPILOGUE");
    ASSERT_EQ(got.size(), 1u);
    const size_t fused = std::count_if(placement.begin(), placement.end(), [](const std::string& p) {
      return p.find("FusedConv") != std::string::npos && p.find("on cuda") != std::string::npos;
    });
    EXPECT_EQ(fused, *fuse ? 0u : 1u) << ::testing::PrintToString(placement);
    EXPECT_EQ(placement.size(), *fuse ? m.graph.nodes.size() : 2u) << ::testing::PrintToString(placement);
    runtime::TensorComparison cmp = runtime::CompareTensors(want[0].tensor, got[0].tensor, 1e300, 1e300);
    EXPECT_TRUE(cmp.same_dtype && cmp.same_shape) << cmp.Describe();
    EXPECT_EQ(cmp.nan_mismatches, 0u) << cmp.Describe();
    EXPECT_LE(cmp.rel_l2_error, ConvTolerance(t)) << "VIGIL_FUSE_CONV_EPILOGUE '" << fuse << "': " << cmp.Describe();
  }
}

TEST(CudaFusedConv, ResidualAndActivationMatchTheCpu) {
  VIGIL_SKIP_WITHOUT_CUDA();
  for (ir::DataType t : {kF32, kF16}) {
    CheckBlock(t, {2, 13, 9, 7}, "Relu");
    CheckBlock(t, {3, 13, 37}, "Relu6");
    CheckBlock(t, {1, 13, 5, 6, 7}, "");
  }
}

// ResNet-50's residual convolutions in float16 (1x1, bias, Z and ReLU
// fused, channels-last) run on cuDNN's precompiled engines: the fused
// epilogue adds Z before the bias, a graph cuDNN 9.14 has precompiled
// engines for (with the bias first it has only runtime-compiled ones, 0.6 s
// each in a process whose compute cache is cold). A fresh backend's notes
// say nothing was compiled at run time, and each result matches the CPU.
// Also the odd 13 -> 127, which must match whatever engine it gets.
TEST(CudaFusedConv, ResidualFloat16ConvolutionsAreNotCompiledAtRunTime) {
  VIGIL_SKIP_WITHOUT_CUDA();
  struct Case {
    std::vector<int64_t> x, w;
    bool precompiled;  // expected to need no runtime compilation
  };
  const Case cases[] = {{{3, 56, 56, 64}, {256, 1, 1, 64}, true},
                        {{3, 28, 28, 128}, {512, 1, 1, 128}, true},
                        {{3, 7, 7, 512}, {2048, 1, 1, 512}, true},
                        {{2, 9, 11, 13}, {127, 1, 1, 13}, false}};
  for (const Case& c : cases) {
    SCOPED_TRACE(::testing::Message() << "x " << ::testing::PrintToString(c.x) << " w "
                                      << ::testing::PrintToString(c.w));
    runtime::Tensor x = RandomTensor(kF16, c.x, 41), w = RandomTensor(kF16, c.w, 42);
    runtime::Tensor b = RandomTensor(kF16, {c.w[0]}, 43);
    const std::vector<int64_t> y = {c.x[0], c.x[1], c.x[2], c.w[0]};
    runtime::Tensor z = RandomTensor(kF16, y, 44, -4.0f, 4.0f);
    ir::Model m = ConvNhwcModel(x, w, &b, {StringAttr("activation", "Relu")}, &z);
    auto want = RunWithLayout(m, {cpu::MakeCpuBackend()}, x);
    ASSERT_EQ(want.size(), 1u);
    auto backend = CheckConvNhwcOnFreshBackend(m, x, want[0].tensor, {}, ConvTolerance(kF16));
    if (!backend || !c.precompiled) continue;
    for (const std::string& note : backend->Notes()) {
      EXPECT_FALSE(note.starts_with("cuDNN compiled")) << note;
    }
  }
}

}  // namespace
}  // namespace vigil::cuda::testing
