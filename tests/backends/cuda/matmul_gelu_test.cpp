// ai.vigil.MatMulBias with a GELU activation (Y = Gelu(A·W + B), cuBLASLt's
// GELU_BIAS epilogue) on the GPU, against a float64 reference computed on the
// CPU from the op's definition (erf, or tanh for "gelu_tanh"): float16 and
// bfloat16, odd sizes (M = 13, K = 127, N = 33), a batched A and a ViT MLP
// shape. Y is poisoned with NaN first, so an element the kernel does not
// write fails. The epilogue approximates the GELU, so each case also prints
// how far the unfused path (the product rounded to Y's dtype, then the Gelu
// kernel) is from the same reference: the fused error must stay within one
// rounding of Y (the tolerance of every product test) and no more than
// twice the unfused path's.
// float32 products keep their exact Gelu: the kernel refuses the activation.
// The last test runs a Linear + GELU through sessions: fused on the GPU for
// float16, unfused for float32, against the CPU's outputs.
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include "backends/cpu/kernel_test_util.h"
#include "backends/cuda/cuda_test_util.h"
#include "ir/fuse_matmul_bias.h"
#include "ir/layout_nhwc.h"  // kVigilDomain
#include "runtime/tensor_compare.h"  // ElementAsDouble

namespace vigil::cuda {
namespace {

using ir::DataType;
using testing::CudaBackendForTests;
using testing::RandomTensor;

constexpr DataType kF32 = DataType::kFloat32;
constexpr DataType kF16 = DataType::kFloat16;
constexpr DataType kBF16 = DataType::kBfloat16;

// Relative L2 error against float64 for one rounding of Y (as in
// matmul_residual_test.cpp).
double Tolerance(DataType t) { return t == kF16 ? 2e-3 : 1e-2; }

double Gelu(double x, bool tanh_form) {
  if (tanh_form) return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
  return 0.5 * x * std::erfc(-x / std::sqrt(2.0));
}

// Gelu(A·W + B) in double, A [M, K] (leading dims flattened), W [K, N].
std::vector<double> Reference(const runtime::Tensor& a, const runtime::Tensor& w, const runtime::Tensor& b,
                              bool tanh_form) {
  const int64_t n = w.dim(1), k = w.dim(0);
  const int64_t m = static_cast<int64_t>(a.element_count()) / k;
  std::vector<double> y(static_cast<size_t>(m * n));
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double acc = runtime::ElementAsDouble(b, static_cast<uint64_t>(j));
      for (int64_t l = 0; l < k; ++l) {
        acc += runtime::ElementAsDouble(a, static_cast<uint64_t>(i * k + l)) *
               runtime::ElementAsDouble(w, static_cast<uint64_t>(l * n + j));
      }
      y[static_cast<size_t>(i * n + j)] = Gelu(acc, tanh_form);
    }
  }
  return y;
}

ir::Node MatMulBiasNode(const char* activation) {
  ir::Node node = cpu::testing::MakeNode(ir::kMatMulBiasOp, {"a", "w", "b"}, {"y"});
  node.name = "fc1";
  node.domain = ir::kVigilDomain;
  if (activation) node.attributes.push_back(ir::StringAttribute(ir::kMatMulBiasActivation, activation));
  return node;
}

// Runs `node` on the CUDA backend on device copies of `inputs`; its output
// on the host.
Result<runtime::Tensor> RunOnDevice(const ir::Node& node, int opset,
                                    const std::vector<const runtime::Tensor*>& inputs) {
  return testing::RunNodeFromHost(*CudaBackendForTests(), node, opset, inputs);
}

// Relative L2 distance of `y` from `want`; non-finite elements counted.
double RelL2(const runtime::Tensor& y, const std::vector<double>& want, uint64_t* not_finite) {
  double err = 0, norm = 0;
  *not_finite = 0;
  for (uint64_t i = 0; i < want.size(); ++i) {
    const double g = runtime::ElementAsDouble(y, i);
    if (!std::isfinite(g)) ++*not_finite;
    err += (g - want[i]) * (g - want[i]);
    norm += want[i] * want[i];
  }
  return std::sqrt(err / std::max(norm, 1e-300));
}

struct GeluCase {
  std::vector<int64_t> a_shape;  // [..., M, K]
  int64_t n;
};

TEST(CudaMatMulBiasGelu, EpilogueStaysWithinOneRoundingOfTheExactGelu) {
  VIGIL_SKIP_WITHOUT_CUDA();
  const std::vector<GeluCase> cases = {{{13, 127}, 33}, {{3, 13, 127}, 33}, {{197, 256}, 768}};
  uint32_t seed = 8100;
  for (DataType t : {kF16, kBF16}) {
    for (const GeluCase& c : cases) {
      for (const char* activation : {"gelu", "gelu_tanh"}) {
        const bool tanh_form = std::string_view(activation) == "gelu_tanh";
        std::vector<int64_t> y_shape = c.a_shape;
        y_shape.back() = c.n;
        SCOPED_TRACE(fmt::format("A [{}] N {} {} {}", fmt::join(c.a_shape, ","), c.n, ir::DataTypeName(t),
                                 activation));
        // Products of about unit spread (|x| up to ~4), where GELU bends.
        const float range = 1.7f / std::sqrt(static_cast<float>(c.a_shape.back()));
        runtime::Tensor a = RandomTensor(t, c.a_shape, seed, -1.7f, 1.7f);
        runtime::Tensor w = RandomTensor(t, {c.a_shape.back(), c.n}, seed + 1, -range, range);
        runtime::Tensor b = RandomTensor(t, {c.n}, seed + 2, -0.5f, 0.5f);
        seed += 3;
        const std::vector<double> want = Reference(a, w, b, tanh_form);
        auto fused = RunOnDevice(MatMulBiasNode(activation), 1, {&a, &w, &b});
        ASSERT_TRUE(fused.ok()) << fused.status().ToString();
        EXPECT_EQ(fused->shape(), y_shape);
        EXPECT_EQ(fused->dtype(), t);
        ASSERT_EQ(fused->element_count(), want.size());
        // The unfused path: the product in Y's dtype, then the Gelu kernel.
        auto linear = RunOnDevice(MatMulBiasNode(nullptr), 1, {&a, &w, &b});
        ASSERT_TRUE(linear.ok()) << linear.status().ToString();
        ir::Node gelu = cpu::testing::MakeNode("Gelu", {"y"}, {"g"});
        if (tanh_form) gelu.attributes.push_back(ir::StringAttribute("approximate", "tanh"));
        auto unfused = RunOnDevice(gelu, 20, {&*linear});
        ASSERT_TRUE(unfused.ok()) << unfused.status().ToString();
        uint64_t bad = 0, bad_unfused = 0;
        const double err = RelL2(*fused, want, &bad);
        const double err_unfused = RelL2(*unfused, want, &bad_unfused);
        std::printf("[ info ] %s A [%s] N %lld %s: rel L2 from exact: fused %.3e, unfused %.3e\n",
                    std::string(ir::DataTypeName(t)).c_str(), fmt::format("{}", fmt::join(c.a_shape, ",")).c_str(),
                    static_cast<long long>(c.n), activation, err, err_unfused);
        EXPECT_EQ(bad, 0u) << "elements not written (still NaN) or overflowed";
        EXPECT_EQ(bad_unfused, 0u);
        EXPECT_LE(err, Tolerance(t));
        EXPECT_LE(err, 2 * err_unfused);
      }
    }
  }
}

TEST(CudaMatMulBiasGelu, Float32AndResidualsKeepTheirExactGelu) {
  VIGIL_SKIP_WITHOUT_CUDA();
  runtime::Tensor a = RandomTensor(kF32, {13, 127}, 1);
  runtime::Tensor w = RandomTensor(kF32, {127, 33}, 2);
  runtime::Tensor b = RandomTensor(kF32, {33}, 3);
  auto got = RunOnDevice(MatMulBiasNode("gelu"), 1, {&a, &w, &b});
  ASSERT_FALSE(got.ok());
  EXPECT_NE(got.status().ToString().find("GELU activation"), std::string::npos) << got.status().ToString();
  // The backend says so before a session fuses anything.
  auto backend = CudaBackendForTests();
  ir::TypeInfo ta = ops::TensorType(kF32, std::vector<int64_t>{13, 127});
  ir::TypeInfo tw = ops::TensorType(kF32, std::vector<int64_t>{127, 33});
  ir::TypeInfo tb = ops::TensorType(kF32, std::vector<int64_t>{33});
  std::string why;
  runtime::NodeTypes types{{&ta, &tw, &tb}, {}};
  EXPECT_FALSE(backend->SupportsTyped(MatMulBiasNode("gelu"), 1, types, &why));
  EXPECT_NE(why.find("float32 keeps its exact Gelu"), std::string::npos) << why;
  ir::TypeInfo ha = ops::TensorType(kF16, std::vector<int64_t>{13, 127});
  ir::TypeInfo hw = ops::TensorType(kF16, std::vector<int64_t>{127, 33});
  ir::TypeInfo hb = ops::TensorType(kF16, std::vector<int64_t>{33});
  runtime::NodeTypes half{{&ha, &hw, &hb}, {}};
  EXPECT_TRUE(backend->SupportsTyped(MatMulBiasNode("gelu"), 1, half, &why)) << why;
  ir::Node residual = MatMulBiasNode("gelu");
  residual.inputs.push_back("r");
  ir::TypeInfo hr = ops::TensorType(kF16, std::vector<int64_t>{13, 33});
  runtime::NodeTypes with_r{{&ha, &hw, &hb, &hr}, {}};
  EXPECT_FALSE(backend->SupportsTyped(residual, 1, with_r, &why));
}

// x -> MatMul(W) -> Add(B) -> Gelu: a transformer MLP's first layer.
ir::Model MlpModel(const runtime::Tensor& x, const runtime::Tensor& w, const runtime::Tensor& b) {
  ir::Model m;
  m.ir_version = 9;
  m.opset_imports = {{"", 20}};
  m.graph.name = "mlp";
  ir::ValueInfo in, out;
  in.name = "x", in.has_type = true, in.type = ops::TensorType(x.dtype(), x.shape());
  out.name = "y";
  m.graph.inputs = {in};
  m.graph.outputs = {out};
  m.graph.initializers = {w.AsConstant("w"), b.AsConstant("b")};
  m.graph.nodes = {cpu::testing::MakeNode("MatMul", {"x", "w"}, {"p"}),
                   cpu::testing::MakeNode("Add", {"p", "b"}, {"q"}), cpu::testing::MakeNode("Gelu", {"q"}, {"y"})};
  return m;
}

TEST(CudaMatMulBiasGelu, SessionFusesTheGeluForFloat16Only) {
  VIGIL_SKIP_WITHOUT_CUDA();
  for (DataType t : {kF16, kF32}) {
    SCOPED_TRACE(ir::DataTypeName(t));
    const float range = 1.7f / std::sqrt(127.0f);
    runtime::Tensor x = RandomTensor(t, {3, 13, 127}, 7100, -1.7f, 1.7f);
    runtime::Tensor w = RandomTensor(t, {127, 33}, 7101, -range, range);
    runtime::Tensor b = RandomTensor(t, {33}, 7102, -0.5f, 0.5f);
    auto run = [&](std::vector<std::shared_ptr<const runtime::Backend>> backends,
                   size_t want_nodes) -> Result<runtime::Tensor> {
      runtime::SessionOptions options;
      options.backends = std::move(backends);
      VIGIL_ASSIGN_OR_RETURN(auto session, runtime::Session::Create(MlpModel(x, w, b), options));
      EXPECT_EQ(session->model().graph.nodes.size(), want_nodes);
      if (want_nodes == 1) {
        const ir::Attribute* act = session->model().graph.nodes[0].FindAttribute(ir::kMatMulBiasActivation);
        EXPECT_TRUE(act && act->s == "gelu");
      }
      VIGIL_ASSIGN_OR_RETURN(auto out, session->Run({{"x", t, x.shape(), x.raw_data(), x.byte_size(), ""}}));
      return std::move(out[0].tensor);
    };
    // float32 keeps MatMulBias + Gelu on the GPU; the CPU session runs the
    // three nodes as written.
    auto got = run({CudaBackendForTests(), cpu::MakeCpuBackend()}, t == kF16 ? 1 : 2);
    auto want = run({cpu::MakeCpuBackend()}, 3);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    ASSERT_TRUE(want.ok()) << want.status().ToString();
    runtime::TensorComparison cmp = runtime::CompareTensors(*want, *got, 1e300, 1e300);
    EXPECT_TRUE(cmp.same_dtype && cmp.same_shape);
    EXPECT_EQ(cmp.nan_mismatches, 0u);
    EXPECT_LE(cmp.rel_l2_error, t == kF32 ? 1e-5 : 1e-2) << cmp.Describe();
  }
}

}  // namespace
}  // namespace vigil::cuda
