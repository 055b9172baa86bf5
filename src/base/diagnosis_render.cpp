#include "base/diagnosis_render.h"

#include <algorithm>

#include "base/printable.h"

namespace vigil {

Diagnosis PrintableDiagnosis(const Diagnosis& in) {
  Diagnosis d;
  d.code = in.code;
  d.summary = Printable(in.summary);
  for (const Fact& f : in.facts) d.facts.push_back({Printable(f.name), Printable(f.value, Newlines::kKeep)});
  // A cause or fix added twice on the way up (by two layers that each know
  // it) is said once.
  for (const Cause& c : in.causes) {
    Cause p{Printable(c.what), Printable(c.evidence)};
    bool seen = false;
    for (const Cause& e : d.causes) seen = seen || e.what == p.what;
    if (!seen) d.causes.push_back(std::move(p));
  }
  for (const std::string& f : in.fixes) {
    std::string p = Printable(f, Newlines::kKeep);
    if (std::find(d.fixes.begin(), d.fixes.end(), p) == d.fixes.end()) d.fixes.push_back(std::move(p));
  }
  return d;
}

std::string RenderText(const Diagnosis& diagnosis) {
  const Diagnosis d = PrintableDiagnosis(diagnosis);
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

nlohmann::json ToJson(const Diagnosis& diagnosis) {
  const Diagnosis d = PrintableDiagnosis(diagnosis);  // valid UTF-8, whatever a file held
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

namespace {
std::string StringField(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}
}  // namespace

Diagnosis DiagnosisFromJson(const nlohmann::json& j) {
  Diagnosis d;
  if (!j.is_object()) return d;
  const std::string code = StringField(j, "code");
  for (int c = static_cast<int>(ErrorCode::kInvalidModel); c <= static_cast<int>(ErrorCode::kInternal); ++c) {
    if (ErrorCodeName(static_cast<ErrorCode>(c)) == code) d.code = static_cast<ErrorCode>(c);
  }
  d.summary = StringField(j, "summary");
  if (auto f = j.find("facts"); f != j.end() && f->is_array()) {
    for (const auto& e : *f) d.facts.push_back({StringField(e, "name"), StringField(e, "value")});
  }
  if (auto c = j.find("causes"); c != j.end() && c->is_array()) {
    for (const auto& e : *c) d.causes.push_back({StringField(e, "what"), StringField(e, "evidence")});
  }
  if (auto x = j.find("fixes"); x != j.end() && x->is_array()) {
    for (const auto& e : *x) {
      if (e.is_string()) d.fixes.push_back(e.get<std::string>());
    }
  }
  return d;
}

nlohmann::json ToJson(const Status& status) {
  if (status.ok()) return {{"ok", true}};
  return {{"ok", false}, {"error", ToJson(status.diagnosis())}};
}

}  // namespace vigil
