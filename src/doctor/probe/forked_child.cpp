#include "doctor/probe/forked_child.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

namespace vigil::doctor {

void WriteAll(int fd, const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}

std::string SignalName(int signal) {
  switch (signal) {
    case SIGSEGV: return "SIGSEGV";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGILL: return "SIGILL";
    case SIGABRT: return "SIGABRT";
    case SIGKILL: return "SIGKILL";
    case SIGTERM: return "SIGTERM";
    case SIGTRAP: return "SIGTRAP";
    default: return "signal " + std::to_string(signal);
  }
}

bool ReadUntilEof(int fd, int timeout_ms, std::string& out) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  char buffer[4096];
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd, POLLIN, 0};
    int r = poll(&p, 1, static_cast<int>(left.count()));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return r == 0 ? false : true;
    ssize_t n = read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return true;  // EOF (or error: nothing more will come)
    out.append(buffer, static_cast<size_t>(n));
  }
}

ChildOutcome RunInForkedChild(const std::function<void(int fd)>& body, int timeout_ms) {
  ChildOutcome outcome;
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    outcome.output = std::string("pipe failed: ") + std::strerror(errno);
    return outcome;
  }
  pid_t pid = fork();
  if (pid < 0) {
    outcome.output = std::string("fork failed: ") + std::strerror(errno);
    close(fds[0]);
    close(fds[1]);
    return outcome;
  }
  if (pid == 0) {
    close(fds[0]);
    body(fds[1]);
    // _exit: no atexit handlers or static destructors, which must not run
    // cuDNN/CUDA teardown in a child (seed 004, initialisation and termination).
    _exit(0);
  }
  close(fds[1]);
  outcome.timed_out = !ReadUntilEof(fds[0], timeout_ms, outcome.output);
  close(fds[0]);
  if (outcome.timed_out) kill(pid, SIGKILL);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status)) outcome.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status) && !outcome.timed_out) outcome.signal = WTERMSIG(status);
  return outcome;
}

}  // namespace vigil::doctor
