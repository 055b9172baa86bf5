// The CPU kernel of ImageDecoder (ops/image.h): recognises the format of the
// encoded stream by its first bytes, decodes it to RGB (image/*.cpp) and
// writes uint8 [H, W, 3] as RGB or BGR, or [H, W, 1] as Grayscale, which is
// Pillow's convert("L"): L = (19595 R + 38470 G + 7471 B + 32768) >> 16, the
// ITU-R 601-2 luma in 16-bit fixed point (exact for grey images, R = G = B).
//
// Built only where the image libraries were found at configure time
// (VIGIL_IMAGE_DECODER); without them the family is empty and
// ImageDecoder is an unsupported op on the CPU.
#include <algorithm>
#include <cstring>
#include <string>

#include <fmt/format.h>

#include "backends/cpu/kernel_families.h"
#include "ops/image.h"
#ifdef VIGIL_IMAGE_DECODER
#include "backends/cpu/image/image_codecs.h"
#endif

namespace vigil::cpu {

#ifdef VIGIL_IMAGE_DECODER
namespace {

enum class Format { kUnknown, kBmp, kJpeg, kJpeg2000, kPng, kPnm, kTiff, kWebp };

bool StartsWith(std::span<const uint8_t> b, std::initializer_list<uint8_t> sig) {
  return b.size() >= sig.size() && std::equal(sig.begin(), sig.end(), b.begin());
}

Format Sniff(std::span<const uint8_t> b) {
  if (StartsWith(b, {0xFF, 0xD8, 0xFF})) return Format::kJpeg;
  if (StartsWith(b, {0x89, 'P', 'N', 'G', 0x0D, 0x0A, 0x1A, 0x0A})) return Format::kPng;
  if (b.size() >= 12 && StartsWith(b, {'R', 'I', 'F', 'F'}) && std::memcmp(b.data() + 8, "WEBP", 4) == 0) {
    return Format::kWebp;
  }
  if (StartsWith(b, {'I', 'I', 42, 0}) || StartsWith(b, {'M', 'M', 0, 42}) || StartsWith(b, {'I', 'I', 43, 0}) ||
      StartsWith(b, {'M', 'M', 0, 43})) {
    return Format::kTiff;  // classic TIFF or BigTIFF
  }
  if (StartsWith(b, {0, 0, 0, 0x0C, 'j', 'P', ' ', ' ', 0x0D, 0x0A, 0x87, 0x0A}) ||
      StartsWith(b, {0xFF, 0x4F, 0xFF, 0x51})) {
    return Format::kJpeg2000;  // JP2 file or J2K codestream
  }
  if (StartsWith(b, {'B', 'M'})) return Format::kBmp;
  if (b.size() >= 3 && b[0] == 'P' && b[1] >= '1' && b[1] <= '6' &&
      (b[2] == ' ' || b[2] == '\t' || b[2] == '\n' || b[2] == '\r' || b[2] == '#')) {
    return Format::kPnm;
  }
  return Format::kUnknown;
}

Result<image::RgbImage> Decode(Format f, std::span<const uint8_t> b) {
  switch (f) {
    case Format::kBmp: return image::DecodeBmp(b);
    case Format::kJpeg: return image::DecodeJpeg(b);
    case Format::kJpeg2000: return image::DecodeJpeg2000(b);
    case Format::kPng: return image::DecodePng(b);
    case Format::kPnm: return image::DecodePnm(b);
    case Format::kTiff: return image::DecodeTiff(b);
    case Format::kWebp: return image::DecodeWebp(b);
    case Format::kUnknown: break;
  }
  return InternalError("unknown image format");
}

// "ff d8 00 ..." for the first (at most 8) bytes.
std::string HexPrefix(std::span<const uint8_t> b) {
  std::string s;
  for (size_t i = 0; i < std::min<size_t>(b.size(), 8); ++i) s += fmt::format("{}{:02x}", i ? " " : "", b[i]);
  if (b.size() > 8) s += " ...";
  return s;
}

Status ImageDecoder(KernelContext& ctx) {
  if (!ctx.has_input(0)) return ctx.Fail("required input 0 (encoded_stream) is missing");
  const runtime::Tensor& x = *ctx.input(0);
  VIGIL_ASSIGN_OR_RETURN(ops::PixelFormat pixel_format, ops::ResolvePixelFormat(ctx.node()));
  if (x.dtype() != ir::DataType::kUint8) return ctx.UnsupportedDtype(0);
  if (x.rank() != 1) return ctx.Fail("input 0 (encoded_stream) is {}, expected 1-D uint8 bytes", x.Describe());
  const std::span<const uint8_t> bytes = x.bytes();
  const Format format = Sniff(bytes);
  if (format == Format::kUnknown) {
    return ctx.Fail(
        "input 0 (encoded_stream, {} bytes) starts with {}, which is none of the formats ImageDecoder decodes "
        "(BMP, JPEG, JPEG 2000, PNG, PNM, TIFF, WebP)",
        bytes.size(), bytes.empty() ? std::string("nothing") : HexPrefix(bytes));
  }
  Result<image::RgbImage> decoded = Decode(format, bytes);
  if (!decoded.ok()) {
    Status s = std::move(decoded).TakeStatus();
    s.WithContext(fmt::format("{}: cannot decode input 0 (encoded_stream, {} bytes)", ops::NodeLabel(ctx.node()),
                              bytes.size()));
    return s;
  }
  const image::RgbImage& img = decoded.value();
  const int64_t channels = ops::PixelFormatChannels(pixel_format);
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * y,
                         ctx.Output(0, ir::DataType::kUint8, {img.height, img.width, channels}));
  uint8_t* out = y->data<uint8_t>();
  const uint8_t* in = img.pixels.data();
  const int64_t n = img.height * img.width;
  switch (pixel_format) {
    case ops::PixelFormat::kRgb: std::memcpy(out, in, static_cast<size_t>(n * 3)); break;
    case ops::PixelFormat::kBgr:
      for (int64_t i = 0; i < n; ++i) {
        out[3 * i] = in[3 * i + 2], out[3 * i + 1] = in[3 * i + 1], out[3 * i + 2] = in[3 * i];
      }
      break;
    case ops::PixelFormat::kGrayscale:
      for (int64_t i = 0; i < n; ++i) {
        const uint32_t l = 19595u * in[3 * i] + 38470u * in[3 * i + 1] + 7471u * in[3 * i + 2] + 0x8000u;
        out[i] = static_cast<uint8_t>(l >> 16);
      }
      break;
  }
  return Status::Ok();
}

const KernelDef kImageKernels[] = {
    {"", "ImageDecoder", 20, kLatest, ImageDecoder},
};

}  // namespace

std::span<const KernelDef> ImageKernels() { return kImageKernels; }

#else

std::span<const KernelDef> ImageKernels() { return {}; }

#endif  // VIGIL_IMAGE_DECODER

}  // namespace vigil::cpu
