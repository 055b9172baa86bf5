// The user's check command of `vigil reduce --check CMD`: placeholders
// expanded, run with /bin/sh -c in its own process group, with a timeout,
// and judged as failing or not.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "base/status.h"

namespace vigil::cli {

struct CheckSpec {
  std::string command;     // with {model}, {inputs}, {dir}
  std::string fail_regex;  // empty: fails = non-zero exit, a signal, or a timeout
  double timeout_s = 60;
};

struct CheckOutcome {
  bool fails = false;
  int exit_code = -1;  // when it exited
  int signal = 0;      // when a signal ended it
  bool timed_out = false;
  double seconds = 0;
  std::string output;  // stdout and stderr together (the last 64 KiB)
  std::string how;     // "exit 1", "SIGSEGV", "timed out after 60 s", "matched --fail-regex"
};

// InvalidInput when the command is empty or lacks {model}, or the regex does
// not compile (the caller reports these as usage errors).
Status ValidateCheckSpec(const CheckSpec& spec);

// 'text' quoted for /bin/sh: single quotes, with ' written as '\''.
std::string ShellQuote(const std::string& text);

// The command with {model} and {dir} replaced by quoted paths and {inputs}
// by `--input 'NAME=PATH' ...` for each (name, path).
std::string ExpandCheck(const std::string& command, const std::string& model_path,
                        const std::vector<std::pair<std::string, std::string>>& inputs, const std::string& dir);

// Runs the expanded command; on timeout the whole process group is killed.
CheckOutcome RunCheck(const CheckSpec& spec, const std::string& expanded);

}  // namespace vigil::cli
