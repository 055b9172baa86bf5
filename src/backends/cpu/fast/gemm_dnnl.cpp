// float32 matrix products through oneDNN's sgemm (row-major, JIT-compiled
// for the CPU it runs on), in place of the Eigen blocks of gemm.cpp where
// oneDNN is loaded and the calling node may take an optimised path.
#include "backends/cpu/fast/dnnl_library.h"
#include "backends/cpu/fast/fast_kernels.h"

namespace vigil::cpu::fast {

#if defined(VIGIL_HAVE_DNNL_HEADERS)

bool SgemmDnnl(const GemmShape& s, const float* a, const float* b, float* out, float alpha, bool accumulate,
               int threads) {
  const DnnlApi* api = Dnnl();
  if (!api || s.m <= 0 || s.n <= 0 || s.k <= 0) return false;  // empty products stay with gemm.cpp's rules
  api->omp_set_num_threads(threads < 1 ? 1 : threads);
  const dnnl_status_t st =
      api->dnnl_sgemm(s.trans_a ? 'T' : 'N', s.trans_b ? 'T' : 'N', s.m, s.n, s.k, alpha, a, s.trans_a ? s.m : s.k, b,
                      s.trans_b ? s.k : s.n, accumulate ? 1.0f : 0.0f, out, s.n);
  return st == dnnl_success;  // on a refusal (arguments it does not take), gemm.cpp computes the product
}

#else

bool SgemmDnnl(const GemmShape&, const float*, const float*, float*, float, bool, int) { return false; }

#endif

}  // namespace vigil::cpu::fast
