// `vigil bench --profile FILE`: time per node, as the library measures it
// (vigil_session_profile; with the CUDA backend the session is created with
// enable_profiling, so every node is followed by a stream synchronisation and
// the host time between two node starts is the node's device time plus its
// launch cost). Prints the nodes and op types that
// take the most time and writes one run as a Chrome trace (chrome://tracing,
// https://ui.perfetto.dev).
#pragma once

#include <string>
#include <vector>


namespace vigil::cli {

struct NodeTiming {
  size_t node_index = 0;
  std::string label;    // "Conv 'conv1'"
  std::string op;       // "Conv"
  std::string backend;  // "cuda"
  std::vector<double> ms;  // one per profiled run
};

struct ProfileResult {
  std::vector<NodeTiming> nodes;  // in execution order
  std::vector<double> run_ms;     // whole runs, profiled (synchronised per node)
};

// The library's profile JSON ({"run_ms", "nodes": [{"index", "node", "op",
// "backend", "ms"}]}) as a ProfileResult.
ProfileResult ParseProfile(const std::string& json);

// The report: the `top` slowest nodes and the time per op type (medians).
std::string ProfileText(const ProfileResult& profile, size_t top);

// Writes the last profiled run as Chrome trace-event JSON; false when the
// file cannot be written.
bool WriteChromeTrace(const ProfileResult& profile, const std::string& path);

}  // namespace vigil::cli
