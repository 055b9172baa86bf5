// The probe's entry points: environment capture, and running the library
// probe in a forked child whose result comes back as JSON.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "doctor/probe/forked_child.h"
#include "doctor/probe/probe_internal.h"
#include "doctor/probe/stdout_guard.h"

namespace vigil::doctor {
namespace {

// Variables that change what the GPU stack does; recorded when set.
const char* const kVariables[] = {
    "CUDA_VISIBLE_DEVICES", "CUDNN_LIB_CONFIG",   "CUDNN_LOGLEVEL_DBG",      "CUDNN_LOGDEST_DBG",
    "CUDNN_LOGINFO_DBG",    "CUDNN_LOGWARN_DBG",  "CUDNN_LOGERR_DBG",        "CUDNN_FRONTEND_LOG_INFO",
    "CUDNN_FRONTEND_LOG_FILE", "LD_LIBRARY_PATH", "NVIDIA_TF32_OVERRIDE",    "CUDA_MODULE_LOADING",
    "CUDA_DEVICE_ORDER"};

// CUDNN_LOGDEST_DBG is stdout, stderr, or a file that cuDNN opens for
// writing. Checked without creating or truncating anything: an existing file
// must be writable, a new one needs a writable folder.
void CheckLogDestination(StackSnapshot& s) {
  std::optional<std::string> dest = s.Env("CUDNN_LOGDEST_DBG");
  if (!dest || *dest == "stdout" || *dest == "stderr") return;
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path path(*dest);
  if (fs::exists(path, ec)) {
    s.logdest_writable = !fs::is_directory(path, ec) && access(path.c_str(), W_OK) == 0;
    if (!*s.logdest_writable) s.logdest_error = fs::is_directory(path, ec) ? "is a folder" : std::strerror(errno);
    return;
  }
  fs::path dir = path.has_parent_path() ? path.parent_path() : fs::path(".");
  s.logdest_writable = access(dir.c_str(), W_OK) == 0;
  if (!*s.logdest_writable) s.logdest_error = dir.string() + ": " + std::strerror(errno);
}

int CountPhysicalGpus(const std::string& dir) {
  std::error_code ec;
  std::filesystem::directory_iterator it(dir, ec);
  if (ec) return -1;
  int count = 0;
  for (; it != std::filesystem::directory_iterator(); it.increment(ec)) ++count;
  return count;
}

// The parts of the result a dead child leaves: its last stage line.
std::string LastStage(const std::string& output) {
  std::string last;
  size_t pos = 0;
  while (pos < output.size()) {
    size_t end = output.find('\n', pos);
    if (end == std::string::npos) end = output.size();
    if (output.compare(pos, 2, "@ ") == 0) last = output.substr(pos + 2, end - pos - 2);
    pos = end + 1;
  }
  return last;
}

// The "! message" line a child that caught an exception writes.
std::string LastError(const std::string& output) {
  size_t at = output.rfind("! ");
  if (at == std::string::npos) return "no output";
  size_t end = output.find('\n', at);
  return output.substr(at + 2, end == std::string::npos ? std::string::npos : end - at - 2);
}

}  // namespace

void CaptureEnvironment(StackSnapshot& s) {
  for (const char* name : kVariables) {
    if (const char* value = std::getenv(name)) s.env[name] = value;
  }
  CheckLogDestination(s);
}

StackSnapshot ProbeStack(const ProbeOptions& options) {
  if (!options.isolate) {
    StackSnapshot s;
    {
      StdoutToStderr guard;  // CUDNN_LOGDEST_DBG=stdout must not reach our stdout
      s = ProbeStackInProcess(options);
    }
    s.physical_gpu_count = CountPhysicalGpus(options.proc_gpus_dir);
    s.ld_library_path_dirs = LdLibraryPathDirs(options);
    return s;
  }
  ChildOutcome out = RunInForkedChild(
      [&](int fd) {
        SetStageFd(fd);
        SendStdoutToStderr();  // library output (CUDNN_LOGDEST_DBG=stdout) must not mix into ours
        try {
          StackSnapshot s = ProbeStackInProcess(options);
          WriteAll(fd,
                   "= " + nlohmann::json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
        } catch (const std::exception& e) {
          // Nothing may escape the child: it would unwind into the caller's code.
          WriteAll(fd, std::string("! ") + e.what() + "\n");
        }
      },
      options.timeout_ms);
  StackSnapshot snapshot;
  size_t result = out.output.rfind("\n= ");
  if (out.output.starts_with("= ")) result = 0;
  else if (result != std::string::npos) result += 1;
  if (result != std::string::npos && !out.timed_out && out.signal == 0) {
    try {
      snapshot = nlohmann::json::parse(out.output.substr(result + 2)).get<StackSnapshot>();
    } catch (const nlohmann::json::exception& e) {
      snapshot.probe_error = std::string("unreadable probe result: ") + e.what();
    }
  } else {
    CaptureEnvironment(snapshot);
    std::string stage = LastStage(out.output);
    std::string what = out.timed_out ? "timed out after " + std::to_string(options.timeout_ms) + " ms"
                       : out.signal != 0 ? "died of " + SignalName(out.signal)
                                         : "ended without a result (" + LastError(out.output) + ")";
    snapshot.probe_error = what + (stage.empty() ? "" : " while " + stage);
  }
  snapshot.physical_gpu_count = CountPhysicalGpus(options.proc_gpus_dir);
  snapshot.ld_library_path_dirs = LdLibraryPathDirs(options);
  return snapshot;
}

}  // namespace vigil::doctor
