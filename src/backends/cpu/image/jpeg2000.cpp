// JPEG 2000 (a JP2 file or a bare J2K codestream) through OpenJPEG, to RGB
// as Pillow converts it: each sample offset to unsigned when signed, then
// shifted to 8 bits (rounded to nearest when wider) and clipped; one
// component is grey, two grey + alpha, three RGB, four RGBA (alpha
// dropped). OpenJPEG reports errors through handlers and return values.
// Subsampled components and YCC/CMYK colour spaces are refused.
#include <algorithm>
#include <cstdio>
#include <cstring>

#include <openjpeg.h>

#include "backends/cpu/image/image_codecs.h"

namespace vigil::cpu::image {
namespace {

struct Source {
  const uint8_t* data;
  OPJ_UINT64 size;
  OPJ_UINT64 pos;
  char message[256];
};

OPJ_SIZE_T Read(void* out, OPJ_SIZE_T n, void* user) {
  auto* src = static_cast<Source*>(user);
  if (src->pos >= src->size) return static_cast<OPJ_SIZE_T>(-1);  // end of stream
  const OPJ_UINT64 take = std::min<OPJ_UINT64>(n, src->size - src->pos);
  std::memcpy(out, src->data + src->pos, take);
  src->pos += take;
  return static_cast<OPJ_SIZE_T>(take);
}
OPJ_OFF_T Skip(OPJ_OFF_T n, void* user) {
  auto* src = static_cast<Source*>(user);
  if (n < 0) {
    const OPJ_UINT64 back = std::min<OPJ_UINT64>(static_cast<OPJ_UINT64>(-n), src->pos);
    src->pos -= back;
    return -static_cast<OPJ_OFF_T>(back);
  }
  const OPJ_UINT64 ahead = std::min<OPJ_UINT64>(static_cast<OPJ_UINT64>(n), src->size - src->pos);
  src->pos += ahead;
  return static_cast<OPJ_OFF_T>(ahead);
}
OPJ_BOOL Seek(OPJ_OFF_T to, void* user) {
  auto* src = static_cast<Source*>(user);
  if (to < 0 || static_cast<OPJ_UINT64>(to) > src->size) return OPJ_FALSE;
  src->pos = static_cast<OPJ_UINT64>(to);
  return OPJ_TRUE;
}

void OnError(const char* message, void* user) {
  auto* src = static_cast<Source*>(user);
  if (src->message[0] == '\0') std::snprintf(src->message, sizeof(src->message), "%s", message ? message : "");
}
void Ignore(const char*, void*) {}  // warnings and information: never printed

// A sample as Pillow brings it to 8 bits.
uint8_t To8Bit(int32_t v, uint32_t prec, bool sgnd) {
  const int shift = 8 - static_cast<int>(prec);
  int64_t x = static_cast<int64_t>(v) + (sgnd ? int64_t{1} << (prec - 1) : 0);
  if (shift < 0) {
    x = (x + (int64_t{1} << (-shift - 1))) >> -shift;
  } else {
    x <<= shift;
  }
  return static_cast<uint8_t>(std::clamp<int64_t>(x, 0, 255));
}

struct Codec {
  opj_codec_t* codec = nullptr;
  opj_stream_t* stream = nullptr;
  opj_image_t* image = nullptr;
  ~Codec() {
    if (image) opj_image_destroy(image);
    if (stream) opj_stream_destroy(stream);
    if (codec) opj_destroy_codec(codec);
  }
};

Status CheckComponents(const opj_image_t& img) {
  if (img.numcomps < 1 || img.numcomps > 4) {
    return UnsupportedError("JPEG 2000 stream: {} components; only 1 (grey), 2 (grey + alpha), 3 (RGB) or 4 (RGBA)",
                            img.numcomps);
  }
  if (img.color_space == OPJ_CLRSPC_SYCC || img.color_space == OPJ_CLRSPC_EYCC ||
      img.color_space == OPJ_CLRSPC_CMYK) {
    return UnsupportedError("JPEG 2000 stream: YCC and CMYK colour spaces are not supported (only grey and sRGB)");
  }
  for (OPJ_UINT32 c = 0; c < img.numcomps; ++c) {
    const opj_image_comp_t& comp = img.comps[c];
    if (comp.dx != 1 || comp.dy != 1) {
      return UnsupportedError("JPEG 2000 stream: component {} is subsampled ({} x {}); only full-size components", c,
                              comp.dx, comp.dy);
    }
    if (comp.prec < 1 || comp.prec > 31) {
      return InvalidInputError("JPEG 2000 stream: component {} has {} bits a sample, expected 1 to 31", c, comp.prec);
    }
  }
  return Status::Ok();
}

}  // namespace

Result<RgbImage> DecodeJpeg2000(std::span<const uint8_t> bytes) {
  Source src{bytes.data(), bytes.size(), 0, {0}};
  const bool codestream = bytes.size() >= 2 && bytes[0] == 0xFF && bytes[1] == 0x4F;
  Codec c;
  c.codec = opj_create_decompress(codestream ? OPJ_CODEC_J2K : OPJ_CODEC_JP2);
  if (c.codec == nullptr) return OutOfMemoryError("JPEG 2000 stream: OpenJPEG could not create a decoder");
  opj_set_error_handler(c.codec, OnError, &src);
  opj_set_warning_handler(c.codec, Ignore, &src);
  opj_set_info_handler(c.codec, Ignore, &src);
  opj_dparameters_t params;
  opj_set_default_decoder_parameters(&params);
  if (!opj_setup_decoder(c.codec, &params)) return InternalError("JPEG 2000 stream: OpenJPEG rejected its set-up");
  c.stream = opj_stream_create(64 * 1024, OPJ_TRUE);
  if (c.stream == nullptr) return OutOfMemoryError("JPEG 2000 stream: OpenJPEG could not create a stream");
  opj_stream_set_user_data(c.stream, &src, nullptr);
  opj_stream_set_user_data_length(c.stream, src.size);
  opj_stream_set_read_function(c.stream, Read);
  opj_stream_set_skip_function(c.stream, Skip);
  opj_stream_set_seek_function(c.stream, Seek);
  if (!opj_read_header(c.stream, c.codec, &c.image) || c.image == nullptr) {
    return InvalidInputError("JPEG 2000 stream: OpenJPEG cannot read the header: {}", LibraryMessage(src.message));
  }
  const opj_image_t& hdr = *c.image;
  VIGIL_RETURN_IF_ERROR(CheckComponents(hdr));
  RgbImage out;
  VIGIL_RETURN_IF_ERROR(AllocateRgb("JPEG 2000", static_cast<int64_t>(hdr.x1) - static_cast<int64_t>(hdr.x0),
                                    static_cast<int64_t>(hdr.y1) - static_cast<int64_t>(hdr.y0), out));
  if (!opj_decode(c.codec, c.stream, c.image) || !opj_end_decompress(c.codec, c.stream)) {
    return InvalidInputError("JPEG 2000 stream: OpenJPEG cannot decode: {}", LibraryMessage(src.message));
  }
  const opj_image_t& img = *c.image;
  const int64_t n = out.width * out.height;
  for (OPJ_UINT32 k = 0; k < img.numcomps; ++k) {
    if (img.comps[k].data == nullptr || static_cast<int64_t>(img.comps[k].w) != out.width ||
        static_cast<int64_t>(img.comps[k].h) != out.height) {
      return InvalidInputError("JPEG 2000 stream: component {} was not decoded at the image's size", k);
    }
  }
  const bool colour = img.numcomps >= 3;
  for (int64_t i = 0; i < n; ++i) {
    for (int ch = 0; ch < 3; ++ch) {
      const opj_image_comp_t& comp = img.comps[colour ? ch : 0];
      out.pixels[3 * i + ch] = To8Bit(comp.data[i], comp.prec, comp.sgnd != 0);
    }
  }
  return out;
}

}  // namespace vigil::cpu::image
