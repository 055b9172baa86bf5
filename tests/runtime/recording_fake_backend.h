// A fake device backend that can "record" a run, the way CUDA graphs do, so
// that the session's record-and-replay logic can be tested without a GPU.
// While recording, each node runs once (on whatever the buffers hold) and
// is remembered with its input and output tensors; a replay runs the same
// nodes again on the same buffers, writing into the recorded output
// addresses. A replay that computed from anything but the recorded buffers
// (a stale input pointer, an output copied from elsewhere) gives wrong
// results, which the tests compare against a CPU-only session.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "fake_device_backend.h"

namespace vigil::runtime::testing {

class RecordingFakeBackend : public FakeDeviceBackend {
 public:
  // A node of this op type fails while recording (as a kernel that must
  // synchronise would on a GPU); normal runs are unaffected.
  std::string fail_while_recording;

  mutable int begin_calls = 0;
  mutable int replays = 0;
  mutable int normal_node_runs = 0;

  Status Run(const ir::Node& node, int64_t opset, std::span<const Tensor* const> inputs, std::vector<Tensor>& outputs,
             OutputAllocator& allocator) const override {
    if (!recording_) {
      ++normal_node_runs;
      return FakeDeviceBackend::Run(node, opset, inputs, outputs, allocator);
    }
    if (node.op_type == fail_while_recording) {
      return UnsupportedError("{} cannot be recorded (test)", node.op_type);
    }
    VIGIL_RETURN_IF_ERROR(FakeDeviceBackend::Run(node, opset, inputs, outputs, allocator));
    Call call{node, opset, {}, outputs};
    for (const Tensor* t : inputs) call.inputs.push_back(t ? std::optional<Tensor>(*t) : std::nullopt);
    recording_->push_back(std::move(call));
    return Status::Ok();
  }

  Status BeginCapture() const override {
    ++begin_calls;
    recording_ = std::make_shared<std::vector<Call>>();
    return Status::Ok();
  }

  Result<std::shared_ptr<const void>> EndCapture() const override {
    auto calls = std::move(recording_);
    recording_.reset();
    return std::shared_ptr<const void>(calls, calls.get());
  }

  Status Replay(const void* graph) const override {
    ++replays;
    for (const Call& call : *static_cast<const std::vector<Call>*>(graph)) {
      std::vector<const Tensor*> in;
      for (const auto& t : call.inputs) in.push_back(t ? &*t : nullptr);
      std::vector<Tensor> out;
      FixedOutputs fixed(call.outputs);
      VIGIL_RETURN_IF_ERROR(FakeDeviceBackend::Run(call.node, call.opset, in, out, fixed));
      for (size_t i = 0; i < out.size() && i < call.outputs.size(); ++i) {
        // A kernel that returned a view instead of writing the recorded
        // buffer: copy, as a device graph's recorded copy would.
        if (out[i].raw_data() != call.outputs[i].raw_data() && out[i].byte_size() == call.outputs[i].byte_size() &&
            out[i].byte_size()) {
          std::memmove(const_cast<void*>(call.outputs[i].raw_data()), out[i].raw_data(), out[i].byte_size());
        }
      }
    }
    return Status::Ok();
  }

 private:
  struct Call {
    ir::Node node;
    int64_t opset;
    std::vector<std::optional<Tensor>> inputs;
    std::vector<Tensor> outputs;
  };
  // Hands each output the buffer it had while recording.
  class FixedOutputs : public OutputAllocator {
   public:
    explicit FixedOutputs(const std::vector<Tensor>& outputs) : outputs_(outputs) {}
    Result<Tensor> Allocate(size_t i, ir::DataType dtype, std::vector<int64_t> shape) override {
      if (i >= outputs_.size() || outputs_[i].dtype() != dtype || outputs_[i].shape() != shape) {
        return InternalError("replay: output {} differs from the recording", i);
      }
      return outputs_[i];
    }

   private:
    const std::vector<Tensor>& outputs_;
  };

  mutable std::shared_ptr<std::vector<Call>> recording_;
};

}  // namespace vigil::runtime::testing
