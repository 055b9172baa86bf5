// Assembles a session from a model and a SessionConfig: reads and validates
// the model, chooses the backends, loads the CUDA module (through the
// doctor's loader, so its failures come with the doctor's findings), adds the
// CPU fallback, and creates the runtime session. The one place sessions are
// put together: the C API, the CLI's tooling commands and the tests use it.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "api/session_config.h"
#include "base/status.h"
#include "ir/graph.h"
#include "runtime/session.h"

namespace vigil::api {

struct AssembledSession {
  std::unique_ptr<runtime::Session> session;
  std::vector<std::string> backends;  // backends that run at least one node, in the order asked
  std::string cuda_module_path;       // "" when the CUDA module was not loaded
  std::string cuda_description;       // "CUDA runtime 13.0, cuDNN 9.14.0, ..."
};

// Checks the options themselves (before anything is loaded): unknown
// combinations, negative values, threads.
Status ValidateConfig(const SessionConfig& config);

// Reads and validates an ONNX model file (a failure names the file).
Result<ir::Model> ReadModelFile(const std::string& path);
// An anonymous in-memory file (close-on-exec) holding a copy of `bytes`: the
// owner of a model from memory, mapped by ReadModelBytes and handed to the
// isolated worker.
Result<int> ModelBytesInMemfd(std::span<const uint8_t> bytes);
// The same from bytes in memory (copied).
Result<ir::Model> ReadModelBytes(const void* data, size_t size);

Result<AssembledSession> AssembleSession(ir::Model model, const SessionConfig& config);
Result<AssembledSession> AssembleSession(const std::string& model_path, const SessionConfig& config);

}  // namespace vigil::api
