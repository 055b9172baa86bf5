#include "backends/cuda/cudnn_log.h"

#include <cudnn.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include <fmt/format.h>

namespace vigil::cuda {
namespace {

bool LoggingOn(const char* loglevel, const char* logerr, const char* logwarn, const char* loginfo) {
  if (loglevel && std::atoi(loglevel) >= 1) return true;
  for (const char* legacy : {logerr, logwarn, loginfo}) {
    if (legacy && std::atoi(legacy) >= 1) return true;
  }
  return false;
}

// What cuDNN's callback state was before we installed ours.
struct Installed {
  std::mutex mutex;
  int users = 0;
  bool ours = false;  // our callback is the installed one
  unsigned previous_mask = 0;
  void* previous_udata = nullptr;
  cudnnCallback_t previous_fn = nullptr;
  std::string note;  // why there is no capture, for the Diagnosis
  CudnnLogSettings settings;
};

Installed& State() {
  // Never destroyed: cuDNN may call the callback while the process exits.
  static auto* state = new Installed();
  return *state;
}

void OnCudnnMessage(cudnnSeverity_t severity, void*, const cudnnDebug_t*, const char* message) {
  CudnnLogCallbackForTests(static_cast<int>(severity), message);
}

std::string_view SeverityName(int severity) {
  switch (severity) {
    case CUDNN_SEV_FATAL: return "fatal";
    case CUDNN_SEV_ERROR: return "error";
    case CUDNN_SEV_WARNING: return "warning";
    default: return "info";
  }
}

// Each line on its own indented line, so that the text rendering of a
// multi-line fact stays readable under "  cudnn log:".
std::string Indented(const std::string& text) {
  std::string out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t nl = text.find('\n', start);
    if (nl == std::string::npos) nl = text.size();
    out += "\n    " + text.substr(start, nl - start);
    start = nl + 1;
  }
  return out;
}

thread_local uint64_t last_reported = 0;  // this thread's newest attached sequence

}  // namespace

CudnnLogSettings DecideCudnnLogMode(const char* logdest, const char* loglevel, const char* logerr,
                                    const char* logwarn, const char* loginfo) {
  if (!logdest || !*logdest || !LoggingOn(loglevel, logerr, logwarn, loginfo)) return {};
  std::string dest = logdest;
  if (dest == "stdout" || dest == "stderr") return {CudnnLogMode::kStream, dest};
  return {CudnnLogMode::kFile, dest};
}

CudnnLogSettings CudnnLogSettingsFromEnvironment() {
  return DecideCudnnLogMode(std::getenv("CUDNN_LOGDEST_DBG"), std::getenv("CUDNN_LOGLEVEL_DBG"),
                            std::getenv("CUDNN_LOGERR_DBG"), std::getenv("CUDNN_LOGWARN_DBG"),
                            std::getenv("CUDNN_LOGINFO_DBG"));
}

uint64_t ThreadTag() {
  static std::atomic<uint64_t> next{1};
  thread_local uint64_t tag = next.fetch_add(1);
  return tag;
}

std::string JoinCallbackMessage(const char* message, size_t limit) {
  std::string out;
  if (!message) return out;
  for (size_t i = 0; i < limit; ++i) {
    char c = message[i];
    if (c == '\0') {
      // "\0\0" ends the message; a single '\0' ends a line.
      if (i + 1 >= limit || message[i + 1] == '\0') break;
      out.push_back('\n');
    } else {
      out.push_back(c);
    }
  }
  return out;
}

void CudnnMessageRing::Add(uint64_t thread, int severity, std::string text) {
  if (text.size() > kMaxMessageBytes) {
    text.resize(kMaxMessageBytes);
    text += " [truncated]";
  }
  std::lock_guard<std::mutex> lock(mutex_);
  entries_.push_back({next_sequence_++, thread, severity, std::move(text)});
  while (entries_.size() > kRingCapacity) entries_.pop_front();
}

std::vector<CudnnMessageRing::Entry> CudnnMessageRing::Since(uint64_t thread, uint64_t after, size_t max) const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<Entry> out;
  for (const Entry& e : entries_) {
    if (e.thread == thread && e.sequence > after) out.push_back(e);
  }
  if (out.size() > max) out.erase(out.begin(), out.end() - static_cast<std::ptrdiff_t>(max));
  return out;
}

uint64_t CudnnMessageRing::last_sequence() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return next_sequence_ - 1;
}

size_t CudnnMessageRing::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return entries_.size();
}

CudnnMessageRing& GlobalCudnnMessageRing() {
  static auto* ring = new CudnnMessageRing();  // never destroyed, as State()
  return *ring;
}

void CudnnLogCallbackForTests(int severity, const char* message) {
  GlobalCudnnMessageRing().Add(ThreadTag(), severity, JoinCallbackMessage(message));
}

std::string FileTail(const std::string& path, size_t max_lines, size_t max_bytes) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  struct stat st {};
  std::string data;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
    off_t size = st.st_size;
    off_t start = size > static_cast<off_t>(max_bytes) ? size - static_cast<off_t>(max_bytes) : 0;
    data.resize(static_cast<size_t>(size - start));
    ssize_t n = pread(fd, data.data(), data.size(), start);
    data.resize(n > 0 ? static_cast<size_t>(n) : 0);
    if (start > 0) {
      size_t nl = data.find('\n');
      data.erase(0, nl == std::string::npos ? data.size() : nl + 1);
    }
  }
  close(fd);
  while (!data.empty() && data.back() == '\n') data.pop_back();
  size_t lines = 0, cut = data.size();
  while (cut > 0) {
    size_t nl = data.rfind('\n', cut - 1);
    if (++lines == max_lines || nl == std::string::npos) {
      cut = nl == std::string::npos ? 0 : nl + 1;
      break;
    }
    cut = nl;
  }
  return data.substr(cut);
}

void AcquireCudnnLogCapture() {
  Installed& st = State();
  std::lock_guard<std::mutex> lock(st.mutex);
  if (st.users++ > 0) return;
  st.settings = CudnnLogSettingsFromEnvironment();
  st.note.clear();
  if (st.settings.mode != CudnnLogMode::kCapture) return;
  if (cudnnGetCallback(&st.previous_mask, &st.previous_udata, &st.previous_fn) != CUDNN_STATUS_SUCCESS) {
    st.note = "cudnnGetCallback failed; no capture";
    return;
  }
  if (st.previous_fn != nullptr && st.previous_fn != OnCudnnMessage) {
    // The host application logs cuDNN itself: leave its callback alone.
    st.note = "another cuDNN log callback is installed in this process; vigil left it in place";
    return;
  }
  if (cudnnSetCallback(CUDNN_SEV_ERROR_EN | CUDNN_SEV_WARNING_EN, nullptr, OnCudnnMessage) != CUDNN_STATUS_SUCCESS) {
    st.note = "cudnnSetCallback failed; no capture";
    return;
  }
  st.ours = true;
}

void ReleaseCudnnLogCapture() {
  Installed& st = State();
  std::lock_guard<std::mutex> lock(st.mutex);
  if (st.users == 0 || --st.users > 0) return;
  if (st.ours) cudnnSetCallback(st.previous_mask, st.previous_udata, st.previous_fn);
  st.ours = false;
}

void AttachCudnnLog(Status& status) {
  if (status.ok()) return;
  Installed& st = State();
  CudnnLogSettings settings;
  bool ours = false;
  std::string note;
  {
    std::lock_guard<std::mutex> lock(st.mutex);
    settings = st.users > 0 ? st.settings : CudnnLogSettingsFromEnvironment();
    ours = st.ours;
    note = st.note;
  }
  switch (settings.mode) {
    case CudnnLogMode::kFile: {
      status.WithFact("cudnn log file", settings.path);
      std::string tail = FileTail(settings.path);
      status.WithFact("cudnn log", tail.empty() ? "(the file is empty or unreadable)"
                                                : fmt::format("last lines of {}:{}", settings.path, Indented(tail)));
      return;
    }
    case CudnnLogMode::kStream:
      status.WithFact("cudnn log", fmt::format("printed by cuDNN on {} (CUDNN_LOGDEST_DBG)", settings.path));
      return;
    case CudnnLogMode::kCapture: break;
  }
  if (!ours) {
    status.WithFact("cudnn log", note.empty() ? "not captured (no CUDA backend installed the callback)" : note);
    return;
  }
  auto messages = GlobalCudnnMessageRing().Since(ThreadTag(), last_reported, kMaxAttached);
  if (messages.empty()) {
    status.WithFact("cudnn log", "cuDNN logged no error or warning for this call");
    return;
  }
  last_reported = messages.back().sequence;
  std::string text = fmt::format("{} message(s) cuDNN logged on this thread:", messages.size());
  for (const auto& m : messages) text += Indented(fmt::format("[{}] {}", SeverityName(m.severity), m.text));
  status.WithFact("cudnn log", text);
}

}  // namespace vigil::cuda
