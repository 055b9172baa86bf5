// CUDA kernels of the vision and detection ops: GridSample and AffineGrid
// (vision.cu), RoiAlign and NonMaxSuppression (detection.cu). Kept apart
// from cuda_kernel.h so that adding them rebuilds only cuda_kernel.cpp.
#pragma once

#include <span>

#include "backends/cuda/cuda_kernel.h"

namespace vigil::cuda {

std::span<const CudaKernelDef> VisionCudaKernels();     // vision.cu (GridSample, AffineGrid)
std::span<const CudaKernelDef> DetectionCudaKernels();  // detection.cu (RoiAlign, NonMaxSuppression)

}  // namespace vigil::cuda
