// Measuring candidate algorithms (autotuning), shared by the cuDNN and
// cuBLASLt paths. Tuning happens the first time a problem is met, on the
// calling thread's stream, with the run's own buffers (never zeros) and
// scratch outputs; never while a run is being recorded as a CUDA graph.
// The choices go into the session's TuningCache (tuning_cache.h).
#pragma once

#include <chrono>
#include <functional>
#include <string>

#include <cuda_runtime_api.h>

#include "base/status.h"

namespace vigil::cuda {

class TuningCache;

// How a kernel picks an algorithm for its problem: `cache` null means the
// libraries' heuristics decide (their first pick); otherwise a recorded
// choice is used when there is one, and with `measure` the candidates of a
// problem not recorded yet are timed and the fastest recorded.
struct TuningPolicy {
  TuningCache* cache = nullptr;
  bool measure = false;
};

// Candidates measured per problem (the heuristics' best first).
inline constexpr int kMaxTuningCandidates = 8;

// The median time of `run` (which queues one execution on `stream`) in
// microseconds: one untimed run, then `runs` runs, each between two CUDA
// events and each after the L2 cache was flushed. A failing run returns its
// Status.
Result<double> MedianMicros(cudaStream_t stream, const std::function<Status()>& run, int runs = 5);

// Whether work queued on `stream` is being recorded (no measuring then).
Result<bool> StreamRecording(cudaStream_t stream);

// Seconds since `start`, for TuningCache::AddTuningTime.
inline double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace vigil::cuda
