// The live check: cudnnCreate, then a tiny legacy-API convolution (1x1x3x3
// input, 3x3 filter) on the GPU, all through dlsym, in a child process that
// re-executes this program (a clean process: no inherited CUDA state), with
// a timeout. A crash or hang there becomes a finding naming the signal, the
// faulting library and its build-id, not our crash.
#pragma once

#include <string>
#include <vector>

#include "doctor/probe/snapshot.h"
#include "doctor/rules/finding.h"

namespace vigil::doctor {

struct LiveCheckOptions {
  // The child is `exe child_args... --cudnn P --cudart P --result-fd 3`.
  std::string exe = "/proc/self/exe";
  std::vector<std::string> child_args = {"doctor", "--child-probe"};
  int timeout_ms = 20000;
};

struct LiveCheckResult {
  bool ran = false;
  std::string summary;            // one line for the report
  std::vector<Finding> findings;  // "live.*"
};

// Runs the check when the snapshot has cuDNN, the CUDA runtime, a driver and
// a GPU; otherwise returns ran=false with the reason in `summary`.
LiveCheckResult RunLiveCheck(const StackSnapshot& snapshot, const LiveCheckOptions& options = {});

// What the child is told.
struct LiveCheckChildArgs {
  std::string cudnn_path;
  std::string cudart_path;
  int result_fd = -1;
};

// The child's side (`vigil doctor --child-probe ...`): installs a crash
// handler, runs the check, writes its result lines to `result_fd`. Returns
// the child's exit code.
int RunLiveCheckChild(const LiveCheckChildArgs& args);

// Interprets the child's result lines (exposed for tests).
LiveCheckResult InterpretLiveCheck(const std::string& output, const StackSnapshot& snapshot, bool timed_out,
                                   int signal);

}  // namespace vigil::doctor
