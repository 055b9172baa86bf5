// TIFF (the first directory) through libtiff. 8-bit contiguous strips of
// grey, RGB or CMYK (any compression but JPEG-in-YCbCr) are read scanline by
// scanline and converted as Pillow does (alpha and other extra samples
// dropped as stored, not premultiplied; CMYK to RGB as Pillow's convert).
// Everything else goes through libtiff's RGBA interface, which handles every
// photometric interpretation, bit depth and compression that libtiff
// supports, but premultiplies unassociated alpha (where Pillow would not).
// Rows come in the order they are stored (orientations 1 to 4 are not
// applied), as Pillow gives them.
// libtiff reports errors through per-file handlers (no longjmp) and its
// functions return failure. Its memory use per allocation is capped.
// LERC-compressed TIFF is not supported (image_lerc_absent.c).
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <mutex>

#include <tiffio.h>

#include "backends/cpu/image/image_codecs.h"

namespace vigil::cpu::image {
namespace {

struct Source {
  const uint8_t* data;
  toff_t size;
  toff_t pos;
  char message[256];
};

tsize_t Read(thandle_t h, tdata_t out, tsize_t n) {
  auto* src = static_cast<Source*>(h);
  if (n < 0) return 0;
  const toff_t left = src->size - src->pos;
  const toff_t take = static_cast<toff_t>(n) < left ? static_cast<toff_t>(n) : left;
  std::memcpy(out, src->data + src->pos, take);
  src->pos += take;
  return static_cast<tsize_t>(take);
}
tsize_t Write(thandle_t, tdata_t, tsize_t) { return 0; }
toff_t Seek(thandle_t h, toff_t offset, int whence) {
  auto* src = static_cast<Source*>(h);
  toff_t base = whence == SEEK_CUR ? src->pos : whence == SEEK_END ? src->size : 0;
  if (offset > UINT64_MAX - base) return static_cast<toff_t>(-1);
  src->pos = base + offset;  // past the end is allowed; reads there return 0 bytes
  if (src->pos > src->size) src->pos = src->size;
  return src->pos;
}
int Close(thandle_t) { return 0; }
toff_t Size(thandle_t h) { return static_cast<Source*>(h)->size; }
int Map(thandle_t, tdata_t*, toff_t*) { return 0; }
void Unmap(thandle_t, tdata_t, toff_t) {}

int OnError(TIFF*, void* user, const char* module, const char* fmt, va_list ap) {
  auto* src = static_cast<Source*>(user);
  if (src->message[0] == '\0') {  // the first error is the cause
    char text[200];
    std::vsnprintf(text, sizeof(text), fmt, ap);
    std::snprintf(src->message, sizeof(src->message), "%s: %s", module ? module : "libtiff", text);
  }
  return 1;  // handled: libtiff prints nothing
}
int OnWarning(TIFF*, void*, const char*, const char*, va_list) { return 1; }

enum class Layout { kOther, kGrey, kRgb, kCmyk };

// Whether the scanline path applies (see the file comment), and to what.
Layout ScanlineLayout(TIFF* tif, uint16_t* samples) {
  uint16_t bits = 1, planar = PLANARCONFIG_CONTIG, photometric = 0, inkset = INKSET_CMYK;
  TIFFGetFieldDefaulted(tif, TIFFTAG_BITSPERSAMPLE, &bits);
  TIFFGetFieldDefaulted(tif, TIFFTAG_SAMPLESPERPIXEL, samples);
  TIFFGetFieldDefaulted(tif, TIFFTAG_PLANARCONFIG, &planar);
  TIFFGetFieldDefaulted(tif, TIFFTAG_INKSET, &inkset);
  if (!TIFFGetField(tif, TIFFTAG_PHOTOMETRIC, &photometric)) return Layout::kOther;
  if (bits != 8 || planar != PLANARCONFIG_CONTIG || TIFFIsTiled(tif)) return Layout::kOther;
  if (photometric == PHOTOMETRIC_MINISBLACK && *samples >= 1) return Layout::kGrey;
  if (photometric == PHOTOMETRIC_RGB && *samples >= 3) return Layout::kRgb;
  if (photometric == PHOTOMETRIC_SEPARATED && inkset == INKSET_CMYK && *samples >= 4) return Layout::kCmyk;
  return Layout::kOther;
}

// Pillow's (a * b + 127.5) / 255, in integers.
uint8_t MulDiv255(uint32_t a, uint32_t b) {
  const uint32_t t = a * b + 128;
  return static_cast<uint8_t>(((t >> 8) + t) >> 8);
}

bool ReadScanlines(TIFF* tif, Layout layout, uint16_t samples, RgbImage& image) {
  std::vector<uint8_t> row(static_cast<size_t>(TIFFScanlineSize(tif)));
  if (row.size() < static_cast<size_t>(image.width) * samples) return false;
  for (int64_t y = 0; y < image.height; ++y) {
    if (TIFFReadScanline(tif, row.data(), static_cast<uint32_t>(y), 0) < 0) return false;
    uint8_t* out = image.pixels.data() + y * image.width * 3;
    for (int64_t x = 0; x < image.width; ++x, out += 3) {
      const uint8_t* p = row.data() + x * samples;
      if (layout == Layout::kGrey) {
        out[0] = out[1] = out[2] = p[0];
      } else if (layout == Layout::kRgb) {
        out[0] = p[0], out[1] = p[1], out[2] = p[2];
      } else {  // Pillow's CMYK -> RGB: (255 - K) - (255 - K) * C / 255, rounded
        const uint32_t not_k = 255u - p[3];
        for (int c = 0; c < 3; ++c) out[c] = static_cast<uint8_t>(not_k - MulDiv255(p[c], not_k));
      }
    }
  }
  return true;
}

}  // namespace

Result<RgbImage> DecodeTiff(std::span<const uint8_t> bytes) {
  // libtiff's global handlers print to stderr; they get the messages our
  // per-file handlers do not (those reported before a file exists). This
  // copy of libtiff is private to vigil (linked statically, its symbols
  // hidden), so turning them off touches no one else.
  static std::once_flag quiet;
  std::call_once(quiet, [] {
    TIFFSetErrorHandler(nullptr);
    TIFFSetWarningHandler(nullptr);
  });
  Source src{bytes.data(), bytes.size(), 0, {0}};
  TIFFOpenOptions* options = TIFFOpenOptionsAlloc();
  if (options == nullptr) return OutOfMemoryError("TIFF stream: libtiff could not allocate its options");
  TIFFOpenOptionsSetErrorHandlerExtR(options, OnError, &src);
  TIFFOpenOptionsSetWarningHandlerExtR(options, OnWarning, &src);
  TIFFOpenOptionsSetMaxSingleMemAlloc(options, static_cast<tmsize_t>(kMaxImageBytes / 3 * 4 + (1 << 20)));
  // "m": no memory mapping; the stream is read through the callbacks.
  TIFF* tif = TIFFClientOpenExt("ImageDecoder input", "rm", &src, Read, Write, Seek, Close, Size, Map, Unmap, options);
  TIFFOpenOptionsFree(options);
  if (tif == nullptr) return InvalidInputError("TIFF stream: libtiff cannot open it: {}", LibraryMessage(src.message));
  uint32_t width = 0, height = 0;
  uint16_t orientation = ORIENTATION_TOPLEFT;
  TIFFGetField(tif, TIFFTAG_IMAGEWIDTH, &width);
  TIFFGetField(tif, TIFFTAG_IMAGELENGTH, &height);
  TIFFGetFieldDefaulted(tif, TIFFTAG_ORIENTATION, &orientation);
  RgbImage image;
  if (Status s = AllocateRgb("TIFF", width, height, image); !s.ok()) {
    TIFFClose(tif);
    return s;
  }
  uint16_t samples = 1;
  if (const Layout layout = ScanlineLayout(tif, &samples); layout != Layout::kOther) {
    const bool ok = ReadScanlines(tif, layout, samples, image);
    TIFFClose(tif);
    if (!ok) return InvalidInputError("TIFF stream: libtiff cannot decode: {}", LibraryMessage(src.message));
    return image;
  }
  char reason[1024] = {0};
  if (!TIFFRGBAImageOK(tif, reason)) {
    TIFFClose(tif);
    return UnsupportedError("TIFF stream: libtiff cannot convert this image to RGB: {}", LibraryMessage(reason));
  }
  // Rows in stored order: ask for the file's own orientation (1 to 4).
  const int wanted = orientation >= ORIENTATION_TOPLEFT && orientation <= ORIENTATION_BOTLEFT ? orientation
                                                                                              : ORIENTATION_TOPLEFT;
  std::vector<uint32_t> raster(static_cast<size_t>(width) * height);
  const int ok = TIFFReadRGBAImageOriented(tif, width, height, raster.data(), wanted, /*stop_on_error=*/1);
  TIFFClose(tif);
  if (!ok) return InvalidInputError("TIFF stream: libtiff cannot decode: {}", LibraryMessage(src.message));
  for (size_t i = 0; i < raster.size(); ++i) {
    const uint32_t p = raster[i];
    image.pixels[3 * i] = static_cast<uint8_t>(TIFFGetR(p));
    image.pixels[3 * i + 1] = static_cast<uint8_t>(TIFFGetG(p));
    image.pixels[3 * i + 2] = static_cast<uint8_t>(TIFFGetB(p));
  }
  return image;
}

}  // namespace vigil::cpu::image
