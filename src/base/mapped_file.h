// A read-only memory mapping of a whole regular file. Model weights are used in
// place from such a mapping: no copy, no size limit beyond the address space.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "base/status.h"

namespace vigil {

class MappedFile {
 public:
  // Maps `path`. Refuses anything that is not a regular file (directories,
  // FIFOs, devices) with an Environment or InvalidModel diagnosis.
  static Result<std::shared_ptr<const MappedFile>> Open(const std::string& path);
  // Maps an already opened descriptor; takes ownership of `fd` (closed here).
  // `display_path` is used in messages only.
  static Result<std::shared_ptr<const MappedFile>> FromFd(int fd, std::string display_path);

  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  std::span<const uint8_t> bytes() const { return {data_, size_}; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  MappedFile(const uint8_t* data, size_t size, std::string path)
      : data_(data), size_(size), path_(std::move(path)) {}

  const uint8_t* data_ = nullptr;  // nullptr for an empty file
  size_t size_ = 0;
  std::string path_;
};

}  // namespace vigil
