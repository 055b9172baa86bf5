#include "backends/cuda/cuda_check.h"

#include <mutex>
#include <string>

#include <fmt/format.h>

namespace vigil::cuda {
namespace {

std::mutex sticky_mutex;
Status* sticky = nullptr;  // owned; never freed (the context is dead anyway)

std::string Where(const CallSite& site) {
  std::string file = site.file;
  size_t src = file.rfind("src/");
  return fmt::format("{}:{}", src == std::string::npos ? file : file.substr(src), site.line);
}

std::string CurrentDevice() {
  int device = -1;
  if (cudaGetDevice(&device) != cudaSuccess) return "unknown";
  return std::to_string(device);
}

Status Common(Status s, const char* library, const std::string& name, int number, const CallSite& site) {
  s.WithFact("library", library)
      .WithFact("status", fmt::format("{} ({})", name, number))
      .WithFact("call", site.expression)
      .WithFact("at", Where(site))
      .WithFact("device", CurrentDevice());
  return s;
}

}  // namespace

bool IsStickyCudaError(cudaError_t e) {
  switch (e) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorHardwareStackError:
    case cudaErrorAssert:
    case cudaErrorLaunchTimeout:
    case cudaErrorECCUncorrectable:
      return true;
    default:
      return false;
  }
}

void RecordStickyError(const Status& status) {
  std::lock_guard<std::mutex> lock(sticky_mutex);
  if (!sticky) sticky = new Status(status);
}

Status StickyError() {
  std::lock_guard<std::mutex> lock(sticky_mutex);
  if (!sticky) return Status::Ok();
  Status s = *sticky;
  s.WithContext("the CUDA context is unusable after an earlier device fault");
  return s;
}

Status CudaCallFailed(cudaError_t e, const CallSite& site) {
  std::string name = cudaGetErrorName(e);
  std::string text = cudaGetErrorString(e);
  Status s;
  switch (e) {
    case cudaErrorMemoryAllocation:
      s = OutOfMemoryError("CUDA ran out of device memory: {}", text);
      s.WithCause("the run needs more device memory than is free", "cudaMalloc failed")
          .WithFix("lower the batch size, or free the GPU from other processes (see nvidia-smi)");
      break;
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver:
    case cudaErrorInitializationError:
    case cudaErrorNoKernelImageForDevice:
    case cudaErrorUnsupportedPtxVersion:
    case cudaErrorSystemDriverMismatch:
    case cudaErrorCompatNotSupportedOnDevice:
    case cudaErrorDevicesUnavailable:
      s = EnvironmentError("CUDA cannot use the GPU: {} ({})", text, name);
      if (e == cudaErrorInsufficientDriver) {
        s.WithCause("the NVIDIA driver is older than the CUDA runtime vigil was built with");
        s.WithFix("update the NVIDIA driver");
      } else if (e == cudaErrorNoKernelImageForDevice || e == cudaErrorUnsupportedPtxVersion) {
        s.WithCause("vigil's CUDA module has no code for this GPU's architecture, or the driver is too old for its PTX");
        s.WithFix("rebuild with CMAKE_CUDA_ARCHITECTURES including this GPU, or update the driver");
      } else if (e == cudaErrorDevicesUnavailable) {
        s.WithCause("the GPU is in exclusive-process mode and in use by another process");
      }
      s.WithFix("run `vigil doctor` for the full GPU stack report");
      break;
    default:
      if (IsStickyCudaError(e)) {
        s = DeviceFaultError("a CUDA kernel faulted: {} ({})", text, name);
        s.WithCause("a kernel read or wrote outside its buffers (a vigil bug, or a wrongly sized buffer)")
            .WithCause("faulty GPU hardware", "if it recurs at random places; check `nvidia-smi -q -d ECC`")
            .WithFix("the CUDA context cannot recover: restart the process; run with --isolate and report the model");
      } else {
        s = InternalError("CUDA call failed: {} ({})", text, name);
      }
  }
  s = Common(std::move(s), "CUDA runtime", name, static_cast<int>(e), site);
  if (IsStickyCudaError(e)) RecordStickyError(s);
  return s;
}

Status CudnnCallFailed(cudnnStatus_t st, const CallSite& site) {
  std::string name = cudnnGetErrorString(st);
  char last[1024] = {};
  cudnnGetLastErrorString(last, sizeof last);
  int family = static_cast<int>(st) / 1000;
  Status s;
  if (st == CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED ||
      st == CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED) {
    s = OutOfMemoryError("cuDNN could not allocate memory ({})", name);
  } else if (family == 3) {  // CUDNN_STATUS_NOT_SUPPORTED*
    s = UnsupportedError("cuDNN does not support this operation here ({})", name);
    if (st == CUDNN_STATUS_NOT_SUPPORTED_SUBLIBRARY_UNAVAILABLE) {
      s.WithCause("a cuDNN sub-library this call needs is not loaded",
                  "CUDNN_LIB_CONFIG or a partial install leaves it out");
      s.WithFix("run `vigil doctor` to see which cuDNN sub-libraries are present");
    }
  } else if (family == 2) {  // CUDNN_STATUS_BAD_PARAM*
    s = InternalError("cuDNN rejected a parameter ({})", name);
    s.WithCause("vigil built a descriptor cuDNN does not accept: a vigil bug");
  } else if (family == 4) {  // CUDNN_STATUS_INTERNAL_ERROR*
    s = InternalError("cuDNN failed internally ({})", name);
    s.WithCause("out of device memory inside cuDNN", "cuDNN reports allocation failures as internal errors")
        .WithCause("a cuDNN and driver version mismatch", "see `vigil doctor`");
  } else if (family == 5) {  // CUDNN_STATUS_EXECUTION_FAILED*
    s = DeviceFaultError("a cuDNN kernel failed to execute ({})", name);
    s.WithCause("a sticky CUDA error from an earlier kernel, or an out-of-bounds buffer");
  } else if (st == CUDNN_STATUS_NOT_INITIALIZED ||
             st == CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH || st == CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED) {
    s = EnvironmentError("cuDNN cannot start ({})", name);
    s.WithCause("no usable GPU or driver, or cuDNN libraries of different versions")
        .WithFix("run `vigil doctor`");
  } else {
    s = InternalError("cuDNN call failed ({})", name);
  }
  if (last[0]) s.WithFact("cudnnGetLastErrorString", last);
  return Common(std::move(s), "cuDNN", name, static_cast<int>(st), site);
}

// cuBLASLt has no status-name function of its own (cublasGetStatusName is in
// libcublas, which the module does not load).
const char* CublasStatusName(cublasStatus_t st) {
  switch (st) {
    case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_MAPPING_ERROR: return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
    case CUBLAS_STATUS_LICENSE_ERROR: return "CUBLAS_STATUS_LICENSE_ERROR";
    default: return "CUBLAS_STATUS_UNKNOWN";
  }
}

Status CublasCallFailed(cublasStatus_t st, const CallSite& site) {
  std::string name = CublasStatusName(st);
  Status s;
  switch (st) {
    case CUBLAS_STATUS_ALLOC_FAILED:
      s = OutOfMemoryError("cuBLASLt could not allocate memory ({})", name);
      break;
    case CUBLAS_STATUS_NOT_SUPPORTED:
    case CUBLAS_STATUS_ARCH_MISMATCH:
      s = UnsupportedError("cuBLASLt does not support this matrix product here ({})", name);
      break;
    case CUBLAS_STATUS_NOT_INITIALIZED:
      s = EnvironmentError("cuBLASLt cannot start ({})", name);
      s.WithFix("run `vigil doctor`");
      break;
    case CUBLAS_STATUS_EXECUTION_FAILED:
      s = DeviceFaultError("a cuBLASLt kernel failed to execute ({})", name);
      break;
    default:
      s = InternalError("cuBLASLt call failed ({})", name);
  }
  return Common(std::move(s), "cuBLASLt", name, static_cast<int>(st), site);
}

Status CheckLaunch(const char* kernel, const char* file, int line) {
  cudaError_t e = cudaGetLastError();
  if (e == cudaSuccess) return Status::Ok();
  return CudaCallFailed(e, {kernel, file, line}).WithContext(fmt::format("launching {}", kernel));
}

}  // namespace vigil::cuda
