// CUDA kernels of the quantization ops: QuantizeLinear, DequantizeLinear,
// DynamicQuantizeLinear and ai.vigil.QAdd (quantize_linear.cu),
// ai.vigil.QConvNhwc through cuDNN's int8 engines (conv_int8.cpp) and
// ai.vigil.QMatMul through cuBLASLt's (matmul_int8.cpp).
// Kept apart from cuda_kernel.h so that adding them rebuilds only
// cuda_kernel.cpp.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "backends/cuda/cuda_kernel.h"

namespace vigil::cuda {

std::span<const CudaKernelDef> QuantizeLinearCudaKernels();
std::span<const CudaKernelDef> Int8ConvCudaKernels();
std::span<const CudaKernelDef> Int8MatMulCudaKernels();

// What QConvNhwc and QMatMul both ask of a node at load: int8 inputs 0 and 1
// (X or A, and W), float32 scale and bias (inputs 2 and 3; a type not known
// yet passes), and `activation` "" or "Relu". `op` names the op in why_not.
bool Int8ProductTypesSupported(const ir::Node& node, const runtime::NodeTypes& types, const char* op,
                               std::string* why_not);

// y[r, m] = saturate(round_half_even(act(float(acc[r, m]) * scale[m] +
// bias[m]))) for `rows` rows of `m` channels (QConvNhwc's epilogue where
// cuDNN cannot fuse it, and QMatMul's; the product and the sum each rounded
// to float32).
// `acc` holds int32, or float32 integers when `float_acc`.
Status LaunchRequantizeRows(const void* acc, bool float_acc, const float* scale, const float* bias, int8_t* y,
                            int64_t rows, int64_t m, bool relu, cudaStream_t stream);

// y[r, k] = x[r, k] as float32 (or float16 with `half`; exact either way)
// for k < c, and 0 for c <= k < cp, over `rows` rows (QConvNhwc's exact
// float route: channels-last data with its channels padded to cp).
Status LaunchInt8ToFloat(const int8_t* x, void* y, bool half, int64_t rows, int64_t c, int64_t cp,
                         cudaStream_t stream);

}  // namespace vigil::cuda
