#include "runtime/memory_plan.h"

#include <algorithm>
#include <map>

namespace vigil::runtime {
namespace {

uint64_t AlignUp(uint64_t v) { return (v + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment; }

bool LifetimesOverlap(const PlannedTensor& a, const LifetimeRequest& b) {
  return a.first_step <= b.last_step && b.first_step <= a.last_step;
}

uint64_t PeakLiveBytes(const std::vector<LifetimeRequest>& requests) {
  // Sweep over steps: +bytes at first_step, -bytes after last_step.
  std::map<size_t, int64_t> delta;
  for (const LifetimeRequest& r : requests) {
    delta[r.first_step] += static_cast<int64_t>(AlignUp(r.bytes));
    delta[r.last_step + 1] -= static_cast<int64_t>(AlignUp(r.bytes));
  }
  int64_t live = 0, peak = 0;
  for (const auto& [step, d] : delta) {
    live += d;
    peak = std::max(peak, live);
  }
  return static_cast<uint64_t>(peak);
}

}  // namespace

MemoryPlan PlanMemory(std::vector<LifetimeRequest> requests) {
  MemoryPlan plan;
  plan.peak_live_bytes = PeakLiveBytes(requests);
  // Largest first gives the big tensors the low offsets and leaves small ones
  // to fill gaps; ties by start step keep the result deterministic.
  std::stable_sort(requests.begin(), requests.end(), [](const LifetimeRequest& a, const LifetimeRequest& b) {
    if (a.bytes != b.bytes) return a.bytes > b.bytes;
    return a.first_step < b.first_step;
  });
  for (const LifetimeRequest& r : requests) {
    // Intervals [offset, offset+size) already taken by overlapping lifetimes.
    std::vector<std::pair<uint64_t, uint64_t>> taken;
    for (const PlannedTensor& p : plan.tensors) {
      if (LifetimesOverlap(p, r)) taken.emplace_back(p.offset, p.offset + AlignUp(p.bytes));
    }
    std::sort(taken.begin(), taken.end());
    const uint64_t size = AlignUp(r.bytes);
    uint64_t best = UINT64_MAX, best_gap = UINT64_MAX, cursor = 0;
    for (const auto& [begin, end] : taken) {
      if (begin > cursor && begin - cursor >= size && begin - cursor < best_gap) {
        best = cursor;
        best_gap = begin - cursor;
      }
      cursor = std::max(cursor, end);
    }
    if (best == UINT64_MAX) best = cursor;  // after everything live at the same time
    plan.tensors.push_back({r.name, r.bytes, best, r.first_step, r.last_step});
    plan.arena_bytes = std::max(plan.arena_bytes, best + size);
  }
  return plan;
}

void BodyMemory::Add(const BodyMemory& other) {
  host_bytes = std::max(host_bytes, other.host_bytes);
  device_bytes = std::max(device_bytes, other.device_bytes);
  unplanned.insert(unplanned.end(), other.unplanned.begin(), other.unplanned.end());
}

}  // namespace vigil::runtime
