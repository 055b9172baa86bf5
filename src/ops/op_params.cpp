// Kernel parameter resolution shared by the backends (see op_params.h).
#include "ops/op_params.h"

#include <algorithm>
#include <string>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "ops/attributes.h"

namespace vigil::ops {
namespace {

// The error a backend's ctx.Fail gives: invalid input, naming the node.
template <typename... Args>
Status Fail(const ir::Node& node, fmt::format_string<Args...> f, Args&&... args) {
  return InvalidInputError("{}: {}", NodeLabel(node), fmt::format(f, std::forward<Args>(args)...));
}

}  // namespace

Result<std::vector<int64_t>> ResolveSplitSizes(const ir::Node& node, int64_t opset, size_t num_outputs, int64_t dim,
                                               const std::vector<int64_t>* split_input) {
  int64_t n = static_cast<int64_t>(num_outputs);
  if (n == 0) return Fail(node, "has no outputs");
  std::vector<int64_t> split;
  if (opset < 13 && HasAttr(node, "split")) {
    VIGIL_ASSIGN_OR_RETURN(split, IntsAttr(node, "split"));
  } else if (split_input) {
    split = *split_input;
  }
  if (!split.empty()) {
    if (static_cast<int64_t>(split.size()) != n) {
      return Fail(node, "split has {} entries but the node has {} outputs", split.size(), n);
    }
    int64_t sum = 0;
    for (int64_t s : split) {
      // Each part is checked against dim first, so the sum cannot overflow.
      if (s < 0 || s > dim) return Fail(node, "split [{}] has a size outside [0, {}]", fmt::join(split, ","), dim);
      sum += s;
    }
    if (sum != dim) return Fail(node, "split [{}] adds up to {}, the axis has {}", fmt::join(split, ","), sum, dim);
    return split;
  }
  bool has_num = opset >= 18 && HasAttr(node, "num_outputs");
  if (dim % n != 0 && !has_num) return Fail(node, "an axis of size {} cannot be split into {} equal parts", dim, n);
  // num_outputs (opset 18): parts of ceil(dim/n), the last one smaller.
  int64_t part = dim % n == 0 ? dim / n : dim / n + 1;
  int64_t last = dim - part * (n - 1);
  if (last < 0) return Fail(node, "an axis of size {} cannot be split into {} parts", dim, n);
  split.assign(n, part);
  split.back() = last;
  return split;
}

Result<PadMode> ReadPadMode(const ir::Node& node) {
  VIGIL_ASSIGN_OR_RETURN(std::string mode, StringAttr(node, "mode", "constant"));
  if (mode == "constant") return PadMode::kConstant;
  if (mode == "reflect") return PadMode::kReflect;
  if (mode == "edge") return PadMode::kEdge;
  if (mode == "wrap") return PadMode::kWrap;
  return Fail(node, "mode '{}' is not one of constant, reflect, edge, wrap", mode);
}

Result<std::vector<int64_t>> ResolvePads(const ir::Node& node, int64_t opset, int64_t rank,
                                         const std::vector<int64_t>* pads_input,
                                         const std::vector<int64_t>* axes_input) {
  std::vector<int64_t> pads, axes;
  if (opset < 11) {
    VIGIL_ASSIGN_OR_RETURN(pads, RequiredIntsAttr(node, opset < 2 ? "paddings" : "pads"));
  } else if (pads_input) {
    pads = *pads_input;
  } else {
    return Fail(node, "input 1 (pads) is missing");
  }
  if (opset >= 18 && axes_input) {
    axes = *axes_input;
  } else {
    for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
  }
  if (pads.size() != 2 * axes.size()) {
    return Fail(node, "pads [{}] has {} entries, expected {} (begin and end for each of {} axes)",
                fmt::join(pads, ","), pads.size(), 2 * axes.size(), axes.size());
  }
  std::vector<int64_t> full(2 * rank, 0);
  std::vector<bool> seen(rank, false);
  for (size_t j = 0; j < axes.size(); ++j) {
    int64_t a = axes[j];
    if (a < -rank || a >= rank) return Fail(node, "axes entry {} is out of range for rank {}", a, rank);
    if (a < 0) a += rank;
    if (seen[a]) return Fail(node, "axes repeats axis {}", a);
    seen[a] = true;
    full[a] = pads[j];
    full[a + rank] = pads[j + axes.size()];
  }
  return full;
}

Result<ShapeRange> ResolveShapeRange(const ir::Node& node, int64_t opset, int64_t rank) {
  int64_t start = 0, end = rank;
  if (opset >= 15) {
    VIGIL_ASSIGN_OR_RETURN(start, IntAttr(node, "start", 0));
    VIGIL_ASSIGN_OR_RETURN(end, IntAttr(node, "end", rank));
  }
  // Negative positions count from the end; both are clamped to [0, rank].
  if (start < 0) start += rank;
  if (end < 0) end += rank;
  start = std::clamp<int64_t>(start, 0, rank);
  end = std::clamp<int64_t>(end, start, rank);
  return ShapeRange{start, end};
}

Result<std::vector<bool>> ResolveReducedDims(const ir::Node& node, int64_t rank, bool axes_from_input,
                                             const std::vector<int64_t>* axes_input, std::string_view data_desc) {
  std::vector<int64_t> axes;
  int64_t noop = 0;
  if (axes_from_input) {
    VIGIL_ASSIGN_OR_RETURN(noop, IntAttr(node, "noop_with_empty_axes", 0));
    if (axes_input) axes = *axes_input;
  } else {
    VIGIL_ASSIGN_OR_RETURN(axes, IntsAttr(node, "axes"));
  }
  std::vector<bool> reduced(rank, axes.empty() && noop == 0);
  for (int64_t a : axes) {
    if (a < -rank || a >= rank) {
      return Fail(node, "axes entry {} is out of range for input {} of rank {}", a, data_desc, rank);
    }
    reduced[a < 0 ? a + rank : a] = true;
  }
  return reduced;
}

Result<int64_t> ResolveReductionAxis(const ir::Node& node, int64_t axis, int64_t rank, std::string_view data_desc) {
  if (axis < -rank || axis >= rank) {
    return Fail(node, "axis {} is out of range for input {} (allowed: {} to {})", axis, data_desc, -rank, rank - 1);
  }
  return axis < 0 ? axis + rank : axis;
}

Result<ClipAttrBounds> ReadClipAttrBounds(const ir::Node& node) {
  ClipAttrBounds b;
  VIGIL_ASSIGN_OR_RETURN(b.lo, FloatAttr(node, "min", 0.0f));
  VIGIL_ASSIGN_OR_RETURN(b.hi, FloatAttr(node, "max", 0.0f));
  b.has_lo = HasAttr(node, "min");
  b.has_hi = HasAttr(node, "max");
  return b;
}

Result<int64_t> ResolveConcatAxis(const ir::Node& node, int64_t opset, int64_t rank, std::string_view first_desc) {
  int64_t axis = 0;
  if (opset < 4) {
    VIGIL_ASSIGN_OR_RETURN(axis, IntAttr(node, "axis", 1));
  } else {
    VIGIL_ASSIGN_OR_RETURN(axis, RequiredIntAttr(node, "axis"));
  }
  if (axis < -rank || axis >= rank) {
    return InvalidInputError("{}: axis {} is out of range for input 0 {}", NodeLabel(node), axis, first_desc);
  }
  return axis < 0 ? axis + rank : axis;
}

}  // namespace vigil::ops
