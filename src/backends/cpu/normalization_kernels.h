// Internal to the CPU normalisation family: the kernels listed by
// NormalizationKernels() (normalization.cpp) and the broadcast index helpers
// that LayerNormalization and MeanVarianceNormalization share.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "backends/cpu/element_codec.h"
#include "backends/cpu/kernel.h"

namespace vigil::cpu {

// Strides of a tensor of shape `small` broadcast numpy-style (aligned at the
// right) to `shape`, 0 along broadcast dims; nullopt when `small` does not
// broadcast to `shape` without changing it.
std::optional<std::vector<int64_t>> BroadcastStrides(const std::vector<int64_t>& small,
                                                     const std::vector<int64_t>& shape);

// Walks the positions of a row-major tensor of `shape` in order and tracks
// the matching offset in another tensor given its strides (as from
// BroadcastStrides). Next() is O(1) amortised.
class OffsetWalker {
 public:
  OffsetWalker(std::vector<int64_t> shape, std::vector<int64_t> strides)
      : shape_(std::move(shape)), strides_(std::move(strides)), index_(shape_.size(), 0) {}

  int64_t offset() const { return offset_; }
  void Next() {
    for (size_t d = shape_.size(); d-- > 0;) {
      offset_ += strides_[d];
      if (++index_[d] < shape_[d]) return;
      offset_ -= strides_[d] * index_[d];
      index_[d] = 0;
    }
  }

 private:
  std::vector<int64_t> shape_;
  std::vector<int64_t> strides_;
  std::vector<int64_t> index_;
  int64_t offset_ = 0;
};

// Mean and (population) variance of n contiguous elements, in double and in
// two passes, so that large means do not cancel the variance away.
struct Moments {
  double mean = 0;
  double variance = 0;
};
template <ir::DataType D>
Moments ComputeMoments(const typename ElementCodec<D>::Storage* p, int64_t n) {
  using C = ElementCodec<D>;
  Moments m;
  for (int64_t i = 0; i < n; ++i) m.mean += C::Load(p[i]);
  m.mean /= static_cast<double>(n);
  for (int64_t i = 0; i < n; ++i) {
    double d = C::Load(p[i]) - m.mean;
    m.variance += d * d;
  }
  m.variance /= static_cast<double>(n);
  return m;
}

// Writes `value` as element `i` of a float tensor of any float dtype.
void StoreAsFloat(runtime::Tensor& t, size_t i, double value);

Status BatchNormKernel(KernelContext& ctx);
Status InstanceNormKernel(KernelContext& ctx);
Status LayerNormKernel(KernelContext& ctx);
Status RmsNormKernel(KernelContext& ctx);
Status GroupNormKernel(KernelContext& ctx);
Status LrnKernel(KernelContext& ctx);
Status MeanVarianceNormKernel(KernelContext& ctx);
Status SoftmaxKernel(KernelContext& ctx);
Status LogSoftmaxKernel(KernelContext& ctx);
Status HardmaxKernel(KernelContext& ctx);
Status LpNormKernel(KernelContext& ctx);

}  // namespace vigil::cpu
