#include "base/status.h"

namespace vigil {

std::string_view ErrorCodeName(ErrorCode code) {
  switch (code) {
    case ErrorCode::kOk: return "OK";
    case ErrorCode::kInvalidModel: return "InvalidModel";
    case ErrorCode::kInvalidInput: return "InvalidInput";
    case ErrorCode::kUnsupported: return "Unsupported";
    case ErrorCode::kOutOfMemory: return "OutOfMemory";
    case ErrorCode::kEnvironment: return "Environment";
    case ErrorCode::kDeviceFault: return "DeviceFault";
    case ErrorCode::kCrashed: return "Crashed";
    case ErrorCode::kInternal: return "Internal";
  }
  return "Unknown";
}

Status::Status(Diagnosis diagnosis) : diagnosis_(std::make_unique<Diagnosis>(std::move(diagnosis))) {
  if (diagnosis_->code == ErrorCode::kOk) diagnosis_->code = ErrorCode::kInternal;
}

Status::Status(ErrorCode code, std::string summary) {
  Diagnosis d;
  d.code = code == ErrorCode::kOk ? ErrorCode::kInternal : code;
  d.summary = std::move(summary);
  diagnosis_ = std::make_unique<Diagnosis>(std::move(d));
}

Status::Status(const Status& other)
    : diagnosis_(other.diagnosis_ ? std::make_unique<Diagnosis>(*other.diagnosis_) : nullptr) {}

Status& Status::operator=(const Status& other) {
  if (this != &other) {
    diagnosis_ = other.diagnosis_ ? std::make_unique<Diagnosis>(*other.diagnosis_) : nullptr;
  }
  return *this;
}

const std::string& Status::summary() const {
  static const std::string kOkText = "OK";
  return ok() ? kOkText : diagnosis_->summary;
}

Status& Status::WithFact(std::string name, std::string value) {
  if (!ok()) diagnosis_->facts.push_back({std::move(name), std::move(value)});
  return *this;
}

Status& Status::WithCause(std::string what, std::string evidence) {
  if (!ok()) diagnosis_->causes.push_back({std::move(what), std::move(evidence)});
  return *this;
}

Status& Status::WithFix(std::string fix) {
  if (!ok()) diagnosis_->fixes.push_back(std::move(fix));
  return *this;
}

Status& Status::WithContext(std::string_view context) {
  if (!ok() && !context.empty()) {
    diagnosis_->summary = fmt::format("{}: {}", context, diagnosis_->summary);
  }
  return *this;
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  return fmt::format("{}: {}", ErrorCodeName(diagnosis_->code), diagnosis_->summary);
}

int ExitCodeFor(const Status& status) {
  if (status.ok()) return 0;
  return status.code() == ErrorCode::kInternal ? 3 : 1;
}

}  // namespace vigil
