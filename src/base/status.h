// Errors are values: a [[nodiscard]] Status that is cheap when OK and carries a
// Diagnosis when not, and Result<T> for functions that return a value.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include <fmt/format.h>

namespace vigil {

// What kind of problem a failing Status describes. The CLI maps every code but
// kInternal to exit status 1 ("a diagnosed problem"), kInternal to 3.
enum class ErrorCode : uint8_t {
  kOk = 0,
  kInvalidModel,   // the model file or graph is malformed
  kInvalidInput,   // an input tensor or file does not fit the model
  kUnsupported,    // valid, but vigil (or this backend) cannot do it
  kOutOfMemory,    // a predicted or actual allocation does not fit
  kEnvironment,    // drivers, libraries, variables, files outside the model
  kDeviceFault,    // the device failed while running
  kCrashed,        // the isolated process running the model died (--isolate)
  kInternal,       // a bug in vigil
};

// "InvalidModel", "InvalidInput", ...
std::string_view ErrorCodeName(ErrorCode code);

// One observed fact: "expected" / "float32", "path" / "/usr/lib/...".
struct Fact {
  std::string name;
  std::string value;
};

// One likely cause, with what points to it. Causes are ranked: most likely first.
struct Cause {
  std::string what;
  std::string evidence;
};

// Everything vigil knows about one failure.
struct Diagnosis {
  ErrorCode code = ErrorCode::kInternal;
  std::string summary;              // one line, names the thing that is wrong
  std::vector<Fact> facts;          // expected/got, versions, paths
  std::vector<Cause> causes;        // ranked, most likely first
  std::vector<std::string> fixes;   // concrete actions
};

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK
  explicit Status(Diagnosis diagnosis);
  Status(ErrorCode code, std::string summary);
  Status(const Status& other);
  Status& operator=(const Status& other);
  Status(Status&&) noexcept = default;
  Status& operator=(Status&&) noexcept = default;

  static Status Ok() { return Status(); }

  bool ok() const { return diagnosis_ == nullptr; }
  ErrorCode code() const { return ok() ? ErrorCode::kOk : diagnosis_->code; }
  // Only for a failing Status.
  const Diagnosis& diagnosis() const { return *diagnosis_; }
  Diagnosis& diagnosis() { return *diagnosis_; }
  const std::string& summary() const;

  // Builders; no-ops on an OK status so they can be chained freely.
  Status& WithFact(std::string name, std::string value);
  Status& WithCause(std::string what, std::string evidence = {});
  Status& WithFix(std::string fix);
  // Prepends "context: " to the summary, so outer layers can say where.
  Status& WithContext(std::string_view context);

  // "InvalidModel: summary" (or "OK").
  std::string ToString() const;

 private:
  std::unique_ptr<Diagnosis> diagnosis_;
};

// Exit status for the CLI: 0 OK, 1 diagnosed problem, 3 internal error.
int ExitCodeFor(const Status& status);

template <typename... Args>
Status MakeError(ErrorCode code, fmt::format_string<Args...> format, Args&&... args) {
  return Status(code, fmt::format(format, std::forward<Args>(args)...));
}
template <typename... Args>
Status InvalidModelError(fmt::format_string<Args...> f, Args&&... a) {
  return MakeError(ErrorCode::kInvalidModel, f, std::forward<Args>(a)...);
}
template <typename... Args>
Status InvalidInputError(fmt::format_string<Args...> f, Args&&... a) {
  return MakeError(ErrorCode::kInvalidInput, f, std::forward<Args>(a)...);
}
template <typename... Args>
Status UnsupportedError(fmt::format_string<Args...> f, Args&&... a) {
  return MakeError(ErrorCode::kUnsupported, f, std::forward<Args>(a)...);
}
template <typename... Args>
Status OutOfMemoryError(fmt::format_string<Args...> f, Args&&... a) {
  return MakeError(ErrorCode::kOutOfMemory, f, std::forward<Args>(a)...);
}
template <typename... Args>
Status EnvironmentError(fmt::format_string<Args...> f, Args&&... a) {
  return MakeError(ErrorCode::kEnvironment, f, std::forward<Args>(a)...);
}
template <typename... Args>
Status DeviceFaultError(fmt::format_string<Args...> f, Args&&... a) {
  return MakeError(ErrorCode::kDeviceFault, f, std::forward<Args>(a)...);
}
template <typename... Args>
Status InternalError(fmt::format_string<Args...> f, Args&&... a) {
  return MakeError(ErrorCode::kInternal, f, std::forward<Args>(a)...);
}

// A value or the Status that says why there is none.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : state_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Status status) : state_(std::move(status)) {  // NOLINT: implicit by design
    if (std::get<Status>(state_).ok()) {
      state_ = InternalError("Result constructed from an OK Status without a value");
    }
  }

  bool ok() const { return std::holds_alternative<T>(state_); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(state_);
  }
  Status TakeStatus() && { return ok() ? Status() : std::move(std::get<Status>(state_)); }

  // Only for an OK result.
  T& value() & { return std::get<T>(state_); }
  const T& value() const& { return std::get<T>(state_); }
  T&& value() && { return std::get<T>(std::move(state_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<Status, T> state_;
};

}  // namespace vigil

#define VIGIL_CONCAT_INNER_(a, b) a##b
#define VIGIL_CONCAT_(a, b) VIGIL_CONCAT_INNER_(a, b)

// Returns the Status from the enclosing function if `expr` fails.
#define VIGIL_RETURN_IF_ERROR(expr)                  \
  do {                                               \
    ::vigil::Status vigil_status_ = (expr);          \
    if (!vigil_status_.ok()) return vigil_status_;   \
  } while (0)

// `lhs = value of expr`, or returns its Status. lhs may declare: `auto x`.
#define VIGIL_ASSIGN_OR_RETURN(lhs, expr) \
  VIGIL_ASSIGN_OR_RETURN_IMPL_(VIGIL_CONCAT_(vigil_result_, __LINE__), lhs, expr)
#define VIGIL_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                 \
  if (!tmp.ok()) return std::move(tmp).TakeStatus(); \
  lhs = std::move(tmp).value()
