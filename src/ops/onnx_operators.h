// The names of the ONNX standard operators (the default domain, ai.onnx), to
// tell an op vigil does not implement yet from one that is not an ONNX
// operator at all (a custom op exported into the default domain, a typo).
#pragma once

#include <span>
#include <string>
#include <string_view>

namespace vigil::ops {

bool IsOnnxOperator(std::string_view op_type);

// Every ONNX standard operator name, sorted (docs/ops.md lists those vigil
// lacks).
std::span<const char* const> OnnxOperators();

// The ONNX operator whose name is closest to `op_type` (case-insensitive,
// at most two edits), or "".
std::string NearestOnnxOperator(std::string_view op_type);

}  // namespace vigil::ops
