// Reads an ONNX model file into ir::Model with our own bounds-checked decoder
// of the protobuf wire format. The file is memory-mapped and tensor bytes are
// referenced in place. Every length, count, dim and offset is checked against
// the bytes present and against the limits below, so a hostile file gets an
// InvalidModel diagnosis, never a crash, a hang or a giant allocation.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "base/status.h"
#include "ir/graph.h"

namespace vigil::onnx {

struct ReadLimits {
  int max_nesting_depth = 32;        // graphs inside attributes inside graphs...
  int max_message_depth = 100;       // protobuf message nesting of any kind
  int max_rank = 64;                 // dims of one tensor or shape
  uint64_t max_elements = uint64_t{1} << 40;  // elements of one tensor
  uint64_t max_repeated = uint64_t{1} << 28;  // entries of one repeated field
  // Memory for decoded structure (nodes, attributes, names, ...), which can
  // be hundreds of times the bytes that encode it. 0 means 256 MiB plus 16
  // times the file size: ample for real models, bounded for hostile ones.
  uint64_t max_structure_bytes = 0;
};

struct ReadOptions {
  ReadLimits limits;
  // Resolve and map external data (only inside the model's directory).
  bool load_external_data = true;
};

// Reads the model at `path`.
Result<ir::Model> ReadModel(const std::string& path, const ReadOptions& options = {});

// Reads a model held in memory (fuzzing, tests). Tensor bytes point into
// `bytes`, which must outlive the model. External data is resolved relative to
// `base_dir`; an empty base_dir refuses external data.
Result<ir::Model> ReadModelFromBytes(std::span<const uint8_t> bytes, const std::string& display_name,
                                     const std::string& base_dir, const ReadOptions& options = {});

}  // namespace vigil::onnx
