// Assigns arena offsets to a run's intermediate tensors by liveness, so that
// tensors whose lifetimes do not overlap share memory, and predicts the peak.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace vigil::runtime {

// One tensor to place: its size and the steps (node positions in execution
// order) from the one that produces it to the last that reads it.
struct LifetimeRequest {
  std::string name;
  uint64_t bytes = 0;
  size_t first_step = 0;
  size_t last_step = 0;
};

struct PlannedTensor {
  std::string name;
  uint64_t bytes = 0;
  uint64_t offset = 0;
  size_t first_step = 0;
  size_t last_step = 0;
};

// What the bodies of control-flow nodes (If, Loop, Scan) need while their
// node runs, each body planned at the shapes its node gives it on entry
// (runtime/control_flow.h): the most bytes one body's arenas take, its own
// bodies' included, on top of the enclosing graph's arenas. A Loop's carried
// values may grow over the iterations, so this is the need at entry.
struct BodyMemory {
  uint64_t host_bytes = 0;
  uint64_t device_bytes = 0;
  // Bodies whose entry shapes are not known before they run ("body 'b' of
  // node Loop 'l'"): SequenceMap's, and those given values of unknown dims.
  std::vector<std::string> unplanned;

  void Add(const BodyMemory& other);  // the larger of each, and both lists
};

struct MemoryPlan {
  std::vector<PlannedTensor> tensors;
  uint64_t arena_bytes = 0;  // size of the arena holding all planned tensors
  // The most bytes live at any one step (a lower bound for any arena); the
  // arena is at least this, more when fragmentation forces gaps.
  uint64_t peak_live_bytes = 0;
  // Tensors whose size depends on data (NonZero, ...), allocated at run time.
  std::vector<std::string> dynamic;
  // Constant bytes (initializers) the run reads in place.
  uint64_t constant_bytes = 0;
  // With a device backend: the device arena of the values its nodes produce
  // (Session::Plan fills these; 0 without one).
  uint64_t device_arena_bytes = 0;
  uint64_t device_peak_live_bytes = 0;
  // Control-flow bodies (Session::Plan fills these).
  BodyMemory bodies;
};

// Alignment of every offset in the arena.
inline constexpr uint64_t kArenaAlignment = 64;

// Best-fit placement in order of decreasing size: each tensor goes to the
// lowest offset where it overlaps no tensor whose lifetime intersects its own.
MemoryPlan PlanMemory(std::vector<LifetimeRequest> requests);

}  // namespace vigil::runtime
