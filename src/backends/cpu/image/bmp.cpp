// BMP (Windows and OS/2 bitmaps, uncompressed), our own parser: every
// offset and size is checked against the stream. Palette images of 1, 4 or
// 8 bits (an index past the palette is black, as in Pillow), 16 bits (5-5-5
// or 5-6-5, each field scaled v * 255 / max rounding down, as Pillow does),
// 24 bits and 32 bits (BI_RGB as B G R x, or bit fields of 8 bits each).
// Rows are bottom-up unless the height is negative. RLE and embedded
// JPEG/PNG compressions are refused.
#include <bit>
#include <cstdlib>
#include <cstring>

#include "backends/cpu/image/image_codecs.h"

namespace vigil::cpu::image {
namespace {

uint32_t Le16(const uint8_t* p) { return p[0] | (p[1] << 8); }
uint32_t Le32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) | (static_cast<uint32_t>(p[2]) << 16) |
         (static_cast<uint32_t>(p[3]) << 24);
}

struct Header {
  int64_t width = 0, height = 0;
  bool top_down = false;
  uint32_t bpp = 0, compression = 0;
  uint32_t masks[3] = {0, 0, 0};  // R, G, B for bit fields
  std::vector<uint8_t> palette;   // R G B per entry
  uint64_t pixel_offset = 0;
};

constexpr uint32_t kBiRgb = 0, kBiBitfields = 3, kBiAlphaBitfields = 6;

Result<Header> ReadHeader(std::span<const uint8_t> b) {
  if (b.size() < 26) return InvalidInputError("BMP stream: {} bytes, too short for the headers", b.size());
  Header h;
  h.pixel_offset = Le32(&b[10]);
  const uint32_t dib = Le32(&b[14]);
  if (dib != 12 && dib != 16 && dib < 40) return InvalidInputError("BMP stream: unknown header size {}", dib);
  if (dib > b.size() - 14) return InvalidInputError("BMP stream: header of {} bytes runs past the stream", dib);
  const uint8_t* d = &b[14];
  size_t palette_entry = 4;
  if (dib == 12) {  // OS/2 BITMAPCOREHEADER
    h.width = Le16(d + 4);
    h.height = Le16(d + 6);
    h.bpp = Le16(d + 10);
    palette_entry = 3;
  } else {
    h.width = static_cast<int32_t>(Le32(d + 4));
    const int32_t height = static_cast<int32_t>(Le32(d + 8));
    h.top_down = height < 0;
    h.height = std::abs(static_cast<int64_t>(height));
    h.bpp = Le16(d + 14);
    h.compression = dib >= 20 ? Le32(d + 16) : kBiRgb;
  }
  size_t end = 14 + dib;
  if (h.compression == kBiBitfields || h.compression == kBiAlphaBitfields) {
    const size_t mask_at = dib >= 52 ? 14 + 40 : end;
    if (dib < 52) end += h.compression == kBiAlphaBitfields ? 16 : 12;
    if (mask_at + 12 > b.size()) return InvalidInputError("BMP stream: bit field masks run past the stream");
    for (int i = 0; i < 3; ++i) h.masks[i] = Le32(&b[mask_at + 4 * i]);
  } else if (h.compression != kBiRgb) {
    return UnsupportedError("BMP stream: compression {} (RLE, JPEG or PNG) is not supported; only uncompressed",
                            h.compression);
  }
  if (h.bpp <= 8) {
    if (h.bpp != 1 && h.bpp != 4 && h.bpp != 8) return InvalidInputError("BMP stream: {} bits a pixel", h.bpp);
    uint64_t count = dib >= 36 ? Le32(d + 32) : 0;
    if (count == 0) count = uint64_t{1} << h.bpp;
    if (count > 256) return InvalidInputError("BMP stream: palette of {} colours, at most 256", count);
    if (end + count * palette_entry > b.size()) {
      return InvalidInputError("BMP stream: the palette runs past the stream");
    }
    for (uint64_t i = 0; i < count; ++i) {
      const uint8_t* e = &b[end + i * palette_entry];
      h.palette.insert(h.palette.end(), {e[2], e[1], e[0]});
    }
  } else if (h.bpp != 16 && h.bpp != 24 && h.bpp != 32) {
    return InvalidInputError("BMP stream: {} bits a pixel; expected 1, 4, 8, 16, 24 or 32", h.bpp);
  }
  if (h.bpp == 16 && h.compression == kBiRgb) {
    h.masks[0] = 0x7C00, h.masks[1] = 0x03E0, h.masks[2] = 0x001F;
  }
  return h;
}

// A bit-field mask as shift and largest value; only contiguous masks.
struct Field {
  uint32_t shift = 0, max = 0;
};
Result<Field> MaskField(uint32_t mask, uint32_t bpp) {
  if (mask == 0) return Field{};
  Field f{static_cast<uint32_t>(std::countr_zero(mask)), 0};
  f.max = mask >> f.shift;
  const bool ok = bpp == 32 ? f.max == 0xFF : (f.max == 0x1F || f.max == 0x3F);
  if (!ok || (f.max & (f.max + 1)) != 0) {
    return UnsupportedError("BMP stream: bit field mask 0x{:08x} with {} bits a pixel is not supported", mask, bpp);
  }
  return f;
}

}  // namespace

Result<RgbImage> DecodeBmp(std::span<const uint8_t> b) {
  VIGIL_ASSIGN_OR_RETURN(Header h, ReadHeader(b));
  Field fields[3];
  if (h.bpp == 16 || (h.bpp == 32 && h.compression != kBiRgb)) {
    for (int i = 0; i < 3; ++i) {
      VIGIL_ASSIGN_OR_RETURN(fields[i], MaskField(h.masks[i], h.bpp));
    }
  }
  RgbImage image;
  VIGIL_RETURN_IF_ERROR(AllocateRgb("BMP", h.width, h.height, image));
  const uint64_t stride = (static_cast<uint64_t>(h.width) * h.bpp + 31) / 32 * 4;
  if (h.pixel_offset > b.size() || stride * static_cast<uint64_t>(h.height) > b.size() - h.pixel_offset) {
    return InvalidInputError("BMP stream: {} rows of {} bytes from offset {} run past the end ({} bytes; truncated?)",
                             h.height, stride, h.pixel_offset, b.size());
  }
  const size_t colours = h.palette.size() / 3;
  for (int64_t y = 0; y < h.height; ++y) {
    const uint8_t* row = b.data() + h.pixel_offset + stride * static_cast<uint64_t>(h.top_down ? y : h.height - 1 - y);
    uint8_t* out = image.pixels.data() + y * h.width * 3;
    for (int64_t x = 0; x < h.width; ++x, out += 3) {
      if (h.bpp <= 8) {
        const uint64_t bit = static_cast<uint64_t>(x) * h.bpp;
        const uint32_t index = (row[bit / 8] >> (8 - h.bpp - bit % 8)) & ((1u << h.bpp) - 1);
        if (index < colours) std::memcpy(out, &h.palette[3 * index], 3);  // else black
      } else if (h.bpp == 24 || (h.bpp == 32 && h.compression == kBiRgb)) {
        const uint8_t* p = row + x * (h.bpp / 8);
        out[0] = p[2], out[1] = p[1], out[2] = p[0];
      } else {
        const uint32_t v = h.bpp == 16 ? Le16(row + 2 * x) : Le32(row + 4 * x);
        for (int c = 0; c < 3; ++c) {
          const Field& f = fields[c];
          out[c] = f.max == 0 ? 0 : static_cast<uint8_t>(((v >> f.shift) & f.max) * 255 / f.max);
        }
      }
    }
  }
  return image;
}

}  // namespace vigil::cpu::image
