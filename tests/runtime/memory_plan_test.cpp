#include "runtime/memory_plan.h"

#include <gtest/gtest.h>

namespace vigil::runtime {
namespace {

// No two tensors whose lifetimes overlap may share bytes.
void ExpectNoConflicts(const MemoryPlan& plan) {
  for (size_t i = 0; i < plan.tensors.size(); ++i) {
    for (size_t j = i + 1; j < plan.tensors.size(); ++j) {
      const PlannedTensor& a = plan.tensors[i];
      const PlannedTensor& b = plan.tensors[j];
      bool live_together = a.first_step <= b.last_step && b.first_step <= a.last_step;
      bool share_bytes = a.offset < b.offset + b.bytes && b.offset < a.offset + a.bytes;
      EXPECT_FALSE(live_together && share_bytes && a.bytes && b.bytes) << a.name << " and " << b.name;
    }
    EXPECT_EQ(plan.tensors[i].offset % kArenaAlignment, 0u);
    EXPECT_LE(plan.tensors[i].offset + plan.tensors[i].bytes, plan.arena_bytes);
  }
}

TEST(MemoryPlan, ChainReusesMemory) {
  // a -> b -> c -> d, each 1 KiB, each read only by the next step: at most two
  // are live at once, so the arena needs 2 KiB, not 4.
  std::vector<LifetimeRequest> r = {{"a", 1024, 0, 1}, {"b", 1024, 1, 2}, {"c", 1024, 2, 3}, {"d", 1024, 3, 4}};
  MemoryPlan plan = PlanMemory(r);
  ExpectNoConflicts(plan);
  EXPECT_EQ(plan.peak_live_bytes, 2048u);
  EXPECT_EQ(plan.arena_bytes, 2048u);
}

TEST(MemoryPlan, AllLiveTogetherNeedTheSum) {
  std::vector<LifetimeRequest> r = {{"a", 100, 0, 5}, {"b", 200, 0, 5}, {"c", 300, 0, 5}};
  MemoryPlan plan = PlanMemory(r);
  ExpectNoConflicts(plan);
  EXPECT_EQ(plan.arena_bytes, 128u + 256u + 320u);  // each rounded up to 64
}

TEST(MemoryPlan, SmallTensorFillsAGap) {
  // big1 [0,1], big2 [2,3] share offset 0; small lives across both and must
  // not overlap either.
  std::vector<LifetimeRequest> r = {{"big1", 4096, 0, 1}, {"big2", 4096, 2, 3}, {"small", 64, 0, 3}};
  MemoryPlan plan = PlanMemory(r);
  ExpectNoConflicts(plan);
  EXPECT_EQ(plan.arena_bytes, 4096u + 64u);
}

TEST(MemoryPlan, RandomLifetimesNeverConflict) {
  uint64_t seed = 12345;
  auto next = [&] { return (seed = seed * 6364136223846793005ull + 1442695040888963407ull) >> 33; };
  for (int round = 0; round < 50; ++round) {
    std::vector<LifetimeRequest> r;
    for (int i = 0; i < 40; ++i) {
      size_t a = next() % 30, len = next() % 8;
      r.push_back({"t" + std::to_string(i), 1 + next() % 5000, a, a + len});
    }
    MemoryPlan plan = PlanMemory(r);
    ExpectNoConflicts(plan);
    EXPECT_GE(plan.arena_bytes, plan.peak_live_bytes);
  }
}

TEST(MemoryPlan, Empty) {
  MemoryPlan plan = PlanMemory({});
  EXPECT_EQ(plan.arena_bytes, 0u);
  EXPECT_TRUE(plan.tensors.empty());
}

}  // namespace
}  // namespace vigil::runtime
