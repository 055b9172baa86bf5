// One checked-call wrapper for every CUDA runtime, cuDNN and cuBLASLt call.
// A failing call becomes a Status whose Diagnosis records the library, the
// status name and number, the expression, file:line, the device, and for
// cuDNN the text of cudnnGetLastErrorString; the error code and causes depend
// on the status (out of memory, a sticky device fault, a missing sub-library).
//
//   VIGIL_CUDA_CALL(cudaMemcpyAsync(dst, src, n, cudaMemcpyHostToDevice, s));
//   VIGIL_CUDNN_CALL(cudnnBackendFinalize(desc));
//   VIGIL_CUBLAS_CALL(cublasLtMatmul(...));
//
// Each returns from the enclosing function (Status or Result<T>) on failure.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include "base/status.h"

namespace vigil::cuda {

struct CallSite {
  const char* expression;
  const char* file;
  int line;
};

Status CudaCallFailed(cudaError_t error, const CallSite& site);
Status CudnnCallFailed(cudnnStatus_t status, const CallSite& site);
Status CublasCallFailed(cublasStatus_t status, const CallSite& site);

// Whether a CUDA error leaves the context unusable for the rest of the
// process (illegal address, launch failure, ...): such errors are sticky.
bool IsStickyCudaError(cudaError_t error);

// Set once a sticky error was seen; every later call on the backend fails
// with the first such error, because the CUDA context cannot recover.
void RecordStickyError(const Status& status);
// The recorded sticky error, or OK.
Status StickyError();

// The status of the last kernel launch on this thread (cudaGetLastError).
Status CheckLaunch(const char* kernel, const char* file, int line);

}  // namespace vigil::cuda

#define VIGIL_CUDA_CALL(expr)                                                       \
  do {                                                                              \
    cudaError_t vigil_cuda_err_ = (expr);                                           \
    if (vigil_cuda_err_ != cudaSuccess) {                                           \
      return ::vigil::cuda::CudaCallFailed(vigil_cuda_err_, {#expr, __FILE__, __LINE__}); \
    }                                                                               \
  } while (0)

#define VIGIL_CUDNN_CALL(expr)                                                         \
  do {                                                                                 \
    cudnnStatus_t vigil_cudnn_st_ = (expr);                                            \
    if (vigil_cudnn_st_ != CUDNN_STATUS_SUCCESS) {                                     \
      return ::vigil::cuda::CudnnCallFailed(vigil_cudnn_st_, {#expr, __FILE__, __LINE__}); \
    }                                                                                  \
  } while (0)

#define VIGIL_CUBLAS_CALL(expr)                                                          \
  do {                                                                                   \
    cublasStatus_t vigil_cublas_st_ = (expr);                                            \
    if (vigil_cublas_st_ != CUBLAS_STATUS_SUCCESS) {                                     \
      return ::vigil::cuda::CublasCallFailed(vigil_cublas_st_, {#expr, __FILE__, __LINE__}); \
    }                                                                                    \
  } while (0)

// After a kernel launch: reports a bad launch configuration or a sticky error.
#define VIGIL_CHECK_LAUNCH(kernel_name) \
  VIGIL_RETURN_IF_ERROR(::vigil::cuda::CheckLaunch(kernel_name, __FILE__, __LINE__))
