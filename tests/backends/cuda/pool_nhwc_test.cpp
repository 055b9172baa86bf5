// Channels-last pools on the GPU (backends/cuda/pool_nhwc.cu):
// ai.vigil.MaxPoolNhwc, AveragePoolNhwc and GlobalAveragePoolNhwc run on the
// CUDA backend directly, Y poisoned with NaN first (so an element the kernel
// does not write fails), against the CPU kernels; for float16, bfloat16 and
// float32, channel counts that take the 16-byte, 8-byte and scalar paths,
// a misaligned X, the ResNet stem window, 2x2 s2, ceil_mode, asymmetric
// pads and odd H/W. Then a small float16 ResNet stem and head through a
// session with the NHWC layout pass on the CUDA backend against the CPU.
#include <cstring>

#include "session_test_util.h"

namespace vigil::cuda::testing {
namespace {

namespace kt = vigil::cpu::testing;
using ir::DataType;

// `host` on the device, starting `offset` elements into its allocation (an
// offset of 1 makes rows misaligned for vector loads).
Result<runtime::Tensor> OnDevice(const runtime::Tensor& host, int64_t offset) {
  auto backend = CudaBackendForTests();
  const int64_t n = static_cast<int64_t>(host.element_count());
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor padded, runtime::Tensor::Allocate(host.dtype(), {n + offset}));
  const size_t elem = static_cast<size_t>(ir::DataTypeBits(host.dtype()) / 8);
  std::memset(padded.raw_data(), 0, padded.byte_size());
  std::memcpy(static_cast<char*>(padded.raw_data()) + offset * elem, host.raw_data(), host.byte_size());
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor device, backend->ToDevice(padded));
  VIGIL_RETURN_IF_ERROR(backend->Synchronize());
  auto owner = std::make_shared<runtime::Tensor>(device);
  return runtime::Tensor::OnDevice(runtime::Device::kCuda, host.dtype(), host.shape(),
                                   static_cast<char*>(device.raw_data()) + offset * elem, owner);
}

// Runs `node` on the CUDA backend with X `x` (host) copied to the device
// `misalign` elements off; Y back on the host.
Result<runtime::Tensor> RunOnDevice(const ir::Node& node, const runtime::Tensor& x, int64_t misalign) {
  auto backend = CudaBackendForTests();
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor dx, OnDevice(x, misalign));
  const runtime::Tensor* inputs[] = {&dx};
  std::vector<runtime::Tensor> outputs;
  PoisonedDeviceOutputs allocator(*backend);
  VIGIL_RETURN_IF_ERROR(backend->Run(node, 1, inputs, outputs, allocator));
  VIGIL_RETURN_IF_ERROR(backend->Synchronize());
  if (outputs.size() != 1) return InternalError("{} outputs", outputs.size());
  return backend->ToHost(outputs[0]);
}

struct PoolCase {
  std::string op;  // ai.vigil op
  std::vector<int64_t> x;  // NHWC
  std::vector<ir::Attribute> attrs;
};

void Check(const PoolCase& c, DataType t, int64_t misalign = 0) {
  SCOPED_TRACE(::testing::Message() << c.op << " x " << ::testing::PrintToString(c.x) << " "
                                    << ir::DataTypeName(t) << (misalign ? " misaligned" : ""));
  ir::Node node = kt::MakeNode(c.op, {"x"}, {"y"}, c.attrs);
  node.domain = ir::kVigilDomain;
  runtime::Tensor x = RandomTensor(t, c.x, static_cast<uint32_t>(c.x[3] * 7 + c.x[1]), -4, 4);
  auto want = kt::RunKernel(node, 1, {&x});
  ASSERT_TRUE(want.ok()) << want.status().ToString();
  auto got = RunOnDevice(node, x, misalign);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  const runtime::Tensor& w = (*want)[0];
  const bool exact = c.op == ir::kMaxPoolNhwcOp;  // a max moves values, it computes none
  const double tol = exact ? 0 : t == kF32 ? 1e-6 : 1e-2;
  runtime::TensorComparison cmp = runtime::CompareTensors(w, *got, exact ? 0 : 1e300, exact ? 0 : 1e300);
  ASSERT_TRUE(cmp.same_dtype && cmp.same_shape) << got->Describe() << " vs " << w.Describe();
  EXPECT_EQ(cmp.nan_mismatches, 0u) << cmp.Describe();
  if (exact) {
    EXPECT_EQ(cmp.mismatches, 0u) << cmp.Describe();
  }
  EXPECT_LE(cmp.rel_l2_error, tol) << cmp.Describe();
}

std::vector<ir::Attribute> Window(std::vector<int64_t> kernel, std::vector<int64_t> strides,
                                  std::vector<int64_t> pads, int64_t ceil_mode = 0) {
  return {kt::IntsAttr("kernel_shape", std::move(kernel)), kt::IntsAttr("strides", std::move(strides)),
          kt::IntsAttr("pads", std::move(pads)), kt::IntAttr("ceil_mode", ceil_mode)};
}

void CheckWindows(const std::string& op, DataType t) {
  for (int64_t c : {13, 64, 127}) {
    Check({op, {2, 15, 17, c}, Window({3, 3}, {2, 2}, {1, 1, 1, 1})}, t);  // the ResNet stem, odd H/W
    Check({op, {1, 16, 10, c}, Window({2, 2}, {2, 2}, {0, 0, 0, 0})}, t);
    Check({op, {2, 11, 9, c}, Window({3, 3}, {2, 2}, {0, 1, 2, 0}, 1)}, t);  // asymmetric pads, ceil_mode
    Check({op, {1, 9, 12, c}, Window({3, 2}, {1, 3}, {1, 0, 1, 1}, 1)}, t);
  }
  Check({op, {2, 15, 17, 64}, Window({3, 3}, {2, 2}, {1, 1, 1, 1})}, t, /*misalign=*/1);  // scalar loads
  Check({op, {2, 15, 17, 64}, Window({3, 3}, {2, 2}, {1, 1, 1, 1})}, t, /*misalign=*/4);  // 8-byte loads (halfs)
}

TEST(CudaPoolNhwc, MaxPoolMatchesTheCpu) {
  VIGIL_SKIP_WITHOUT_CUDA();
  for (DataType t : {kF16, kBF16, kF32}) CheckWindows(ir::kMaxPoolNhwcOp, t);
  std::vector<ir::Attribute> dilated = Window({2, 2}, {1, 1}, {1, 1, 1, 1});
  dilated.push_back(kt::IntsAttr("dilations", {2, 2}));
  Check({ir::kMaxPoolNhwcOp, {1, 7, 7, 16}, dilated}, kF16);
}

TEST(CudaPoolNhwc, AveragePoolMatchesTheCpu) {
  VIGIL_SKIP_WITHOUT_CUDA();
  for (DataType t : {kF16, kBF16, kF32}) CheckWindows(ir::kAveragePoolNhwcOp, t);
  std::vector<ir::Attribute> include_pad = Window({3, 3}, {2, 2}, {1, 1, 1, 1}, 1);
  include_pad.push_back(kt::IntAttr("count_include_pad", 1));
  for (DataType t : {kF16, kF32}) Check({ir::kAveragePoolNhwcOp, {2, 13, 11, 24}, include_pad}, t);
}

TEST(CudaPoolNhwc, GlobalAveragePoolMatchesTheCpu) {
  VIGIL_SKIP_WITHOUT_CUDA();
  for (DataType t : {kF16, kBF16, kF32}) {
    for (int64_t c : {13, 64, 127, 2048}) Check({ir::kGlobalAveragePoolNhwcOp, {3, 7, 7, c}, {}}, t);
    Check({ir::kGlobalAveragePoolNhwcOp, {1, 56, 57, 64}, {}}, t);  // few blocks, many pixels
    Check({ir::kGlobalAveragePoolNhwcOp, {2, 7, 7, 64}, {}}, t, /*misalign=*/1);
  }
}

ir::Node Op(std::string type, std::vector<std::string> in, std::string out, std::vector<ir::Attribute> attrs = {}) {
  ir::Node n = kt::MakeNode(std::move(type), std::move(in), {out}, std::move(attrs));
  n.name = out;
  return n;
}

// A ResNet stem and head: Conv 7x7 s2 + Relu, MaxPool 3x3 s2 p1, a basic
// residual block on the pool's result, GlobalAveragePool, Flatten.
ir::Model ResNetStem(DataType t) {
  ir::Model m;
  m.ir_version = 8;
  m.opset_imports = {{"", 17}};
  m.graph.inputs = {TypedValue("x", t, {4, 3, 64, 64})};
  m.graph.outputs = {TypedValue("y", t, {4, 32})};
  m.graph.initializers = {RandomConstant("w0", t, {32, 3, 7, 7}, 10), RandomConstant("b0", t, {32}, 11),
                          RandomConstant("w1", t, {32, 32, 3, 3}, 12), RandomConstant("w2", t, {32, 32, 3, 3}, 13)};
  const std::vector<ir::Attribute> same = {kt::IntsAttr("pads", {1, 1, 1, 1})};
  m.graph.nodes = {
      Op("Conv", {"x", "w0", "b0"}, "c0", {kt::IntsAttr("pads", {3, 3, 3, 3}), kt::IntsAttr("strides", {2, 2})}),
      Op("Relu", {"c0"}, "r0"),
      Op("MaxPool", {"r0"}, "p", Window({3, 3}, {2, 2}, {1, 1, 1, 1})),
      Op("Conv", {"p", "w1"}, "c1", same),
      Op("Relu", {"c1"}, "r1"),
      Op("Conv", {"r1", "w2"}, "c2", same),
      Op("Add", {"c2", "p"}, "a"),
      Op("Relu", {"a"}, "r2"),
      Op("GlobalAveragePool", {"r2"}, "g"),
      Op("Flatten", {"g"}, "y", {kt::IntAttr("axis", 1)})};
  return m;
}

TEST(CudaPoolNhwc, ResNetStemSessionMatchesTheCpu) {
  VIGIL_SKIP_WITHOUT_CUDA();
  for (DataType t : {kF16, kBF16}) {
    SCOPED_TRACE(ir::DataTypeName(t));
    ir::Model m = ResNetStem(t);
    runtime::Tensor x = RandomTensor(t, {4, 3, 64, 64}, 7);
    auto want = RunWithLayout(m, {cpu::MakeCpuBackend()}, x, runtime::ConvLayout::kAsModel);
    std::vector<std::string> placement;
    auto got = RunWithLayout(m, {CudaBackendForTests(), cpu::MakeCpuBackend()}, x, runtime::ConvLayout::kNhwcWhereFaster,
                             &placement);
    size_t pools = 0, transposes = 0;
    for (const std::string& p : placement) {
      if (p.find("PoolNhwc") != std::string::npos) {
        ++pools;
        EXPECT_NE(p.find(" on cuda"), std::string::npos) << p;
      }
      transposes += p.rfind("Transpose", 0) == 0;
      EXPECT_NE(p.rfind("MaxPool ", 0), 0u) << p;
      EXPECT_NE(p.rfind("GlobalAveragePool ", 0), 0u) << p;
    }
    EXPECT_EQ(pools, 2u);
    EXPECT_EQ(transposes, 2u);  // x to NHWC, and the pooled [N,1,1,C] back before Flatten
    ASSERT_EQ(got.size(), want.size());
    ASSERT_EQ(got.size(), 1u);
    runtime::TensorComparison cmp = runtime::CompareTensors(want[0].tensor, got[0].tensor, 1e300, 1e300);
    EXPECT_TRUE(cmp.same_dtype && cmp.same_shape) << got[0].tensor.Describe();
    EXPECT_EQ(cmp.nan_mismatches, 0u) << cmp.Describe();
    EXPECT_LE(cmp.rel_l2_error, 1e-2) << cmp.Describe();
  }
}

}  // namespace
}  // namespace vigil::cuda::testing
