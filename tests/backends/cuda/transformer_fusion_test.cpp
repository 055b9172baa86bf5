// The transformer fast paths on the GPU against the CPU reference:
// ai.vigil.MatMulBias (MatMul + Add fused by the session for a device
// backend, run as one cuBLASLt product with a bias epilogue) and
// LayerNormalization's vectorised kernel (16-byte loads, rows in registers)
// at transformer widths and odd ones that take the generic kernels.
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/kernel_test_util.h"
#include "backends/cuda/cuda_test_util.h"
#include "vigil/float16.h"
#include "ir/fuse_gelu.h"
#include "ir/fuse_matmul_bias.h"
#include "runtime/tensor_compare.h"

namespace vigil::cuda {
namespace {

using cpu::testing::FloatAttr;
using ir::DataType;
using testing::ExpectCudaMatchesCpu;
using testing::NodeCase;
using testing::RandomTensor;

constexpr DataType kF32 = DataType::kFloat32;
constexpr DataType kF16 = DataType::kFloat16;
constexpr DataType kBF16 = DataType::kBfloat16;

double Tol(DataType t, double f32) { return t == kF32 ? f32 : t == kF16 ? 1e-2 : 2e-2; }

std::string Join(const std::vector<int64_t>& v) {
  std::string s;
  for (int64_t d : v) s += (s.empty() ? "" : ",") + std::to_string(d);
  return s;
}

// x -> MatMul(W [K, N], constant) -> Add(B [N], constant) -> y.
ir::Model LinearModel(const runtime::Tensor& a, const runtime::Tensor& w, const runtime::Tensor& b) {
  ir::Model m;
  m.ir_version = 8;
  m.opset_imports = {{"", 17}};
  m.graph.name = "linear";
  ir::ValueInfo x;
  x.name = "x";
  x.has_type = true;
  x.type = ops::TensorType(a.dtype(), a.shape());
  m.graph.inputs = {x};
  ir::ValueInfo y;
  y.name = "y";
  m.graph.outputs = {y};
  m.graph.initializers = {w.AsConstant("w"), b.AsConstant("b")};
  ir::Node mm;
  mm.op_type = "MatMul";
  mm.name = "fc";
  mm.inputs = {"x", "w"};
  mm.outputs = {"p"};
  ir::Node add;
  add.op_type = "Add";
  add.name = "fc_bias";
  add.inputs = {"p", "b"};
  add.outputs = {"y"};
  m.graph.nodes = {mm, add};
  return m;
}

Result<runtime::Tensor> RunLinear(const runtime::Tensor& a, const runtime::Tensor& w, const runtime::Tensor& b,
                                  std::vector<std::shared_ptr<const runtime::Backend>> backends, bool expect_fused) {
  runtime::SessionOptions options;
  options.backends = std::move(backends);
  options.no_fallback = expect_fused;
  VIGIL_ASSIGN_OR_RETURN(auto session, runtime::Session::Create(LinearModel(a, w, b), options));
  size_t fused = 0;
  for (const ir::Node& n : session->model().graph.nodes) fused += n.op_type == ir::kMatMulBiasOp;
  EXPECT_EQ(fused, expect_fused ? 1u : 0u);
  VIGIL_ASSIGN_OR_RETURN(auto out, session->Run({{"x", a.dtype(), a.shape(), a.raw_data(), a.byte_size(), ""}}));
  return std::move(out[0].tensor);
}

TEST(CudaMatMulBias, MatchesCpuMatMulThenAdd) {
  VIGIL_SKIP_WITHOUT_CUDA();
  auto cuda = testing::CudaBackendForTests();
  uint32_t seed = 3000;
  const std::vector<std::vector<int64_t>> a_shapes = {{13, 127}, {3, 13, 127}, {2, 3, 13, 64}, {197, 768}};
  for (DataType t : {kF32, kF16, kBF16}) {
    for (const auto& as : a_shapes) {
      for (int64_t n : {int64_t{13}, int64_t{127}, int64_t{768}}) {
        SCOPED_TRACE(fmt::format("A [{}] N {} {}", Join(as), n, ir::DataTypeName(t)));
        runtime::Tensor a = RandomTensor(t, as, seed);
        runtime::Tensor w = RandomTensor(t, {as.back(), n}, seed + 1);
        runtime::Tensor b = RandomTensor(t, {n}, seed + 2);
        seed += 3;
        auto got = RunLinear(a, w, b, {cuda, cpu::MakeCpuBackend()}, true);
        auto want = RunLinear(a, w, b, {cpu::MakeCpuBackend()}, false);
        ASSERT_TRUE(got.ok()) << got.status().ToString();
        ASSERT_TRUE(want.ok()) << want.status().ToString();
        runtime::TensorComparison cmp = runtime::CompareTensors(*want, *got, 1e300, 1e300);
        EXPECT_TRUE(cmp.same_dtype && cmp.same_shape) << got->Describe() << " vs " << want->Describe();
        EXPECT_EQ(cmp.nan_mismatches, 0u);
        EXPECT_LE(cmp.rel_l2_error, Tol(t, 1e-5)) << cmp.Describe();
      }
    }
  }
}

runtime::Tensor Scalar(DataType t, float v) {
  runtime::Tensor s = runtime::Tensor::Allocate(t, {}).value();
  if (t == kF32) s.data<float>()[0] = v;
  if (t == kF16) s.data<uint16_t>()[0] = FloatToFloat16(v);
  if (t == kBF16) s.data<uint16_t>()[0] = FloatToBfloat16(v);
  return s;
}

// x -> Div(x, sqrt 2) -> Erf -> Add(1) -> Mul(x) -> Mul(0.5) -> y, in x's dtype.
ir::Model GeluModel(const runtime::Tensor& x) {
  ir::Model m;
  m.ir_version = 8;
  m.opset_imports = {{"", 17}};
  m.graph.name = "gelu";
  ir::ValueInfo in;
  in.name = "x";
  in.has_type = true;
  in.type = ops::TensorType(x.dtype(), x.shape());
  m.graph.inputs = {in};
  ir::ValueInfo out;
  out.name = "y";
  m.graph.outputs = {out};
  m.graph.initializers = {Scalar(x.dtype(), 1.4142135f).AsConstant("c"), Scalar(x.dtype(), 1.0f).AsConstant("one"),
                          Scalar(x.dtype(), 0.5f).AsConstant("half")};
  auto node = [](const char* op, std::vector<std::string> in, std::string out) {
    ir::Node n;
    n.op_type = op;
    n.name = out;
    n.inputs = std::move(in);
    n.outputs = {std::move(out)};
    return n;
  };
  m.graph.nodes = {node("Div", {"x", "c"}, "d"), node("Erf", {"d"}, "e"), node("Add", {"e", "one"}, "f"),
                   node("Mul", {"x", "f"}, "g"), node("Mul", {"g", "half"}, "y")};
  return m;
}

TEST(CudaGelu, FusedChainMatchesCpuChain) {
  VIGIL_SKIP_WITHOUT_CUDA();
  auto cuda = testing::CudaBackendForTests();
  uint32_t seed = 3700;
  for (DataType t : {kF32, kF16, kBF16}) {
    for (const std::vector<int64_t>& shape : {std::vector<int64_t>{4, 197, 3072}, std::vector<int64_t>{13, 127}}) {
      SCOPED_TRACE(fmt::format("x [{}] {}", Join(shape), ir::DataTypeName(t)));
      runtime::Tensor x = RandomTensor(t, shape, seed++, -6, 6);
      auto run = [&](std::vector<std::shared_ptr<const runtime::Backend>> backends,
                     bool device) -> Result<runtime::Tensor> {
        runtime::SessionOptions options;
        options.backends = std::move(backends);
        options.no_fallback = device;
        VIGIL_ASSIGN_OR_RETURN(auto session, runtime::Session::Create(GeluModel(x), options));
        size_t gelus = 0;
        for (const ir::Node& n : session->model().graph.nodes) gelus += n.op_type == ir::kGeluOp;
        EXPECT_EQ(gelus, device ? 1u : 0u);
        VIGIL_ASSIGN_OR_RETURN(auto out, session->Run({{"x", t, x.shape(), x.raw_data(), x.byte_size(), ""}}));
        return std::move(out[0].tensor);
      };
      auto got = run({cuda, cpu::MakeCpuBackend()}, true);
      auto want = run({cpu::MakeCpuBackend()}, false);
      ASSERT_TRUE(got.ok()) << got.status().ToString();
      ASSERT_TRUE(want.ok()) << want.status().ToString();
      runtime::TensorComparison cmp = runtime::CompareTensors(*want, *got, 1e300, 1e300);
      EXPECT_TRUE(cmp.same_dtype && cmp.same_shape);
      EXPECT_EQ(cmp.nan_mismatches, 0u);
      EXPECT_LE(cmp.rel_l2_error, Tol(t, 1e-5)) << cmp.Describe();
    }
  }
}

NodeCase LayerNorm(DataType t, std::vector<int64_t> shape, bool bias, size_t outputs, uint32_t seed) {
  NodeCase c;
  c.op = "LayerNormalization";
  c.opset = 17;
  const std::vector<int64_t> row = {shape.back()};
  c.inputs = {RandomTensor(t, shape, seed, -2, 3), RandomTensor(t, row, seed + 1),
              bias ? RandomTensor(t, row, seed + 2) : runtime::Tensor()};
  c.attributes = {FloatAttr("epsilon", 1e-5f)};
  c.outputs = outputs;
  return c;
}

TEST(CudaLayerNorm, TransformerAndOddWidths) {
  VIGIL_SKIP_WITHOUT_CUDA();
  uint32_t seed = 3500;
  // 768 and 4096 take the vectorised kernel (a warp or a block per row);
  // 13, 127 and 1030 are not multiples of a 16-byte vector and take the
  // generic ones; 8 is one vector per row (fp16). 644, 1024, 1288 and 2040
  // give the warp kernel 5 to 8 vectors a lane (float32 644: 161 vectors,
  // 6 a lane with the last partial; float16 2040: 255, 8 a lane) or, past
  // 256 vectors, the block kernel (float32 2040).
  const std::vector<std::vector<int64_t>> shapes = {{64, 197, 768}, {5, 768},   {7, 13},  {3, 5, 127},
                                                    {9, 1030},      {6, 4096},  {11, 8},  {4, 2048},
                                                    {13, 644},      {3, 1024},  {5, 1288}, {2, 2040}};
  for (DataType t : {kF32, kF16, kBF16}) {
    for (const auto& shape : shapes) {
      for (bool bias : {true, false}) {
        SCOPED_TRACE(fmt::format("shape [{}] bias {} {}", Join(shape), bias, ir::DataTypeName(t)));
        ExpectCudaMatchesCpu(LayerNorm(t, shape, bias, 1, seed), Tol(t, 1e-4));
        seed += 3;
      }
    }
    // The Mean and InvStdDev outputs from the vectorised kernel.
    SCOPED_TRACE(fmt::format("statistics {}", ir::DataTypeName(t)));
    ExpectCudaMatchesCpu(LayerNorm(t, {33, 768}, true, 3, seed), Tol(t, 1e-4));
    ExpectCudaMatchesCpu(LayerNorm(t, {5, 4096}, true, 3, seed + 3), Tol(t, 1e-4));
    seed += 6;
  }
}

}  // namespace
}  // namespace vigil::cuda
