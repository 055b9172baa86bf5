// One ONNX backend test case: load, run every data set, compare.
#pragma once

#include <filesystem>
#include <map>
#include <set>
#include <string>

#include <memory>

#include "base/status.h"
#include "runtime/backend.h"

namespace vigil::conformance {

// kNotOnDevice: with a device backend, the test uses an op (or dtype,
// attribute) that backend does not claim; it would run on the CPU.
enum class Outcome { kPass, kFail, kKnownFailure, kOutOfScope, kNotOnDevice };
const char* OutcomeName(Outcome o);

struct KnownFailures {
  std::map<std::string, std::string> out_of_scope_ops;    // op -> reason
  std::map<std::string, std::string> out_of_scope_tests;  // test name -> reason
  std::map<int32_t, std::string> out_of_scope_dtypes;    // TensorProto data type -> reason
  std::map<std::string, std::string> tests;             // test name -> reason
};

// The file's format, one entry per line, '#' starts a comment:
//   out-of-scope-op <Op>      # reason
//   out-of-scope-test <name>  # reason (an in-scope op used out of scope)
//   out-of-scope-dtype <NAME> # reason: every test whose graph uses that
//                             # TensorProto data type (FLOAT8E4M3FN, INT4, ...)
//   <test_name>               # reason
Result<KnownFailures> ReadKnownFailures(const std::string& path);

struct CaseResult {
  Outcome outcome = Outcome::kFail;
  std::string detail;  // why it failed, or which op made it out of scope
};

// Absolute and relative tolerance of the comparison (ONNX's backend test
// defaults), the same for every op and build.
inline constexpr double kRtol = 1e-3;
inline constexpr double kAtol = 1e-7;

// With `device` set, every node must run on it (no fallback): a test using
// anything it does not claim is kNotOnDevice, with the reason.
CaseResult RunCase(const std::filesystem::path& dir, const KnownFailures& known,
                   std::shared_ptr<const runtime::Backend> device = nullptr);

}  // namespace vigil::conformance
