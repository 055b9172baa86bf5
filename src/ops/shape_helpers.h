// Helpers for shape inference functions.
#pragma once

#include <optional>
#include <vector>

#include "base/status.h"
#include "ir/tensor.h"
#include "ir/types.h"
#include "ops/schema.h"

namespace vigil::ops {

// A tensor type with the given dtype and dims.
ir::TypeInfo TensorType(ir::DataType dtype, std::vector<ir::Dim> dims);
ir::TypeInfo TensorType(ir::DataType dtype, const std::vector<int64_t>& dims);
// A tensor type of known dtype and unknown rank.
ir::TypeInfo TensorTypeUnknownShape(ir::DataType dtype);

// True when `t` is a tensor type (of any rank, known or not).
bool IsTensorType(const ir::TypeInfo* t);
// True when `t` is a tensor type with a known rank.
bool HasRank(const ir::TypeInfo* t);
// A dim carried over to an output: kept when known or named, otherwise a
// fresh symbol so that later ops can tell it apart from others.
ir::Dim CarryDim(InferenceContext& ctx, const ir::Dim& d);
// All dims known numbers: returns them.
std::optional<std::vector<int64_t>> KnownDims(const ir::TypeInfo* t);

// Multidirectional (numpy) broadcasting of two shapes. Known dims must agree
// or be 1; a symbolic dim against 1 stays symbolic; two different symbols
// give a fresh symbol.
Result<std::vector<ir::Dim>> BroadcastDims(InferenceContext& ctx, const std::vector<ir::Dim>& a,
                                           const std::vector<ir::Dim>& b);

// The values of an integer tensor (int32 or int64) as int64; an error naming
// the node for other dtypes.
Result<std::vector<int64_t>> ReadInt64s(const InferenceContext& ctx, const ir::Tensor& t);
// The values of a numeric tensor as double (float16/bfloat16 converted).
Result<std::vector<double>> ReadDoubles(const InferenceContext& ctx, const ir::Tensor& t);

// Elementwise-style inference: output 0 takes input `from`'s dtype and shape.
Status PropagateFirstInput(InferenceContext& ctx);

}  // namespace vigil::ops
