// The live check's parent side: spawns the child, reads its result lines,
// and turns them into findings.
#include "doctor/live/live_check.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <sstream>

#include "doctor/crash/crash_report.h"
#include "doctor/errors/cuda_errors.h"
#include "doctor/probe/forked_child.h"
#include "doctor/resolver/elf_file.h"
#include "doctor/rules/rules_common.h"

extern char** environ;

namespace vigil::doctor {
namespace {

constexpr int kChildResultFd = 3;
// CUDNN_STATUS_NOT_SUPPORTED_SUBLIBRARY_UNAVAILABLE (cudnn_graph.h).
constexpr int kSubLibraryUnavailable = 3009;

struct ChildLines {
  std::string last_stage;
  std::string failed_call, status_name, last_error, missing, load_fail, result;
  int status = 0;
  bool created = false, ok = false;
  std::string signal_line, maps_line;
};

ChildLines Parse(const std::string& output) {
  ChildLines c;
  std::istringstream in(output);
  std::string line;
  while (std::getline(in, line)) {
    auto rest = [&](size_t n) { return line.size() > n ? line.substr(n) : std::string(); };
    if (line.starts_with("stage ")) c.last_stage = rest(6);
    else if (line.starts_with("status ")) {
      std::istringstream fields(rest(7));
      fields >> c.failed_call >> c.status >> c.status_name;
    } else if (line.starts_with("lasterror ")) c.last_error = rest(10);
    else if (line.starts_with("missing ")) c.missing = rest(8);
    else if (line.starts_with("loadfail ")) c.load_fail = rest(9);
    else if (line.starts_with("cuda ")) c.missing = rest(5);
    else if (line.starts_with("result ")) c.result = rest(7);
    else if (line == "created") c.created = true;
    else if (line == "ok") c.ok = true;
    else if (line.starts_with("signal ")) c.signal_line = rest(7);
    else if (line.starts_with("maps ")) c.maps_line = rest(5);
  }
  return c;
}

// "7f..-7f.. r-xp 00012000 08:01 1234 /usr/lib/libcudnn_graph.so.9" -> the
// library path and the offset of `pc` within the file. Returns the faulting
// library's path ("" when unknown).
std::string AddFaultLocation(const ChildLines& c, std::vector<Fact>& evidence) {
  std::istringstream sig(c.signal_line);
  int number = 0;
  std::string pc_hex, address_hex;
  sig >> number >> pc_hex >> address_hex;
  // The address the instruction touched (si_addr) is the fault address; the
  // instruction's own address locates the library.
  if (!address_hex.empty()) evidence.push_back({"fault address", "0x" + address_hex});
  evidence.push_back({"instruction address", "0x" + pc_hex});
  uint64_t pc = 0;
  if (std::sscanf(pc_hex.c_str(), "%" SCNx64, &pc) != 1) return {};
  std::optional<FaultLocation> f = LocateInMapsLine(c.maps_line, pc);
  if (!f) return {};
  evidence.push_back({"faulting library", f->library + fmt::format(" + 0x{:x}", f->file_offset)});
  if (!f->build_id.empty()) evidence.push_back({"build-id", f->build_id});
  for (size_t i = 0; i < f->symbolise.size(); ++i) {
    evidence.push_back({fmt::format("symbolise, step {}", i + 1), f->symbolise[i]});
  }
  return f->library;
}

// The translated diagnosis as a finding's evidence: the phase, then the
// ranked causes with their evidence.
void AddTranslation(const Diagnosis& d, std::vector<Fact>& evidence) {
  for (const Fact& f : d.facts) {
    if (f.name == "phase") evidence.push_back(f);
  }
  for (size_t i = 0; i < d.causes.size(); ++i) {
    const Cause& c = d.causes[i];
    evidence.push_back(
        {fmt::format("likely cause {}", i + 1), c.evidence.empty() ? c.what : c.what + " (" + c.evidence + ")"});
  }
}

std::string JoinFixes(const std::vector<std::string>& fixes) {
  std::string out;
  for (const std::string& f : fixes) out += (out.empty() ? "" : "; ") + f;
  return out;
}

// The table's name for the status number; the library's own where the table
// has none (the fake libraries name few statuses).
std::string StatusName(const ChildLines& c) {
  const GpuStatusInfo* known = FindGpuStatus(GpuLibrary::kCudnn, c.status);
  return known ? std::string(known->name) : c.status_name;
}

Finding FailedCall(const ChildLines& c, const StackSnapshot& s) {
  const Component* cudnn = s.Find(kCudnn);
  std::string name = StatusName(c);
  std::vector<Fact> evidence = {{"call", c.failed_call}, {"status", name + " (" + std::to_string(c.status) + ")"}};
  if (!c.last_error.empty()) evidence.push_back({"cudnnGetLastErrorString", c.last_error});
  if (cudnn) evidence.push_back({"cuDNN", Describe(*cudnn)});
  bool jit_only = s.Env("CUDNN_LIB_CONFIG") == "GRAPH_JIT_ONLY";
  if (c.status == kSubLibraryUnavailable && jit_only && c.created) {
    // FACTS.md, observed on H200: under GRAPH_JIT_ONLY every legacy call
    // returns this, even with all sub-libraries present. Not a broken install.
    return MakeFinding("live.graph_jit_only_legacy_unavailable", Severity::kInfo,
                       "cudnnCreate works; the legacy call " + c.failed_call + " returns " + name +
                           ", which is expected under CUDNN_LIB_CONFIG=GRAPH_JIT_ONLY (graph API only)",
                       std::move(evidence),
                       "nothing to fix for vigil, which uses the graph API; programs that use cuDNN's legacy API "
                       "need CUDNN_LIB_CONFIG unset (FULL)");
  }
  // cudnnCreate is handle creation, the descriptor calls descriptor set-up,
  // cudnnConvolutionForward execution (PhaseOfCall knows each name).
  Diagnosis d = TranslateGpuError(GpuLibrary::kCudnn, c.status, PhaseOfCall(c.failed_call), c.failed_call);
  AddTranslation(d, evidence);
  std::string id = c.failed_call == "cudnnCreate" ? "live.cudnn_create_failed" : "live.convolution_failed";
  std::string fixes = "fix the findings above first; then " + JoinFixes(d.fixes);
  return MakeFinding(id, Severity::kError, d.summary, std::move(evidence), std::move(fixes));
}

}  // namespace

LiveCheckResult InterpretLiveCheck(const std::string& output, const StackSnapshot& s, bool timed_out, int signal) {
  LiveCheckResult r;
  r.ran = true;
  ChildLines c = Parse(output);
  // The stage text is copied out: `where` is moved into findings below.
  const std::string stage = c.last_stage.empty() ? "start" : c.last_stage;
  std::vector<Fact> where = {{"stage", stage}};
  if (timed_out) {
    r.summary = "hung in " + stage;
    r.findings.push_back(MakeFinding("live.timeout", Severity::kError,
                                     "the cuDNN live check hung in " + stage, std::move(where),
                                     "a GPU that does not respond or a driver in a bad state: check `nvidia-smi` "
                                     "and dmesg for Xid errors"));
  } else if (signal != 0 || !c.signal_line.empty()) {
    std::string name = SignalName(signal != 0 ? signal : std::atoi(c.signal_line.c_str()));
    const std::string library = AddFaultLocation(c, where);
    const std::string base = library.substr(library.rfind('/') + 1);
    r.summary = "crashed (" + name + ") in " + stage;
    r.findings.push_back(MakeFinding(
        "live.crash", Severity::kError,
        "the cuDNN live check crashed with " + name + " in " + stage + (base.empty() ? "" : ", inside " + base),
        std::move(where),
        (library.empty() ? std::string("reinstall cuDNN") : "reinstall " + library) +
            " from one cuDNN release; if it still crashes, report it to NVIDIA with the build-id and offset"));
  } else if (!c.load_fail.empty() || !c.missing.empty()) {
    std::string what = !c.load_fail.empty() ? c.load_fail : c.missing;
    r.summary = "could not run: " + what;
    r.findings.push_back(MakeFinding("live.unavailable", Severity::kError, "the cuDNN live check could not run: " + what,
                                     std::move(where), "fix the library findings above"));
  } else if (!c.failed_call.empty()) {
    Finding f = FailedCall(c, s);
    r.summary = f.severity == Severity::kInfo ? "cudnnCreate ok; legacy API unavailable under GRAPH_JIT_ONLY (expected)"
                                              : c.failed_call + " failed: " + StatusName(c);
    r.findings.push_back(std::move(f));
  } else if (!c.ok) {
    r.summary = "wrong result " + c.result;
    r.findings.push_back(MakeFinding("live.wrong_result", Severity::kError,
                                     "the 3x3 convolution returned " + c.result + " instead of 45",
                                     {{"centre value", c.result}},
                                     "a faulty GPU or a broken cuDNN: run the GPU vendor diagnostics (dcgmi diag)"));
  } else {
    r.summary = "cudnnCreate + 1x1x3x3 convolution: ok";
  }
  return r;
}

LiveCheckResult RunLiveCheck(const StackSnapshot& s, const LiveCheckOptions& options) {
  LiveCheckResult r;
  const Component* cudnn = s.Find(kCudnn);
  const Component* cudart = s.Find(kCudart);
  const Component* driver = s.Find(kDriver);
  if (!cudnn || !cudnn->found || !cudart || !cudart->found) return {false, "skipped: cuDNN or CUDA runtime missing", {}};
  if (!driver || !driver->found) return {false, "skipped: no driver", {}};
  if (s.gpus.empty()) return {false, "skipped: no GPU visible", {}};

  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return {false, std::string("skipped: pipe: ") + std::strerror(errno), {}};
  std::vector<std::string> args = {options.exe};
  args.insert(args.end(), options.child_args.begin(), options.child_args.end());
  for (const std::string& a : {std::string("--cudnn"), cudnn->path, std::string("--cudart"), cudart->path,
                               std::string("--result-fd"), std::to_string(kChildResultFd)}) {
    args.push_back(a);
  }
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], kChildResultFd);  // dup2 clears CLOEXEC
  // cuDNN's own logging may go to stdout; keep it out of our report.
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  pid_t pid = -1;
  int rc = posix_spawn(&pid, options.exe.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(fds[1]);
  if (rc != 0) {
    close(fds[0]);
    return {false, "skipped: cannot start " + options.exe + ": " + std::strerror(rc), {}};
  }
  std::string output;
  bool timed_out = !ReadUntilEof(fds[0], options.timeout_ms, output);
  close(fds[0]);
  if (timed_out) kill(pid, SIGKILL);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  int signal = (!timed_out && WIFSIGNALED(status)) ? WTERMSIG(status) : 0;
  return InterpretLiveCheck(output, s, timed_out, signal);
}

}  // namespace vigil::doctor
