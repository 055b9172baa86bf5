// The CPU kernel list of the convolution and pooling family; the kernels are
// in conv.cpp (Conv, ConvTranspose), deform_conv.cpp, causal_conv.cpp
// (CausalConvWithState) and pool.cpp (the pools).
#include "backends/cpu/conv_pool_kernels.h"
#include "backends/cpu/kernel_families.h"

namespace vigil::cpu {

std::span<const KernelDef> ConvPoolKernels() {
  static const KernelDef kKernels[] = {
      {"", "Conv", 1, kLatest, ConvKernel},
      {"", "ConvTranspose", 1, kLatest, ConvTransposeKernel},
      {"", "DeformConv", 19, kLatest, DeformConvKernel},
      {"", "CausalConvWithState", 27, kLatest, CausalConvWithStateKernel},
      {"", "MaxPool", 1, kLatest, MaxPoolKernel},
      {"", "AveragePool", 1, kLatest, AveragePoolKernel},
      {"", "LpPool", 1, kLatest, LpPoolKernel},
      {"", "GlobalAveragePool", 1, kLatest, GlobalAveragePoolKernel},
      {"", "GlobalMaxPool", 1, kLatest, GlobalMaxPoolKernel},
      {"", "GlobalLpPool", 1, kLatest, GlobalLpPoolKernel},
      {"", "MaxUnpool", 9, kLatest, MaxUnpoolKernel},
      {"ai.vigil", "ConvNhwc", 1, kLatest, ConvNhwcKernel},  // conv_nhwc.cpp
      {"ai.vigil", "FusedConv", 1, kLatest, FusedConvKernel},  // conv_nhwc.cpp
      {"ai.vigil", "MaxPoolNhwc", 1, kLatest, MaxPoolNhwcKernel},  // pool_nhwc.cpp
      {"ai.vigil", "AveragePoolNhwc", 1, kLatest, AveragePoolNhwcKernel},
      {"ai.vigil", "GlobalAveragePoolNhwc", 1, kLatest, GlobalAveragePoolNhwcKernel},
  };
  return kKernels;
}

}  // namespace vigil::cpu
