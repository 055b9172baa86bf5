// One checked-call wrapper for every CUDA runtime, cuDNN and cuBLASLt call.
// A failing call becomes a Status whose Diagnosis is the translation of its
// status in the phase of the work where it happened (doctor/errors/cuda_errors.h:
// code, summary, ranked causes, fixes), with the facts of the call: the
// expression, file:line, the device, and for cuDNN the text of
// cudnnGetLastErrorString and cuDNN's log (cudnn_log.h).
//
// The phase is derived from the called function's name (PhaseOfCall:
// cudnnBackendExecute -> execution, cudaMallocAsync -> memory allocation,
// cudaMemcpy* -> host-device copy unless DeviceToDevice). Where the name does
// not say it (finalising an engine-heuristics descriptor is plan choice, not
// descriptor set-up), the call site names the phase:
//
//   VIGIL_CUDA_CALL(cudaMemcpyAsync(dst, src, n, cudaMemcpyHostToDevice, s));
//   VIGIL_CUDNN_CALL(cudnnBackendSetAttribute(...));
//   VIGIL_CUDNN_CALL_IN(kPlanChoice, cudnnBackendFinalize(heuristics));
//   VIGIL_CUBLAS_CALL(cublasLtMatmul(...));
//   Status s = VIGIL_CUDNN_STATUS_IN(kPlanChoice, cudnnBackendFinalize(graph));
//
// The *_CALL macros return from the enclosing function (Status or Result<T>)
// on failure; VIGIL_CUDNN_STATUS_IN gives the Status instead.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include "base/status.h"
#include "doctor/errors/cuda_errors.h"

namespace vigil::cuda {

using doctor::CallPhase;

struct CallSite {
  const char* expression;
  const char* file;
  int line;
  // kUnknown: derived from the expression's function name.
  CallPhase phase = CallPhase::kUnknown;
};

Status CudaCallFailed(cudaError_t error, const CallSite& site);
Status CudnnCallFailed(cudnnStatus_t status, const CallSite& site);
Status CublasCallFailed(cublasStatus_t status, const CallSite& site);

// OK for CUDNN_STATUS_SUCCESS, else CudnnCallFailed.
Status CudnnStatus(cudnnStatus_t status, const CallSite& site);

// The phase a failure at `site` is reported in: site.phase, or derived.
CallPhase PhaseOf(const CallSite& site);

// Whether a CUDA error leaves the context unusable for the rest of the
// process (illegal address, launch failure, ...): such errors are sticky.
bool IsStickyCudaError(cudaError_t error);

// Set once a sticky error was seen; every later call on the backend fails
// with the first such error, because the CUDA context cannot recover.
void RecordStickyError(const Status& status);
// The recorded sticky error, or OK.
Status StickyError();

// The status of the last kernel launch on this thread (cudaGetLastError),
// reported in the execution phase.
Status CheckLaunch(const char* kernel, const char* file, int line);

}  // namespace vigil::cuda

#define VIGIL_CUDA_CALL_IMPL_(phase, expr, text)                                                        \
  do {                                                                                                  \
    cudaError_t vigil_cuda_err_ = (expr);                                                               \
    if (vigil_cuda_err_ != cudaSuccess) {                                                               \
      return ::vigil::cuda::CudaCallFailed(vigil_cuda_err_,                                             \
                                           {text, __FILE__, __LINE__, ::vigil::doctor::CallPhase::phase}); \
    }                                                                                                   \
  } while (0)

#define VIGIL_CUDNN_CALL_IMPL_(phase, expr, text)                                                          \
  do {                                                                                                     \
    cudnnStatus_t vigil_cudnn_st_ = (expr);                                                                \
    if (vigil_cudnn_st_ != CUDNN_STATUS_SUCCESS) {                                                         \
      return ::vigil::cuda::CudnnCallFailed(vigil_cudnn_st_,                                               \
                                            {text, __FILE__, __LINE__, ::vigil::doctor::CallPhase::phase}); \
    }                                                                                                      \
  } while (0)

#define VIGIL_CUBLAS_CALL_IMPL_(phase, expr, text)                                                          \
  do {                                                                                                      \
    cublasStatus_t vigil_cublas_st_ = (expr);                                                               \
    if (vigil_cublas_st_ != CUBLAS_STATUS_SUCCESS) {                                                        \
      return ::vigil::cuda::CublasCallFailed(vigil_cublas_st_,                                              \
                                             {text, __FILE__, __LINE__, ::vigil::doctor::CallPhase::phase}); \
    }                                                                                                       \
  } while (0)

// Phase derived from the called function's name.
#define VIGIL_CUDA_CALL(expr) VIGIL_CUDA_CALL_IMPL_(kUnknown, expr, #expr)
#define VIGIL_CUDNN_CALL(expr) VIGIL_CUDNN_CALL_IMPL_(kUnknown, expr, #expr)
#define VIGIL_CUBLAS_CALL(expr) VIGIL_CUBLAS_CALL_IMPL_(kUnknown, expr, #expr)

// Phase named by the call site: a CallPhase enumerator, e.g. kPlanChoice.
#define VIGIL_CUDA_CALL_IN(phase, expr) VIGIL_CUDA_CALL_IMPL_(phase, expr, #expr)
#define VIGIL_CUDNN_CALL_IN(phase, expr) VIGIL_CUDNN_CALL_IMPL_(phase, expr, #expr)
#define VIGIL_CUBLAS_CALL_IN(phase, expr) VIGIL_CUBLAS_CALL_IMPL_(phase, expr, #expr)

// The Status of a cuDNN call (OK on success), without returning.
#define VIGIL_CUDNN_STATUS_IN(phase, expr) \
  ::vigil::cuda::CudnnStatus((expr), {#expr, __FILE__, __LINE__, ::vigil::doctor::CallPhase::phase})

// After a kernel launch: reports a bad launch configuration or a sticky error.
#define VIGIL_CHECK_LAUNCH(kernel_name) \
  VIGIL_RETURN_IF_ERROR(::vigil::cuda::CheckLaunch(kernel_name, __FILE__, __LINE__))
