// A Diagnosis rendered for people (text) and for machines (JSON).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "base/status.h"

namespace vigil {

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

// {"ok":true} or {"ok":false,"error":ToJson(diagnosis)}
nlohmann::json ToJson(const Status& status);

}  // namespace vigil
