#include "ir/tensor.h"

namespace vigil::ir {

std::optional<uint64_t> Tensor::ElementCount() const {
  uint64_t n = 1;
  for (int64_t d : dims) {
    if (d < 0) return std::nullopt;
    uint64_t u = static_cast<uint64_t>(d);
    if (u != 0 && n > UINT64_MAX / u) return std::nullopt;
    n *= u;
  }
  return n;
}

bool Tensor::HasDenseBytes() const {
  const int bits = DataTypeBits(dtype);
  const std::optional<uint64_t> count = ElementCount();
  return bits >= 8 && bits % 8 == 0 && storage != Storage::kStrings && count &&
         bytes.size() == *count * static_cast<uint64_t>(bits / 8);
}

}  // namespace vigil::ir
