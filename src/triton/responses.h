// Responses and statistics: outputs written into Triton's buffers, a
// Problem sent as an error response, per-request and per-batch statistics,
// and the release of each request.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "errors.h"
#include "triton_api.h"
#include "vigil/vigil.h"

namespace vigil::triton {

// One output of one request: a slice of a run's output value.
struct OutputSlice {
  std::string name;
  vigil_dtype dtype = VIGIL_DTYPE_UNDEFINED;
  std::vector<int64_t> shape;
  const unsigned char* data = nullptr;
  size_t byte_size = 0;
};

// Sends a response carrying these outputs. Returns whether a response was
// sent, and in *problem what went wrong (then the response that was sent, if
// any, carries it as its error). A GPU output buffer is filled with
// vigil_session_copy.
bool SendOutputs(TRITONBACKEND_Request* request, const std::vector<OutputSlice>& outputs,
                 const vigil_session* session, int device_id, MaybeProblem* problem);

// Sends an error response; false when no response could be made.
bool SendError(TRITONBACKEND_Request* request, const Problem& problem);

// Reports the request's statistics (timestamps are ignored by Triton when
// success is false), then releases it. Logs what fails; never throws.
void ReportAndRelease(TRITONBACKEND_ModelInstance* instance, TRITONBACKEND_Request* request, bool success,
                      uint64_t exec_start, uint64_t compute_start, uint64_t compute_end, uint64_t exec_end);

void ReportBatch(TRITONBACKEND_ModelInstance* instance, uint64_t batch_size, uint64_t exec_start,
                 uint64_t compute_start, uint64_t compute_end, uint64_t exec_end);

}  // namespace vigil::triton
