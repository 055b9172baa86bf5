// Schemas and shape inference of the recurrent ops: RNN, GRU, LSTM.
//
// All three share one shape rule. With layout 0 (the only layout before
// opset 14): X [seq, batch, input] -> Y [seq, num_dir, batch, hidden],
// Y_h/Y_c [num_dir, batch, hidden]. With layout 1: X [batch, seq, input] ->
// Y [batch, seq, num_dir, hidden], Y_h/Y_c [batch, num_dir, hidden].
#include <string>

#include "ops/attributes.h"
#include "ops/schema.h"
#include "ops/shape_helpers.h"
#include "ops/families.h"

namespace vigil::ops {
namespace {

// A dim that is known to hold `v`, or null-like when unknown.
std::optional<int64_t> KnownDim(const ir::TypeInfo* t, size_t i) {
  if (!HasRank(t) || i >= t->shape.dims.size()) return std::nullopt;
  return t->shape.dims[i].value;
}

// Checks a definitely-known dim against its expected value.
Status CheckDim(InferenceContext& ctx, const ir::TypeInfo* t, size_t input, size_t axis, std::optional<int64_t> want,
                const char* what) {
  std::optional<int64_t> got = KnownDim(t, axis);
  if (got && want && *got != *want) {
    return ctx.Fail("input {} has dim {} = {}, expected {} ({})", input, axis, *got, *want, what);
  }
  return Status::Ok();
}

Status CheckRank(InferenceContext& ctx, size_t input, size_t rank) {
  const ir::TypeInfo* t = ctx.input_type(input);
  if (HasRank(t) && t->shape.dims.size() != rank) {
    return ctx.Fail("input {} has rank {}, {} needs rank {}", input, t->shape.dims.size(), ctx.node().op_type, rank);
  }
  return Status::Ok();
}

// `gates`: 1 for RNN, 3 for GRU, 4 for LSTM.
Status InferRecurrent(InferenceContext& ctx, int64_t gates) {
  VIGIL_ASSIGN_OR_RETURN(std::string direction, StringAttr(ctx.node(), "direction", "forward"));
  if (direction != "forward" && direction != "reverse" && direction != "bidirectional") {
    return ctx.Fail("direction '{}' is not forward, reverse or bidirectional", direction);
  }
  const int64_t num_dir = direction == "bidirectional" ? 2 : 1;
  int64_t layout = 0;
  if (ctx.opset() >= 14) {
    VIGIL_ASSIGN_OR_RETURN(layout, IntAttr(ctx.node(), "layout", 0));
    if (layout != 0 && layout != 1) return ctx.Fail("layout must be 0 or 1, got {}", layout);
  }
  VIGIL_ASSIGN_OR_RETURN(int64_t hidden_attr, IntAttr(ctx.node(), "hidden_size", -1));
  if (HasAttr(ctx.node(), "hidden_size") && hidden_attr <= 0) {
    return ctx.Fail("hidden_size must be positive, got {}", hidden_attr);
  }
  for (size_t i = 0; i < 3; ++i) VIGIL_RETURN_IF_ERROR(CheckRank(ctx, i, 3));
  if (ctx.has_input(3)) VIGIL_RETURN_IF_ERROR(CheckRank(ctx, 3, 2));
  if (ctx.has_input(4)) VIGIL_RETURN_IF_ERROR(CheckRank(ctx, 4, 1));
  for (size_t i = 5; i < 7; ++i) {
    if (ctx.has_input(i)) VIGIL_RETURN_IF_ERROR(CheckRank(ctx, i, 3));
  }
  if (ctx.has_input(7)) VIGIL_RETURN_IF_ERROR(CheckRank(ctx, 7, 2));

  const ir::TypeInfo* x = ctx.input_type(0);
  const ir::TypeInfo* w = ctx.input_type(1);
  const ir::TypeInfo* r = ctx.input_type(2);
  // hidden_size: attribute, else R's last dim, else W's rows / gates.
  std::optional<int64_t> hidden;
  if (hidden_attr > 0) hidden = hidden_attr;
  else if (auto rh = KnownDim(r, 2)) hidden = *rh;
  else if (auto wr = KnownDim(w, 1); wr && *wr % gates == 0) hidden = *wr / gates;
  std::optional<int64_t> gate_rows;
  if (hidden) gate_rows = *hidden * gates;
  VIGIL_RETURN_IF_ERROR(CheckDim(ctx, w, 1, 0, num_dir, "num_directions"));
  VIGIL_RETURN_IF_ERROR(CheckDim(ctx, r, 2, 0, num_dir, "num_directions"));
  VIGIL_RETURN_IF_ERROR(CheckDim(ctx, w, 1, 1, gate_rows, "gates * hidden_size"));
  VIGIL_RETURN_IF_ERROR(CheckDim(ctx, r, 2, 1, gate_rows, "gates * hidden_size"));
  VIGIL_RETURN_IF_ERROR(CheckDim(ctx, r, 2, 2, hidden, "hidden_size"));
  VIGIL_RETURN_IF_ERROR(CheckDim(ctx, w, 1, 2, KnownDim(x, 2), "input_size, X's last dim"));

  ir::DataType dtype = x ? x->elem_type : (w ? w->elem_type : ir::DataType::kUndefined);
  if (ctx.num_outputs() == 0) return Status::Ok();
  if (!HasRank(x)) {
    for (size_t i = 0; i < ctx.num_outputs(); ++i) ctx.set_output(i, TensorTypeUnknownShape(dtype));
    return Status::Ok();
  }
  ir::Dim seq = x->shape.dims[layout == 0 ? 0 : 1];
  ir::Dim batch = x->shape.dims[layout == 0 ? 1 : 0];
  ir::Dim hid = hidden ? ir::Dim::Known(*hidden) : ctx.NewSymbol();
  ir::Dim nd = ir::Dim::Known(num_dir);
  if (layout == 0) {
    ctx.set_output(0, TensorType(dtype, std::vector<ir::Dim>{seq, nd, batch, hid}));
  } else {
    ctx.set_output(0, TensorType(dtype, std::vector<ir::Dim>{batch, seq, nd, hid}));
  }
  std::vector<ir::Dim> state = layout == 0 ? std::vector<ir::Dim>{nd, batch, hid} : std::vector<ir::Dim>{batch, nd, hid};
  for (size_t i = 1; i < ctx.num_outputs(); ++i) ctx.set_output(i, TensorType(dtype, state));
  return Status::Ok();
}

Status InferRnn(InferenceContext& ctx) { return InferRecurrent(ctx, 1); }
Status InferGru(InferenceContext& ctx) { return InferRecurrent(ctx, 3); }
Status InferLstm(InferenceContext& ctx) { return InferRecurrent(ctx, 4); }

// Opsets 7, 14 (layout) and 22 (more types) differ only in what one shape
// rule handles, so one entry per op covers them all.
const OpSchema kRecurrentSchemas[] = {
    {"", "RNN", 7, kLatest, 3, 6, 0, 2, InferRnn},
    {"", "GRU", 7, kLatest, 3, 6, 0, 2, InferGru},
    {"", "LSTM", 7, kLatest, 3, 8, 0, 3, InferLstm},
};

}  // namespace

std::span<const OpSchema> RecurrentSchemas() { return kRecurrentSchemas; }

}  // namespace vigil::ops
