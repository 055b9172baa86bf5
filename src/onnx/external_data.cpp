#include "onnx/external_data.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string_view>
#include <utility>
#include <vector>

#include <fmt/ranges.h>

namespace vigil::onnx {
namespace {

// Closes a descriptor on scope exit unless released.
class FdCloser {
 public:
  explicit FdCloser(int fd) : fd_(fd) {}
  ~FdCloser() {
    if (fd_ >= 0) ::close(fd_);
  }
  FdCloser(const FdCloser&) = delete;
  FdCloser& operator=(const FdCloser&) = delete;
  int get() const { return fd_; }
  int release() { return std::exchange(fd_, -1); }
  void reset(int fd) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }

 private:
  int fd_;
};

std::string_view FileKind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

// Splits `location` into components, refusing what could leave the model
// directory. Guards against CVE-2022-25882 (path traversal through
// external_data location) and CVE-2024-27318 (its bypass): the check is on
// components, not on prefixes, so no stripping or normalisation can be fooled.
Result<std::vector<std::string>> SplitLocation(const std::string& location) {
  if (location.empty()) return InvalidModelError("location is empty");
  if (location.find('\0') != std::string::npos) {
    // A NUL would end the C string early and open a different file than the one checked.
    return InvalidModelError("location contains a NUL byte");
  }
  if (location.front() == '/') {
    return InvalidModelError("location '{}' is an absolute path; it must be relative to the model directory",
                             location);
  }
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= location.size()) {
    size_t end = location.find('/', start);
    if (end == std::string::npos) end = location.size();
    std::string part = location.substr(start, end - start);
    if (part == "..") {
      return InvalidModelError("location '{}' has a '..' component, which could leave the model directory",
                               location);
    }
    if (!part.empty() && part != ".") parts.push_back(std::move(part));
    start = end + 1;
  }
  if (parts.empty()) return InvalidModelError("location '{}' names no file", location);
  return parts;
}

Status OpenError(int err, const std::string& location, const std::string& part) {
  if (err == ELOOP) {
    return InvalidModelError("location '{}' passes through the symlink '{}'; vigil follows no symlinks below the "
                             "model directory",
                             location, part)
        .WithFix("replace the symlink with the file itself (or a hard link / copy)");
  }
  if (err == ENOTDIR) return InvalidModelError("location '{}': '{}' is not a directory", location, part);
  Status s = EnvironmentError("cannot open external data '{}': {}", location, std::strerror(err));
  if (err == ENOENT) s.WithFix("put the external data file next to the model, where 'location' says");
  return s;
}

}  // namespace

ExternalDataFiles::ExternalDataFiles(std::string base_dir) : base_dir_(std::move(base_dir)) {}

ExternalDataFiles::~ExternalDataFiles() {
  if (dir_fd_ >= 0) ::close(dir_fd_);
}

Status ExternalDataFiles::OpenBaseDir() {
  if (dir_fd_ >= 0) return Status::Ok();
  if (base_dir_.empty()) {
    return InvalidModelError("the model uses external data, but it was read from memory with no base directory");
  }
  // The model directory itself is the caller's choice, so it may be reached through symlinks.
  dir_fd_ = ::open(base_dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd_ < 0) {
    int err = errno;
    return EnvironmentError("cannot open the model directory '{}': {}", base_dir_, std::strerror(err));
  }
  return Status::Ok();
}

Result<std::shared_ptr<const MappedFile>> ExternalDataFiles::Open(const std::string& location) {
  VIGIL_ASSIGN_OR_RETURN(std::vector<std::string> parts, SplitLocation(location));
  std::string key = fmt::format("{}", fmt::join(parts, "/"));
  if (auto it = files_.find(key); it != files_.end()) return it->second;
  VIGIL_RETURN_IF_ERROR(OpenBaseDir());

  // Walk one component at a time: O_NOFOLLOW only guards the last component
  // of a path, so each openat gets a single component.
  FdCloser dir(-1);
  int current = dir_fd_;
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    int next = ::openat(current, parts[i].c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (next < 0) {
      int err = errno;
      // With O_DIRECTORY a symlink fails as ENOTDIR; look again only to name it right.
      struct stat link {};
      if (err == ENOTDIR && ::fstatat(current, parts[i].c_str(), &link, AT_SYMLINK_NOFOLLOW) == 0 &&
          S_ISLNK(link.st_mode)) {
        err = ELOOP;
      }
      return OpenError(err, location, parts[i]);
    }
    dir.reset(next);
    current = next;
  }
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer.
  int fd = ::openat(current, parts.back().c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return OpenError(errno, location, parts.back());
  FdCloser file(fd);
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    return EnvironmentError("cannot stat external data '{}': {}", location, std::strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    return InvalidModelError("location '{}' is {}, not a regular file", location, FileKind(st.st_mode));
  }
  std::string display = base_dir_ + "/" + key;
  VIGIL_ASSIGN_OR_RETURN(std::shared_ptr<const MappedFile> mapped, MappedFile::FromFd(file.release(), display));
  files_.emplace(std::move(key), mapped);
  return mapped;
}

Status ExternalDataFiles::Slice(const std::string& location, uint64_t offset, std::optional<uint64_t> length,
                                uint64_t expected_size, std::span<const uint8_t>* bytes,
                                std::shared_ptr<const MappedFile>* keep_alive) {
  VIGIL_ASSIGN_OR_RETURN(std::shared_ptr<const MappedFile> file, Open(location));
  const uint64_t size = file->size();
  if (offset > size) {
    return InvalidModelError("offset {} is past the end of '{}' ({} bytes)", offset, location, size);
  }
  if (length && *length > size - offset) {
    return InvalidModelError("length {} at offset {} runs past the end of '{}' ({} bytes)", *length, offset,
                             location, size);
  }
  const uint64_t used = length.value_or(expected_size);
  if (used != expected_size) {
    return InvalidModelError("length is {} bytes, but the tensor's dims and dtype need {}", used, expected_size);
  }
  if (used > size - offset) {
    return InvalidModelError("the tensor needs {} bytes at offset {}, but '{}' has only {}", used, offset,
                             location, size);
  }
  *bytes = file->bytes().subspan(static_cast<size_t>(offset), static_cast<size_t>(used));
  *keep_alive = std::move(file);
  return Status::Ok();
}

}  // namespace vigil::onnx
