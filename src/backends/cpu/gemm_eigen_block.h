// Internal to gemm*.cpp: the Eigen block product, compiled once per
// instruction set. gemm.cpp includes this as is (baseline x86-64 or whatever
// the target is); gemm_avx2.cpp and gemm_avx512.cpp include it after renaming
// Eigen's namespace with a macro, because Eigen's templates instantiated with
// -mavx2 must not be merged by the linker with the baseline instantiations of
// the same names (that could run AVX2 code on a CPU without it). Those files
// are compiled with -O2 always, so that small standard-library helpers are
// inlined rather than left as shared out-of-line copies.
#pragma once

#include <cstdint>

#include <Eigen/Core>

#include "backends/cpu/gemm.h"

namespace vigil::cpu::gemm_internal {

// The per-ISA entry points (gemm.cpp picks one at run time). Output rows
// [r0, r1) x columns [c0, c1) of out = alpha * op(a) * op(b) (+ out).
#define VIGIL_GEMM_BLOCK_DECL(name, T)                                                                       \
  void name(const GemmShape& s, const T* a, const T* b, T* out, T alpha, bool accumulate, int64_t r0, int64_t r1, \
            int64_t c0, int64_t c1)
VIGIL_GEMM_BLOCK_DECL(EigenBlockBaseline, float);
VIGIL_GEMM_BLOCK_DECL(EigenBlockBaseline, double);
VIGIL_GEMM_BLOCK_DECL(EigenBlockAvx2, float);
VIGIL_GEMM_BLOCK_DECL(EigenBlockAvx2, double);
VIGIL_GEMM_BLOCK_DECL(EigenBlockAvx512, float);
VIGIL_GEMM_BLOCK_DECL(EigenBlockAvx512, double);

namespace {

template <typename T>
using RowMatrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <typename T>
using ConstMatrixMap = Eigen::Map<const RowMatrix<T>, 0, Eigen::OuterStride<>>;
template <typename T>
using MatrixMap = Eigen::Map<RowMatrix<T>, 0, Eigen::OuterStride<>>;

// The operands are mapped in place (strided views; transposes are views too),
// so nothing is copied.
template <typename T>
void EigenBlock(const GemmShape& s, const T* a, const T* b, T* out, T alpha, bool accumulate, int64_t r0, int64_t r1,
                int64_t c0, int64_t c1) {
  const int64_t rows = r1 - r0, cols = c1 - c0;
  if (rows <= 0 || cols <= 0) return;
  MatrixMap<T> o(out + r0 * s.n + c0, rows, cols, Eigen::OuterStride<>(s.n));
  if (s.k == 0) {
    if (!accumulate) o.setZero();
    return;
  }
  auto product = [&](const auto& lhs, const auto& rhs) {
    if (accumulate) {
      o.noalias() += alpha * lhs * rhs;
    } else {
      o.noalias() = alpha * lhs * rhs;
    }
  };
  auto with_b = [&](const auto& lhs) {
    if (s.trans_b) {
      product(lhs, ConstMatrixMap<T>(b + c0 * s.k, cols, s.k, Eigen::OuterStride<>(s.k)).transpose());
    } else {
      product(lhs, ConstMatrixMap<T>(b + c0, s.k, cols, Eigen::OuterStride<>(s.n)));
    }
  };
  if (s.trans_a) {
    with_b(ConstMatrixMap<T>(a + r0, s.k, rows, Eigen::OuterStride<>(s.m)).transpose());
  } else {
    with_b(ConstMatrixMap<T>(a + r0 * s.k, rows, s.k, Eigen::OuterStride<>(s.k)));
  }
}

}  // namespace

// Defines the entry points `name` for float and double in the including file.
#define VIGIL_GEMM_BLOCK_DEFINE(name)                                                                       \
  VIGIL_GEMM_BLOCK_DECL(name, float) { EigenBlock(s, a, b, out, alpha, accumulate, r0, r1, c0, c1); }    \
  VIGIL_GEMM_BLOCK_DECL(name, double) { EigenBlock(s, a, b, out, alpha, accumulate, r0, r1, c0, c1); }

}  // namespace vigil::cpu::gemm_internal
