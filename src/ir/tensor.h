// Constant tensors (initializers, attribute values). Element bytes are either
// referenced in place inside the mapped model or external-data file, or owned
// (when the file stored them in a typed field that needs decoding).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "ir/dtype.h"

namespace vigil::ir {

struct Tensor {
  enum class Storage {
    kRawInPlace,    // raw_data, pointing into the mapped model file
    kTypedInPlace,  // a packed fixed-width typed field, pointing into the mapped file
    kTypedDecoded,  // a varint typed field, decoded into an owned buffer
    kExternal,      // external data, pointing into a mapped external file
    kStrings,       // string elements, in `strings`
    kEmpty,         // no data fields at all (zero elements, or data missing)
  };

  std::string name;
  DataType dtype = DataType::kUndefined;
  std::vector<int64_t> dims;
  Storage storage = Storage::kEmpty;
  // Little-endian element bytes; sub-byte types packed two per byte.
  std::span<const uint8_t> bytes;
  // Keeps the mapping or owned buffer behind `bytes` alive.
  std::shared_ptr<const void> keep_alive;
  std::vector<std::string> strings;
  std::string external_location;  // as written in the model, for messages

  // Product of dims (1 for a scalar); nullopt on overflow.
  std::optional<uint64_t> ElementCount() const;
  // Whether `bytes` holds every element as whole bytes (no strings, no
  // sub-byte types, no missing data): what a pass that copies or permutes
  // elements at load time needs.
  bool HasDenseBytes() const;
};

struct SparseTensor {
  Tensor values;
  Tensor indices;
  std::vector<int64_t> dims;
};

}  // namespace vigil::ir
