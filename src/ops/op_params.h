// Kernel parameter resolution shared by every backend: reading an op's
// attributes and its small host-read inputs (already converted to int64 by
// the backend), checking them and resolving them to the concrete values a
// kernel runs with (Split's part sizes, Pad's per-axis pads, Shape's range,
// the reduced dims of a Reduce*, ...). The CPU reference kernels
// (src/backends/cpu) and the CUDA kernels (src/backends/cuda) both call these,
// so that the two always accept the same nodes, resolve them the same way
// and fail with the same messages.
//
// Errors are InvalidInputError("<node label>: <message>"), exactly what a
// backend's ctx.Fail produces; attribute type errors are those of
// ops/attributes.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "ir/graph.h"

namespace vigil::ops {

// --- Split ---------------------------------------------------------------------

// The sizes of Split's `num_outputs` outputs along an axis of size `dim`:
// the 'split' attribute (before opset 13) or `split_input` (input 1, null
// when absent); else equal parts, or (opset 18 num_outputs) parts of
// ceil(dim / n) with a smaller last one.
Result<std::vector<int64_t>> ResolveSplitSizes(const ir::Node& node, int64_t opset, size_t num_outputs, int64_t dim,
                                               const std::vector<int64_t>* split_input);

// --- Pad -----------------------------------------------------------------------

// Values match the CUDA device code's use (plain int-backed enum).
enum class PadMode : int { kConstant, kReflect, kEdge, kWrap };

// The 'mode' attribute (default constant).
Result<PadMode> ReadPadMode(const ir::Node& node);

// Pad's pads resolved to begin pads then end pads, one pair for each of the
// `rank` axes (0 for axes not listed). Before opset 11 the pads are an
// attribute ("paddings" in opset 1) and `pads_input` is ignored; from 11 they
// are `pads_input` (input 1, which the caller must have read), and from 18
// `axes_input` (input 3, null when absent) lists the axes they apply to.
Result<std::vector<int64_t>> ResolvePads(const ir::Node& node, int64_t opset, int64_t rank,
                                         const std::vector<int64_t>* pads_input,
                                         const std::vector<int64_t>* axes_input);

// --- Shape ---------------------------------------------------------------------

// The dims [start, end) of a rank-`rank` input that Shape returns: the
// start/end attributes (opset 15), negative ones counting from the end, both
// clamped so that 0 <= start <= end <= rank.
struct ShapeRange {
  int64_t start = 0;
  int64_t end = 0;
};
Result<ShapeRange> ResolveShapeRange(const ir::Node& node, int64_t opset, int64_t rank);

// --- Reductions ----------------------------------------------------------------

// Which of the `rank` dims a Reduce* op reduces: from the 'axes' attribute
// (older opsets) or, when `axes_from_input`, from `axes_input` (input 1, null
// when absent) with noop_with_empty_axes deciding what no axes means.
// `data_desc` describes input 0 for messages (runtime::Tensor::Describe()).
Result<std::vector<bool>> ResolveReducedDims(const ir::Node& node, int64_t rank, bool axes_from_input,
                                             const std::vector<int64_t>* axes_input, std::string_view data_desc);

// A single reduction axis (ArgMax, ArgMin, CumSum, ...) normalised against
// `rank`; `data_desc` describes input 0 for messages.
Result<int64_t> ResolveReductionAxis(const ir::Node& node, int64_t axis, int64_t rank, std::string_view data_desc);

// --- Clip ----------------------------------------------------------------------

// Clip 6-10's float 'min'/'max' attributes; an absent one means unbounded
// (the spec's defaults are +-FLT_MAX, which would wrongly clamp large doubles).
struct ClipAttrBounds {
  bool has_lo = false, has_hi = false;
  float lo = 0.0f, hi = 0.0f;
};
Result<ClipAttrBounds> ReadClipAttrBounds(const ir::Node& node);

// Concat's axis, normalised to [0, rank): opset 1-3 default 1, later
// required. `first_desc` describes input 0 for the out-of-range error.
Result<int64_t> ResolveConcatAxis(const ir::Node& node, int64_t opset, int64_t rank, std::string_view first_desc);

}  // namespace vigil::ops
