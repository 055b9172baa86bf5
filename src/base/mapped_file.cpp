#include "base/mapped_file.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace vigil {

Result<std::shared_ptr<const MappedFile>> MappedFile::Open(const std::string& path) {
  // O_NONBLOCK: opening a FIFO would otherwise wait for a writer forever; it
  // has no effect on regular files, and anything else is refused below.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    int err = errno;
    Status s = EnvironmentError("cannot open '{}': {}", path, std::strerror(err));
    s.WithFact("path", path);
    if (err == ENOENT) s.WithFix("check the path; it does not exist");
    if (err == EACCES) s.WithFix("check the file's permissions");
    return s;
  }
  return FromFd(fd, path);
}

Result<std::shared_ptr<const MappedFile>> MappedFile::FromFd(int fd, std::string display_path) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    return EnvironmentError("cannot stat '{}': {}", display_path, std::strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return EnvironmentError("'{}' is not a regular file", display_path)
        .WithFact("path", display_path);
  }
  size_t size = static_cast<size_t>(st.st_size);
  if (size == 0) {
    ::close(fd);
    return std::shared_ptr<const MappedFile>(new MappedFile(nullptr, 0, std::move(display_path)));
  }
  void* p = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  int err = errno;
  ::close(fd);  // the mapping stays valid without the descriptor
  if (p == MAP_FAILED) {
    return EnvironmentError("cannot map '{}' ({} bytes): {}", display_path, size, std::strerror(err));
  }
  return std::shared_ptr<const MappedFile>(
      new MappedFile(static_cast<const uint8_t*>(p), size, std::move(display_path)));
}

MappedFile::~MappedFile() {
  if (data_ != nullptr) ::munmap(const_cast<uint8_t*>(data_), size_);
}

}  // namespace vigil
