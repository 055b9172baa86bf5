// CUDA graph recording and replay (SessionOptions::device_graphs) on the
// GPU: replays with fresh inputs match the CPU reference, each thread and
// each input shape records its own graph, and replays are bitwise equal to
// node-by-node runs of the same deterministic session.
#include <cstring>
#include <thread>

#include <fmt/format.h>

#include "session_test_util.h"

namespace vigil::cuda::testing {
namespace {

std::unique_ptr<runtime::Session> CnnSession(bool graphs, bool deterministic = false) {
  backends::CudaBackendOptions o;
  o.deterministic = deterministic;
  return TinyCnnSession(o, graphs);
}

std::string Notes(const runtime::Session& s) {
  std::string all;
  for (const std::string& n : s.DeviceGraphNotes()) all += n + "\n";
  return all;
}

void ExpectMatchesCpu(const runtime::Tensor& x, const runtime::Tensor& got, const std::string& what) {
  runtime::Tensor want = TinyCnnCpuReference(x);
  auto cmp = runtime::CompareTensors(want, got, 1e300, 1e300);
  EXPECT_TRUE(cmp.same_shape) << what;
  EXPECT_EQ(cmp.nan_mismatches, 0u) << what;
  EXPECT_LE(cmp.rel_l2_error, 1e-4) << what << ": " << cmp.Describe();
}

TEST(CudaGraphs, ReplaysWithFreshInputsMatchTheCpu) {
  VIGIL_SKIP_WITHOUT_CUDA();
  auto session = CnnSession(/*graphs=*/true);
  ASSERT_TRUE(session);
  for (int run = 0; run < 6; ++run) {
    runtime::Tensor x = RandomTensor(ir::DataType::kFloat32, {3, 3, 32, 32}, 300 + run);
    auto out = session->Run(TinyCnnInput(x));
    ASSERT_TRUE(out.ok()) << "run " << run << ": " << out.status().ToString();
    ExpectMatchesCpu(x, (*out)[0].tensor, "run " + std::to_string(run));
  }
  EXPECT_NE(Notes(*session).find("replaying"), std::string::npos) << Notes(*session);
}

TEST(CudaGraphs, ReplaysAreBitwiseEqualToNodeByNodeRuns) {
  VIGIL_SKIP_WITHOUT_CUDA();
  auto graphs = CnnSession(true, /*deterministic=*/true);
  auto plain = CnnSession(false, /*deterministic=*/true);
  ASSERT_TRUE(graphs && plain);
  for (int run = 0; run < 4; ++run) {
    runtime::Tensor x = RandomTensor(ir::DataType::kFloat32, {2, 3, 32, 32}, 400 + run);
    auto a = graphs->Run(TinyCnnInput(x));
    auto b = plain->Run(TinyCnnInput(x));
    ASSERT_TRUE(a.ok() && b.ok()) << a.status().ToString() << b.status().ToString();
    const runtime::Tensor& ta = (*a)[0].tensor;
    const runtime::Tensor& tb = (*b)[0].tensor;
    ASSERT_EQ(ta.byte_size(), tb.byte_size());
    EXPECT_EQ(std::memcmp(ta.raw_data(), tb.raw_data(), ta.byte_size()), 0) << "run " << run;
  }
  EXPECT_NE(Notes(*graphs).find("replaying"), std::string::npos) << Notes(*graphs);
}

TEST(CudaGraphs, EachThreadAndShapeRecordsItsOwn) {
  VIGIL_SKIP_WITHOUT_CUDA();
  auto session = CnnSession(true);
  ASSERT_TRUE(session);
  constexpr int kThreads = 4;
  std::vector<std::string> errors(kThreads);
  std::vector<std::vector<std::pair<runtime::Tensor, runtime::Tensor>>> results(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int iter = 0; iter < 6; ++iter) {
        // Two shapes per thread, alternating: two recordings each.
        runtime::Tensor x = RandomTensor(ir::DataType::kFloat32, {1 + t + (iter % 2) * 4, 3, 32, 32}, 500 + 10 * t + iter);
        auto out = session->Run(TinyCnnInput(x));
        if (!out.ok()) {
          errors[t] = out.status().ToString();
          return;
        }
        results[t].emplace_back(x, (*out)[0].tensor);
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) {
    ASSERT_TRUE(errors[t].empty()) << "thread " << t << ": " << errors[t];
    for (size_t i = 0; i < results[t].size(); ++i) {
      ExpectMatchesCpu(results[t][i].first, results[t][i].second, fmt::format("thread {} run {}", t, i));
    }
  }
  EXPECT_NE(Notes(*session).find("replaying"), std::string::npos) << Notes(*session);
}

}  // namespace
}  // namespace vigil::cuda::testing
