#include "base/image_sizes.h"

#include <array>
#include <utility>

#include <fmt/format.h>

namespace vigil {
namespace {

// width × height
constexpr std::array<std::pair<int64_t, int64_t>, 16> kImageSizes = {{
    {640, 480}, {1280, 720}, {1920, 1080}, {800, 600}, {1024, 768}, {320, 240}, {224, 224}, {256, 256},
    {299, 299}, {384, 384}, {416, 416}, {512, 512}, {608, 608}, {640, 640}, {1024, 1024}, {3840, 2160}}};

bool IsChannels(int64_t c) { return c == 1 || c == 3 || c == 4; }

}  // namespace

std::optional<ImageShape> ImageOf(const std::vector<int64_t>& shape) {
  std::vector<int64_t> s = shape;
  if (s.size() == 4 && s[0] < 0) s[0] = 1;
  if (s.size() == 3) s.insert(s.begin(), 1);
  if (s.size() != 4) return std::nullopt;
  if (IsChannels(s[1]) && s[2] > 0 && s[3] > 0) return ImageShape{s[1], s[2], s[3]};
  if (IsChannels(s[3]) && s[1] > 0 && s[2] > 0) return ImageShape{s[3], s[1], s[2]};
  return std::nullopt;
}

std::string OtherImageSize(const ImageShape& image, uint64_t elements) {
  const auto c = static_cast<uint64_t>(image.channels);
  if (c == 0 || elements == 0 || elements % c != 0) return "";
  const uint64_t pixels = elements / c;
  for (auto [w, h] : kImageSizes) {
    if (static_cast<uint64_t>(w * h) == pixels && !(w == image.width && h == image.height)) {
      return fmt::format("{} × {}", w, h);
    }
  }
  return "";
}

}  // namespace vigil
