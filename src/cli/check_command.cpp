#include "cli/check_command.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <regex>

#include <fmt/format.h>

#include "doctor/probe/forked_child.h"

namespace vigil::cli {
namespace {

constexpr size_t kMaxOutput = 64 * 1024;

void ReplaceAll(std::string& text, const std::string& from, const std::string& to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
}

// Reads the child's output until EOF or the deadline (false on timeout),
// keeping the last kMaxOutput bytes.
bool Drain(int fd, std::chrono::steady_clock::time_point deadline, std::string& out) {
  char buffer[4096];
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd, POLLIN, 0};
    int r = poll(&p, 1, static_cast<int>(left.count()));
    if (r < 0 && errno == EINTR) continue;
    if (r == 0) return false;
    ssize_t n = read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return true;
    out.append(buffer, static_cast<size_t>(n));
    if (out.size() > 2 * kMaxOutput) out.erase(0, out.size() - kMaxOutput);
  }
}

}  // namespace

Status ValidateCheckSpec(const CheckSpec& spec) {
  if (spec.command.find_first_not_of(" \t\n") == std::string::npos) {
    return InvalidInputError("--check is empty")
        .WithFix("give the command that fails on the model, e.g. --check \"vigil run {model} {inputs}\"");
  }
  if (spec.command.find("{model}") == std::string::npos) {
    return InvalidInputError("--check '{}' does not contain {{model}}, so it would not look at the candidate models",
                             spec.command)
        .WithFix("put {model} where the model path goes, e.g. --check \"vigil run {model} {inputs}\"");
  }
  if (!spec.fail_regex.empty()) {
    try {
      std::regex re(spec.fail_regex);
    } catch (const std::regex_error& e) {
      return InvalidInputError("--fail-regex '{}' is not a valid regular expression: {}", spec.fail_regex, e.what());
    }
  }
  if (!(spec.timeout_s > 0)) return InvalidInputError("--timeout must be a positive number of seconds");
  return Status::Ok();
}

std::string ShellQuote(const std::string& text) {
  std::string quoted = "'";
  for (char c : text) {
    if (c == '\'') quoted += "'\\''";
    else quoted += c;
  }
  return quoted + "'";
}

std::string ExpandCheck(const std::string& command, const std::string& model_path,
                        const std::vector<std::pair<std::string, std::string>>& inputs, const std::string& dir) {
  std::string args;
  for (const auto& [name, path] : inputs) {
    args += fmt::format("{}--input {}", args.empty() ? "" : " ", ShellQuote(name + "=" + path));
  }
  std::string out = command;
  // {inputs} last: a value name could itself contain "{model}".
  ReplaceAll(out, "{model}", ShellQuote(model_path));
  ReplaceAll(out, "{dir}", ShellQuote(dir));
  ReplaceAll(out, "{inputs}", args);
  return out;
}

CheckOutcome RunCheck(const CheckSpec& spec, const std::string& expanded) {
  CheckOutcome o;
  const auto start = std::chrono::steady_clock::now();
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    o.how = std::string("could not start: pipe: ") + std::strerror(errno);
    return o;
  }
  pid_t pid = fork();
  if (pid < 0) {
    o.how = std::string("could not start: fork: ") + std::strerror(errno);
    close(fds[0]);
    close(fds[1]);
    return o;
  }
  if (pid == 0) {
    setpgid(0, 0);  // its own group, so a timeout kills everything it started
    int null_fd = open("/dev/null", O_RDONLY);
    if (null_fd >= 0) dup2(null_fd, 0);
    dup2(fds[1], 1);
    dup2(fds[1], 2);
    execl("/bin/sh", "sh", "-c", expanded.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  setpgid(pid, pid);  // also here: whichever of the two runs first
  close(fds[1]);
  auto deadline = start + std::chrono::milliseconds(static_cast<int64_t>(spec.timeout_s * 1000));
  o.timed_out = !Drain(fds[0], deadline, o.output);
  if (o.timed_out) kill(-pid, SIGKILL);
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (o.timed_out) kill(-pid, SIGKILL);  // stragglers that outlived the shell
  o.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (o.output.size() > kMaxOutput) o.output.erase(0, o.output.size() - kMaxOutput);
  if (WIFSIGNALED(status) && !o.timed_out) o.signal = WTERMSIG(status);
  if (WIFEXITED(status)) o.exit_code = WEXITSTATUS(status);

  if (o.timed_out) o.how = fmt::format("timed out after {:g} s", spec.timeout_s);
  else if (o.signal) o.how = doctor::SignalName(o.signal);
  else o.how = fmt::format("exit {}", o.exit_code);
  if (spec.fail_regex.empty()) {
    o.fails = o.timed_out || o.signal != 0 || o.exit_code != 0;
  } else {
    o.fails = std::regex_search(o.output, std::regex(spec.fail_regex));
    o.how += o.fails ? ", matched --fail-regex" : ", no match for --fail-regex";
  }
  return o;
}

}  // namespace vigil::cli
