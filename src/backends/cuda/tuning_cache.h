// The autotuning cache: which algorithm measured fastest for a problem on a
// GPU with given library versions, kept in a text file that users can read,
// ship with a model and delete. Plain C++ (no CUDA), so that it is tested
// where there is no GPU.
//
// The file: UTF-8 text, one record per line, five tab-separated fields:
//   v1 <TAB> device <TAB> problem <TAB> choice <TAB> microseconds
// - device:  the GPU and libraries the choice was measured with,
//            "NVIDIA H100 80GB HBM3|sm_90|cudnn 91400|cublasLt 130100";
// - problem: what was tuned, e.g. "cudnn|fprop|nhwc|10|x64,3,224,224|...";
// - choice:  the library's own identity of the algorithm ("engine 12 knobs
//            3=1,7=0" for cuDNN);
// - microseconds: the measured median, for people reading the file.
// Lines starting with '#' and blank lines are comments. Records of other
// devices are kept in the file and ignored; for one device and problem the
// last line wins. Malformed lines are skipped and counted, never fatal.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/status.h"

namespace vigil::cuda {

class TuningCache {
 public:
  // What happened to the cache in this process, for the user's report.
  struct Stats {
    size_t loaded = 0;         // records of this device read from the file
    size_t other_devices = 0;  // records of other devices (kept, ignored)
    size_t skipped = 0;        // malformed lines
    size_t first_skipped_line = 0;
    size_t hits = 0;           // problems answered from the file
    size_t stale = 0;          // recorded choices that no longer build here
    size_t measured = 0;       // problems tuned by measuring now
    size_t recorded = 0;       // records appended to the file
    double tuning_seconds = 0;
    // Over the problems measured now: the heuristics' first pick's time and
    // the chosen one's, summed (what tuning bought).
    double first_pick_us = 0, chosen_us = 0;
    std::string write_error;   // the first failed append, if any
  };

  // Reads `path` (a missing file is an empty cache) for `device`. With
  // `writable`, new choices are appended to it: the file is created now if
  // missing, so that an unwritable path fails here, with a diagnosis, and not
  // after minutes of tuning. An unreadable file, a directory, or a file over
  // 64 MiB is an error.
  static Result<std::unique_ptr<TuningCache>> Open(const std::string& path, std::string device, bool writable);

  // A cache that is not backed by a file (tuning without --tuning-cache).
  static std::unique_ptr<TuningCache> InMemory(std::string device);

  // The recorded choice for `problem` on this device.
  std::optional<std::string> Find(const std::string& problem) const;

  // Remembers `choice` for `problem` and appends it to the file (when there
  // is one). A failed append is kept in stats().write_error: the measured
  // choice is still used for this process.
  // `first_pick_us`: the measured time of the heuristics' first pick.
  void Record(const std::string& problem, const std::string& choice, double microseconds, double first_pick_us);

  void CountHit();
  void CountStale();
  void AddTuningTime(double seconds);

  Stats stats() const;
  const std::string& path() const { return path_; }
  const std::string& device() const { return device_; }
  // One line for people: "tuning cache FILE: 12 choices read, 3 measured
  // now (1.4 s) and appended, 2 malformed lines skipped (first: line 7)".
  std::string Summary() const;

  // The text of one record (no newline), and its parse; exposed for tests.
  static std::string FormatRecord(std::string_view device, std::string_view problem, std::string_view choice,
                                  double microseconds);
  struct Entry {
    std::string device, problem, choice;
    double microseconds = 0;
  };
  static std::optional<Entry> ParseRecord(std::string_view line);

 private:
  TuningCache(std::string path, std::string device) : path_(std::move(path)), device_(std::move(device)) {}
  Status Load();

  std::string path_;  // empty: in memory only
  std::string device_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, std::string> choices_;
  Stats stats_;
};

}  // namespace vigil::cuda
