// A device backend in name only, for session tests of the passes that run
// only when the first backend is a device: Device::kCuda tensors that live in
// host memory, every node run by the CPU kernels.
#pragma once

#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "runtime/backend.h"

namespace vigil::runtime::testing {

class FakeDeviceBackend : public Backend {
 public:
  std::string_view name() const override { return "fakegpu"; }
  Device device() const override { return Device::kCuda; }
  bool Supports(const ir::Node& node, int64_t opset) const override { return cpu_->Supports(node, opset); }
  bool InputOnHost(const ir::Node&, int64_t, size_t) const override { return false; }
  // Where set, the channels-last nodes the device prefers among those it
  // runs (the layout pass's question); unset: all of them.
  std::function<bool(const ir::Node&)> prefers;
  bool PrefersChannelsLast(const ir::Node& node, int64_t opset, const NodeTypes& types) const override {
    return Backend::PrefersChannelsLast(node, opset, types) && (!prefers || prefers(node));
  }
  Status Run(const ir::Node& node, int64_t opset, std::span<const Tensor* const> inputs, std::vector<Tensor>& outputs,
             OutputAllocator& allocator) const override {
    ++nodes_run;
    return cpu_->Run(node, opset, inputs, outputs, allocator);
  }
  // A device of `memory_bytes` (0: unlimited): the preflight refuses a run
  // that plans more. `planned` records what each run asked for.
  Status CheckDeviceMemory(uint64_t planned_bytes, const std::string& largest) const override {
    planned.push_back(planned_bytes);
    if (memory_bytes && planned_bytes > memory_bytes) {
      return OutOfMemoryError("the run needs {} bytes on the fake device of {} ({})", planned_bytes, memory_bytes,
                              largest);
    }
    return Status::Ok();
  }
  uint64_t memory_bytes = 0;
  mutable std::vector<uint64_t> planned;
  mutable int nodes_run = 0;
  Result<Tensor> AllocateDevice(ir::DataType dtype, std::vector<int64_t> shape) const override {
    VIGIL_ASSIGN_OR_RETURN(Tensor t, Tensor::Allocate(dtype, std::move(shape)));
    return Tensor::OnDevice(Device::kCuda, t.dtype(), t.shape(), t.raw_data(), t.storage());
  }
  Result<Tensor> ToDevice(const Tensor& host) const override {
    VIGIL_ASSIGN_OR_RETURN(Tensor t, AllocateDevice(host.dtype(), host.shape()));
    if (host.byte_size()) std::memcpy(t.raw_data(), host.raw_data(), host.byte_size());
    return t;
  }
  Status CopyInto(const Tensor& src, const Tensor& dst) const override {
    if (src.byte_size() != dst.byte_size()) return InternalError("CopyInto: sizes differ");
    if (src.byte_size()) std::memcpy(const_cast<void*>(dst.raw_data()), src.raw_data(), src.byte_size());
    return Status::Ok();
  }
  Result<Tensor> ToHost(const Tensor& device) const override {
    VIGIL_ASSIGN_OR_RETURN(Tensor t, Tensor::Allocate(device.dtype(), device.shape()));
    if (device.byte_size()) std::memcpy(t.raw_data(), device.raw_data(), device.byte_size());
    return t;
  }

 private:
  std::shared_ptr<const Backend> cpu_ = cpu::MakeCpuBackend();
};

}  // namespace vigil::runtime::testing
