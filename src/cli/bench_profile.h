// `vigil bench --profile FILE`: time per node. With the CUDA backend every
// node is followed by a stream synchronisation (VIGIL_CUDA_SYNC=1, set before
// the backend is created), so the host time between two node starts is the
// node's device time plus its launch cost. Prints the nodes and op types that
// take the most time and writes one run as a Chrome trace (chrome://tracing,
// https://ui.perfetto.dev).
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "runtime/session.h"

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

// Runs the session `runs` times, timing every node.
Result<ProfileResult> ProfileRuns(const runtime::Session& session, const std::vector<runtime::InputBinding>& inputs,
                                  int runs);

// The report: the `top` slowest nodes and the time per op type (medians).
std::string ProfileText(const ProfileResult& profile, size_t top);

// Writes the last profiled run as Chrome trace-event JSON.
Status WriteChromeTrace(const ProfileResult& profile, const std::string& path);

}  // namespace vigil::cli
