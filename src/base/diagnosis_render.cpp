#include "base/diagnosis_render.h"

namespace vigil {

std::string RenderText(const Diagnosis& d) {
  std::string out = fmt::format("error [{}]: {}\n", ErrorCodeName(d.code), d.summary);
  for (const Fact& f : d.facts) out += fmt::format("  {}: {}\n", f.name, f.value);
  if (!d.causes.empty()) {
    out += "likely causes:\n";
    int rank = 1;
    for (const Cause& c : d.causes) {
      out += fmt::format("  {}. {}", rank++, c.what);
      if (!c.evidence.empty()) out += fmt::format(" (evidence: {})", c.evidence);
      out += "\n";
    }
  }
  if (!d.fixes.empty()) {
    out += "fix:\n";
    for (const std::string& f : d.fixes) out += fmt::format("  - {}\n", f);
  }
  return out;
}

nlohmann::json ToJson(const Diagnosis& d) {
  nlohmann::json facts = nlohmann::json::array();
  for (const Fact& f : d.facts) facts.push_back({{"name", f.name}, {"value", f.value}});
  nlohmann::json causes = nlohmann::json::array();
  for (const Cause& c : d.causes) causes.push_back({{"what", c.what}, {"evidence", c.evidence}});
  return {{"code", std::string(ErrorCodeName(d.code))},
          {"summary", d.summary},
          {"facts", facts},
          {"causes", causes},
          {"fixes", d.fixes}};
}

nlohmann::json ToJson(const Status& status) {
  if (status.ok()) return {{"ok", true}};
  return {{"ok", false}, {"error", ToJson(status.diagnosis())}};
}

}  // namespace vigil
