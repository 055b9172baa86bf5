// The session's layout decision: which convolutions run channels-last (NHWC)
// on the session's first backend (the device, or the CPU in a CPU session).
// The rewriting itself is the IR pass
// ir::ConvertConvsToNhwc (ir/layout_nhwc.h); this file picks its targets.
#pragma once

#include <cstddef>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "ir/graph.h"
#include "ir/layout_nhwc.h"
#include "runtime/backend.h"

namespace vigil::runtime {

// How a session lays out convolutions.
enum class ConvLayout {
  kAsModel,       // as the model says (NCHW): no rewriting
  // float16/bfloat16 2D convolutions with constant weights that the first
  // backend prefers as ai.vigil.ConvNhwc (Backend::PrefersChannelsLast) run
  // channels-last (tensor-core convolutions want NHWC, and oneDNN's CPU
  // convolutions then need no reorders); float32 ones too with
  // SessionOptions::nhwc_float32, else they stay NCHW. MaxPool,
  // AveragePool and GlobalAveragePool between them follow, where the
  // backend runs their ai.vigil.*PoolNhwc ops.
  kNhwcWhereFaster,
};

// The Conv nodes of `model` that kNhwcWhereFaster moves to NHWC on `device`
// (the session's first backend): default-domain Conv, X a float16 or
// bfloat16 tensor (or float32, with `float32`) of known rank 4 (per `types`,
// from load-time inference), W
// a constant initializer of rank 4, group 1 or depthwise (group == C == M,
// one input channel per group, unless the environment variable
// VIGIL_DEPTHWISE is "cudnn"; other grouped convolutions stay NCHW), and
// `device` prefers the rewritten ConvNhwc node with those types
// (Backend::PrefersChannelsLast); and every ai.vigil.QConv (which the QDQ
// pass wrote after asking the device). A device's float32 convolutions are
// taken together, all those it runs as ConvNhwc or none: all when the ones
// it prefers channels-last carry at least half of their multiply-adds per
// image (as far as the shapes are known). `note`, if given, gets a line
// saying which way float32 convolutions went and why ("" if none were asked).
std::vector<size_t> SelectNhwcConvs(const ir::Model& model, const std::unordered_map<std::string, ir::TypeInfo>& types,
                                    const Backend& device, bool float32 = false, std::string* note = nullptr);

// Whether `device` takes a node the QDQ fusion pass (ir/fuse_qdq.h) would
// write, with those input and output types: QConv is asked as the QConvNhwc
// it becomes (X, W and Y moved to NHWC); default-domain nodes at `model`'s
// opset. `why_not` gets the device's reason.
bool DeviceTakesFusedQdq(const ir::Node& fused, const std::vector<const ir::TypeInfo*>& inputs,
                         const std::vector<const ir::TypeInfo*>& outputs, const Backend& device,
                         const ir::Model& model, std::string* why_not);

// Applies `layout` to `model` (float32 convolutions too with `float32`, as
// SelectNhwcConvs, which writes `note`); returns whether the graph changed
// (its weight transposes then still need constant folding).
Result<bool> ApplyConvLayout(ir::Model& model, const std::unordered_map<std::string, ir::TypeInfo>& types,
                             ConvLayout layout, const Backend& first_backend, bool float32 = false,
                             std::string* note = nullptr);

}  // namespace vigil::runtime
