// One problem (or notable fact) the doctor found, with its evidence and fix.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace vigil::doctor {

enum class Severity { kInfo, kWarning, kError };

std::string_view SeverityName(Severity severity);  // "info", "warning", "error"

struct Finding {
  std::string id;        // stable, e.g. "driver.missing"; documented in docs/doctor.md
  Severity severity = Severity::kError;
  std::string summary;   // one line: what is wrong and what it blocks
  std::vector<Fact> evidence;  // what was observed: versions, paths, variables
  std::string fix;       // concrete action
  // The component (Component::id) the finding is about, where it is one
  // library: the report's table marks it (✗ error, ! warning). "" = none.
  std::string component;
};

// True when any finding is an error (the doctor then exits 1).
bool HasError(const std::vector<Finding>& findings);

// A Diagnosis (kEnvironment) made of a finding, for callers that report
// through Status (the module loader).
Diagnosis ToDiagnosis(const Finding& finding);

}  // namespace vigil::doctor
