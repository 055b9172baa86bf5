#include "bench_profile.h"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>


namespace vigil::cli {
namespace {

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

ProfileResult ParseProfile(const std::string& text) {
  ProfileResult result;
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object()) return result;
  result.run_ms = j.value("run_ms", std::vector<double>{});
  for (const nlohmann::json& n : j.value("nodes", nlohmann::json::array())) {
    result.nodes.push_back({n.value("index", size_t{0}), n.value("node", std::string()), n.value("op", std::string()),
                            n.value("backend", std::string()), n.value("ms", std::vector<double>{})});
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

bool WriteChromeTrace(const ProfileResult& p, const std::string& path) {
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
  if (!f) return false;
  f << nlohmann::json({{"traceEvents", events}, {"displayTimeUnit", "ms"}}).dump(1, ' ', false,
                                                                               nlohmann::json::error_handler_t::replace)
    << "\n";
  return static_cast<bool>(f);
}

}  // namespace vigil::cli
