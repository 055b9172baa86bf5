// Row-major matrix products for CPU kernels (MatMul, Gemm, Einsum; usable by
// any kernel that multiplies matrices). float and double go through Eigen;
// on x86-64 its product kernels are built three times (baseline, AVX2+FMA,
// AVX-512) and the widest one the CPU supports is picked at run time, so the
// binary stays portable and still uses the vector units it finds. int64 uses
// plain loops with wrap-around arithmetic, as numpy's integer matmul wraps and
// signed overflow is undefined in C++. Large products are split across
// threads: by batch when there are several matrices, else by rows or columns
// of the output.
#pragma once

#include <cstdint>
#include <span>

namespace vigil::cpu {

// One matrix product: out[M,N] = alpha * op(a) * op(b) (+ out when
// `accumulate`). op(a) is [M,K]: `a` is stored row-major as [M,K], or as
// [K,M] when trans_a. op(b) is [K,N]: `b` is [K,N], or [N,K] when trans_b.
// `out` is row-major [M,N], contiguous, and must not alias a or b. K == 0 gives
// zeros (or leaves `out` unchanged when accumulating).
struct GemmShape {
  int64_t m = 0, n = 0, k = 0;
  bool trans_a = false, trans_b = false;
};
void GemmRowMajor(const GemmShape& s, const float* a, const float* b, float* out, float alpha, bool accumulate);
void GemmRowMajor(const GemmShape& s, const double* a, const double* b, double* out, double alpha, bool accumulate);
void GemmRowMajor(const GemmShape& s, const int64_t* a, const int64_t* b, int64_t* out, int64_t alpha,
                  bool accumulate);

// A batch of products of one shape (alpha 1, no accumulation):
// out + i*M*N = op(a + a_offsets[i]) * op(b + b_offsets[i]) for every i.
// Offsets are in elements and may repeat (broadcast batches).
void BatchedMatMul(const GemmShape& s, const float* a, std::span<const int64_t> a_offsets, const float* b,
                   std::span<const int64_t> b_offsets, float* out);
void BatchedMatMul(const GemmShape& s, const double* a, std::span<const int64_t> a_offsets, const double* b,
                   std::span<const int64_t> b_offsets, double* out);
void BatchedMatMul(const GemmShape& s, const int64_t* a, std::span<const int64_t> a_offsets, const int64_t* b,
                   std::span<const int64_t> b_offsets, int64_t* out);

// At most this many threads for the products started on the calling thread
// (0: as many as the CPU has). The CPU backend sets it around every node from
// its options (the session's intra_op_num_threads); it is per calling thread,
// so concurrent runs of sessions with other limits do not disturb each other.
class ScopedGemmThreadLimit {
 public:
  explicit ScopedGemmThreadLimit(int max_threads);
  ~ScopedGemmThreadLimit();
  ScopedGemmThreadLimit(const ScopedGemmThreadLimit&) = delete;
  ScopedGemmThreadLimit& operator=(const ScopedGemmThreadLimit&) = delete;

 private:
  int previous_;
};
// Whether float32 products started on the calling thread may go to oneDNN's
// sgemm where it is loaded (fast/gemm_dnnl.cpp) instead of Eigen. The CPU
// backend sets it around every node from KernelContext::optimised; outside
// it (and by default) products use Eigen.
class ScopedOptimisedProducts {
 public:
  explicit ScopedOptimisedProducts(bool on);
  ~ScopedOptimisedProducts();
  ScopedOptimisedProducts(const ScopedOptimisedProducts&) = delete;
  ScopedOptimisedProducts& operator=(const ScopedOptimisedProducts&) = delete;

 private:
  bool previous_;
};

// How many threads a product of `macs` multiply-adds is split across here,
// now (the limit above and the CPU's cores).
int GemmThreadsFor(double macs);
// The threads for `units` of work on the OpenMP pool (oneDNN's primitives
// and ParallelFor): 1 below 2 * `min_per_thread`, else the whole team (the
// limit above and the cores), never a count between. libgomp re-forms its
// team whenever the size changes, and sizing each region by its work made
// MobileNetV2 at 16 threads 3x slower than one fixed size (8.7 against
// 2.8 ms on the GPU machine's 16-core host).
int PoolThreadsFor(double units, double min_per_thread);
// Multiply-adds one thread of the OpenMP pool should get at least (a team
// starts in microseconds; 256K multiply-adds take tens of them).
inline constexpr double kMinMacsPerPoolThread = 256.0 * 1024;

// The instruction set float/double products use. The default is the widest
// the CPU supports; UseGemmIsa selects a narrower one (tests run every
// variant this way) and returns false, changing nothing, for one the CPU (or
// this build) lacks. Process-wide.
enum class GemmIsa { kBaseline = 0, kAvx2 = 1, kAvx512 = 2 };
GemmIsa GemmIsaInUse();
bool UseGemmIsa(GemmIsa isa);

}  // namespace vigil::cpu
