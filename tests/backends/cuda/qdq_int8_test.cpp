// The int8 path on the GPU: ai.vigil.QConvNhwc (cuDNN's int8 engines,
// backends/cuda/conv_int8.cpp), ai.vigil.QMatMul (cuBLASLt's,
// backends/cuda/matmul_int8.cpp) and ai.vigil.QAdd against the CPU kernels
// (backends/cpu/qdq_fused.cpp) bit for bit, at odd spatial sizes, strides,
// paddings, with and without Relu; and a QDQ model through a CUDA session:
// which chains run in int8, which stay in float and why, and the output
// against the unfused model on the CPU.
#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <regex>
#include <sstream>

#include <gtest/gtest.h>

#include "backends/cpu/cpu_backend.h"
#include "ir/fuse_qdq.h"
#include "runtime/session.h"
#include "session_test_util.h"
#include "support/qdq_model.h"

namespace vigil::cuda {
namespace {

using ir::DataType;
using runtime::Tensor;
using testing::TypedValue;

Tensor Int8Tensor(std::vector<int64_t> shape, uint32_t seed) {
  Tensor t = Tensor::Allocate(DataType::kInt8, std::move(shape)).value();
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> q(-128, 127);
  for (size_t i = 0; i < t.element_count(); ++i) t.data<int8_t>()[i] = static_cast<int8_t>(q(rng));
  return t;
}

Tensor FloatVector(std::vector<float> v) {
  Tensor t = Tensor::Allocate(DataType::kFloat32, {static_cast<int64_t>(v.size())}).value();
  for (size_t i = 0; i < v.size(); ++i) t.data<float>()[i] = v[i];
  return t;
}

// One node of domain ai.vigil: "x" a graph input, the other inputs constants.
ir::Model OneNode(const char* op, const Tensor& x, const std::vector<std::pair<std::string, const Tensor*>>& constants,
                  std::vector<ir::Attribute> attrs) {
  ir::Model m;
  m.ir_version = 8;
  m.opset_imports = {{"", 17}, {ir::kVigilDomain, ir::kVigilOpsetVersion}};
  m.graph.inputs = {TypedValue("x", x.dtype(), x.shape())};
  ir::Node n;
  n.name = op;
  n.domain = ir::kVigilDomain;
  n.op_type = op;
  n.inputs = {"x"};
  for (const auto& [name, t] : constants) {
    if (t) {
      m.graph.initializers.push_back(t->AsConstant(name));
    }
    n.inputs.push_back(name);
  }
  n.outputs = {"y"};
  n.attributes = std::move(attrs);
  m.graph.nodes = {n};
  m.graph.outputs = {ir::ValueInfo{"y", false, {}, {}}};
  return m;
}

void ExpectSameInt8(const Tensor& got, const Tensor& want) {
  ASSERT_EQ(got.dtype(), DataType::kInt8);
  ASSERT_EQ(got.shape(), want.shape());
  size_t differ = 0, first = 0;
  for (size_t i = 0; i < got.element_count(); ++i) {
    if (got.data<int8_t>()[i] != want.data<int8_t>()[i] && differ++ == 0) first = i;
  }
  EXPECT_EQ(differ, 0u) << "of " << got.element_count() << "; first at " << first << ": "
                        << int{got.data<int8_t>()[first]} << " vs " << int{want.data<int8_t>()[first]};
}

struct ConvCase {
  int64_t n, h, w, c, m, k, stride, pad;
};

struct QConvProblem {
  Tensor x;
  ir::Model model;
};

// A QConvNhwc node of case `c` with random int8 X and W, and scales that
// spread the accumulators over the int8 range (and past it: saturation).
QConvProblem MakeQConv(const ConvCase& c, bool relu, uint32_t& seed) {
  Tensor x = Int8Tensor({c.n, c.h, c.w, c.c}, ++seed);
  Tensor w = Int8Tensor({c.m, c.k, c.k, c.c}, ++seed);
  std::mt19937 rng(++seed);
  const float typical = 73.0f * 73.0f * std::sqrt(static_cast<float>(c.c * c.k * c.k));
  std::uniform_real_distribution<float> jitter(0.5f, 2.0f), shift(-40.0f, 40.0f);
  std::vector<float> scale(c.m), bias(c.m);
  for (int64_t i = 0; i < c.m; ++i) {
    scale[i] = jitter(rng) * 60.0f / typical;
    bias[i] = shift(rng);
  }
  Tensor s = FloatVector(scale), b = FloatVector(bias);
  std::vector<ir::Attribute> attrs = {testing::IntsAttr("kernel_shape", {c.k, c.k}),
                                      testing::IntsAttr("strides", {c.stride, c.stride}),
                                      testing::IntsAttr("pads", {c.pad, c.pad, c.pad, c.pad})};
  if (relu) attrs.push_back(testing::StringAttr("activation", "Relu"));
  ir::Model model = OneNode(ir::kQConvNhwcOp, x, {{"w", &w}, {"scale", &s}, {"bias", &b}}, attrs);
  return {std::move(x), std::move(model)};
}

TEST(CudaInt8, QConvNhwcMatchesCpuBitForBit) {
  VIGIL_SKIP_WITHOUT_CUDA();
  // Stride 2 with at most 4 input channels and 16 to 64 output channels (in
  // multiples of 16) take the space-to-depth route: the RGB stem (7x7),
  // 1 channel 3x3 on odd sizes, 2 channels with an even window, 64 outputs
  // over a partial last tile, and a batch whose 980 tiles make the kernel's
  // blocks take several each. The 4-channel 5x5 with 12 outputs takes the
  // int8 route; the 3-channel stem with 8 outputs and the last three the
  // exact float route (channels not in multiples of 4).
  const ConvCase cases[] = {{2, 13, 11, 12, 20, 3, 1, 1},  {1, 9, 9, 16, 8, 1, 2, 0},   {3, 7, 13, 4, 12, 5, 2, 2},
                            {1, 14, 14, 64, 64, 3, 1, 1},  {2, 7, 7, 128, 36, 1, 1, 0},  {2, 31, 27, 3, 16, 7, 2, 3},
                            {1, 13, 11, 1, 16, 3, 2, 1},   {2, 16, 15, 2, 32, 4, 2, 1},  {1, 29, 33, 3, 64, 7, 2, 3},
                            {5, 224, 224, 3, 64, 7, 2, 3}, {1, 12, 13, 3, 8, 7, 2, 3},   {1, 13, 13, 6, 10, 3, 1, 1},
                            {1, 9, 11, 127, 13, 1, 1, 0}};
  uint32_t seed = 40;
  for (const ConvCase& c : cases) {
    for (bool relu : {false, true}) {
      SCOPED_TRACE(::testing::Message() << "x [" << c.n << "," << c.h << "," << c.w << "," << c.c << "] m " << c.m
                                        << " k " << c.k << " stride " << c.stride << " pad " << c.pad
                                        << (relu ? " relu" : ""));
      QConvProblem q = MakeQConv(c, relu, seed);
      Tensor got = testing::RunSingleOutput(q.model, {testing::CudaBackendForTests(), cpu::MakeCpuBackend()}, q.x);
      Tensor want = testing::RunSingleOutput(q.model, {cpu::MakeCpuBackend()}, q.x);
      ExpectSameInt8(got, want);
    }
  }
}

// With --tune the exact float route times its four forms and records the
// fastest as "qconv-route|..."; a session reading that file takes it and
// gives the same bits. Both equal the CPU kernel.
TEST(CudaInt8, TunedFloatRouteRecordsItsFormAndStaysExact) {
  VIGIL_SKIP_WITHOUT_CUDA();
  const std::string path = (std::filesystem::temp_directory_path() / "vigil_qconv_route_tuning.tsv").string();
  std::filesystem::remove(path);
  uint32_t seed = 70;
  QConvProblem q = MakeQConv({1, 12, 13, 3, 8, 7, 2, 3}, true, seed);
  const Tensor want = testing::RunSingleOutput(q.model, {cpu::MakeCpuBackend()}, q.x);
  for (bool tune : {true, false}) {
    SCOPED_TRACE(tune ? "tuning" : "reading the cache");
    backends::CudaBackendOptions o;
    o.tune = tune;
    o.tuning_cache = path;
    auto loaded = backends::LoadCudaBackend(o);
    ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
    ExpectSameInt8(testing::RunSingleOutput(q.model, {loaded->backend, cpu::MakeCpuBackend()}, q.x), want);
  }
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  const std::regex record("\\tqconv-route\\|[^\\t]*\\t(f16fused|f16acc|f32fused|f32acc)\\t");
  EXPECT_TRUE(std::regex_search(text.str(), record)) << text.str();
  std::filesystem::remove(path);
}

TEST(CudaInt8, QAddMatchesCpuBitForBit) {
  VIGIL_SKIP_WITHOUT_CUDA();
  // 2x13x7x5 (not a multiple of 4: the one-element kernel) and 2x12x5x8 (the four-element one).
  for (std::vector<int64_t> shape : {std::vector<int64_t>{2, 13, 7, 5}, std::vector<int64_t>{2, 12, 5, 8}}) {
    for (bool relu : {false, true}) {
      SCOPED_TRACE(::testing::Message() << shape[1] << " channels" << (relu ? " relu" : ""));
      Tensor a = Int8Tensor(shape, 3), b = Int8Tensor(shape, 4);
      Tensor sa = FloatVector({0.5f}), sb = FloatVector({0.25f}), sy = FloatVector({0.5f});
      std::vector<ir::Attribute> attrs;
      if (relu) attrs.push_back(testing::StringAttr("activation", "Relu"));
      ir::Model model = OneNode(ir::kQAddOp, a, {{"sa", &sa}, {"b", &b}, {"sb", &sb}, {"sy", &sy}}, attrs);
      Tensor got = testing::RunSingleOutput(model, {testing::CudaBackendForTests(), cpu::MakeCpuBackend()}, a);
      Tensor want = testing::RunSingleOutput(model, {cpu::MakeCpuBackend()}, a);
      ExpectSameInt8(got, want);
    }
  }
}

// A CUDA session of `model` with the device layout (where the QDQ pass runs).
std::unique_ptr<runtime::Session> CudaQdqSession(const ir::Model& model, bool no_fallback) {
  runtime::SessionOptions options;
  options.backends = {testing::CudaBackendForTests(), cpu::MakeCpuBackend()};
  options.no_fallback = no_fallback;
  options.constant_folding = true;
  options.conv_layout = runtime::ConvLayout::kNhwcWhereFaster;
  auto session = runtime::Session::Create(model, options);
  EXPECT_TRUE(session.ok()) << session.status().ToString();
  return session.ok() ? std::move(session).value() : nullptr;
}

// The first output of `session` on a random "x" of `shape` within one
// quantum (`scale`) of the unfused model on the CPU, differing in at most 1%
// of its elements, and not mostly zeros.
void ExpectWithinOneQuantum(runtime::Session& session, const ir::Model& model, const std::vector<int64_t>& shape,
                            double scale) {
  runtime::SessionOptions cpu_options;
  cpu_options.backends = {cpu::MakeCpuBackend()};
  auto reference = runtime::Session::Create(model, cpu_options);
  ASSERT_TRUE(reference.ok()) << reference.status().ToString();
  Tensor x = Tensor::Allocate(DataType::kFloat32, shape).value();
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(-4.0f, 4.0f);
  for (size_t i = 0; i < x.element_count(); ++i) x.data<float>()[i] = u(rng);
  runtime::InputBinding in{"x", x.dtype(), x.shape(), x.raw_data(), x.byte_size(), ""};
  auto got = session.Run({in});
  auto want = (*reference)->Run({in});
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  ASSERT_TRUE(want.ok()) << want.status().ToString();
  const Tensor& g = (*got)[0].tensor;
  const Tensor& w = (*want)[0].tensor;
  ASSERT_EQ(g.shape(), w.shape());
  size_t differ = 0, nonzero = 0;
  for (size_t i = 0; i < g.element_count(); ++i) {
    ASSERT_FALSE(std::isnan(g.data<float>()[i]));
    const double quanta = std::fabs(static_cast<double>(g.data<float>()[i]) - w.data<float>()[i]) / scale;
    EXPECT_LE(quanta, 1.0001) << i;
    differ += quanta > 0.5;
    nonzero += w.data<float>()[i] != 0;
  }
  EXPECT_LE(differ * 100, g.element_count()) << differ << " of " << g.element_count();
  EXPECT_GT(nonzero * 4, g.element_count()) << "the test data should not be mostly zeros";
}

struct MatMulCase {
  std::vector<int64_t> a;  // [..., K]
  int64_t n;
};

TEST(CudaInt8, QMatMulMatchesCpuBitForBit) {
  VIGIL_SKIP_WITHOUT_CUDA();
  const MatMulCase cases[] = {{{3, 13, 128}, 124}, {{127, 36}, 20}, {{1, 64}, 8}, {{2, 1, 5, 768}, 192}};
  uint32_t seed = 70;
  for (const MatMulCase& c : cases) {
    for (bool relu : {false, true}) {
      const int64_t k = c.a.back();
      SCOPED_TRACE(::testing::Message() << "A rank " << c.a.size() << " K " << k << " N " << c.n
                                        << (relu ? " relu" : ""));
      Tensor a = Int8Tensor(c.a, ++seed);
      Tensor w = Int8Tensor({c.n, k}, ++seed);
      std::mt19937 rng(++seed);
      const float typical = 73.0f * 73.0f * std::sqrt(static_cast<float>(k));
      std::uniform_real_distribution<float> jitter(0.5f, 2.0f), shift(-40.0f, 40.0f);
      std::vector<float> scale(c.n), bias(c.n);
      for (int64_t i = 0; i < c.n; ++i) {
        scale[i] = jitter(rng) * 60.0f / typical;
        bias[i] = shift(rng);
      }
      Tensor s = FloatVector(scale), b = FloatVector(bias);
      std::vector<ir::Attribute> attrs;
      if (relu) attrs.push_back(testing::StringAttr("activation", "Relu"));
      ir::Model model = OneNode(ir::kQMatMulOp, a, {{"w", &w}, {"scale", &s}, {"bias", &b}}, attrs);
      runtime::SessionOptions options;
      options.backends = {testing::CudaBackendForTests(), cpu::MakeCpuBackend()};
      options.no_fallback = true;
      auto session = runtime::Session::Create(model, options);
      ASSERT_TRUE(session.ok()) << session.status().ToString();  // every node on the GPU
      Tensor got = testing::RunSingleOutput(model, {testing::CudaBackendForTests(), cpu::MakeCpuBackend()}, a);
      Tensor want = testing::RunSingleOutput(model, {cpu::MakeCpuBackend()}, a);
      ExpectSameInt8(got, want);
      size_t saturated = 0, zero = 0;
      for (size_t i = 0; i < want.element_count(); ++i) {
        saturated += want.data<int8_t>()[i] == 127 || want.data<int8_t>()[i] == -128;
        zero += want.data<int8_t>()[i] == 0;
      }
      // Spread over the int8 range: few saturated, and not mostly zeros (Relu zeroes about half).
      EXPECT_LT(saturated * 4, want.element_count());
      EXPECT_LT(zero * (relu ? 4 : 2), want.element_count() * (relu ? 3 : 1));
    }
  }
}

// A QDQ Linear layer through a CUDA session: the MatMul with its bias and
// Relu as one QMatMul on the GPU, within one quantum of the unfused CPU run;
// the product of two activations stays in float, and the note says so.
TEST(CudaInt8, QdqLinearLayerRunsAsQMatMul) {
  VIGIL_SKIP_WITHOUT_CUDA();
  for (bool gemm : {false, true}) {
    SCOPED_TRACE(gemm ? "Gemm" : "MatMul");
    ::vigil::testing::QdqLinearOptions o;
    o.gemm = gemm;
    o.k = 64;
    o.n = 36;
    const ir::Model model = ::vigil::testing::QdqLinearModel(o);
    std::unique_ptr<runtime::Session> session = CudaQdqSession(model, false);
    ASSERT_TRUE(session);
    const auto& notes = session->int8_notes();
    ASSERT_EQ(notes.size(), gemm ? 1u : 2u);
    EXPECT_TRUE(notes[0].int8) << notes[0].reason;
    size_t qmatmul = 0;
    for (const auto& p : session->placement()) {
      if (p.node.rfind("QMatMul", 0) != 0) continue;
      ++qmatmul;
      EXPECT_EQ(p.backend, "cuda") << p.node;
    }
    EXPECT_EQ(qmatmul, 1u);
    // h, the QMatMul's output dequantized.
    ExpectWithinOneQuantum(*session, model, gemm ? std::vector<int64_t>{7, o.k} : std::vector<int64_t>{2, 5, o.k},
                           ::vigil::testing::kQdqLinearHiddenScale);
  }
}

// A QDQ model through a CUDA session, with an RGB input (its first
// convolution on the exact float32 route) and with 127 channels and a 3x3
// window (too wide for that route, so it stays in float, and the note says
// why): where fused, every node on the device and the output within one
// quantum of the unfused CPU run.
void CheckQdqModel(int64_t c_in, bool first_fused) {
  ::vigil::testing::QdqModelOptions o;
  o.c_in = c_in;
  o.h = 27;
  o.w = 19;
  const ir::Model model = ::vigil::testing::QdqModel(o);
  std::unique_ptr<runtime::Session> session = CudaQdqSession(model, true);
  ASSERT_TRUE(session);
  const auto& notes = session->int8_notes();
  ASSERT_EQ(notes.size(), 2u);
  EXPECT_EQ(notes[0].int8, first_fused) << notes[0].reason;
  if (!first_fused) {
    EXPECT_NE(notes[0].reason.find("127 input and 12 output channels with a 3x3 window"), std::string::npos)
        << notes[0].reason;
  }
  EXPECT_TRUE(notes[1].int8) << notes[1].reason;
  size_t qconv = 0, qadd = 0;
  for (const auto& p : session->placement()) {
    qconv += p.node.rfind("QConvNhwc", 0) == 0;
    qadd += p.node.rfind("QAdd", 0) == 0;
    EXPECT_EQ(p.backend, "cuda") << p.node;
  }
  EXPECT_EQ(qconv, first_fused ? 2u : 1u);
  EXPECT_EQ(qadd, 1u);
  ExpectWithinOneQuantum(*session, model, {o.n, o.c_in, o.h, o.w}, 0.03);
}

TEST(CudaInt8, QdqModelWithAnRgbInputRunsWhollyInInt8) {
  VIGIL_SKIP_WITHOUT_CUDA();
  CheckQdqModel(3, true);
}

TEST(CudaInt8, QdqModelKeepsATooWideConvolutionInFloatAndSaysWhy) {
  VIGIL_SKIP_WITHOUT_CUDA();
  CheckQdqModel(127, false);
}

}  // namespace
}  // namespace vigil::cuda
