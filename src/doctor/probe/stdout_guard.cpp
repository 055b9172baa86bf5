#include "doctor/probe/stdout_guard.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

namespace vigil::doctor {
namespace {

void Dup2Retrying(int from, int to) {
  while (dup2(from, to) < 0 && errno == EINTR) {
  }
}

}  // namespace

void SendStdoutToStderr() {
  std::fflush(stdout);
  Dup2Retrying(STDERR_FILENO, STDOUT_FILENO);
}

StdoutToStderr::StdoutToStderr() {
  std::fflush(stdout);
  saved_ = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
  if (saved_ >= 0) Dup2Retrying(STDERR_FILENO, STDOUT_FILENO);
}

StdoutToStderr::~StdoutToStderr() {
  if (saved_ < 0) return;
  std::fflush(stdout);  // what libraries left in stdio's buffer goes to stderr too
  Dup2Retrying(saved_, STDOUT_FILENO);
  close(saved_);
}

}  // namespace vigil::doctor
