// WebP through libwebp's simple decoding API, to RGB (alpha dropped; libwebp's
// default fancy upsampling for lossy images, as Pillow gets it). Animated
// WebP files are refused (Pillow would give their first frame).
#include <webp/decode.h>

#include "backends/cpu/image/image_codecs.h"

namespace vigil::cpu::image {
namespace {

const char* StatusName(VP8StatusCode code) {
  switch (code) {
    case VP8_STATUS_OUT_OF_MEMORY: return "out of memory";
    case VP8_STATUS_INVALID_PARAM: return "invalid parameter";
    case VP8_STATUS_BITSTREAM_ERROR: return "bitstream error";
    case VP8_STATUS_UNSUPPORTED_FEATURE: return "unsupported feature";
    case VP8_STATUS_SUSPENDED: return "suspended";
    case VP8_STATUS_USER_ABORT: return "user abort";
    case VP8_STATUS_NOT_ENOUGH_DATA: return "not enough data (truncated stream)";
    default: return "unknown error";
  }
}

}  // namespace

Result<RgbImage> DecodeWebp(std::span<const uint8_t> bytes) {
  WebPBitstreamFeatures features;
  VP8StatusCode code = WebPGetFeatures(bytes.data(), bytes.size(), &features);
  if (code != VP8_STATUS_OK) {
    return InvalidInputError("WebP stream: libwebp cannot read the header: {}", StatusName(code));
  }
  if (features.has_animation) {
    return UnsupportedError("WebP stream: animated WebP images are not supported");
  }
  RgbImage image;
  VIGIL_RETURN_IF_ERROR(AllocateRgb("WebP", features.width, features.height, image));
  WebPDecoderConfig config;
  if (!WebPInitDecoderConfig(&config)) return InternalError("WebP stream: libwebp version mismatch");
  config.output.colorspace = MODE_RGB;
  config.output.is_external_memory = 1;
  config.output.u.RGBA.rgba = image.pixels.data();
  config.output.u.RGBA.stride = static_cast<int>(image.width * 3);
  config.output.u.RGBA.size = image.pixels.size();
  code = WebPDecode(bytes.data(), bytes.size(), &config);
  WebPFreeDecBuffer(&config.output);
  if (code != VP8_STATUS_OK) return InvalidInputError("WebP stream: libwebp cannot decode: {}", StatusName(code));
  return image;
}

}  // namespace vigil::cpu::image
