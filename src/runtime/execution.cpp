#include "runtime/execution.h"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "ops/attributes.h"
#include "ops/shape_helpers.h"
#include "runtime/control_flow.h"

namespace vigil::runtime {
namespace {

std::unordered_map<std::string, std::string> AliasSources(const ir::Model& model,
                                                          const std::vector<ExecutionStep>& steps) {
  std::unordered_map<std::string, std::string> alias_of;
  for (const ExecutionStep& s : steps) {
    const ir::Node& node = model.graph.nodes[s.node_index];
    if (MayAliasInput(node) && !node.outputs.empty() && !node.outputs[0].empty() && !node.inputs.empty()) {
      alias_of[node.outputs[0]] = node.inputs[0];
    }
  }
  return alias_of;
}

std::string Root(const std::unordered_map<std::string, std::string>& alias_of, std::string v) {
  for (auto it = alias_of.find(v); it != alias_of.end(); it = alias_of.find(v)) v = it->second;
  return v;
}

bool StepOnDevice(const ExecutionStep& s) { return s.backend->device() != Device::kHost; }

void PlanArena(const ir::Model& model, ExecutionPlan& plan) {
  auto alias_of = AliasSources(model, plan.steps);
  // A root lives as long as any view of it; a view that is a graph output
  // keeps its root out of the arena (the caller gets it after the run).
  std::unordered_map<std::string, size_t> root_last_use;
  std::unordered_set<std::string> unplannable;
  for (const auto& [view, src] : alias_of) {
    std::string root = Root(alias_of, view);
    auto it = plan.last_use.find(view);
    if (it != plan.last_use.end()) root_last_use[root] = std::max(root_last_use[root], it->second);
    if (plan.graph_outputs.count(view)) unplannable.insert(root);
  }
  std::vector<LifetimeRequest> requests[2];  // host, device
  std::vector<std::string> dynamic;
  for (size_t pos = 0; pos < plan.steps.size(); ++pos) {
    const ir::Node& node = model.graph.nodes[plan.steps[pos].node_index];
    bool device = StepOnDevice(plan.steps[pos]);
    for (const std::string& out : node.outputs) {
      if (out.empty()) continue;
      if (device) plan.on_device.insert(out);
      if (alias_of.count(out) || plan.graph_outputs.count(out) || unplannable.count(out)) continue;
      auto type = plan.types.find(out);
      auto dims = type == plan.types.end() ? std::nullopt : ops::KnownDims(&type->second);
      auto count = dims ? ElementCount(*dims) : std::nullopt;
      auto bytes = count ? ir::DataTypeStorageBytes(type->second.elem_type, *count) : std::nullopt;
      if (!bytes) {
        dynamic.push_back(out);
        continue;
      }
      size_t last = pos;
      if (auto it = plan.last_use.find(out); it != plan.last_use.end()) last = std::max(last, it->second);
      if (auto it = root_last_use.find(out); it != root_last_use.end()) last = std::max(last, it->second);
      requests[device ? 1 : 0].push_back({out, *bytes, pos, last});
    }
  }
  plan.memory = PlanMemory(std::move(requests[0]));
  plan.memory.dynamic = std::move(dynamic);
  plan.device_memory = PlanMemory(std::move(requests[1]));
  for (const PlannedTensor& t : plan.memory.tensors) plan.slots[t.name] = {t.offset, t.bytes};
  for (const PlannedTensor& t : plan.device_memory.tensors) plan.slots[t.name] = {t.offset, t.bytes};
}

// Hands out arena slots where the plan has one that fits, fresh memory
// otherwise; device steps get device memory.
class PlannedAllocator : public OutputAllocator {
 public:
  PlannedAllocator(const ExecutionPlan& plan, const ExecutionStep& step, const ir::Node& node, const Backend& backend,
                   const Tensor* arena)
      : plan_(plan), step_(step), node_(node), backend_(backend), arena_(arena) {}

  Result<Tensor> Allocate(size_t i, ir::DataType dtype, std::vector<int64_t> shape) override {
    bool device = backend_.device() != Device::kHost;
    if (arena_ && i < step_.output_slot.size() && step_.output_slot[i]) {
      const ArenaSlot& slot = *step_.output_slot[i];
      auto count = ElementCount(shape);
      auto bytes = count ? ir::DataTypeStorageBytes(dtype, *count) : std::nullopt;
      if (bytes && *bytes <= slot.bytes) {
        auto* base = static_cast<uint8_t*>(const_cast<void*>(arena_->raw_data()));
        return Tensor::OnDevice(arena_->device(), dtype, std::move(shape), base + slot.offset, arena_->storage());
      }
    }
    if (device) return backend_.AllocateDevice(dtype, std::move(shape));
    return Tensor::Allocate(dtype, std::move(shape));
  }

  const ir::TypeInfo* PlannedType(size_t i) const override {
    if (i >= node_.outputs.size() || node_.outputs[i].empty()) return nullptr;
    auto it = plan_.types.find(node_.outputs[i]);
    if (it == plan_.types.end() || !ops::KnownDims(&it->second)) return nullptr;
    return &it->second;
  }

 private:
  const ExecutionPlan& plan_;
  const ExecutionStep& step_;
  const ir::Node& node_;
  const Backend& backend_;
  const Tensor* arena_;
};

// A copy with memory of its own, in the same place as `t`.
Result<Tensor> Copy(const Tensor& t, const Backend* device_backend) {
  if (!t.on_host()) {
    VIGIL_ASSIGN_OR_RETURN(Tensor copy, device_backend->AllocateDevice(t.dtype(), t.shape()));
    VIGIL_RETURN_IF_ERROR(device_backend->CopyInto(t, copy));
    return copy;
  }
  VIGIL_ASSIGN_OR_RETURN(Tensor c, Tensor::Allocate(t.dtype(), t.shape()));
  if (t.byte_size()) std::memcpy(c.raw_data(), t.raw_data(), t.byte_size());
  return c;
}

bool InArena(const Tensor& t, const Tensor* arena) {
  if (!arena || !t.raw_data() || t.device() != arena->device()) return false;
  auto* p = static_cast<const uint8_t*>(t.raw_data());
  auto* base = static_cast<const uint8_t*>(arena->raw_data());
  return p >= base && p < base + arena->byte_size();
}

std::string InputShapes(const ir::Node& node, const std::vector<const Tensor*>& inputs) {
  std::string s;
  for (size_t i = 0; i < inputs.size(); ++i) {
    s += fmt::format("{}{} = {}", i ? ", " : "", node.inputs[i].empty() ? "(omitted)" : node.inputs[i],
                     inputs[i] ? inputs[i]->Describe() : "none");
  }
  return s;
}

// Checks a node's outputs against what shape inference predicted: a mismatch
// is a bug in a kernel or in an op's shape inference, and must not pass.
Status CheckOutputs(const ir::Node& node, size_t index, const ExecutionPlan& plan, const std::vector<Tensor>& outs) {
  for (size_t i = 0; i < node.outputs.size(); ++i) {
    if (node.outputs[i].empty()) continue;
    if (i >= outs.size() || (outs[i].is_dense() && outs[i].dtype() == ir::DataType::kUndefined)) {
      return InternalError("{} (node #{}) did not produce its output {} '{}'", ops::NodeLabel(node), index, i,
                           node.outputs[i]);
    }
    auto t = plan.types.find(node.outputs[i]);
    if (t == plan.types.end() || t->second.kind != ir::TypeInfo::Kind::kTensor) continue;
    bool dtype_known = t->second.elem_type != ir::DataType::kUndefined;
    auto dims = ops::KnownDims(&t->second);
    if ((dtype_known && outs[i].dtype() != t->second.elem_type) || (dims && *dims != outs[i].shape())) {
      return InternalError("{} (node #{}) produced {} for output '{}', shape inference predicted {}",
                           ops::NodeLabel(node), index, outs[i].Describe(), node.outputs[i],
                           ir::TypeToString(t->second))
          .WithCause("a bug in the op's kernel or in its shape inference");
    }
  }
  return Status::Ok();
}

}  // namespace

bool MayAliasInput(const ir::Node& node) {
  static const std::unordered_set<std::string> kViews = {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity",
                                                         "BitCast"};
  return (node.domain.empty() || node.domain == "ai.onnx") && kViews.count(node.op_type);
}

Result<std::shared_ptr<const ExecutionPlan>> BuildExecutionPlan(const ir::Model& model,
                                                                const std::vector<size_t>& order,
                                                                const std::vector<const Backend*>& node_backend,
                                                                InferredGraph inferred, BodyMemory bodies) {
  auto plan = std::make_shared<ExecutionPlan>();
  for (const ir::ValueInfo& out : model.graph.outputs) plan->graph_outputs.insert(out.name);
  for (size_t i : order) {
    const ir::Node& node = model.graph.nodes[i];
    if (inferred.folded_nodes.count(i)) {
      for (const std::string& out : node.outputs) {
        if (!out.empty()) plan->plan_values[out] = inferred.values.at(out);
      }
      continue;
    }
    plan->steps.push_back({i, node_backend[i], model.OpsetVersion(node.domain)});
    if (!plan->device_backend && node_backend[i]->device() != Device::kHost) plan->device_backend = node_backend[i];
  }
  for (size_t pos = 0; pos < plan->steps.size(); ++pos) {
    const ir::Node& node = model.graph.nodes[plan->steps[pos].node_index];
    for (const std::string& in : node.inputs) {
      if (!in.empty()) plan->last_use[in] = pos;
    }
  }
  plan->types = std::move(inferred.types);
  plan->bodies = std::move(bodies);
  PlanArena(model, *plan);
  // What each step frees and where its outputs go, by position (the slots
  // map's elements stay where they are: it is not changed after this).
  for (size_t pos = 0; pos < plan->steps.size(); ++pos) {
    ExecutionStep& step = plan->steps[pos];
    const ir::Node& node = model.graph.nodes[step.node_index];
    step.frees_input.assign(node.inputs.size(), 0);
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      const std::string& name = node.inputs[i];
      auto last = plan->last_use.find(name);
      step.frees_input[i] = !name.empty() && last != plan->last_use.end() && last->second == pos &&
                            !plan->graph_outputs.count(name);
    }
    step.output_slot.assign(node.outputs.size(), nullptr);
    for (size_t i = 0; i < node.outputs.size(); ++i) {
      auto slot = node.outputs[i].empty() ? plan->slots.end() : plan->slots.find(node.outputs[i]);
      if (slot != plan->slots.end()) step.output_slot[i] = &slot->second;
    }
  }
  return std::shared_ptr<const ExecutionPlan>(std::move(plan));
}

namespace {

// "'a' float16[64,128,56,56] 51.4 MB, ..." for the largest planned device tensors.
std::string LargestTensors(const ExecutionPlan& plan, const MemoryPlan& memory) {
  std::vector<const PlannedTensor*> v;
  for (const PlannedTensor& t : memory.tensors) v.push_back(&t);
  std::sort(v.begin(), v.end(), [](auto* a, auto* b) { return a->bytes > b->bytes; });
  std::string s;
  for (size_t i = 0; i < v.size() && i < 3; ++i) {
    auto type = plan.types.find(v[i]->name);
    s += fmt::format("{}'{}' {} {:.1f} MB", i ? ", " : "", v[i]->name,
                     type == plan.types.end() ? "?" : ir::TypeToString(type->second), v[i]->bytes / 1e6);
  }
  return s;
}

uint64_t OutputBytes(const ir::Model& model, const ExecutionPlan& plan) {
  uint64_t total = 0;
  for (const ir::ValueInfo& vi : model.graph.outputs) {
    auto t = plan.types.find(vi.name);
    auto dims = t == plan.types.end() ? std::nullopt : ops::KnownDims(&t->second);
    auto count = dims ? ElementCount(*dims) : std::nullopt;
    if (count && plan.on_device.count(vi.name)) {
      total += ir::DataTypeStorageBytes(t->second.elem_type, *count).value_or(0);
    }
  }
  return total;
}

}  // namespace

Result<const Tensor*> RunValues::In(const std::string& name, Device want) {
  const Tensor* t = Find(name);
  // Sequences and optionals stay on the host (their items are host tensors).
  if (!t || t->device() == want || !t->is_dense()) return t;
  if (auto it = moved_.find(name); it != moved_.end()) return &it->second;
  if (want != Device::kHost) {
    if (auto it = device_constants_.find(name); it != device_constants_.end()) return &it->second;
  }
  const Backend* dev = plan_.device_backend;
  if (!dev) return InternalError("value '{}' is on a device but the plan has no device backend", name);
  if (recording_) {
    return UnsupportedError("'{}' ({}) would move to the {} during the run, which a recorded graph cannot do", name,
                            t->Describe(), want == Device::kHost ? "host" : "device");
  }
  Result<Tensor> moved = want == Device::kHost ? dev->ToHost(*t) : dev->ToDevice(*t);
  if (!moved.ok()) {
    return std::move(moved).TakeStatus().WithContext(
        fmt::format("moving '{}' ({}) to the {}", name, t->Describe(), want == Device::kHost ? "host" : "device"));
  }
  auto [it, _] = moved_.insert_or_assign(name, std::move(moved).value());
  return &it->second;
}

Status BindInputs(const ExecutionPlan& plan, const std::vector<InputBinding>& inputs, RunValues& values) {
  const Backend* dev = plan.device_backend;
  for (const InputBinding& b : inputs) {
    void* data = const_cast<void*>(b.data);
    if (b.value) {
      values.Set(b.name, *b.value);
    } else if (b.device == Device::kHost) {
      values.Set(b.name, Tensor::View(b.dtype, b.shape, data));
    } else if (dev && dev->device() == b.device) {
      values.Set(b.name, Tensor::OnDevice(b.device, b.dtype, b.shape, data, nullptr));
    } else {
      return InvalidInputError("input '{}' is in device memory, but no node of this session runs on that device",
                               b.name)
          .WithFix("bind host memory, or let the session run on the device (--backend cuda)");
    }
  }
  return Status::Ok();
}

Status RunSteps(const ir::Model& model, const ExecutionPlan& plan, RunValues& values, const Tensor* host_arena,
                const Tensor* device_arena, bool keep_all, const NodeObserver* observer,
                std::vector<std::string>* produced) {
  const Backend* dev = plan.device_backend;
  for (size_t pos = 0; pos < plan.steps.size(); ++pos) {
    const ExecutionStep& step = plan.steps[pos];
    const ir::Node& node = model.graph.nodes[step.node_index];
    bool on_device = StepOnDevice(step);
    const Tensor* arena = on_device ? device_arena : host_arena;
    std::vector<const Tensor*> in(node.inputs.size(), nullptr);
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      if (node.inputs[i].empty()) continue;
      Device want = on_device && !step.backend->InputOnHost(node, step.opset, i) ? step.backend->device() : Device::kHost;
      VIGIL_ASSIGN_OR_RETURN(in[i], values.In(node.inputs[i], want));
      if (!in[i]) {
        return InternalError("{} (node #{}): input '{}' has no value at run time", ops::NodeLabel(node),
                             step.node_index, node.inputs[i]);
      }
      if (!in[i]->is_dense() && !dynamic_cast<const ControlFlowBackend*>(step.backend)) {
        return InvalidModelError("{} (node #{}): input '{}' is {}; op {} takes tensors", ops::NodeLabel(node),
                                 step.node_index, node.inputs[i], in[i]->Describe(), node.op_type)
            .WithFix("read the tensor out first (SequenceAt, ConcatFromSequence, OptionalGetElement)");
      }
    }
    if (observer) {
      std::string shapes = InputShapes(node, in);
      (*observer)({step.node_index, &node, step.backend->name(), &shapes});
    }
    std::vector<Tensor> out;
    PlannedAllocator allocator(plan, step, node, *step.backend, keep_all ? nullptr : arena);
    Status s = step.backend->Run(node, step.opset, in, out, allocator);
    if (!s.ok()) {
      // Kernels' own messages usually name the node; a library failure
      // (cuDNN, CUDA) does not, so the context then does.
      const std::string label = ops::NodeLabel(node);
      const bool named = s.summary().find(label) != std::string::npos;
      return s.WithContext(fmt::format("running {}#{} on the {} backend", named ? "node " : label + " ",
                                       step.node_index, step.backend->name()))
          .WithFact("inputs", InputShapes(node, in));
    }
    VIGIL_RETURN_IF_ERROR(CheckOutputs(node, step.node_index, plan, out));
    for (size_t i = 0; i < node.outputs.size(); ++i) {
      const std::string& name = node.outputs[i];
      if (name.empty()) continue;
      // A view into the arena that the plan does not know of would be
      // overwritten when its slot is reused: give it memory of its own.
      const ArenaSlot* slot = i < step.output_slot.size() ? step.output_slot[i] : nullptr;
      bool own_slot = slot && arena && out[i].raw_data() == static_cast<const uint8_t*>(arena->raw_data()) + slot->offset;
      bool planned_view = MayAliasInput(node) && i == 0 && in[0] && InArena(*in[0], arena);
      if (InArena(out[i], arena) && !own_slot && !planned_view) {
        VIGIL_ASSIGN_OR_RETURN(out[i], Copy(out[i], dev));
      }
      values.Set(name, std::move(out[i]));
      if (produced) produced->push_back(name);
    }
    if (keep_all) continue;
    for (size_t i = 0; i < node.inputs.size() && i < step.frees_input.size(); ++i) {
      if (step.frees_input[i]) values.Erase(node.inputs[i]);
    }
  }
  return Status::Ok();
}

Result<Tensor> HostArenaPool::Take(uint64_t bytes) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto best = free_.end();
    for (auto it = free_.begin(); it != free_.end(); ++it) {
      if (it->byte_size() >= bytes && (best == free_.end() || it->byte_size() < best->byte_size())) best = it;
    }
    if (best != free_.end()) {
      Tensor t = std::move(*best);
      free_.erase(best);
      return t;
    }
    // None is large enough: drop one that is not, so that the pool holds
    // no more arenas than runs have used at once.
    if (!free_.empty()) free_.pop_back();
  }
  return Tensor::Allocate(ir::DataType::kUint8, {static_cast<int64_t>(bytes)});
}

void HostArenaPool::Give(Tensor arena) {
  std::lock_guard<std::mutex> lock(mu_);
  free_.push_back(std::move(arena));
}

Result<std::vector<NamedTensor>> ExecutePlan(const ir::Model& model, const ExecutionPlan& plan,
                                             const std::unordered_map<std::string, Tensor>& constants,
                                             const std::unordered_map<std::string, Tensor>& device_constants,
                                             const std::vector<InputBinding>& inputs, bool keep_all,
                                             const NodeObserver* observer, bool outputs_on_device,
                                             HostArenaPool* arenas) {
  const Backend* dev = plan.device_backend;
  std::optional<Tensor> host_arena_storage, device_arena_storage;
  if (!keep_all && plan.memory.arena_bytes > 0) {
    if (arenas) {
      VIGIL_ASSIGN_OR_RETURN(host_arena_storage, arenas->Take(plan.memory.arena_bytes));
    } else {
      VIGIL_ASSIGN_OR_RETURN(host_arena_storage, Tensor::Allocate(ir::DataType::kUint8,
                                                                  {static_cast<int64_t>(plan.memory.arena_bytes)}));
    }
  }
  // The arena goes back to the pool when the run ends, whichever way: the
  // outputs have been copied out of it by then.
  struct GiveBack {
    HostArenaPool* pool;
    std::optional<Tensor>& arena;
    ~GiveBack() {
      if (pool && arena) pool->Give(std::move(*arena));
    }
  } give_back{arenas, host_arena_storage};
  if (dev) {
    uint64_t arena_bytes = keep_all ? 0 : plan.device_memory.arena_bytes;
    uint64_t need = keep_all ? plan.device_memory.peak_live_bytes : arena_bytes;
    // The bodies of control-flow nodes are counted at entry (plan.bodies), so
    // that a body that cannot fit stops the run before any node has run.
    VIGIL_RETURN_IF_ERROR(dev->CheckDeviceMemory(need + OutputBytes(model, plan) + plan.bodies.device_bytes,
                                                 LargestTensors(plan, plan.device_memory)));
    if (arena_bytes > 0) {
      VIGIL_ASSIGN_OR_RETURN(device_arena_storage,
                             dev->AllocateDevice(ir::DataType::kUint8, {static_cast<int64_t>(arena_bytes)}));
    }
  }
  const Tensor* host_arena = host_arena_storage ? &*host_arena_storage : nullptr;
  const Tensor* device_arena = device_arena_storage ? &*device_arena_storage : nullptr;
  RunValues values(plan, constants, device_constants);
  VIGIL_RETURN_IF_ERROR(BindInputs(plan, inputs, values));
  std::vector<std::string> produced;
  VIGIL_RETURN_IF_ERROR(RunSteps(model, plan, values, host_arena, device_arena, keep_all, observer, &produced));
  if (observer) (*observer)({plan.steps.size(), nullptr, "", nullptr});  // the outputs are read next
  std::vector<NamedTensor> result;
  auto to_result = [&](const std::string& name) -> Status {
    const Tensor* found = values.Find(name);
    const bool keep_on_device = outputs_on_device && found && !found->on_host();
    VIGIL_ASSIGN_OR_RETURN(const Tensor* t, values.In(name, keep_on_device ? found->device() : Device::kHost));
    if (!t) return InternalError("graph output '{}' was not computed", name);
    if (!t->is_dense()) {  // a sequence or an empty optional: host tensors of their own
      result.push_back({name, *t});
      return Status::Ok();
    }
    // Outputs must own their memory: not a view of the caller's input
    // buffers, nor of the arenas that die with this run.
    if (!t->storage() || InArena(*t, host_arena) || InArena(*t, device_arena)) {
      VIGIL_ASSIGN_OR_RETURN(Tensor copy, Copy(*t, dev));
      result.push_back({name, std::move(copy)});
    } else {
      result.push_back({name, *t});
    }
    return Status::Ok();
  };
  for (const ir::ValueInfo& vi : model.graph.outputs) VIGIL_RETURN_IF_ERROR(to_result(vi.name));
  if (keep_all) {
    for (const std::string& name : produced) {
      if (!plan.graph_outputs.count(name)) VIGIL_RETURN_IF_ERROR(to_result(name));
    }
  }
  if (dev) VIGIL_RETURN_IF_ERROR(dev->Synchronize());
  return result;
}
Result<Tensor> CopyOwned(const Tensor& t, const Backend* device_backend) { return Copy(t, device_backend); }

}  // namespace vigil::runtime
