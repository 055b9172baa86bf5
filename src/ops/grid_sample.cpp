// Schema and shape inference of GridSample: X [N, C, D1, ..., Dr] sampled at
// the normalized positions of grid [N, O1, ..., Or, r] gives
// Y [N, C, O1, ..., Or].
#include "ops/grid_sample.h"

#include <string>
#include <vector>

#include "ops/attributes.h"
#include "ops/schema.h"
#include "ops/shape_helpers.h"
#include "ops/families.h"

namespace vigil::ops {

Result<GridSampleAttrs> ReadGridSampleAttrs(const ir::Node& node, int64_t opset) {
  GridSampleAttrs a;
  const bool modern = opset >= 20;
  VIGIL_ASSIGN_OR_RETURN(std::string mode, StringAttr(node, "mode", modern ? "linear" : "bilinear"));
  if (mode == "nearest") {
    a.mode = GridSampleMode::kNearest;
  } else if (mode == (modern ? "linear" : "bilinear")) {
    a.mode = GridSampleMode::kLinear;
  } else if (mode == (modern ? "cubic" : "bicubic")) {
    a.mode = GridSampleMode::kCubic;
  } else {
    return InvalidModelError("{}: mode is '{}'; opset {} takes {}", NodeLabel(node), mode, opset,
                             modern ? "'linear', 'nearest' or 'cubic'" : "'bilinear', 'nearest' or 'bicubic'");
  }
  VIGIL_ASSIGN_OR_RETURN(std::string padding, StringAttr(node, "padding_mode", "zeros"));
  if (padding == "zeros") {
    a.padding = GridSamplePadding::kZeros;
  } else if (padding == "border") {
    a.padding = GridSamplePadding::kBorder;
  } else if (padding == "reflection") {
    a.padding = GridSamplePadding::kReflection;
  } else {
    return InvalidModelError("{}: padding_mode is '{}', expected 'zeros', 'border' or 'reflection'", NodeLabel(node),
                             padding);
  }
  VIGIL_ASSIGN_OR_RETURN(int64_t align, IntAttr(node, "align_corners", 0));
  if (align != 0 && align != 1) {
    return InvalidModelError("{}: align_corners is {}, expected 0 or 1", NodeLabel(node), align);
  }
  a.align_corners = align == 1;
  return a;
}

Result<std::vector<int64_t>> GridSampleOutputDims(const ir::Node& node, int64_t opset,
                                                  const std::vector<int64_t>& x, std::string_view x_text,
                                                  const std::vector<int64_t>& grid, std::string_view grid_text) {
  const bool modern = opset >= 20;
  if (modern ? x.size() < 3 : x.size() != 4) {
    return InvalidInputError("{}: input 0 (X) is {}; opset {} needs {}", NodeLabel(node), x_text, opset,
                             modern ? "rank >= 3 (N x C x D1 x ...)" : "rank 4 (N x C x H x W)");
  }
  const size_t r = x.size() - 2;
  if (grid.size() != x.size() || grid[0] != x[0] || grid.back() != static_cast<int64_t>(r)) {
    return InvalidInputError("{}: input 1 (grid) is {}; X {} needs [{}, D1_out, ..., {}]", NodeLabel(node), grid_text,
                             x_text, x[0], r);
  }
  std::vector<int64_t> out{x[0], x[1]};
  out.insert(out.end(), grid.begin() + 1, grid.end() - 1);
  return out;
}

namespace {

// A dim carried to the output: kept when known or named, else a fresh symbol.
ir::Dim Carry(InferenceContext& ctx, const ir::Dim& d) {
  if (d.is_known() || d.is_symbolic()) return d;
  return ctx.NewSymbol();
}

Status InferGridSample(InferenceContext& ctx) {
  VIGIL_RETURN_IF_ERROR(ReadGridSampleAttrs(ctx.node(), ctx.opset()).status());
  const ir::TypeInfo* x = ctx.input_type(0);
  const ir::TypeInfo* grid = ctx.input_type(1);
  const bool modern = ctx.opset() >= 20;
  if (HasRank(x)) {
    size_t rank = x->shape.dims.size();
    if (modern ? rank < 3 : rank != 4) {
      return ctx.Fail("input 0 (X) is {}; opset {} needs {}", ir::ShapeToString(x->shape), ctx.opset(),
                      modern ? "rank >= 3 (N x C x D1 x ...)" : "rank 4 (N x C x H x W)");
    }
  }
  if (HasRank(grid)) {
    const auto& g = grid->shape.dims;
    size_t rank = HasRank(x) ? x->shape.dims.size() : g.size();
    if (g.size() != rank || (!modern && rank != 4) || rank < 3) {
      return ctx.Fail("input 1 (grid) is {}; it must be [N, D1_out, ..., Dr_out, r] with the rank of X ({})",
                      ir::ShapeToString(grid->shape), HasRank(x) ? ir::ShapeToString(x->shape) : "rank unknown");
    }
    if (g.back().is_known() && *g.back().value != static_cast<int64_t>(rank) - 2) {
      return ctx.Fail("input 1 (grid) is {}; its last dim must be {}, one coordinate per spatial dim of X",
                      ir::ShapeToString(grid->shape), rank - 2);
    }
    if (HasRank(x) && x->shape.dims[0].is_known() && g[0].is_known() && *x->shape.dims[0].value != *g[0].value) {
      return ctx.Fail("input 1 (grid) is {} but X is {}; their batch dims must be equal",
                      ir::ShapeToString(grid->shape), ir::ShapeToString(x->shape));
    }
  }
  if (!x || x->kind != ir::TypeInfo::Kind::kTensor) return Status::Ok();
  if (!HasRank(x) || !HasRank(grid)) {
    ctx.set_output(0, TensorTypeUnknownShape(x->elem_type));
    return Status::Ok();
  }
  const auto& g = grid->shape.dims;
  const ir::Dim& batch = x->shape.dims[0].is_known() || x->shape.dims[0].is_symbolic() ? x->shape.dims[0] : g[0];
  std::vector<ir::Dim> out{Carry(ctx, batch), Carry(ctx, x->shape.dims[1])};
  for (size_t i = 1; i + 1 < g.size(); ++i) out.push_back(Carry(ctx, g[i]));
  ctx.set_output(0, TensorType(x->elem_type, std::move(out)));
  return Status::Ok();
}

// Opset 20 generalised GridSample to N-D and renamed its modes; 22 added
// bfloat16.
const OpSchema kGridSampleSchemas[] = {
    {"", "GridSample", 16, 19, 2, 2, 1, 1, InferGridSample},
    {"", "GridSample", 20, kLatest, 2, 2, 1, 1, InferGridSample},
};

}  // namespace

std::span<const OpSchema> GridSampleSchemas() { return kGridSampleSchemas; }

}  // namespace vigil::ops
