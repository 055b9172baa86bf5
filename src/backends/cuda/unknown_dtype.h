// Support-function helpers for an input whose dtype is not known when the
// model loads: a value out of If, Loop or Scan whose bodies' outputs carry
// no type. Kernels that only move or relabel elements (data movement, the
// views) and Cast/CastLike take such an input; they check the dtype when
// they run, and refuse one they cannot handle (string, sub-byte types) with
// an Unsupported error that names it.
#pragma once

#include <cstddef>
#include <string>

#include "backends/cuda/cuda_kernel.h"

namespace vigil::cuda {

// Input i is a tensor, or a value of no recorded type, whose dtype is not
// known. A value known to be a sequence, an optional or a map is not.
inline bool UnknownTensorDtype(const runtime::NodeTypes& types, size_t i) {
  const ir::TypeInfo* t = i < types.inputs.size() ? types.inputs[i] : nullptr;
  if (!t) return true;
  return t->kind == ir::TypeInfo::Kind::kUnknown ||
         (t->kind == ir::TypeInfo::Kind::kTensor && t->elem_type == ir::DataType::kUndefined);
}

// FixedSizeInput, or a dtype not known at load time.
inline bool FixedSizeOrUnknownInput(const runtime::NodeTypes& types, size_t i, std::string* why_not) {
  return UnknownTensorDtype(types, i) || FixedSizeInput(types, i, why_not);
}

}  // namespace vigil::cuda
