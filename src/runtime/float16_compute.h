// Running a float32 model in float16 (SessionOptions::float16_inputs, the
// library's run_as_float16): at load, float32 initializers become float16
// copies (clamped to float16's range, ±65504), nodes that take float16
// compute in it, and Casts join what stays float32. The model's inputs and
// outputs keep their float32 types, so callers change nothing.
//
// A node computes in float16 when it is not on the keep-float32 list below
// and at least one of its float32 inputs sits at a position that
// `takes_float16` accepts (the session asks the CPU kernels' type
// declarations: the position's type variable admits float16 and float32).
// Only those positions change; a Resize's float32 scales stay float32, and
// so does a BatchNormalization variance above 65504. The
// node's output types come from its own shape inference with the new input
// types, so an output that the op defines as float32 (LayerNormalization's
// Mean) stays float32. Kept in float32, with Casts around them: nodes with
// subgraphs (If, Loop, Scan), quantization nodes, and ops whose results
// float16 cannot hold (CumSum, Range, random generators, NonMaxSuppression,
// RoiAlign, TopK's indices' ordering).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>

#include "base/status.h"
#include "ir/graph.h"

namespace vigil::runtime {

// Whether input `input` of `node` (at `opset`) may be float16 where the
// model has float32.
enum class Float16Input {
  kNo,    // stays float32
  kTied,  // float16 with the node's data (input 0): one type variable
  kFree,  // may be float16, and may also stay float32 when the data is
          // float16 (BatchNormalization's statistics): a constant whose
          // values float16 cannot hold (|v| > 65504) stays float32 there
};
using Float16InputFn = std::function<Float16Input(const ir::Node& node, int64_t opset, size_t input)>;

struct Float16Summary {
  size_t converted_nodes = 0;         // nodes now computing in float16
  size_t casts = 0;                   // Casts inserted (both directions)
  size_t converted_initializers = 0;  // float32 initializers given a float16 copy
  size_t clamped_values = 0;          // initializer elements beyond ±65504, clamped
};

// Rewrites `model` (its types per `types`, from load-time inference) as
// above. The caller infers types again afterwards.
Result<Float16Summary> ConvertToFloat16(ir::Model& model, const std::unordered_map<std::string, ir::TypeInfo>& types,
                                        const Float16InputFn& takes_float16);

}  // namespace vigil::runtime
