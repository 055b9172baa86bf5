// Nearest-neighbour Resize as a gather (fast_kernels.h): the reference
// (resize.cpp) resizes axis by axis through a double copy of the tensor;
// here each output row (the last axis) is gathered straight from its source
// row, element by element, with the per-axis source indices computed once.
#include <cstring>

#include "backends/cpu/fast/fast_kernels.h"

namespace vigil::cpu::fast {

void GatherResize(const uint8_t* x, const std::vector<int64_t>& in_shape, uint8_t* out,
                  const std::vector<int64_t>& out_shape, const std::vector<std::vector<int64_t>>& index,
                  size_t element_bytes) {
  const size_t rank = out_shape.size();
  if (rank == 0) {
    std::memcpy(out, x, element_bytes);
    return;
  }
  // Element strides of x.
  std::vector<int64_t> stride(rank, 1);
  for (size_t a = rank - 1; a > 0; --a) stride[a - 1] = stride[a] * in_shape[a];
  int64_t rows = 1;
  for (size_t a = 0; a + 1 < rank; ++a) rows *= out_shape[a];
  const int64_t width = out_shape[rank - 1];
  const std::vector<int64_t>& last = index[rank - 1];
  std::vector<int64_t> at(rank, 0);  // the output row's index along the leading axes
  for (int64_t r = 0; r < rows; ++r) {
    int64_t src = 0;
    for (size_t a = 0; a + 1 < rank; ++a) src += index[a][static_cast<size_t>(at[a])] * stride[a];
    const uint8_t* row = x + static_cast<size_t>(src) * element_bytes;
    uint8_t* dst = out + static_cast<size_t>(r * width) * element_bytes;
    switch (element_bytes) {
      case 4:
        for (int64_t i = 0; i < width; ++i) std::memcpy(dst + 4 * i, row + 4 * last[static_cast<size_t>(i)], 4);
        break;
      case 2:
        for (int64_t i = 0; i < width; ++i) std::memcpy(dst + 2 * i, row + 2 * last[static_cast<size_t>(i)], 2);
        break;
      default:
        for (int64_t i = 0; i < width; ++i) {
          std::memcpy(dst + element_bytes * i, row + element_bytes * last[static_cast<size_t>(i)], element_bytes);
        }
    }
    for (size_t a = rank - 1; a-- > 0;) {  // next row: odometer over the leading axes
      if (++at[a] < out_shape[a]) break;
      at[a] = 0;
    }
  }
}

}  // namespace vigil::cpu::fast
