// Error translation for the CUDA runtime, cuDNN and cuBLAS(Lt): a failing
// status number, and the phase of the work in which it came back, become a
// Diagnosis with the causes and fixes that fit that status in that phase.
// CUDNN_STATUS_NOT_SUPPORTED while choosing a plan means "no engine for this
// pattern"; the same number at handle creation means something else.
//
// No CUDA headers here: numbers and names only, so that the doctor (which
// never links CUDA) and the CUDA module share one table.
//
//   Diagnosis d = TranslateGpuError(GpuLibrary::kCudnn, 3001, CallPhase::kPlanChoice,
//                                   "cudnnBackendFinalize");
#pragma once

#include <span>
#include <string_view>

#include "base/status.h"

namespace vigil::doctor {

enum class GpuLibrary { kCudaRuntime, kCudnn, kCublas };

// Where in the work a call happened. kUnknown is also what a call site passes
// to say "derive it from the called function's name" (PhaseOfCall).
enum class CallPhase {
  kUnknown,
  kLibraryLoad,       // dlopen, version checks
  kHandleCreation,    // cudnnCreate, cublasLtCreate, device/stream set-up
  kDescriptorSetup,   // tensor/operation/matmul descriptors, attributes
  kPlanChoice,        // heuristics, engine configs, operation graph and plan finalisation
  kMemoryAllocation,  // cudaMalloc*, workspace
  kExecution,         // kernels, cudnnBackendExecute, cublasLtMatmul, synchronisation
  kCopy,              // host<->device copies
};

// All phases but kUnknown, in the order above.
std::span<const CallPhase> AllCallPhases();

// "descriptor set-up", "plan choice", ... ("an unknown phase" for kUnknown).
std::string_view CallPhaseName(CallPhase phase);

// "CUDA runtime", "cuDNN", "cuBLASLt".
std::string_view GpuLibraryName(GpuLibrary library);

// One status value the table knows.
struct GpuStatusInfo {
  int number;
  std::string_view name;     // "CUDNN_STATUS_BAD_PARAM_NULL_POINTER", "cudaErrorMemoryAllocation"
  std::string_view meaning;  // in words: "a required pointer was null"
};

// Every status the table knows for `library` (for cuDNN: every cudnnStatus_t
// of cuDNN 9 but SUCCESS; for CUDA: the values seen in practice).
std::span<const GpuStatusInfo> KnownGpuStatuses(GpuLibrary library);

// The entry for `number`, or null when the table does not know it.
const GpuStatusInfo* FindGpuStatus(GpuLibrary library, int number);

// The phase of a call, from the text of the call expression:
// "cudnnBackendExecute(h, plan, pack)" -> kExecution. A cudaMemcpy* whose
// text says DeviceToDevice is execution, not a host<->device copy.
// Returns kUnknown for functions it does not know.
CallPhase PhaseOfCall(std::string_view expression);

// The Diagnosis for `status` returned by `library` during `phase`: code,
// summary (naming the call when given, the status name and number, and the
// phase), facts (library, status, phase), ranked causes with evidence, and
// fixes. Never empty: unknown numbers and kUnknown phases still get an honest
// diagnosis that names the number and the phase, with at least one cause and
// one fix.
Diagnosis TranslateGpuError(GpuLibrary library, int status, CallPhase phase, std::string_view call = {});

}  // namespace vigil::doctor
