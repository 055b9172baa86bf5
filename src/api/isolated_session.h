// Sessions created with `isolate`: every run happens in a child process, the
// vigil-worker executable (worker_main.cpp), through the crash guard
// (src/isolation), so that a crash inside cuDNN, the driver or a kernel
// becomes a VIGIL_ERROR_CRASHED status and the caller's process lives on.
//
// The parent reads and validates the model and checks every input against it
// (dtype, shape, byte size, with the usual cause hints) before any child sees
// data; it never loads a backend. The child reads the model again, assembles
// the session from the same SessionConfig and runs it. At creation one child
// loads the session without running it, so that creation fails where an
// in-process session would, with the same diagnosis, and the backends that
// run are known.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "api/session_config.h"
#include "base/status.h"
#include "ir/graph.h"
#include "runtime/input_binding.h"
#include "runtime/session.h"

namespace vigil::api {

struct IsolatedModel {
  std::string model_path;  // "" for a model from memory (then model_fd)
  int model_fd = -1;       // a memfd holding the bytes of a model from memory
  SessionConfig config;
  std::string worker_path;
  runtime::ModelInputs inputs;
  std::vector<ir::ValueInfo> outputs;
  std::vector<std::string> backends;  // what the loading child reported

  IsolatedModel() = default;
  IsolatedModel(const IsolatedModel&) = delete;
  IsolatedModel& operator=(const IsolatedModel&) = delete;
  ~IsolatedModel();
};

// Finds the worker, keeps the model (its path, or its bytes in a memfd), and
// loads it once in a child.
Result<std::shared_ptr<IsolatedModel>> CreateIsolated(const ir::Model& model, bool from_memory,
                                                      const SessionConfig& config);

// Checks the inputs here, then runs them in a new child. Host memory only.
Result<std::vector<runtime::NamedTensor>> RunIsolatedSession(const IsolatedModel& model,
                                                             std::vector<runtime::InputBinding> bindings);

// Where vigil-worker is looked for: next to libvigil.so (and in ./vigil/,
// ../lib/vigil/), next to the executable, then the build tree.
std::vector<std::string> WorkerCandidates();

// The SessionConfig as the parent hands it to the worker (JSON), and back.
std::string EncodeConfig(const SessionConfig& config);
Result<SessionConfig> DecodeConfig(std::string_view json);

}  // namespace vigil::api
