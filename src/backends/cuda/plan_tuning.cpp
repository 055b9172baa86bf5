#include "backends/cuda/plan_tuning.h"

#include <algorithm>
#include <functional>
#include <memory>
#include <vector>

#include <fmt/format.h>

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

// Twice the L2 cache of the current device, in bytes (at least 8 MiB).
Result<size_t> FlushBytes() {
  int device = 0, l2 = 0;
  VIGIL_CUDA_CALL(cudaGetDevice(&device));
  VIGIL_CUDA_CALL(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device));
  return std::max<size_t>(size_t{8} << 20, 2 * static_cast<size_t>(l2));
}

Result<double> MedianMicros(cudaStream_t stream, const std::function<Status()>& run, int runs,
                            double give_up_micros) {
  EventPair e;
  VIGIL_CUDA_CALL(cudaEventCreate(&e.start));
  VIGIL_CUDA_CALL(cudaEventCreate(&e.stop));
  // Each timed run starts with a cold L2 (a write of twice its size before
  // it, not timed). Repeating one operation on the same buffers otherwise
  // keeps its weights and inputs in L2, which in a network they are not
  // (the weights at least): with a warm L2 the choices measured faster in
  // isolation and made ResNet-50 at batch 1 about 10% slower as a whole
  // (H100, cuDNN 9.14).
  VIGIL_ASSIGN_OR_RETURN(size_t flush_bytes, FlushBytes());
  void* flush = nullptr;
  VIGIL_CUDA_CALL(cudaMallocAsync(&flush, flush_bytes, stream));
  std::unique_ptr<void, std::function<void(void*)>> owned(flush, [stream](void* p) { cudaFreeAsync(p, stream); });
  VIGIL_RETURN_IF_ERROR(run());  // warm-up: first-launch costs
  std::vector<double> times;
  for (int i = 0; i < std::max(runs, 1); ++i) {
    VIGIL_CUDA_CALL(cudaMemsetAsync(flush, i & 0xff, flush_bytes, stream));
    VIGIL_CUDA_CALL(cudaEventRecord(e.start, stream));
    VIGIL_RETURN_IF_ERROR(run());
    VIGIL_CUDA_CALL(cudaEventRecord(e.stop, stream));
    VIGIL_CUDA_CALL(cudaEventSynchronize(e.stop));
    float ms = 0;
    VIGIL_CUDA_CALL(cudaEventElapsedTime(&ms, e.start, e.stop));
    times.push_back(double{ms} * 1000.0);
    if (times.back() > give_up_micros) return times.back();
    if (i == 0 && times.back() >= kLongRunMicros) runs = std::min(runs, 3);
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

Result<bool> StreamRecording(cudaStream_t stream) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  VIGIL_CUDA_CALL(cudaStreamIsCapturing(stream, &status));
  return status != cudaStreamCaptureStatusNone;
}

void FirstRunMeasures::Add(Kind kind, double seconds) {
  (kind == Kind::kConvolution ? convolutions_ : products_).fetch_add(1, std::memory_order_relaxed);
  microseconds_.fetch_add(static_cast<int64_t>(seconds * 1e6), std::memory_order_relaxed);
}

void FirstRunMeasures::AddPartOfBatch() { parts_of_batch_.fetch_add(1, std::memory_order_relaxed); }

void FirstRunMeasures::AddCompiled(double seconds) {
  compiled_.fetch_add(1, std::memory_order_relaxed);
  compiled_microseconds_.fetch_add(static_cast<int64_t>(seconds * 1e6), std::memory_order_relaxed);
}

std::string FirstRunMeasures::CompiledSummary() const {
  const int64_t compiled = compiled_.load(std::memory_order_relaxed);
  if (compiled == 0) return "";
  return fmt::format("cuDNN compiled {} engine(s) at run time while planning (its runtime fusion engines: {:.2f} s "
                     "of the first runs); CUDA's compute cache keeps them for later processes on this machine "
                     "(CUDA_CACHE_PATH, by default ~/.nv/ComputeCache): keep that directory on a volume where "
                     "processes start in fresh containers",
                     compiled, static_cast<double>(compiled_microseconds_.load(std::memory_order_relaxed)) / 1e6);
}

std::string FirstRunMeasures::Summary() const {
  const int64_t convolutions = convolutions_.load(std::memory_order_relaxed);
  const int64_t products = products_.load(std::memory_order_relaxed);
  if (convolutions == 0 && products == 0) return "";
  const int64_t parts = parts_of_batch_.load(std::memory_order_relaxed);
  const std::string part = parts ? fmt::format(" ({} on part of their batch)", parts) : "";
  return fmt::format("first runs measured the candidates of {} convolution(s){} and {} matrix product(s) whose "
                     "library pick is often slow ({:.2f} s, kept for the session); --no-measure-first-run "
                     "(measure_first_run = 0) takes the libraries' first picks instead, for a faster first result",
                     convolutions, part, products, static_cast<double>(microseconds_.load(std::memory_order_relaxed)) / 1e6);
}

}  // namespace vigil::cuda
