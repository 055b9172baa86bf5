// What the tooling commands (compare, reduce, doctor) share. They need what
// the public API does not offer (every intermediate value, subgraphs), so
// they use the library's internal
// layer, but sessions are still assembled by the library
// (api/session_factory.h), never here.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "api/session_config.h"
#include "base/status.h"
#include "command.h"
#include "runtime/input_binding.h"
#include "runtime/session.h"
#include "runtime/tensor.h"

namespace vigil::cli {

// The library's session options for a command line's backend choice: those
// the user commands pass (ToSessionOptions), through the C API's conversion.
Result<api::SessionConfig> ToSessionConfig(const BackendChoice& choice);

// Reads and validates MODEL and creates a session on the chosen backend.
Result<std::unique_ptr<runtime::Session>> LoadSession(const std::string& model_path, const BackendChoice& choice);
Result<std::unique_ptr<runtime::Session>> LoadSession(const std::string& model_path, const std::string& backend);

// Input files given as `--input NAME=FILE` or `--input FILE` (bound by
// position), read and described as bindings; `tensors` keeps their data alive.
struct InputFiles {
  std::vector<runtime::Tensor> tensors;
  std::vector<runtime::InputBinding> bindings;
};
Result<InputFiles> ReadInputFiles(const std::vector<std::string>& specs);

// Prints a failing status (text on stderr, or JSON on stdout) and returns its
// exit code.
int ReportFailure(const Status& status, bool json);

}  // namespace vigil::cli
