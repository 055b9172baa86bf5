// Depthwise channels-last convolution on the GPU: ai.vigil.ConvNhwc with
// group == C == M, which the CUDA backend runs on its own kernel
// (backends/cuda/conv_depthwise.h) instead of cuDNN, against the CPU
// reference: odd channel counts (scalar path) and multiples of 4 (vector
// path), 3x3 stride 1/2 (the register-blocked path), other kernel sizes,
// asymmetric pads and dilations (the generic path), bias, residual Z, Relu
// and Relu6, and the input activation (ConvNhwc's input_activation, Relu or
// Relu6 on X as it is loaded, with X in [-8, 8] so that both bounds clip),
// in float16, bfloat16 and float32. Where the test program has
// the kernel compiled in (a CUDA build), it is also launched directly on an
// output buffer poisoned with NaN, so that an element it does not write
// shows up as a NaN mismatch.
#include <cstdlib>

#include "session_test_util.h"

#ifdef VIGIL_TESTS_LAUNCH_CUDA_KERNELS
#include <cuda_runtime_api.h>

#include "backends/cuda/conv_depthwise.h"
#endif

namespace vigil::cuda::testing {
namespace {

struct DepthwiseCase {
  std::vector<int64_t> x;  // [N, H, W, C]
  int64_t kh = 3, kw = 3;
  std::vector<int64_t> strides = {1, 1};
  std::vector<int64_t> pads = {1, 1, 1, 1};  // top, left, bottom, right (ONNX order)
  std::vector<int64_t> dilations = {1, 1};
  bool bias = true;
  bool residual = false;
  std::string act = {};  // "", "Relu" or "Relu6"
  std::string input_act = {};  // input_activation: "", "Relu" or "Relu6"
};

std::string Describe(const DepthwiseCase& k, ir::DataType t) {
  return fmt::format("depthwise {} x[{}] k{}x{} s[{}] p[{}] d[{}] bias {} z {} act '{}' input act '{}'",
                     ir::DataTypeName(t), fmt::join(k.x, ","), k.kh, k.kw, fmt::join(k.strides, ","),
                     fmt::join(k.pads, ","), fmt::join(k.dilations, ","), k.bias, k.residual, k.act, k.input_act);
}

int64_t OutDim(int64_t in, int64_t k, int64_t stride, int64_t pad_begin, int64_t pad_end, int64_t dilation) {
  return (in + pad_begin + pad_end - (k - 1) * dilation - 1) / stride + 1;
}

std::vector<int64_t> OutShape(const DepthwiseCase& k) {
  return {k.x[0], OutDim(k.x[1], k.kh, k.strides[0], k.pads[0], k.pads[2], k.dilations[0]),
          OutDim(k.x[2], k.kw, k.strides[1], k.pads[1], k.pads[3], k.dilations[1]), k.x[3]};
}

// The operands of one case: X (in [-8, 8] with an input activation, so that
// it clips at 0 and 6), W [C, kH, kW, 1], B [C], Z (Y's shape, ~4 in
// magnitude so that Relu6 clips).
struct Operands {
  runtime::Tensor x, w, b, z;
};

Operands MakeOperands(const DepthwiseCase& k, ir::DataType t) {
  const float x_range = k.input_act.empty() ? 1.0f : 8.0f;
  return {RandomTensor(t, k.x, 1, -x_range, x_range), RandomTensor(t, {k.x[3], k.kh, k.kw, 1}, 2),
          RandomTensor(t, {k.x[3]}, 3),
          RandomTensor(t, OutShape(k), 4, -4.0f, 4.0f)};
}

// One ConvNhwc node: x a graph input, w, b and z constants.
ir::Model DepthwiseModel(const DepthwiseCase& k, const Operands& o) {
  std::vector<ir::Attribute> attrs = {IntAttr("group", k.x[3]), IntsAttr("kernel_shape", {k.kh, k.kw}),
                                      IntsAttr("strides", k.strides), IntsAttr("pads", k.pads),
                                      IntsAttr("dilations", k.dilations)};
  if (!k.act.empty()) attrs.push_back(StringAttr("activation", k.act));
  if (!k.input_act.empty()) attrs.push_back(StringAttr(ir::kConvNhwcInputActivation, k.input_act));
  return ConvNhwcModel(o.x, o.w, k.bias ? &o.b : nullptr, std::move(attrs), k.residual ? &o.z : nullptr);
}

void ExpectClose(const runtime::Tensor& got, const runtime::Tensor& want, double tol, const std::string& what) {
  runtime::TensorComparison cmp = runtime::CompareTensors(want, got, 1e300, 1e300);
  EXPECT_TRUE(cmp.same_dtype && cmp.same_shape) << what << ": got " << got.Describe() << ", expected "
                                                << want.Describe();
  // The reference has no NaN: a NaN here is an element the kernel did not write.
  EXPECT_EQ(cmp.nan_mismatches, 0u) << what << ": " << cmp.Describe();
  EXPECT_LE(cmp.rel_l2_error, tol) << what << ": " << cmp.Describe();
}

// The case through a CUDA session (placed on cuda) against the CPU.
void CheckSession(const DepthwiseCase& k, ir::DataType t) {
  Operands o = MakeOperands(k, t);
  ir::Model m = DepthwiseModel(k, o);
  std::vector<std::string> placement;
  runtime::Tensor got = RunSingleOutput(m, {CudaBackendForTests(), cpu::MakeCpuBackend()}, o.x, &placement);
  ASSERT_EQ(placement.size(), 1u);
  EXPECT_EQ(placement[0], "ConvNhwc 'conv_nhwc' on cuda");
  runtime::Tensor want = RunSingleOutput(m, {cpu::MakeCpuBackend()}, o.x);
  ASSERT_EQ(want.shape(), OutShape(k)) << Describe(k, t);
  ExpectClose(got, want, ConvTolerance(t), Describe(k, t) + " (session)");
}

#ifdef VIGIL_TESTS_LAUNCH_CUDA_KERNELS
// A device copy of a host tensor, freed on destruction.
class DeviceBuffer {
 public:
  explicit DeviceBuffer(size_t bytes) { EXPECT_EQ(cudaMalloc(&p_, bytes), cudaSuccess); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() { cudaFree(p_); }
  static std::unique_ptr<DeviceBuffer> CopyOf(const runtime::Tensor& t) {
    auto d = std::make_unique<DeviceBuffer>(t.byte_size());
    EXPECT_EQ(cudaMemcpy(d->p_, t.raw_data(), t.byte_size(), cudaMemcpyHostToDevice), cudaSuccess);
    return d;
  }
  void* get() const { return p_; }

 private:
  void* p_ = nullptr;
};

NhwcActivation ActivationOf(const std::string& act) {
  if (act == ir::kConvNhwcRelu) return NhwcActivation::kRelu;
  if (act == ir::kConvNhwcRelu6) return NhwcActivation::kRelu6;
  return NhwcActivation::kNone;
}

// The kernel launched directly, Y poisoned with all-ones bytes (NaN in
// float32, float16 and bfloat16), against the CPU session.
void CheckKernel(const DepthwiseCase& k, ir::DataType t) {
  Operands o = MakeOperands(k, t);
  runtime::Tensor want = RunSingleOutput(DepthwiseModel(k, o), {cpu::MakeCpuBackend()}, o.x);
  std::optional<DepthwiseConvShape> shape =
      DepthwiseShapeOf(k.x, o.w.shape(), OutShape(k), k.x[3], k.strides, {k.pads[0], k.pads[1]}, k.dilations);
  ASSERT_TRUE(shape.has_value()) << Describe(k, t);
  auto x = DeviceBuffer::CopyOf(o.x), w = DeviceBuffer::CopyOf(o.w), b = DeviceBuffer::CopyOf(o.b),
       z = DeviceBuffer::CopyOf(o.z);
  runtime::Tensor got = runtime::Tensor::Allocate(t, OutShape(k)).value();
  DeviceBuffer y(got.byte_size());
  ASSERT_EQ(cudaMemset(y.get(), 0xFF, got.byte_size()), cudaSuccess);
  Status s = LaunchDepthwiseConvNhwc(*shape, t, x->get(), w->get(), k.bias ? b->get() : nullptr,
                                     k.residual ? z->get() : nullptr, y.get(), ActivationOf(k.act),
                                     ActivationOf(k.input_act), nullptr);
  ASSERT_TRUE(s.ok()) << s.ToString();
  ASSERT_EQ(cudaMemcpy(got.raw_data(), y.get(), got.byte_size(), cudaMemcpyDeviceToHost), cudaSuccess);
  ExpectClose(got, want, ConvTolerance(t), Describe(k, t) + " (kernel, poisoned Y)");
}
#endif

// Every shape family the kernel distinguishes.
std::vector<DepthwiseCase> Cases() {
  std::vector<DepthwiseCase> c;
  // 3x3 stride 1 and 2, pad 1: odd C (scalar), C % 4 == 0 (vector).
  for (int64_t ch : {13, 32, 127, 960}) {
    c.push_back({.x = {2, 7, 7, ch}});
    c.push_back({.x = {1, 15, 15, ch}, .strides = {2, 2}, .act = "Relu6"});
  }
  // MobileNetV2's shapes at small N, with its fused epilogues.
  c.push_back({.x = {1, 112, 112, 32}, .act = "Relu6"});
  c.push_back({.x = {2, 112, 112, 32}, .strides = {2, 2}, .act = "Relu6"});
  c.push_back({.x = {2, 7, 7, 960}, .act = "Relu"});
  c.push_back({.x = {3, 15, 15, 32}, .residual = true, .act = "Relu6"});
  c.push_back({.x = {1, 15, 7, 127}, .bias = false, .residual = true});
  c.push_back({.x = {2, 15, 15, 13}, .strides = {2, 2}, .residual = true, .act = "Relu"});
  // No padding; asymmetric pads (top, left, bottom, right), as TF's SAME gives.
  c.push_back({.x = {1, 7, 15, 32}, .pads = {0, 0, 0, 0}});
  c.push_back({.x = {2, 15, 15, 32}, .strides = {2, 2}, .pads = {0, 0, 1, 1}, .act = "Relu6"});
  c.push_back({.x = {1, 15, 7, 13}, .pads = {2, 0, 1, 1}, .act = "Relu"});
  // The generic path: 5x5, 7x7, 1x3, dilation 2, mixed and larger strides.
  c.push_back({.x = {2, 15, 15, 32}, .kh = 5, .kw = 5, .pads = {2, 2, 2, 2}, .residual = true, .act = "Relu6"});
  c.push_back({.x = {1, 15, 15, 127}, .kh = 5, .kw = 5, .strides = {2, 2}, .pads = {2, 2, 2, 2}, .act = "Relu"});
  c.push_back({.x = {1, 7, 7, 13}, .kh = 7, .kw = 7, .pads = {3, 3, 3, 3}, .bias = false});
  c.push_back({.x = {1, 15, 15, 32}, .kh = 1, .kw = 3, .pads = {0, 1, 0, 1}});
  c.push_back({.x = {1, 15, 15, 32}, .pads = {2, 2, 2, 2}, .dilations = {2, 2}, .act = "Relu"});
  c.push_back({.x = {2, 15, 7, 13}, .pads = {2, 1, 2, 1}, .dilations = {2, 1}, .residual = true});
  c.push_back({.x = {1, 15, 15, 960}, .strides = {1, 2}, .pads = {1, 0, 1, 2}});
  c.push_back({.x = {1, 15, 15, 32}, .strides = {3, 3}, .pads = {1, 1, 1, 1}, .act = "Relu6"});
  return c;
}

// The input activation on every path: 3x3 stride 1 and 2 (odd C: scalar,
// C % 4 == 0: vector), with and without the output activation, bias and Z,
// and the generic path.
std::vector<DepthwiseCase> InputActivationCases() {
  std::vector<DepthwiseCase> c;
  for (int64_t ch : {13, 32, 127, 960}) {
    c.push_back({.x = {2, 7, 7, ch}, .input_act = "Relu6"});
    c.push_back({.x = {1, 15, 15, ch}, .strides = {2, 2}, .act = "Relu6", .input_act = "Relu6"});
    c.push_back({.x = {2, 9, 9, ch}, .act = "Relu", .input_act = "Relu"});
    c.push_back({.x = {1, 15, 15, ch}, .strides = {2, 2}, .bias = false, .input_act = "Relu"});
  }
  c.push_back({.x = {2, 112, 112, 32}, .act = "Relu6", .input_act = "Relu6"});  // MobileNetV2 features.2
  c.push_back({.x = {2, 15, 15, 32}, .strides = {2, 2}, .pads = {0, 0, 1, 1}, .residual = true, .act = "Relu6",
               .input_act = "Relu6"});
  c.push_back({.x = {2, 15, 15, 32}, .kh = 5, .kw = 5, .pads = {2, 2, 2, 2}, .act = "Relu6", .input_act = "Relu6"});
  c.push_back({.x = {1, 15, 15, 13}, .pads = {2, 2, 2, 2}, .dilations = {2, 2}, .input_act = "Relu"});
  return c;
}

TEST(CudaConvDepthwise, InputActivationMatchesTheCpu) {
  VIGIL_SKIP_WITHOUT_CUDA();
  for (ir::DataType t : {kF16, kBF16, kF32}) {
    for (const DepthwiseCase& k : InputActivationCases()) CheckSession(k, t);
  }
#ifdef VIGIL_TESTS_LAUNCH_CUDA_KERNELS
  for (ir::DataType t : {kF16, kBF16, kF32}) {
    for (const DepthwiseCase& k : InputActivationCases()) CheckKernel(k, t);
  }
#endif
}

// A ConvNhwc with input_activation that the depthwise kernel does not run
// (`group` < C) is not placed on cuda: cuDNN cannot activate its input.
std::string PlacementWithInputActivation(int64_t group) {
  DepthwiseCase k{.x = {1, 7, 7, 16}, .input_act = "Relu6"};
  Operands o = MakeOperands(k, kF16);
  if (group != k.x[3]) o.w = RandomTensor(kF16, {16, 3, 3, 16 / group}, 2);
  ir::Model m = DepthwiseModel(k, o);
  for (ir::Attribute& a : m.graph.nodes[0].attributes) {
    if (a.name == "group") a.i = group;
  }
  runtime::SessionOptions options;
  options.backends = {CudaBackendForTests(), cpu::MakeCpuBackend()};
  auto session = runtime::Session::Create(m, options);
  if (!session.ok()) return session.status().ToString();
  const auto& placement = (*session)->placement();
  return placement.size() == 1 ? placement[0].backend : "?";
}

TEST(CudaConvDepthwise, InputActivationStaysOffCudnn) {
  VIGIL_SKIP_WITHOUT_CUDA();
  EXPECT_EQ(PlacementWithInputActivation(16), "cuda");
  EXPECT_EQ(PlacementWithInputActivation(1), "cpu");
  EXPECT_EQ(PlacementWithInputActivation(4), "cpu");
  setenv("VIGIL_DEPTHWISE", "cudnn", 1);
  EXPECT_EQ(PlacementWithInputActivation(16), "cpu");
  unsetenv("VIGIL_DEPTHWISE");
}

TEST(CudaConvDepthwise, MatchesTheCpuThroughTheSession) {
  VIGIL_SKIP_WITHOUT_CUDA();
  for (ir::DataType t : {kF16, kBF16, kF32}) {
    for (const DepthwiseCase& k : Cases()) CheckSession(k, t);
  }
}

TEST(CudaConvDepthwise, WritesEveryElementOfAPoisonedOutput) {
  VIGIL_SKIP_WITHOUT_CUDA();
#ifdef VIGIL_TESTS_LAUNCH_CUDA_KERNELS
  for (ir::DataType t : {kF16, kBF16, kF32}) {
    for (const DepthwiseCase& k : Cases()) CheckKernel(k, t);
  }
#else
  GTEST_SKIP() << "the depthwise kernel is compiled into this test program only in a CUDA build";
#endif
}

TEST(CudaConvDepthwise, CudnnStillRunsThemWhenAskedTo) {
  VIGIL_SKIP_WITHOUT_CUDA();
  // VIGIL_DEPTHWISE=cudnn (read on every run) restores the cuDNN path, for before/after measurements.
  setenv("VIGIL_DEPTHWISE", "cudnn", 1);
  for (ir::DataType t : {kF16, kF32}) {
    CheckSession({.x = {2, 15, 15, 32}, .act = "Relu6"}, t);
    CheckSession({.x = {1, 15, 15, 13}, .strides = {2, 2}, .residual = true, .act = "Relu"}, t);
  }
  unsetenv("VIGIL_DEPTHWISE");
}

#ifdef VIGIL_TESTS_LAUNCH_CUDA_KERNELS
TEST(CudaConvDepthwise, OnlyDepthwiseShapesTakeTheKernel) {
  const std::vector<int64_t> s = {1, 1}, p = {1, 1}, d = {1, 1};
  EXPECT_TRUE(DepthwiseShapeOf({1, 8, 8, 16}, {16, 3, 3, 1}, {1, 8, 8, 16}, 16, s, p, d).has_value());
  // Grouped but not depthwise: two channels per group, or a channel multiplier of 2.
  EXPECT_FALSE(DepthwiseShapeOf({1, 8, 8, 16}, {16, 3, 3, 2}, {1, 8, 8, 16}, 8, s, p, d).has_value());
  EXPECT_FALSE(DepthwiseShapeOf({1, 8, 8, 16}, {32, 3, 3, 1}, {1, 8, 8, 32}, 16, s, p, d).has_value());
  // A 1-channel ordinary convolution (group 1) goes to cuDNN.
  EXPECT_FALSE(DepthwiseShapeOf({1, 8, 8, 1}, {1, 3, 3, 1}, {1, 8, 8, 1}, 1, s, p, d).has_value());
  setenv("VIGIL_DEPTHWISE", "cudnn", 1);
  EXPECT_FALSE(DepthwiseShapeOf({1, 8, 8, 16}, {16, 3, 3, 1}, {1, 8, 8, 16}, 16, s, p, d).has_value());
  unsetenv("VIGIL_DEPTHWISE");
}
#endif

}  // namespace
}  // namespace vigil::cuda::testing
