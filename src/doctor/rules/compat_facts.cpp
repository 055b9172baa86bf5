// The compatibility facts, in one place. Each entry names its source; when
// NVIDIA publishes a new support matrix, this is the only file to change.
// The facts were gathered in /work/shared/FACTS.md from:
//   [cudnn-9.0.0]  https://docs.nvidia.com/deeplearning/cudnn/backend/v9.0.0/reference/support-matrix.html
//   [cudnn-9.5]    https://docs.nvidia.com/deeplearning/cudnn/backend/v9.5.0/reference/support-matrix.html
//   [cudnn-9.10.2] https://docs.nvidia.com/deeplearning/cudnn/backend/v9.10.2/reference/support-matrix.html
//   [cudnn-9.17.0] https://docs.nvidia.com/deeplearning/cudnn/backend/v9.17.0/reference/support-matrix.html
//   [cuda-compat]  https://docs.nvidia.com/deploy/cuda-compatibility/ (minor-version compatibility)
//   [cudnn-odds]   cuDNN developer guide, "Odds and Ends" (seed 004): library
//                  configurations, environment variables
#include "doctor/rules/compat_facts.h"

namespace vigil::doctor {
namespace {

Version MM(int major, int minor) { return MakeVersion(major, minor, 0, 2); }
Version Driver(int a, int b, int c) { return MakeVersion(a, b, c, 3); }

// Compute capabilities of cuDNN 9.0 - 9.10 ([cudnn-9.0.0], [cudnn-9.5]).
const std::vector<int> kCcPreBlackwell = {50, 60, 61, 70, 75, 80, 86, 89, 90};
// cuDNN 9.7 - 9.10 built for CUDA 12.8+ add Blackwell 10.0 and 12.0
// ([cudnn-9.10.2]; FACTS.md: "first Blackwell-capable releases: cuDNN 9.7").
const std::vector<int> kCcWithBlackwell = {50, 60, 61, 70, 75, 80, 86, 89, 90, 100, 120};
// cuDNN 9.11 and later: support below 7.5 ends after the 9.10 line
// ([cudnn-9.17.0], FACTS.md "Older GPUs").
const std::vector<int> kCcTuringOn = {75, 80, 86, 89, 90, 100, 120};

const std::vector<CudnnSupportRow>& Table() {
  static const std::vector<CudnnSupportRow> kRows = {
      // cuDNN 9.0 - 9.6 for CUDA 12.x, driver >= 525.60.13 ([cudnn-9.0.0] 12.0-12.3, [cudnn-9.5] 12.0-12.6).
      {MM(9, 0), MM(9, 6), 12, 0, 99, Driver(525, 60, 13), 50, 90, kCcPreBlackwell, "cuDNN 9.0.0 / 9.5 support matrix"},
      // cuDNN 9.0 - 9.6 for CUDA 11.x, driver >= 450.80.02 ([cudnn-9.0.0] 11.0-11.8, [cudnn-9.5] 11.8).
      {MM(9, 0), MM(9, 6), 11, 0, 99, Driver(450, 80, 2), 50, 90, kCcPreBlackwell, "cuDNN 9.0.0 / 9.5 support matrix"},
      // cuDNN 9.7 - 9.10 built for CUDA 12.8/12.9: driver >= 570.26, adds 10.0 and 12.0 ([cudnn-9.10.2]).
      {MM(9, 7), MM(9, 10), 12, 8, 99, Driver(570, 26, 0), 50, 120, kCcWithBlackwell, "cuDNN 9.10.2 support matrix"},
      // cuDNN 9.7 - 9.10 built for CUDA 12.0-12.7: driver >= 525.60.13, up to 9.0 ([cudnn-9.10.2]).
      {MM(9, 7), MM(9, 10), 12, 0, 7, Driver(525, 60, 13), 50, 90, kCcPreBlackwell, "cuDNN 9.10.2 support matrix"},
      // cuDNN 9.11 and later for CUDA 13.x: driver >= 580.65.06, 7.5 8.0 8.6 8.9 9.0 10.0 12.0 only ([cudnn-9.17.0]).
      {MM(9, 11), MM(9, 99), 13, 0, 99, Driver(580, 65, 6), 75, 120, kCcTuringOn, "cuDNN 9.17.0 support matrix"},
      // cuDNN 9.11 and later for CUDA 12.x: driver >= 525.60.13, 7.5 - 12.0 ([cudnn-9.17.0]).
      {MM(9, 11), MM(9, 99), 12, 0, 99, Driver(525, 60, 13), 75, 120, {}, "cuDNN 9.17.0 support matrix"},
  };
  return kRows;
}

bool InRange(const Version& v, const Version& first, const Version& last) {
  Version mm = MM(v.major, v.minor);
  return !(mm < first) && !(last < mm);
}

}  // namespace

const CudnnSupportRow* FindCudnnSupport(const Version& cudnn, const Version& built_for_cuda) {
  if (!cudnn.known() || !built_for_cuda.known()) return nullptr;
  for (const CudnnSupportRow& row : Table()) {
    if (!InRange(cudnn, row.cudnn_first, row.cudnn_last)) continue;
    if (built_for_cuda.major != row.cuda_major) continue;
    if (built_for_cuda.minor < row.cuda_minor_first || built_for_cuda.minor > row.cuda_minor_last) continue;
    return &row;
  }
  return nullptr;
}

Version MinimumDriverForCudaMajor(int cuda_major) {
  // [cuda-compat]: minor-version compatibility needs at least this driver for
  // any application of the major; the same numbers are in the cuDNN matrices.
  switch (cuda_major) {
    case 11: return Driver(450, 80, 2);
    case 12: return Driver(525, 60, 13);
    case 13: return Driver(580, 65, 6);
    default: return {};
  }
}

std::string_view MinimumDriverSource() {
  return "CUDA compatibility guide (minor-version compatibility) and the cuDNN support matrices";
}

const std::vector<std::string>& KnownCudnnLibConfigs() {
  // [cudnn-odds] "cuDNN Library Configuration": FULL (default) and GRAPH_JIT_ONLY.
  static const std::vector<std::string> kConfigs = {"FULL", "GRAPH_JIT_ONLY"};
  return kConfigs;
}

const std::vector<std::string>& GraphJitOnlyRequiredSubLibraries() {
  // [cudnn-odds]: GRAPH_JIT_ONLY needs libcudnn, libcudnn_graph and
  // libcudnn_engines_runtime_compiled.
  static const std::vector<std::string> kRequired = {"graph", "engines_runtime_compiled"};
  return kRequired;
}

int GraphJitOnlyMinCc() { return 80; }  // [cudnn-odds]: "Ampere and later"

std::string_view CudnnLibConfigSource() { return "cuDNN developer guide, \"cuDNN Library Configuration\""; }

const std::vector<DeprecatedVariable>& DeprecatedCudnnLogVariables() {
  // [cudnn-odds] "Environment Variables": these three are marked
  // "Troubleshooting - Deprecated"; CUDNN_LOGLEVEL_DBG (0-3, since 9.0) replaces them.
  static const std::vector<DeprecatedVariable> kVars = {
      {"CUDNN_LOGINFO_DBG", "CUDNN_LOGLEVEL_DBG=3"},
      {"CUDNN_LOGWARN_DBG", "CUDNN_LOGLEVEL_DBG=2"},
      {"CUDNN_LOGERR_DBG", "CUDNN_LOGLEVEL_DBG=1"},
  };
  return kVars;
}

std::string_view CudnnLoggingSource() { return "cuDNN developer guide, \"Environment Variables\""; }

}  // namespace vigil::doctor
