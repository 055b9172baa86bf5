// A Diagnosis rendered for people (text) and for machines (JSON).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "base/status.h"

namespace vigil {

// The diagnosis with every field printable (base/printable.h): names and
// paths from files in it cannot send control sequences to a terminal. Fact
// values and fixes keep their newlines; the other fields are one line. A
// cause or a fix given twice is kept once.
// RenderText and ToJson apply it.
Diagnosis PrintableDiagnosis(const Diagnosis& diagnosis);

// The first line of every failure: the top-ranked cause and the first fix's
// first line, "<cause> — fix: <fix>". Without a cause the summary is the
// cause; without a fix the cause stands alone. Printable.
std::string Headline(const Diagnosis& diagnosis);

// Multi-line text, the cause first and the symptom as a fact; nothing is
// said twice:
//   error [InvalidInput]: <Headline>
//       <the first fix's further lines, if any>
//     symptom: <summary>             (when a cause leads the headline)
//     evidence: <the first cause's evidence>
//     <fact name>: <value>
//   other possible causes:
//     2. <cause> (evidence: ...)
//   other fixes:
//     - <fix>
std::string RenderText(const Diagnosis& diagnosis);

// {"headline":..,"code":"InvalidInput","summary":..(the symptom),
//  "facts":[{name,value}],"causes":[{"what":..,"evidence":..}],"fixes":[..]},
// in that order: the headline first, as in the text.
nlohmann::ordered_json ToJson(const Diagnosis& diagnosis);

// The inverse of ToJson(Diagnosis), for a Diagnosis that crossed a process
// boundary (the isolated run). Unknown codes become kInternal; missing or
// mistyped fields are left empty rather than failing.
Diagnosis DiagnosisFromJson(const nlohmann::json& j);

// {"ok":true} or {"ok":false,"error":ToJson(diagnosis)}
nlohmann::ordered_json ToJson(const Status& status);

}  // namespace vigil
