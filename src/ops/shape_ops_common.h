// Small helpers shared by the shape-op and tensor-generator families' shape
// inference (shape_ops*.cpp, tensor_gen.cpp). Not a public header.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "ops/attributes.h"
#include "ops/schema.h"
#include "ops/shape_helpers.h"

namespace vigil::ops::shape_family {

// Input i's element type, or kUndefined when its type is unknown.
ir::DataType ElemType(const InferenceContext& ctx, size_t i);

// Input i's dims when it is a tensor of known rank, else null.
const std::vector<ir::Dim>* InputDims(const InferenceContext& ctx, size_t i);

// The values of integer input i (int32/int64) when known at this point;
// nullopt when the input is absent or its value is not known.
Result<std::optional<std::vector<int64_t>>> KnownInts(const InferenceContext& ctx, size_t i);

// Known dims from numbers.
std::vector<ir::Dim> ToDims(const std::vector<int64_t>& values);

// The product of `dims` as one dim: known when all are known; the single
// symbolic dim when the rest are 1; a fresh symbol otherwise.
ir::Dim ProductDim(InferenceContext& ctx, std::span<const ir::Dim> dims);

// Sets output i to a tensor of `dtype` with the given dims; when the dtype is
// unknown the output is left unknown (an unknown input gives an unknown output).
void SetTensor(InferenceContext& ctx, size_t i, ir::DataType dtype, std::vector<ir::Dim> dims);
void SetUnknownShape(InferenceContext& ctx, size_t i, ir::DataType dtype);

// `count` fresh symbols.
std::vector<ir::Dim> Symbols(InferenceContext& ctx, size_t count);

// The length of a 1-D input whose shape is known (e.g. a shape input whose
// values are not), or nullopt.
std::optional<int64_t> KnownLength(const InferenceContext& ctx, size_t i);

// Whether two dims are known to be equal (same value or same symbol).
bool SameDim(const ir::Dim& a, const ir::Dim& b);

// a*b and a+b, or nullopt on int64 overflow (dims in a hostile model can be
// anything; the arithmetic on them must not be undefined).
inline std::optional<int64_t> CheckedMul(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}
inline std::optional<int64_t> CheckedAdd(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}

// One Slice axis after the spec's clamping of start and end: the first index
// read and how many elements are taken (step must not be 0).
struct SliceAxis {
  int64_t start;
  int64_t count;
};
SliceAxis ClampSlice(int64_t start, int64_t end, int64_t step, int64_t dim);

// Resize's output dims and the per-axis scale its coordinate mapping uses,
// from input dims and either scales or sizes (one of them null). `axes` are
// normalised; empty means all axes. `policy` is keep_aspect_ratio_policy
// (opset 18; "stretch" before). Errors carry no node label: callers add it.
struct ResizeShape {
  std::vector<int64_t> dims;
  std::vector<double> scales;
};
Result<ResizeShape> ComputeResizeShape(const std::vector<int64_t>& in_dims, const std::vector<double>* scales,
                                       const std::vector<int64_t>* sizes, const std::vector<int64_t>& axes,
                                       std::string_view policy);

// Per-file schema lists, assembled by ShapeOpSchemas().
std::span<const OpSchema> LayoutSchemas();    // Reshape, Flatten, Transpose, Squeeze, ..., Tile
std::span<const OpSchema> IndexingSchemas();  // Slice, Gather*, Scatter*, NonZero, OneHot, Trilu
std::span<const OpSchema> SpatialSchemas();   // Pad, DepthToSpace, SpaceToDepth, Resize, Upsample

}  // namespace vigil::ops::shape_family
