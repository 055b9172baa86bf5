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

// Multi-line text:
//   error [InvalidInput]: <summary>
//     <fact name>: <value>
//   likely causes:
//     1. <cause> (evidence: ...)
//   fix:
//     - <fix>
std::string RenderText(const Diagnosis& diagnosis);

// {"code":"InvalidInput","summary":..,"facts":{..} as a list of {name,value},
//  "causes":[{"what":..,"evidence":..}],"fixes":[..]}
nlohmann::json ToJson(const Diagnosis& diagnosis);

// The inverse of ToJson(Diagnosis), for a Diagnosis that crossed a process
// boundary (the isolated run). Unknown codes become kInternal; missing or
// mistyped fields are left empty rather than failing.
Diagnosis DiagnosisFromJson(const nlohmann::json& j);

// {"ok":true} or {"ok":false,"error":ToJson(diagnosis)}
nlohmann::json ToJson(const Status& status);

}  // namespace vigil
