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

// The report's first line: "N error(s): <first error's summary> — fix:
// <its fix>", else "no errors, N warning(s): <first warning's summary> — fix:
// <its fix>", else "no problems found" (infos do not count). `findings` are
// in report order, errors first.
std::string VerdictLine(const std::vector<Finding>& findings);

// The verdict line, the table of components (✓ fine, ✗ missing or named by
// an error, ! named by a warning), GPUs, environment, live check, binary, and
// then every finding in full. `color` adds ANSI colours to the marks.
std::string RenderReportText(const DoctorReport& report, bool color = false);

// {"summary":"<verdict line>" (always the first key), "schema_version":1, "healthy":bool, "components":[...], "gpus":[...],
//  "env":{...}, "live_check":"...", "findings":[{id,severity,summary,
//  evidence:[{name,value}],fix}], "binary":...}
nlohmann::ordered_json RenderReportJson(const DoctorReport& report);

nlohmann::json FindingToJson(const Finding& finding);

}  // namespace vigil::doctor
