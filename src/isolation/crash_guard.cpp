// The parent side of the crash guard (crash_guard.h): spawn, wait, and turn
// the child's death into a Diagnosis.
#include "isolation/crash_guard.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <new>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "doctor/crash/crash_report.h"
#include "doctor/probe/forked_child.h"
#include "doctor/probe/probe.h"
#include "doctor/rules/rules.h"
#include "isolation/isolation_wire.h"

extern char** environ;

namespace vigil::doctor {
namespace {

// A memfd moved above the fds the child's dup2s target, so the dup2 always
// makes a new descriptor without close-on-exec.
class SharedFile {
 public:
  static Result<SharedFile> Create(const char* name, size_t size) {
    int raw = memfd_create(name, MFD_CLOEXEC);
    if (raw < 0) return EnvironmentError("memfd_create failed: {}", std::strerror(errno));
    int fd = fcntl(raw, F_DUPFD_CLOEXEC, 16);
    close(raw);
    if (fd < 0) return EnvironmentError("cannot move the shared memory fd: {}", std::strerror(errno));
    SharedFile f(fd);
    if (size > 0 && ftruncate(fd, static_cast<off_t>(size)) != 0) {
      return EnvironmentError("cannot size the isolated run's shared memory ({} bytes): {}", size,
                              std::strerror(errno));
    }
    return f;
  }
  SharedFile(SharedFile&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  ~SharedFile() {
    if (fd_ >= 0) close(fd_);
  }
  int fd() const { return fd_; }

 private:
  explicit SharedFile(int fd) : fd_(fd) {}
  int fd_;
};

Status WriteAllTo(int fd, const std::string& bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = pwrite(fd, bytes.data() + done, bytes.size() - done, static_cast<off_t>(done));
    if (n <= 0) return EnvironmentError("cannot write the inputs to shared memory: {}", std::strerror(errno));
    done += static_cast<size_t>(n);
  }
  return Status::Ok();
}

std::string ReadAllFrom(int fd) {
  struct stat st {};
  if (fstat(fd, &st) != 0 || st.st_size <= 0) return {};
  std::string out(static_cast<size_t>(st.st_size), '\0');
  size_t done = 0;
  while (done < out.size()) {
    ssize_t n = pread(fd, out.data() + done, out.size() - done, static_cast<off_t>(done));
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  out.resize(done);
  return out;
}

// This process's environment with `extra` ("NAME=VALUE") replacing or added.
std::vector<std::string> ChildEnvironment(const std::vector<std::string>& extra) {
  std::vector<std::string> env;
  auto name_of = [](const std::string& kv) { return kv.substr(0, kv.find('=')); };
  for (char** e = environ; e && *e; ++e) {
    std::string kv = *e;
    bool replaced = false;
    for (const std::string& x : extra) replaced = replaced || name_of(x) == name_of(kv);
    if (!replaced) env.push_back(std::move(kv));
  }
  env.insert(env.end(), extra.begin(), extra.end());
  return env;
}

struct ChildEnd {
  bool timed_out = false;
  int exit_code = -1;
  int signal = 0;
};

Result<ChildEnd> SpawnAndWait(const IsolatedRunRequest& req, const std::vector<std::string>& extra_env,
                              const SharedFile& control, const SharedFile& inputs, const SharedFile& answer) {
  std::vector<std::string> args = req.worker_argv;
  args.push_back("--isolated-fds");
  args.push_back("3,4,5");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env = ChildEnvironment(extra_env);
  std::vector<char*> envp;
  for (std::string& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);

  // The child gets the descriptors as 3, 4, 5, 6, ... They are first
  // copied above that range here: a source that already is 3..N (a caller
  // with few open files) would otherwise be overwritten by an earlier dup2.
  std::vector<int> sources = {control.fd(), inputs.fd(), answer.fd()};
  sources.insert(sources.end(), req.pass_fds.begin(), req.pass_fds.end());
  std::vector<int> high;
  for (int fd : sources) {
    int h = fcntl(fd, F_DUPFD_CLOEXEC, 3 + static_cast<int>(sources.size()));
    if (h < 0) {
      for (int c : high) close(c);
      return EnvironmentError("cannot prepare the isolated worker's descriptors: {}", std::strerror(errno));
    }
    high.push_back(h);
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  for (size_t i = 0; i < high.size(); ++i) {
    posix_spawn_file_actions_adddup2(&actions, high[i], 3 + static_cast<int>(i));
  }
  pid_t pid = -1;
  int err = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  for (int c : high) close(c);
  if (err != 0) {
    return EnvironmentError("cannot start the isolated worker '{}': {}", args[0], std::strerror(err))
        .WithFix("the worker is vigil-worker, installed beside the CUDA module; check that it exists and is "
                 "executable");
  }
  ChildEnd end;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(req.timeout_ms);
  for (;;) {
    int status = 0;
    pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) {
      if (WIFEXITED(status)) end.exit_code = WEXITSTATUS(status);
      if (WIFSIGNALED(status)) end.signal = WTERMSIG(status);
      return end;
    }
    if (r < 0 && errno != EINTR) return InternalError("waitpid failed: {}", std::strerror(errno));
    if (req.timeout_ms > 0 && std::chrono::steady_clock::now() > deadline && !end.timed_out) {
      end.timed_out = true;
      kill(pid, SIGKILL);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

std::string NodeText(const IsolationControl& c) {
  if (c.node_index == -1) return "before the first node";
  const std::string torn = c.node_index == -2 ? " (recorded while it was being updated)" : "";
  return fmt::format("{} (#{}) on the {} backend{}", c.node_label, c.node_index < 0 ? c.nodes_started : c.node_index,
                     c.node_backend, torn);
}

std::string BaseName(const std::string& path) { return path.substr(path.rfind('/') + 1); }

// Whether `library` is named in LD_PRELOAD (by path or by file name), which
// the isolated child inherits from this process.
bool Preloaded(const std::string& library) {
  const char* preload = std::getenv("LD_PRELOAD");
  if (preload == nullptr) return false;
  std::string list = preload;
  for (char& ch : list) ch = ch == ':' ? ' ' : ch;
  std::istringstream entries(list);
  for (std::string entry; entries >> entry;) {
    if (entry == library || BaseName(entry) == BaseName(library)) return true;
  }
  return false;
}

bool InVigil(const FaultLocation& f) {
  const std::string base = BaseName(f.library);
  return base == "vigil" || base == "vigil-worker" || base.starts_with("libvigil") || base.starts_with("vigil_");
}

// Ranked causes for a crash, most likely first, from what is known: where
// the instruction was, what stage the child was in, what the doctor says.
void AddCrashCauses(Status& s, const IsolationControl& c, const std::optional<FaultLocation>& where, int signal) {
  const bool running = c.stage == static_cast<int32_t>(IsolationStage::kRunning);
  const std::string node = c.node_index != -1 ? std::string(c.node_label) : std::string("the node");
  if (signal == SIGKILL && !c.crash.crashed) {
    s.WithCause("the process was killed from outside: most often the kernel's out-of-memory killer",
                "SIGKILL cannot be caught, so there is no fault address")
        .WithFix("check `dmesg | grep -i -e oom -e killed` and the host memory the model needs");
    return;
  }
  // Each cause that can lead comes with its own fix, added right after it,
  // so that the first line pairs them.
  const std::string who = running ? node : std::string("the run");
  if (where && InVigil(*where)) {
    s.WithCause(fmt::format("{} died of {} in vigil's {} kernel: a bug in vigil", node, SignalName(signal),
                            c.node_backend),
                fmt::format("the faulting instruction is inside {}", where->library));
  } else if (where && where->nvidia) {
    s.WithCause(fmt::format("{} died of {} inside NVIDIA's {}, for this node's configuration (op, shapes, dtypes)",
                            who, SignalName(signal), BaseName(where->library)),
                "the faulting instruction is in that library; symbolise it with the commands above");
    s.WithFix("let cuDNN choose other engines (rerun with --layout nchw, or --deterministic), and report the crash "
              "to NVIDIA with the symbolised stack");
  } else if (where) {
    const bool preloaded = Preloaded(where->library);
    s.WithCause(fmt::format("{} died of {} inside {}, which is neither vigil nor NVIDIA's{}", who,
                            SignalName(signal), BaseName(where->library),
                            preloaded ? ": it was put in the process by LD_PRELOAD" : ""),
                fmt::format("the faulting instruction is inside {}", where->library));
    s.WithFix(preloaded ? fmt::format("run without {} in LD_PRELOAD", where->library)
                        : fmt::format("find what loads {} (a plugin, a hook, a library on LD_LIBRARY_PATH) and remove "
                                      "or update it",
                                      where->library));
  }
  if (running) {
    s.WithFact("inputs", "validated against the model before the run (dtype, shape and buffer size match), "
                         "which rules out a wrongly sized input buffer");
  } else {
    s.WithCause(fmt::format("a broken GPU stack: the crash happened while {}", IsolationStageName(c.stage)),
                "no node had run yet");
    s.WithFix("run `vigil doctor`: it loads each GPU library and runs cudnnCreate in a child, and names the one that "
              "fails");
  }
  if (signal == SIGABRT) {
    s.WithCause("an abort: an assertion or std::terminate inside the faulting library");
  }
  if (!where || where->nvidia || !running) {
    for (const Finding& f : RunRules(ProbeStack({}))) {
      if (f.severity == Severity::kInfo) continue;
      s.WithCause(f.summary, "doctor finding " + f.id);
      if (!f.fix.empty()) s.WithFix(f.fix);
    }
  }
  s.WithFix("shrink the model to the failing node: vigil reduce MODEL --check \"vigil run --isolate {model} {inputs}\"")
      .WithFix("run that node on the CPU backend to confirm the model itself is fine: vigil run MODEL --backend cpu");
}

Status DescribeDeath(const IsolationControl& c, const ChildEnd& end) {
  const std::string node = NodeText(c);
  if (end.timed_out) {
    return MakeError(ErrorCode::kCrashed, "the isolated run hung while {} ({}) and was killed",
                     IsolationStageName(c.stage), node)
        .WithFact("stage", IsolationStageName(c.stage))
        .WithFact("node", node)
        .WithFact("node inputs", c.node_inputs)
        .WithCause(std::string_view(c.node_backend) == "cpu"
                       ? fmt::format("an endless loop in vigil's cpu kernel for {}", c.node_label)
                       : std::string("a GPU that does not respond, or a deadlock in a library"),
                   "the child made no progress before the timeout")
        .WithFix("check `nvidia-smi` and dmesg for Xid errors");
  }
  std::optional<FaultLocation> where;
  std::vector<Fact> facts;
  if (c.crash.crashed) facts = CrashFacts(c.crash, &where);
  else facts.push_back({"signal", DescribeSignal(end.signal, 0)});
  std::string in = where ? fmt::format(", inside {} + 0x{:x}", where->library.substr(where->library.rfind('/') + 1),
                                       where->file_offset)
                         : std::string();
  Status s = MakeError(ErrorCode::kCrashed, "the isolated run died of {} while {}: {}{}", SignalName(end.signal),
                       IsolationStageName(c.stage), node, in);
  for (Fact& f : facts) s.WithFact(std::move(f.name), std::move(f.value));
  s.WithFact("stage", IsolationStageName(c.stage));
  if (c.node_index != -1) {
    s.WithFact("node", node).WithFact("node inputs", c.node_inputs);
  }
  s.WithFact("nodes started", std::to_string(c.nodes_started));
  AddCrashCauses(s, c, where, end.signal);
  return s;
}

struct Attempt {
  Result<std::vector<runtime::NamedTensor>> result = InternalError("not run");
  bool crashed_in_nvidia = false;
};

Attempt RunOnce(const IsolatedRunRequest& req, const std::vector<std::string>& extra_env) {
  Attempt a;
  auto control_file = SharedFile::Create("vigil-isolate-control", sizeof(IsolationControl));
  auto inputs_file = SharedFile::Create("vigil-isolate-inputs", 0);
  auto answer_file = SharedFile::Create("vigil-isolate-answer", 0);
  if (!control_file.ok()) return a.result = control_file.status(), a;
  if (!inputs_file.ok()) return a.result = inputs_file.status(), a;
  if (!answer_file.ok()) return a.result = answer_file.status(), a;
  void* p = mmap(nullptr, sizeof(IsolationControl), PROT_READ | PROT_WRITE, MAP_SHARED, control_file->fd(), 0);
  if (p == MAP_FAILED) return a.result = EnvironmentError("cannot map shared memory: {}", std::strerror(errno)), a;
  auto* control = new (p) IsolationControl();
  auto encoded = EncodeTensors(req.inputs);
  Status ready = encoded.ok() ? WriteAllTo(inputs_file->fd(), *encoded) : encoded.status();
  if (!ready.ok()) {
    munmap(p, sizeof(IsolationControl));
    return a.result = ready, a;
  }
  auto end = SpawnAndWait(req, extra_env, *control_file, *inputs_file, *answer_file);
  if (!end.ok()) {
    a.result = end.status();
  } else if (end->signal != 0 || end->timed_out) {
    a.result = DescribeDeath(*control, *end);
    if (control->crash.crashed) {
      auto where = LocateInMapsLine(control->crash.pc_maps_line, control->crash.pc);
      a.crashed_in_nvidia = where && where->nvidia;
    }
  } else {
    std::string answer = ReadAllFrom(answer_file->fd());
    if (answer.empty()) {
      a.result = MakeError(ErrorCode::kCrashed, "the isolated worker exited with code {} without an answer",
                           end->exit_code)
                     .WithFact("stage", IsolationStageName(control->stage))
                     .WithCause("the worker could not start (see its message above)");
    } else {
      a.result = DecodeAnswer({reinterpret_cast<const uint8_t*>(answer.data()), answer.size()});
    }
  }
  munmap(p, sizeof(IsolationControl));
  return a;
}

bool HasFact(const Status& s, std::string_view name, std::string_view value) {
  for (const Fact& f : s.diagnosis().facts) {
    if (f.name == name && f.value == value) return true;
  }
  return false;
}

bool EnvSet(const std::vector<std::string>& extra, const char* name) {
  for (const std::string& kv : extra) {
    if (kv.starts_with(std::string(name) + "=")) return true;
  }
  return std::getenv(name) != nullptr;
}

// The last `max_lines` lines of a text file (bounded to 16 KiB).
std::string FileTail(const std::string& path, size_t max_lines) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  std::string text = ReadAllFrom(fd);
  close(fd);
  if (text.size() > 16384) text = text.substr(text.size() - 16384);
  size_t at = text.size();
  for (size_t lines = 0; at > 0 && lines <= max_lines; ++lines) {
    size_t nl = text.rfind('\n', at - 1);
    if (nl == std::string::npos) return text;
    at = nl;
  }
  return text.substr(at + 1);
}

}  // namespace

Result<std::vector<runtime::NamedTensor>> RunIsolated(const IsolatedRunRequest& req) {
  if (req.worker_argv.empty()) return InternalError("RunIsolated needs a worker command");
  Attempt first = RunOnce(req, req.extra_env);
  if (first.result.ok() || !req.rerun_to_localise) return std::move(first.result);
  Status status = first.result.status();
  auto note = [&](std::string_view text) {
    if (req.note) req.note(text);
  };
  if (status.code() == ErrorCode::kDeviceFault && !EnvSet(req.extra_env, "VIGIL_CUDA_SYNC")) {
    note("device fault: running again with VIGIL_CUDA_SYNC=1 to find the node that faulted");
    std::vector<std::string> env = req.extra_env;
    env.push_back("VIGIL_CUDA_SYNC=1");
    Attempt again = RunOnce(req, env);
    if (!again.result.ok()) {
      Status localised = again.result.status();
      localised.WithFact("first run", status.summary())
          .WithFact("localised by", "a second isolated run with VIGIL_CUDA_SYNC=1 (a synchronisation after "
                                    "every node, so the fault is reported by the node that caused it)");
      return localised;
    }
    status.WithFact("rerun", "a second run with VIGIL_CUDA_SYNC=1 succeeded: the fault is intermittent")
        .WithCause("faulty GPU hardware or a race", "the same inputs ran cleanly the second time");
    return status;
  }
  const bool cudnn_failure = HasFact(status, "library", "cuDNN");
  if ((cudnn_failure || first.crashed_in_nvidia) && !EnvSet(req.extra_env, "CUDNN_LOGDEST_DBG")) {
    const std::string log = fmt::format("/tmp/vigil-cudnn-{}.log", getpid());
    note(fmt::format("running again with cuDNN's API log on ({})", log));
    std::vector<std::string> env = req.extra_env;
    env.push_back("CUDNN_LOGLEVEL_DBG=3");
    env.push_back("CUDNN_LOGDEST_DBG=" + log);
    (void)RunOnce(req, env);  // what matters is the log it leaves
    std::string tail = FileTail(log, 40);
    if (!tail.empty()) {
      status.WithFact("cudnn log file", log).WithFact("cudnn log (tail of the rerun)", tail);
    } else {
      status.WithFact("cudnn log", fmt::format("the rerun wrote nothing to {}", log));
    }
  }
  return status;
}

}  // namespace vigil::doctor
