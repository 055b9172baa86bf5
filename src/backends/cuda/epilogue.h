// Small kernels that finish a library call (epilogue.cu): the channel bias
// of Conv/ConvTranspose after cuDNN, and Gemm's broadcast C before cuBLASLt.
#pragma once

#include <cstdint>
#include <vector>

#include <cuda_runtime_api.h>

#include "base/status.h"
#include "ir/dtype.h"

namespace vigil::cuda {

Status LaunchChannelBiasAdd(void* y, const void* bias, ir::DataType dtype, int64_t batch, int64_t channels,
                            int64_t spatial, cudaStream_t stream);

// dst (shape `dst_shape`) = src (shape `src_shape`, broadcast to it).
Status LaunchBroadcastCopy(void* dst, const void* src, ir::DataType dtype, const std::vector<int64_t>& src_shape,
                           const std::vector<int64_t>& dst_shape, cudaStream_t stream);

}  // namespace vigil::cuda
