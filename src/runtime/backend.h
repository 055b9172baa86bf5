// The narrow interface between the session and a backend. A backend says
// which nodes it can run and runs one node at a time; the session plans,
// partitions, binds, moves data between host and device, and schedules.
// Versioned so that separately built modules (the CUDA backend,
// libvigil_cuda.so) can refuse a mismatched core.
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "ir/graph.h"
#include "runtime/tensor.h"

namespace vigil::runtime {

// 2: backends may keep their values in device memory (Device, transfers,
// SupportsTyped, InputOnHost, PlannedType).
// 3: device backends may record a run as a graph and replay it
// (BeginCapture, EndCapture, Replay, CopyInto).
// 4: Notes (what the backend did: autotuning) and AllocateHost (page-locked
// host buffers for inputs and outputs).
// 5: CheckPointer (is a caller's buffer where they say it is) and
// WaitForStream (order a run after a caller's stream).
// 6: Tensor may carry a sequence or an empty optional (Tensor::Kind), which
// changes its layout.
inline constexpr int kBackendInterfaceVersion = 6;

// Gives a node its output buffers: the run's arena slot when the memory plan
// has one of the right size for that output, a fresh buffer otherwise. The
// memory is the node's backend's: host memory for the CPU, device memory for
// a device backend.
class OutputAllocator {
 public:
  virtual ~OutputAllocator() = default;
  virtual Result<Tensor> Allocate(size_t output_index, ir::DataType dtype, std::vector<int64_t> shape) = 0;
  // The type that shape inference predicted for output i at this run's input
  // shapes, or null when it is not fully known. Device kernels size their
  // outputs from it instead of repeating each op's shape rules.
  virtual const ir::TypeInfo* PlannedType(size_t output_index) const { return nullptr; }
};

// The types load-time inference found for a node's inputs and outputs
// (null where unknown): enough to decide support by dtype.
struct NodeTypes {
  std::vector<const ir::TypeInfo*> inputs;
  std::vector<const ir::TypeInfo*> outputs;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string_view name() const = 0;
  // Where this backend's values live. Values move between host and device
  // only at partition boundaries, through the device backend.
  virtual Device device() const { return Device::kHost; }
  // Whether this backend has an implementation of the node's op at `opset`.
  virtual bool Supports(const ir::Node& node, int64_t opset) const = 0;
  // The same, knowing the node's types; on false, `why_not` (if given) says
  // what is missing ("dtype int8 of input 0"), for inspect and --no-fallback.
  virtual bool SupportsTyped(const ir::Node& node, int64_t opset, const NodeTypes& types,
                             std::string* why_not) const {
    bool ok = Supports(node, opset);
    if (!ok && why_not) *why_not = "no kernel for this op at this opset";
    return ok;
  }
  // Whether the session's layout pass (runtime/conv_layout.h) should write
  // `node`, one of its channels-last ops (ai.vigil.ConvNhwc, *PoolNhwc),
  // with these types for this backend: it runs it at least as well as the
  // NCHW op. A device backend: wherever it takes the node. A host backend
  // says so itself: the CPU takes every such node on reference kernels that
  // transpose, and says yes only where it has a fast path.
  virtual bool PrefersChannelsLast(const ir::Node& node, int64_t opset, const NodeTypes& types) const {
    return device() != Device::kHost && SupportsTyped(node, opset, types, nullptr);
  }
  // Whether input i is read on the host even by a device backend (shape,
  // axes, pads: small values a kernel needs before it launches).
  virtual bool InputOnHost(const ir::Node& node, int64_t opset, size_t input_index) const { return true; }
  // Runs one node. inputs[i] is null for an omitted optional input. The
  // backend fills `outputs` (one per node output) through `allocator` or with
  // views of its inputs.
  virtual Status Run(const ir::Node& node, int64_t opset, std::span<const Tensor* const> inputs,
                     std::vector<Tensor>& outputs, OutputAllocator& allocator) const = 0;

  // Device backends only (device() != kHost). Memory comes from the calling
  // thread's stream; copies are ordered on it.
  virtual Result<Tensor> AllocateDevice(ir::DataType dtype, std::vector<int64_t> shape) const {
    return InternalError("the {} backend has no device memory", name());
  }
  virtual Result<Tensor> ToDevice(const Tensor& host) const {
    return InternalError("the {} backend has no device memory", name());
  }
  // Waits for the calling thread's pending work and copies to host memory.
  virtual Result<Tensor> ToHost(const Tensor& device) const {
    return InternalError("the {} backend has no device memory", name());
  }
  // Waits for the calling thread's pending work; reports any error it raised.
  virtual Status Synchronize() const { return Status::Ok(); }
  // What the backend did that the user may want reported (one line each),
  // e.g. how autotuning went.
  virtual std::vector<std::string> Notes() const { return {}; }
  // A host tensor for data that moves to or from this backend's device: a
  // device backend gives page-locked memory (copied by DMA at full bus speed).
  virtual Result<Tensor> AllocateHost(ir::DataType dtype, std::vector<int64_t> shape) const {
    return Tensor::Allocate(dtype, std::move(shape));
  }
  // Called once per run before the first step, with the bytes the plan needs
  // on the device (arena + outputs); refuses a run that cannot fit.
  virtual Status CheckDeviceMemory(uint64_t planned_bytes, const std::string& largest_tensors) const {
    return Status::Ok();
  }
  // Copies `src` (host memory, or this backend's device) into the device
  // tensor `dst` of the same byte size, ordered on the calling thread's stream.
  virtual Status CopyInto(const Tensor& src, const Tensor& dst) const {
    return InternalError("the {} backend has no device memory", name());
  }

  // Whether `bytes` at `data` are where the caller says (`claimed`): host
  // memory given as device memory, or the reverse, or memory of another
  // device, is an InvalidInput naming `what` ("input 'x'"). Device backends
  // only; the host backend cannot tell and accepts.
  virtual Status CheckPointer(const void* data, size_t bytes, Device claimed, int device_id,
                              const std::string& what) const {
    return Status::Ok();
  }
  // Makes the calling thread's following device work wait for the work
  // already queued on `stream` (the caller's cudaStream_t).
  virtual Status WaitForStream(void* stream) const {
    return UnsupportedError("the {} backend has no streams", name());
  }

  // Recording (device backends that have graphs, e.g. CUDA graphs). Between
  // BeginCapture and EndCapture the calling thread's device work is recorded
  // instead of run; memory allocated meanwhile keeps its address for as long
  // as the recording lives. Unsupported: this backend cannot record.
  virtual Status BeginCapture() const {
    return UnsupportedError("the {} backend cannot record a run as a graph", name());
  }
  // Ends the recording and returns a replayable graph (opaque; released with
  // its last reference). Also ends a recording abandoned after a failed step.
  virtual Result<std::shared_ptr<const void>> EndCapture() const {
    return UnsupportedError("the {} backend cannot record a run as a graph", name());
  }
  // Queues one replay of `graph` on the calling thread's stream.
  virtual Status Replay(const void* graph) const {
    return UnsupportedError("the {} backend cannot record a run as a graph", name());
  }
};

}  // namespace vigil::runtime
