// Schemas, parameter resolution (vision.h) and shape inference of the
// image-geometry ops: CenterCropPad (crop or zero-pad around the centre),
// Col2Im (sum column blocks back into an image, the inverse layout of
// im2col) and AffineGrid (the sampling grid of affine matrices, for
// GridSample).
#include "ops/vision.h"

#include <algorithm>
#include <climits>
#include <string>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "ops/attributes.h"
#include "ops/schema.h"
#include "ops/shape_helpers.h"
#include "ops/families.h"

namespace vigil::ops {
namespace {

// The error a backend's ctx.Fail gives: invalid input, naming the node.
template <typename... Args>
Status Fail(const ir::Node& node, fmt::format_string<Args...> f, Args&&... args) {
  return InvalidInputError("{}: {}", NodeLabel(node), fmt::format(f, std::forward<Args>(args)...));
}

// Sizes and attribute values above this are refused, so that the geometry's
// sums and products stay far from overflowing int64.
constexpr int64_t kMaxExtent = INT32_MAX;

// An n-entry ints attribute (`fallback` for each entry when absent).
Result<std::vector<int64_t>> SpatialAttr(const ir::Node& node, const char* name, size_t n, int64_t fallback,
                                         int64_t min) {
  VIGIL_ASSIGN_OR_RETURN(std::vector<int64_t> v, IntsAttr(node, name, std::vector<int64_t>(n, fallback)));
  if (v.size() != n) return Fail(node, "attribute {} has {} values, expected {}", name, v.size(), n);
  for (int64_t x : v) {
    if (x < min || x > kMaxExtent) {
      return Fail(node, "attribute {} is [{}]; each value must be in [{}, {}]", name, fmt::join(v, ","), min,
                  kMaxExtent);
    }
  }
  return v;
}

}  // namespace

// --- Resolution (vision.h) -----------------------------------------------------

Result<std::vector<int64_t>> ResolveCenterCropPadAxes(const ir::Node& node, int64_t rank, size_t shape_len) {
  std::vector<int64_t> axes;
  if (HasAttr(node, "axes")) {
    VIGIL_ASSIGN_OR_RETURN(std::vector<int64_t> given, IntsAttr(node, "axes"));
    for (int64_t a : given) {
      VIGIL_ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(node, a, rank, "axes"));
      if (std::find(axes.begin(), axes.end(), axis) != axes.end()) {
        return Fail(node, "attribute axes [{}] names axis {} twice", fmt::join(given, ","), axis);
      }
      axes.push_back(axis);
    }
  } else {
    for (int64_t a = 0; a < rank; ++a) axes.push_back(a);
  }
  if (axes.size() != shape_len) {
    return Fail(node, "input shape has {} values but there are {} axes to crop or pad ({})", shape_len, axes.size(),
                HasAttr(node, "axes") ? "attribute axes" : "every axis of input_data");
  }
  return axes;
}

Result<Col2ImGeometry> ResolveCol2Im(const ir::Node& node, const std::vector<int64_t>& image_shape,
                                     const std::vector<int64_t>& block_shape) {
  const size_t n = image_shape.size();
  if (n == 0) return Fail(node, "input image_shape is empty; Col2Im needs at least one spatial dim");
  if (block_shape.size() != n) {
    return Fail(node, "input block_shape has {} values but image_shape has {}; they must be equal", block_shape.size(),
                n);
  }
  Col2ImGeometry g;
  g.image = image_shape;
  g.block = block_shape;
  for (size_t i = 0; i < n; ++i) {
    if (g.image[i] < 1 || g.image[i] > kMaxExtent) {
      return Fail(node, "input image_shape is [{}]; each value must be in [1, {}]", fmt::join(g.image, ","),
                  kMaxExtent);
    }
    if (g.block[i] < 1 || g.block[i] > kMaxExtent) {
      return Fail(node, "input block_shape is [{}]; each value must be in [1, {}]", fmt::join(g.block, ","),
                  kMaxExtent);
    }
  }
  VIGIL_ASSIGN_OR_RETURN(g.dilations, SpatialAttr(node, "dilations", n, 1, 1));
  VIGIL_ASSIGN_OR_RETURN(g.strides, SpatialAttr(node, "strides", n, 1, 1));
  VIGIL_ASSIGN_OR_RETURN(std::vector<int64_t> pads, SpatialAttr(node, "pads", 2 * n, 0, 0));
  g.pads_begin.assign(pads.begin(), pads.begin() + static_cast<std::ptrdiff_t>(n));
  g.pads_end.assign(pads.begin() + static_cast<std::ptrdiff_t>(n), pads.end());
  for (size_t i = 0; i < n; ++i) {
    const int64_t span = g.dilations[i] * (g.block[i] - 1) + 1;
    const int64_t room = g.image[i] + g.pads_begin[i] + g.pads_end[i] - span;
    if (room < 0) {
      return Fail(node,
                  "spatial dim {}: a block spans {} (block_shape {}, dilation {}) but the padded image has only {} "
                  "(image_shape {} + pads {} + {})",
                  i, span, g.block[i], g.dilations[i], g.image[i] + g.pads_begin[i] + g.pads_end[i], g.image[i],
                  g.pads_begin[i], g.pads_end[i]);
    }
    g.positions.push_back(room / g.strides[i] + 1);
    if (__builtin_mul_overflow(g.block_size, g.block[i], &g.block_size) ||
        __builtin_mul_overflow(g.position_count, g.positions.back(), &g.position_count)) {
      return Fail(node, "image_shape [{}] and block_shape [{}] give more blocks than vigil can count",
                  fmt::join(g.image, ","), fmt::join(g.block, ","));
    }
  }
  return g;
}

Result<int64_t> Col2ImChannels(const ir::Node& node, const Col2ImGeometry& g, const std::vector<int64_t>& dims) {
  if (dims.size() != 3) {
    return Fail(node, "input has shape [{}]; Col2Im needs rank 3 [N, C * prod(block_shape), L]", fmt::join(dims, ","));
  }
  if (dims[1] % g.block_size != 0) {
    return Fail(node, "input dim 1 is {}, not a multiple of the block size {} (block_shape [{}])", dims[1],
                g.block_size, fmt::join(g.block, ","));
  }
  if (dims[2] != g.position_count) {
    return Fail(node, "input dim 2 is {} but the image holds {} block positions ([{}] for image_shape [{}])", dims[2],
                g.position_count, fmt::join(g.positions, " x "), fmt::join(g.image, ","));
  }
  return dims[1] / g.block_size;
}

Result<std::vector<int64_t>> ResolveAffineGridSize(const ir::Node& node, const std::vector<int64_t>& size,
                                                   const std::vector<int64_t>& theta_dims) {
  if (size.size() != 4 && size.size() != 5) {
    return Fail(node, "input size is [{}]; it must be [N, C, H, W] (2D) or [N, C, D, H, W] (3D)",
                fmt::join(size, ","));
  }
  for (int64_t s : size) {
    if (s < 0 || s > kMaxExtent) {
      return Fail(node, "input size is [{}]; each value must be in [0, {}]", fmt::join(size, ","), kMaxExtent);
    }
  }
  const int64_t spatial = static_cast<int64_t>(size.size()) - 2;
  if (!theta_dims.empty()) {
    if (theta_dims.size() != 3 || theta_dims[1] != spatial || theta_dims[2] != spatial + 1) {
      return Fail(node, "input theta has shape [{}]; a {}D size [{}] needs [N, {}, {}]", fmt::join(theta_dims, ","),
                  spatial, fmt::join(size, ","), spatial, spatial + 1);
    }
    if (theta_dims[0] != size[0]) {
      return Fail(node, "input theta holds {} matrices but size[0] (N) is {}", theta_dims[0], size[0]);
    }
  }
  return std::vector<int64_t>(size.begin() + 2, size.end());
}

Result<bool> ReadAlignCorners(const ir::Node& node) {
  VIGIL_ASSIGN_OR_RETURN(int64_t align, IntAttr(node, "align_corners", 0));
  if (align != 0 && align != 1) return Fail(node, "attribute align_corners is {}, expected 0 or 1", align);
  return align == 1;
}

namespace {

// --- Inference -------------------------------------------------------------------

const ir::TypeInfo* TensorInput(const InferenceContext& ctx, size_t i) {
  const ir::TypeInfo* t = ctx.input_type(i);
  return t && t->kind == ir::TypeInfo::Kind::kTensor ? t : nullptr;
}

ir::DataType Dtype(const InferenceContext& ctx, size_t i) {
  const ir::TypeInfo* t = TensorInput(ctx, i);
  return t ? t->elem_type : ir::DataType::kUndefined;
}

// An integer input that must be 1-D: its length when known.
Result<std::optional<int64_t>> VectorLength(const InferenceContext& ctx, size_t i, const char* name) {
  const ir::TypeInfo* t = TensorInput(ctx, i);
  if (t && t->elem_type != ir::DataType::kUndefined && t->elem_type != ir::DataType::kInt64 &&
      t->elem_type != ir::DataType::kInt32) {
    return ctx.Fail("input {} has dtype {}; it must be int64 or int32", name, ir::DataTypeName(t->elem_type));
  }
  if (!HasRank(t)) return std::optional<int64_t>{};
  if (t->shape.dims.size() != 1) {
    return ctx.Fail("input {} has shape {}; it must be 1-D", name, ir::ShapeToString(t->shape));
  }
  return t->shape.dims[0].value;
}

// The value of integer input i when known.
Result<std::optional<std::vector<int64_t>>> KnownValue(const InferenceContext& ctx, size_t i) {
  const ir::Tensor* v = ctx.input_value(i);
  if (!v) return std::optional<std::vector<int64_t>>{};
  VIGIL_ASSIGN_OR_RETURN(std::vector<int64_t> values, ReadInt64s(ctx, *v));
  return std::optional<std::vector<int64_t>>(std::move(values));
}

void SetOutput(InferenceContext& ctx, ir::DataType dtype, std::optional<std::vector<ir::Dim>> dims) {
  ctx.set_output(0, dims ? TensorType(dtype, std::move(*dims)) : TensorTypeUnknownShape(dtype));
}

Status InferCenterCropPad(InferenceContext& ctx) {
  const ir::DataType dtype = Dtype(ctx, 0);
  VIGIL_ASSIGN_OR_RETURN(std::optional<int64_t> shape_len, VectorLength(ctx, 1, "shape"));
  VIGIL_ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> shape, KnownValue(ctx, 1));
  if (shape) shape_len = static_cast<int64_t>(shape->size());
  const ir::TypeInfo* x = TensorInput(ctx, 0);
  if (!HasRank(x) || !shape_len) {
    SetOutput(ctx, dtype, std::nullopt);
    return Status::Ok();
  }
  std::vector<ir::Dim> dims = x->shape.dims;
  VIGIL_ASSIGN_OR_RETURN(
      std::vector<int64_t> axes,
      ResolveCenterCropPadAxes(ctx.node(), static_cast<int64_t>(dims.size()), static_cast<size_t>(*shape_len)));
  for (size_t k = 0; k < axes.size(); ++k) {
    if (shape && (*shape)[k] < 0) {
      return ctx.Fail("input shape is [{}]; sizes must not be negative", fmt::join(*shape, ","));
    }
    dims[static_cast<size_t>(axes[k])] = shape ? ir::Dim::Known((*shape)[k]) : ctx.NewSymbol();
  }
  SetOutput(ctx, dtype, std::move(dims));
  return Status::Ok();
}

Status InferCol2Im(InferenceContext& ctx) {
  const ir::DataType dtype = Dtype(ctx, 0);
  VIGIL_ASSIGN_OR_RETURN(std::optional<int64_t> image_len, VectorLength(ctx, 1, "image_shape"));
  VIGIL_ASSIGN_OR_RETURN(std::optional<int64_t> block_len, VectorLength(ctx, 2, "block_shape"));
  if (image_len && block_len && *image_len != *block_len) {
    return ctx.Fail("input block_shape has {} values but image_shape has {}; they must be equal", *block_len,
                    *image_len);
  }
  const ir::TypeInfo* x = TensorInput(ctx, 0);
  if (HasRank(x) && x->shape.dims.size() != 3) {
    return ctx.Fail("input has shape {}; Col2Im needs rank 3 [N, C * prod(block_shape), L]",
                    ir::ShapeToString(x->shape));
  }
  VIGIL_ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> image, KnownValue(ctx, 1));
  VIGIL_ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> block, KnownValue(ctx, 2));
  if (image) image_len = static_cast<int64_t>(image->size());
  if (!image_len) {
    SetOutput(ctx, dtype, std::nullopt);
    return Status::Ok();
  }
  std::vector<ir::Dim> dims = {HasRank(x) ? x->shape.dims[0] : ctx.NewSymbol(), ctx.NewSymbol()};
  if (image && block) {
    VIGIL_ASSIGN_OR_RETURN(Col2ImGeometry g, ResolveCol2Im(ctx.node(), *image, *block));
    if (HasRank(x)) {
      // Col2ImChannels on the known dims; an unknown one stands in as what it must be.
      const auto& xd = x->shape.dims;
      std::vector<int64_t> known = {xd[0].value.value_or(1), xd[1].value.value_or(g.block_size),
                                    xd[2].value.value_or(g.position_count)};
      VIGIL_ASSIGN_OR_RETURN(int64_t channels, Col2ImChannels(ctx.node(), g, known));
      if (xd[1].value) dims[1] = ir::Dim::Known(channels);
    }
  }
  for (int64_t i = 0; i < *image_len; ++i) {
    dims.push_back(image ? ir::Dim::Known((*image)[static_cast<size_t>(i)]) : ctx.NewSymbol());
  }
  SetOutput(ctx, dtype, std::move(dims));
  return Status::Ok();
}

Status InferAffineGrid(InferenceContext& ctx) {
  VIGIL_RETURN_IF_ERROR(ReadAlignCorners(ctx.node()).status());
  const ir::DataType dtype = Dtype(ctx, 0);
  const ir::TypeInfo* theta = TensorInput(ctx, 0);
  if (HasRank(theta) && theta->shape.dims.size() != 3) {
    return ctx.Fail("input theta has shape {}; it must be [N, 2, 3] or [N, 3, 4]", ir::ShapeToString(theta->shape));
  }
  VIGIL_ASSIGN_OR_RETURN(std::optional<int64_t> size_len, VectorLength(ctx, 1, "size"));
  VIGIL_ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> size, KnownValue(ctx, 1));
  if (size) {
    auto theta_dims = KnownDims(theta);
    VIGIL_ASSIGN_OR_RETURN(std::vector<int64_t> spatial,
                           ResolveAffineGridSize(ctx.node(), *size, theta_dims.value_or(std::vector<int64_t>{})));
    std::vector<ir::Dim> dims = {HasRank(theta) ? theta->shape.dims[0] : ir::Dim::Known((*size)[0])};
    for (int64_t s : spatial) dims.push_back(ir::Dim::Known(s));
    dims.push_back(ir::Dim::Known(static_cast<int64_t>(spatial.size())));
    SetOutput(ctx, dtype, std::move(dims));
    return Status::Ok();
  }
  // The rank follows from size's length or theta's shape.
  std::optional<int64_t> spatial;
  if (size_len) spatial = *size_len - 2;
  if (HasRank(theta) && theta->shape.dims[1].value) {
    const int64_t rows = *theta->shape.dims[1].value;
    if (spatial && *spatial != rows) {
      return ctx.Fail("input size has {} values but theta has shape {}; a 2D grid needs [N, 2, 3] and 4 sizes, a 3D "
                      "grid [N, 3, 4] and 5",
                      *size_len, ir::ShapeToString(theta->shape));
    }
    spatial = rows;
  }
  if (!spatial || (*spatial != 2 && *spatial != 3)) {
    if (spatial) return ctx.Fail("AffineGrid makes 2D or 3D grids; the inputs describe {} spatial dims", *spatial);
    SetOutput(ctx, dtype, std::nullopt);
    return Status::Ok();
  }
  std::vector<ir::Dim> dims = {HasRank(theta) ? theta->shape.dims[0] : ctx.NewSymbol()};
  for (int64_t i = 0; i < *spatial; ++i) dims.push_back(ctx.NewSymbol());
  dims.push_back(ir::Dim::Known(*spatial));
  SetOutput(ctx, dtype, std::move(dims));
  return Status::Ok();
}

const OpSchema kVisionSchemas[] = {
    {"", "CenterCropPad", 18, kLatest, 2, 2, 1, 1, InferCenterCropPad},
    {"", "Col2Im", 18, kLatest, 3, 3, 1, 1, InferCol2Im},
    {"", "AffineGrid", 20, kLatest, 2, 2, 1, 1, InferAffineGrid},
};

}  // namespace

std::span<const OpSchema> VisionSchemas() { return kVisionSchemas; }

}  // namespace vigil::ops
