// Tensor files: numpy .npy (C order) and ONNX TensorProto .pb, read into a
// runtime::Tensor and written from one.
#pragma once

#include <memory>
#include <span>
#include <string>

#include "base/status.h"
#include "runtime/tensor.h"

namespace vigil::runtime {

struct TensorFile {
  std::string name;  // TensorProto's name; empty for .npy
  Tensor tensor;
};

// .npy: versions 1.0, 2.0 and 3.0; dtypes bool, int8/16/32/64, uint8/16/32/64,
// float16/32/64, and bfloat16 where written by ml_dtypes ('<V2' is refused as
// ambiguous); little-endian or '|'; C order only. Fortran order, object
// arrays and big-endian data are refused with a clear error.
Result<TensorFile> ReadNpy(const std::string& path);
Status WriteNpy(const std::string& path, const Tensor& tensor);

// ONNX TensorProto (.pb), as in ONNX's test data sets.
Result<TensorFile> ReadTensorProto(const std::string& path);
Status WriteTensorProto(const std::string& path, const Tensor& tensor, const std::string& name);

// The two readers over bytes already in memory (fuzzers and tests feed bytes
// here); `display_path` appears in messages only. A tensor may view `bytes`
// in place: `owner` keeps them alive, or (null) the caller keeps them alive
// for as long as the tensor lives.
Result<TensorFile> ParseNpyBytes(std::span<const uint8_t> bytes, const std::string& display_path,
                                 std::shared_ptr<const void> owner);
Result<TensorFile> ParseTensorProtoBytes(std::span<const uint8_t> bytes, const std::string& display_path,
                                         std::shared_ptr<const void> owner);

// By extension: .npy or .pb; anything else is an error that says so.
Result<TensorFile> ReadTensorFile(const std::string& path);

}  // namespace vigil::runtime
