// PNM (Netpbm P1 to P6), our own parser: every token and sample is checked
// against the stream. Values come out as Pillow's convert("RGB") gives
// them: bitmaps (P1, P4) have 1 = black; grey and colour samples with a
// maxval other than 255 are scaled to v * 255 / maxval rounded half to even.
// (For 16-bit grey, maxval > 255 in P2 or P5, Pillow opens 32-bit integers
// and clips them at 255 instead; vigil scales it like 16-bit colour.)
#include <algorithm>
#include <cctype>

#include "backends/cpu/image/image_codecs.h"

namespace vigil::cpu::image {
namespace {

class Reader {
 public:
  explicit Reader(std::span<const uint8_t> b) : b_(b) {}

  // Skips whitespace and comments ('#' to the end of the line).
  void SkipSpace() {
    while (pos_ < b_.size()) {
      if (b_[pos_] == '#') {
        while (pos_ < b_.size() && b_[pos_] != '\n' && b_[pos_] != '\r') ++pos_;
      } else if (std::isspace(b_[pos_])) {
        ++pos_;
      } else {
        break;
      }
    }
  }
  // A decimal number of at most 9 digits, after whitespace.
  Result<int64_t> Number(const char* what) {
    SkipSpace();
    int64_t v = 0;
    size_t digits = 0;
    while (pos_ < b_.size() && std::isdigit(b_[pos_])) {
      if (++digits > 9) return InvalidInputError("PNM stream: {} has more than 9 digits", what);
      v = v * 10 + (b_[pos_++] - '0');
    }
    if (digits == 0 && pos_ >= b_.size()) {
      return InvalidInputError("PNM stream: the stream ends before {} (byte {}; truncated?)", what, pos_);
    }
    if (digits == 0) return InvalidInputError("PNM stream: expected a number for {} at byte {}", what, pos_);
    return v;
  }
  // The single whitespace byte between the header and raw samples.
  Status EndOfHeader() {
    if (pos_ >= b_.size() || !std::isspace(b_[pos_])) {
      return InvalidInputError("PNM stream: expected one whitespace byte after the header at byte {}", pos_);
    }
    ++pos_;
    return Status::Ok();
  }
  // The next '0' or '1' of a plain bitmap (P1), whitespace and comments skipped.
  Result<int> Bit() {
    SkipSpace();
    if (pos_ >= b_.size()) return InvalidInputError("PNM stream: the stream ends in the bitmap (truncated?)");
    const uint8_t c = b_[pos_++];
    if (c != '0' && c != '1') return InvalidInputError("PNM stream: expected 0 or 1 at byte {}", pos_ - 1);
    return c - '0';
  }
  size_t pos() const { return pos_; }
  size_t left() const { return b_.size() - pos_; }
  const uint8_t* here() const { return b_.data() + pos_; }

 private:
  std::span<const uint8_t> b_;
  size_t pos_ = 2;  // past "Pn"
};

// A sample of 0 .. maxval as an 8-bit value (see the file comment).
// Pillow rounds v * 255 / maxval half to even (78.5 -> 78, 127.5 -> 128).
uint8_t Scale(int64_t v, int64_t maxval) {
  if (maxval == 255) return static_cast<uint8_t>(v);
  const int64_t q = v * 255 / maxval, twice_rest = 2 * (v * 255 % maxval);
  const bool up = twice_rest > maxval || (twice_rest == maxval && q % 2 == 1);
  return static_cast<uint8_t>(q + (up ? 1 : 0));
}

}  // namespace

Result<RgbImage> DecodePnm(std::span<const uint8_t> b) {
  const int kind = b[1] - '0';  // 1 .. 6, checked by the caller
  const bool bitmap = kind == 1 || kind == 4, colour = kind == 3 || kind == 6, plain = kind <= 3;
  Reader r(b);
  VIGIL_ASSIGN_OR_RETURN(int64_t width, r.Number("the width"));
  VIGIL_ASSIGN_OR_RETURN(int64_t height, r.Number("the height"));
  int64_t maxval = 1;
  if (!bitmap) {
    VIGIL_ASSIGN_OR_RETURN(maxval, r.Number("maxval"));
    if (maxval < 1 || maxval > 65535) return InvalidInputError("PNM stream: maxval {}, expected 1 to 65535", maxval);
  }
  RgbImage image;
  VIGIL_RETURN_IF_ERROR(AllocateRgb("PNM", width, height, image));
  const int64_t pixels = width * height, channels = colour ? 3 : 1;
  uint8_t* out = image.pixels.data();
  if (bitmap) {
    const int64_t stride = (width + 7) / 8;
    if (!plain) {
      VIGIL_RETURN_IF_ERROR(r.EndOfHeader());
      if (static_cast<uint64_t>(stride) * height > r.left()) {
        return InvalidInputError("PNM stream: {} rows of {} bytes need more than the {} left (truncated?)", height,
                                 stride, r.left());
      }
    }
    for (int64_t y = 0; y < height; ++y) {
      for (int64_t x = 0; x < width; ++x) {
        int bit;
        if (plain) {
          VIGIL_ASSIGN_OR_RETURN(bit, r.Bit());
        } else {
          bit = (r.here()[y * stride + x / 8] >> (7 - x % 8)) & 1;
        }
        uint8_t* p = out + 3 * (y * width + x);
        p[0] = p[1] = p[2] = bit ? 0 : 255;
      }
    }
    return image;
  }
  const int64_t samples = pixels * channels;
  const int64_t bytes_per_sample = maxval > 255 ? 2 : 1;
  if (!plain) {
    VIGIL_RETURN_IF_ERROR(r.EndOfHeader());
    if (static_cast<uint64_t>(samples) * bytes_per_sample > r.left()) {
      return InvalidInputError("PNM stream: {} samples of {} byte(s) need more than the {} bytes left (truncated?)",
                               samples, bytes_per_sample, r.left());
    }
  }
  for (int64_t i = 0; i < samples; ++i) {
    int64_t v;
    if (plain) {
      VIGIL_ASSIGN_OR_RETURN(v, r.Number("a sample"));
    } else {
      const uint8_t* s = r.here() + i * bytes_per_sample;
      v = bytes_per_sample == 2 ? (s[0] << 8) | s[1] : s[0];
    }
    if (v > maxval) return InvalidInputError("PNM stream: sample {} is {}, above maxval {}", i, v, maxval);
    const uint8_t e = Scale(v, maxval);
    if (colour) {
      out[i] = e;
    } else {
      out[3 * i] = out[3 * i + 1] = out[3 * i + 2] = e;
    }
  }
  return image;
}

}  // namespace vigil::cpu::image
