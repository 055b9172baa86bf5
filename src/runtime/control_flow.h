// If, Loop and Scan: each body runs as a session of its own, made on first
// use with the enclosing session's backends (so a body's nodes run on the
// device where the device has kernels for them) and kept for later runs.
//
// Before planning, a session appends to every control-flow node the values
// its bodies read from enclosing graphs (AppendImplicitInputs): the planner
// then keeps them alive until the node has run and orders the node after
// their producers, and constant folding keeps them. The node's own inputs
// come first (ops::ExplicitInputCount).
//
// The condition, the trip count and the scan slicing are read on the host;
// a body's values move to the device and back at each iteration, as the
// body's session places them.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "ir/graph.h"
#include "runtime/backend.h"
#include "runtime/session.h"

namespace vigil::runtime {

// Appends each control-flow node's implicit inputs to its inputs; returns
// how many nodes changed.
size_t AppendImplicitInputs(ir::Graph& graph);

// The backend that runs the control-flow nodes of one session.
class ControlFlowBackend final : public Backend {
 public:
  // `model` gives the opset imports and functions the bodies see; `options`
  // the backends their sessions use.
  ControlFlowBackend(const ir::Model& model, SessionOptions options);
  ~ControlFlowBackend() override;

  std::string_view name() const override { return "control-flow"; }
  // If, Loop, Scan, SequenceMap, and the nodes that make or read sequences
  // and optionals (runtime/sequence_ops.h), which SupportsTyped finds.
  bool Supports(const ir::Node& node, int64_t opset) const override;
  bool SupportsTyped(const ir::Node& node, int64_t opset, const NodeTypes& types,
                     std::string* why_not) const override;
  Status Run(const ir::Node& node, int64_t opset, std::span<const Tensor* const> inputs,
             std::vector<Tensor>& outputs, OutputAllocator& allocator) const override;

  // With a device backend among the session's, If and Loop take their
  // values (all but the condition and the trip count) where they are, give
  // them to the bodies in place, and keep the bodies' outputs on the device:
  // loop-carried values stay there between iterations. Scan slices and
  // stacks on the host. The device methods are the device backend's.
  Device device() const override;
  bool InputOnHost(const ir::Node& node, int64_t opset, size_t input_index) const override;
  Result<Tensor> AllocateDevice(ir::DataType dtype, std::vector<int64_t> shape) const override;
  Result<Tensor> ToDevice(const Tensor& host) const override;
  Result<Tensor> ToHost(const Tensor& device) const override;
  Status Synchronize() const override;
  Result<Tensor> AllocateHost(ir::DataType dtype, std::vector<int64_t> shape) const override;
  Status CheckDeviceMemory(uint64_t planned_bytes, const std::string& largest_tensors) const override;
  Status CopyInto(const Tensor& src, const Tensor& dst) const override;
  Status CheckPointer(const void* data, size_t bytes, Device claimed, int device_id,
                      const std::string& what) const override;
  Status WaitForStream(void* stream) const override;

  // What the bodies of `node` (If, Loop, Scan, SequenceMap) need while it
  // runs, each planned at the shapes the node gives it on entry:
  // `input_types` are the node's inputs' (implicit ones included), null where
  // unknown. Bodies whose entry shapes are not all known are named in
  // `unplanned`. Makes the body sessions it plans.
  Result<BodyMemory> PlanBodies(const ir::Node& node, int64_t opset,
                                const std::vector<const ir::TypeInfo*>& input_types) const;

  // The body sessions made so far (for tests).
  size_t BodySessionCount() const;

 private:
  struct Bound {
    std::string name;
    const Tensor* tensor;
  };
  // Runs `body` with the values bound to its inputs (by name, in the body's
  // input order, then the names it reads from enclosing graphs).
  // `on_device`: device values are bound in place and outputs the body
  // computes on the device stay there.
  Result<std::vector<Tensor>> RunBody(const std::shared_ptr<ir::Graph>& body, const std::vector<Bound>& bound,
                                      const ir::Node& node, bool on_device = false) const;
  // A one-element value read on the host (a condition the body returned on
  // the device).
  Result<int64_t> HostScalar(const ir::Node& node, const Tensor& t, const char* what) const;
  // Per-iteration outputs stacked along a new axis 0, on the device when the
  // parts are there.
  Result<Tensor> StackIterations(const ir::Node& node, const std::vector<Tensor>& parts, size_t output_index) const;
  // The session of `body` for inputs of these kinds, dtypes and ranks (their
  // dims are unknown), made on first use.
  Result<const Session*> BodySession(const std::shared_ptr<ir::Graph>& body, const std::vector<ir::ValueInfo>& inputs,
                                     const ir::Node& node) const;
  Status RunIf(const ir::Node& node, std::span<const Tensor* const> inputs, std::vector<Tensor>& outputs) const;
  Status RunLoop(const ir::Node& node, std::span<const Tensor* const> inputs, std::vector<Tensor>& outputs) const;
  Status RunScan(const ir::Node& node, int64_t opset, std::span<const Tensor* const> inputs,
                 std::vector<Tensor>& outputs) const;
  Status RunSequenceMap(const ir::Node& node, std::span<const Tensor* const> inputs,
                        std::vector<Tensor>& outputs) const;
  struct ScanSpec {
    std::vector<size_t> in_axes;
    std::vector<int64_t> in_dirs, out_axes, out_dirs;
    size_t scan_outputs = 0;
  };
  Result<std::vector<Tensor>> ScanOnce(const ir::Node& node, const std::shared_ptr<ir::Graph>& body,
                                       const ScanSpec& spec, std::vector<Tensor> state,
                                       const std::vector<const Tensor*>& scan_in,
                                       const std::vector<std::pair<std::string, const Tensor*>>& free) const;

  ir::Model shell_;  // the enclosing model without its graph
  SessionOptions options_;
  const Backend* device_ = nullptr;  // the first device backend of options_, if any
  mutable std::mutex mutex_;
  mutable std::map<std::pair<const ir::Graph*, std::string>, std::unique_ptr<Session>> sessions_;
};

}  // namespace vigil::runtime
