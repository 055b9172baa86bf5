#include "backends/cuda/tuning_cache.h"

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <sys/stat.h>

#include <fmt/format.h>

namespace vigil::cuda {
namespace {

constexpr std::string_view kVersion = "v1";
constexpr uint64_t kMaxFileBytes = uint64_t{64} << 20;

// Splits on tabs; a field may be empty.
std::vector<std::string_view> SplitTabs(std::string_view line) {
  std::vector<std::string_view> fields;
  size_t start = 0;
  while (true) {
    size_t tab = line.find('\t', start);
    fields.push_back(line.substr(start, tab == std::string_view::npos ? std::string_view::npos : tab - start));
    if (tab == std::string_view::npos) return fields;
    start = tab + 1;
  }
}

bool Printable(std::string_view s) {
  for (char c : s) {
    if (c == '\t' || c == '\n' || c == '\r' || c == '\0') return false;
  }
  return !s.empty();
}

Status FileError(const std::string& path, std::string_view what, int err) {
  return EnvironmentError("the tuning cache {} cannot be {}: {}", path, what, std::strerror(err))
      .WithFact("tuning cache", path)
      .WithFix("pass a --tuning-cache path in a folder you can write, or drop --tuning-cache to tune in memory only");
}

}  // namespace

std::string TuningCache::FormatRecord(std::string_view device, std::string_view problem, std::string_view choice,
                                      double microseconds) {
  return fmt::format("{}\t{}\t{}\t{}\t{:.1f}", kVersion, device, problem, choice, microseconds);
}

std::optional<TuningCache::Entry> TuningCache::ParseRecord(std::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  std::vector<std::string_view> f = SplitTabs(line);
  if (f.size() != 5 || f[0] != kVersion) return std::nullopt;
  for (size_t i = 1; i < 4; ++i) {
    if (!Printable(f[i])) return std::nullopt;
  }
  Entry r{std::string(f[1]), std::string(f[2]), std::string(f[3]), 0};
  auto [end, ec] = std::from_chars(f[4].data(), f[4].data() + f[4].size(), r.microseconds);
  if (ec != std::errc() || end != f[4].data() + f[4].size() || !(r.microseconds >= 0)) return std::nullopt;
  return r;
}

Result<std::unique_ptr<TuningCache>> TuningCache::Open(const std::string& path, std::string device, bool writable) {
  if (path.empty()) return InvalidInputError("the tuning cache path is empty");
  std::unique_ptr<TuningCache> cache(new TuningCache(path, std::move(device)));
  VIGIL_RETURN_IF_ERROR(cache->Load());
  if (writable) {
    // Create it now (append mode leaves existing records alone).
    std::FILE* f = std::fopen(path.c_str(), "a");
    if (!f) return FileError(path, "written", errno);
    std::fclose(f);
  }
  return cache;
}

std::unique_ptr<TuningCache> TuningCache::InMemory(std::string device) {
  return std::unique_ptr<TuningCache>(new TuningCache("", std::move(device)));
}

Status TuningCache::Load() {
  struct stat st {};
  if (::stat(path_.c_str(), &st) != 0) {
    if (errno == ENOENT) return Status::Ok();  // created on the first record
    return FileError(path_, "read", errno);
  }
  if (S_ISDIR(st.st_mode)) {
    return InvalidInputError("the tuning cache {} is a directory", path_)
        .WithFix("pass a file path, e.g. " + path_ + "/vigil-tuning.tsv");
  }
  if (static_cast<uint64_t>(st.st_size) > kMaxFileBytes) {
    return InvalidInputError("the tuning cache {} is {} bytes; a tuning cache is at most {} bytes", path_,
                             static_cast<uint64_t>(st.st_size), kMaxFileBytes)
        .WithCause("the path names some other file", "no tuning cache grows that large")
        .WithFix("check the --tuning-cache path, or delete the file to tune again");
  }
  std::ifstream in(path_, std::ios::binary);
  if (!in) return FileError(path_, "read", errno);
  std::string line;
  size_t number = 0;
  while (std::getline(in, line)) {
    ++number;
    std::string_view v(line);
    if (v.empty() || v == "\r" || v.front() == '#') continue;
    std::optional<Entry> r = ParseRecord(v);
    if (!r) {
      if (stats_.skipped++ == 0) stats_.first_skipped_line = number;
      continue;
    }
    if (r->device != device_) {
      ++stats_.other_devices;
      continue;
    }
    choices_[r->problem] = r->choice;
    ++stats_.loaded;
  }
  return Status::Ok();
}

std::optional<std::string> TuningCache::Find(const std::string& problem) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = choices_.find(problem);
  if (it == choices_.end()) return std::nullopt;
  return it->second;
}

void TuningCache::Record(const std::string& problem, const std::string& choice, double microseconds,
                         double first_pick_us) {
  std::lock_guard<std::mutex> lock(mu_);
  choices_[problem] = choice;
  ++stats_.measured;
  stats_.first_pick_us += first_pick_us;
  stats_.chosen_us += microseconds;
  if (path_.empty()) return;
  if (!Printable(problem) || !Printable(choice)) {
    if (stats_.write_error.empty()) stats_.write_error = "a problem or choice with a tab or newline (not recorded)";
    return;
  }
  // One write per record in append mode: concurrent processes sharing the
  // file interleave whole lines.
  std::string text = FormatRecord(device_, problem, choice, microseconds) + "\n";
  std::FILE* f = std::fopen(path_.c_str(), "a");
  bool ok = f && std::fwrite(text.data(), 1, text.size(), f) == text.size();
  int err = errno;
  if (f && std::fclose(f) != 0) ok = false;
  if (ok) {
    ++stats_.recorded;
  } else if (stats_.write_error.empty()) {
    stats_.write_error = fmt::format("appending to {} failed: {}", path_, std::strerror(err));
  }
}

void TuningCache::CountHit() {
  std::lock_guard<std::mutex> lock(mu_);
  ++stats_.hits;
}

void TuningCache::CountStale() {
  std::lock_guard<std::mutex> lock(mu_);
  ++stats_.stale;
}

void TuningCache::AddTuningTime(double seconds) {
  std::lock_guard<std::mutex> lock(mu_);
  stats_.tuning_seconds += seconds;
}

TuningCache::Stats TuningCache::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

std::string TuningCache::Summary() const {
  Stats s = stats();
  std::string where = path_.empty() ? "tuning (in memory)" : fmt::format("tuning cache {}", path_);
  std::string text = fmt::format("{}: {} recorded choice(s) for this GPU, {} used", where, s.loaded, s.hits);
  text += fmt::format(", {} measured now ({:.2f} s)", s.measured, s.tuning_seconds);
  if (s.measured && s.chosen_us > 0) {
    text += fmt::format(" at {:.3f}x the speed of the heuristics' first picks ({:.1f} us vs {:.1f} us summed)",
                        s.first_pick_us / s.chosen_us, s.chosen_us, s.first_pick_us);
  }
  if (!path_.empty()) text += fmt::format(", {} appended", s.recorded);
  if (s.stale) text += fmt::format(", {} recorded choice(s) no longer build here (measured again)", s.stale);
  if (s.other_devices) text += fmt::format(", {} record(s) of other GPUs or library versions kept", s.other_devices);
  if (s.skipped) {
    text += fmt::format(", {} malformed line(s) skipped (first: line {})", s.skipped, s.first_skipped_line);
  }
  if (!s.write_error.empty()) text += "; not saved: " + s.write_error;
  return text;
}

}  // namespace vigil::cuda
