#include "backends/cpu/gemm.h"

#include <algorithm>
#include <atomic>
#include <system_error>
#include <thread>
#include <type_traits>
#include <vector>

#include "backends/cpu/fast/fast_kernels.h"
#include "backends/cpu/fast/dnnl_library.h"
#include "backends/cpu/gemm_eigen_block.h"

namespace vigil::cpu {
namespace {

// Below this many multiply-adds per thread, starting a thread costs more than
// it saves (a thread start is tens of microseconds; 4M MACs take about a
// millisecond on one core).
constexpr double kMinMacsPerThread = 4.0 * 1024 * 1024;

thread_local int t_thread_limit = 0;  // ScopedGemmThreadLimit; 0: none
thread_local bool t_optimised = false;  // ScopedOptimisedProducts

int ThreadsFor(double macs) { return GemmThreadsFor(macs); }

// Calls fn(begin, end) for `threads` near-equal chunks of [0, count), on
// threads - 1 new threads and this one.
template <typename Fn>
void ParallelChunks(int64_t count, int threads, const Fn& fn) {
  threads = static_cast<int>(std::min<int64_t>(threads, count));
  if (threads <= 1) {
    fn(int64_t{0}, count);
    return;
  }
  std::vector<std::thread> workers;
  workers.reserve(threads - 1);
  int64_t begin = 0;
  for (int t = 0; t < threads; ++t) {
    int64_t end = begin + count / threads + (t < count % threads ? 1 : 0);
    if (t + 1 == threads) {
      fn(begin, end);
    } else {
      try {
        workers.emplace_back([&fn, begin, end] { fn(begin, end); });
      } catch (const std::system_error&) {
        fn(begin, end);  // no thread to be had (resource limits): this one does the chunk
      }
    }
    begin = end;
  }
  for (std::thread& w : workers) w.join();
}

// Output rows [r0, r1) of an integer product. Arithmetic is on uint64_t so
// that it wraps (modulo 2^64, then truncated to the element type by the
// caller), like numpy's integer matmul.
void IntegerRows(const GemmShape& s, const int64_t* a, const int64_t* b, int64_t* out, int64_t alpha, bool accumulate,
                 int64_t r0, int64_t r1) {
  for (int64_t i = r0; i < r1; ++i) {
    uint64_t* row = reinterpret_cast<uint64_t*>(out + i * s.n);
    if (!accumulate) std::fill(row, row + s.n, uint64_t{0});
    for (int64_t p = 0; p < s.k; ++p) {
      uint64_t av = static_cast<uint64_t>(s.trans_a ? a[p * s.m + i] : a[i * s.k + p]) * static_cast<uint64_t>(alpha);
      if (av == 0) continue;
      if (s.trans_b) {
        for (int64_t j = 0; j < s.n; ++j) row[j] += av * static_cast<uint64_t>(b[j * s.k + p]);
      } else {
        const int64_t* brow = b + p * s.n;
        for (int64_t j = 0; j < s.n; ++j) row[j] += av * static_cast<uint64_t>(brow[j]);
      }
    }
  }
}

// The widest instruction set this CPU has that a variant was built for.
GemmIsa DetectIsa() {
#if defined(VIGIL_GEMM_X86_VARIANTS)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    return GemmIsa::kAvx512;
  }
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return GemmIsa::kAvx2;
#endif
  return GemmIsa::kBaseline;
}

std::atomic<GemmIsa>& IsaInUse() {
  static std::atomic<GemmIsa> isa{DetectIsa()};
  return isa;
}

template <typename T>
void Block(const GemmShape& s, const T* a, const T* b, T* out, T alpha, bool accumulate, int64_t r0, int64_t r1,
           int64_t c0, int64_t c1) {
  if constexpr (std::is_same_v<T, int64_t>) {
    // Integer products are never split by columns (see Gemm below).
    IntegerRows(s, a, b, out, alpha, accumulate, r0, r1);
  } else {
    switch (IsaInUse().load(std::memory_order_relaxed)) {
#if defined(VIGIL_GEMM_X86_VARIANTS)
      case GemmIsa::kAvx512:
        return gemm_internal::EigenBlockAvx512(s, a, b, out, alpha, accumulate, r0, r1, c0, c1);
      case GemmIsa::kAvx2:
        return gemm_internal::EigenBlockAvx2(s, a, b, out, alpha, accumulate, r0, r1, c0, c1);
#endif
      default:
        return gemm_internal::EigenBlockBaseline(s, a, b, out, alpha, accumulate, r0, r1, c0, c1);
    }
  }
}

template <typename T>
void Gemm(const GemmShape& s, const T* a, const T* b, T* out, T alpha, bool accumulate) {
  const int threads = ThreadsFor(static_cast<double>(s.m) * s.n * s.k);
  // Split the longer side of the output; a wide, short output (a few rows of
  // a vector-matrix product) is split by columns.
  if (s.m >= s.n || std::is_same_v<T, int64_t>) {
    ParallelChunks(s.m, threads,
                   [&](int64_t r0, int64_t r1) { Block(s, a, b, out, alpha, accumulate, r0, r1, 0, s.n); });
  } else {
    ParallelChunks(s.n, threads,
                   [&](int64_t c0, int64_t c1) { Block(s, a, b, out, alpha, accumulate, 0, s.m, c0, c1); });
  }
}

// One product: float32 through oneDNN's sgemm where allowed and loaded, else
// (and for every other type) Gemm.
template <typename T>
void Product(const GemmShape& s, const T* a, const T* b, T* out, T alpha, bool accumulate) {
  if constexpr (std::is_same_v<T, float>) {
    if (t_optimised &&
        fast::SgemmDnnl(s, a, b, out, alpha, accumulate,
                        PoolThreadsFor(static_cast<double>(s.m) * s.n * s.k, kMinMacsPerPoolThread))) {
      return;
    }
  }
  Gemm(s, a, b, out, alpha, accumulate);
}

template <typename T>
void Batched(const GemmShape& s, const T* a, std::span<const int64_t> a_offsets, const T* b,
             std::span<const int64_t> b_offsets, T* out) {
  const int64_t batch = static_cast<int64_t>(std::min(a_offsets.size(), b_offsets.size()));
  const int64_t out_size = s.m * s.n;
  const int threads = ThreadsFor(static_cast<double>(batch) * s.m * s.n * s.k);
  // float32 products with oneDNN take the loop below at any thread count:
  // oneDNN's OpenMP workers spin between products, and our own threads
  // beside them ran ViT's attention products 4.6 times slower on 2 cores
  // than one thread did (bench/results/cpu_peer_epyc2.md, stop 35).
  if (batch >= threads && !(std::is_same_v<T, float> && t_optimised && fast::DnnlLoaded())) {
    // Many matrices: one thread per group of whole products.
    ParallelChunks(batch, threads, [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i) {
        Block(s, a + a_offsets[i], b + b_offsets[i], out + i * out_size, T(1), false, 0, s.m, 0, s.n);
      }
    });
    return;
  }
  // Few large matrices: split each one.
  for (int64_t i = 0; i < batch; ++i) Product(s, a + a_offsets[i], b + b_offsets[i], out + i * out_size, T(1), false);
}

}  // namespace

ScopedGemmThreadLimit::ScopedGemmThreadLimit(int max_threads) : previous_(t_thread_limit) {
  t_thread_limit = max_threads > 0 ? max_threads : 0;
}
ScopedGemmThreadLimit::~ScopedGemmThreadLimit() { t_thread_limit = previous_; }

ScopedOptimisedProducts::ScopedOptimisedProducts(bool on) : previous_(t_optimised) { t_optimised = on; }
ScopedOptimisedProducts::~ScopedOptimisedProducts() { t_optimised = previous_; }

// The CPU's cores, asked once: glibc reads /sys for it, tens of
// microseconds that every product of a small model paid before.
unsigned Cores() {
  static const unsigned cores = std::thread::hardware_concurrency();
  return cores;
}

namespace {
unsigned ThreadLimit() {
  unsigned hw = Cores();
  if (t_thread_limit > 0) hw = std::min<unsigned>(hw == 0 ? 1 : hw, static_cast<unsigned>(t_thread_limit));
  return hw;
}
}  // namespace

int PoolThreadsFor(double units, double min_per_thread) {
  const unsigned hw = ThreadLimit();
  if (hw <= 1 || units < 2 * min_per_thread) return 1;
  return static_cast<int>(hw);  // the whole team (gemm.h)
}

int GemmThreadsFor(double macs) {
  const unsigned hw = ThreadLimit();
  if (hw <= 1 || macs < 2 * kMinMacsPerThread) return 1;
  return static_cast<int>(std::min<double>(hw, macs / kMinMacsPerThread));
}

namespace gemm_internal {
VIGIL_GEMM_BLOCK_DEFINE(EigenBlockBaseline)
}  // namespace gemm_internal

GemmIsa GemmIsaInUse() { return IsaInUse().load(); }

bool UseGemmIsa(GemmIsa isa) {
  if (static_cast<int>(isa) > static_cast<int>(DetectIsa())) return false;
  IsaInUse().store(isa);
  return true;
}

void GemmRowMajor(const GemmShape& s, const float* a, const float* b, float* out, float alpha, bool accumulate) {
  Product(s, a, b, out, alpha, accumulate);
}
void GemmRowMajor(const GemmShape& s, const double* a, const double* b, double* out, double alpha, bool accumulate) {
  Gemm(s, a, b, out, alpha, accumulate);
}
void GemmRowMajor(const GemmShape& s, const int64_t* a, const int64_t* b, int64_t* out, int64_t alpha,
                  bool accumulate) {
  Gemm(s, a, b, out, alpha, accumulate);
}

void BatchedMatMul(const GemmShape& s, const float* a, std::span<const int64_t> a_offsets, const float* b,
                   std::span<const int64_t> b_offsets, float* out) {
  Batched(s, a, a_offsets, b, b_offsets, out);
}
void BatchedMatMul(const GemmShape& s, const double* a, std::span<const int64_t> a_offsets, const double* b,
                   std::span<const int64_t> b_offsets, double* out) {
  Batched(s, a, a_offsets, b, b_offsets, out);
}
void BatchedMatMul(const GemmShape& s, const int64_t* a, std::span<const int64_t> a_offsets, const int64_t* b,
                   std::span<const int64_t> b_offsets, int64_t* out) {
  Batched(s, a, a_offsets, b, b_offsets, out);
}

}  // namespace vigil::cpu
