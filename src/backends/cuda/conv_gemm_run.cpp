// The convolution of conv_gemm.h as gather + cuBLASLt product with its
// epilogue. Host code only (the gather kernel is in conv_gemm.cu), kept
// apart from conv_gemm.cu so that the test program can compile the gather
// in without the product's dependencies.
#include <algorithm>
#include <cstdint>

#include "backends/cuda/conv_gemm.h"
#include "backends/cuda/cuda_kernel.h"
#include "backends/cuda/matmul_cublaslt.h"

namespace vigil::cuda {

Status RunGemmConv(CudaKernelContext& ctx, const GemmConvShape& s, ir::DataType dtype, const void* x, const void* w,
                   const void* bias, const void* z, void* y, NhwcActivation act, bool* done, size_t max_gather_bytes) {
  *done = false;
  const int64_t rows = s.rows(), depth = s.depth(), m = s.out_channels;
  const auto esize = static_cast<size_t>(ir::DataTypeBits(dtype) / 8);
  const bool exact = dtype == ir::DataType::kFloat32;
  // Relu6 has no cuBLASLt epilogue: the product adds bias and Z, the
  // epilogue kernel clips after.
  const bool relu6 = act == NhwcActivation::kRelu6;
  auto finish = [&]() -> Status {
    *done = true;
    if (!relu6) return Status::Ok();
    return LaunchNhwcBiasActivation(y, nullptr, nullptr, dtype, rows, m, act, ctx.stream());
  };
  auto product = [&](const void* p, int64_t row0, int64_t count) {
    const size_t out_offset = static_cast<size_t>(row0 * m) * esize;
    const ProductEpilogue e{bias, z ? static_cast<const uint8_t*>(z) + out_offset : nullptr,
                            act == NhwcActivation::kRelu};
    return RowMajorGemmNT(ctx, dtype, count, m, depth, p, w, static_cast<uint8_t*>(y) + out_offset, e, exact);
  };
  if (s.direct()) {
    VIGIL_RETURN_IF_ERROR(product(x, 0, rows));
    return finish();
  }
  const size_t row_bytes = static_cast<size_t>(depth) * esize;
  if (row_bytes > max_gather_bytes) return Status::Ok();
  // Even slices: as few as fit, of as equal a size as they can be.
  const int64_t most = std::min<int64_t>(rows, static_cast<int64_t>(max_gather_bytes / row_bytes));
  const int64_t slices = (rows + most - 1) / most;
  const int64_t slice = (rows + slices - 1) / slices;
  // The stream has one workspace, and the product takes its cuBLASLt
  // workspace (at most kMaxLtWorkspace bytes) from its start: P goes past
  // that, so the product never overwrites the matrix it reads (as in
  // conv_patch_gemm.cpp).
  VIGIL_ASSIGN_OR_RETURN(void* space,
                         ctx.stream_context().Workspace(kMaxLtWorkspace + static_cast<size_t>(slice) * row_bytes));
  void* p = static_cast<uint8_t*>(space) + kMaxLtWorkspace;
  for (int64_t row0 = 0; row0 < rows; row0 += slice) {
    const int64_t count = std::min(slice, rows - row0);
    VIGIL_RETURN_IF_ERROR(LaunchConvGather(s, dtype, x, p, row0, count, ctx.stream()));
    VIGIL_RETURN_IF_ERROR(product(p, row0, count));
  }
  return finish();
}

}  // namespace vigil::cuda
