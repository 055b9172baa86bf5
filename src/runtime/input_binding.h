// What a caller hands to Session::Run / Session::Check for one input, and the
// validation of those bindings against the model (every run, before any
// kernel sees data).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "base/status.h"
#include "ir/graph.h"
#include "runtime/tensor.h"

namespace vigil::runtime {

struct InputBinding {
  std::string name;  // empty: bind by position (the model's input order)
  ir::DataType dtype = ir::DataType::kUndefined;
  std::vector<int64_t> shape;
  const void* data = nullptr;  // host memory, or device memory when `device` says so
  size_t byte_size = 0;        // size of the caller's buffer in bytes
  std::string source;          // where it came from ("x.npy"), for messages
  // Where `data` lives. Device memory must be the session's device backend's
  // (see Session::UploadInput); it is then read in place, without a copy.
  Device device = Device::kHost;
  // A sequence or an empty optional (a Tensor whose kind is not dense) for an
  // input the model declares as such; dtype, shape and data are then unused.
  // The caller keeps it alive for the run.
  const Tensor* value = nullptr;
};

// The model's inputs as Run sees them: graph inputs minus those an
// initializer defines (those are optional, with the initializer as default).
struct ModelInputs {
  std::vector<ir::ValueInfo> required;
  std::vector<ir::ValueInfo> optional;  // have an initializer default
};

ModelInputs ListModelInputs(const ir::Graph& graph);

// Symbolic dims bound by the given inputs ("N" -> 8).
using DimBindings = std::map<std::string, int64_t>;

// Validates the bindings: unknown or missing names, dtype, rank, each dim,
// symbolic dims consistent across inputs, byte size == element count ×
// element size, no null data for a non-empty tensor. Each failure is an
// InvalidInput Diagnosis naming the input, expected and given, and the likely
// cause where the evidence supports one (NHWC vs NCHW, bytes passed as
// elements, int32 vs float32, missing batch dim). Positional bindings (empty
// names) are resolved to names in `bindings`. Never reads the data.
Result<DimBindings> ValidateInputs(const ModelInputs& model_inputs, std::vector<InputBinding>& bindings);

}  // namespace vigil::runtime
