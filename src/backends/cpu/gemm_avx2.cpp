// The Eigen block product for CPUs with AVX2 and FMA (compiled with -mavx2
// -mfma -O2; gemm.cpp calls it only where the CPU has both). Eigen is renamed
// so that its instantiations here stay apart from the baseline ones.
#define Eigen VigilEigenAvx2
#include "backends/cpu/gemm_eigen_block.h"

namespace vigil::cpu::gemm_internal {
VIGIL_GEMM_BLOCK_DEFINE(EigenBlockAvx2)
}  // namespace vigil::cpu::gemm_internal
