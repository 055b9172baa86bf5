// The kernel list of the channels-last pools on the GPU (pool_nhwc.cu):
// ai.vigil.MaxPoolNhwc, AveragePoolNhwc and GlobalAveragePoolNhwc, written
// by the NHWC layout pass (ir/layout_nhwc.h describes the ops) for the pools
// of a channels-last ResNet body, so that no layout transposes surround
// them.
//
// Channels are contiguous, so each thread works on a vector of channels:
// 16-byte loads (8 halfs, 4 floats) when C is a multiple of that and the
// tensors are 16-byte aligned, else 8-byte ones, else one element. Windowed
// pools run one thread per (output pixel, channel vector), with the
// semantics of the CPU kernels (backends/cpu/pool.cpp): a NaN wins a max,
// padding never does, a window wholly in the padding gives -inf (max) or NaN
// (average); averages accumulate in float. The global average pool runs one
// block per (image, 32 channel vectors), its rows of threads splitting H*W.
#pragma once

#include <span>

#include "backends/cuda/cuda_kernel.h"

namespace vigil::cuda {

// Part of FindCudaKernel's family list (cuda_kernel.cpp).
std::span<const CudaKernelDef> PoolNhwcCudaKernels();

}  // namespace vigil::cuda
