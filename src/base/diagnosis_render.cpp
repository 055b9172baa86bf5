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

namespace {

std::string FirstLine(const std::string& text) { return text.substr(0, text.find('\n')); }

// Headline of a diagnosis already made printable.
std::string HeadlineOf(const Diagnosis& d) {
  std::string line = d.causes.empty() || d.causes.front().what.empty() ? d.summary : d.causes.front().what;
  if (!d.fixes.empty() && !FirstLine(d.fixes.front()).empty()) line += " — fix: " + FirstLine(d.fixes.front());
  return line;
}

bool CauseLeads(const Diagnosis& d) { return !d.causes.empty() && !d.causes.front().what.empty(); }

}  // namespace

std::string Headline(const Diagnosis& diagnosis) { return HeadlineOf(PrintableDiagnosis(diagnosis)); }

std::string RenderText(const Diagnosis& diagnosis) {
  const Diagnosis d = PrintableDiagnosis(diagnosis);
  // The headline says cause 1 and the first line of fix 1; nothing below
  // says them again.
  std::string out = fmt::format("error [{}]: {}\n", ErrorCodeName(d.code), HeadlineOf(d));
  if (!d.fixes.empty()) {
    const std::string& fix = d.fixes.front();
    for (size_t at = fix.find('\n'); at != std::string::npos;) {
      const size_t next = fix.find('\n', at + 1);
      out += fmt::format("    {}\n", fix.substr(at + 1, next == std::string::npos ? next : next - at - 1));
      at = next;
    }
  }
  if (CauseLeads(d)) {
    out += fmt::format("  symptom: {}\n", d.summary);
    if (!d.causes.front().evidence.empty()) out += fmt::format("  evidence: {}\n", d.causes.front().evidence);
  }
  for (const Fact& f : d.facts) out += fmt::format("  {}: {}\n", f.name, f.value);
  if (d.causes.size() > 1) {
    out += "other possible causes:\n";
    for (size_t i = 1; i < d.causes.size(); ++i) {
      out += fmt::format("  {}. {}", i + 1, d.causes[i].what);
      if (!d.causes[i].evidence.empty()) out += fmt::format(" (evidence: {})", d.causes[i].evidence);
      out += "\n";
    }
  }
  if (d.fixes.size() > 1) {
    out += "other fixes:\n";
    for (size_t i = 1; i < d.fixes.size(); ++i) out += fmt::format("  - {}\n", d.fixes[i]);
  }
  return out;
}

nlohmann::ordered_json ToJson(const Diagnosis& diagnosis) {
  const Diagnosis d = PrintableDiagnosis(diagnosis);  // valid UTF-8, whatever a file held
  nlohmann::ordered_json facts = nlohmann::ordered_json::array();
  for (const Fact& f : d.facts) facts.push_back({{"name", f.name}, {"value", f.value}});
  nlohmann::ordered_json causes = nlohmann::ordered_json::array();
  for (const Cause& c : d.causes) causes.push_back({{"what", c.what}, {"evidence", c.evidence}});
  return {{"headline", HeadlineOf(d)},
          {"code", std::string(ErrorCodeName(d.code))},
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

nlohmann::ordered_json ToJson(const Status& status) {
  if (status.ok()) return {{"ok", true}};
  return {{"ok", false}, {"error", ToJson(status.diagnosis())}};
}

}  // namespace vigil
