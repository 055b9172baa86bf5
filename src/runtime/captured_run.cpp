#include "runtime/captured_run.h"

#include <cstring>

#include <fmt/format.h>

#include "ops/attributes.h"

namespace vigil::runtime {
namespace {

bool IsGraphInput(const ir::Model& model, const std::string& name) {
  for (const ir::ValueInfo& vi : model.graph.inputs) {
    if (vi.name == name) return true;
  }
  return false;
}

Result<Tensor> HostCopy(const Tensor& t) {
  VIGIL_ASSIGN_OR_RETURN(Tensor c, Tensor::Allocate(t.dtype(), t.shape()));
  if (t.byte_size()) std::memcpy(c.raw_data(), t.raw_data(), t.byte_size());
  return c;
}

}  // namespace

bool CapturedRun::Recordable(const ir::Model& model, const ExecutionPlan& plan, std::string* why_not) {
  auto refuse = [&](std::string why) {
    if (why_not) *why_not = std::move(why);
    return false;
  };
  const Backend* dev = plan.device_backend;
  if (!dev) return refuse("no node runs on a device");
  for (const ExecutionStep& step : plan.steps) {
    const ir::Node& node = model.graph.nodes[step.node_index];
    if (step.backend != dev) {
      return refuse(fmt::format("{} runs on the {} backend; every node must run on the {} backend",
                                ops::NodeLabel(node), step.backend->name(), dev->name()));
    }
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      if (!node.inputs[i].empty() && dev->InputOnHost(node, step.opset, i) && IsGraphInput(model, node.inputs[i])) {
        return refuse(fmt::format("{} reads the graph input '{}' on the host", ops::NodeLabel(node), node.inputs[i]));
      }
    }
  }
  return true;
}

Result<std::unique_ptr<CapturedRun>> CapturedRun::Record(const ir::Model& model,
                                                         std::shared_ptr<const ExecutionPlan> plan,
                                                         const std::unordered_map<std::string, Tensor>& constants,
                                                         const std::unordered_map<std::string, Tensor>& device_constants,
                                                         const std::vector<InputBinding>& inputs) {
  std::string why_not;
  if (!Recordable(model, *plan, &why_not)) {
    return UnsupportedError("this run cannot be recorded as a graph: {}", why_not);
  }
  std::unique_ptr<CapturedRun> run(new CapturedRun);
  const Backend* dev = plan->device_backend;
  run->device_ = dev;
  run->plan_ = plan;

  // Everything the graph touches is allocated before recording, at
  // addresses the recording keeps.
  uint64_t arena_bytes = plan->device_memory.arena_bytes;
  uint64_t input_bytes = 0;
  for (const InputBinding& b : inputs) {
    auto count = ElementCount(b.shape);
    input_bytes += count ? ir::DataTypeStorageBytes(b.dtype, *count).value_or(0) : 0;
  }
  VIGIL_RETURN_IF_ERROR(dev->CheckDeviceMemory(arena_bytes + input_bytes, "the recorded run's arena and inputs"));
  if (arena_bytes > 0) {
    VIGIL_ASSIGN_OR_RETURN(run->arena_, dev->AllocateDevice(ir::DataType::kUint8, {static_cast<int64_t>(arena_bytes)}));
  }
  RunValues values(*plan, constants, device_constants);
  for (const InputBinding& b : inputs) {
    VIGIL_ASSIGN_OR_RETURN(Tensor buffer, dev->AllocateDevice(b.dtype, b.shape));
    values.Set(b.name, buffer);
    run->input_buffers_.push_back({b.name, std::move(buffer)});
  }
  // Host values that device steps read (plan-time folded values, constants
  // not uploaded at load) move now; a copy from host memory cannot be part
  // of the graph.
  for (const ExecutionStep& step : plan->steps) {
    const ir::Node& node = model.graph.nodes[step.node_index];
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      if (node.inputs[i].empty() || dev->InputOnHost(node, step.opset, i)) continue;
      const Tensor* t = values.Find(node.inputs[i]);
      if (!t || !t->on_host()) continue;
      VIGIL_ASSIGN_OR_RETURN(const Tensor* moved, values.In(node.inputs[i], dev->device()));
      run->kept_.push_back(*moved);
    }
  }
  VIGIL_RETURN_IF_ERROR(dev->Synchronize());

  VIGIL_RETURN_IF_ERROR(dev->BeginCapture());
  values.set_recording(true);
  const Tensor* arena = arena_bytes > 0 ? &run->arena_ : nullptr;
  Status steps = RunSteps(model, *plan, values, nullptr, arena, /*keep_all=*/false, nullptr, nullptr);
  if (steps.ok()) {
    for (const ir::ValueInfo& vi : model.graph.outputs) {
      const Tensor* t = values.Find(vi.name);
      if (!t) {
        steps = InternalError("graph output '{}' was not computed while recording", vi.name);
        break;
      }
      run->outputs_.push_back({vi.name, *t});
    }
  }
  // Always ends the recording, also after a failed step.
  Result<std::shared_ptr<const void>> graph = dev->EndCapture();
  if (!steps.ok()) return steps.WithContext("recording the run as a graph");
  if (!graph.ok()) return std::move(graph).TakeStatus().WithContext("recording the run as a graph");
  run->graph_ = std::move(graph).value();
  return run;
}

Result<std::vector<NamedTensor>> CapturedRun::Replay(const std::vector<InputBinding>& inputs,
                                                     bool outputs_on_device) const {
  for (const InputBinding& b : inputs) {
    const NamedTensor* buffer = nullptr;
    for (const NamedTensor& nt : input_buffers_) {
      if (nt.name == b.name) buffer = &nt;
    }
    if (!buffer || buffer->tensor.shape() != b.shape || buffer->tensor.dtype() != b.dtype) {
      return InternalError("input '{}' does not match the recorded run's inputs", b.name);
    }
    void* data = const_cast<void*>(b.data);
    Tensor src = b.device == Device::kHost ? Tensor::View(b.dtype, b.shape, data)
                                           : Tensor::OnDevice(b.device, b.dtype, b.shape, data, nullptr);
    VIGIL_RETURN_IF_ERROR(device_->CopyInto(src, buffer->tensor));
  }
  VIGIL_RETURN_IF_ERROR(device_->Replay(graph_.get()));
  std::vector<NamedTensor> result;
  for (const NamedTensor& out : outputs_) {
    Result<Tensor> host = out.tensor.on_host()  ? HostCopy(out.tensor)
                          : outputs_on_device ? CopyOwned(out.tensor, device_)
                                              : device_->ToHost(out.tensor);
    if (!host.ok()) return std::move(host).TakeStatus().WithContext(fmt::format("copying output '{}'", out.name));
    result.push_back({out.name, std::move(host).value()});
  }
  VIGIL_RETURN_IF_ERROR(device_->Synchronize());
  return result;
}

}  // namespace vigil::runtime
