// The Eigen block product for CPUs with AVX-512 F/DQ/VL (compiled with
// -mavx512f -mavx512dq -mavx512vl -mavx2 -mfma -O2; gemm.cpp calls it only
// where the CPU has them). Eigen is renamed so that its instantiations here
// stay apart from the baseline ones.
// GCC's avx512fintrin.h makes "undefined" vectors by self-initialisation,
// which -Wuninitialized reports in every Eigen kernel that inlines them.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#define Eigen VigilEigenAvx512
#include "backends/cpu/gemm_eigen_block.h"

namespace vigil::cpu::gemm_internal {
VIGIL_GEMM_BLOCK_DEFINE(EigenBlockAvx512)
}  // namespace vigil::cpu::gemm_internal
