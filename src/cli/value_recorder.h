// Records every intermediate value of one CPU run of a model, for `vigil
// reduce`: a candidate subgraph is fed the values its cut-off inputs had in
// the run of the whole model.
//
// The model under reduction is by definition one that fails, and it may fail
// by crashing the process that runs it (a kernel that faults). So the
// recording runs in forked children and ships the values back as .npy files:
//  1. the whole model with Session::RunKeepingAll, then any value that run
//     did not return (folded at load or plan time) node by node;
//  2. if that child fails or dies, node by node from the start: each node as
//     a one-node session, each value written as soon as it exists. When a
//     node kills the child, the parent marks that node as failed and starts a
//     new child that goes on after it, with what was recorded so far.
// Values that depend on a failed node cannot be recorded; `types` still has
// their inferred types where shape inference knows them.
#pragma once

#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "ir/graph.h"
#include "runtime/input_binding.h"
#include "runtime/tensor.h"

namespace vigil::cli {

struct RecordedValues {
  std::unordered_map<std::string, runtime::Tensor> values;  // graph inputs and node outputs, on the host
  std::unordered_map<std::string, ir::TypeInfo> types;      // recorded values' exact types, inferred for others
  std::string method;                                       // how the values were recorded, for the report
  // Nodes (indices into model.graph.nodes) the recording could not run, and why.
  std::map<size_t, std::string> failed_nodes;
};

struct RecordOptions {
  std::string dir;         // where the children write .npy files (must exist)
  int timeout_ms = 600000; // per child
};

// `order` is an execution order of model.graph.nodes; `inputs` are named
// bindings of the model's required inputs. Fails only when nothing can be
// recorded at all (e.g. the first child cannot be started).
Result<RecordedValues> RecordValues(const ir::Model& model, const std::vector<size_t>& order,
                                    const std::vector<runtime::InputBinding>& inputs, const RecordOptions& options);

// The exact type of a host tensor: its dtype and its dims, all known.
ir::TypeInfo TypeOfTensor(const runtime::Tensor& t);

}  // namespace vigil::cli
