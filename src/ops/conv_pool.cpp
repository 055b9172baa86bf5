// Schemas and shape inference of the convolution and pooling ops: Conv,
// ConvTranspose, DeformConv, CausalConvWithState, MaxPool, AveragePool,
// LpPool, their Global variants and MaxUnpool, and vigil's FusedConv. The window arithmetic lives in conv_geometry.cpp, shared with the
// kernels.
#include <optional>
#include <string>
#include <vector>

#include "ir/fuse_conv_epilogue.h"
#include "ir/layout_nhwc.h"  // kVigilDomain, kConvNhwcRelu, kConvNhwcRelu6
#include "ops/attributes.h"
#include "ops/conv_geometry.h"
#include "ops/linear_shapes.h"
#include "ops/schema.h"
#include "ops/shape_helpers.h"
#include "ops/families.h"

namespace vigil::ops {
namespace {

// The spatial dims of a rank-known tensor when all are known numbers.
std::optional<std::vector<int64_t>> KnownSpatial(const ir::TypeInfo* t) {
  if (!HasRank(t) || t->shape.dims.size() < 2) return std::nullopt;
  std::vector<int64_t> out;
  for (size_t i = 2; i < t->shape.dims.size(); ++i) {
    if (!t->shape.dims[i].is_known()) return std::nullopt;
    out.push_back(*t->shape.dims[i].value);
  }
  return out;
}

// Checks that X is a tensor of rank >= min_rank. Returns false (with the
// output set as far as known) when its shape is not known.
Result<bool> CheckDataInput(InferenceContext& ctx, size_t min_rank, const char* layout) {
  const ir::TypeInfo* x = ctx.input_type(0);
  if (!IsTensorType(x)) return false;
  if (!HasRank(x)) {
    ctx.set_output(0, TensorTypeUnknownShape(x->elem_type));
    return false;
  }
  if (x->shape.dims.size() < min_rank) {
    return ctx.Fail("input 0 has rank {} ({}), {} needs rank >= {} ({})", x->shape.dims.size(),
                    ir::ShapeToString(x->shape), ctx.node().op_type, min_rank, layout);
  }
  return true;
}

// Conv and ConvTranspose take X and W of one dtype, W of X's rank, and an
// optional 1-D bias of `channels` elements. ConvInteger and QLinearConv keep
// W and B elsewhere (`operands`) and allow other dtypes.
Status CheckWeightsAndBias(InferenceContext& ctx, const ir::Dim& channels, const ConvOperands& operands = {}) {
  const ir::TypeInfo* x = ctx.input_type(0);
  const ir::TypeInfo* w = ctx.input_type(operands.w);
  if (operands.same_dtype && IsTensorType(w) && w->elem_type != x->elem_type) {
    return ctx.Fail("input {} (W) has dtype {}, input 0 (X) has {}; they must match", operands.w,
                    ir::DataTypeName(w->elem_type), ir::DataTypeName(x->elem_type));
  }
  if (HasRank(w) && w->shape.dims.size() != x->shape.dims.size()) {
    return ctx.Fail("input {} (W) has rank {}, {} needs rank {} like input 0 (X) {}", operands.w,
                    w->shape.dims.size(), ctx.node().op_type, x->shape.dims.size(), ir::ShapeToString(x->shape));
  }
  const size_t bi = operands.bias.value_or(0);
  const ir::TypeInfo* b = operands.bias && ctx.has_input(bi) ? ctx.input_type(bi) : nullptr;
  if (HasRank(b)) {
    if (b->shape.dims.size() != 1) return ctx.Fail("input {} (B) has rank {}, expected 1", bi, b->shape.dims.size());
    const ir::Dim& bd = b->shape.dims[0];
    if (bd.is_known() && channels.is_known() && *bd.value != *channels.value) {
      return ctx.Fail("input {} (B) has {} elements, expected one per output channel ({})", bi, *bd.value,
                      *channels.value);
    }
  }
  return Status::Ok();
}

Result<int64_t> ReadGroup(InferenceContext& ctx) {
  VIGIL_ASSIGN_OR_RETURN(int64_t group, IntAttr(ctx.node(), "group", 1));
  // The upper bound keeps channel arithmetic from overflowing.
  if (group < 1 || group > (int64_t{1} << 30)) return ctx.Fail("group is {}, must be in [1, 2^30]", group);
  return group;
}

// a * b, or nullopt on overflow (dims come from the model file).
std::optional<int64_t> CheckedMul(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

Status InferConvShape(InferenceContext& ctx, const ConvOperands& operands, ir::DataType dtype) {
  VIGIL_ASSIGN_OR_RETURN(bool known, CheckDataInput(ctx, 3, "N x C x D1 x ..."));
  if (!known) {
    if (dtype != ir::DataType::kUndefined && IsTensorType(ctx.input_type(0))) {
      ctx.set_output(0, TensorTypeUnknownShape(dtype));
    }
    return Status::Ok();
  }
  const ir::TypeInfo* x = ctx.input_type(0);
  const ir::TypeInfo* w = ctx.input_type(operands.w);
  const auto& xd = x->shape.dims;
  VIGIL_ASSIGN_OR_RETURN(int64_t group, ReadGroup(ctx));
  ir::Dim out_channels = HasRank(w) && !w->shape.dims.empty() ? CarryDim(ctx, w->shape.dims[0]) : ctx.NewSymbol();
  VIGIL_RETURN_IF_ERROR(CheckWeightsAndBias(ctx, out_channels, operands));
  if (xd[1].is_known() && *xd[1].value % group != 0) {
    return ctx.Fail("input 0 (X) has {} channels, not divisible by group {}", *xd[1].value, group);
  }
  if (out_channels.is_known() && *out_channels.value % group != 0) {
    return ctx.Fail("input {} (W) has {} output channels, not divisible by group {}", operands.w, *out_channels.value,
                      group);
  }
  if (HasRank(w) && xd[1].is_known() && w->shape.dims[1].is_known() &&
      CheckedMul(*w->shape.dims[1].value, group) != xd[1].value) {
    return ctx.Fail("input 0 (X) has {} channels but input {} (W) expects {} per group x group {}", *xd[1].value,
                    operands.w, *w->shape.dims[1].value, group);
  }
  const size_t spatial = xd.size() - 2;
  VIGIL_ASSIGN_OR_RETURN(WindowAttrs wa, ReadWindowAttrs(ctx.node(), spatial, KnownSpatial(w), {}));
  std::vector<ir::Dim> out{CarryDim(ctx, xd[0]), out_channels};
  for (size_t i = 0; i < spatial; ++i) {
    if (wa.kernel.empty() || !xd[i + 2].is_known()) {
      out.push_back(ctx.NewSymbol());
      continue;
    }
    VIGIL_ASSIGN_OR_RETURN(WindowExtent e, ForwardExtent(ctx.node(), wa, i, *xd[i + 2].value));
    out.push_back(ir::Dim::Known(e.output));
  }
  ctx.set_output(0, TensorType(dtype == ir::DataType::kUndefined ? x->elem_type : dtype, std::move(out)));
  return Status::Ok();
}

Status InferConv(InferenceContext& ctx) { return InferConvShape(ctx, {}, ir::DataType::kUndefined); }

// ai.vigil.FusedConv (ir/fuse_conv_epilogue.h): Conv's output; Z (input 3)
// of exactly that type; `activation` '', 'Relu' or 'Relu6'.
Status InferFusedConv(InferenceContext& ctx) {
  VIGIL_RETURN_IF_ERROR(InferConvShape(ctx, {}, ir::DataType::kUndefined));
  VIGIL_ASSIGN_OR_RETURN(std::string act, StringAttr(ctx.node(), "activation", ""));
  if (!act.empty() && act != ir::kConvNhwcRelu && act != ir::kConvNhwcRelu6) {
    return ctx.Fail("activation is '{}', expected '', 'Relu' or 'Relu6'", act);
  }
  const ir::TypeInfo* z = ctx.has_input(3) ? ctx.input_type(3) : nullptr;
  const ir::TypeInfo* y = ctx.outputs().empty() ? nullptr : &ctx.outputs()[0];
  if (!IsTensorType(z) || !IsTensorType(y)) return Status::Ok();
  if (z->elem_type != y->elem_type) {
    return ctx.Fail("input 3 (Z) has dtype {}, the convolution's result {}; they must match",
                    ir::DataTypeName(z->elem_type), ir::DataTypeName(y->elem_type));
  }
  if (!HasRank(z) || !HasRank(y)) return Status::Ok();
  const auto& zd = z->shape.dims;
  const auto& yd = y->shape.dims;
  bool same = zd.size() == yd.size();
  for (size_t i = 0; same && i < zd.size(); ++i) {
    same = !zd[i].is_known() || !yd[i].is_known() || *zd[i].value == *yd[i].value;
  }
  if (!same) {
    return ctx.Fail("input 3 (Z) has shape {}, it must be the convolution's result's, {} (no broadcasting)",
                    ir::ShapeToString(z->shape), ir::ShapeToString(y->shape));
  }
  return Status::Ok();
}

// DeformConv: Conv's output shape (its window attributes, no auto_pad);
// input 2 (offset) holds offset_group * prod(kernel) * spatial-rank channels
// and input 4 (mask) offset_group * prod(kernel), both over the output's
// spatial dims; input 3 (B) is one bias per output channel.
Status InferDeformConv(InferenceContext& ctx) {
  VIGIL_ASSIGN_OR_RETURN(bool known, CheckDataInput(ctx, 3, "N x C x D1 x ..."));
  if (!known) return Status::Ok();
  const ir::TypeInfo* x = ctx.input_type(0);
  const ir::TypeInfo* w = ctx.input_type(1);
  const auto& xd = x->shape.dims;
  const size_t rank = xd.size(), spatial = rank - 2;
  VIGIL_ASSIGN_OR_RETURN(int64_t group, ReadGroup(ctx));
  VIGIL_ASSIGN_OR_RETURN(int64_t offset_group, IntAttr(ctx.node(), "offset_group", 1));
  if (offset_group < 1 || offset_group > (int64_t{1} << 30)) {
    return ctx.Fail("offset_group is {}, must be in [1, 2^30]", offset_group);
  }
  const char* names[] = {"X", "W", "offset", "B", "mask"};
  for (size_t i = 1; i < 5; ++i) {
    const ir::TypeInfo* t = ctx.has_input(i) ? ctx.input_type(i) : nullptr;
    if (!IsTensorType(t) || t->elem_type == ir::DataType::kUndefined) continue;
    if (t->elem_type != x->elem_type) {
      return ctx.Fail("input {} ({}) has dtype {}, input 0 (X) has {}; they must match", i, names[i],
                      ir::DataTypeName(t->elem_type), ir::DataTypeName(x->elem_type));
    }
    const size_t want_rank = i == 3 ? 1 : rank;
    if (HasRank(t) && t->shape.dims.size() != want_rank) {
      return ctx.Fail("input {} ({}) has shape {}, expected rank {}", i, names[i], ir::ShapeToString(t->shape),
                      want_rank);
    }
  }
  ir::Dim out_channels = HasRank(w) ? CarryDim(ctx, w->shape.dims[0]) : ctx.NewSymbol();
  if (xd[1].is_known()) {
    if (*xd[1].value % group != 0 || *xd[1].value % offset_group != 0) {
      return ctx.Fail("input 0 (X) has {} channels, not divisible by group {} and offset_group {}", *xd[1].value,
                      group, offset_group);
    }
    if (HasRank(w) && w->shape.dims[1].is_known() && CheckedMul(*w->shape.dims[1].value, group) != xd[1].value) {
      return ctx.Fail("input 0 (X) has {} channels but input 1 (W) expects {} per group x group {}", *xd[1].value,
                      *w->shape.dims[1].value, group);
    }
  }
  if (out_channels.is_known() && *out_channels.value % group != 0) {
    return ctx.Fail("input 1 (W) has {} output channels, not divisible by group {}", *out_channels.value, group);
  }
  const ir::TypeInfo* b = ctx.has_input(3) ? ctx.input_type(3) : nullptr;
  if (HasRank(b) && b->shape.dims[0].is_known() && out_channels.is_known() &&
      *b->shape.dims[0].value != *out_channels.value) {
    return ctx.Fail("input 3 (B) has {} elements, expected one per output channel ({})", *b->shape.dims[0].value,
                    *out_channels.value);
  }
  VIGIL_ASSIGN_OR_RETURN(WindowAttrs wa, ReadWindowAttrs(ctx.node(), spatial, KnownSpatial(w), {}));
  std::optional<int64_t> taps;
  if (!wa.kernel.empty()) {
    taps = offset_group;
    for (int64_t k : wa.kernel) taps = taps ? CheckedMul(*taps, k) : std::nullopt;
  }
  std::vector<ir::Dim> out{CarryDim(ctx, xd[0]), out_channels};
  for (size_t i = 0; i < spatial; ++i) {
    if (!wa.kernel.empty() && xd[i + 2].is_known()) {
      VIGIL_ASSIGN_OR_RETURN(WindowExtent e, ForwardExtent(ctx.node(), wa, i, *xd[i + 2].value));
      out.push_back(ir::Dim::Known(e.output));
    } else {
      const ir::TypeInfo* offset = ctx.input_type(2);
      out.push_back(HasRank(offset) ? CarryDim(ctx, offset->shape.dims[i + 2]) : ctx.NewSymbol());
    }
  }
  // offset and mask: N x (offset_group * taps [* spatial]) x output spatial dims.
  for (size_t i : {size_t{2}, size_t{4}}) {
    const ir::TypeInfo* t = ctx.has_input(i) ? ctx.input_type(i) : nullptr;
    if (!HasRank(t)) continue;
    std::optional<int64_t> channels = taps;
    if (taps && i == 2) channels = CheckedMul(*taps, static_cast<int64_t>(spatial));
    bool fits = !(channels && t->shape.dims[1].is_known() && *t->shape.dims[1].value != *channels);
    for (size_t d = 0; d < rank && fits; ++d) {
      if (d == 1) continue;
      const ir::Dim& have = t->shape.dims[d];
      const ir::Dim& want = d == 0 ? xd[0] : out[d];
      fits = !(have.is_known() && want.is_known() && *have.value != *want.value);
    }
    if (!fits) {
      std::vector<ir::Dim> want_dims = out;
      want_dims[1] = channels ? ir::Dim::Known(*channels) : ctx.NewSymbol();
      return ctx.Fail("input {} ({}) has shape {}, expected {} (N x {} x output dims)", i, names[i],
                      ir::ShapeToString(t->shape), ir::ShapeToString(TensorType(x->elem_type, want_dims).shape),
                      i == 2 ? "offset_group * prod(kernel) * spatial rank" : "offset_group * prod(kernel)");
    }
  }
  ctx.set_output(0, TensorType(x->elem_type, std::move(out)));
  return Status::Ok();
}

Status InferConvTranspose(InferenceContext& ctx) {
  VIGIL_ASSIGN_OR_RETURN(bool known, CheckDataInput(ctx, 3, "N x C x D1 x ..."));
  if (!known) return Status::Ok();
  const ir::TypeInfo* x = ctx.input_type(0);
  const ir::TypeInfo* w = ctx.input_type(1);
  const auto& xd = x->shape.dims;
  VIGIL_ASSIGN_OR_RETURN(int64_t group, ReadGroup(ctx));
  // W is C x M/group x k1 x ...: the output has M = W.dims[1] * group channels.
  ir::Dim out_channels = ctx.NewSymbol();
  if (HasRank(w) && w->shape.dims.size() >= 2) {
    const ir::Dim& per_group = w->shape.dims[1];
    std::optional<int64_t> channels = per_group.is_known() ? CheckedMul(*per_group.value, group) : std::nullopt;
    if (per_group.is_known() && !channels) {
      return ctx.Fail("input 1 (W) has {} output channels per group; times group {} overflows", *per_group.value,
                      group);
    }
    if (channels) {
      out_channels = ir::Dim::Known(*channels);
    } else if (group == 1) {
      out_channels = CarryDim(ctx, per_group);
    }
  }
  VIGIL_RETURN_IF_ERROR(CheckWeightsAndBias(ctx, out_channels));
  if (xd[1].is_known() && *xd[1].value % group != 0) {
    return ctx.Fail("input 0 (X) has {} channels, not divisible by group {}", *xd[1].value, group);
  }
  if (HasRank(w) && xd[1].is_known() && w->shape.dims[0].is_known() && *xd[1].value != *w->shape.dims[0].value) {
    return ctx.Fail("input 0 (X) has {} channels but input 1 (W) has {} input channels (W.dims[0])", *xd[1].value,
                    *w->shape.dims[0].value);
  }
  const size_t spatial = xd.size() - 2;
  WindowOptions options;
  options.transpose = true;
  VIGIL_ASSIGN_OR_RETURN(WindowAttrs wa, ReadWindowAttrs(ctx.node(), spatial, KnownSpatial(w), options));
  std::vector<ir::Dim> out{CarryDim(ctx, xd[0]), out_channels};
  for (size_t i = 0; i < spatial; ++i) {
    if (!wa.output_shape.empty()) {
      out.push_back(ir::Dim::Known(wa.output_shape[i]));
    } else if (wa.kernel.empty() || !xd[i + 2].is_known()) {
      out.push_back(ctx.NewSymbol());
    } else {
      VIGIL_ASSIGN_OR_RETURN(WindowExtent e, TransposeExtent(ctx.node(), wa, i, *xd[i + 2].value));
      out.push_back(ir::Dim::Known(e.output));
    }
  }
  ctx.set_output(0, TensorType(x->elem_type, std::move(out)));
  return Status::Ok();
}

// MaxPool, AveragePool, LpPool; MaxPool's optional second output holds int64
// indices of Y's shape.
Status InferPool(InferenceContext& ctx) {
  VIGIL_ASSIGN_OR_RETURN(bool known, CheckDataInput(ctx, 3, "N x C x D1 x ..."));
  const ir::TypeInfo* x = ctx.input_type(0);
  if (!known) {
    if (IsTensorType(x) && ctx.num_outputs() > 1) ctx.set_output(1, TensorTypeUnknownShape(ir::DataType::kInt64));
    return Status::Ok();
  }
  const auto& xd = x->shape.dims;
  VIGIL_ASSIGN_OR_RETURN(int64_t storage_order, IntAttr(ctx.node(), "storage_order", 0));
  if (storage_order != 0 && storage_order != 1) {
    return ctx.Fail("storage_order is {}, expected 0 (row major) or 1 (column major)", storage_order);
  }
  const size_t spatial = xd.size() - 2;
  WindowOptions options;
  options.pooling = true;
  VIGIL_ASSIGN_OR_RETURN(WindowAttrs wa, ReadWindowAttrs(ctx.node(), spatial, std::nullopt, options));
  std::vector<ir::Dim> out{CarryDim(ctx, xd[0]), CarryDim(ctx, xd[1])};
  for (size_t i = 0; i < spatial; ++i) {
    if (!xd[i + 2].is_known()) {
      out.push_back(ctx.NewSymbol());
      continue;
    }
    VIGIL_ASSIGN_OR_RETURN(WindowExtent e, ForwardExtent(ctx.node(), wa, i, *xd[i + 2].value));
    out.push_back(ir::Dim::Known(e.output));
  }
  if (ctx.num_outputs() > 1) ctx.set_output(1, TensorType(ir::DataType::kInt64, out));
  ctx.set_output(0, TensorType(x->elem_type, std::move(out)));
  return Status::Ok();
}

// Global pools reduce every spatial dim to 1.
Status InferGlobalPool(InferenceContext& ctx) {
  VIGIL_ASSIGN_OR_RETURN(bool known, CheckDataInput(ctx, 2, "N x C x D1 x ..."));
  if (!known) return Status::Ok();
  const ir::TypeInfo* x = ctx.input_type(0);
  const auto& xd = x->shape.dims;
  std::vector<ir::Dim> out{CarryDim(ctx, xd[0]), CarryDim(ctx, xd[1])};
  out.resize(xd.size(), ir::Dim::Known(1));
  ctx.set_output(0, TensorType(x->elem_type, std::move(out)));
  return Status::Ok();
}

// MaxUnpool: X and indices of one shape; the output is output_shape when
// given, else what MaxPool with the same window would have read.
Status InferMaxUnpool(InferenceContext& ctx) {
  VIGIL_ASSIGN_OR_RETURN(bool known, CheckDataInput(ctx, 3, "N x C x D1 x ..."));
  const ir::TypeInfo* x = ctx.input_type(0);
  const ir::TypeInfo* indices = ctx.input_type(1);
  if (known && HasRank(indices) && indices->shape.dims.size() != x->shape.dims.size()) {
    return ctx.Fail("input 1 (I) is {}; it must have the shape of input 0 (X) {}", ir::ShapeToString(indices->shape),
                    ir::ShapeToString(x->shape));
  }
  if (!IsTensorType(x)) return Status::Ok();
  const ir::Tensor* shape_value = ctx.has_input(2) ? ctx.input_value(2) : nullptr;
  if (shape_value) {
    VIGIL_ASSIGN_OR_RETURN(std::vector<int64_t> shape, ReadInt64s(ctx, *shape_value));
    if (known && shape.size() != x->shape.dims.size()) {
      return ctx.Fail("input 2 (output_shape) has {} values; X {} needs {}", shape.size(),
                      ir::ShapeToString(x->shape), x->shape.dims.size());
    }
    for (int64_t d : shape) {
      if (d < 0) return ctx.Fail("input 2 (output_shape) has a negative size {}", d);
    }
    ctx.set_output(0, TensorType(x->elem_type, shape));
    return Status::Ok();
  }
  if (!known) return Status::Ok();
  const auto& xd = x->shape.dims;
  const size_t spatial = xd.size() - 2;
  WindowOptions options;
  options.pooling = true;
  VIGIL_ASSIGN_OR_RETURN(WindowAttrs wa, ReadWindowAttrs(ctx.node(), spatial, std::nullopt, options));
  std::vector<ir::Dim> out{CarryDim(ctx, xd[0]), CarryDim(ctx, xd[1])};
  for (size_t i = 0; i < spatial; ++i) {
    if (ctx.has_input(2) || !xd[i + 2].is_known()) {  // output_shape known only at run time
      out.push_back(ctx.NewSymbol());
      continue;
    }
    VIGIL_ASSIGN_OR_RETURN(int64_t size, UnpoolSize(ctx.node(), wa, i, *xd[i + 2].value));
    out.push_back(ir::Dim::Known(size));
  }
  if (ctx.has_input(2)) {  // N and C too may be padded by output_shape
    out[0] = ctx.NewSymbol();
    out[1] = ctx.NewSymbol();
  }
  ctx.set_output(0, TensorType(x->elem_type, std::move(out)));
  return Status::Ok();
}

// CausalConvWithState: input [B, C, L], weight [C, 1, K], bias [C],
// past_state [B, C, K - 1]; output like the input, present_state
// [B, C, K - 1].
Status InferCausalConvWithState(InferenceContext& ctx) {
  VIGIL_ASSIGN_OR_RETURN(std::string activation, StringAttr(ctx.node(), "activation", "none"));
  if (activation != "none" && activation != "silu" && activation != "swish") {
    return ctx.Fail("attribute activation is '{}', expected 'none', 'silu' or 'swish'", activation);
  }
  const ir::TypeInfo* x = ctx.input_type(0);
  const ir::TypeInfo* w = ctx.input_type(1);
  const char* names[] = {"input", "weight", "bias", "past_state"};
  const size_t ranks[] = {3, 3, 1, 3};
  for (size_t i = 0; i < 4; ++i) {
    const ir::TypeInfo* t = ctx.has_input(i) ? ctx.input_type(i) : nullptr;
    if (!t) continue;
    if (x && t->elem_type != x->elem_type && t->elem_type != ir::DataType::kUndefined) {
      return ctx.Fail("input {} ({}) is {}, expected {} like the input", i, names[i], ir::DataTypeName(t->elem_type),
                      ir::DataTypeName(x->elem_type));
    }
    if (HasRank(t) && t->shape.dims.size() != ranks[i]) {
      return ctx.Fail("input {} ({}) has rank {}, expected {}", i, names[i], t->shape.dims.size(), ranks[i]);
    }
  }
  if (!x) return Status::Ok();
  ctx.set_output(0, *x);
  if (ctx.num_outputs() < 2) return Status::Ok();
  if (!HasRank(x)) {
    ctx.set_output(1, TensorTypeUnknownShape(x->elem_type));
    return Status::Ok();
  }
  ir::Dim context = ctx.NewSymbol();
  if (HasRank(w) && w->shape.dims[2].value) {
    if (*w->shape.dims[2].value < 1) {
      return ctx.Fail("weight has kernel size {}, expected at least 1", *w->shape.dims[2].value);
    }
    context = ir::Dim::Known(*w->shape.dims[2].value - 1);
  }
  ctx.set_output(1, TensorType(x->elem_type, {x->shape.dims[0], x->shape.dims[1], context}));
  return Status::Ok();
}

const OpSchema kConvPoolSchemas[] = {
    {"", "Conv", 1, kLatest, 2, 3, 1, 1, InferConv},
    {ir::kVigilDomain, ir::kFusedConvOp, 1, kLatest, 2, 4, 1, 1, InferFusedConv},
    {"", "ConvTranspose", 1, kLatest, 2, 3, 1, 1, InferConvTranspose},
    {"", "DeformConv", 19, kLatest, 3, 5, 1, 1, InferDeformConv},
    {"", "CausalConvWithState", 27, kLatest, 2, 4, 1, 2, InferCausalConvWithState},
    // The Indices output exists from opset 8.
    {"", "MaxPool", 1, 7, 1, 1, 1, 1, InferPool},
    {"", "MaxPool", 8, kLatest, 1, 1, 1, 2, InferPool},
    {"", "AveragePool", 1, kLatest, 1, 1, 1, 1, InferPool},
    {"", "LpPool", 1, kLatest, 1, 1, 1, 1, InferPool},
    {"", "GlobalAveragePool", 1, kLatest, 1, 1, 1, 1, InferGlobalPool},
    {"", "GlobalMaxPool", 1, kLatest, 1, 1, 1, 1, InferGlobalPool},
    {"", "GlobalLpPool", 1, kLatest, 1, 1, 1, 1, InferGlobalPool},
    // Opset 11 only clarified the output_shape input.
    {"", "MaxUnpool", 9, kLatest, 2, 3, 1, 1, InferMaxUnpool},
};

}  // namespace

Status InferConvOutput(InferenceContext& ctx, const ConvOperands& operands, ir::DataType out) {
  return InferConvShape(ctx, operands, out);
}

std::span<const OpSchema> ConvPoolSchemas() { return kConvPoolSchemas; }

}  // namespace vigil::ops
