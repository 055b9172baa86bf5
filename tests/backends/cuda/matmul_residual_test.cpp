// ai.vigil.MatMulBias with its residual input R (Y = A·W + B + R, R added as
// cuBLASLt's C matrix with beta = 1) on the GPU, against a float64 reference
// computed on the CPU from the op's definition: float32, float16 and
// bfloat16, odd sizes (M = 13, K = 127, N = 33) that fit no tile, a batched
// A, an R whose address is not aligned like Y's, and the empty inner
// dimension (Y = B + R). The node runs on the CUDA backend directly, with Y
// poisoned with NaN first, so an element the kernel does not write fails.
// The last test runs a residual block through sessions: fused on the GPU,
// unfused on the CPU, the same outputs.
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
using testing::PoisonedDeviceOutputs;
using testing::RandomTensor;

constexpr DataType kF32 = DataType::kFloat32;
constexpr DataType kF16 = DataType::kFloat16;
constexpr DataType kBF16 = DataType::kBfloat16;

// Relative L2 error against float64: one rounding of Y (float32
// accumulation, TF32 off) plus the accumulation order.
double Tolerance(DataType t) { return t == kF32 ? 1e-5 : t == kF16 ? 2e-3 : 1e-2; }

// Y = A·W + B + R in double, A [M, K] (leading dims flattened), W [K, N].
std::vector<double> Reference(const runtime::Tensor& a, const runtime::Tensor& w, const runtime::Tensor& b,
                              const runtime::Tensor& r) {
  const int64_t n = w.dim(1), k = w.dim(0);
  const int64_t m = k == 0 ? static_cast<int64_t>(r.element_count()) / n
                           : static_cast<int64_t>(a.element_count()) / k;
  std::vector<double> y(static_cast<size_t>(m * n));
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double acc = 0;
      for (int64_t l = 0; l < k; ++l) {
        acc += runtime::ElementAsDouble(a, static_cast<uint64_t>(i * k + l)) *
               runtime::ElementAsDouble(w, static_cast<uint64_t>(l * n + j));
      }
      const uint64_t at = static_cast<uint64_t>(i * n + j);
      y[at] = acc + runtime::ElementAsDouble(b, static_cast<uint64_t>(j)) + runtime::ElementAsDouble(r, at);
    }
  }
  return y;
}

// `host` on the device, starting `offset` elements into its allocation (an
// offset of 1 leaves R aligned to 2 or 4 bytes only, unlike Y's arena slot).
Result<runtime::Tensor> OnDevice(const runtime::Tensor& host, int64_t offset = 0) {
  auto backend = CudaBackendForTests();
  const int64_t count = static_cast<int64_t>(host.element_count());
  const size_t elem = static_cast<size_t>(ir::DataTypeBits(host.dtype()) / 8);
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor padded, runtime::Tensor::Allocate(host.dtype(), {count + offset}));
  std::memset(padded.raw_data(), 0, padded.byte_size());
  if (host.byte_size()) std::memcpy(static_cast<char*>(padded.raw_data()) + offset * elem, host.raw_data(), host.byte_size());
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor device, backend->ToDevice(padded));
  VIGIL_RETURN_IF_ERROR(backend->Synchronize());
  auto owner = std::make_shared<runtime::Tensor>(device);
  return runtime::Tensor::OnDevice(runtime::Device::kCuda, host.dtype(), host.shape(),
                                   static_cast<char*>(device.raw_data()) + offset * elem, owner);
}

ir::Node MatMulBiasNode(size_t inputs) {
  std::vector<std::string> names = {"a", "w", "b", "r"};
  names.resize(inputs);
  ir::Node node = cpu::testing::MakeNode(ir::kMatMulBiasOp, names, {"y"});
  node.domain = ir::kVigilDomain;
  return node;
}

// Runs MatMulBias (with R when given) on the CUDA backend; Y on the host.
Result<runtime::Tensor> RunOnDevice(const runtime::Tensor& a, const runtime::Tensor& w, const runtime::Tensor& b,
                                    const runtime::Tensor* r, int64_t r_offset) {
  auto backend = CudaBackendForTests();
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor da, OnDevice(a));
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor dw, OnDevice(w));
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor db, OnDevice(b));
  runtime::Tensor dr;
  if (r) {
    VIGIL_ASSIGN_OR_RETURN(dr, OnDevice(*r, r_offset));
  }
  std::vector<const runtime::Tensor*> inputs = {&da, &dw, &db};
  if (r) inputs.push_back(&dr);
  std::vector<runtime::Tensor> outputs;
  PoisonedDeviceOutputs allocator(*backend);
  VIGIL_RETURN_IF_ERROR(backend->Run(MatMulBiasNode(inputs.size()), 1, inputs, outputs, allocator));
  VIGIL_RETURN_IF_ERROR(backend->Synchronize());
  if (outputs.size() != 1) return InternalError("{} outputs", outputs.size());
  return backend->ToHost(outputs[0]);
}

void ExpectClose(const runtime::Tensor& y, const std::vector<int64_t>& shape, const std::vector<double>& want,
                 DataType t) {
  EXPECT_EQ(y.shape(), shape);
  EXPECT_EQ(y.dtype(), t);
  ASSERT_EQ(y.element_count(), want.size());
  double err = 0, norm = 0;
  uint64_t not_finite = 0;
  for (uint64_t i = 0; i < want.size(); ++i) {
    const double g = runtime::ElementAsDouble(y, i);
    if (!std::isfinite(g)) ++not_finite;
    err += (g - want[i]) * (g - want[i]);
    norm += want[i] * want[i];
  }
  EXPECT_EQ(not_finite, 0u) << "elements not written (still NaN) or overflowed";
  EXPECT_LE(std::sqrt(err / std::max(norm, 1e-300)), Tolerance(t));
}

struct ResidualCase {
  std::vector<int64_t> a_shape;  // [..., M, K]
  int64_t n;
  int64_t r_offset;  // elements R starts past an aligned allocation
};

TEST(CudaMatMulBiasResidual, MatchesFloat64Reference) {
  VIGIL_SKIP_WITHOUT_CUDA();
  const std::vector<ResidualCase> cases = {
      {{13, 127}, 33, 0}, {{3, 13, 127}, 33, 0}, {{13, 127}, 33, 1}, {{2, 197, 64}, 768, 0}, {{13, 0}, 33, 0}};
  uint32_t seed = 6100;
  for (DataType t : {kF32, kF16, kBF16}) {
    for (const ResidualCase& c : cases) {
      std::vector<int64_t> y_shape = c.a_shape;
      y_shape.back() = c.n;
      SCOPED_TRACE(fmt::format("A [{}] N {} R offset {} {}", fmt::join(c.a_shape, ","), c.n, c.r_offset,
                               ir::DataTypeName(t)));
      runtime::Tensor a = RandomTensor(t, c.a_shape, seed);
      runtime::Tensor w = RandomTensor(t, {c.a_shape.back(), c.n}, seed + 1);
      runtime::Tensor b = RandomTensor(t, {c.n}, seed + 2);
      runtime::Tensor r = RandomTensor(t, y_shape, seed + 3, -4, 4);
      seed += 4;
      auto got = RunOnDevice(a, w, b, &r, c.r_offset);
      ASSERT_TRUE(got.ok()) << got.status().ToString();
      ExpectClose(*got, y_shape, Reference(a, w, b, r), t);
      // The same shapes without R right after: its cached plan is not the
      // residual's, and R is not added.
      runtime::Tensor zero = runtime::Tensor::Allocate(t, y_shape).value();
      std::memset(zero.raw_data(), 0, zero.byte_size());
      auto plain = RunOnDevice(a, w, b, nullptr, 0);
      ASSERT_TRUE(plain.ok()) << plain.status().ToString();
      ExpectClose(*plain, y_shape, Reference(a, w, b, zero), t);
    }
  }
}

TEST(CudaMatMulBiasResidual, RefusesAResidualThatWouldBroadcast) {
  VIGIL_SKIP_WITHOUT_CUDA();
  runtime::Tensor a = RandomTensor(kF16, {13, 127}, 1);
  runtime::Tensor w = RandomTensor(kF16, {127, 33}, 2);
  runtime::Tensor b = RandomTensor(kF16, {33}, 3);
  for (std::vector<int64_t> shape : {std::vector<int64_t>{33}, {1, 33}, {2, 13, 33}}) {
    runtime::Tensor r = RandomTensor(kF16, shape, 4);
    auto got = RunOnDevice(a, w, b, &r, 0);
    ASSERT_FALSE(got.ok());
    EXPECT_NE(got.status().summary().find("input 3 (R)"), std::string::npos) << got.status().summary();
  }
  runtime::Tensor r32 = RandomTensor(kF32, {13, 33}, 5);
  EXPECT_FALSE(RunOnDevice(a, w, b, &r32, 0).ok());
}

// x -> MatMul(W) -> Add(B) -> Add(x2): a Linear layer and its residual.
ir::Model ResidualModel(const runtime::Tensor& x, const runtime::Tensor& w, const runtime::Tensor& b) {
  ir::Model m;
  m.ir_version = 8;
  m.opset_imports = {{"", 17}};
  m.graph.name = "residual";
  std::vector<int64_t> y_shape = x.shape();
  y_shape.back() = w.dim(1);
  ir::ValueInfo in, res, out;
  in.name = "x", in.has_type = true, in.type = ops::TensorType(x.dtype(), x.shape());
  res.name = "skip", res.has_type = true, res.type = ops::TensorType(x.dtype(), y_shape);
  out.name = "y";
  m.graph.inputs = {in, res};
  m.graph.outputs = {out};
  m.graph.initializers = {w.AsConstant("w"), b.AsConstant("b")};
  m.graph.nodes = {cpu::testing::MakeNode("MatMul", {"x", "w"}, {"p"}), cpu::testing::MakeNode("Add", {"p", "b"}, {"q"}),
                   cpu::testing::MakeNode("Add", {"skip", "q"}, {"y"})};
  return m;
}

TEST(CudaMatMulBiasResidual, SessionFusesTheResidualWithTheSameOutputs) {
  VIGIL_SKIP_WITHOUT_CUDA();
  for (DataType t : {kF32, kF16}) {
    SCOPED_TRACE(ir::DataTypeName(t));
    runtime::Tensor x = RandomTensor(t, {3, 13, 127}, 7000);
    runtime::Tensor w = RandomTensor(t, {127, 33}, 7001);
    runtime::Tensor b = RandomTensor(t, {33}, 7002);
    runtime::Tensor skip = RandomTensor(t, {3, 13, 33}, 7003);
    auto run = [&](std::vector<std::shared_ptr<const runtime::Backend>> backends,
                   size_t want_nodes) -> Result<runtime::Tensor> {
      runtime::SessionOptions options;
      options.backends = std::move(backends);
      VIGIL_ASSIGN_OR_RETURN(auto session, runtime::Session::Create(ResidualModel(x, w, b), options));
      EXPECT_EQ(session->model().graph.nodes.size(), want_nodes);
      VIGIL_ASSIGN_OR_RETURN(auto out, session->Run({{"x", t, x.shape(), x.raw_data(), x.byte_size(), ""},
                                                     {"skip", t, skip.shape(), skip.raw_data(), skip.byte_size(), ""}}));
      return std::move(out[0].tensor);
    };
    auto got = run({CudaBackendForTests(), cpu::MakeCpuBackend()}, 1);
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
