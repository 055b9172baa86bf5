// Schemas and shape inference of the quantization ops: QuantizeLinear,
// DequantizeLinear (opsets 10, 13, 19, 21, ...) and DynamicQuantizeLinear (11).
//
// Every version keeps x's shape; versions differ in which scale layouts they
// allow (per-tensor; per-axis since 13; blocked since 21) and in how the
// output dtype is chosen, which one inference function per op handles.
#include <optional>

#include <fmt/ranges.h>

#include "ops/attributes.h"
#include "ops/quant_layout.h"
#include "ops/schema.h"
#include "ops/shape_helpers.h"
#include "ops/families.h"

namespace vigil::ops {
namespace {

using ir::DataType;

ir::TypeInfo SameShape(const ir::TypeInfo* x, DataType dtype) {
  if (!HasRank(x)) return TensorTypeUnknownShape(dtype);
  return TensorType(dtype, x->shape.dims);
}

// Checks the scale (input 1) and zero point (input 2) against x where the
// shapes are known: per-tensor, per-axis along `axis`, or blocked.
Status CheckScaleShape(InferenceContext& ctx) {
  const ir::TypeInfo* x = ctx.input_type(0);
  const ir::TypeInfo* scale = ctx.input_type(1);
  const ir::TypeInfo* zp = ctx.has_input(2) ? ctx.input_type(2) : nullptr;
  VIGIL_ASSIGN_OR_RETURN(int64_t block_size, IntAttr(ctx.node(), "block_size", 0));
  if (ctx.opset() < 21 && block_size != 0) block_size = 0;  // not part of older versions
  if (block_size < 0) return ctx.Fail("block_size must be >= 0, got {}", block_size);
  if (HasRank(scale) && HasRank(zp)) {
    const auto& a = scale->shape.dims;
    const auto& b = zp->shape.dims;
    bool same_rank = a.size() == b.size();
    for (size_t i = 0; same_rank && i < a.size(); ++i) {
      if (a[i].value && b[i].value && *a[i].value != *b[i].value) same_rank = false;
    }
    if (!same_rank) {
      return ctx.Fail("zero point shape {} differs from scale shape {}", ir::ShapeToString(zp->shape),
                      ir::ShapeToString(scale->shape));
    }
  }
  if (!HasRank(scale)) return Status::Ok();
  const size_t srank = scale->shape.dims.size();
  if (block_size == 0) {
    if (srank > 1) return ctx.Fail("scale has rank {}, expected a scalar or a 1-D tensor", srank);
    if (srank == 1 && ctx.opset() < 13 && scale->shape.dims[0].value && *scale->shape.dims[0].value != 1) {
      return ctx.Fail("scale must be a scalar before opset 13 (per-axis scales need opset 13)");
    }
    if (srank == 1 && HasRank(x) && scale->shape.dims[0].value && *scale->shape.dims[0].value != 1) {
      VIGIL_ASSIGN_OR_RETURN(int64_t axis, IntAttr(ctx.node(), "axis", 1));
      VIGIL_ASSIGN_OR_RETURN(axis, NormalizeAxis(ctx.node(), axis, static_cast<int64_t>(x->shape.dims.size())));
      const ir::Dim& d = x->shape.dims[axis];
      if (d.value && *d.value != *scale->shape.dims[0].value) {
        return ctx.Fail("scale has {} values but x has {} along axis {}", *scale->shape.dims[0].value, *d.value,
                        axis);
      }
    }
    return Status::Ok();
  }
  if (!HasRank(x)) return Status::Ok();
  const size_t xrank = x->shape.dims.size();
  if (srank != xrank) return ctx.Fail("blocked scale has rank {}, x has rank {}", srank, xrank);
  VIGIL_ASSIGN_OR_RETURN(int64_t axis, IntAttr(ctx.node(), "axis", 1));
  VIGIL_ASSIGN_OR_RETURN(axis, NormalizeAxis(ctx.node(), axis, static_cast<int64_t>(xrank)));
  for (size_t i = 0; i < xrank; ++i) {
    const ir::Dim& xd = x->shape.dims[i];
    const ir::Dim& sd = scale->shape.dims[i];
    if (!xd.value || !sd.value) continue;
    const int64_t want = static_cast<int64_t>(i) == axis ? (*xd.value + block_size - 1) / block_size : *xd.value;
    if (*sd.value != want) {
      return ctx.Fail("blocked scale has dim {} = {}, expected {} (x dim {}, block_size {})", i, *sd.value, want,
                      *xd.value, block_size);
    }
  }
  return Status::Ok();
}

Status InferQuantizeLinear(InferenceContext& ctx) {
  VIGIL_RETURN_IF_ERROR(CheckScaleShape(ctx));
  DataType out = DataType::kUint8;
  int64_t output_dtype = 0;
  if (ctx.opset() >= 21) {
    VIGIL_ASSIGN_OR_RETURN(output_dtype, IntAttr(ctx.node(), "output_dtype", 0));
    if (output_dtype != 0 && !ir::IsKnownDataType(static_cast<int32_t>(output_dtype))) {
      return ctx.Fail("output_dtype {} is not a known data type", output_dtype);
    }
    if (output_dtype != 0) out = static_cast<DataType>(output_dtype);
  }
  const ir::TypeInfo* zp = ctx.has_input(2) ? ctx.input_type(2) : nullptr;
  if (zp) {
    if (output_dtype != 0 && zp->elem_type != out) {
      return ctx.Fail("output_dtype {} differs from the zero point's dtype {}", ir::DataTypeName(out),
                      ir::DataTypeName(zp->elem_type));
    }
    out = zp->elem_type;
  }
  ctx.set_output(0, SameShape(ctx.input_type(0), out));
  return Status::Ok();
}

Status InferDequantizeLinear(InferenceContext& ctx) {
  VIGIL_RETURN_IF_ERROR(CheckScaleShape(ctx));
  const ir::TypeInfo* x = ctx.input_type(0);
  const ir::TypeInfo* zp = ctx.has_input(2) ? ctx.input_type(2) : nullptr;
  if (x && zp && x->elem_type != zp->elem_type) {
    return ctx.Fail("zero point has dtype {}, x has {}", ir::DataTypeName(zp->elem_type),
                    ir::DataTypeName(x->elem_type));
  }
  DataType out = DataType::kFloat32;
  if (ctx.opset() >= 19 && ctx.input_type(1)) out = ctx.input_type(1)->elem_type;
  if (ctx.opset() >= 23) {
    VIGIL_ASSIGN_OR_RETURN(int64_t output_dtype, IntAttr(ctx.node(), "output_dtype", 0));
    if (output_dtype != 0) {
      if (!ir::IsKnownDataType(static_cast<int32_t>(output_dtype))) {
        return ctx.Fail("output_dtype {} is not a known data type", output_dtype);
      }
      out = static_cast<DataType>(output_dtype);
    }
  }
  ctx.set_output(0, SameShape(x, out));
  return Status::Ok();
}

Status InferDynamicQuantizeLinear(InferenceContext& ctx) {
  ctx.set_output(0, SameShape(ctx.input_type(0), DataType::kUint8));
  if (ctx.num_outputs() > 1) ctx.set_output(1, TensorType(DataType::kFloat32, std::vector<ir::Dim>{}));
  if (ctx.num_outputs() > 2) ctx.set_output(2, TensorType(DataType::kUint8, std::vector<ir::Dim>{}));
  return Status::Ok();
}

const OpSchema kQuantizationSchemas[] = {
    {"", "QuantizeLinear", 10, kLatest, 2, 3, 1, 1, InferQuantizeLinear},
    {"", "DequantizeLinear", 10, kLatest, 2, 3, 1, 1, InferDequantizeLinear},
    {"", "DynamicQuantizeLinear", 11, kLatest, 1, 1, 3, 3, InferDynamicQuantizeLinear},
};

std::string ShapeText(const std::vector<int64_t>& s) { return fmt::format("[{}]", fmt::join(s, ",")); }

}  // namespace

std::span<const OpSchema> QuantizationSchemas() { return kQuantizationSchemas; }

Result<QuantScaleLayout> ReadQuantScaleLayout(const ir::Node& node, int64_t opset, const std::vector<int64_t>& x,
                                              std::string_view x_text, const std::vector<int64_t>& scale,
                                              const std::vector<int64_t>* zero_point) {
  auto count = [](const std::vector<int64_t>& s) {
    int64_t n = 1;
    for (int64_t d : s) n *= d;
    return n;
  };
  const std::string label = NodeLabel(node);
  if (zero_point && *zero_point != scale && !(count(*zero_point) == 1 && count(scale) == 1)) {
    return InvalidInputError("{}: zero point shape {} differs from scale shape {}", label, ShapeText(*zero_point),
                             ShapeText(scale));
  }
  VIGIL_ASSIGN_OR_RETURN(int64_t block_size, IntAttr(node, "block_size", 0));
  if (opset < 21) block_size = 0;
  if (block_size < 0) return InvalidInputError("{}: block_size must be >= 0, got {}", label, block_size);
  QuantScaleLayout layout;
  if (block_size == 0 && scale.size() <= 1 && count(scale) == 1) return layout;
  VIGIL_ASSIGN_OR_RETURN(int64_t axis, IntAttr(node, "axis", 1));
  VIGIL_ASSIGN_OR_RETURN(axis, NormalizeAxis(node, axis, static_cast<int64_t>(x.size())));
  layout.axis_dim = x[axis];
  for (size_t i = axis + 1; i < x.size(); ++i) layout.inner *= x[i];
  if (block_size == 0) {
    if (scale.size() != 1) {
      return InvalidInputError("{}: scale has shape {}, expected a scalar or a 1-D tensor", label, ShapeText(scale));
    }
    if (opset < 13) {
      return InvalidInputError("{}: scale must be a scalar before opset 13, got {}", label, ShapeText(scale));
    }
    if (scale[0] != layout.axis_dim) {
      return InvalidInputError("{}: scale has {} values, x {} has {} along axis {}", label, scale[0], x_text,
                               layout.axis_dim, axis);
    }
    layout.mode = QuantScaleLayout::Mode::kPerAxis;
    return layout;
  }
  // Blocked: the scale's dim along the axis counts blocks (the last may be short).
  std::vector<int64_t> want = x;
  want[axis] = (x[axis] + block_size - 1) / block_size;
  if (scale != want) {
    return InvalidInputError("{}: blocked scale has shape {}, x {} with block_size {} along axis {} needs {}", label,
                             ShapeText(scale), x_text, block_size, axis, ShapeText(want));
  }
  layout.mode = QuantScaleLayout::Mode::kBlocked;
  layout.block_size = block_size;
  layout.blocks = want[axis];
  return layout;
}

}  // namespace vigil::ops
