// ParallelFor (backends/cpu/parallel.h): every index exactly once, in
// disjoint contiguous chunks, on several threads where oneDNN's OpenMP pool
// is loaded and the work is large enough, on the calling thread alone under
// a thread limit of 1; and elementwise kernels that split their work give
// the serial results bit for bit.
#include "backends/cpu/parallel.h"

#include <atomic>
#include <cstring>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "backends/cpu/gemm.h"
#include "backends/cpu/kernel_test_util.h"
#include "ir/layout_nhwc.h"

namespace vigil::cpu {
namespace {

namespace kt = vigil::cpu::testing;

struct Seen {
  std::vector<std::atomic<int>> hits;
  std::mutex mu;
  std::set<std::thread::id> threads;
  std::vector<std::pair<int64_t, int64_t>> chunks;
  explicit Seen(int64_t n) : hits(static_cast<size_t>(n)) {}
};

void Cover(int64_t n, int64_t grain, Seen& seen) {
  ParallelFor(n, grain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) seen.hits[static_cast<size_t>(i)].fetch_add(1);
    std::lock_guard<std::mutex> lock(seen.mu);
    seen.threads.insert(std::this_thread::get_id());
    seen.chunks.emplace_back(begin, end);
  });
}

TEST(ParallelFor, CoversEveryIndexOnceInDisjointChunks) {
  for (int64_t n : {int64_t{0}, int64_t{1}, kParallelGrain * 2 - 1, kParallelGrain * 2, kParallelGrain * 7 + 13}) {
    SCOPED_TRACE(n);
    Seen seen(n);
    Cover(n, kParallelGrain, seen);
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(seen.hits[static_cast<size_t>(i)].load(), 1) << i;
    for (const auto& [b, e] : seen.chunks) EXPECT_LT(b, e);
    if (n < 2 * kParallelGrain) {
      EXPECT_LE(seen.chunks.size(), 1u);  // small work stays on one thread
    }
  }
  // Where the pool is there and the machine has cores, large work spreads.
  if (ParallelPoolAvailable() && std::thread::hardware_concurrency() > 1) {
    Seen seen(kParallelGrain * 8);
    Cover(kParallelGrain * 8, kParallelGrain, seen);
    EXPECT_GT(seen.chunks.size(), 1u);
    EXPECT_GT(seen.threads.size(), 1u);
  }
}

TEST(ParallelFor, ThreadLimitOneRunsOnTheCallingThread) {
  ScopedGemmThreadLimit one(1);
  Seen seen(kParallelGrain * 8);
  Cover(kParallelGrain * 8, kParallelGrain, seen);
  ASSERT_EQ(seen.chunks.size(), 1u);
  EXPECT_EQ(*seen.threads.begin(), std::this_thread::get_id());
}

// Add and Mul (same shapes and broadcast), Sigmoid, Softmax, large
// Transposes (NHWC <-> NCHW, and one that keeps the last axis), a linear
// Resize, channels-last MaxPool and GlobalAveragePool, and a Concat split
// across threads give what one thread gives, bit for bit.
TEST(ParallelFor, SplitKernelsMatchOneThread) {
  const std::vector<int64_t> shape{2, 64, 61, 67};
  const size_t n = 2 * 64 * 61 * 67;
  std::vector<float> a(n), b(n);
  for (size_t i = 0; i < n; ++i) {
    a[i] = static_cast<float>(i % 977) * 0.013f - 6.0f;
    b[i] = static_cast<float>(i % 331) * -0.021f + 3.0f;
  }
  runtime::Tensor ta = kt::MakeTensor(ir::DataType::kFloat32, shape, a);
  runtime::Tensor tb = kt::MakeTensor(ir::DataType::kFloat32, shape, b);
  // A bias along the last axis (short runs: whole runs split) and a scale
  // per (image, channel) as a squeeze-excitation block multiplies.
  std::vector<float> bias(67), scale(2 * 64);
  for (size_t i = 0; i < bias.size(); ++i) bias[i] = static_cast<float>(i) * 0.37f - 11.0f;
  for (size_t i = 0; i < scale.size(); ++i) scale[i] = static_cast<float>(i % 17) * 0.11f - 0.9f;
  runtime::Tensor row_bias = kt::MakeTensor(ir::DataType::kFloat32, {67}, bias);
  runtime::Tensor channel_scale = kt::MakeTensor(ir::DataType::kFloat32, {2, 64, 1, 1}, scale);
  runtime::Tensor scales = kt::MakeTensor(ir::DataType::kFloat32, {4}, std::vector<float>{1, 1, 2, 2});
  std::vector<float> gamma(67);
  for (size_t i = 0; i < gamma.size(); ++i) gamma[i] = static_cast<float>(i % 7) * 0.29f - 0.8f;
  runtime::Tensor row_scale = kt::MakeTensor(ir::DataType::kFloat32, {67}, gamma);
  std::vector<float> s128(128 * 256), g256(256), b256(256);
  for (size_t i = 0; i < s128.size(); ++i) s128[i] = static_cast<float>(i % 613) * 0.019f - 5.0f;
  for (size_t i = 0; i < g256.size(); ++i) {
    g256[i] = static_cast<float>(i % 11) * 0.17f - 0.6f;
    b256[i] = static_cast<float>(i % 5) * 0.3f - 0.7f;
  }
  runtime::Tensor small = kt::MakeTensor(ir::DataType::kFloat32, {128, 256}, s128);
  runtime::Tensor small_scale = kt::MakeTensor(ir::DataType::kFloat32, {256}, g256);
  runtime::Tensor small_bias = kt::MakeTensor(ir::DataType::kFloat32, {256}, b256);
  ir::Node resize = kt::MakeNode("Resize", {"a", "", "s"}, {"y"},
                                 {kt::StringAttr("mode", "linear"),
                                  kt::StringAttr("coordinate_transformation_mode", "half_pixel")});
  // As NHWC [2, 64, 61, 67]: 2 x 2 windows, stride 2.
  ir::Node pool = kt::MakeNode("MaxPoolNhwc", {"a"}, {"y"},
                               {kt::IntsAttr("kernel_shape", {2, 2}), kt::IntsAttr("strides", {2, 2})});
  pool.domain = ir::kVigilDomain;
  ir::Node gap = kt::MakeNode("GlobalAveragePoolNhwc", {"a"}, {"y"});  // 61 x 67 positions, 67 channels
  gap.domain = ir::kVigilDomain;
  struct Case {
    ir::Node node;
    int64_t opset;
    std::vector<const runtime::Tensor*> inputs;
  };
  std::vector<Case> cases = {
      {kt::MakeNode("Add", {"a", "b"}, {"y"}), 13, {&ta, &tb}},
      {kt::MakeNode("Sigmoid", {"a"}, {"y"}), 13, {&ta}},
      {kt::MakeNode("Transpose", {"a"}, {"y"}, {kt::IntsAttr("perm", {0, 2, 3, 1})}), 13, {&ta}},
      {kt::MakeNode("Transpose", {"a"}, {"y"}, {kt::IntsAttr("perm", {0, 3, 1, 2})}), 13, {&ta}},
      {resize, 13, {&ta, nullptr, &scales}},
      {kt::MakeNode("Concat", {"a", "b"}, {"y"}, {kt::IntAttr("axis", 1)}), 13, {&ta, &tb}},
      {pool, 1, {&ta}},
      {gap, 1, {&ta}},
      {kt::MakeNode("Add", {"a", "c"}, {"y"}), 13, {&ta, &row_bias}},
      {kt::MakeNode("Mul", {"a", "c"}, {"y"}), 13, {&ta, &channel_scale}},
      {kt::MakeNode("Transpose", {"a"}, {"y"}, {kt::IntsAttr("perm", {0, 2, 1, 3})}), 13, {&ta}},
      {kt::MakeNode("Softmax", {"a"}, {"y"}, {kt::IntAttr("axis", -1)}), 13, {&ta}},
      // The compute-heavy kernels split from kComputeGrain: on these and on
      // a small transformer's [128, 256] activation (one kParallelGrain).
      {kt::MakeNode("LayerNormalization", {"a", "g", "c"}, {"y"}, {kt::IntAttr("axis", -1)}), 17,
       {&ta, &row_scale, &row_bias}},
      {kt::MakeNode("Gelu", {"a"}, {"y"}), 20, {&ta}},
      {kt::MakeNode("LayerNormalization", {"a", "g", "c"}, {"y"}, {kt::IntAttr("axis", -1)}), 17,
       {&small, &small_scale, &small_bias}},
      {kt::MakeNode("Softmax", {"a"}, {"y"}, {kt::IntAttr("axis", -1)}), 13, {&small}},
      {kt::MakeNode("Gelu", {"a"}, {"y"}), 20, {&small}},
  };
  for (const auto& [node, opset, inputs] : cases) {
    SCOPED_TRACE(node.op_type);
    std::vector<runtime::Tensor> one, all;
    {
      ScopedGemmThreadLimit limit(1);
      auto r = kt::RunKernel(node, opset, inputs);
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      one = std::move(*r);
    }
    auto r = kt::RunKernel(node, opset, inputs);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    all = std::move(*r);
    ASSERT_EQ(one[0].byte_size(), all[0].byte_size());
    EXPECT_EQ(std::memcmp(one[0].raw_data(), all[0].raw_data(), one[0].byte_size()), 0);
  }
}

}  // namespace
}  // namespace vigil::cpu
