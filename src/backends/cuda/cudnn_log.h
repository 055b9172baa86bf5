// cuDNN's own account of a failure, attached to the Diagnosis.
//
// Two modes, chosen from the environment when the first backend is created:
//  - capture (the default): a cudnnSetCallback for errors and warnings keeps
//    the last messages in a bounded, thread-safe ring; a failing cuDNN call
//    gets a "cudnn log" fact with the messages logged on its thread since
//    that thread's previous failure (at most kMaxAttached).
//  - file: the user pointed CUDNN_LOGDEST_DBG at a file and set
//    CUDNN_LOGLEVEL_DBG (vigil's --cudnn-log FILE does both). No callback is
//    installed, because it would divert the messages away from the file;
//    a failure gets the file's path and its tail (last kTailLines lines, at
//    most kTailBytes bytes).
// With CUDNN_LOGDEST_DBG=stdout/stderr cuDNN prints the log itself; vigil
// only says so in the Diagnosis.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace vigil::cuda {

enum class CudnnLogMode {
  kCapture,  // our callback and ring
  kFile,     // CUDNN_LOGDEST_DBG is a file: attach its tail
  kStream,   // CUDNN_LOGDEST_DBG is stdout or stderr: cuDNN prints it
};

struct CudnnLogSettings {
  CudnnLogMode mode = CudnnLogMode::kCapture;
  std::string path;  // kFile: the file; kStream: "stdout" / "stderr"
};

// The mode for these variables (values as getenv gives them; null = unset).
// A destination only counts when logging is on: CUDNN_LOGLEVEL_DBG >= 1, or
// one of the deprecated CUDNN_LOGERR_DBG / CUDNN_LOGWARN_DBG / CUDNN_LOGINFO_DBG = 1.
CudnnLogSettings DecideCudnnLogMode(const char* logdest, const char* loglevel, const char* logerr,
                                    const char* logwarn, const char* loginfo);
// The same, from this process's environment.
CudnnLogSettings CudnnLogSettingsFromEnvironment();

// Installs the capture callback when the mode is kCapture and no other
// callback is installed; counted, so each backend acquires and releases.
// The last release restores cuDNN's previous callback state, so no pointer
// into this module stays inside libcudnn once it may be unloaded.
void AcquireCudnnLogCapture();
void ReleaseCudnnLogCapture();

// Adds what the log knows about a failing cuDNN call on this thread:
// "cudnn log" (captured messages or the file's tail), "cudnn log file", or a
// note where nothing could be captured. Never fails.
void AttachCudnnLog(Status& status);

// --- parts exposed for tests -------------------------------------------

inline constexpr size_t kRingCapacity = 64;       // messages kept
inline constexpr size_t kMaxMessageBytes = 2048;  // per message, truncated beyond
inline constexpr size_t kMaxAttached = 8;         // messages per diagnosis
inline constexpr size_t kTailLines = 40;
inline constexpr size_t kTailBytes = 8192;

// cuDNN's callback text: lines separated by '\0', the end marked by "\0\0".
// Joins the lines with '\n', reading at most `limit` bytes.
std::string JoinCallbackMessage(const char* message, size_t limit = 16384);

// The bounded ring the callback writes to. Thread-safe.
class CudnnMessageRing {
 public:
  struct Entry {
    uint64_t sequence = 0;
    uint64_t thread = 0;  // ThreadTag() of the thread that logged it
    int severity = 0;     // cudnnSeverity_t
    std::string text;
  };

  void Add(uint64_t thread, int severity, std::string text);
  // Messages of `thread` with sequence > `after`, oldest first, at most `max`
  // (the newest ones when there are more).
  std::vector<Entry> Since(uint64_t thread, uint64_t after, size_t max) const;
  uint64_t last_sequence() const;
  size_t size() const;

 private:
  mutable std::mutex mutex_;
  std::deque<Entry> entries_;  // at most kRingCapacity
  uint64_t next_sequence_ = 1;
};

// A small number naming the calling thread, stable for its lifetime.
uint64_t ThreadTag();

// The last `max_lines` lines of the file, reading at most `max_bytes` from
// its end (the first, partial line of that window is dropped). Empty when
// the file cannot be read.
std::string FileTail(const std::string& path, size_t max_lines = kTailLines, size_t max_bytes = kTailBytes);

// The process-wide ring (for tests: fill it as the callback would).
CudnnMessageRing& GlobalCudnnMessageRing();
// The callback itself (cudnnCallback_t's shape without cuDNN types).
void CudnnLogCallbackForTests(int severity, const char* message);

}  // namespace vigil::cuda
