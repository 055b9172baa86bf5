// The execution plan for one set of input shapes, and the executor that runs
// it: steps in order, outputs placed in the run's arena by the memory plan,
// values freed after their last reader.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "base/status.h"
#include "ir/graph.h"
#include "runtime/backend.h"
#include "runtime/input_binding.h"
#include "runtime/memory_plan.h"
#include "runtime/session.h"
#include "runtime/type_inference.h"

namespace vigil::runtime {

struct ArenaSlot {
  uint64_t offset = 0;
  uint64_t bytes = 0;
};

struct ExecutionStep {
  size_t node_index;
  const Backend* backend;
  int64_t opset;
  // Set by BuildExecutionPlan from the maps below, so that a run looks up no
  // value by name to place or free it: per input, whether its value dies
  // after this step; per output, its arena slot (null: none planned).
  std::vector<uint8_t> frees_input = {};
  std::vector<const ArenaSlot*> output_slot = {};
};

struct ExecutionPlan {
  ExecutionPlan() = default;
  // Steps point into `slots`: a copy would point into the original.
  ExecutionPlan(const ExecutionPlan&) = delete;
  ExecutionPlan& operator=(const ExecutionPlan&) = delete;

  std::vector<ExecutionStep> steps;                        // nodes still to run at these shapes
  const Backend* device_backend = nullptr;                 // the backend whose values live on a device, if any
  std::unordered_map<std::string, Tensor> plan_values;     // outputs folded at plan time
  std::unordered_map<std::string, ir::TypeInfo> types;     // every value's type at these shapes
  MemoryPlan memory;                                       // host arena
  MemoryPlan device_memory;                                // device arena (device_backend's values)
  std::unordered_map<std::string, ArenaSlot> slots;        // planned values, in the arena of their producer
  std::unordered_set<std::string> on_device;               // values produced by device steps
  std::unordered_map<std::string, size_t> last_use;        // value -> last step that reads it
  std::unordered_set<std::string> graph_outputs;
  BodyMemory bodies;                                       // what control-flow bodies add while they run
};

// Ops whose CPU kernels may return a view of input 0 instead of a copy; the
// planner keeps input 0's memory alive for as long as the view is read.
bool MayAliasInput(const ir::Node& node);

Result<std::shared_ptr<const ExecutionPlan>> BuildExecutionPlan(const ir::Model& model,
                                                                const std::vector<size_t>& order,
                                                                const std::vector<const Backend*>& node_backend,
                                                                InferredGraph inferred, BodyMemory bodies = {});

// The values of one run, each in the place its producer left it, plus copies
// moved to the other side of a host/device boundary for the readers there.
class RunValues {
 public:
  RunValues(const ExecutionPlan& plan, const std::unordered_map<std::string, Tensor>& constants,
            const std::unordered_map<std::string, Tensor>& device_constants)
      : plan_(plan), constants_(constants), device_constants_(device_constants) {}

  void Set(const std::string& name, Tensor t) {
    if (!moved_.empty()) moved_.erase(name);
    values_.insert_or_assign(name, std::move(t));
  }
  void Erase(const std::string& name) {
    values_.erase(name);
    if (!moved_.empty()) moved_.erase(name);
  }
  const Tensor* Find(const std::string& name) const {
    if (auto it = values_.find(name); it != values_.end()) return &it->second;
    if (auto it = plan_.plan_values.find(name); it != plan_.plan_values.end()) return &it->second;
    if (auto it = constants_.find(name); it != constants_.end()) return &it->second;
    return nullptr;
  }
  // The value in the wanted place, moving (and remembering) it if needed.
  Result<const Tensor*> In(const std::string& name, Device want);
  // While a run is recorded as a graph, a move between host and device
  // cannot be part of it: In() then refuses (Unsupported) instead.
  void set_recording(bool recording) { recording_ = recording; }

 private:
  const ExecutionPlan& plan_;
  const std::unordered_map<std::string, Tensor>& constants_;
  const std::unordered_map<std::string, Tensor>& device_constants_;
  std::unordered_map<std::string, Tensor> values_;
  std::unordered_map<std::string, Tensor> moved_;
  bool recording_ = false;
};

// Binds the caller's input buffers as values (views: no copy).
Status BindInputs(const ExecutionPlan& plan, const std::vector<InputBinding>& inputs, RunValues& values);

// Runs every step of `plan` in order on `values`; outputs go to the arenas'
// planned slots (none with keep_all). Names each value it sets in `produced`
// (if given). Frees each value after its last reader unless keep_all.
Status RunSteps(const ir::Model& model, const ExecutionPlan& plan, RunValues& values, const Tensor* host_arena,
                const Tensor* device_arena, bool keep_all, const NodeObserver* observer,
                std::vector<std::string>* produced);

// Host arenas kept between runs, so that a run does not allocate its
// intermediates afresh (a large allocation is new pages from the system,
// each zeroed on first touch, every run). A run takes the smallest free
// arena that holds its plan, or a new one, and gives it back when it ends;
// runs on several threads take different ones. Thread-safe.
class HostArenaPool {
 public:
  Result<Tensor> Take(uint64_t bytes);
  void Give(Tensor arena);

 private:
  std::mutex mu_;
  std::vector<Tensor> free_;
};

// Runs `plan`. With keep_all, every value is kept (no arena, no freeing) and
// returned after the graph outputs, in step order. `device_constants` holds
// device copies of constants that device steps read (uploaded once per
// session); others are copied per run. Everything returned is on the host,
// except, with outputs_on_device, the graph outputs device steps produce.
// The host arena comes from `arenas` when given, else is allocated for the run.
Result<std::vector<NamedTensor>> ExecutePlan(const ir::Model& model, const ExecutionPlan& plan,
                                             const std::unordered_map<std::string, Tensor>& constants,
                                             const std::unordered_map<std::string, Tensor>& device_constants,
                                             const std::vector<InputBinding>& inputs, bool keep_all,
                                             const NodeObserver* observer = nullptr,
                                             bool outputs_on_device = false, HostArenaPool* arenas = nullptr);

// A copy of `t` that owns its memory, in the same place: device memory is
// copied on the device (no host round trip).
Result<Tensor> CopyOwned(const Tensor& t, const Backend* device_backend);

}  // namespace vigil::runtime
