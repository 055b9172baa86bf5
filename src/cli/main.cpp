// Entry point of the `vigil` command.
#include <cstdio>
#include <new>
#include <exception>
#include <string>
#include <vector>

#include "cli/command.h"
#include "cli/terminal_output.h"

namespace {

int Main(int argc, char** argv) {
  using namespace vigil::cli;
  CLI::App app{
      "vigil: an ONNX inference runtime for NVIDIA GPUs in which every failure is a diagnosis.\n"
      "Exit codes: 0 success, 1 diagnosed problem (model, input or environment), 2 usage error,\n"
      "3 internal error.",
      "vigil"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "vigil " VIGIL_VERSION);

  const std::vector<Command> commands = {
      AddInspectCommand(app),
      AddDoctorCommand(app),
      AddRunCommand(app),
      AddCheckCommand(app),
      AddBenchCommand(app),
      AddCompareCommand(app),
      AddReduceCommand(app),
  };

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);  // prints help/version to stdout, errors to stderr
    return code == 0 ? kExitOk : kExitUsage;
  }
  for (const Command& command : commands) {
    if (command.app->parsed()) return command.run();
  }
  std::fprintf(stderr, "vigil: no command given; see vigil --help\n");
  return kExitUsage;
}

}  // namespace

int main(int argc, char** argv) {
  vigil::cli::FilterStandardStreams();  // no byte from a file reaches the terminal raw
  try {
    return Main(argc, argv);
  } catch (const std::bad_alloc&) {
    // Diagnosed where vigil knows the size; this is what is left.
    std::fprintf(stderr,
                 "error [OutOfMemory]: the host ran out of memory — fix: use smaller inputs (batch, --dim) or a "
                 "machine with more memory\n  symptom: an allocation failed (std::bad_alloc)\n");
    return vigil::cli::kExitDiagnosed;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "vigil: internal error: %s\n", e.what());
  } catch (...) {
    std::fprintf(stderr, "vigil: internal error\n");
  }
  return vigil::cli::kExitInternal;
}
