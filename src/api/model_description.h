// What the library tells about a model and a session, as JSON: the model's
// interface and contents (what `vigil inspect` shows), where each node runs,
// and the session's notes. Clients render it; they never see the IR.
#pragma once

#include <nlohmann/json.hpp>

#include "api/session_factory.h"
#include "base/status.h"
#include "ir/graph.h"

namespace vigil::api {

// {"model", "ir_version", "producer", "opsets", "inputs", "outputs", "nodes",
//  "nodes_including_subgraphs", "subgraphs", "ops": {op: count}, "parameters",
//  "parameter_bytes", "functions"}; with_shapes adds "node_shapes":
//  [{"index", "node", "outputs", "flops"}] and "flops".
Result<nlohmann::json> DescribeModel(const ir::Model& model, bool with_shapes);

// Where nodes run: {"backends": [...], "nodes_per_backend": {backend: n},
//  "fallbacks": [{"node", "backend", "reason"}]}.
nlohmann::json DescribeSession(const AssembledSession& session);

// {"cuda_module", "cuda_stack", "backends", "fallbacks": [...],
//  "nhwc_convolutions", "transposes", "cuda_graphs": [...], "backend_notes": [...]}
nlohmann::json SessionNotesJson(const AssembledSession& session);

}  // namespace vigil::api
