// Small kernels that finish a library call (epilogue.cu): the channel bias,
// residual and activation of Conv/ConvTranspose/FusedConv (NCHW) and
// ConvNhwc after cuDNN, the
// layout transposes of ConvNhwc's NCHW fallback, and Gemm's broadcast C
// before cuBLASLt.
#pragma once

#include <cstdint>
#include <vector>

#include <cuda_runtime_api.h>

#include "base/status.h"
#include "ir/dtype.h"

namespace vigil::cuda {

// ConvNhwc's and FusedConv's activations: none, max(v, 0), min(max(v, 0), 6).
enum class NhwcActivation { kNone, kRelu, kRelu6 };

// Channels-first epilogue of Conv, ConvTranspose and FusedConv: y is [batch,
// channels, spatial]; y = act(y + bias[c] + z) with bias and z (y's shape)
// each optional, in float32 and one pass (one rounding to the dtype).
Status LaunchChannelEpilogue(void* y, const void* bias, const void* z, ir::DataType dtype, int64_t batch,
                             int64_t channels, int64_t spatial, NhwcActivation act, cudaStream_t stream);

// Channels-last epilogue of ConvNhwc: y is [rows, channels] (rows = N*H*W);
// y = act(y + bias[c] + z) with bias and z (same shape as y) each optional,
// in float32 and one pass (one rounding to the dtype).
Status LaunchNhwcBiasActivation(void* y, const void* bias, const void* z, ir::DataType dtype, int64_t rows,
                                int64_t channels, NhwcActivation act, cudaStream_t stream);

// dst [n, cols, rows] = src [n, rows, cols] for elements of 1, 2, 4 or 8
// bytes: a 32x32 shared-memory tile, or a thread per column (row) when the
// other side is short (<= 16: image planes, small channel counts).
Status LaunchBatchedTranspose(void* dst, const void* src, size_t element_bytes, int64_t n, int64_t rows,
                              int64_t cols, cudaStream_t stream);

// dst [N, C, H, W] = src [N, H, W, C] (to_nchw) or dst [N, H, W, C] = src
// [N, C, H, W] (!to_nchw): ConvNhwc's fallback through NCHW engines.
Status LaunchLayoutTranspose(void* dst, const void* src, ir::DataType dtype, int64_t n, int64_t c, int64_t hw,
                             bool to_nchw, cudaStream_t stream);

// dst (shape `dst_shape`) = src (shape `src_shape`, broadcast to it).
Status LaunchBroadcastCopy(void* dst, const void* src, ir::DataType dtype, const std::vector<int64_t>& src_shape,
                           const std::vector<int64_t>& dst_shape, cudaStream_t stream);

}  // namespace vigil::cuda
