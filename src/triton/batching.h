// One TRITONBACKEND_ModelInstanceExecute call: each request's inputs
// gathered and checked on its own (a bad request gets vigil's diagnosis as
// its error response and never touches the others), requests whose shapes
// agree past the batch dim joined along dim 0 into one run through
// page-locked staging, outputs split back by each request's batch size, and
// every request answered, reported and released.
#pragma once

#include <cstdint>

#include "state.h"
#include "triton_api.h"

namespace vigil::triton {

// Answers, reports and releases every request; never throws.
void ExecuteRequests(InstanceState& instance, TRITONBACKEND_ModelInstance* triton_instance,
                     TRITONBACKEND_Request** requests, uint32_t request_count);

}  // namespace vigil::triton
