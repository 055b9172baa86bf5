// ImageDecoder on the CPU against Pillow: every image under
// data/image_decoder (made by tools/image_fixtures/make_image_decoder_fixtures.py,
// with the expected pixels Pillow gives) must decode exactly, as RGB, BGR
// and Grayscale. Truncated and corrupt streams of every format, oversized
// headers and unknown formats must give a clean error naming the node.
// Skipped where vigil was built without the image libraries.
#include <cstdint>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "backends/cpu/kernel_test_util.h"

#ifndef VIGIL_IMAGE_FIXTURES
#error "VIGIL_IMAGE_FIXTURES (the folder of the test images) must be defined"
#endif

namespace vigil::cpu::testing {
namespace {

using Bytes = std::vector<uint8_t>;

Bytes ReadFile(const std::string& name) {
  std::ifstream f(std::string(VIGIL_IMAGE_FIXTURES) + "/" + name, std::ios::binary);
  EXPECT_TRUE(f.good()) << "cannot open " << name;
  return Bytes(std::istreambuf_iterator<char>(f), {});
}

struct Fixture {
  std::string image, expected;  // expected + ".rgb" / ".l": Pillow's convert("RGB") / convert("L")
  int64_t height = 0, width = 0;
};

std::vector<Fixture> Manifest() {
  std::ifstream f(std::string(VIGIL_IMAGE_FIXTURES) + "/manifest.txt");
  std::vector<Fixture> out;
  std::string line;
  while (std::getline(f, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream s(line);
    Fixture fx;
    s >> fx.image >> fx.expected >> fx.height >> fx.width;
    out.push_back(fx);
  }
  return out;
}

bool HaveDecoder() { return FindKernel("", "ImageDecoder", 20) != nullptr; }

#define SKIP_WITHOUT_DECODER() \
  if (!HaveDecoder()) GTEST_SKIP() << "built without the image libraries (cmake/VigilImageLibs.cmake)"

ir::Node DecoderNode(const std::string& pixel_format) {
  return MakeNode("ImageDecoder", {"encoded"}, {"image"}, {StringAttr("pixel_format", pixel_format)});
}

Result<runtime::Tensor> Decode(const Bytes& bytes, const std::string& pixel_format = "RGB") {
  runtime::Tensor x = MakeTensor(ir::DataType::kUint8, {static_cast<int64_t>(bytes.size())}, bytes);
  VIGIL_ASSIGN_OR_RETURN(std::vector<runtime::Tensor> out, RunKernel(DecoderNode(pixel_format), 20, {&x}));
  return std::move(out[0]);
}

// The number of differing bytes, and where the first one is.
std::string Compare(const Bytes& got, const Bytes& want, int64_t channels, int64_t width) {
  if (got.size() != want.size()) return "size " + std::to_string(got.size()) + " != " + std::to_string(want.size());
  int64_t bad = 0, first = -1;
  for (size_t i = 0; i < got.size(); ++i) {
    if (got[i] != want[i] && bad++ == 0) first = static_cast<int64_t>(i);
  }
  if (bad == 0) return "";
  const int64_t pixel = first / channels;
  return std::to_string(bad) + " bytes differ; first at row " + std::to_string(pixel / width) + ", column " +
         std::to_string(pixel % width) + ", channel " + std::to_string(first % channels) + ": got " +
         std::to_string(got[first]) + ", want " + std::to_string(want[first]);
}

TEST(ImageDecoder, EveryFixtureDecodesAsPillowDoes) {
  SKIP_WITHOUT_DECODER();
  const std::vector<Fixture> fixtures = Manifest();
  ASSERT_GE(fixtures.size(), 30u) << "manifest.txt is missing or short";
  for (const Fixture& fx : fixtures) {
    SCOPED_TRACE(fx.image);
    const Bytes bytes = ReadFile(fx.image);
    const Bytes rgb = ReadFile(fx.expected + ".rgb");
    const Bytes lum = ReadFile(fx.expected + ".l");
    ASSERT_EQ(rgb.size(), static_cast<size_t>(fx.height * fx.width * 3));
    Bytes bgr(rgb.size());
    for (size_t i = 0; i < rgb.size(); i += 3) bgr[i] = rgb[i + 2], bgr[i + 1] = rgb[i + 1], bgr[i + 2] = rgb[i];
    const struct {
      const char* format;
      const Bytes& want;
      int64_t channels;
    } cases[] = {{"RGB", rgb, 3}, {"BGR", bgr, 3}, {"Grayscale", lum, 1}};
    for (const auto& c : cases) {
      auto y = Decode(bytes, c.format);
      ASSERT_TRUE(y.ok()) << c.format << ": " << y.status().ToString();
      EXPECT_EQ(y.value().shape(), (std::vector<int64_t>{fx.height, fx.width, c.channels})) << c.format;
      EXPECT_EQ(Compare(Values<uint8_t>(y.value()), c.want, c.channels, fx.width), "") << c.format;
    }
  }
}

// Each format, cut short: a clean error that names the node and the format.
TEST(ImageDecoder, TruncatedStreamsFailCleanly) {
  SKIP_WITHOUT_DECODER();
  const struct {
    const char* image;
    const char* format;
  } cases[] = {{"rgb_420.jpg", "JPEG"},      {"progressive.jpg", "JPEG"}, {"rgb.png", "PNG"},
               {"palette.png", "PNG"},       {"lossy.webp", "WebP"},      {"lossless.webp", "WebP"},
               {"raw.tif", "TIFF"},          {"lzw.tif", "TIFF"},         {"lossless.jp2", "JPEG 2000"},
               {"codestream.j2k", "JPEG 2000"}, {"rgb24.bmp", "BMP"},     {"palette4.bmp", "BMP"},
               {"rgb.ppm", "PNM"},           {"plain.ppm", "PNM"},        {"bilevel.pbm", "PNM"}};
  for (const auto& c : cases) {
    const Bytes full = ReadFile(c.image);
    ASSERT_GT(full.size(), 7u) << c.image << ": the fixture is missing";
    for (size_t keep : {full.size() / 2, full.size() * 3 / 4, full.size() - 7}) {
      SCOPED_TRACE(std::string(c.image) + " cut to " + std::to_string(keep) + " of " + std::to_string(full.size()));
      auto y = Decode(Bytes(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(keep)));
      ASSERT_FALSE(y.ok()) << "a truncated stream decoded";
      const std::string message = y.status().ToString();
      EXPECT_NE(message.find("ImageDecoder 'n'"), std::string::npos) << message;
      EXPECT_NE(message.find(c.format), std::string::npos) << message;
      EXPECT_NE(message.find(std::to_string(keep) + " bytes"), std::string::npos) << message;
    }
  }
}

// Garbage after each format's signature: never a crash; an error, when
// there is one, names the node. Some must fail outright.
TEST(ImageDecoder, CorruptStreamsNeverCrash) {
  SKIP_WITHOUT_DECODER();
  for (const Fixture& fx : Manifest()) {
    const Bytes full = ReadFile(fx.image);
    for (uint32_t seed = 1; seed <= 8; ++seed) {
      Bytes bad = full;
      uint32_t state = seed * 2654435761u;
      const size_t from = seed <= 4 ? 8 : bad.size() / 2;
      for (size_t i = from; i < bad.size(); i += 1 + (state >> 28)) {
        state = state * 1664525u + 1013904223u;
        bad[i] = static_cast<uint8_t>(state >> 24);
      }
      auto y = Decode(bad);
      if (!y.ok()) {
        EXPECT_NE(y.status().ToString().find("ImageDecoder 'n'"), std::string::npos) << y.status().ToString();
      } else {
        EXPECT_EQ(y.value().rank(), 3u);
      }
    }
  }
  // A PNG whose IHDR checksum is wrong, a JPEG whose frame has no components.
  Bytes png = ReadFile("rgb.png");
  ASSERT_GT(png.size(), 33u) << "the fixture is missing: nothing to corrupt";
  png[29] ^= 0xFF;  // IHDR's CRC
  auto y = Decode(png);
  ASSERT_FALSE(y.ok());
  EXPECT_NE(y.status().ToString().find("libpng"), std::string::npos) << y.status().ToString();
  Bytes jpeg = ReadFile("rgb_444.jpg");
  ASSERT_GT(jpeg.size(), 11u) << "the fixture is missing";
  for (size_t i = 2; i + 9 < jpeg.size(); ++i) {
    if (jpeg[i] == 0xFF && jpeg[i + 1] == 0xC0) jpeg[i + 9] = 0;  // SOF0: number of components
  }
  y = Decode(jpeg);
  ASSERT_FALSE(y.ok());
  EXPECT_NE(y.status().ToString().find("libjpeg-turbo"), std::string::npos) << y.status().ToString();
}

uint32_t Crc32(const uint8_t* p, size_t n) {
  uint32_t c = 0xFFFFFFFFu;
  for (size_t i = 0; i < n; ++i) {
    c ^= p[i];
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1)));
  }
  return ~c;
}

void PutBe32(Bytes& b, size_t at, uint32_t v) {
  for (int k = 0; k < 4; ++k) b[at + k] = static_cast<uint8_t>(v >> (24 - 8 * k));
}
void PutLe32(Bytes& b, size_t at, uint32_t v) {
  for (int k = 0; k < 4; ++k) b[at + k] = static_cast<uint8_t>(v >> (8 * k));
}

// Headers that claim 60000 x 60000 pixels (10 GB as RGB; libjpeg's own limit
// is 65500) are refused
// before anything that size is allocated.
TEST(ImageDecoder, OversizedHeadersAreRefused) {
  SKIP_WITHOUT_DECODER();
  std::vector<std::pair<std::string, Bytes>> cases;
  Bytes png = ReadFile("rgb.png");
  ASSERT_GT(png.size(), 33u) << "the fixture is missing: nothing to rewrite";
  PutBe32(png, 16, 60000), PutBe32(png, 20, 60000);
  PutBe32(png, 29, Crc32(&png[12], 17));  // "IHDR" + 13 bytes of data
  cases.emplace_back("PNG", png);
  Bytes jpeg = ReadFile("rgb_420.jpg");
  ASSERT_GT(jpeg.size(), 11u) << "the fixture is missing";
  for (size_t i = 2; i + 9 < jpeg.size(); ++i) {
    if (jpeg[i] == 0xFF && jpeg[i + 1] == 0xC0) {  // SOF0: length, precision, then height and width
      jpeg[i + 5] = jpeg[i + 7] = 60000 >> 8, jpeg[i + 6] = jpeg[i + 8] = 60000 & 0xFF;
    }
  }
  cases.emplace_back("JPEG", jpeg);
  Bytes bmp = ReadFile("rgb24.bmp");
  PutLe32(bmp, 18, 60000), PutLe32(bmp, 22, 60000);
  cases.emplace_back("BMP", bmp);
  const std::string pnm = "P6\n60000 60000\n255\n";
  cases.emplace_back("PNM", Bytes(pnm.begin(), pnm.end()));
  Bytes tiff = ReadFile("raw.tif");  // little-endian; width (256) and height (257) made LONG 60000
  const uint32_t ifd = tiff[4] | (tiff[5] << 8) | (tiff[6] << 16) | (tiff[7] << 24);
  const uint32_t entries = tiff[ifd] | (tiff[ifd + 1] << 8);
  for (uint32_t e = 0; e < entries; ++e) {
    const size_t at = ifd + 2 + 12 * e;
    const uint32_t tag = tiff[at] | (tiff[at + 1] << 8);
    if (tag == 256 || tag == 257) tiff[at + 2] = 4, tiff[at + 3] = 0, PutLe32(tiff, at + 8, 60000);
  }
  cases.emplace_back("TIFF", tiff);
  for (const auto& [format, bytes] : cases) {
    SCOPED_TRACE(format);
    auto y = Decode(bytes);
    ASSERT_FALSE(y.ok());
    EXPECT_EQ(y.status().code(), ErrorCode::kOutOfMemory) << y.status().ToString();
    EXPECT_NE(y.status().ToString().find("60000 x 60000"), std::string::npos) << y.status().ToString();
    EXPECT_NE(y.status().ToString().find("limit of 1 GiB"), std::string::npos) << y.status().ToString();
  }
}

TEST(ImageDecoder, UnknownFormatNamesItsFirstBytes) {
  SKIP_WITHOUT_DECODER();
  const std::string text = "hello, world";
  auto y = Decode(Bytes(text.begin(), text.end()));
  ASSERT_FALSE(y.ok());
  EXPECT_NE(y.status().ToString().find("starts with 68 65 6c 6c 6f 2c 20 77 ..."), std::string::npos)
      << y.status().ToString();
  y = Decode(Bytes{});
  ASSERT_FALSE(y.ok());
  EXPECT_NE(y.status().ToString().find("starts with nothing"), std::string::npos) << y.status().ToString();
  y = Decode(Bytes{0x1B, '[', '3', '1', 'm'});  // an escape sequence is shown as hex, never sent raw
  ASSERT_FALSE(y.ok());
  EXPECT_EQ(y.status().ToString().find('\x1B'), std::string::npos);
}

TEST(ImageDecoder, RejectsBadPixelFormatAndInput) {
  SKIP_WITHOUT_DECODER();
  const Bytes bytes = ReadFile("rgb.png");
  auto y = Decode(bytes, "RGBA");
  ASSERT_FALSE(y.ok());
  EXPECT_NE(y.status().ToString().find("pixel_format is 'RGBA'"), std::string::npos) << y.status().ToString();
  runtime::Tensor two_d = MakeTensor(ir::DataType::kUint8, {1, static_cast<int64_t>(bytes.size())}, bytes);
  auto out = RunKernel(DecoderNode("RGB"), 20, {&two_d});
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().ToString().find("expected 1-D"), std::string::npos) << out.status().ToString();
}

TEST(ImageDecoder, ShapeInference) {
  const ir::TypeInfo x = ops::TensorType(ir::DataType::kUint8, std::vector<int64_t>{1058});
  auto rgb = InferNode(DecoderNode("RGB"), 20, {&x});
  ASSERT_TRUE(rgb.ok()) << rgb.status().ToString();
  const auto& dims = rgb.value()[0].shape.dims;
  ASSERT_EQ(dims.size(), 3u);
  EXPECT_TRUE(dims[0].is_symbolic() && dims[1].is_symbolic() && dims[0].param != dims[1].param);
  EXPECT_EQ(dims[2].value, 3);
  EXPECT_EQ(rgb.value()[0].elem_type, ir::DataType::kUint8);
  auto grey = InferNode(DecoderNode("Grayscale"), 20, {&x});
  ASSERT_TRUE(grey.ok());
  EXPECT_EQ(grey.value()[0].shape.dims[2].value, 1);
  EXPECT_FALSE(InferNode(DecoderNode("rgb"), 20, {&x}).ok());
  const ir::TypeInfo f = ops::TensorType(ir::DataType::kFloat32, std::vector<int64_t>{1058});
  EXPECT_FALSE(InferNode(DecoderNode("RGB"), 20, {&f}).ok());
  const ir::TypeInfo m = ops::TensorType(ir::DataType::kUint8, std::vector<int64_t>{2, 529});
  EXPECT_FALSE(InferNode(DecoderNode("RGB"), 20, {&m}).ok());
  EXPECT_FALSE(InferNode(DecoderNode("RGB"), 19, {&x}).ok()) << "ImageDecoder exists from opset 20";
}

}  // namespace
}  // namespace vigil::cpu::testing
