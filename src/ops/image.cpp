// Schema, parameter resolution (image.h) and shape inference of
// ImageDecoder (opset 20): a 1-D uint8 tensor holding an encoded image (BMP,
// JPEG, JPEG 2000, PNG, PNM, TIFF or WebP) becomes uint8 [H, W, C], C = 3
// (RGB or BGR) or 1 (Grayscale). H and W depend on the data: they get fresh
// symbols at load time.
#include "ops/image.h"

#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "base/printable.h"
#include "ops/attributes.h"
#include "ops/families.h"
#include "ops/schema.h"
#include "ops/shape_helpers.h"

namespace vigil::ops {

Result<PixelFormat> ResolvePixelFormat(const ir::Node& node) {
  VIGIL_ASSIGN_OR_RETURN(std::string f, StringAttr(node, "pixel_format", "RGB"));
  if (f == "RGB") return PixelFormat::kRgb;
  if (f == "BGR") return PixelFormat::kBgr;
  if (f == "Grayscale") return PixelFormat::kGrayscale;
  return InvalidModelError("{}: attribute pixel_format is '{}', expected 'RGB', 'BGR' or 'Grayscale'",
                           NodeLabel(node), Printable(f));
}

namespace {

Status InferImageDecoder(InferenceContext& ctx) {
  VIGIL_ASSIGN_OR_RETURN(PixelFormat format, ResolvePixelFormat(ctx.node()));
  const ir::TypeInfo* x = ctx.input_type(0);
  if (x && x->elem_type != ir::DataType::kUint8 && x->elem_type != ir::DataType::kUndefined) {
    return ctx.Fail("input 0 (encoded_stream) is {}, expected uint8", ir::DataTypeName(x->elem_type));
  }
  if (HasRank(x) && x->shape.dims.size() != 1) {
    return ctx.Fail("input 0 (encoded_stream) has rank {}, expected 1 (the bytes of an encoded image)",
                    x->shape.dims.size());
  }
  const ir::Dim height = ctx.NewSymbol(), width = ctx.NewSymbol();
  const ir::Dim channels = ir::Dim::Known(PixelFormatChannels(format));
  ctx.set_output(0, TensorType(ir::DataType::kUint8, std::vector<ir::Dim>{height, width, channels}));
  return Status::Ok();
}

const OpSchema kImageSchemas[] = {
    {"", "ImageDecoder", 20, kLatest, 1, 1, 1, 1, InferImageDecoder},
};

}  // namespace

std::span<const OpSchema> ImageSchemas() { return kImageSchemas; }

}  // namespace vigil::ops
