#include "cli/command.h"
namespace vigil::cli {
Command AddInspectCommand(CLI::App& parent) {
  CLI::App* sub = parent.add_subcommand("inspect", "Describe a model");
  return {sub, [] { return 3; }};
}
}  // namespace vigil::cli
