// Runs a function in a forked child and collects what it writes to a pipe,
// with a timeout. The doctor uses it so that loading a broken library can
// crash or hang only the child.
#pragma once

#include <functional>
#include <string>

namespace vigil::doctor {

struct ChildOutcome {
  std::string output;     // everything the child wrote to its pipe
  bool timed_out = false; // killed after the timeout
  int exit_code = -1;     // when it exited normally
  int signal = 0;         // when a signal ended it
};

// Forks; the child runs `body(fd)`, which writes its result to `fd`, and
// then _exit(0)s. The parent reads until EOF or `timeout_ms`, then reaps the
// child (killing it on timeout). Never throws; a failed fork is reported as
// exit_code -1 with an explanation in `output`.
ChildOutcome RunInForkedChild(const std::function<void(int fd)>& body, int timeout_ms);

// Writes all of `text` to `fd`, retrying on EINTR and short writes.
void WriteAll(int fd, const std::string& text);

// "SIGSEGV" for 11, "signal 42" for unknown ones.
std::string SignalName(int signal);

// Reads the pipe `fd` until EOF or the deadline; returns false on timeout.
bool ReadUntilEof(int fd, int timeout_ms, std::string& out);

}  // namespace vigil::doctor
