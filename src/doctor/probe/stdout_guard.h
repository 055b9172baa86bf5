// Keeps library output off stdout while the doctor loads libraries.
//
// cuDNN writes its API log to stdout when CUDNN_LOGDEST_DBG=stdout, and any
// library may print while it loads; `vigil doctor --json` must still print
// nothing but its JSON there. The probe therefore points file descriptor 1 at
// stderr (where such output stays visible) for as long as libraries run, and
// puts it back before the report is printed.
#pragma once

namespace vigil::doctor {

// For a forked child that exists to probe: from now on, fd 1 is stderr.
// Nothing is restored (the child _exits).
void SendStdoutToStderr();

// The same for a scope of this process: flushes stdout, points fd 1 at
// stderr, and on destruction flushes what libraries buffered (to stderr) and
// restores fd 1. Does nothing where fd 1 cannot be saved.
class StdoutToStderr {
 public:
  StdoutToStderr();
  ~StdoutToStderr();
  StdoutToStderr(const StdoutToStderr&) = delete;
  StdoutToStderr& operator=(const StdoutToStderr&) = delete;

 private:
  int saved_ = -1;
};

}  // namespace vigil::doctor
