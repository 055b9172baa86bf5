// Common image sizes, to recognise a buffer filled from an image of another
// size than the tensor's shape says: seed 003's 921,600 values (3 × 640 ×
// 480) for a [1,3,224,224] input, in a caller's buffer or in a tensor file.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace vigil {

struct ImageShape {
  int64_t channels = 0, height = 0, width = 0;
};

// The image reading of a shape: rank 4 with 1, 3 or 4 channels at dim 1
// (NCHW) or last (NHWC), or rank 3 (CHW or HWC). Unknown dims (< 0) count
// as 1 for the batch only.
std::optional<ImageShape> ImageOf(const std::vector<int64_t>& shape);

// "640 × 480" (width × height) when `elements` = channels × width × height
// of a common image size other than the shape's own; "" otherwise.
std::string OtherImageSize(const ImageShape& image, uint64_t elements);

}  // namespace vigil
