// Shape inference of the ops that change spatial extents: Pad, DepthToSpace,
// SpaceToDepth, Resize, Upsample.
#include <cmath>
#include <string>
#include <vector>

#include <fmt/ranges.h>

#include "ops/shape_ops_common.h"

namespace vigil::ops::shape_family {

Result<ResizeShape> ComputeResizeShape(const std::vector<int64_t>& in_dims, const std::vector<double>* scales,
                                       const std::vector<int64_t>* sizes, const std::vector<int64_t>& axes_in,
                                       std::string_view policy) {
  size_t rank = in_dims.size();
  std::vector<int64_t> axes = axes_in;
  if (axes.empty()) {
    for (size_t i = 0; i < rank; ++i) axes.push_back(static_cast<int64_t>(i));
  }
  size_t given = scales ? scales->size() : sizes->size();
  if (given != axes.size()) {
    return InvalidModelError("{} has {} entries, expected {} (one per resized axis)", scales ? "scales" : "sizes",
                             given, axes.size());
  }
  ResizeShape out{in_dims, std::vector<double>(rank, 1.0)};
  for (size_t j = 0; j < axes.size(); ++j) {
    int64_t a = axes[j];
    double in = static_cast<double>(in_dims[a]);
    if (scales) {
      double s = (*scales)[j];
      if (!(s > 0) || !std::isfinite(s)) return InvalidModelError("scales[{}] is {}; scales must be > 0", j, s);
      double size = std::floor(s * in);
      if (size > 9.0e15) return InvalidModelError("scales[{}] = {} gives an absurd output size", j, s);
      out.scales[a] = s;
      out.dims[a] = static_cast<int64_t>(size);
      continue;
    }
    int64_t size = (*sizes)[j];
    if (size < 0) return InvalidModelError("sizes[{}] is {}; sizes must be >= 0", j, size);
    if (in_dims[a] == 0 && size != 0) return InvalidModelError("cannot resize axis {} of size 0 to {}", a, size);
    out.scales[a] = in_dims[a] == 0 ? 1.0 : static_cast<double>(size) / in;
    out.dims[a] = size;
  }
  if (sizes && policy != "stretch") {
    if (policy != "not_larger" && policy != "not_smaller") {
      return InvalidModelError("keep_aspect_ratio_policy '{}' is not one of stretch, not_larger, not_smaller", policy);
    }
    double scale = out.scales[axes[0]];
    for (int64_t a : axes) {
      scale = policy == "not_larger" ? std::min(scale, out.scales[a]) : std::max(scale, out.scales[a]);
    }
    for (int64_t a : axes) {
      out.scales[a] = scale;
      // The reference rounds half up: int(x + 0.5).
      out.dims[a] = static_cast<int64_t>(scale * static_cast<double>(in_dims[a]) + 0.5);
    }
  }
  return out;
}

namespace {

using Dims = std::vector<ir::Dim>;

// Pad's pads and axes. Before opset 11 the pads are an attribute ("paddings"
// in opset 1); from 11 an input, and from 18 an optional axes input.
struct PadParams {
  std::optional<std::vector<int64_t>> pads;
  std::optional<std::vector<int64_t>> axes;  // nullopt: all axes, or unknown
  bool axes_unknown = false;
};

Result<PadParams> ReadPadParams(InferenceContext& ctx) {
  PadParams p;
  if (ctx.opset() < 11) {
    VIGIL_ASSIGN_OR_RETURN(p.pads, RequiredIntsAttr(ctx.node(), ctx.opset() < 2 ? "paddings" : "pads"));
    return p;
  }
  VIGIL_ASSIGN_OR_RETURN(p.pads, KnownInts(ctx, 1));
  if (ctx.opset() >= 18 && ctx.has_input(3)) {
    VIGIL_ASSIGN_OR_RETURN(p.axes, KnownInts(ctx, 3));
    p.axes_unknown = !p.axes;
  }
  return p;
}

Status InferPad(InferenceContext& ctx) {
  ir::DataType dtype = ElemType(ctx, 0);
  const Dims* in = InputDims(ctx, 0);
  VIGIL_ASSIGN_OR_RETURN(std::string mode, StringAttr(ctx.node(), "mode", "constant"));
  if (mode != "constant" && mode != "reflect" && mode != "edge" && mode != "wrap") {
    return ctx.Fail("mode '{}' is not one of constant, reflect, edge, wrap", mode);
  }
  VIGIL_ASSIGN_OR_RETURN(PadParams p, ReadPadParams(ctx));
  if (!in) {
    SetUnknownShape(ctx, 0, dtype);
    return Status::Ok();
  }
  int64_t rank = static_cast<int64_t>(in->size());
  if (!p.pads || p.axes_unknown) {
    SetTensor(ctx, 0, dtype, Symbols(ctx, in->size()));
    return Status::Ok();
  }
  std::vector<int64_t> axes;
  if (p.axes) {
    for (int64_t a : *p.axes) {
      VIGIL_ASSIGN_OR_RETURN(int64_t n, NormalizeAxis(ctx.node(), a, rank, "axes entry"));
      axes.push_back(n);
    }
  } else {
    for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
  }
  if (p.pads->size() != 2 * axes.size()) {
    return ctx.Fail("pads has {} entries, expected {} (begin and end for each of {} axes)", p.pads->size(),
                    2 * axes.size(), axes.size());
  }
  Dims out = *in;
  for (size_t j = 0; j < axes.size(); ++j) {
    std::optional<int64_t> total = CheckedAdd((*p.pads)[j], (*p.pads)[j + axes.size()]);
    if (!total) return ctx.Fail("pads [{}] overflow", fmt::join(*p.pads, ","));
    ir::Dim& d = out[axes[j]];
    if (d.value) {
      std::optional<int64_t> size = CheckedAdd(*d.value, *total);
      if (!size || *size < 0) return ctx.Fail("pads [{}] make axis {} negative or too large", fmt::join(*p.pads, ","), axes[j]);
      d = ir::Dim::Known(*size);
    } else if (*total != 0) {
      d = ctx.NewSymbol();
    }
  }
  SetTensor(ctx, 0, dtype, std::move(out));
  return Status::Ok();
}

// d * b and d / b for a dim that may be symbolic.
ir::Dim MulDim(InferenceContext& ctx, const ir::Dim& d, int64_t b) {
  if (d.value) {
    if (std::optional<int64_t> n = CheckedMul(*d.value, b)) return ir::Dim::Known(*n);
  }
  return b == 1 ? d : ctx.NewSymbol();
}

Result<ir::Dim> DivDim(InferenceContext& ctx, const ir::Dim& d, int64_t b, const char* what) {
  if (d.value) {
    if (*d.value % b != 0) return ctx.Fail("{} {} is not divisible by {}", what, *d.value, b);
    return ir::Dim::Known(*d.value / b);
  }
  return b == 1 ? d : ctx.NewSymbol();
}

Result<int64_t> BlockSize(InferenceContext& ctx) {
  VIGIL_ASSIGN_OR_RETURN(int64_t b, RequiredIntAttr(ctx.node(), "blocksize"));
  // A blocksize beyond 2^20 is absurd and would overflow b*b below.
  if (b < 1 || b > (int64_t{1} << 20)) return ctx.Fail("blocksize is {}; it must be in [1, 2^20]", b);
  return b;
}

Status InferDepthToSpace(InferenceContext& ctx) {
  ir::DataType dtype = ElemType(ctx, 0);
  const Dims* in = InputDims(ctx, 0);
  VIGIL_ASSIGN_OR_RETURN(int64_t b, BlockSize(ctx));
  VIGIL_ASSIGN_OR_RETURN(std::string mode, StringAttr(ctx.node(), "mode", "DCR"));
  if (mode != "DCR" && mode != "CRD") return ctx.Fail("mode '{}' is not DCR or CRD", mode);
  if (!in) {
    SetTensor(ctx, 0, dtype, Symbols(ctx, 4));
    return Status::Ok();
  }
  if (in->size() != 4) return ctx.Fail("input has rank {}; DepthToSpace needs rank 4 (NCHW)", in->size());
  VIGIL_ASSIGN_OR_RETURN(ir::Dim c, DivDim(ctx, (*in)[1], b * b, "channel count"));
  SetTensor(ctx, 0, dtype, {(*in)[0], c, MulDim(ctx, (*in)[2], b), MulDim(ctx, (*in)[3], b)});
  return Status::Ok();
}

Status InferSpaceToDepth(InferenceContext& ctx) {
  ir::DataType dtype = ElemType(ctx, 0);
  const Dims* in = InputDims(ctx, 0);
  VIGIL_ASSIGN_OR_RETURN(int64_t b, BlockSize(ctx));
  VIGIL_ASSIGN_OR_RETURN(std::string mode, StringAttr(ctx.node(), "mode", "DCR"));
  if (mode != "DCR" && mode != "CRD") return ctx.Fail("mode '{}' is not DCR or CRD", mode);
  if (!in) {
    SetTensor(ctx, 0, dtype, Symbols(ctx, 4));
    return Status::Ok();
  }
  if (in->size() != 4) return ctx.Fail("input has rank {}; SpaceToDepth needs rank 4 (NCHW)", in->size());
  VIGIL_ASSIGN_OR_RETURN(ir::Dim h, DivDim(ctx, (*in)[2], b, "height"));
  VIGIL_ASSIGN_OR_RETURN(ir::Dim w, DivDim(ctx, (*in)[3], b, "width"));
  SetTensor(ctx, 0, dtype, {(*in)[0], MulDim(ctx, (*in)[1], b * b), h, w});
  return Status::Ok();
}

// Output dims of a resize whose scales or sizes are not all known: resized
// axes become symbols, except an axis scaled by exactly 1.
Result<Dims> SymbolicResize(InferenceContext& ctx, const Dims& in, const std::vector<int64_t>& axes,
                            const std::vector<double>* scales) {
  Dims out = in;
  for (size_t j = 0; j < axes.size(); ++j) {
    const ir::Dim& d = in[axes[j]];
    double s = scales ? (*scales)[j] : 0.0;
    if (d.value && scales) {
      double size = std::floor(s * static_cast<double>(*d.value));
      if (size > 9.0e15) return ctx.Fail("scales[{}] = {} gives an absurd output size", j, s);
      out[axes[j]] = ir::Dim::Known(static_cast<int64_t>(size));
    } else if (!(scales && s == 1.0)) {
      out[axes[j]] = ctx.NewSymbol();
    }
  }
  return out;
}

Status InferResizeFrom(InferenceContext& ctx, size_t scales_input, size_t sizes_input) {
  ir::DataType dtype = ElemType(ctx, 0);
  const Dims* in = InputDims(ctx, 0);
  if (!in) {
    SetUnknownShape(ctx, 0, dtype);
    return Status::Ok();
  }
  int64_t rank = static_cast<int64_t>(in->size());
  std::vector<int64_t> axes;
  std::string policy = "stretch";
  if (ctx.opset() >= 18 && ctx.node().op_type == "Resize") {
    VIGIL_ASSIGN_OR_RETURN(axes, IntsAttr(ctx.node(), "axes"));
    for (int64_t& a : axes) {
      VIGIL_ASSIGN_OR_RETURN(a, NormalizeAxis(ctx.node(), a, rank, "axes entry"));
    }
    VIGIL_ASSIGN_OR_RETURN(policy, StringAttr(ctx.node(), "keep_aspect_ratio_policy", "stretch"));
  }
  std::vector<int64_t> all_axes = axes;
  if (all_axes.empty()) {
    for (int64_t i = 0; i < rank; ++i) all_axes.push_back(i);
  }
  // A known but empty scales (opset 11-13 models pass "" or []) means "use sizes".
  std::optional<std::vector<double>> scales;
  bool scales_unknown = false;
  if (ctx.node().op_type == "Upsample" && ctx.opset() < 9) {
    VIGIL_ASSIGN_OR_RETURN(std::vector<float> f, FloatsAttr(ctx.node(), "scales"));
    scales.emplace(f.begin(), f.end());
  } else if (ctx.has_input(scales_input)) {
    if (const ir::Tensor* t = ctx.input_value(scales_input)) {
      VIGIL_ASSIGN_OR_RETURN(std::vector<double> v, ReadDoubles(ctx, *t));
      if (!v.empty()) scales = std::move(v);
    } else {
      scales_unknown = true;
    }
  }
  std::optional<std::vector<int64_t>> sizes;
  bool sizes_unknown = false;
  if (sizes_input > 0 && ctx.has_input(sizes_input)) {
    VIGIL_ASSIGN_OR_RETURN(sizes, KnownInts(ctx, sizes_input));
    sizes_unknown = !sizes;
    if (sizes && sizes->empty()) sizes.reset();
  }
  if (scales && sizes) return ctx.Fail("scales and sizes are both given; only one may be");
  auto known = KnownDims(ctx.input_type(0));
  if (sizes && (policy == "stretch" || known)) {
    if (!known) {  // stretch: the output is the sizes, whatever the input dims
      if (sizes->size() != all_axes.size()) {
        return ctx.Fail("sizes has {} entries, expected {}", sizes->size(), all_axes.size());
      }
      Dims out = *in;
      for (size_t j = 0; j < all_axes.size(); ++j) out[all_axes[j]] = ir::Dim::Known((*sizes)[j]);
      SetTensor(ctx, 0, dtype, std::move(out));
      return Status::Ok();
    }
    auto shape = ComputeResizeShape(*known, nullptr, &*sizes, axes, policy);
    if (!shape.ok()) return ctx.Failure(shape.status().summary());
    SetTensor(ctx, 0, dtype, ToDims(shape->dims));
    return Status::Ok();
  }
  if (scales) {
    if (scales->size() != all_axes.size()) {
      return ctx.Fail("scales has {} entries, expected {}", scales->size(), all_axes.size());
    }
    for (double s : *scales) {
      if (!(s > 0) || !std::isfinite(s)) return ctx.Fail("scales [{}] must all be finite and > 0", fmt::join(*scales, ","));
    }
    VIGIL_ASSIGN_OR_RETURN(Dims out, SymbolicResize(ctx, *in, all_axes, &*scales));
    SetTensor(ctx, 0, dtype, std::move(out));
    return Status::Ok();
  }
  if (!sizes && !scales_unknown && !sizes_unknown) return ctx.Fail("needs either scales or sizes");
  VIGIL_ASSIGN_OR_RETURN(Dims out, SymbolicResize(ctx, *in, all_axes, nullptr));
  SetTensor(ctx, 0, dtype, std::move(out));
  return Status::Ok();
}

Status InferResize(InferenceContext& ctx) {
  // Resize-10 takes (X, scales); from 11 (X, roi, scales, sizes).
  if (ctx.opset() < 11) return InferResizeFrom(ctx, 1, 0);
  return InferResizeFrom(ctx, 2, 3);
}

Status InferUpsample(InferenceContext& ctx) { return InferResizeFrom(ctx, 1, 0); }

const OpSchema kSpatialSchemas[] = {
    {"", "Pad", 1, 10, 1, 1, 1, 1, InferPad},
    {"", "Pad", 11, kLatest, 2, 4, 1, 1, InferPad},
    {"", "DepthToSpace", 1, kLatest, 1, 1, 1, 1, InferDepthToSpace},
    {"", "SpaceToDepth", 1, kLatest, 1, 1, 1, 1, InferSpaceToDepth},
    {"", "Resize", 10, 10, 2, 2, 1, 1, InferResize},
    {"", "Resize", 11, 12, 3, 4, 1, 1, InferResize},
    {"", "Resize", 13, kLatest, 1, 4, 1, 1, InferResize},
    {"", "Upsample", 7, 8, 1, 1, 1, 1, InferUpsample},
    {"", "Upsample", 9, 9, 2, 2, 1, 1, InferUpsample},
};

}  // namespace

std::span<const OpSchema> SpatialSchemas() { return kSpatialSchemas; }

}  // namespace vigil::ops::shape_family
