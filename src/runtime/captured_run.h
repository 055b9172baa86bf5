// A run recorded once as a device graph (CUDA graphs) and replayed: one
// launch for the whole network instead of one host round trip per node,
// which is what batch-1 latency is made of.
//
// A recording is tied to one execution plan (one set of input shapes) and
// one thread (its stream). It owns every buffer the graph touches, so their
// addresses stay fixed: the device arena, one device buffer per input, and
// the memory the backend handed out while recording. A replay copies the
// caller's inputs into the input buffers, launches the graph and copies the
// outputs back to the host.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "runtime/execution.h"

namespace vigil::runtime {

class CapturedRun {
 public:
  // Whether `plan` can be recorded at all; on false, `why_not` says why
  // ("node 'x' runs on the cpu backend"). Recording may still fail later,
  // for reasons only the run itself shows (a kernel that must synchronise).
  static bool Recordable(const ir::Model& model, const ExecutionPlan& plan, std::string* why_not);

  // Records one run of `plan` with the shapes and dtypes of `inputs` (their
  // contents are not read). The plan's kernels should have run once before
  // at these shapes, so that library plans and workspaces exist: recording
  // allocates nothing it cannot keep. Unsupported when the backend or a
  // step cannot be recorded; nothing is left recording then.
  static Result<std::unique_ptr<CapturedRun>> Record(const ir::Model& model,
                                                     std::shared_ptr<const ExecutionPlan> plan,
                                                     const std::unordered_map<std::string, Tensor>& constants,
                                                     const std::unordered_map<std::string, Tensor>& device_constants,
                                                     const std::vector<InputBinding>& inputs);

  // Runs the recording on `inputs` (validated by the caller: same names,
  // dtypes and shapes as recorded); returns the graph outputs on the host.
  // Not for concurrent use: each thread records its own.
  // With outputs_on_device, device outputs come back as device copies.
  Result<std::vector<NamedTensor>> Replay(const std::vector<InputBinding>& inputs,
                                          bool outputs_on_device = false) const;

 private:
  CapturedRun() = default;

  std::shared_ptr<const ExecutionPlan> plan_;
  const Backend* device_ = nullptr;
  Tensor arena_;
  std::vector<NamedTensor> input_buffers_;  // device buffers the graph reads its inputs from
  std::vector<NamedTensor> outputs_;        // where the graph leaves each graph output
  std::vector<Tensor> kept_;                // host values moved to the device for the graph to read
  std::shared_ptr<const void> graph_;
};

}  // namespace vigil::runtime
