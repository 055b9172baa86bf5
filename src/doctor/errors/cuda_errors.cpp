// The public side of error translation: phase names, the phase of a call
// derived from its function name, the status tables, the assembly of a
// Diagnosis, and the cuBLAS(Lt) statuses. cuDNN and CUDA runtime statuses
// are translated in cuda_errors_cudnn.cpp and cuda_errors_cuda.cpp.
#include "doctor/errors/cuda_errors.h"

#include <array>
#include <cctype>

#include <fmt/format.h>

#include "doctor/errors/cuda_errors_internal.h"

namespace vigil::doctor {
namespace gpu_errors {
namespace {

// cublas_api.h, cublasStatus_t.
constexpr GpuStatusInfo kCublasStatuses[] = {
    {1, "CUBLAS_STATUS_NOT_INITIALIZED", "the cuBLAS(Lt) handle or library is not initialised"},
    {3, "CUBLAS_STATUS_ALLOC_FAILED", "cuBLAS(Lt) could not allocate memory"},
    {7, "CUBLAS_STATUS_INVALID_VALUE", "an unsupported value or parameter was passed"},
    {8, "CUBLAS_STATUS_ARCH_MISMATCH", "the GPU lacks a feature the operation needs"},
    {11, "CUBLAS_STATUS_MAPPING_ERROR", "access to GPU memory space failed"},
    {13, "CUBLAS_STATUS_EXECUTION_FAILED", "the GPU program failed to execute"},
    {14, "CUBLAS_STATUS_INTERNAL_ERROR", "an internal cuBLAS(Lt) operation failed"},
    {15, "CUBLAS_STATUS_NOT_SUPPORTED", "the requested combination is not supported"},
    {16, "CUBLAS_STATUS_LICENSE_ERROR", "a licence check failed"},
};

}  // namespace

std::span<const GpuStatusInfo> CublasStatuses() { return kCublasStatuses; }

Translation TranslateCublas(int status, CallPhase phase) {
  Translation t;
  switch (status) {
    case 1:
      if (phase == CallPhase::kHandleCreation || phase == CallPhase::kLibraryLoad) {
        t.code = ErrorCode::kEnvironment;
        t.Because("no usable GPU or driver for cuBLASLt", "cublasLtCreate initialises the CUDA context and fails first")
            .Because("a libcublasLt for another CUDA major version than the runtime",
                     "cuBLASLt's major version follows CUDA's")
            .Fix(kDoctorFix);
      } else {
        t.Because("a cuBLASLt handle used before it was created or after it was destroyed",
                  "the handle was created successfully earlier in this process")
            .Fix(kReportFix);
      }
      break;
    case 3:
      t.code = ErrorCode::kOutOfMemory;
      t.Because("device memory is exhausted", "cuBLASLt allocates its workspace and handle state on the GPU")
          .Because("other processes hold the GPU's memory", "see nvidia-smi")
          .Fix("lower the batch size")
          .Fix("lower --gpu-mem-limit, so that vigil's memory check leaves room for the libraries")
          .Fix("free the GPU from other processes (nvidia-smi)");
      break;
    case 7:
      t.Because(phase == CallPhase::kExecution
                    ? "a matrix pointer is not aligned as the plan promised, or the workspace is too small"
                    : "vigil set a matrix layout or matmul attribute cuBLASLt does not accept",
                fmt::format("CUBLAS_STATUS_INVALID_VALUE during {}", CallPhaseName(phase)))
          .Fix(kReportFix)
          .Fix(kCpuFallbackFix);
      break;
    case 8:
      t.code = ErrorCode::kUnsupported;
      t.Because("this GPU lacks a feature the matrix product needs (a data type or tensor-core mode)",
                "cuBLASLt checks the compute capability")
          .Fix("use float32 or float16 instead of the data type this GPU lacks")
          .Fix(kCpuFallbackFix);
      break;
    case 11:
      t.code = ErrorCode::kDeviceFault;
      t.Because("access to GPU memory failed, often after an earlier kernel fault", "the status is a mapping error")
          .Fix(kSyncFix)
          .Fix(kHardwareCheck);
      break;
    case 13:
      t.code = ErrorCode::kDeviceFault;
      t.Because("an earlier kernel faulted and the error surfaced in the matrix product",
                "CUDA reports kernel faults asynchronously")
          .Because("an operand buffer smaller than its matrix layout", "the kernel read or wrote outside it")
          .Because("faulty GPU hardware", "if it recurs at random places")
          .Fix(kSyncFix)
          .Fix(kHardwareCheck);
      break;
    case 14:
      if (phase == CallPhase::kHandleCreation) {
        t.code = ErrorCode::kEnvironment;
        t.Because("libcublasLt does not fit the driver or the CUDA runtime", "cublasLtCreate failed internally")
            .Because("device memory exhausted by another process", "handle creation allocates on the GPU")
            .Fix(kDoctorFix);
      } else {
        t.Because("cuBLASLt failed internally, often an allocation or a kernel launch it could not make",
                  fmt::format("during {}", CallPhaseName(phase)))
            .Fix(kSyncFix)
            .Fix(kDoctorFix);
      }
      break;
    case 15:
      t.code = ErrorCode::kUnsupported;
      if (phase == CallPhase::kDescriptorSetup) {
        t.Because("this libcublasLt does not know a matmul attribute vigil sets",
                  "an older cuBLASLt than the one vigil was built against")
            .Fix(kDoctorFix);
      } else {
        t.Because("cuBLASLt has no algorithm for this combination of data types, layouts, epilogue and alignment",
                  fmt::format("NOT_SUPPORTED during {}", CallPhaseName(phase)))
            .Fix(kCpuFallbackFix)
            .Fix("try float16 or --tf32 for float32 models");
      }
      break;
    case 16:
      t.code = ErrorCode::kEnvironment;
      t.Because("the cuBLAS(Lt) installation failed a licence check", "CUBLAS_STATUS_LICENSE_ERROR")
          .Fix("reinstall cuBLAS from NVIDIA's CUDA toolkit or wheels");
      break;
    default:
      t.Because(fmt::format("cuBLASLt returned status {}, which vigil's table does not know", status),
                "a cuBLAS release newer than the table (cublas_api.h)")
          .Fix(kDoctorFix);
  }
  return t;
}

}  // namespace gpu_errors

namespace {

using gpu_errors::Translation;

constexpr std::array kPhases = {CallPhase::kLibraryLoad,      CallPhase::kHandleCreation, CallPhase::kDescriptorSetup,
                                CallPhase::kPlanChoice,       CallPhase::kMemoryAllocation, CallPhase::kExecution,
                                CallPhase::kCopy};

enum class Match { kExact, kPrefix, kContains };

struct PhaseRule {
  std::string_view pattern;
  Match match;
  CallPhase phase;
};

// First match wins: exact names before the prefixes they share.
constexpr PhaseRule kPhaseRules[] = {
    // handle creation: the library handles and the device/stream they need
    {"cudnnCreate", Match::kExact, CallPhase::kHandleCreation},
    {"cudnnSetStream", Match::kExact, CallPhase::kHandleCreation},
    {"cudnnSetCallback", Match::kExact, CallPhase::kHandleCreation},
    {"cublasLtCreate", Match::kExact, CallPhase::kHandleCreation},
    {"cublasCreate", Match::kPrefix, CallPhase::kHandleCreation},
    {"cudaSetDevice", Match::kExact, CallPhase::kHandleCreation},
    {"cudaInitDevice", Match::kExact, CallPhase::kHandleCreation},
    {"cudaGetDevice", Match::kPrefix, CallPhase::kHandleCreation},
    {"cudaDeviceGet", Match::kPrefix, CallPhase::kHandleCreation},
    {"cudaMemPool", Match::kPrefix, CallPhase::kHandleCreation},
    {"cudaStreamCreate", Match::kPrefix, CallPhase::kHandleCreation},
    {"cudaEventCreate", Match::kPrefix, CallPhase::kHandleCreation},
    {"cudaEventDestroy", Match::kExact, CallPhase::kHandleCreation},
    // library load and version checks
    {"dlopen", Match::kExact, CallPhase::kLibraryLoad},
    {"dlsym", Match::kExact, CallPhase::kLibraryLoad},
    {"cudnnGetVersion", Match::kExact, CallPhase::kLibraryLoad},
    {"cudnnGetCudartVersion", Match::kExact, CallPhase::kLibraryLoad},
    {"cudnnGetMaxDeviceVersion", Match::kExact, CallPhase::kLibraryLoad},
    {"VersionCheck", Match::kContains, CallPhase::kLibraryLoad},
    {"GetVersion", Match::kContains, CallPhase::kLibraryLoad},
    // execution (exact names that share a prefix with descriptor calls)
    {"cublasLtMatmul", Match::kExact, CallPhase::kExecution},
    {"cudnnBackendExecute", Match::kExact, CallPhase::kExecution},
    // plan choice
    {"cudnnBackendGetAttribute", Match::kExact, CallPhase::kPlanChoice},
    {"cublasLtMatmulAlgo", Match::kPrefix, CallPhase::kPlanChoice},
    {"Algorithm", Match::kContains, CallPhase::kPlanChoice},
    {"WorkspaceSize", Match::kContains, CallPhase::kPlanChoice},
    // recording a run as a CUDA graph and configuring kernels: preparing execution
    {"cudaStreamBeginCapture", Match::kExact, CallPhase::kPlanChoice},
    {"cudaStreamEndCapture", Match::kExact, CallPhase::kPlanChoice},
    {"cudaStreamIsCapturing", Match::kExact, CallPhase::kPlanChoice},
    {"cudaGraphInstantiate", Match::kPrefix, CallPhase::kPlanChoice},
    {"cudaGraphUpload", Match::kExact, CallPhase::kPlanChoice},
    {"cudaFuncSetAttribute", Match::kExact, CallPhase::kPlanChoice},
    // descriptor set-up
    {"cudnnBackend", Match::kPrefix, CallPhase::kDescriptorSetup},
    {"cudnnCreate", Match::kPrefix, CallPhase::kDescriptorSetup},
    {"cudnnSet", Match::kPrefix, CallPhase::kDescriptorSetup},
    {"cublasLtMatrixLayout", Match::kPrefix, CallPhase::kDescriptorSetup},
    {"cublasLtMatmulDesc", Match::kPrefix, CallPhase::kDescriptorSetup},
    {"cublasLtMatmulPreference", Match::kPrefix, CallPhase::kDescriptorSetup},
    {"cublasLtMatrixTransformDesc", Match::kPrefix, CallPhase::kDescriptorSetup},
    // memory
    {"cudaMalloc", Match::kPrefix, CallPhase::kMemoryAllocation},
    {"cudaFree", Match::kPrefix, CallPhase::kMemoryAllocation},
    {"cudaHostAlloc", Match::kExact, CallPhase::kMemoryAllocation},
    {"cudaHostRegister", Match::kExact, CallPhase::kMemoryAllocation},
    {"cudaMemGetInfo", Match::kExact, CallPhase::kMemoryAllocation},
    // host<->device copies (device-to-device is handled in PhaseOfCall)
    {"cudaMemcpy", Match::kPrefix, CallPhase::kCopy},
    // execution: kernels, and the calls where their asynchronous errors surface
    {"cudaMemset", Match::kPrefix, CallPhase::kExecution},
    {"cudaLaunch", Match::kPrefix, CallPhase::kExecution},
    {"cudaGraphLaunch", Match::kExact, CallPhase::kExecution},
    {"Synchronize", Match::kContains, CallPhase::kExecution},
    {"cudaStreamWaitEvent", Match::kExact, CallPhase::kExecution},
    {"cudaEventRecord", Match::kExact, CallPhase::kExecution},
    {"cudaEventElapsedTime", Match::kExact, CallPhase::kExecution},
    {"cudaGetLastError", Match::kExact, CallPhase::kExecution},
    {"cudaPeekAtLastError", Match::kExact, CallPhase::kExecution},
    {"Forward", Match::kContains, CallPhase::kExecution},
    {"cudnnAddTensor", Match::kExact, CallPhase::kExecution},
    {"cudnnOpTensor", Match::kExact, CallPhase::kExecution},
    {"cudnnTransformTensor", Match::kExact, CallPhase::kExecution},
    {"cudnnReduceTensor", Match::kExact, CallPhase::kExecution},
};

bool Matches(const PhaseRule& rule, std::string_view name) {
  switch (rule.match) {
    case Match::kExact: return name == rule.pattern;
    case Match::kPrefix: return name.starts_with(rule.pattern);
    case Match::kContains: return name.find(rule.pattern) != std::string_view::npos;
  }
  return false;
}

// "::cudnnBackendExecute(h, p, v)" -> "cudnnBackendExecute".
std::string_view CalledFunction(std::string_view expression) {
  size_t i = 0;
  while (i < expression.size() && (std::isspace(static_cast<unsigned char>(expression[i])) || expression[i] == ':')) ++i;
  size_t j = i;
  while (j < expression.size() && (std::isalnum(static_cast<unsigned char>(expression[j])) || expression[j] == '_')) ++j;
  return expression.substr(i, j - i);
}

}  // namespace

std::span<const CallPhase> AllCallPhases() { return kPhases; }

std::string_view CallPhaseName(CallPhase phase) {
  switch (phase) {
    case CallPhase::kLibraryLoad: return "library load";
    case CallPhase::kHandleCreation: return "handle creation";
    case CallPhase::kDescriptorSetup: return "descriptor set-up";
    case CallPhase::kPlanChoice: return "plan choice";
    case CallPhase::kMemoryAllocation: return "memory allocation";
    case CallPhase::kExecution: return "execution";
    case CallPhase::kCopy: return "host-device copy";
    case CallPhase::kUnknown: break;
  }
  return "an unknown phase";
}

std::string_view GpuLibraryName(GpuLibrary library) {
  switch (library) {
    case GpuLibrary::kCudaRuntime: return "CUDA runtime";
    case GpuLibrary::kCudnn: return "cuDNN";
    case GpuLibrary::kCublas: return "cuBLASLt";
  }
  return "GPU library";
}

std::span<const GpuStatusInfo> KnownGpuStatuses(GpuLibrary library) {
  switch (library) {
    case GpuLibrary::kCudaRuntime: return gpu_errors::CudaStatuses();
    case GpuLibrary::kCudnn: return gpu_errors::CudnnStatuses();
    case GpuLibrary::kCublas: return gpu_errors::CublasStatuses();
  }
  return {};
}

const GpuStatusInfo* FindGpuStatus(GpuLibrary library, int number) {
  for (const GpuStatusInfo& info : KnownGpuStatuses(library)) {
    if (info.number == number) return &info;
  }
  return nullptr;
}

CallPhase PhaseOfCall(std::string_view expression) {
  std::string_view name = CalledFunction(expression);
  if (name.empty()) return CallPhase::kUnknown;
  // A device-to-device copy is part of a kernel's work, not a transfer.
  if (name.starts_with("cudaMemcpy") && expression.find("DeviceToDevice") != std::string_view::npos) {
    return CallPhase::kExecution;
  }
  for (const PhaseRule& rule : kPhaseRules) {
    if (Matches(rule, name)) return rule.phase;
  }
  return CallPhase::kUnknown;
}

Diagnosis TranslateGpuError(GpuLibrary library, int status, CallPhase phase, std::string_view call) {
  Translation t;
  switch (library) {
    case GpuLibrary::kCudaRuntime: t = gpu_errors::TranslateCuda(status, phase); break;
    case GpuLibrary::kCudnn: t = gpu_errors::TranslateCudnn(status, phase); break;
    case GpuLibrary::kCublas: t = gpu_errors::TranslateCublas(status, phase); break;
  }
  const GpuStatusInfo* info = FindGpuStatus(library, status);
  std::string name = info ? std::string(info->name) : fmt::format("an unknown {} status", GpuLibraryName(library));
  std::string who = call.empty() ? std::string(GpuLibraryName(library)) : std::string(CalledFunction(call));
  if (who.empty()) who = std::string(call);
  Diagnosis d;
  d.code = t.code;
  d.summary = fmt::format("{} failed with {} ({}) during {}", who, name, status, CallPhaseName(phase));
  if (info) d.summary += fmt::format(": {}", info->meaning);
  d.facts.push_back({"library", std::string(GpuLibraryName(library))});
  d.facts.push_back({"status", fmt::format("{} ({})", info ? info->name : std::string_view("unknown"), status)});
  d.facts.push_back({"phase", std::string(CallPhaseName(phase))});
  if (t.causes.empty()) {
    t.Because(fmt::format("{} reported {} during {}; vigil has no more specific explanation for it there",
                          GpuLibraryName(library), name, CallPhaseName(phase)),
              fmt::format("status {}", status));
  }
  if (t.fixes.empty()) t.Fix(gpu_errors::kDoctorFix);
  if (library == GpuLibrary::kCudnn) t.Fix(gpu_errors::kCudnnLogFix);
  d.causes = std::move(t.causes);
  d.fixes = std::move(t.fixes);
  return d;
}

}  // namespace vigil::doctor
