// Replaced by the doctor (issue 4).
#include "cli/command.h"

namespace vigil::cli {

Command AddDoctorCommand(CLI::App& parent) {
  CLI::App* sub = parent.add_subcommand("doctor", "Check the GPU software stack");
  return {sub, [] { return ReportFailure(UnsupportedError("doctor is not built yet"), false); }};
}

}  // namespace vigil::cli
