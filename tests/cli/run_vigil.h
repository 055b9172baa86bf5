// Runs the built `vigil` binary and captures its exit status and output.
#pragma once

#include <string>
#include <vector>

namespace vigil::testing {

struct CommandResult {
  int exit_code = -1;   // valid when !signaled
  bool signaled = false;
  int signal = 0;
  std::string out;
  std::string err;
  long max_rss_kb = 0;  // peak resident memory of the child
};

// Runs VIGIL_BINARY with `args` (no shell), stdin from /dev/null.
CommandResult RunVigil(const std::vector<std::string>& args);

}  // namespace vigil::testing
