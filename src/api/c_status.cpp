// vigil.h: statuses, values, version, dtype names.
#include "api/c_api_internal.h"
#include "base/diagnosis_render.h"
#include "ir/dtype.h"

#ifndef VIGIL_VERSION
#define VIGIL_VERSION "0.0.0"
#endif

namespace vigil::api {

vigil_status* ToCStatus(Status status) {
  if (status.ok()) return nullptr;
  auto* s = new vigil_status;
  s->diagnosis = PrintableDiagnosis(status.diagnosis());  // every accessor's text is printable
  s->code_name = std::string(ErrorCodeName(s->diagnosis.code));
  s->headline = Headline(s->diagnosis);
  s->text = RenderText(s->diagnosis);
  s->json = ToJson(s->diagnosis).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return s;
}

Status NullArgument(const char* call, const char* argument) {
  return InvalidInputError("{}: {} is NULL", call, argument).WithFix(fmt::format("pass a valid {}", argument));
}

vigil_value* NewValue(std::string name, runtime::Tensor tensor, std::shared_ptr<AssembledSession> keep_alive,
                      int device_id) {
  auto* v = new vigil_value;
  v->device_id = device_id;
  v->name = std::move(name);
  v->tensor = std::move(tensor);
  if (!v->tensor.on_host()) v->keep_alive = std::move(keep_alive);
  return v;
}

}  // namespace vigil::api

extern "C" {

vigil_error_code vigil_status_code(const vigil_status* s) {
  return s ? static_cast<vigil_error_code>(s->diagnosis.code) : VIGIL_OK;
}
const char* vigil_status_code_name(const vigil_status* s) { return s ? s->code_name.c_str() : "OK"; }
const char* vigil_status_headline(const vigil_status* s) { return s ? s->headline.c_str() : ""; }
const char* vigil_status_summary(const vigil_status* s) { return s ? s->diagnosis.summary.c_str() : ""; }
size_t vigil_status_fact_count(const vigil_status* s) { return s ? s->diagnosis.facts.size() : 0; }
const char* vigil_status_fact_name(const vigil_status* s, size_t i) {
  return s && i < s->diagnosis.facts.size() ? s->diagnosis.facts[i].name.c_str() : "";
}
const char* vigil_status_fact_value(const vigil_status* s, size_t i) {
  return s && i < s->diagnosis.facts.size() ? s->diagnosis.facts[i].value.c_str() : "";
}
size_t vigil_status_cause_count(const vigil_status* s) { return s ? s->diagnosis.causes.size() : 0; }
const char* vigil_status_cause(const vigil_status* s, size_t i) {
  return s && i < s->diagnosis.causes.size() ? s->diagnosis.causes[i].what.c_str() : "";
}
const char* vigil_status_cause_evidence(const vigil_status* s, size_t i) {
  return s && i < s->diagnosis.causes.size() ? s->diagnosis.causes[i].evidence.c_str() : "";
}
size_t vigil_status_fix_count(const vigil_status* s) { return s ? s->diagnosis.fixes.size() : 0; }
const char* vigil_status_fix(const vigil_status* s, size_t i) {
  return s && i < s->diagnosis.fixes.size() ? s->diagnosis.fixes[i].c_str() : "";
}
const char* vigil_status_text(const vigil_status* s) { return s ? s->text.c_str() : "OK"; }
const char* vigil_status_json(const vigil_status* s) { return s ? s->json.c_str() : "{\"code\":\"OK\"}"; }
void vigil_status_release(vigil_status* s) { delete s; }

uint32_t vigil_api_version(void) { return VIGIL_API_VERSION; }
const char* vigil_version_string(void) { return VIGIL_VERSION; }
void vigil_string_release(char* text) { delete[] text; }

const char* vigil_dtype_name(vigil_dtype dtype) {
  if (!vigil::ir::IsKnownDataType(static_cast<int32_t>(dtype))) return "undefined";
  static thread_local std::string name;
  name = std::string(vigil::ir::DataTypeName(static_cast<vigil::ir::DataType>(dtype)));
  return name.c_str();
}

const char* vigil_value_name(const vigil_value* v) { return v ? v->name.c_str() : ""; }
vigil_dtype vigil_value_dtype(const vigil_value* v) {
  return v ? static_cast<vigil_dtype>(v->tensor.dtype()) : VIGIL_DTYPE_UNDEFINED;
}
size_t vigil_value_rank(const vigil_value* v) { return v ? v->tensor.rank() : 0; }
const int64_t* vigil_value_shape(const vigil_value* v) { return v ? v->tensor.shape().data() : nullptr; }
const void* vigil_value_data(const vigil_value* v) { return v ? v->tensor.raw_data() : nullptr; }
void* vigil_value_mutable_data(vigil_value* v) { return v ? v->tensor.raw_data() : nullptr; }
size_t vigil_value_byte_size(const vigil_value* v) { return v ? v->tensor.byte_size() : 0; }
vigil_memory vigil_value_memory(const vigil_value* v) {
  return v && !v->tensor.on_host() ? VIGIL_MEMORY_CUDA : VIGIL_MEMORY_HOST;
}
void vigil_value_release(vigil_value* v) { delete v; }

}  // extern "C"
