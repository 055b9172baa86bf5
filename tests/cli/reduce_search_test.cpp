// The reduce search with synthetic predicates (no processes, no files).
#include "cli/reduce_search.h"

#include <algorithm>

#include <gtest/gtest.h>

namespace vigil::cli {
namespace {

bool Contains(const NodeSet& s, size_t p) { return std::find(s.begin(), s.end(), p) != s.end(); }

TEST(ReduceSearch, FindsTheOneBadNode) {
  int calls = 0;
  auto fails = [&](const NodeSet& s) {
    ++calls;
    return Contains(s, 57);
  };
  ReduceSearchResult r = ReduceSearch(120, fails);
  EXPECT_TRUE(r.whole_fails);
  EXPECT_EQ(r.nodes, NodeSet{57});
  EXPECT_FALSE(r.budget_exhausted);
  // 1 whole + ~7 + ~6 binary steps; the drop phase has nothing left to try.
  EXPECT_LE(calls, 16);
  EXPECT_EQ(static_cast<int>(r.steps.size()), calls);
  EXPECT_EQ(r.steps[0].phase, "whole model");
  EXPECT_TRUE(r.steps[0].fails);
}

TEST(ReduceSearch, KeepsTwoNodesThatMustBothBePresent) {
  auto fails = [](const NodeSet& s) { return Contains(s, 10) && Contains(s, 50); };
  ReduceSearchResult r = ReduceSearch(100, fails);
  EXPECT_EQ(r.nodes, (NodeSet{10, 50}));
  EXPECT_TRUE(r.steps.back().phase == "drop");
}

TEST(ReduceSearch, WholeModelOnlyKeepsEverything) {
  auto fails = [](const NodeSet& s) { return s.size() == 30; };
  ReduceSearchResult r = ReduceSearch(30, fails);
  EXPECT_TRUE(r.whole_fails);
  ASSERT_EQ(r.nodes.size(), 30u);
  EXPECT_EQ(r.nodes.front(), 0u);
  EXPECT_EQ(r.nodes.back(), 29u);
}

TEST(ReduceSearch, PassingModelHasNothingToReduce) {
  ReduceSearchResult r = ReduceSearch(10, [](const NodeSet&) { return false; });
  EXPECT_FALSE(r.whole_fails);
  EXPECT_TRUE(r.nodes.empty());
  EXPECT_EQ(r.steps.size(), 1u);
}

TEST(ReduceSearch, BudgetStopsTheDropPhaseWithAFailingSet) {
  // Fails whenever 5 and 40 are present: the drop phase has ~34 inner nodes to try.
  auto fails = [](const NodeSet& s) { return Contains(s, 5) && Contains(s, 40); };
  ReduceSearchOptions options;
  options.max_checks = 15;
  ReduceSearchResult r = ReduceSearch(50, fails, options);
  EXPECT_TRUE(r.budget_exhausted);
  EXPECT_LE(r.steps.size(), 15u);
  EXPECT_TRUE(fails(r.nodes));
  EXPECT_EQ(r.nodes.front(), 5u);
  EXPECT_EQ(r.nodes.back(), 40u);
}

TEST(ReduceSearch, EachSetIsCheckedOnceAndProgressIsReported) {
  std::vector<NodeSet> seen;
  ReduceSearchOptions options;
  int reported = 0;
  options.on_step = [&](const ReduceStep& step) {
    ++reported;
    EXPECT_EQ(step.number, reported);
  };
  auto fails = [&](const NodeSet& s) {
    EXPECT_EQ(std::count(seen.begin(), seen.end(), s), 0) << DescribeNodeSet(s);
    seen.push_back(s);
    return Contains(s, 3) && Contains(s, 4);
  };
  ReduceSearchResult r = ReduceSearch(8, fails, options);
  EXPECT_EQ(r.nodes, (NodeSet{3, 4}));
  EXPECT_EQ(reported, static_cast<int>(seen.size()));
}

TEST(ReduceSearch, EmptyModel) {
  ReduceSearchResult r = ReduceSearch(0, [](const NodeSet&) { return true; });
  EXPECT_FALSE(r.whole_fails);
  EXPECT_TRUE(r.steps.empty());
}

TEST(DescribeNodeSet, RangesListsAndGaps) {
  EXPECT_EQ(DescribeNodeSet({12}), "12 (1 node)");
  EXPECT_EQ(DescribeNodeSet({40, 41, 42}), "40..42 (3 nodes)");
  EXPECT_EQ(DescribeNodeSet({10, 50}), "10, 50 (2 nodes)");
  NodeSet gap;
  for (size_t i = 0; i < 20; ++i) {
    if (i != 7) gap.push_back(i);
  }
  EXPECT_EQ(DescribeNodeSet(gap), "0..19 minus 1 (19 nodes)");
  EXPECT_EQ(DescribeNodeSet({}), "none (0 nodes)");
}

}  // namespace
}  // namespace vigil::cli
