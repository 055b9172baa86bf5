// Elementwise work on several threads: ParallelFor splits [0, count) into
// one contiguous chunk per thread of oneDNN's OpenMP pool (libgomp, which
// libdnnl.so.2 loads; fast/parallel_omp.cpp), so that maps, copies and the
// convolutions' epilogues share the threads the convolutions use. Separate
// std::threads fought oneDNN's spinning OpenMP workers for the cores
// (bench/results/cpu_peer_epyc2.md). Where oneDNN is not loaded, the work is
// small, or the node's thread limit (ScopedGemmThreadLimit) is 1,
// everything runs on the calling thread. Each chunk gives the results it
// would give alone, so the split never changes them.
#pragma once

#include <algorithm>
#include <cstdint>

namespace vigil::cpu {

// Elements one thread should get at least: below this, starting the team
// costs more than the thread saves.
inline constexpr int64_t kParallelGrain = 32 * 1024;

// The grain of kernels that spend tens of operations on each element
// (statistics in double, exp, erf): LayerNormalization, Softmax, GELU. A
// transformer's [128, 256] activation is one grain of kParallelGrain; at
// 16 threads its LayerNormalization and Softmax ran on one thread, 0.1 ms
// each, a third of a small encoder's time outside its products
// (bench/results/cpu_peer_epyc2.md).
inline constexpr int64_t kComputeGrain = 4 * 1024;

// ParallelFor's grain for items (rows, lines, runs) of `elements_per_item`
// elements each: enough whole items for `grain` elements, at least 1.
inline int64_t ItemsPerGrain(int64_t elements_per_item, int64_t grain = kParallelGrain) {
  return std::max<int64_t>(1, grain / std::max<int64_t>(1, elements_per_item));
}

// Whether the OpenMP pool is loaded (ParallelFor may use several threads).
bool ParallelPoolAvailable();

namespace parallel_internal {
using ChunkFn = void (*)(const void* fn, int64_t begin, int64_t end);
// How many threads `count` items of `grain` each merit here, now: 1 without
// the pool.
int Threads(int64_t count, int64_t grain);
// Runs chunk(fn, begin, end) for `threads` chunks of [0, count) on the pool.
void Run(int threads, int64_t count, ChunkFn chunk, const void* fn);
}  // namespace parallel_internal

// fn(begin, end) over disjoint chunks covering [0, count), concurrently;
// fn must not throw.
template <typename Fn>
void ParallelFor(int64_t count, int64_t grain, const Fn& fn) {
  const int threads = parallel_internal::Threads(count, grain);
  if (threads <= 1) {
    if (count > 0) fn(int64_t{0}, count);
    return;
  }
  parallel_internal::Run(
      threads, count, [](const void* f, int64_t b, int64_t e) { (*static_cast<const Fn*>(f))(b, e); }, &fn);
}

}  // namespace vigil::cpu
