// Shared between the per-library translation files of cuda_errors.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "doctor/errors/cuda_errors.h"

namespace vigil::doctor::gpu_errors {

// What a status means in a phase; TranslateGpuError adds the summary and facts.
struct Translation {
  ErrorCode code = ErrorCode::kInternal;
  std::vector<Cause> causes;
  std::vector<std::string> fixes;

  Translation& Because(std::string what, std::string evidence) {
    causes.push_back({std::move(what), std::move(evidence)});
    return *this;
  }
  Translation& Fix(std::string fix) {
    fixes.push_back(std::move(fix));
    return *this;
  }
};

// Fixes that many translations share.
inline constexpr const char* kDoctorFix =
    "run `vigil doctor`: it checks the driver, the CUDA runtime, cuDNN and each of its sub-libraries, and the GPU";
inline constexpr const char* kCudnnLogFix =
    "rerun with `--cudnn-log FILE` (CUDNN_LOGLEVEL_DBG=3 CUDNN_LOGDEST_DBG=FILE) to get cuDNN's own account of the "
    "failure";
inline constexpr const char* kReportFix =
    "this is a bug in vigil: report it with the model, the command line and this diagnosis";
inline constexpr const char* kCpuFallbackFix =
    "let this node run on the CPU backend: leave fallback on (no --no-fallback), or use --backend cpu";
inline constexpr const char* kSyncFix =
    "rerun with VIGIL_CUDA_SYNC=1 so that the node whose kernel faults is the one reported";
inline constexpr const char* kRestartFix =
    "the CUDA context cannot recover from this: restart the process (--isolate keeps a crash out of the caller)";
inline constexpr const char* kHardwareCheck =
    "check the GPU: `nvidia-smi -q -d ECC,PAGE_RETIREMENT`, Xid errors in `dmesg`, vendor diagnostics (`dcgmi diag`)";

std::span<const GpuStatusInfo> CudnnStatuses();
std::span<const GpuStatusInfo> CudaStatuses();
std::span<const GpuStatusInfo> CublasStatuses();

Translation TranslateCudnn(int status, CallPhase phase);
Translation TranslateCuda(int status, CallPhase phase);
Translation TranslateCublas(int status, CallPhase phase);

}  // namespace vigil::doctor::gpu_errors
