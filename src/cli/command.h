// The `vigil` command: each subcommand lives in its own file and is added to
// the app by an Add*Command function listed in main.cpp (no self-registration).
//
// Exit codes, for every command: 0 success, 1 a diagnosed problem with the
// model, input or environment, 2 usage error, 3 internal error.
#pragma once

#include <functional>

#include <CLI/CLI.hpp>

#include "base/status.h"

namespace vigil::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitDiagnosed = 1;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitInternal = 3;

// Runs a parsed subcommand and returns the exit code.
using CommandRun = std::function<int()>;

struct Command {
  CLI::App* app = nullptr;  // the subcommand, owned by the parent app
  CommandRun run;
};

Command AddInspectCommand(CLI::App& parent);
Command AddDoctorCommand(CLI::App& parent);

// Prints a failing status (text on stderr, or JSON on stdout) and returns its
// exit code.
int ReportFailure(const Status& status, bool json);

}  // namespace vigil::cli
