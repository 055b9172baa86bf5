// Non-overlapping "patchify" convolutions (ViT's patch embedding) as one
// matrix product: ai.vigil.ConvNhwc (ir/layout_nhwc.h) with stride ==
// kernel, no padding, dilation 1 and group 1. Each output pixel then reads
// its own disjoint kH x kW patch of X, so with
//   P [N*OH*OW, kH*kW*C]  (row (n, oy, ox), column (kh, kw, c)), gathered from X,
//   Y [N*OH*OW, M] = P · Wᵀ,
// W [M, kH, kW, C] (KRSC) is already the row-major [M, kH*kW*C] matrix and
// Y the NHWC output [N, OH, OW, M]. Each row of P is kH runs of kW*C
// elements that lie contiguously in X (from X[n, oy*kH + kh, ox*kW, 0]), so
// the gather is a strided copy at memory speed.
//
// Why not cuDNN: ViT-B/16's embedding (3 -> 768 channels, 16x16 patches) is
// a poor shape for its tensor-core engines (C = 3): 0.58 ms at batch 64 on
// an H100, ~25 TFLOP/s for 14.8 GFLOP, where a cuBLASLt product of
// [12544, 768] x [768, 768] runs at several times that, and the gather
// moves ~40 MB (float16).
//
// conv_patch.cu holds the shape test and the gather kernel (the test
// program compiles it in to launch the kernel directly); conv_patch_gemm.cpp
// the whole convolution (gather, product, epilogue).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include <cuda_runtime_api.h>

#include "backends/cuda/epilogue.h"
#include "base/status.h"
#include "ir/dtype.h"

namespace vigil::cuda {

class CudaKernelContext;

// The geometry of one patch convolution: X [batch, in_h, in_w, channels],
// W [out_channels, kernel_h, kernel_w, channels], Y [batch, out_h, out_w,
// out_channels] with out_h = in_h / kernel_h and out_w = in_w / kernel_w
// (the rows and columns of X past the last whole patch are not read).
struct PatchShape {
  int64_t batch = 0, in_h = 0, in_w = 0, channels = 0;
  int64_t kernel_h = 0, kernel_w = 0;
  int64_t out_h = 0, out_w = 0, out_channels = 0;

  int64_t rows() const { return batch * out_h * out_w; }            // P's and Y's rows
  int64_t depth() const { return kernel_h * kernel_w * channels; }  // P's columns, the product's K
};

// The patch geometry of a ConvNhwc with X `x` [N, H, W, C], W `w` [M, kH,
// kW, C/group], Y `y` [N, OH, OW, M], `group`, and the 2-D `strides`,
// `pads_begin`, `pads_end` and `dilations`; nullopt unless strides ==
// (kH, kW), every pad is 0, dilations are 1, group is 1, kH*kW > 1 (a 1x1
// convolution is a product already, which cuDNN runs well), the dims agree
// with each other, and X and P each have fewer than 2^31 elements (the
// gather's 32-bit indexing).
std::optional<PatchShape> PatchShapeOf(const std::vector<int64_t>& x, const std::vector<int64_t>& w,
                                       const std::vector<int64_t>& y, int64_t group,
                                       const std::vector<int64_t>& strides, const std::vector<int64_t>& pads_begin,
                                       const std::vector<int64_t>& pads_end, const std::vector<int64_t>& dilations);

// Whether the patch path is on: the environment variable VIGIL_PATCH_GEMM
// is not "0" (which leaves these convolutions to cuDNN, to measure the
// difference). Read on every call, so tests can switch it.
bool PatchGemmEnabled();

// The bytes each thread of the gather copies at once for these operands:
// 16 where a run of kW*C elements, a row of X and both pointers allow it,
// else the widest of 8, 4 and 2 that does, down to one element.
int PatchGatherUnitBytes(const PatchShape& shape, ir::DataType dtype, const void* x, const void* p);

// p [rows, depth] = the patches of x, for a 2- or 4-byte `dtype` (device
// pointers). Writes every element of p and nothing past it. Asynchronous on
// `stream`; a shape PatchShapeOf would not give is an error.
Status LaunchPatchGather(const PatchShape& shape, ir::DataType dtype, const void* x, void* p, cudaStream_t stream);

// y = act(conv(x, w) + bias + z) for the patch convolution `shape`, in
// float32, float16 or bfloat16 `dtype` (device pointers; bias [M] and z
// (Y's shape) may be null): the gather into the stream's workspace, one
// cuBLASLt product (float32 accumulation; TF32 only where the session
// allows it), then the epilogue kernel. Queued on ctx's stream.
Status RunPatchConv(CudaKernelContext& ctx, const PatchShape& shape, ir::DataType dtype, const void* x,
                    const void* w, const void* bias, const void* z, void* y, NhwcActivation act);

}  // namespace vigil::cuda
