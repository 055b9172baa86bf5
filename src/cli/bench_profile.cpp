#include "cli/bench_profile.h"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ops/attributes.h"

namespace vigil::cli {
namespace {

using Clock = std::chrono::steady_clock;

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

}  // namespace

Result<ProfileResult> ProfileRuns(const runtime::Session& session, const std::vector<runtime::InputBinding>& inputs,
                                  int runs) {
  ProfileResult result;
  std::map<size_t, size_t> slot;  // node index -> position in result.nodes
  std::vector<double> tails;
  for (int r = 0; r < runs; ++r) {
    std::vector<std::pair<size_t, Clock::time_point>> starts;
    runtime::NodeObserver observer = [&](const runtime::NodeStart& n) {
      starts.emplace_back(n.node_index, Clock::now());
      if (r == 0 && !slot.count(n.node_index)) {
        slot[n.node_index] = result.nodes.size();
        result.nodes.push_back({n.node_index, ops::NodeLabel(*n.node), n.node->op_type, std::string(n.backend), {}});
      }
    };
    const auto begin = Clock::now();
    auto out = session.Run(inputs, observer);
    const auto end = Clock::now();
    if (!out.ok()) return std::move(out).TakeStatus();
    for (size_t i = 0; i < starts.size(); ++i) {
      auto it = slot.find(starts[i].first);
      if (it == slot.end()) continue;  // a node that only ran after the first run: not expected
      const auto next = i + 1 < starts.size() ? starts[i + 1].second : end;
      result.nodes[it->second].ms.push_back(Ms(next - starts[i].second));
    }
    result.run_ms.push_back(Ms(end - begin));
  }
  return result;
}

std::string ProfileText(const ProfileResult& p, size_t top) {
  const double run = Median(p.run_ms);
  double nodes_total = 0;
  std::map<std::string, std::pair<double, int>> by_op;
  std::vector<std::pair<double, const NodeTiming*>> ranked;
  for (const NodeTiming& n : p.nodes) {
    const double m = Median(n.ms);
    nodes_total += m;
    by_op[n.op].first += m;
    by_op[n.op].second += 1;
    ranked.emplace_back(m, &n);
  }
  std::sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::string out = fmt::format(
      "profile: {} run(s), median {:.3f} ms per run (on a GPU: synchronised after every node); "
      "nodes {:.3f} ms, the rest (input copies, outputs to the host) {:.3f} ms\n",
      p.run_ms.size(), run, nodes_total, run - nodes_total);
  out += fmt::format("slowest nodes (median ms, % of the nodes' time):\n");
  for (size_t i = 0; i < ranked.size() && i < top; ++i) {
    const NodeTiming& n = *ranked[i].second;
    out += fmt::format("  {:>8.3f}  {:5.1f}%  #{:<4} {} [{}]\n", ranked[i].first,
                       nodes_total > 0 ? 100 * ranked[i].first / nodes_total : 0.0, n.node_index, n.label, n.backend);
  }
  std::vector<std::pair<double, std::string>> ops;
  for (const auto& [op, v] : by_op) ops.emplace_back(v.first, op);
  std::sort(ops.begin(), ops.end(), std::greater<>());
  out += "by op type (median ms summed over nodes, count, %):\n";
  for (const auto& [ms, op] : ops) {
    out += fmt::format("  {:>8.3f}  {:>4}  {:5.1f}%  {}\n", ms, by_op[op].second,
                       nodes_total > 0 ? 100 * ms / nodes_total : 0.0, op);
  }
  return out;
}

Status WriteChromeTrace(const ProfileResult& p, const std::string& path) {
  nlohmann::json events = nlohmann::json::array();
  double t = 0;
  for (const NodeTiming& n : p.nodes) {
    if (n.ms.empty()) continue;
    const double dur = n.ms.back();
    events.push_back({{"name", n.label}, {"cat", n.op}, {"ph", "X"}, {"ts", t * 1000}, {"dur", dur * 1000},
                      {"pid", 1}, {"tid", n.backend}, {"args", {{"node", n.node_index}}}});
    t += dur;
  }
  std::ofstream f(path);
  if (!f) return EnvironmentError("cannot write the profile trace '{}'", path);
  f << nlohmann::json({{"traceEvents", events}, {"displayTimeUnit", "ms"}}).dump(1) << "\n";
  if (!f) return EnvironmentError("cannot write the profile trace '{}'", path);
  return Status::Ok();
}

}  // namespace vigil::cli
