// The patch convolution of conv_patch.h as gather + one cuBLASLt product +
// epilogue. Host code only (the kernels are in conv_patch.cu and
// epilogue.cu), kept apart from conv_patch.cu so that the test program can
// compile the gather kernel in without the product's dependencies.
#include <cstdint>

#include "backends/cuda/conv_patch.h"
#include "backends/cuda/cuda_kernel.h"
#include "backends/cuda/matmul_cublaslt.h"

namespace vigil::cuda {

Status RunPatchConv(CudaKernelContext& ctx, const PatchShape& s, ir::DataType dtype, const void* x, const void* w,
                    const void* bias, const void* z, void* y, NhwcActivation act) {
  const int64_t rows = s.rows(), depth = s.depth();
  const size_t p_bytes = static_cast<size_t>(rows * depth) * static_cast<size_t>(ir::DataTypeBits(dtype) / 8);
  // The stream has one workspace, and RowMajorGemm takes its cuBLASLt
  // workspace (at most kMaxLtWorkspace bytes) from its start. P goes past
  // that, so the product never overwrites the matrix it reads. Asking for
  // the whole size first means the product's own request then fits and
  // returns the same block (Workspace grows, never moves, while it fits).
  VIGIL_ASSIGN_OR_RETURN(void* space, ctx.stream_context().Workspace(kMaxLtWorkspace + p_bytes));
  void* p = static_cast<uint8_t*>(space) + kMaxLtWorkspace;
  VIGIL_RETURN_IF_ERROR(LaunchPatchGather(s, dtype, x, p, ctx.stream()));
  // Y [rows, M] = P [rows, K] · Wᵀ, W stored [M, K] (KRSC). A float32
  // convolution follows the convolutions' precision, not the products':
  // exact unless TF32 or tf32x3_convolutions is on (ViT-B/16's patch
  // embedding ran 3xTF32 with the products' default before).
  const CudaOptions& o = ctx.options();
  const bool exact = dtype == ir::DataType::kFloat32 && !o.allow_tf32 && !o.tf32x3_convolutions;
  VIGIL_RETURN_IF_ERROR(RowMajorGemmNT(ctx, dtype, rows, s.out_channels, depth, p, w, y, ProductEpilogue{}, exact));
  if (!bias && !z && act == NhwcActivation::kNone) return Status::Ok();
  return LaunchNhwcBiasActivation(y, bias, z, dtype, rows, s.out_channels, act, ctx.stream());
}

}  // namespace vigil::cuda
