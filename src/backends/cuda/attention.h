// The kernel list of vigil's fused attention on the GPU (attention.cu):
// ai.vigil.Attention, multi-head scaled-dot-product attention reading Q, K
// and V straight from the packed in-projection output (layout "sbe"
// [S, B, 3E] or "bse" [B, S, 3E]) and writing Y ([S, B, E] or [B, S, E])
// with no transposes and no [S, S] score matrix in global memory.
//
// float16 / bfloat16 run a flash-attention-style kernel on tensor cores
// (scores and softmax in float, P rounded to the input dtype for P.V, float
// accumulation). float32 runs the same scheme on TF32 tensor cores, as one
// TF32 product (allow_tf32) or three of split operands (allow_tf32x3), and
// a simple CUDA-core kernel when neither is allowed (the session then keeps
// float32 attention unfused). Head sizes D = E / num_heads of 16, 32, 64 and
// 128 are supported.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "backends/cuda/cuda_kernel.h"

namespace vigil::cuda {

// Where one (batch, head)'s [S, D] matrices lie, in elements. Q of row s,
// batch b, head h starts at qkv + s * in_row + b * in_batch + h * D; K and V
// are E and 2E further. Y of the same row starts at
// y + s * out_row + b * out_batch + h * D.
struct AttentionShape {
  int64_t seq = 0, batch = 0, heads = 0, head_size = 0, embed = 0;
  int64_t in_row = 0, in_batch = 0;
  int64_t out_row = 0, out_batch = 0;
  float scale = 1.0f;       // scores = scale * q.k
  float scale_log2 = 1.0f;  // scale * log2(e): the tensor-core kernels use exp2
  bool sbe = true;          // layout "sbe" (else "bse")
  // The optional additive mask M (the kernels take its pointer, null for
  // none): element strides over [B, H, S, S], 0 along dims it broadcasts.
  int64_t mask_b = 0, mask_h = 0, mask_i = 0, mask_j = 0;
  // Set by the float16 / bfloat16 launcher: the mask's rows are 16-byte
  // aligned and contiguous along keys, so each key tile's block of M is
  // staged in shared memory with the K and V tiles (attention_mma.cu).
  bool mask_tile = false;
  // undefined_rows "zero": a row without a finite positive softmax sum (every
  // score -inf, or a NaN or +inf score) is written as 0, else it is NaN.
  bool zero_undefined_rows = false;
};

// The FlashAttention-2-style kernel (attention_mma.cu: mma.sync m16n8k16,
// scores, softmax and output in registers), the default for float16 and
// bfloat16. Empty when it can take `a` for `dtype` with these device
// pointers (`mask` null without a mask); otherwise why not (dtype, head
// size, rows not 16-byte aligned, or scale <= 0 without a mask), and
// attention.cu runs its wmma kernel instead.
std::string AttentionMmaWhyNot(const AttentionShape& a, ir::DataType dtype, const void* qkv, const void* mask,
                               const void* y);

// Launches the mma kernel on `stream` (AttentionMmaWhyNot must be empty).
// Blocks cover the query rows of one (batch, head) (attention_mma.cu's
// ChooseShape); with a mask always so.
Status LaunchAttentionMma(const AttentionShape& a, ir::DataType dtype, const void* qkv, const void* mask, void* y,
                          cudaStream_t stream);

// The float32 kernel on TF32 tensor cores (attention_tf32.cu): empty when it
// can take `a` with these device pointers (`mask` null without a mask);
// otherwise why not (head size, rows not 16-byte aligned, too many blocks,
// or scale <= 0 without a mask).
std::string AttentionTf32WhyNot(const AttentionShape& a, const void* qkv, const void* mask, const void* y);

// Launches it on `stream` (AttentionTf32WhyNot must be empty): `split`
// computes each product as three TF32 products of split operands (TF32 off,
// allow_tf32x3), else as one (allow_tf32).
Status LaunchAttentionTf32(const AttentionShape& a, bool split, const void* qkv, const void* mask, void* y,
                           cudaStream_t stream);

// Part of FindCudaKernel's family list (cuda_kernel.cpp). Declared here, as
// FusedCudaKernels and SoftmaxCudaKernels are in their own headers, so that
// adding it does not touch cuda_kernel.h (included by every .cu file).
std::span<const CudaKernelDef> AttentionCudaKernels();

}  // namespace vigil::cuda
