#include "api/session_profile.h"

#include <chrono>
#include <map>
#include <optional>

#include "ops/attributes.h"

namespace vigil::api {
namespace {

using Clock = std::chrono::steady_clock;

double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

}  // namespace

Result<nlohmann::json> ProfileRuns(const runtime::Session& session, const std::vector<runtime::InputBinding>& inputs,
                                   int runs) {
  nlohmann::json nodes = nlohmann::json::array();
  std::vector<std::vector<double>> node_ms;
  std::vector<double> run_ms;
  std::map<size_t, size_t> slot;  // node index -> position in nodes
  for (int r = 0; r < runs; ++r) {
    std::vector<std::pair<size_t, Clock::time_point>> starts;
    std::optional<Clock::time_point> nodes_done;  // the last node's end: the outputs' copy is not its time
    runtime::NodeObserver observer = [&](const runtime::NodeStart& n) {
      if (!n.node) {
        nodes_done = Clock::now();
        return;
      }
      starts.emplace_back(n.node_index, Clock::now());
      if (r == 0 && !slot.count(n.node_index)) {
        slot[n.node_index] = nodes.size();
        nodes.push_back({{"index", n.node_index},
                         {"node", ops::NodeLabel(*n.node)},
                         {"op", n.node->op_type},
                         {"backend", std::string(n.backend)}});
        node_ms.emplace_back();
      }
    };
    const auto begin = Clock::now();
    auto out = session.Run(inputs, observer);
    const auto end = Clock::now();
    if (!out.ok()) return std::move(out).TakeStatus();
    for (size_t i = 0; i < starts.size(); ++i) {
      auto it = slot.find(starts[i].first);
      if (it == slot.end()) continue;  // a node that only ran after the first run: not expected
      const auto next = i + 1 < starts.size() ? starts[i + 1].second : nodes_done.value_or(end);
      node_ms[it->second].push_back(Ms(next - starts[i].second));
    }
    run_ms.push_back(Ms(end - begin));
  }
  for (size_t i = 0; i < nodes.size(); ++i) nodes[i]["ms"] = node_ms[i];
  return nlohmann::json{{"run_ms", run_ms}, {"nodes", nodes}};
}

}  // namespace vigil::api
