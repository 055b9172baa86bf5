// Internal to the CPU conv/pool family: the kernels listed by
// ConvPoolKernels() (conv_pool.cpp) and the resolved window geometry they
// share.
#pragma once

#include <cstdint>
#include <vector>

#include "backends/cpu/kernel.h"
#include "ops/conv_geometry.h"

namespace vigil::cpu {

// The sliding window of one node resolved against actual input sizes. For
// ConvTranspose, `image` is its output and `columns` its input, so that the
// same index arithmetic serves both directions:
//   image position = column position * stride - pad_begin + tap * dilation.
struct SpatialGeometry {
  std::vector<int64_t> image;    // input spatial sizes (Conv, pools)
  std::vector<int64_t> columns;  // output spatial sizes (Conv, pools)
  std::vector<int64_t> kernel;
  std::vector<int64_t> strides;
  std::vector<int64_t> dilations;
  std::vector<int64_t> pad_begin;
  std::vector<int64_t> pad_end;  // pooling's count_include_pad counts taps up to image + pad_end

  size_t rank() const { return image.size(); }
  int64_t ImageSize() const;
  int64_t ColumnSize() const;
  int64_t KernelSize() const;
};

// Resolves the window of a Conv or pooling node over `input_spatial`.
Result<SpatialGeometry> ForwardGeometry(const ir::Node& node, const ops::WindowAttrs& w,
                                        const std::vector<int64_t>& input_spatial);

// Fresh host buffers, for the outputs of a kernel run inside another.
class ScratchAllocator : public runtime::OutputAllocator {
 public:
  Result<runtime::Tensor> Allocate(size_t, ir::DataType dtype, std::vector<int64_t> shape) override;
};

// dst = src (rank 4, whole-byte elements) with its dims reordered: dst dim i
// is src dim perm[i]; dst must already have that shape (conv_nhwc.cpp).
Status Permute4D(const KernelContext& ctx, const runtime::Tensor& src, const std::vector<int64_t>& perm,
                 runtime::Tensor& dst);
// A new tensor holding `src` permuted by `perm` (conv_nhwc.cpp).
Result<runtime::Tensor> Permuted(const KernelContext& ctx, const runtime::Tensor& src,
                                 const std::vector<int64_t>& perm);

Status ConvKernel(KernelContext& ctx);
Status ConvTransposeKernel(KernelContext& ctx);
Status DeformConvKernel(KernelContext& ctx);  // deform_conv.cpp
Status CausalConvWithStateKernel(KernelContext& ctx);  // causal_conv.cpp
// ai.vigil.ConvNhwc (conv_nhwc.cpp): Conv on channels-last tensors.
Status ConvNhwcKernel(KernelContext& ctx);
Status FusedConvKernel(KernelContext& ctx);  // ai.vigil.FusedConv, conv_nhwc.cpp
Status MaxPoolKernel(KernelContext& ctx);
Status AveragePoolKernel(KernelContext& ctx);
Status LpPoolKernel(KernelContext& ctx);
Status GlobalAveragePoolKernel(KernelContext& ctx);
Status GlobalMaxPoolKernel(KernelContext& ctx);
Status GlobalLpPoolKernel(KernelContext& ctx);
Status MaxUnpoolKernel(KernelContext& ctx);
// ai.vigil.MaxPoolNhwc, AveragePoolNhwc, GlobalAveragePoolNhwc (pool_nhwc.cpp).
Status MaxPoolNhwcKernel(KernelContext& ctx);
Status AveragePoolNhwcKernel(KernelContext& ctx);
Status GlobalAveragePoolNhwcKernel(KernelContext& ctx);

}  // namespace vigil::cpu
