// What the backend keeps between calls: per backend, per model, per instance.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model_config.h"
#include "vigil/vigil.h"

namespace vigil::triton {

// TRITONBACKEND_BackendState.
struct BackendState {
  BackendSettings settings;
};

// TRITONBACKEND_ModelState: the configuration, checked against the model.
struct ModelState {
  ModelSettings settings;
};

// A host buffer that joined batches are gathered into: page-locked when the
// session has a GPU (vigil_session_allocate), so that the copy to the device
// runs at full bus speed; it grows and is reused across executions.
class StagingBuffer {
 public:
  StagingBuffer() = default;
  StagingBuffer(const StagingBuffer&) = delete;
  StagingBuffer& operator=(const StagingBuffer&) = delete;
  StagingBuffer(StagingBuffer&& other) noexcept { *this = std::move(other); }
  StagingBuffer& operator=(StagingBuffer&& other) noexcept {
    std::swap(value_, other.value_);
    std::swap(capacity_, other.capacity_);
    plain_.swap(other.plain_);
    return *this;
  }
  ~StagingBuffer() { vigil_value_release(value_); }

  // At least `bytes` of host memory, or null with *status set when the
  // session cannot allocate (the caller then uses plain memory).
  void* Reserve(const vigil_session* session, size_t bytes, vigil_status** status);
  // Plain host memory, when page-locked memory is refused.
  void* ReservePlain(size_t bytes);

 private:
  vigil_value* value_ = nullptr;
  size_t capacity_ = 0;
  std::vector<unsigned char> plain_;
};

// TRITONBACKEND_ModelInstanceState: one vigil session per instance.
// TRITONBACKEND_ModelInstanceExecute never runs twice at once on one
// instance, so the staging buffers need no lock.
struct InstanceState {
  InstanceState() = default;
  InstanceState(const InstanceState&) = delete;
  InstanceState& operator=(const InstanceState&) = delete;
  ~InstanceState() { vigil_session_release(session); }

  const ModelSettings* model = nullptr;
  std::string name;        // "resnet_0_1"
  bool gpu = false;
  int device_id = 0;
  vigil_session* session = nullptr;
  std::vector<StagingBuffer> staging;  // one per model input, by position
  bool warned_plain_staging = false;
};

}  // namespace vigil::triton
