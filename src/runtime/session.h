// A loaded, validated model ready to run: load → validate → shape inference →
// constant folding → partition → plan → bind → execute.
//
// Run() is const and thread-safe: every run has its own values and arena.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "ir/fuse_qdq.h"
#include "ir/graph.h"
#include "runtime/backend.h"
#include "runtime/conv_layout.h"
#include "runtime/float16_compute.h"
#include "runtime/input_binding.h"
#include "runtime/memory_plan.h"
#include "runtime/tensor.h"

namespace vigil::runtime {

struct SessionOptions {
  // Backends in order of preference; each node goes to the first that
  // supports it. The CPU backend should be last, as the fallback.
  std::vector<std::shared_ptr<const Backend>> backends;
  // Evaluate nodes whose inputs are all constant once, at load.
  bool constant_folding = true;
  // Fail at load, naming the node, when the first backend cannot run a node
  // (instead of falling back to a later one).
  bool no_fallback = false;
  // kNhwcWhereFaster: float16/bfloat16 convolutions the device backend can run
  // channels-last are rewritten to NHWC at load (runtime/conv_layout.h).
  ConvLayout conv_layout = ConvLayout::kAsModel;
  // With kNhwcWhereFaster, float32 convolutions move channels-last too (the
  // library's sessions set it: on an H200 cuDNN's float32 convolutions, TF32
  // or exact, ran faster NHWC; runtime/conv_layout.h).
  bool nhwc_float32 = false;
  // Fold each inference BatchNormalization into the Conv before it, at load
  // (ir/fold_batch_norm.h): one node instead of two, and no BatchNormalization
  // to stop the NHWC layout pass. The result moves by float32 roundings of
  // the folded weights. The library sets it for CPU sessions.
  bool fold_batch_norm = false;
  // Rewrite Sigmoid(x) -> Mul(x, .) pairs as one ai.vigil.Silu
  // (ir/fuse_silu.h: one pass over the activation instead of three, the same
  // values bit for bit) and erf-GELU chains as one ai.vigil.Gelu
  // (ir/fuse_gelu.h: one pass instead of five; its own roundings), after the
  // layout pass. Device sessions fuse GELU anyway. The library sets it for
  // CPU sessions.
  bool fuse_activations = false;
  // Record runs as device graphs (CUDA graphs) and replay them: per thread
  // and input shapes, the first Run runs normally, the second records the
  // whole run and replays it, later ones replay (one launch instead of one
  // per node). Only where every node runs on the device backend; where a run
  // cannot be recorded it runs normally, and DeviceGraphNotes() says why.
  // Run with an observer never replays.
  bool device_graphs = false;
  // Non-null: run a float32 model in float16 (runtime/float16_compute.h);
  // says which node inputs may be float16.
  Float16InputFn float16_inputs;
};

struct NamedTensor {
  std::string name;
  Tensor tensor;
};

// How one run hands back its outputs.
struct RunOptions {
  // Outputs that a device node produces stay in device memory (each in its
  // own allocation; no copy to the host). Others come back on the host.
  bool outputs_on_device = false;
  // The caller's cudaStream_t: the run's device work starts after the work
  // already queued on it (which may be producing the inputs).
  void* wait_for_stream = nullptr;
  // The CUDA device the caller's device buffers are on (checked).
  int device_id = 0;
};

// Where each node runs; for `inspect` and verbose logs.
struct NodePlacement {
  size_t node_index;
  std::string node;     // "Conv 'conv1'"
  std::string backend;  // backend name
  std::string fallback_reason;  // why the preferred backend did not take it ("" if it did)
};

// What a NodeObserver is told just before a node runs.
struct NodeStart {
  size_t node_index;                // in model().graph.nodes (after load-time folding)
  const ir::Node* node;             // null: every node has run
  std::string_view backend;         // "cpu", "cuda" ("" when node is null)
  const std::string* input_shapes;  // "x: float32[1,3,224,224], W: float32[8,3,3,3]" (null when node is null)
};
// Called on the running thread before each node, and once after the last,
// with `node` null (and node_index the number of steps), before the outputs
// are read back, so that a profile does not count that copy as the last
// node's time. The crash guard (isolation/crash_guard.h) uses it to know
// which node a crash happened in.
using NodeObserver = std::function<void(const NodeStart&)>;

class Session {
 public:
  static Result<std::unique_ptr<Session>> Create(ir::Model model, SessionOptions options);
  ~Session();

  const ir::Model& model() const;
  const ModelInputs& inputs() const;
  const std::vector<ir::ValueInfo>& outputs() const;
  const std::vector<NodePlacement>& placement() const;
  // Each Conv, MatMul and Gemm of a QDQ chain on a device session: whether it runs in int8
  // (ir/fuse_qdq.h) and why not; empty for CPU sessions and float models.
  const std::vector<ir::QdqNote>& int8_notes() const;
  // Which way the layout pass took the device's float32 convolutions, and
  // why (runtime/conv_layout.h); empty when it was not asked.
  const std::string& layout_note() const;
  // What SessionOptions::float16_inputs changed (all zero without it).
  const Float16Summary& float16_summary() const;

  // Validates the inputs against the model, without running anything.
  // Positional bindings are resolved to names.
  Result<DimBindings> Check(std::vector<InputBinding>& inputs) const;

  // The memory plan for these input shapes (validates them first).
  Result<MemoryPlan> Plan(std::vector<InputBinding> inputs) const;
  // The same for named inputs of known dtypes and shapes that shape inference
  // gives rather than a caller (a control-flow body's entry values): the
  // bindings carry no data and are not checked.
  Result<MemoryPlan> PlanShapes(const std::vector<InputBinding>& shapes) const;

  // Validates and runs; returns the graph outputs in model order.
  Result<std::vector<NamedTensor>> Run(std::vector<InputBinding> inputs) const;
  Result<std::vector<NamedTensor>> Run(std::vector<InputBinding> inputs, const RunOptions& options) const;
  // Whether any node runs on a device backend.
  bool HasDeviceBackend() const;
  // A new, uninitialised device buffer of the session's device backend.
  Result<Tensor> AllocateDeviceBuffer(ir::DataType dtype, std::vector<int64_t> shape) const;
  // Copies `src` (host, or the device backend's memory) into `dst` of the
  // same byte size (host or device) and waits for the copy.
  Status CopyTensor(const Tensor& src, const Tensor& dst) const;
  // The same, telling `observer` about each node before it runs.
  Result<std::vector<NamedTensor>> Run(std::vector<InputBinding> inputs, const NodeObserver& observer) const;

  // A copy of a host tensor in the memory of the session's device backend,
  // to bind as an input with InputBinding::device (no copy per run).
  // InvalidInput when no node runs on a device.
  Result<Tensor> UploadInput(const Tensor& host) const;

  // A host tensor to fill with an input (or keep an output in) that the
  // session's device backend copies by DMA: page-locked memory on a GPU
  // backend, ordinary memory when no node runs on a device. Binding inputs
  // from such buffers makes each run's input copy several times faster.
  Result<Tensor> AllocateHostBuffer(ir::DataType dtype, std::vector<int64_t> shape) const;

  // What device_graphs did, one line per distinct outcome ("replaying a
  // recording of the whole run (161 steps)", "not used: ..."); empty before
  // the first run or when device_graphs is off.
  std::vector<std::string> DeviceGraphNotes() const;

  // What the session's backends report of their work (Backend::Notes: how
  // autotuning went), one line each.
  std::vector<std::string> BackendNotes() const;

  // Runs and also returns every intermediate value (for compare --per-node).
  Result<std::vector<NamedTensor>> RunKeepingAll(std::vector<InputBinding> inputs) const;

 private:
  struct State;
  explicit Session(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace vigil::runtime
