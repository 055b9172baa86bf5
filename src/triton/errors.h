// Errors, diagnoses and the small shared vocabulary of the backend: a
// Problem (what went wrong, as Triton will show it), the mapping of vigil's
// error codes to Triton's, element types in their three spellings, logging
// and the statistics clock.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "triton_api.h"
#include "vigil/vigil.h"

namespace vigil::triton {

// A failure on its way to Triton: a load error, or one request's error
// response. The message's first line is the summary.
struct Problem {
  TRITONSERVER_Error_Code code = TRITONSERVER_ERROR_INTERNAL;
  std::string message;
};
using MaybeProblem = std::optional<Problem>;

// vigil's error code as Triton's: a bad input or model is INVALID_ARG, what
// vigil cannot do UNSUPPORTED, memory, drivers and libraries UNAVAILABLE (the
// same request may work elsewhere or later), faults, crashes and bugs INTERNAL.
TRITONSERVER_Error_Code TritonCode(vigil_error_code code);

// A vigil diagnosis as a Problem, and releases the status: the summary on the
// first line, then the context lines (each "name: value", naming the model
// and the request), then the rest of vigil's text: facts, likely causes with
// their evidence, fixes.
Problem FromVigil(vigil_status* status, const std::vector<std::string>& context);

// A new TRITONSERVER_Error for Triton to own.
TRITONSERVER_Error* ToTriton(const Problem& problem);
TRITONSERVER_Error* ToTriton(TRITONSERVER_Error_Code code, const std::string& message);

// The message of an error the server returned to us, and deletes it; empty
// for null (success).
std::string TakeMessage(TRITONSERVER_Error* error);

// "<what> failed: <message>" as a Problem if a server call failed.
MaybeProblem Call(TRITONSERVER_Error* error, std::string_view what);

void Log(TRITONSERVER_LogLevel level, const std::string& message);

// Nanoseconds of std::chrono::steady_clock, the clock Triton's statistics use.
uint64_t NowNs();

// One element type in each of its spellings.
struct TypeInfo {
  TRITONSERVER_DataType triton;  // the protocol's number
  const char* protocol;          // "FP32", as clients write it
  const char* config;            // "TYPE_FP32", as config.pbtxt writes it
  vigil_dtype vigil;             // VIGIL_DTYPE_UNDEFINED where vigil has none
  const char* vigil_name;        // "float32", as vigil_model_describe_json writes it
};
const TypeInfo* TypeByTriton(TRITONSERVER_DataType type);
const TypeInfo* TypeByConfig(std::string_view config_name);
const TypeInfo* TypeByVigilName(std::string_view vigil_name);
const TypeInfo* TypeByVigil(vigil_dtype type);

// "[1,3,224,224]"
std::string ShapeText(const int64_t* dims, size_t rank);
inline std::string ShapeText(const std::vector<int64_t>& dims) { return ShapeText(dims.data(), dims.size()); }

}  // namespace vigil::triton
