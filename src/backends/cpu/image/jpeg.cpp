// JPEG through libjpeg-turbo, to RGB as Pillow decodes it: the library's
// default (islow) IDCT and fancy upsampling, YCbCr -> RGB by libjpeg, grey
// replicated. libjpeg reports errors by calling error_exit, which must not
// return: it longjmps back to RunDecoder, whose frame and the library's hold
// no C++ objects, so nothing is skipped. A truncated stream (libjpeg's
// "premature end" warning, after which it would invent grey pixels) is an
// error, as it is in Pillow.
#include <csetjmp>
#include <cstdio>
#include <cstring>

#include <jpeglib.h>
#include <jerror.h>

#include "backends/cpu/image/image_codecs.h"

namespace vigil::cpu::image {
namespace {

struct ErrorState {
  jpeg_error_mgr mgr;  // first, so that a j_common_ptr's err is an ErrorState*
  jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

[[noreturn]] void ErrorExit(j_common_ptr cinfo) {
  auto* state = reinterpret_cast<ErrorState*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, state->message);
  longjmp(state->jump, 1);
}

void EmitMessage(j_common_ptr cinfo, int level) {
  // Level -1 is a warning about corrupt data; a premature end is an error.
  if (level == -1 && cinfo->err->msg_code == JWRN_JPEG_EOF) ErrorExit(cinfo);
  if (level == -1) cinfo->err->num_warnings++;
}

void OutputMessage(j_common_ptr) {}  // never print

struct Stage {
  int width = 0, height = 0, components = 0;
  J_COLOR_SPACE space = JCS_UNKNOWN;
};

// The setjmp region: plain C state only. Phase 1 (out == nullptr) reads
// the header; phase 2 decodes into out (width * height * 3 bytes).
bool RunDecoder(jpeg_decompress_struct* cinfo, ErrorState* err, const uint8_t* data, unsigned long size, Stage* stage,
                uint8_t* out, JSAMPROW row_buffer) {
  if (setjmp(err->jump)) return false;
  if (out == nullptr) {
    jpeg_create_decompress(cinfo);
    jpeg_mem_src(cinfo, data, size);
    jpeg_read_header(cinfo, TRUE);
    stage->space = cinfo->jpeg_color_space;
    if (stage->space == JCS_CMYK || stage->space == JCS_YCCK) return true;  // refused by the caller
    cinfo->out_color_space = stage->space == JCS_GRAYSCALE ? JCS_GRAYSCALE : JCS_RGB;
    jpeg_calc_output_dimensions(cinfo);
    stage->width = static_cast<int>(cinfo->output_width);
    stage->height = static_cast<int>(cinfo->output_height);
    stage->components = cinfo->output_components;
    return true;
  }
  jpeg_start_decompress(cinfo);
  const size_t w = cinfo->output_width;
  while (cinfo->output_scanline < cinfo->output_height) {
    uint8_t* dst = out + static_cast<size_t>(cinfo->output_scanline) * w * 3;
    if (stage->components == 3) {
      JSAMPROW row = dst;
      jpeg_read_scanlines(cinfo, &row, 1);
    } else {
      jpeg_read_scanlines(cinfo, &row_buffer, 1);
      for (size_t x = 0; x < w; ++x) dst[3 * x] = dst[3 * x + 1] = dst[3 * x + 2] = row_buffer[x];
    }
  }
  jpeg_finish_decompress(cinfo);
  return true;
}

}  // namespace

Result<RgbImage> DecodeJpeg(std::span<const uint8_t> bytes) {
  jpeg_decompress_struct cinfo;
  std::memset(&cinfo, 0, sizeof(cinfo));
  ErrorState err;
  std::memset(&err, 0, sizeof(err));
  cinfo.err = jpeg_std_error(&err.mgr);
  err.mgr.error_exit = ErrorExit;
  err.mgr.emit_message = EmitMessage;
  err.mgr.output_message = OutputMessage;
  Stage stage;
  auto fail = [&](const char* what) {
    std::string message = LibraryMessage(err.message);
    jpeg_destroy_decompress(&cinfo);
    return InvalidInputError("JPEG stream: libjpeg-turbo {}: {}", what, message);
  };
  if (!RunDecoder(&cinfo, &err, bytes.data(), bytes.size(), &stage, nullptr, nullptr)) {
    return fail("cannot read the header");
  }
  if (stage.space == JCS_CMYK || stage.space == JCS_YCCK) {
    jpeg_destroy_decompress(&cinfo);
    return UnsupportedError("JPEG stream: CMYK/YCCK JPEG images are not supported (only greyscale, YCbCr and RGB)");
  }
  RgbImage image;
  if (Status s = AllocateRgb("JPEG", stage.width, stage.height, image); !s.ok()) {
    jpeg_destroy_decompress(&cinfo);
    return s;
  }
  std::vector<uint8_t> row(static_cast<size_t>(stage.width));
  if (!RunDecoder(&cinfo, &err, bytes.data(), bytes.size(), &stage, image.pixels.data(), row.data())) {
    return fail("cannot decode");
  }
  jpeg_destroy_decompress(&cinfo);
  return image;
}

}  // namespace vigil::cpu::image
