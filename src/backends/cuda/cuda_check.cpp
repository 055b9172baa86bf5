#include "backends/cuda/cuda_check.h"

#include <mutex>
#include <string>

#include <fmt/format.h>

#include "backends/cuda/cudnn_log.h"

namespace vigil::cuda {
namespace {

using doctor::GpuLibrary;

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

// "NVIDIA H200 (compute capability 9.0)", for diagnoses about the GPU's
// architecture; empty when the device cannot be queried.
std::string DeviceArchitecture() {
  int device = -1;
  cudaDeviceProp prop{};
  if (cudaGetDevice(&device) != cudaSuccess || cudaGetDeviceProperties(&prop, device) != cudaSuccess) return {};
  return fmt::format("{} (compute capability {}.{}, sm_{}{})", prop.name, prop.major, prop.minor, prop.major,
                     prop.minor);
}

// The translated Diagnosis for the status, plus the facts of the call.
Status Translate(GpuLibrary library, int number, const CallSite& site) {
  Status s(doctor::TranslateGpuError(library, number, PhaseOf(site), site.expression));
  s.WithFact("call", site.expression).WithFact("at", Where(site)).WithFact("device", CurrentDevice());
  if (s.code() == ErrorCode::kEnvironment || s.code() == ErrorCode::kUnsupported) {
    std::string gpu = DeviceArchitecture();
    if (!gpu.empty()) s.WithFact("GPU", gpu);
  }
  return s;
}

}  // namespace

CallPhase PhaseOf(const CallSite& site) {
  return site.phase != CallPhase::kUnknown ? site.phase : doctor::PhaseOfCall(site.expression);
}

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
  Status s = Translate(GpuLibrary::kCudaRuntime, static_cast<int>(e), site);
  // The runtime's own name and text, also for numbers the table lacks.
  s.WithFact("cudaGetErrorString", fmt::format("{}: {}", cudaGetErrorName(e), cudaGetErrorString(e)));
  if (IsStickyCudaError(e)) RecordStickyError(s);
  return s;
}

Status CudnnCallFailed(cudnnStatus_t st, const CallSite& site) {
  // Read first: cudnnGetLastErrorString is per thread and cleared once read,
  // and the calls below must not replace it.
  char last[1024] = {};
  cudnnGetLastErrorString(last, sizeof last);
  Status s = Translate(GpuLibrary::kCudnn, static_cast<int>(st), site);
  if (last[0]) s.WithFact("cudnnGetLastErrorString", last);
  AttachCudnnLog(s);
  return s;
}

Status CudnnStatus(cudnnStatus_t st, const CallSite& site) {
  return st == CUDNN_STATUS_SUCCESS ? Status::Ok() : CudnnCallFailed(st, site);
}

Status CublasCallFailed(cublasStatus_t st, const CallSite& site) {
  return Translate(GpuLibrary::kCublas, static_cast<int>(st), site);
}

Status CheckLaunch(const char* kernel, const char* file, int line) {
  cudaError_t e = cudaGetLastError();
  if (e == cudaSuccess) return Status::Ok();
  std::string what = fmt::format("{}<<<...>>> (kernel launch)", kernel);
  return CudaCallFailed(e, {what.c_str(), file, line, CallPhase::kExecution});
}

}  // namespace vigil::cuda
