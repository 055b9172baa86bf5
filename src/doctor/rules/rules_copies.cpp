// Rules about other copies of cuDNN: several versions of one SONAME on the
// search path, and an older copy that LD_LIBRARY_PATH puts first.
#include <algorithm>

#include "doctor/rules/rules.h"
#include "doctor/rules/rules_common.h"

namespace vigil::doctor {
namespace {

int CudaMajorOf(int64_t cudnn_cudart_version) {
  return cudnn_cudart_version > 0 ? DecodeCudaVersion(cudnn_cudart_version).major : 0;
}

int RuntimeMajor(const StackSnapshot& s) {
  const Component* cudart = Loaded(s, kCudart);
  return cudart != nullptr && cudart->version.known() ? cudart->version.major : 0;
}

}  // namespace

const LibraryCopy* ShadowedNewerCudnn(const StackSnapshot& s) {
  const Component* cudnn = LoadedCudnn(s);
  if (cudnn == nullptr || !cudnn->version.known() || !s.OnLdLibraryPath(DirOf(cudnn->path))) return nullptr;
  int runtime = RuntimeMajor(s);
  const LibraryCopy* best = nullptr;
  auto rank = [&](const LibraryCopy& c) { return std::make_pair(runtime > 0 && CudaMajorOf(c.cuda_version) == runtime, c.version); };
  for (const LibraryCopy& copy : cudnn->copies) {
    // Same SONAME only (libcudnn.so.8 beside .9 is by design), newer, elsewhere.
    if (!copy.version.known() || copy.version.major != cudnn->version.major) continue;
    if (copy.version <= cudnn->version || DirOf(copy.path) == DirOf(cudnn->path)) continue;
    if (best == nullptr || rank(copy) > rank(*best)) best = &copy;
  }
  return best;
}

std::vector<Finding> CudnnShadowedByLdLibraryPath(const StackSnapshot& s) {
  const LibraryCopy* newer = ShadowedNewerCudnn(s);
  if (newer == nullptr) return {};
  const Component& cudnn = *LoadedCudnn(s);
  std::string dir = DirOf(cudnn.path);
  std::string newer_dir = DirOf(newer->path);
  int runtime = RuntimeMajor(s);
  int loaded_cuda = CudaMajorOf(s.cudnn_cudart_version);
  // An error when the older copy is also built for the wrong CUDA major and
  // the hidden one is the right build: the program gets a cuDNN that cannot
  // work although a working one is installed.
  bool breaks = runtime > 0 && loaded_cuda > 0 && loaded_cuda != runtime && CudaMajorOf(newer->cuda_version) == runtime;
  std::vector<Fact> evidence = {{"LD_LIBRARY_PATH", s.Env("LD_LIBRARY_PATH").value_or("")},
                                {"loaded (wins)", Describe(cudnn)},
                                {"hidden", newer->version.ToString() + " at " + newer->path}};
  if (loaded_cuda > 0) {
    evidence.push_back({"built for", "cuDNN " + cudnn.version.ToString() + ": CUDA " +
                                         DecodeCudaVersion(s.cudnn_cudart_version).ToString() +
                                         (newer->cuda_version > 0 ? "; cuDNN " + newer->version.ToString() + ": CUDA " +
                                                                        DecodeCudaVersion(newer->cuda_version).ToString()
                                                                  : "")});
  }
  if (runtime > 0) evidence.push_back({"CUDA runtime", Describe(*Loaded(s, kCudart))});
  return {MakeFinding("cudnn.older_first_on_ld_library_path", breaks ? Severity::kError : Severity::kWarning,
                      "an older cuDNN (" + cudnn.version.ToString() + " in " + dir +
                          ") is first on LD_LIBRARY_PATH and wins over " + newer->version.ToString() + " in " +
                          newer_dir + (breaks ? ", and it is built for CUDA " + std::to_string(loaded_cuda) +
                                                    " while the runtime is CUDA " + std::to_string(runtime)
                                              : ""),
                      std::move(evidence),
                      "take " + dir + " off LD_LIBRARY_PATH, so that cuDNN " + newer->version.ToString() + " in " +
                          newer_dir + " loads",
                      kCudnn)};
}

// Two or more versions of one cuDNN SONAME reachable: which one a program
// gets then depends on LD_LIBRARY_PATH, RUNPATH and import order (FACTS.md:
// 9.14 system copy next to PyTorch's 9.19). libcudnn.so.8 next to
// libcudnn.so.9 is by design (different SONAMEs, for programs built against
// either) and is listed as evidence only.
std::vector<Finding> MultipleCudnnVersions(const StackSnapshot& s) {
  const Component* cudnn = LoadedCudnn(s);
  if (cudnn == nullptr || ShadowedNewerCudnn(s) != nullptr) return {};  // that finding says more
  std::vector<Fact> evidence = {{"loaded (wins)", Describe(*cudnn)}};
  bool other_version = false;
  for (const LibraryCopy& copy : cudnn->copies) {
    bool same_soname = copy.version.known() && cudnn->version.known() && copy.version.major == cudnn->version.major;
    bool differs = same_soname && !copy.version.CompatibleWith(cudnn->version);
    other_version = other_version || differs;
    evidence.push_back({same_soname ? "also reachable" : "other major (coexists by design)",
                        copy.version.ToString() + " at " + copy.path});
  }
  if (!other_version) return {};
  return {MakeFinding("cudnn.multiple_versions", Severity::kWarning,
                      "several versions of libcudnn.so." + std::to_string(cudnn->version.major) +
                          " are reachable; this process loads " + cudnn->version.ToString() + " from " + cudnn->path +
                          ", another program or LD_LIBRARY_PATH may load another",
                      std::move(evidence),
                      "keep one cuDNN per CUDA major on the search path, or pin the one you want first on "
                      "LD_LIBRARY_PATH; a program built against newer headers must not load an older cuDNN minor",
                      kCudnn)};
}

}  // namespace vigil::doctor
