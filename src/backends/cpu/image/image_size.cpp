// AllocateRgb and LibraryMessage (image_codecs.h), shared by the decoders.
#include <cstring>

#include "backends/cpu/image/image_codecs.h"
#include "base/printable.h"

namespace vigil::cpu::image {

Status AllocateRgb(const char* format, int64_t width, int64_t height, RgbImage& image) {
  if (width <= 0 || height <= 0) {
    return InvalidInputError("{} header gives an empty image ({} x {} pixels)", format, width, height);
  }
  // Checked one factor at a time so that the product cannot overflow.
  if (width > kMaxImageBytes / 3 || height > kMaxImageBytes / 3 / width) {
    return OutOfMemoryError("{} header gives {} x {} pixels ({:.1f} GiB as RGB), above ImageDecoder's limit of {} GiB",
                            format, width, height,
                            static_cast<double>(width) * static_cast<double>(height) * 3 / double(int64_t{1} << 30),
                            kMaxImageBytes >> 30);
  }
  image.width = width;
  image.height = height;
  image.pixels.assign(static_cast<size_t>(width * height * 3), 0);
  return Status::Ok();
}

std::string LibraryMessage(const char* text) {
  if (text == nullptr || *text == '\0') return "(no message)";
  std::string_view s(text, strnlen(text, 200));
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.remove_suffix(1);
  return Printable(s);
}

}  // namespace vigil::cpu::image
