#include "doctor/rules/finding.h"

#include <algorithm>

namespace vigil::doctor {

std::string_view SeverityName(Severity severity) {
  switch (severity) {
    case Severity::kInfo: return "info";
    case Severity::kWarning: return "warning";
    case Severity::kError: return "error";
  }
  return "error";
}

bool HasError(const std::vector<Finding>& findings) {
  return std::any_of(findings.begin(), findings.end(),
                     [](const Finding& f) { return f.severity == Severity::kError; });
}

Diagnosis ToDiagnosis(const Finding& finding) {
  Diagnosis d;
  d.code = ErrorCode::kEnvironment;
  d.summary = finding.summary;
  d.facts = finding.evidence;
  d.facts.push_back({"doctor finding", finding.id});
  if (!finding.fix.empty()) d.fixes.push_back(finding.fix);
  return d;
}

}  // namespace vigil::doctor
