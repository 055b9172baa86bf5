#include "backends/cuda/plan_tuning.h"

#include <algorithm>
#include <vector>

#include "backends/cuda/cuda_check.h"

namespace vigil::cuda {
namespace {

// Two CUDA events, destroyed with their owner.
struct EventPair {
  cudaEvent_t start = nullptr, stop = nullptr;
  EventPair() = default;
  EventPair(const EventPair&) = delete;
  EventPair& operator=(const EventPair&) = delete;
  ~EventPair() {
    if (start) cudaEventDestroy(start);
    if (stop) cudaEventDestroy(stop);
  }
};

}  // namespace

Result<double> MedianMicros(cudaStream_t stream, const std::function<Status()>& run, int runs) {
  EventPair e;
  VIGIL_CUDA_CALL(cudaEventCreate(&e.start));
  VIGIL_CUDA_CALL(cudaEventCreate(&e.stop));
  VIGIL_RETURN_IF_ERROR(run());  // warm-up: first-launch costs, caches
  std::vector<double> times;
  for (int i = 0; i < std::max(runs, 1); ++i) {
    VIGIL_CUDA_CALL(cudaEventRecord(e.start, stream));
    VIGIL_RETURN_IF_ERROR(run());
    VIGIL_CUDA_CALL(cudaEventRecord(e.stop, stream));
    VIGIL_CUDA_CALL(cudaEventSynchronize(e.stop));
    float ms = 0;
    VIGIL_CUDA_CALL(cudaEventElapsedTime(&ms, e.start, e.stop));
    times.push_back(double{ms} * 1000.0);
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

Result<bool> StreamRecording(cudaStream_t stream) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  VIGIL_CUDA_CALL(cudaStreamIsCapturing(stream, &status));
  return status != cudaStreamCaptureStatusNone;
}

}  // namespace vigil::cuda
