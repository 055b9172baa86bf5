#include "cli/reduce_search.h"

#include <map>

#include <fmt/format.h>

namespace vigil::cli {
namespace {

NodeSet Range(size_t first, size_t last) {
  NodeSet s;
  for (size_t i = first; i <= last; ++i) s.push_back(i);
  return s;
}

// Runs the predicate once per distinct set: the drop phase revisits sets the
// binary searches already checked, and a check may take seconds.
class Checker {
 public:
  Checker(const FailsPredicate& fails, const ReduceSearchOptions& options, ReduceSearchResult& result)
      : fails_(fails), options_(options), result_(result) {}

  bool Fails(const NodeSet& nodes, const char* phase) {
    auto it = cache_.find(nodes);
    if (it != cache_.end()) return it->second;
    ReduceStep step{static_cast<int>(result_.steps.size()) + 1, phase, nodes, fails_(nodes)};
    cache_.emplace(nodes, step.fails);
    result_.steps.push_back(step);
    if (options_.on_step) options_.on_step(step);
    return step.fails;
  }
  int checks() const { return static_cast<int>(result_.steps.size()); }

 private:
  const FailsPredicate& fails_;
  const ReduceSearchOptions& options_;
  ReduceSearchResult& result_;
  std::map<NodeSet, bool> cache_;
};

// Order in which the drop phase tries positions of `nodes`: the two ends,
// then the inside from the end (later nodes depend on earlier ones, so
// dropping from the end first keeps more of the recorded data flow intact).
std::vector<size_t> DropOrder(const NodeSet& nodes) {
  std::vector<size_t> order;
  if (nodes.empty()) return order;
  order.push_back(nodes.back());
  if (nodes.size() > 1) order.push_back(nodes.front());
  for (size_t i = nodes.size() - 1; i-- > 1;) order.push_back(nodes[i]);
  return order;
}

NodeSet Without(const NodeSet& nodes, size_t position) {
  NodeSet out;
  for (size_t p : nodes) {
    if (p != position) out.push_back(p);
  }
  return out;
}

}  // namespace

ReduceSearchResult ReduceSearch(size_t node_count, const FailsPredicate& fails, const ReduceSearchOptions& options) {
  ReduceSearchResult result;
  if (node_count == 0) return result;
  Checker checker(fails, options, result);
  const size_t last = node_count - 1;
  if (!checker.Fails(Range(0, last), "whole model")) return result;
  result.whole_fails = true;

  // Smallest end with [0, end] failing; `hi` always fails.
  size_t lo = 0, hi = last;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (checker.Fails(Range(0, mid), "prefix")) hi = mid;
    else lo = mid + 1;
  }
  const size_t end = hi;
  // Largest start with [start, end] failing; `lo` always fails.
  lo = 0;
  hi = end;
  while (lo < hi) {
    size_t mid = lo + (hi - lo + 1) / 2;
    if (checker.Fails(Range(mid, end), "start")) lo = mid;
    else hi = mid - 1;
  }
  result.nodes = Range(lo, end);

  // Drop single nodes while the check still fails, until a pass drops none.
  bool dropped = true;
  while (dropped && result.nodes.size() > 1) {
    dropped = false;
    for (size_t position : DropOrder(result.nodes)) {
      if (result.nodes.size() <= 1) break;
      if (checker.checks() >= options.max_checks) {
        result.budget_exhausted = true;
        return result;
      }
      NodeSet candidate = Without(result.nodes, position);
      if (checker.Fails(candidate, "drop")) {
        result.nodes = std::move(candidate);
        dropped = true;
      }
    }
  }
  return result;
}

std::string DescribeNodeSet(const NodeSet& nodes) {
  if (nodes.empty()) return "none (0 nodes)";
  const size_t count = nodes.size();
  const std::string n = fmt::format("({} node{})", count, count == 1 ? "" : "s");
  if (count == 1) return fmt::format("{} {}", nodes[0], n);
  const size_t span = nodes.back() - nodes.front() + 1;
  if (span == count) return fmt::format("{}..{} {}", nodes.front(), nodes.back(), n);
  if (count <= 8) {
    std::string list;
    for (size_t p : nodes) list += fmt::format("{}{}", list.empty() ? "" : ", ", p);
    return fmt::format("{} {}", list, n);
  }
  return fmt::format("{}..{} minus {} {}", nodes.front(), nodes.back(), span - count, n);
}

}  // namespace vigil::cli
