// Parameter resolution of ImageDecoder, shared by its shape inference
// (image.cpp) and the CPU kernel (backends/cpu/image_decoder.cpp), so that
// both accept the same nodes and fail with the same messages.
#pragma once

#include <cstdint>

#include "base/status.h"
#include "ir/graph.h"

namespace vigil::ops {

// The channel order of ImageDecoder's output [H, W, C].
enum class PixelFormat { kRgb, kBgr, kGrayscale };

// Attribute pixel_format: "RGB" (the default), "BGR" or "Grayscale".
Result<PixelFormat> ResolvePixelFormat(const ir::Node& node);

// C of the output [H, W, C]: 3, or 1 for Grayscale.
inline int64_t PixelFormatChannels(PixelFormat f) { return f == PixelFormat::kGrayscale ? 1 : 3; }

}  // namespace vigil::ops
