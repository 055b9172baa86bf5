// PNG through libpng, to RGB as Pillow's convert("RGB") gives it: palettes
// expanded, grey of 1, 2 or 4 bits scaled to 8, 16-bit samples cut to their
// high byte, alpha (and tRNS) dropped, no gamma correction. libpng reports
// errors through png_error, which longjmps back to RunDecoder; that frame
// and the library's hold no C++ objects. A stream that ends early is an
// error (the read callback calls png_error).
#include <csetjmp>
#include <cstdio>
#include <cstring>

#include <png.h>

#include "backends/cpu/image/image_codecs.h"

namespace vigil::cpu::image {
namespace {

struct Source {
  const uint8_t* data;
  size_t size;
  size_t pos;
  char message[256];
};

void ReadBytes(png_structp png, png_bytep out, size_t n) {
  auto* src = static_cast<Source*>(png_get_io_ptr(png));
  if (n > src->size - src->pos) png_error(png, "the stream ends early (truncated PNG)");
  std::memcpy(out, src->data + src->pos, n);
  src->pos += n;
}

void OnError(png_structp png, png_const_charp message) {
  auto* src = static_cast<Source*>(png_get_error_ptr(png));
  std::snprintf(src->message, sizeof(src->message), "%s", message ? message : "");
  png_longjmp(png, 1);
}

void OnWarning(png_structp, png_const_charp) {}  // never print

struct Header {
  png_uint_32 width = 0, height = 0;
};

// The setjmp region: plain C state only. Phase 1 (out == nullptr) reads the
// header and sets the transformations; phase 2 decodes into out.
bool RunDecoder(png_structp png, png_infop info, Header* header, uint8_t* out, png_bytep* rows) {
  if (setjmp(png_jmpbuf(png))) return false;
  if (out == nullptr) {
    // libpng's own dimension limit is lifted to ours, which the caller applies.
    png_set_user_limits(png, 0x7fffffff, 0x7fffffff);
    png_set_chunk_malloc_max(png, 64u << 20);
    png_read_info(png, info);
    header->width = png_get_image_width(png, info);
    header->height = png_get_image_height(png, info);
    const int color = png_get_color_type(png, info);
    const int depth = png_get_bit_depth(png, info);
    if (color == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
    if (color == PNG_COLOR_TYPE_GRAY && depth < 8) png_set_expand_gray_1_2_4_to_8(png);
    if (depth == 16) png_set_strip_16(png);
    if ((color & PNG_COLOR_MASK_ALPHA) || png_get_valid(png, info, PNG_INFO_tRNS)) png_set_strip_alpha(png);
    if (color == PNG_COLOR_TYPE_GRAY || color == PNG_COLOR_TYPE_GRAY_ALPHA) png_set_gray_to_rgb(png);
    png_set_interlace_handling(png);
    png_read_update_info(png, info);
    if (png_get_rowbytes(png, info) != static_cast<size_t>(header->width) * 3) {
      png_error(png, "unexpected row size after conversion to RGB");
    }
    return true;
  }
  const size_t stride = static_cast<size_t>(header->width) * 3;
  for (png_uint_32 y = 0; y < header->height; ++y) rows[y] = out + y * stride;
  png_read_image(png, rows);
  png_read_end(png, nullptr);
  return true;
}

}  // namespace

Result<RgbImage> DecodePng(std::span<const uint8_t> bytes) {
  Source src{bytes.data(), bytes.size(), 0, {0}};
  png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &src, OnError, OnWarning);
  if (png == nullptr) return OutOfMemoryError("PNG stream: libpng could not create a reader");
  png_infop info = png_create_info_struct(png);
  if (info == nullptr) {
    png_destroy_read_struct(&png, nullptr, nullptr);
    return OutOfMemoryError("PNG stream: libpng could not create a reader");
  }
  png_set_read_fn(png, &src, ReadBytes);
  auto fail = [&](const char* what) {
    png_destroy_read_struct(&png, &info, nullptr);
    return InvalidInputError("PNG stream: libpng {}: {}", what, LibraryMessage(src.message));
  };
  Header header;
  if (!RunDecoder(png, info, &header, nullptr, nullptr)) return fail("cannot read the header");
  RgbImage image;
  if (Status s = AllocateRgb("PNG", header.width, header.height, image); !s.ok()) {
    png_destroy_read_struct(&png, &info, nullptr);
    return s;
  }
  std::vector<png_bytep> rows(header.height);
  if (!RunDecoder(png, info, &header, image.pixels.data(), rows.data())) return fail("cannot decode");
  png_destroy_read_struct(&png, &info, nullptr);
  return image;
}

}  // namespace vigil::cpu::image
