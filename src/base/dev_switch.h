// Developer switches (docs/api.md, "Developer switches"): environment
// variables that turn a graph pass, a kernel variant or a first-run
// measurement off, for before/after measurements. They are not options:
// users set typed options. tests/docs checks that every one is listed.
#pragma once

#include <cstdlib>
#include <string_view>

namespace vigil {

// Whether the switch `name` is on: it is unless set to "0". Read on every
// call, so that a test can flip it between sessions.
inline bool DevSwitchOn(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr || std::string_view(v) != "0";
}

}  // namespace vigil
