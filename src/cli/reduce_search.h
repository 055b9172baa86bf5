// The search behind `vigil reduce`: the smallest set of nodes (positions in
// execution order) for which a check still fails. Independent of processes
// and files: the caller supplies the predicate, so tests drive it with
// synthetic ones.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace vigil::cli {

// Positions 0..n-1 in execution order, ascending, no duplicates.
using NodeSet = std::vector<size_t>;

// True when the check fails for the subgraph made of these positions.
using FailsPredicate = std::function<bool(const NodeSet&)>;

struct ReduceStep {
  int number = 0;      // 1, 2, ... (cached repeats are not steps)
  std::string phase;   // "whole model", "prefix", "start", "drop"
  NodeSet nodes;
  bool fails = false;
};

struct ReduceSearchResult {
  bool whole_fails = false;  // false: nothing to reduce, `nodes` is empty
  NodeSet nodes;             // the smallest failing set found
  std::vector<ReduceStep> steps;
  bool budget_exhausted = false;  // the drop phase stopped at max_checks
};

struct ReduceSearchOptions {
  // Checks allowed in all (the whole model, the two binary searches, and the
  // node drops); the drop phase stops when they run out.
  int max_checks = 200;
  // Called after each check, for progress output.
  std::function<void(const ReduceStep&)> on_step;
};

// 1. Checks the whole model; stops if it passes.
// 2. Binary search for the smallest failing prefix [0, end].
// 3. Binary search for the largest start with [start, end] failing.
// 4. Tries dropping single nodes (the ends first, then the inside, from the
//    end) while the check still fails, repeating until nothing more can go.
// The binary searches assume that a failing set's supersets among prefixes
// (suffixes) fail too; the result fails in any case, since only sets that
// were seen to fail are kept.
ReduceSearchResult ReduceSearch(size_t node_count, const FailsPredicate& fails,
                                const ReduceSearchOptions& options = {});

// "40..79 (40 nodes)", "40..79 minus 3 (37 nodes)", "12 (1 node)".
std::string DescribeNodeSet(const NodeSet& nodes);

}  // namespace vigil::cli
