// A standalone ONNX TensorProto (a `.pb` file as in ONNX's test data sets):
// reading with the model reader's bounds-checked tensor parser, and a small
// encoder for writing one.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "ir/tensor.h"
#include "onnx/reader.h"

namespace vigil::onnx {

// Parses `bytes` as one serialized TensorProto. Element bytes may point into
// `bytes` (raw_data, packed float/double data); `owner` keeps them alive and is
// stored in the tensor's keep_alive (null when the caller keeps `bytes` alive).
// External data and segmented tensors are refused. Errors are InvalidInput
// (or Unsupported) diagnoses naming `display_name` and the byte offset.
Result<ir::Tensor> ReadTensorProtoBytes(std::span<const uint8_t> bytes, const std::string& display_name,
                                        std::shared_ptr<const void> owner = nullptr,
                                        const ReadLimits& limits = {});

// Serializes a TensorProto with name (omitted when empty), dims (packed),
// data_type and raw_data (little-endian element bytes, sub-byte types packed).
std::string EncodeTensorProto(const std::string& name, ir::DataType dtype, const std::vector<int64_t>& dims,
                              std::span<const uint8_t> raw_data);

}  // namespace vigil::onnx
