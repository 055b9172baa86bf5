// Resolution of TensorProto external data (internal to src/onnx).
//
// A model names its external files with a `location` relative to the model's
// directory. A hostile model can use that to read any file the user can read
// (CVE-2022-25882, and its bypass CVE-2024-27318), so resolution is confined:
//  - absolute locations, any ".." component and NUL bytes are refused;
//  - the path is opened one component at a time with openat(O_NOFOLLOW)
//    starting from a descriptor of the model directory, so no symlink is
//    followed anywhere below that directory — not even one pointing back
//    inside it (a simple rule with no check-then-open race: the descriptors
//    we hold are the files we map);
//  - the final file must be a regular file (a FIFO or device could block or
//    never end; it is opened O_NONBLOCK so the open itself cannot hang).
// Hard links are not refused: making one inside the model directory needs
// write access to that directory, which already allows placing any file there.
// Each file is mapped once and shared by all tensors that use it.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "base/mapped_file.h"
#include "base/status.h"

namespace vigil::onnx {

class ExternalDataFiles {
 public:
  // `base_dir` is the model's directory; empty refuses all external data.
  explicit ExternalDataFiles(std::string base_dir);
  ~ExternalDataFiles();
  ExternalDataFiles(const ExternalDataFiles&) = delete;
  ExternalDataFiles& operator=(const ExternalDataFiles&) = delete;

  // Bytes [offset, offset + length) of the file at `location`; `length`
  // defaults to `expected_size` and must equal it. Errors are InvalidModel
  // (policy or bounds) or Environment (the file cannot be opened).
  Status Slice(const std::string& location, uint64_t offset, std::optional<uint64_t> length,
               uint64_t expected_size, std::span<const uint8_t>* bytes,
               std::shared_ptr<const MappedFile>* keep_alive);

 private:
  Result<std::shared_ptr<const MappedFile>> Open(const std::string& location);
  Status OpenBaseDir();

  std::string base_dir_;
  int dir_fd_ = -1;
  std::map<std::string, std::shared_ptr<const MappedFile>> files_;  // by normalised location
};

}  // namespace vigil::onnx
