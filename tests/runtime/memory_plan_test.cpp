#include "runtime/memory_plan.h"

#include <gtest/gtest.h>

#include "runtime/execution.h"

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

// A session's host arenas: a run reuses an arena a finished run gave back
// (the same memory, not new pages), runs in flight hold different ones, and
// a plan larger than every free arena gets a new one while a free one that
// is too small is dropped.
TEST(HostArenaPool, ReusesGivenBackArenasAndNeverSharesOneInFlight) {
  HostArenaPool pool;
  auto a = pool.Take(4096);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  const void* first = a->raw_data();
  EXPECT_GE(a->byte_size(), 4096u);
  auto b = pool.Take(4096);  // a is still in use
  ASSERT_TRUE(b.ok());
  EXPECT_NE(b->raw_data(), first);
  pool.Give(std::move(*a));
  auto c = pool.Take(1000);  // the smallest free arena that holds it
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->raw_data(), first);
  pool.Give(std::move(*b));
  pool.Give(std::move(*c));
  auto big = pool.Take(1 << 20);  // larger than both: a new one, one small one dropped
  ASSERT_TRUE(big.ok());
  EXPECT_GE(big->byte_size(), uint64_t{1} << 20);
  pool.Give(std::move(*big));
  auto again = pool.Take(1 << 20);
  ASSERT_TRUE(again.ok());
  EXPECT_GE(again->byte_size(), uint64_t{1} << 20);
  auto small = pool.Take(4096);  // the one small arena left
  ASSERT_TRUE(small.ok());
  auto fresh = pool.Take(4096);  // none left: a new one
  ASSERT_TRUE(fresh.ok());
  EXPECT_NE(small->raw_data(), fresh->raw_data());
  EXPECT_NE(small->raw_data(), again->raw_data());
}

}  // namespace
}  // namespace vigil::runtime
