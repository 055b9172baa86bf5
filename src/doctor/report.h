// The doctor's output: a readable report (one line per component with a
// check mark, then the findings with evidence and fix) and the JSON form
// documented in docs/doctor.md.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "doctor/probe/snapshot.h"
#include "doctor/rules/finding.h"

namespace vigil::doctor {

// What `vigil doctor` produced.
struct DoctorReport {
  StackSnapshot snapshot;
  std::vector<Finding> findings;  // rules, live check and --binary, errors first
  std::string live_check;         // one line: what the live check did ("" = not run)
  // --binary FILE: what the loader would do for it, as text lines and JSON
  // (filled by the binary resolver's renderer).
  std::vector<std::string> binary_lines;
  nlohmann::json binary_json;     // null when --binary was not given
};

// Exit status: 1 when any finding is an error, else 0.
int DoctorExitCode(const DoctorReport& report);

// `color` adds ANSI colours to the check marks (for terminals).
std::string RenderReportText(const DoctorReport& report, bool color = false);

// {"schema_version":1, "healthy":bool, "components":[...], "gpus":[...],
//  "env":{...}, "live_check":"...", "findings":[{id,severity,summary,
//  evidence:[{name,value}],fix}], "binary":...}
nlohmann::json RenderReportJson(const DoctorReport& report);

nlohmann::json FindingToJson(const Finding& finding);

}  // namespace vigil::doctor
