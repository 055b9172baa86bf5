// Per-node timing of a session (vigil_session_profile, `vigil bench
// --profile`): the host time between two node starts. With the CUDA backend
// created with enable_profiling every node is followed by a stream
// synchronisation, so that time is the node's device time plus its launch.
#pragma once

#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"
#include "runtime/session.h"

namespace vigil::api {

// Runs `runs` times: {"run_ms": [...], "nodes": [{"index", "node", "op",
// "backend", "ms": [...]}]} in execution order.
Result<nlohmann::json> ProfileRuns(const runtime::Session& session, const std::vector<runtime::InputBinding>& inputs,
                                   int runs);

}  // namespace vigil::api
