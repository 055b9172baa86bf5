// Schemas, parameter resolution (signal.h) and shape inference of the
// signal-processing ops: DFT (opset 17 with an 'axis' attribute, opset 20
// with an axis input), STFT, HannWindow, HammingWindow, BlackmanWindow and
// MelWeightMatrix (opset 17).
#include "ops/signal.h"

#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "ops/attributes.h"
#include "ops/families.h"
#include "ops/schema.h"
#include "ops/shape_helpers.h"

namespace vigil::ops {
namespace {

template <typename... Args>
Status Fail(const ir::Node& node, fmt::format_string<Args...> f, Args&&... args) {
  return InvalidInputError("{}: {}", NodeLabel(node), fmt::format(f, std::forward<Args>(args)...));
}

template <typename... Args>
Status BadAttribute(const ir::Node& node, fmt::format_string<Args...> f, Args&&... args) {
  return InvalidModelError("{}: {}", NodeLabel(node), fmt::format(f, std::forward<Args>(args)...));
}

}  // namespace

// --- Resolution (signal.h) -------------------------------------------------------------

Result<bool> ReadFlagAttr(const ir::Node& node, const char* name, int64_t fallback) {
  VIGIL_ASSIGN_OR_RETURN(int64_t v, IntAttr(node, name, fallback));
  if (v != 0 && v != 1) return BadAttribute(node, "attribute {} is {}, expected 0 or 1", name, v);
  return v == 1;
}

Result<int64_t> ResolveDftAxis(const ir::Node& node, int64_t axis, int64_t rank) {
  // rank >= 2 (CheckSignalLayout): the last dim is not a signal axis.
  if (axis < -rank || axis > rank - 2 || axis == -1) {
    return Fail(node, "axis is {}, expected a value in [{}, -2] or [0, {}] for a rank-{} input (the last dim holds "
                "the real and imaginary parts)", axis, -rank, rank - 2, rank);
  }
  return axis < 0 ? axis + rank : axis;
}

Result<int64_t> ResolveDftLength(const ir::Node& node, std::optional<int64_t> given, int64_t axis_size,
                                 bool inverse, bool onesided) {
  int64_t n = 0;
  if (given) {
    n = *given;
    if (n < 1 || n > kMaxSignalExtent) {
      return Fail(node, "input dft_length is {}, expected a value in [1, {}]", n, kMaxSignalExtent);
    }
    return n;
  }
  n = inverse && onesided ? 2 * (axis_size - 1) : axis_size;
  if (n < 1 || n > kMaxSignalExtent) {
    return Fail(node, "the input's axis has size {}, which gives a transform length of {}{}; expected [1, {}]",
                axis_size, n, inverse && onesided ? " (2 * (size - 1) for the inverse one-sided DFT)" : "",
                kMaxSignalExtent);
  }
  return n;
}

Status CheckSignalLayout(const ir::Node& node, const char* what, int64_t rank, std::optional<int64_t> last_dim) {
  if (rank < 2) {
    return Fail(node, "input {} has rank {}, expected at least 2 (signal dims, then 1 for real or 2 for complex)",
                what, rank);
  }
  if (last_dim && *last_dim != 1 && *last_dim != 2) {
    return Fail(node, "input {} has last dim {}, expected 1 (real) or 2 (complex)", what, *last_dim);
  }
  return Status::Ok();
}

Result<StftGeometry> ResolveStft(const ir::Node& node, int64_t signal_length, int64_t frame_step,
                                 std::optional<int64_t> window_length, std::optional<int64_t> frame_length,
                                 bool onesided) {
  StftGeometry g;
  if (frame_step < 1 || frame_step > kMaxSignalExtent) {
    return Fail(node, "input frame_step is {}, expected a value in [1, {}]", frame_step, kMaxSignalExtent);
  }
  g.frame_step = frame_step;
  if (window_length && frame_length && *window_length != *frame_length) {
    return Fail(node, "input window has {} values but input frame_length is {}; they must be equal", *window_length,
                *frame_length);
  }
  g.frame_length = frame_length ? *frame_length : window_length ? *window_length : signal_length;
  const char* source = frame_length ? "input frame_length" : window_length ? "the window's length" : "the signal length";
  if (g.frame_length < 1 || g.frame_length > kMaxSignalExtent) {
    return Fail(node, "the frame length ({}) is {}, expected a value in [1, {}]", source, g.frame_length,
                kMaxSignalExtent);
  }
  if (g.frame_length > signal_length) {
    return Fail(node, "the frame length ({}) is {} but the signal has only {} samples; a frame must fit", source,
                g.frame_length, signal_length);
  }
  g.frames = (signal_length - g.frame_length) / g.frame_step + 1;
  g.bins = onesided ? g.frame_length / 2 + 1 : g.frame_length;
  return g;
}

Result<ir::DataType> ReadOutputDatatype(const ir::Node& node) {
  VIGIL_ASSIGN_OR_RETURN(int64_t v, IntAttr(node, "output_datatype", static_cast<int64_t>(ir::DataType::kFloat32)));
  switch (static_cast<ir::DataType>(v)) {
    case ir::DataType::kFloat32:
    case ir::DataType::kFloat64:
    case ir::DataType::kFloat16:
    case ir::DataType::kBfloat16:
    case ir::DataType::kInt8:
    case ir::DataType::kInt16:
    case ir::DataType::kInt32:
    case ir::DataType::kInt64:
    case ir::DataType::kUint8:
    case ir::DataType::kUint16:
    case ir::DataType::kUint32:
    case ir::DataType::kUint64:
      return static_cast<ir::DataType>(v);
    default:
      return BadAttribute(node, "attribute output_datatype is {}, expected an integer or float TensorProto type "
                          "(1, 2, 3, 4, 5, 6, 7, 10, 11, 12, 13 or 16)", v);
  }
}

Status CheckWindowSize(const ir::Node& node, int64_t size) {
  if (size < 0 || size > kMaxSignalExtent) {
    return Fail(node, "input size is {}, expected a value in [0, {}]", size, kMaxSignalExtent);
  }
  return Status::Ok();
}

Result<int64_t> CheckMelSizes(const ir::Node& node, int64_t num_mel_bins, int64_t dft_length, int64_t sample_rate) {
  if (num_mel_bins < 0 || num_mel_bins > kMaxSignalExtent) {
    return Fail(node, "input num_mel_bins is {}, expected a value in [0, {}]", num_mel_bins, kMaxSignalExtent);
  }
  if (dft_length < 1 || dft_length > kMaxSignalExtent) {
    return Fail(node, "input dft_length is {}, expected a value in [1, {}]", dft_length, kMaxSignalExtent);
  }
  if (sample_rate < 1) return Fail(node, "input sample_rate is {}, expected a positive value", sample_rate);
  return dft_length / 2 + 1;
}

namespace {

// --- Inference -----------------------------------------------------------------------

const ir::TypeInfo* TensorInput(const InferenceContext& ctx, size_t i) {
  const ir::TypeInfo* t = ctx.input_type(i);
  return t && t->kind == ir::TypeInfo::Kind::kTensor ? t : nullptr;
}

// Input i must be a float tensor (when its type is known); returns its dtype.
Result<ir::DataType> FloatInput(const InferenceContext& ctx, size_t i, const char* name) {
  const ir::TypeInfo* t = TensorInput(ctx, i);
  if (!t || t->elem_type == ir::DataType::kUndefined) return ir::DataType::kUndefined;
  if (!ir::IsFloatingPoint(t->elem_type)) {
    return ctx.Fail("input {} ({}) is {}, expected float32, float64, float16 or bfloat16", i, name,
                    ir::DataTypeName(t->elem_type));
  }
  return t->elem_type;
}

// Input i, when present, must be an int32/int64 scalar (or a one-element
// tensor); returns its value when known.
Result<std::optional<int64_t>> ScalarInt(const InferenceContext& ctx, size_t i, const char* name) {
  if (!ctx.has_input(i)) return std::optional<int64_t>{};
  const ir::TypeInfo* t = TensorInput(ctx, i);
  if (t && t->elem_type != ir::DataType::kUndefined && t->elem_type != ir::DataType::kInt64 &&
      t->elem_type != ir::DataType::kInt32) {
    return ctx.Fail("input {} ({}) is {}, expected int64 or int32", i, name, ir::DataTypeName(t->elem_type));
  }
  if (HasRank(t) && t->shape.dims.size() > 1) {
    return ctx.Fail("input {} ({}) has shape {}, expected a scalar", i, name, ir::ShapeToString(t->shape));
  }
  const ir::Tensor* v = ctx.input_value(i);
  if (!v) return std::optional<int64_t>{};
  VIGIL_ASSIGN_OR_RETURN(std::vector<int64_t> values, ReadInt64s(ctx, *v));
  if (values.size() != 1) {
    return ctx.Fail("input {} ({}) holds {} values, expected a scalar", i, name, values.size());
  }
  return std::optional<int64_t>(values[0]);
}

Status InferDft(InferenceContext& ctx) {
  VIGIL_ASSIGN_OR_RETURN(bool inverse, ReadFlagAttr(ctx.node(), "inverse", 0));
  VIGIL_ASSIGN_OR_RETURN(bool onesided, ReadFlagAttr(ctx.node(), "onesided", 0));
  VIGIL_ASSIGN_OR_RETURN(ir::DataType dtype, FloatInput(ctx, 0, "input"));
  VIGIL_ASSIGN_OR_RETURN(std::optional<int64_t> length, ScalarInt(ctx, 1, "dft_length"));
  std::optional<int64_t> axis;
  if (ctx.opset() < 20) {
    VIGIL_ASSIGN_OR_RETURN(int64_t a, IntAttr(ctx.node(), "axis", 1));
    axis = a;
  } else if (ctx.has_input(2)) {
    VIGIL_ASSIGN_OR_RETURN(axis, ScalarInt(ctx, 2, "axis"));
  } else {
    axis = -2;
  }
  const ir::TypeInfo* x = TensorInput(ctx, 0);
  if (!HasRank(x)) {
    ctx.set_output(0, TensorTypeUnknownShape(dtype));
    return Status::Ok();
  }
  std::vector<ir::Dim> dims = x->shape.dims;
  const int64_t rank = static_cast<int64_t>(dims.size());
  VIGIL_RETURN_IF_ERROR(CheckSignalLayout(ctx.node(), "input", rank, dims.back().value));
  dims.back() = ir::Dim::Known(DftOutputLastDim(inverse, onesided));
  const bool keeps_axis_size = !ctx.has_input(1) && !onesided;
  if (!axis) {
    // Which dim is transformed is known only at run time.
    if (!keeps_axis_size) {
      for (int64_t d = 0; d + 1 < rank; ++d) dims[static_cast<size_t>(d)] = ctx.NewSymbol();
    }
    ctx.set_output(0, TensorType(dtype, std::move(dims)));
    return Status::Ok();
  }
  VIGIL_ASSIGN_OR_RETURN(int64_t a, ResolveDftAxis(ctx.node(), *axis, rank));
  ir::Dim& d = dims[static_cast<size_t>(a)];
  if (length || (!ctx.has_input(1) && d.value)) {
    VIGIL_ASSIGN_OR_RETURN(int64_t n, ResolveDftLength(ctx.node(), length, d.value.value_or(0), inverse, onesided));
    d = ir::Dim::Known(DftOutputAxisSize(n, inverse, onesided));
  } else if (!keeps_axis_size) {
    d = ctx.NewSymbol();
  }
  ctx.set_output(0, TensorType(dtype, std::move(dims)));
  return Status::Ok();
}

Status InferStft(InferenceContext& ctx) {
  VIGIL_ASSIGN_OR_RETURN(bool onesided, ReadFlagAttr(ctx.node(), "onesided", 1));
  VIGIL_ASSIGN_OR_RETURN(ir::DataType dtype, FloatInput(ctx, 0, "signal"));
  VIGIL_ASSIGN_OR_RETURN(ir::DataType window_dtype, FloatInput(ctx, 2, "window"));
  if (dtype != ir::DataType::kUndefined && window_dtype != ir::DataType::kUndefined && dtype != window_dtype) {
    return ctx.Fail("input 2 (window) is {}, expected {} like the signal", ir::DataTypeName(window_dtype),
                    ir::DataTypeName(dtype));
  }
  VIGIL_ASSIGN_OR_RETURN(std::optional<int64_t> step, ScalarInt(ctx, 1, "frame_step"));
  VIGIL_ASSIGN_OR_RETURN(std::optional<int64_t> frame_length, ScalarInt(ctx, 3, "frame_length"));
  const ir::TypeInfo* signal = TensorInput(ctx, 0);
  const ir::TypeInfo* window = ctx.has_input(2) ? TensorInput(ctx, 2) : nullptr;
  std::optional<int64_t> window_length;
  if (HasRank(window)) {
    if (window->shape.dims.size() != 1) {
      return ctx.Fail("input 2 (window) has shape {}, expected 1-D", ir::ShapeToString(window->shape));
    }
    window_length = window->shape.dims[0].value;
  }
  std::vector<ir::Dim> dims = {ctx.NewSymbol(), ctx.NewSymbol(), ctx.NewSymbol(), ir::Dim::Known(2)};
  std::optional<int64_t> signal_length;
  if (HasRank(signal)) {
    const auto& sd = signal->shape.dims;
    if (sd.size() != 3) {
      return ctx.Fail("input 0 (signal) has shape {}, expected rank 3 [batch, length, 1 or 2]",
                      ir::ShapeToString(signal->shape));
    }
    VIGIL_RETURN_IF_ERROR(CheckSignalLayout(ctx.node(), "0 (signal)", 3, sd[2].value));
    dims[0] = sd[0];
    signal_length = sd[1].value;
  }
  const bool frame_known = frame_length || window_length || (!ctx.has_input(2) && !ctx.has_input(3) && signal_length);
  if (frame_known && step && signal_length) {
    VIGIL_ASSIGN_OR_RETURN(StftGeometry g,
                           ResolveStft(ctx.node(), *signal_length, *step, window_length, frame_length, onesided));
    dims[1] = ir::Dim::Known(g.frames);
    dims[2] = ir::Dim::Known(g.bins);
  } else if (frame_known) {
    const int64_t fl = frame_length ? *frame_length : window_length ? *window_length : *signal_length;
    if (fl >= 1) dims[2] = ir::Dim::Known(onesided ? fl / 2 + 1 : fl);
  }
  ctx.set_output(0, TensorType(dtype, std::move(dims)));
  return Status::Ok();
}

Status InferWindow(InferenceContext& ctx) {
  VIGIL_RETURN_IF_ERROR(ReadFlagAttr(ctx.node(), "periodic", 1).status());
  VIGIL_ASSIGN_OR_RETURN(ir::DataType dtype, ReadOutputDatatype(ctx.node()));
  VIGIL_ASSIGN_OR_RETURN(std::optional<int64_t> size, ScalarInt(ctx, 0, "size"));
  if (size) VIGIL_RETURN_IF_ERROR(CheckWindowSize(ctx.node(), *size));
  ctx.set_output(0, TensorType(dtype, std::vector<ir::Dim>{size ? ir::Dim::Known(*size) : ctx.NewSymbol()}));
  return Status::Ok();
}

Status InferMelWeightMatrix(InferenceContext& ctx) {
  VIGIL_ASSIGN_OR_RETURN(ir::DataType dtype, ReadOutputDatatype(ctx.node()));
  VIGIL_ASSIGN_OR_RETURN(std::optional<int64_t> mel_bins, ScalarInt(ctx, 0, "num_mel_bins"));
  VIGIL_ASSIGN_OR_RETURN(std::optional<int64_t> dft_length, ScalarInt(ctx, 1, "dft_length"));
  VIGIL_ASSIGN_OR_RETURN(std::optional<int64_t> sample_rate, ScalarInt(ctx, 2, "sample_rate"));
  VIGIL_RETURN_IF_ERROR(FloatInput(ctx, 3, "lower_edge_hertz").status());
  VIGIL_RETURN_IF_ERROR(FloatInput(ctx, 4, "upper_edge_hertz").status());
  std::vector<ir::Dim> dims = {ctx.NewSymbol(), ctx.NewSymbol()};
  if (mel_bins && dft_length && sample_rate) {
    VIGIL_ASSIGN_OR_RETURN(int64_t bins, CheckMelSizes(ctx.node(), *mel_bins, *dft_length, *sample_rate));
    dims = {ir::Dim::Known(bins), ir::Dim::Known(*mel_bins)};
  } else {
    if (dft_length && *dft_length >= 1) dims[0] = ir::Dim::Known(*dft_length / 2 + 1);
    if (mel_bins && *mel_bins >= 0) dims[1] = ir::Dim::Known(*mel_bins);
  }
  ctx.set_output(0, TensorType(dtype, std::move(dims)));
  return Status::Ok();
}

const OpSchema kSignalSchemas[] = {
    {"", "DFT", 17, 19, 1, 2, 1, 1, InferDft},
    {"", "DFT", 20, kLatest, 1, 3, 1, 1, InferDft},
    {"", "STFT", 17, kLatest, 2, 4, 1, 1, InferStft},
    {"", "HannWindow", 17, kLatest, 1, 1, 1, 1, InferWindow},
    {"", "HammingWindow", 17, kLatest, 1, 1, 1, 1, InferWindow},
    {"", "BlackmanWindow", 17, kLatest, 1, 1, 1, 1, InferWindow},
    {"", "MelWeightMatrix", 17, kLatest, 5, 5, 1, 1, InferMelWeightMatrix},
};

}  // namespace

std::span<const OpSchema> SignalSchemas() { return kSignalSchemas; }

}  // namespace vigil::ops
