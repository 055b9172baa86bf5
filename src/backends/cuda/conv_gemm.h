// Exact float32 channels-last convolutions as cuBLASLt products: ConvNhwc
// (ir/layout_nhwc.h) with group 1 and X [N, H, W, C], W [M, kH, kW, C]
// (KRSC), Y [N, OH, OW, M]. With
//   P [N*OH*OW, kH*kW*C]  (row (n, oy, ox), column (kh, kw, c)): the input
//                          pixels each output pixel reads, zero where the
//                          padding is (im2col),
//   Y [N*OH*OW, M] = P · Wᵀ
// since W is already the row-major matrix [M, kH*kW*C] and Y the NHWC
// output. A 1x1 convolution of stride 1 without padding needs no P: X is
// the matrix. The bias, the residual Z and a Relu run in cuBLASLt's
// epilogue, so Y is written once (Relu6 has no such epilogue: the epilogue
// kernel follows).
//
// Why: cuDNN's exact float32 engines (TF32 off) run at about 40% of an
// H200's float32 rate and take NCHW only, while cuBLAS's float32 products
// run near twice that on these shapes. On an H200 (PyTorch's cuDNN 9.19 and
// cuBLAS, GPU time per convolution, tools/device/conv_gemm_probe.py),
// ResNet-50's 1x1 convolutions took 0.58 ms at batch 1 through cuDNN and
// 0.33 as products, its kxk ones 0.84 and 0.36 with the gather; at batch 64
// the 1x1 ones 8.1 and 6.7 ms. cuDNN keeps the 3x3 convolutions of stride 1
// over many pixels, where its Winograd engines do 2.25x fewer
// multiplications (GemmConvPays, conv_measure_rule.h).
//
// conv_gemm.cu holds the shape test and the gather kernel (the test program
// compiles it in to launch the gather directly); conv_gemm_run.cpp the whole
// convolution (gather, product, epilogue).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include <cuda_runtime_api.h>

#include "backends/cuda/epilogue.h"
#include "base/status.h"
#include "ir/dtype.h"

namespace vigil::ir {
struct Node;
}  // namespace vigil::ir

namespace vigil::runtime {
struct NodeTypes;
}  // namespace vigil::runtime

namespace vigil::cuda {

class CudaKernelContext;
struct CudaOptions;

// The geometry of one convolution as a product.
struct GemmConvShape {
  int64_t batch = 0, in_h = 0, in_w = 0, channels = 0;
  int64_t kernel_h = 0, kernel_w = 0;
  int64_t stride_h = 1, stride_w = 1, pad_top = 0, pad_left = 0, dilation_h = 1, dilation_w = 1;
  int64_t out_h = 0, out_w = 0, out_channels = 0;

  int64_t rows() const { return batch * out_h * out_w; }            // P's and Y's rows
  int64_t depth() const { return kernel_h * kernel_w * channels; }  // P's columns, the product's K
  // Whether X itself is P: 1x1, stride 1, no padding.
  bool direct() const {
    return kernel_h == 1 && kernel_w == 1 && stride_h == 1 && stride_w == 1 && pad_top == 0 && pad_left == 0;
  }
};

// The product geometry of a ConvNhwc with X `x` [N, H, W, C], W `w` [M, kH,
// kW, C/group], Y `y` [N, OH, OW, M], `group`, and the 2-D `strides`,
// `pads_begin`, `pads_end` and `dilations`; nullopt unless group is 1, the
// dims agree with each other and with the convolution's output size, every
// dim is positive, and X, Y and each row count stay below 2^31 elements
// (the gather's 32-bit indexing).
std::optional<GemmConvShape> GemmConvShapeOf(const std::vector<int64_t>& x, const std::vector<int64_t>& w,
                                             const std::vector<int64_t>& y, int64_t group,
                                             const std::vector<int64_t>& strides,
                                             const std::vector<int64_t>& pads_begin,
                                             const std::vector<int64_t>& pads_end,
                                             const std::vector<int64_t>& dilations);

// Whether a ConvNhwc `node` with these (NHWC) types runs at least as well
// channels-last as the NCHW Conv it replaces, under the session's
// `options` (CudaBackend::PrefersChannelsLast; the layout pass weighs the
// answers per model, runtime/conv_layout.h). Yes, but for the exact
// float32 ones (TF32 and tf32x3_convolutions off) that ConvNhwc hands to
// cuDNN, GemmConvPays being false at their batch (1 where unknown):
// cuDNN's exact engines take NCHW only and wrap transposes around an NHWC
// convolution. A UNet at 224x224 ran 13-33% slower channels-last on an
// H200 (bench/results/conv_gemm_h200.md). Defined in conv_cudnn.cpp.
bool ConvNhwcPrefersChannelsLast(const CudaOptions& options, const ir::Node& node, const runtime::NodeTypes& types);

// Whether exact float32 convolutions run as products: the developer switch
// VIGIL_CONV_GEMM is not "0" (which keeps them NCHW on cuDNN, as before, to
// measure the difference; session_factory.cpp reads it for the layout).
// Read on every call, so tests can switch it.
bool GemmConvEnabled();

// P rows [row0, row0 + rows) of `shape`'s convolution of x, into p [rows,
// depth], for a 2- or 4-byte `dtype` (device pointers): every element of
// those rows, zeros for the padding, nothing past them. Asynchronous on
// `stream`; a shape GemmConvShapeOf would not give, or a range outside
// [0, rows()), is an error.
Status LaunchConvGather(const GemmConvShape& shape, ir::DataType dtype, const void* x, void* p, int64_t row0,
                        int64_t rows, cudaStream_t stream);

// The most bytes of P one product reads: larger ones run in slices of rows.
inline constexpr size_t kMaxConvGatherBytes = size_t{64} << 20;

// y = act(conv(x, w) + bias + z) for `shape` in float32 (device pointers;
// bias [M] and z (Y's shape) may be null): the gather of P into the
// stream's workspace (in slices of rows within `max_gather_bytes`), one
// exact float32 cuBLASLt product per slice with bias, z and Relu in its
// epilogue, and the epilogue kernel for Relu6. *done stays false, with
// nothing queued, where one row of P is over `max_gather_bytes`.
Status RunGemmConv(CudaKernelContext& ctx, const GemmConvShape& shape, ir::DataType dtype, const void* x,
                   const void* w, const void* bias, const void* z, void* y, NhwcActivation act, bool* done,
                   size_t max_gather_bytes = kMaxConvGatherBytes);

}  // namespace vigil::cuda
