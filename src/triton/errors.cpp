#include "errors.h"

#include <chrono>

namespace vigil::triton {

TRITONSERVER_Error_Code TritonCode(vigil_error_code code) {
  switch (code) {
    case VIGIL_ERROR_INVALID_MODEL:
    case VIGIL_ERROR_INVALID_INPUT: return TRITONSERVER_ERROR_INVALID_ARG;
    case VIGIL_ERROR_UNSUPPORTED: return TRITONSERVER_ERROR_UNSUPPORTED;
    case VIGIL_ERROR_OUT_OF_MEMORY:
    case VIGIL_ERROR_ENVIRONMENT: return TRITONSERVER_ERROR_UNAVAILABLE;
    case VIGIL_ERROR_DEVICE_FAULT:
    case VIGIL_ERROR_CRASHED:
    case VIGIL_ERROR_INTERNAL:
    case VIGIL_OK: break;
  }
  return TRITONSERVER_ERROR_INTERNAL;
}

Problem FromVigil(vigil_status* status, const std::vector<std::string>& context) {
  Problem p;
  p.code = TritonCode(vigil_status_code(status));
  const std::string text = vigil_status_text(status);
  const size_t eol = text.find('\n');
  p.message = vigil_status_headline(status);  // the cause and its fix lead, as everywhere
  if (p.message.empty()) p.message = text.substr(0, eol);
  for (const std::string& line : context) p.message += "\n  " + line;
  if (eol != std::string::npos) p.message += text.substr(eol);
  vigil_status_release(status);
  return p;
}

TRITONSERVER_Error* ToTriton(TRITONSERVER_Error_Code code, const std::string& message) {
  return TRITONSERVER_ErrorNew(code, message.c_str());
}

TRITONSERVER_Error* ToTriton(const Problem& problem) { return ToTriton(problem.code, problem.message); }

std::string TakeMessage(TRITONSERVER_Error* error) {
  if (!error) return {};
  const char* m = TRITONSERVER_ErrorMessage(error);
  std::string message = m ? m : "(no message)";
  TRITONSERVER_ErrorDelete(error);
  return message;
}

MaybeProblem Call(TRITONSERVER_Error* error, std::string_view what) {
  if (!error) return std::nullopt;
  return Problem{TRITONSERVER_ERROR_INTERNAL, std::string(what) + " failed: " + TakeMessage(error)};
}

void Log(TRITONSERVER_LogLevel level, const std::string& message) {
  if (!TRITONSERVER_LogIsEnabled(level)) return;
  TRITONSERVER_Error* e = TRITONSERVER_LogMessage(level, "vigil", 0, message.c_str());
  if (e) TRITONSERVER_ErrorDelete(e);
}

uint64_t NowNs() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
}

namespace {
const TypeInfo kTypes[] = {
    {TRITONSERVER_TYPE_BOOL, "BOOL", "TYPE_BOOL", VIGIL_DTYPE_BOOL, "bool"},
    {TRITONSERVER_TYPE_UINT8, "UINT8", "TYPE_UINT8", VIGIL_DTYPE_UINT8, "uint8"},
    {TRITONSERVER_TYPE_UINT16, "UINT16", "TYPE_UINT16", VIGIL_DTYPE_UINT16, "uint16"},
    {TRITONSERVER_TYPE_UINT32, "UINT32", "TYPE_UINT32", VIGIL_DTYPE_UINT32, "uint32"},
    {TRITONSERVER_TYPE_UINT64, "UINT64", "TYPE_UINT64", VIGIL_DTYPE_UINT64, "uint64"},
    {TRITONSERVER_TYPE_INT8, "INT8", "TYPE_INT8", VIGIL_DTYPE_INT8, "int8"},
    {TRITONSERVER_TYPE_INT16, "INT16", "TYPE_INT16", VIGIL_DTYPE_INT16, "int16"},
    {TRITONSERVER_TYPE_INT32, "INT32", "TYPE_INT32", VIGIL_DTYPE_INT32, "int32"},
    {TRITONSERVER_TYPE_INT64, "INT64", "TYPE_INT64", VIGIL_DTYPE_INT64, "int64"},
    {TRITONSERVER_TYPE_FP16, "FP16", "TYPE_FP16", VIGIL_DTYPE_FLOAT16, "float16"},
    {TRITONSERVER_TYPE_FP32, "FP32", "TYPE_FP32", VIGIL_DTYPE_FLOAT32, "float32"},
    {TRITONSERVER_TYPE_FP64, "FP64", "TYPE_FP64", VIGIL_DTYPE_FLOAT64, "float64"},
    // Strings: vigil takes none as an input buffer and says so.
    {TRITONSERVER_TYPE_BYTES, "BYTES", "TYPE_STRING", VIGIL_DTYPE_STRING, "str"},
    {TRITONSERVER_TYPE_BF16, "BF16", "TYPE_BF16", VIGIL_DTYPE_BFLOAT16, "bfloat16"},
};
}  // namespace

const TypeInfo* TypeByTriton(TRITONSERVER_DataType type) {
  for (const TypeInfo& t : kTypes) {
    if (t.triton == type) return &t;
  }
  return nullptr;
}

const TypeInfo* TypeByConfig(std::string_view config_name) {
  for (const TypeInfo& t : kTypes) {
    if (config_name == t.config) return &t;
  }
  return nullptr;
}

const TypeInfo* TypeByVigilName(std::string_view vigil_name) {
  for (const TypeInfo& t : kTypes) {
    if (vigil_name == t.vigil_name) return &t;
  }
  return nullptr;
}

const TypeInfo* TypeByVigil(vigil_dtype type) {
  for (const TypeInfo& t : kTypes) {
    if (t.vigil == type) return &t;
  }
  return nullptr;
}

std::string ShapeText(const int64_t* dims, size_t rank) {
  std::string s = "[";
  for (size_t i = 0; i < rank; ++i) {
    if (i) s += ",";
    s += std::to_string(dims[i]);
  }
  return s + "]";
}

}  // namespace vigil::triton
