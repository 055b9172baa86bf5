// A large product (at least 2^31 multiply-adds) measures cuBLASLt's
// candidates on its first run without autotuning and keeps the fastest
// (matmul_cublaslt.cpp, WorthMeasuring): its output must be the product
// whichever algorithm won. float16 MatMulBias [2048 x 1024] by [1024 x 1024]
// (exactly 2^31), with and without the GELU epilogue, on a backend whose
// first run measures and on one whose first run keeps the heuristics' pick
// (VIGIL_MEASURE_PRODUCTS=0 while its plan is built): both against a float64
// reference on a sample of rows, and against each other. Y is poisoned
// with NaN first.
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "backends/cpu/kernel_test_util.h"
#include "backends/cuda/cuda_test_util.h"
#include "ir/fuse_matmul_bias.h"
#include "ir/layout_nhwc.h"  // kVigilDomain
#include "runtime/tensor_compare.h"  // ElementAsDouble

namespace vigil::cuda {
namespace {

using ir::DataType;
using testing::Backend;
using testing::CudaBackendForTests;
using testing::RunNodeFromHost;
using testing::RandomTensor;
using testing::Way;

constexpr int64_t kM = 2048, kK = 1024, kN = 1024;

ir::Node Product(bool gelu) {
  ir::Node node = cpu::testing::MakeNode(ir::kMatMulBiasOp, {"a", "w", "b"}, {"y"});
  node.domain = ir::kVigilDomain;
  if (gelu) node.attributes.push_back(ir::StringAttribute(ir::kMatMulBiasActivation, "gelu"));
  return node;
}

// Relative L2 distance of rows [0, 16) and [kM - 16, kM) of `y` from the
// float64 product (Gelu applied when `gelu`); non-finite elements counted.
double SampledError(const runtime::Tensor& y, const runtime::Tensor& a, const runtime::Tensor& w,
                    const runtime::Tensor& b, bool gelu, uint64_t* not_finite) {
  double err = 0, norm = 0;
  *not_finite = 0;
  for (int64_t i = 0; i < kM; ++i) {
    if (i == 16) i = kM - 16;
    for (int64_t j = 0; j < kN; ++j) {
      double acc = runtime::ElementAsDouble(b, static_cast<uint64_t>(j));
      for (int64_t l = 0; l < kK; ++l) {
        acc += runtime::ElementAsDouble(a, static_cast<uint64_t>(i * kK + l)) *
               runtime::ElementAsDouble(w, static_cast<uint64_t>(l * kN + j));
      }
      if (gelu) acc = 0.5 * acc * std::erfc(-acc / std::sqrt(2.0));
      const double g = runtime::ElementAsDouble(y, static_cast<uint64_t>(i * kN + j));
      if (!std::isfinite(g)) ++*not_finite;
      err += (g - acc) * (g - acc);
      norm += acc * acc;
    }
  }
  return std::sqrt(err / norm);
}

TEST(CudaMatMulMeasure, LargeProductsMeasureTheirAlgorithmAndStayExact) {
  VIGIL_SKIP_WITHOUT_CUDA();
  const float range = 1.7f / std::sqrt(static_cast<float>(kK));
  runtime::Tensor a = RandomTensor(DataType::kFloat16, {kM, kK}, 9100, -1.7f, 1.7f);
  runtime::Tensor w = RandomTensor(DataType::kFloat16, {kK, kN}, 9101, -range, range);
  runtime::Tensor b = RandomTensor(DataType::kFloat16, {kN}, 9102, -0.5f, 0.5f);
  auto measured_backend = CudaBackendForTests();
  auto first_pick_backend = Backend(Way::kFfma);  // another backend: its own plans (float16 is unaffected)
  ASSERT_TRUE(measured_backend && first_pick_backend);
  for (bool gelu : {false, true}) {
    SCOPED_TRACE(gelu ? "GELU epilogue" : "bias epilogue");
    auto measured = RunNodeFromHost(*measured_backend, Product(gelu), 1, {&a, &w, &b});
    Result<runtime::Tensor> first_pick = InternalError("not run");
    {
      setenv("VIGIL_MEASURE_PRODUCTS", "0", 1);
      first_pick = RunNodeFromHost(*first_pick_backend, Product(gelu), 1, {&a, &w, &b});
      unsetenv("VIGIL_MEASURE_PRODUCTS");
    }
    ASSERT_TRUE(measured.ok()) << measured.status().ToString();
    ASSERT_TRUE(first_pick.ok()) << first_pick.status().ToString();
    for (const runtime::Tensor* y : {&*measured, &*first_pick}) {
      uint64_t bad = 0;
      const double err = SampledError(*y, a, w, b, gelu, &bad);
      EXPECT_EQ(bad, 0u) << "elements not written (still NaN) or overflowed";
      EXPECT_LE(err, 2e-3);  // one float16 rounding of Y
    }
    runtime::TensorComparison cmp = runtime::CompareTensors(*first_pick, *measured, 1e300, 1e300);
    EXPECT_EQ(cmp.nan_mismatches, 0u);
    EXPECT_LE(cmp.rel_l2_error, 2e-3) << cmp.Describe();
  }
}

// With the session option measure_first_run off, the same product keeps the
// heuristics' pick, and the backend's notes say nothing was measured; on (a
// fresh backend), they count the one product.
TEST(CudaMatMulMeasure, TheOptionDecidesAndTheBackendSaysWhatWasMeasured) {
  VIGIL_SKIP_WITHOUT_CUDA();
  const float range = 1.7f / std::sqrt(static_cast<float>(kK));
  runtime::Tensor a = RandomTensor(DataType::kFloat16, {kM, kK}, 9200, -1.7f, 1.7f);
  runtime::Tensor w = RandomTensor(DataType::kFloat16, {kK, kN}, 9201, -range, range);
  runtime::Tensor b = RandomTensor(DataType::kFloat16, {kN}, 9202, -0.5f, 0.5f);
  for (bool measure : {true, false}) {
    SCOPED_TRACE(measure ? "measure_first_run on" : "measure_first_run off");
    backends::CudaBackendOptions o;
    o.measure_first_run = measure;
    auto loaded = backends::LoadCudaBackend(o);
    ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
    auto y = RunNodeFromHost(*loaded->backend, Product(false), 1, {&a, &w, &b});
    ASSERT_TRUE(y.ok()) << y.status().ToString();
    uint64_t bad = 0;
    EXPECT_LE(SampledError(*y, a, w, b, false, &bad), 2e-3);
    EXPECT_EQ(bad, 0u);
    const std::vector<std::string> notes = loaded->backend->Notes();
    if (measure) {
      ASSERT_EQ(notes.size(), 1u);
      EXPECT_NE(notes[0].find("0 convolution(s) and 1 matrix product(s)"), std::string::npos) << notes[0];
    } else {
      EXPECT_TRUE(notes.empty()) << notes[0];
    }
  }
}

}  // namespace
}  // namespace vigil::cuda
