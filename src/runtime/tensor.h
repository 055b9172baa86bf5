// A dense, row-major tensor in host (or a backend's device) memory: what kernels read and write and
// what Session::Run takes and returns. Either owns its buffer or views memory
// that someone else keeps alive (the caller's input buffer, the run's arena,
// a mapped initializer).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "ir/dtype.h"
#include "ir/tensor.h"

namespace vigil::runtime {

// Where a tensor's bytes live. Host tensors are what kernels on the CPU and
// callers see; device tensors are only touched by their backend.
enum class Device : uint8_t { kHost, kCuda };

class Tensor {
 public:
  Tensor() = default;

  // A new owned buffer (64-byte aligned, uninitialised). Refuses negative
  // dims, overflowing sizes and dtypes without a fixed element size.
  static Result<Tensor> Allocate(ir::DataType dtype, std::vector<int64_t> shape);
  // A view of memory the caller keeps alive for the tensor's lifetime.
  static Tensor View(ir::DataType dtype, std::vector<int64_t> shape, void* data);
  // A view whose memory is kept alive by `owner`.
  static Tensor Shared(ir::DataType dtype, std::vector<int64_t> shape, void* data, std::shared_ptr<const void> owner);
  // Device memory owned by `owner` (a device backend's allocation).
  static Tensor OnDevice(Device device, ir::DataType dtype, std::vector<int64_t> shape, void* data,
                         std::shared_ptr<const void> owner);
  // A read-only view of a constant (initializer); the data must not be written.
  static Tensor FromConstant(const ir::Tensor& constant);

  // ONNX's sequence and optional values travel through a run as Tensors
  // too, between the ops that make and read them (runtime/sequence_ops.cpp),
  // control-flow bodies and the graph's inputs and outputs. A sequence holds
  // host tensors (each owning or sharing its memory) of one dtype; an
  // optional without a value holds nothing. An optional with a value is that
  // value. Neither has data, a shape or a dtype of its own (dtype() is
  // undefined): kernels of dense ops never see them.
  enum class Kind : uint8_t { kDense, kSequence, kEmptyOptional };
  static Tensor Sequence(ir::DataType elem_type, std::vector<Tensor> items);
  static Tensor EmptyOptional();
  Kind kind() const { return kind_; }
  bool is_dense() const { return kind_ == Kind::kDense; }
  // A sequence's items (empty for anything else) and their dtype.
  const std::vector<Tensor>& items() const;
  ir::DataType elem_type() const { return elem_type_; }

  ir::DataType dtype() const { return dtype_; }
  Device device() const { return device_; }
  bool on_host() const { return device_ == Device::kHost; }
  const std::vector<int64_t>& shape() const { return shape_; }
  size_t rank() const { return shape_.size(); }
  int64_t dim(size_t i) const { return shape_[i]; }
  uint64_t element_count() const;
  size_t byte_size() const;

  void* raw_data() { return data_; }
  const void* raw_data() const { return data_; }
  template <typename T>
  T* data() {
    return static_cast<T*>(data_);
  }
  template <typename T>
  const T* data() const {
    return static_cast<const T*>(data_);
  }
  std::span<const uint8_t> bytes() const { return {static_cast<const uint8_t*>(data_), byte_size()}; }

  // What keeps the data alive (null for a plain View of caller memory).
  const std::shared_ptr<const void>& storage() const { return storage_; }
  // Made by FromConstant: an initializer's bytes, never written, alive as
  // long as storage() is.
  bool is_constant() const { return constant_; }

  // An ir::Tensor view of this tensor's bytes (keeps this tensor's storage
  // alive), for shape inference's constant inputs.
  ir::Tensor AsConstant(std::string name = {}) const;

  // "float32[1,3,224,224]" ("...@cuda" for device memory), "seq(float32)[3]",
  // "optional(none)"
  std::string Describe() const;

 private:
  ir::DataType dtype_ = ir::DataType::kUndefined;
  Device device_ = Device::kHost;
  std::vector<int64_t> shape_;
  void* data_ = nullptr;
  std::shared_ptr<const void> storage_;
  bool constant_ = false;
  Kind kind_ = Kind::kDense;
  ir::DataType elem_type_ = ir::DataType::kUndefined;           // a sequence's items
  std::shared_ptr<const std::vector<Tensor>> items_;             // a sequence's items
};

// Element count of `shape`; nullopt on a negative dim or overflow.
std::optional<uint64_t> ElementCount(const std::vector<int64_t>& shape);

}  // namespace vigil::runtime
