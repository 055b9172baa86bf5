// The image decoders behind the CPU ImageDecoder kernel (image_decoder.cpp),
// one file per format. JPEG, PNG, WebP, TIFF and JPEG 2000 go through the
// well-kept reference libraries (libjpeg-turbo, libpng, libwebp, libtiff,
// OpenJPEG), linked statically; BMP and PNM are simple enough for a small
// parser of our own. Every decoder gives 8-bit RGB (grey images have R = G =
// B, alpha is dropped), as Pillow's convert("RGB") does, which is what ONNX's
// reference implementation and test data use.
//
// The bytes are untrusted: a decoder never aborts, never prints, and turns
// the library's error into a Status whose summary names the format, the
// library and its (printable) message. The image size is checked against
// kMaxImageBytes from the header, before any pixel buffer is allocated.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"

namespace vigil::cpu::image {

// The largest decoded image accepted, height * width * 3 bytes (1 GiB).
inline constexpr int64_t kMaxImageBytes = int64_t{1} << 30;

struct RgbImage {
  int64_t height = 0;
  int64_t width = 0;
  std::vector<uint8_t> pixels;  // height * width * 3, row-major, R G B
};

// Fails (OutOfMemory) when a width x height image, 3 bytes a pixel, is empty
// or above kMaxImageBytes; otherwise sizes image.pixels for it.
Status AllocateRgb(const char* format, int64_t width, int64_t height, RgbImage& image);

// Each takes the whole encoded stream (its signature already recognised).
Result<RgbImage> DecodeJpeg(std::span<const uint8_t> bytes);
Result<RgbImage> DecodePng(std::span<const uint8_t> bytes);
Result<RgbImage> DecodeWebp(std::span<const uint8_t> bytes);
Result<RgbImage> DecodeTiff(std::span<const uint8_t> bytes);
Result<RgbImage> DecodeJpeg2000(std::span<const uint8_t> bytes);  // JP2 file or J2K codestream
Result<RgbImage> DecodeBmp(std::span<const uint8_t> bytes);
Result<RgbImage> DecodePnm(std::span<const uint8_t> bytes);        // P1 .. P6

// A library's message, cut to 200 characters and made printable.
std::string LibraryMessage(const char* text);

}  // namespace vigil::cpu::image
