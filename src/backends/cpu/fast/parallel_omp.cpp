#include "backends/cpu/parallel.h"

#include <algorithm>

#include "backends/cpu/fast/dnnl_library.h"
#include "backends/cpu/gemm.h"

namespace vigil::cpu {

bool ParallelPoolAvailable() {
#if defined(VIGIL_HAVE_DNNL_HEADERS)
  const fast::DnnlApi* api = fast::Dnnl();
  return api && api->gomp_parallel;
#else
  return false;
#endif
}

namespace parallel_internal {
namespace {

#if defined(VIGIL_HAVE_DNNL_HEADERS)
struct Job {
  const fast::DnnlApi* api;
  int64_t count;
  ChunkFn chunk;
  const void* fn;
};

// One team member's chunk: the team may be smaller than asked (nested
// regions run alone), so the split follows the team it got.
void Member(void* data) {
  const Job& job = *static_cast<const Job*>(data);
  const int64_t t = job.api->omp_get_thread_num(), n = job.api->omp_get_num_threads();
  const int64_t begin = job.count * t / n, end = job.count * (t + 1) / n;
  if (begin < end) job.chunk(job.fn, begin, end);
}
#endif

}  // namespace

int Threads(int64_t count, int64_t grain) {
#if defined(VIGIL_HAVE_DNNL_HEADERS)
  if (count < 2 * grain || !ParallelPoolAvailable()) return 1;
  return PoolThreadsFor(static_cast<double>(count), static_cast<double>(grain));
#else
  static_cast<void>(count);
  static_cast<void>(grain);
  return 1;
#endif
}

void Run(int threads, int64_t count, ChunkFn chunk, const void* fn) {
#if defined(VIGIL_HAVE_DNNL_HEADERS)
  const fast::DnnlApi* api = fast::Dnnl();
  if (api && api->gomp_parallel && threads > 1) {
    Job job{api, count, chunk, fn};
    api->gomp_parallel(Member, &job, static_cast<unsigned>(threads), 0);
    return;
  }
#endif
  static_cast<void>(threads);
  chunk(fn, 0, count);
}

}  // namespace parallel_internal
}  // namespace vigil::cpu
