// Matrix products for other CUDA kernels (the recurrent ops): one row-major
// product through the same cached cuBLASLt plans as MatMul and Gemm.
#pragma once

#include <cstddef>

#include "backends/cuda/cuda_kernel.h"

namespace vigil::cuda {

// The most cuBLASLt workspace any product asks for. A product takes its
// workspace from the start of StreamContext::Workspace(), so a caller that
// needs scratch memory of its own next to a product (conv_patch_gemm.cpp)
// asks for kMaxLtWorkspace + its bytes and uses the part past this offset.
inline constexpr size_t kMaxLtWorkspace = size_t{32} << 20;

// C[M,N] = alpha * op(A) * op(B) + beta * C, all row-major on the device and
// of `dtype` (float32, float16, bfloat16); op(A) is [M,K] (A stored [K,M]
// when trans_a), op(B) is [K,N] (B stored [N,K] when trans_b). Accumulates
// in float32; queued on ctx's stream.
Status RowMajorGemm(CudaKernelContext& ctx, ir::DataType dtype, int64_t m, int64_t n, int64_t k, const void* a,
                    bool trans_a, const void* b, bool trans_b, void* c, float alpha, float beta);

// What RowMajorGemmNT adds to the product, in cuBLASLt's epilogue: bias [N]
// on every row, the residual R [M, N] (Y's layout) as cuBLASLt's C with
// beta 1, then max(., 0) with `relu`; null pointers add nothing.
struct ProductEpilogue {
  const void* bias = nullptr;
  const void* residual = nullptr;
  bool relu = false;
};

// Y[M,N] = relu?(A[M,K] · B[N,K]ᵀ + bias + R), all row-major on the device
// and of `dtype`, Y written once (conv_gemm.h's convolutions). `exact`:
// a float32 product on CUDA cores, without TF32 or the 3xTF32 split that
// the session's options allow other products.
Status RowMajorGemmNT(CudaKernelContext& ctx, ir::DataType dtype, int64_t m, int64_t n, int64_t k, const void* a,
                      const void* b_nk, void* y, const ProductEpilogue& epilogue, bool exact);

// C[M,N] = A[M,K] · B[N,K]ᵀ, all row-major on the device, A and B int8, C
// int32: the exact sum, on cuBLASLt's int8 engines (int32 accumulation).
// K a multiple of 4 and the pointers 16-byte aligned give the int8 tensor
// core kernels; where cuBLASLt has no algorithm, fails as Unsupported.
Status RowMajorGemmInt8(CudaKernelContext& ctx, int64_t m, int64_t n, int64_t k, const int8_t* a, const int8_t* b_nk,
                        int32_t* c);

}  // namespace vigil::cuda
