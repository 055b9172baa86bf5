#include "responses.h"

#include <cstring>

namespace vigil::triton {

namespace {

// Copies one output slice into the buffer Triton gives for it.
MaybeProblem FillOutput(TRITONBACKEND_Response* response, const OutputSlice& out, const vigil_session* session,
                        int device_id) {
  const TypeInfo* type = TypeByVigil(out.dtype);
  if (!type) {
    return Problem{TRITONSERVER_ERROR_UNSUPPORTED, "output '" + out.name + "' has dtype " +
                                                       vigil_dtype_name(out.dtype) +
                                                       ", which Triton's protocol has no type for"};
  }
  TRITONBACKEND_Output* output = nullptr;
  if (MaybeProblem p = Call(TRITONBACKEND_ResponseOutput(response, &output, out.name.c_str(), type->triton,
                                                         out.shape.data(), static_cast<uint32_t>(out.shape.size())),
                            "TRITONBACKEND_ResponseOutput for output '" + out.name + "'")) {
    return p;
  }
  void* buffer = nullptr;
  TRITONSERVER_MemoryType memory = TRITONSERVER_MEMORY_CPU;
  int64_t memory_id = 0;
  if (MaybeProblem p = Call(TRITONBACKEND_OutputBuffer(output, &buffer, out.byte_size, &memory, &memory_id),
                            "TRITONBACKEND_OutputBuffer for output '" + out.name + "' (" +
                                std::to_string(out.byte_size) + " bytes)")) {
    return p;
  }
  if (out.byte_size == 0) return std::nullopt;
  if (!buffer) {
    return Problem{TRITONSERVER_ERROR_INTERNAL, "the server gave no buffer for output '" + out.name + "'"};
  }
  if (memory != TRITONSERVER_MEMORY_GPU) {
    std::memcpy(buffer, out.data, out.byte_size);
    return std::nullopt;
  }
  // The server wants this output in GPU memory: copy it there with the
  // instance's session (only a GPU session can).
  const int64_t n = static_cast<int64_t>(out.byte_size);
  vigil_tensor src{out.name.c_str(), VIGIL_DTYPE_UINT8, &n, 1, const_cast<unsigned char*>(out.data), out.byte_size,
                   VIGIL_MEMORY_HOST, 0, nullptr};
  vigil_tensor dst{out.name.c_str(), VIGIL_DTYPE_UINT8, &n, 1, buffer, out.byte_size, VIGIL_MEMORY_CUDA,
                   static_cast<int>(memory_id), nullptr};
  if (static_cast<int>(memory_id) != device_id) {
    return Problem{TRITONSERVER_ERROR_UNSUPPORTED, "the server asks for output '" + out.name + "' on GPU " +
                                                       std::to_string(memory_id) + ", this instance runs on GPU " +
                                                       std::to_string(device_id)};
  }
  if (vigil_status* st = vigil_session_copy(session, &src, &dst)) {
    return FromVigil(st, {"output: " + out.name + " (to the server's GPU buffer)"});
  }
  return std::nullopt;
}

}  // namespace

bool SendOutputs(TRITONBACKEND_Request* request, const std::vector<OutputSlice>& outputs,
                 const vigil_session* session, int device_id, MaybeProblem* problem) {
  TRITONBACKEND_Response* response = nullptr;
  if (MaybeProblem p = Call(TRITONBACKEND_ResponseNew(&response, request), "TRITONBACKEND_ResponseNew")) {
    *problem = std::move(p);
    return false;
  }
  for (const OutputSlice& out : outputs) {
    *problem = FillOutput(response, out, session, device_id);
    if (*problem) break;
  }
  TRITONSERVER_Error* error = *problem ? ToTriton(**problem) : nullptr;
  TRITONSERVER_Error* sent = TRITONBACKEND_ResponseSend(response, kTritonResponseCompleteFinal, error);
  if (error) TRITONSERVER_ErrorDelete(error);
  if (sent) {
    const std::string message = TakeMessage(sent);
    Log(TRITONSERVER_LOG_ERROR, "vigil: TRITONBACKEND_ResponseSend failed: " + message);
    TRITONSERVER_Error* d = TRITONBACKEND_ResponseDelete(response);
    if (d) TRITONSERVER_ErrorDelete(d);
    if (!*problem) *problem = Problem{TRITONSERVER_ERROR_INTERNAL, "TRITONBACKEND_ResponseSend failed: " + message};
    return false;
  }
  return true;
}

bool SendError(TRITONBACKEND_Request* request, const Problem& problem) {
  TRITONBACKEND_Response* response = nullptr;
  TRITONSERVER_Error* e = TRITONBACKEND_ResponseNew(&response, request);
  if (e) {
    Log(TRITONSERVER_LOG_ERROR, "vigil: cannot respond to a request: " + TakeMessage(e) +
                                    "; its error was: " + problem.message);
    return false;
  }
  TRITONSERVER_Error* error = ToTriton(problem);
  TRITONSERVER_Error* sent = TRITONBACKEND_ResponseSend(response, kTritonResponseCompleteFinal, error);
  TRITONSERVER_ErrorDelete(error);
  if (sent) {
    Log(TRITONSERVER_LOG_ERROR, "vigil: TRITONBACKEND_ResponseSend failed: " + TakeMessage(sent));
    TRITONSERVER_Error* d = TRITONBACKEND_ResponseDelete(response);
    if (d) TRITONSERVER_ErrorDelete(d);
    return false;
  }
  return true;
}

void ReportAndRelease(TRITONBACKEND_ModelInstance* instance, TRITONBACKEND_Request* request, bool success,
                      uint64_t exec_start, uint64_t compute_start, uint64_t compute_end, uint64_t exec_end) {
  TRITONSERVER_Error* e = TRITONBACKEND_ModelInstanceReportStatistics(instance, request, success, exec_start,
                                                                      compute_start, compute_end, exec_end);
  if (e) Log(TRITONSERVER_LOG_ERROR, "vigil: TRITONBACKEND_ModelInstanceReportStatistics failed: " + TakeMessage(e));
  e = TRITONBACKEND_RequestRelease(request, kTritonRequestReleaseAll);
  if (e) Log(TRITONSERVER_LOG_ERROR, "vigil: TRITONBACKEND_RequestRelease failed: " + TakeMessage(e));
}

void ReportBatch(TRITONBACKEND_ModelInstance* instance, uint64_t batch_size, uint64_t exec_start,
                 uint64_t compute_start, uint64_t compute_end, uint64_t exec_end) {
  TRITONSERVER_Error* e = TRITONBACKEND_ModelInstanceReportBatchStatistics(instance, batch_size, exec_start,
                                                                           compute_start, compute_end, exec_end);
  if (e) {
    Log(TRITONSERVER_LOG_ERROR, "vigil: TRITONBACKEND_ModelInstanceReportBatchStatistics failed: " + TakeMessage(e));
  }
}

}  // namespace vigil::triton
