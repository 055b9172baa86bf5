// Depthwise 2D convolution, channels-last, by our own kernel
// (conv_depthwise.cu): ai.vigil.ConvNhwc (ir/layout_nhwc.h) with group == C
// == M and one input channel per group, i.e. X [N, H, W, C], W [C, kH, kW, 1]
// (KRSC), Y [N, OH, OW, C], with the per-channel bias, the residual Z and
// the Relu/Relu6 activation fused: Y = act(conv(X, W) + B + Z), accumulated
// in float32 and rounded once. ConvNhwc's input_activation (Relu/Relu6
// applied to each element of X as it is loaded) is fused too, so that the
// convolution writing X needs no activation pass of its own: in MobileNetV2
// the ReLU6 after each expansion convolution, which cuDNN cannot fuse at
// speed, moves here (ir/layout_nhwc.h).
//
// Why not cuDNN: its NHWC grouped engines were about 2x slower than its NCHW
// ones (cuDNN 9.14, H100), and NCHW depthwise convolutions cost a pair of
// layout transposes around every one in a MobileNet body. A depthwise
// convolution does ~9 multiply-adds per element it reads, so it is bound by
// memory bandwidth, and a direct kernel that reads X once (channel vectors,
// a run of output pixels per thread reusing the input columns they share,
// the weights in registers) is as fast as anything can be.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include <cuda_runtime_api.h>

#include "backends/cuda/epilogue.h"
#include "base/status.h"
#include "ir/dtype.h"

namespace vigil::cuda {

// The geometry of one depthwise convolution (channel multiplier 1).
struct DepthwiseConvShape {
  int64_t batch = 0, in_h = 0, in_w = 0, channels = 0;  // X [batch, in_h, in_w, channels]
  int64_t out_h = 0, out_w = 0;                         // Y [batch, out_h, out_w, channels]
  int64_t kernel_h = 0, kernel_w = 0;                   // W [channels, kernel_h, kernel_w, 1]
  int64_t stride_h = 1, stride_w = 1;
  int64_t pad_top = 0, pad_left = 0;  // the bottom/right pads follow from out_h/out_w
  int64_t dilation_h = 1, dilation_w = 1;
};

// The depthwise geometry of a ConvNhwc with X `x` [N, H, W, C], W `w` [M,
// kH, kW, C/group], Y `y` [N, OH, OW, M], `group`, and the 2-D `strides`,
// `pads_begin` (top, left) and `dilations`; nullopt when the node is not
// depthwise (group == C == M, C/group == 1), is beyond the kernel's index
// range, or the environment variable VIGIL_DEPTHWISE is "cudnn" (which
// forces cuDNN, to measure the difference; read on every call).
std::optional<DepthwiseConvShape> DepthwiseShapeOf(const std::vector<int64_t>& x, const std::vector<int64_t>& w,
                                                   const std::vector<int64_t>& y, int64_t group,
                                                   const std::vector<int64_t>& strides,
                                                   const std::vector<int64_t>& pads_begin,
                                                   const std::vector<int64_t>& dilations);

// Whether the environment variable VIGIL_DEPTHWISE is "cudnn" (read on
// every call): then no shape takes the kernel.
bool DepthwiseForcedToCudnn();

// y = act(depthwise_conv(input_act(x), w) + bias + z) for float32, float16
// or bfloat16 `dtype` (all operands of that dtype, device pointers; bias [C]
// and z (Y's shape) may be null; the zero padding is not activated, which
// is the same as both activations give 0 for it). Every element of y is
// written. Asynchronous on `stream`; a shape DepthwiseShapeOf would not give
// is an error.
Status LaunchDepthwiseConvNhwc(const DepthwiseConvShape& shape, ir::DataType dtype, const void* x, const void* w,
                               const void* bias, const void* z, void* y, NhwcActivation act,
                               NhwcActivation input_act, cudaStream_t stream);

}  // namespace vigil::cuda
