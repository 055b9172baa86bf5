// The objects behind the C API's opaque handles, and the guard every entry
// point runs in: no C++ exception and no C++ type crosses vigil.h.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>
#include <vector>

#include "api/isolated_session.h"
#include "api/session_factory.h"
#include "base/status.h"
#include "runtime/session.h"
#include "vigil/vigil.h"

struct vigil_status {
  vigil::Diagnosis diagnosis;
  std::string code_name;
  std::string headline;
  std::string text;  // rendered once
  std::string json;
};

// A session's state is shared with the values it hands out: device outputs
// are freed on the session's streams, so they keep the backend alive.
struct vigil_session {
  // One of the two: the session in this process, or (isolate on) the model
  // that each run hands to a child process.
  std::shared_ptr<vigil::api::AssembledSession> assembled;
  std::shared_ptr<vigil::api::IsolatedModel> isolated;
  vigil::api::SessionConfig config;
  std::string model_path;  // "" for a model from memory
  int device_id = 0;
  // Strings and arrays handed out by accessors; built once.
  struct IoInfo {
    std::string name;
    vigil_dtype dtype = VIGIL_DTYPE_UNDEFINED;
    size_t rank = static_cast<size_t>(-1);
    std::vector<int64_t> dims;
    std::vector<std::string> dim_names;
    std::vector<const char*> dim_name_ptrs;
  };
  std::vector<IoInfo> inputs, outputs;
  std::string backends;
  mutable std::once_flag notes_once, describe_once;
  mutable std::string notes_json, describe_json;

  const vigil::runtime::Session& session() const { return *assembled->session; }
  // The session in this process; for an isolated session, Unsupported naming
  // `call`, which needs one.
  vigil::Result<const vigil::runtime::Session*> InProcess(const char* call) const;
};

struct vigil_value {
  std::string name;
  vigil::runtime::Tensor tensor;
  std::shared_ptr<vigil::api::AssembledSession> keep_alive;  // for device memory
  int device_id = 0;  // the CUDA device of device memory
};

namespace vigil::api {

// The number a C caller stored in an enum field or argument (C allows any
// int there), read as that number: loading an out-of-range value as the C++
// enum type would be undefined (UBSan's -fsanitize=enum reports it).
template <typename E>
int64_t RawEnum(const E& value) {
  std::underlying_type_t<E> raw;
  std::memcpy(&raw, &value, sizeof raw);
  return static_cast<int64_t>(raw);
}

// A heap status for the caller; nullptr for OK.
vigil_status* ToCStatus(Status status);
// Runs `body`, turning an escaping exception into an Internal (or
// OutOfMemory) status: nothing may unwind through a C caller.
template <typename F>
vigil_status* Guarded(F&& body) {
  try {
    return ToCStatus(body());
  } catch (const std::bad_alloc&) {
    return ToCStatus(OutOfMemoryError("host memory ran out inside vigil"));
  } catch (const std::exception& e) {
    return ToCStatus(InternalError("unexpected exception inside vigil: {}", e.what()));
  } catch (...) {
    return ToCStatus(InternalError("unexpected exception inside vigil"));
  }
}
// The C options as the library's SessionConfig (NULL: the defaults); checks
// struct_size and the enums, not the combination (ValidateConfig does).
Result<SessionConfig> ConfigFromOptions(const vigil_session_options* options);
// For arguments: InvalidInput naming the call and the argument.
Status NullArgument(const char* call, const char* argument);

// A caller's vigil_tensor as a runtime input binding (no copy), checked for
// what the struct itself can get wrong (negative rank dims, null shape).
Result<runtime::InputBinding> ToBinding(const vigil_tensor& t, const char* call);
// The runtime tensor of a vigil_tensor (a view of the caller's buffer), for
// output buffers.
Result<runtime::Tensor> ToTensorView(const vigil_tensor& t, const char* call);

// A sequence or an optional output (runtime::Tensor::Kind) is refused:
// vigil_value holds tensors.
Status RequireTensorOutput(const runtime::NamedTensor& out);

vigil_value* NewValue(std::string name, runtime::Tensor tensor, std::shared_ptr<AssembledSession> keep_alive,
                      int device_id = 0);

}  // namespace vigil::api
