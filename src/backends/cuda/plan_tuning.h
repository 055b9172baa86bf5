// Measuring candidate algorithms (autotuning), shared by the cuDNN and
// cuBLASLt paths. Tuning happens the first time a problem is met, on the
// calling thread's stream, with the run's own buffers (never zeros) and
// scratch outputs; never while a run is being recorded as a CUDA graph.
// The choices go into the session's TuningCache (tuning_cache.h).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

#include <cuda_runtime_api.h>

#include "base/status.h"

namespace vigil::cuda {

class TuningCache;

// What first runs measured without autotuning (the session option
// measure_first_run: the products and convolutions whose library pick is
// often slow), counted over every thread of the backend and said in its
// notes, so that a user who sees a slow first result learns why and how to
// skip it.
class FirstRunMeasures {
 public:
  enum class Kind { kConvolution, kProduct };
  void Add(Kind kind, double seconds);
  // One convolution measured on part of its batch (conv_measure_rule.h,
  // MeasuredImages), its winner built for the whole batch; Add counted it.
  void AddPartOfBatch();
  // One engine cuDNN compiled at run time while a plan was built (its
  // runtime fusion engines), `seconds` of finalizing it.
  void AddCompiled(double seconds);
  // "" when nothing was compiled.
  std::string CompiledSummary() const;
  // "" when nothing was measured.
  std::string Summary() const;

 private:
  std::atomic<int64_t> convolutions_{0};
  std::atomic<int64_t> products_{0};
  std::atomic<int64_t> parts_of_batch_{0};
  std::atomic<int64_t> compiled_{0};
  std::atomic<int64_t> compiled_microseconds_{0};
  std::atomic<int64_t> microseconds_{0};
};

// How a kernel picks an algorithm for its problem: `cache` null means the
// libraries' heuristics decide (their first pick); otherwise a recorded
// choice is used when there is one, and with `measure` the candidates of a
// problem not recorded yet are timed and the fastest recorded.
struct TuningPolicy {
  TuningCache* cache = nullptr;
  bool measure = false;
  FirstRunMeasures* first_run = nullptr;  // counts measuring done without `measure` (null: not counted)
};

// Candidates measured per problem (the heuristics' best first).
inline constexpr int kMaxTuningCandidates = 8;

// The median time of `run` (which queues one execution on `stream`) in
// microseconds: one untimed run, then `runs` runs, each between two CUDA
// events and each after the L2 cache was flushed. A failing run returns its
// Status. Long runs need fewer: from kLongRunMicros on, 3 at most. A run
// slower than `give_up_micros` ends the measuring with its time: a
// candidate that slow has lost (MeasureCandidates passes 1.5 times the best
// so far). Measuring a base-32 UNet's six full-resolution convolutions at
// batch 64 took 2.1 s with 5 runs of every candidate.
inline constexpr double kLongRunMicros = 1000;
Result<double> MedianMicros(cudaStream_t stream, const std::function<Status()>& run, int runs = 5,
                            double give_up_micros = 1e300);

// Whether work queued on `stream` is being recorded (no measuring then).
Result<bool> StreamRecording(cudaStream_t stream);

// Seconds since `start`, for TuningCache::AddTuningTime.
inline double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace vigil::cuda
