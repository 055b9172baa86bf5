// The compatibility facts the doctor's rules check against: which CUDA majors
// and GPUs each cuDNN release supports, the minimum drivers, and cuDNN's
// library configurations. All of them live in compat_facts.cpp, one table,
// with the source of each fact next to it; rules never hard-code them.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "doctor/probe/version.h"

namespace vigil::doctor {

// One row of a cuDNN support matrix: a range of cuDNN releases built for a
// range of CUDA versions of one major.
struct CudnnSupportRow {
  Version cudnn_first;  // major.minor, inclusive
  Version cudnn_last;   // major.minor, inclusive
  int cuda_major = 0;
  int cuda_minor_first = 0;  // the build's CUDA (cudnnGetCudartVersion) minor range
  int cuda_minor_last = 99;
  Version min_driver_linux;  // e.g. 525.60.13
  // Compute capabilities as major*10+minor. min/max bound the range; `listed`
  // are the ones the matrix names (a capability inside the range but not
  // listed is only a warning).
  int min_cc = 0;
  int max_cc = 0;
  std::vector<int> listed_cc;
  std::string_view source;
};

// The most specific row for this cuDNN release and the CUDA version it was
// built for (cudnnGetCudartVersion), or nullptr when the table has none.
const CudnnSupportRow* FindCudnnSupport(const Version& cudnn, const Version& built_for_cuda);

// Minimum Linux driver release for any CUDA `cuda_major`.x application under
// minor-version compatibility; unknown Version for majors not in the table.
Version MinimumDriverForCudaMajor(int cuda_major);
std::string_view MinimumDriverSource();

// cuDNN library configurations (CUDNN_LIB_CONFIG), seed 004 "cuDNN Library
// Configuration".
const std::vector<std::string>& KnownCudnnLibConfigs();
// Sub-libraries GRAPH_JIT_ONLY needs besides libcudnn itself.
const std::vector<std::string>& GraphJitOnlyRequiredSubLibraries();
// GRAPH_JIT_ONLY supports Ampere (8.0) and later: returns 80.
int GraphJitOnlyMinCc();
std::string_view CudnnLibConfigSource();

// Deprecated cuDNN logging variables and what replaces them.
struct DeprecatedVariable {
  std::string_view name;
  std::string_view replacement;
};
const std::vector<DeprecatedVariable>& DeprecatedCudnnLogVariables();
std::string_view CudnnLoggingSource();

}  // namespace vigil::doctor
