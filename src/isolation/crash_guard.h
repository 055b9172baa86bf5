// The crash guard: runs a session in a child process, so that a crash inside
// cuDNN, the driver or a kernel becomes a report instead of a dead program.
//
// The parent never loads the model's backends; it spawns a worker
// (vigil-worker, src/api/worker_main.cpp, started by an isolated session of
// the library: api/isolated_session.h) that calls ServeIsolatedRun. Inputs go to the child, and outputs (or the failing
// Status) come back, through memfds; a shared control block tells the parent
// what the child was doing. When the child dies, the Status names the
// signal, the faulting library + offset + build-id with the commands to
// symbolise it, the node that was executing and its input shapes, and the
// likely causes ranked from what is known (see docs/isolate.md).
//
// A layer above the runtime and the doctor (src/isolation): it uses the
// doctor's crash handler, crash report, probe and rules; the doctor never
// includes it. Its names are still in vigil::doctor.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "runtime/session.h"

namespace vigil::doctor {

struct IsolatedRunRequest {
  // The worker command; "--isolated-fds", "3,4,5" is appended. argv[0] is
  // the executable's path (e.g. /proc/self/exe).
  std::vector<std::string> worker_argv;
  // Descriptors the child gets as 6, 7, ... (a model held in a memfd).
  std::vector<int> pass_fds;
  // "NAME=VALUE" added to (or replacing in) this process's environment.
  std::vector<std::string> extra_env;
  // Host tensors, bound by name (an empty name binds by position).
  std::vector<runtime::NamedTensor> inputs;
  // Kill the child after this long (0: no limit); a hang is then reported
  // with the node it hung in.
  int timeout_ms = 0;
  // After a device fault, rerun once with VIGIL_CUDA_SYNC=1 to find the node
  // that faulted; after a cuDNN failure or a crash in an NVIDIA library,
  // rerun once with cuDNN's API log on and attach its tail.
  bool rerun_to_localise = true;
  // Progress and rerun notes for people (stderr in the CLI); may be empty.
  std::function<void(std::string_view)> note;
};

// Runs the worker and returns its outputs, its Status, or the diagnosis of
// its death (ErrorCode::kCrashed).
Result<std::vector<runtime::NamedTensor>> RunIsolated(const IsolatedRunRequest& request);

// The worker's side.
struct IsolatedChildFds {
  int control = -1;
  int inputs = -1;
  int answer = -1;
};
// "3,4,5" -> fds; nothing for anything else.
std::optional<IsolatedChildFds> ParseIsolatedChildFds(std::string_view text);

using SessionLoader = std::function<Result<std::unique_ptr<runtime::Session>>()>;

enum class ServeMode {
  kRun,       // load, run the inputs, answer with the outputs
  kLoadOnly,  // load only; answer with one uint8 tensor "backends": the
              // backends that run a node, comma-separated, in session order
};

// Installs the crash handler, reads the inputs, loads the session with
// `load`, runs it while recording each node in the control block, and
// writes the outputs or the failing Status. Returns the exit code (0 ok,
// 1 failed with a Status, 3 the parent's shared memory is unusable).
int ServeIsolatedRun(const IsolatedChildFds& fds, const SessionLoader& load, ServeMode mode = ServeMode::kRun);

}  // namespace vigil::doctor
