// Rules about cuDNN and cuBLAS(Lt): versions, sub-libraries, copies, and the
// GPUs a cuDNN build supports.
#include <algorithm>

#include "doctor/rules/compat_facts.h"
#include "doctor/rules/rules.h"
#include "doctor/rules/rules_common.h"

namespace vigil::doctor {
namespace {

bool GraphJitOnly(const StackSnapshot& s) { return s.Env("CUDNN_LIB_CONFIG") == "GRAPH_JIT_ONLY"; }

std::vector<Finding> CudnnMissing(const StackSnapshot& s) {
  const Component* cudnn = s.Find(kCudnn);
  if (cudnn == nullptr) return {};
  if (!cudnn->found) {
    return {MakeFinding("cudnn.missing", Severity::kError,
                        "cuDNN is not found (libcudnn.so.9 or libcudnn.so.8); vigil's CUDA backend needs cuDNN 9",
                        {{"tried", cudnn->file}, {"error", cudnn->load_error}},
                        "install cuDNN 9 for your CUDA major (`apt install cudnn9-cuda-13` or `pip install "
                        "nvidia-cudnn-cu12`) and put its lib folder on LD_LIBRARY_PATH")};
  }
  if (cudnn->version.known() && cudnn->version.major < 9) {
    return {MakeFinding("cudnn.major_unsupported", Severity::kError,
                        "only cuDNN " + cudnn->version.ToString() + " is found; vigil (like ONNX Runtime >= 1.18.1) "
                        "needs cuDNN 9, and builds for cuDNN 8 and 9 do not mix",
                        {{"cuDNN", Describe(*cudnn)}},
                        "install cuDNN 9 built for your CUDA major next to it")};
  }
  return {};
}

// The number cudnnGetVersion returns must agree with the file name's major;
// a disagreement means a renamed file or a version decoded with the wrong
// encoding (v8: MAJOR*1000, v9: MAJOR*10000).
std::vector<Finding> VersionEncoding(const StackSnapshot& s) {
  const Component* cudnn = LoadedCudnn(s);
  if (cudnn == nullptr || s.cudnn_version <= 0) return {};
  Version from_name = VersionFromFileName(cudnn->file);
  Version from_api = DecodeCudnnVersion(s.cudnn_version);
  if (!from_name.known() || from_name.major == from_api.major) return {};
  return {MakeFinding("cudnn.version_mismatch_file_name", Severity::kError,
                      "the file " + cudnn->file + " reports cuDNN " + from_api.ToString() +
                          ": the file was renamed or copied from another release",
                      {{"cudnnGetVersion", std::to_string(s.cudnn_version) + " = " + from_api.ToString()},
                       {"path", cudnn->path}},
                      "reinstall cuDNN from one release; never rename cuDNN libraries to satisfy a loader")};
}

std::vector<Finding> CudaMajorMismatch(const StackSnapshot& s) {
  const Component* cudnn = LoadedCudnn(s);
  const Component* cudart = Loaded(s, kCudart);
  if (cudnn == nullptr || cudart == nullptr || s.cudnn_cudart_version <= 0 || s.cudart_version <= 0) return {};
  Version built_for = DecodeCudaVersion(s.cudnn_cudart_version);
  Version runtime = DecodeCudaVersion(s.cudart_version);
  if (built_for.major == runtime.major) return {};
  return {MakeFinding("cudnn.cuda_major_mismatch", Severity::kError,
                      "cuDNN " + cudnn->version.ToString() + " was built for CUDA " + built_for.ToString() +
                          " but the CUDA runtime found is " + runtime.ToString(),
                      {{"cudnnGetCudartVersion", std::to_string(s.cudnn_cudart_version)},
                       {"cuDNN", Describe(*cudnn)},
                       {"CUDA runtime", Describe(*cudart)}},
                      "install the cuDNN build for CUDA " + std::to_string(runtime.major) +
                          " (e.g. cudnn9-cuda-" + std::to_string(runtime.major) + " or nvidia-cudnn-cu" +
                          std::to_string(runtime.major) + "), or the CUDA " + std::to_string(built_for.major) +
                          " runtime")};
}

bool FileMissing(const Component& c) {
  return c.load_error.find(c.file + ": cannot open shared object file") != std::string::npos;
}

std::vector<Finding> SubLibrariesMissing(const StackSnapshot& s) {
  const Component* cudnn = LoadedCudnn(s);
  if (cudnn == nullptr || GraphJitOnly(s)) return {};  // GRAPH_JIT_ONLY: see env.graph_jit_only_*
  std::vector<Finding> out;
  for (const std::string& sub : CudnnSubLibraries(cudnn->version.major)) {
    const Component* c = s.Find(SubLibraryId(sub));
    if (c == nullptr || c->found) continue;
    if (FileMissing(*c)) {
      out.push_back(MakeFinding("cudnn.sublib_missing", Severity::kError,
                                "cuDNN sub-library " + c->file + " is missing; cuDNN " + cudnn->version.ToString() +
                                    " needs all its sub-libraries in the default configuration",
                                {{"cuDNN", Describe(*cudnn)}, {"error", c->load_error}},
                                "reinstall cuDNN " + cudnn->version.ToString() + " completely into " +
                                    cudnn->path.substr(0, cudnn->path.rfind('/')) +
                                    ", or set CUDNN_LIB_CONFIG=GRAPH_JIT_ONLY if it was removed on purpose"));
    } else {
      out.push_back(MakeFinding("cudnn.sublib_unloadable", Severity::kError,
                                "cuDNN sub-library " + c->file + " is there but cannot be loaded: " + c->load_error,
                                {{"error", c->load_error}},
                                "install the library the error names (often libnvrtc or libcublasLt of the same "
                                "CUDA major) and put it on LD_LIBRARY_PATH"));
    }
  }
  return out;
}

std::vector<Finding> SubLibraryVersions(const StackSnapshot& s) {
  const Component* cudnn = LoadedCudnn(s);
  if (cudnn == nullptr) return {};
  std::vector<Finding> out;
  for (const std::string& sub : CudnnSubLibraries(cudnn->version.major)) {
    const Component* c = Loaded(s, SubLibraryId(sub));
    if (c == nullptr) continue;
    bool check_failed = c->version_check_status && *c->version_check_status != 0;
    bool differs = !c->version.CompatibleWith(cudnn->version);
    if (!check_failed && !differs) continue;
    std::vector<Fact> evidence = {{"cuDNN", Describe(*cudnn)}, {c->file, Describe(*c)}};
    if (check_failed) {
      evidence.push_back({"version check", c->version_check_name + " (" +
                                               std::to_string(*c->version_check_status) + ")"});
    }
    out.push_back(MakeFinding("cudnn.sublib_version_mismatch", Severity::kError,
                              "cuDNN sub-library " + c->file + " (" + c->version.ToString() +
                                  ") does not match cuDNN " + cudnn->version.ToString(),
                              std::move(evidence),
                              "all cuDNN sub-libraries must come from one release: reinstall cuDNN, and remove "
                              "stray copies of " + c->file + " from LD_LIBRARY_PATH folders"));
  }
  return out;
}

// Two or more cuDNN versions reachable: which one a program gets then depends
// on LD_LIBRARY_PATH, RUNPATH and import order (FACTS.md: 9.14 system copy
// next to PyTorch's 9.19).
std::vector<Finding> MultipleVersions(const StackSnapshot& s) {
  const Component* cudnn = LoadedCudnn(s);
  if (cudnn == nullptr) return {};
  std::vector<Fact> evidence = {{"loaded (wins)", Describe(*cudnn)}};
  bool other_version = false;
  for (const LibraryCopy& copy : cudnn->copies) {
    bool differs = copy.version.known() && !copy.version.CompatibleWith(cudnn->version);
    other_version = other_version || differs;
    evidence.push_back({"also reachable", copy.version.ToString() + " at " + copy.path});
  }
  if (!other_version) return {};
  return {MakeFinding("cudnn.multiple_versions", Severity::kWarning,
                      "several cuDNN versions are reachable; this process loads " + cudnn->version.ToString() +
                          " from " + cudnn->path + ", another program or LD_LIBRARY_PATH may load another",
                      std::move(evidence),
                      "keep one cuDNN per CUDA major on the search path, or pin the one you want first on "
                      "LD_LIBRARY_PATH; a program built against newer headers must not load an older cuDNN minor")};
}

// One GPU against the support row and cudnnGetMaxDeviceVersion.
std::optional<Finding> CheckGpu(const StackSnapshot& s, const Component& cudnn, const Gpu& gpu,
                                const CudnnSupportRow* row) {
  int cc = CcOf(gpu);
  int api_max = s.cudnn_max_device_version > 0 ? static_cast<int>(s.cudnn_max_device_version / 10) : 0;
  int max_cc = std::max(row ? row->max_cc : 0, api_max);
  std::vector<Fact> evidence = {{"GPU " + std::to_string(gpu.index), gpu.name + ", compute capability " + CcText(cc)},
                                {"cuDNN", Describe(cudnn)}};
  if (api_max > 0) evidence.push_back({"cudnnGetMaxDeviceVersion", std::to_string(s.cudnn_max_device_version)});
  if (row) evidence.push_back({"support matrix", std::string(row->source)});
  std::string fix_build = "use a cuDNN build that supports compute capability " + CcText(cc);
  if (row && cc < row->min_cc) {
    return MakeFinding("cudnn.compute_capability_unsupported", Severity::kError,
                       "GPU " + std::to_string(gpu.index) + " (" + gpu.name + ", " + CcText(cc) + ") is older than cuDNN " +
                           cudnn.version.ToString() + " for CUDA " + std::to_string(row->cuda_major) +
                           " supports (>= " + CcText(row->min_cc) + ")",
                       std::move(evidence),
                       fix_build + " (cuDNN <= 9.10 for compute capability below 7.5; cuDNN 9 for CUDA 12 "
                                   "rather than 13)");
  }
  if (max_cc > 0 && cc > max_cc) {
    return MakeFinding("cudnn.compute_capability_unsupported", Severity::kError,
                       "GPU " + std::to_string(gpu.index) + " (" + gpu.name + ", " + CcText(cc) + ") is newer than cuDNN " +
                           cudnn.version.ToString() + " supports (up to " + CcText(max_cc) + ")",
                       std::move(evidence), fix_build + " (Blackwell needs cuDNN >= 9.7 built for CUDA >= 12.8)");
  }
  bool listed = !row || row->listed_cc.empty() ||
                std::find(row->listed_cc.begin(), row->listed_cc.end(), cc) != row->listed_cc.end();
  if (!listed && api_max == 0) {
    return MakeFinding("cudnn.compute_capability_unlisted", Severity::kWarning,
                       "GPU " + std::to_string(gpu.index) + " (" + CcText(cc) + ") is not listed in the support matrix of cuDNN " +
                           cudnn.version.ToString(),
                       std::move(evidence), "check NVIDIA's support matrix for this GPU; " + fix_build);
  }
  return std::nullopt;
}

std::vector<Finding> ComputeCapability(const StackSnapshot& s) {
  const Component* cudnn = LoadedCudnn(s);
  if (cudnn == nullptr || s.gpus.empty()) return {};
  const CudnnSupportRow* row = FindCudnnSupport(cudnn->version, DecodeCudaVersion(s.cudnn_cudart_version));
  std::vector<Finding> out;
  for (const Gpu& gpu : s.gpus) {
    if (std::optional<Finding> f = CheckGpu(s, *cudnn, gpu, row)) out.push_back(std::move(*f));
  }
  return out;
}

std::vector<Finding> UnknownRelease(const StackSnapshot& s) {
  const Component* cudnn = LoadedCudnn(s);
  if (cudnn == nullptr || cudnn->version.major < 9 || s.cudnn_cudart_version <= 0) return {};
  Version built_for = DecodeCudaVersion(s.cudnn_cudart_version);
  if (FindCudnnSupport(cudnn->version, built_for) != nullptr) return {};
  return {MakeFinding("cudnn.release_not_in_table", Severity::kInfo,
                      "cuDNN " + cudnn->version.ToString() + " for CUDA " + built_for.ToString() +
                          " is not in vigil's support table; GPU and driver checks use the library's own limits only",
                      {{"cuDNN", Describe(*cudnn)}},
                      "update vigil, or check NVIDIA's cuDNN support matrix for this release by hand")};
}

std::vector<Finding> CublasLt(const StackSnapshot& s) {
  const Component* cudnn = LoadedCudnn(s);
  const Component* lt = s.Find(kCublasLt);
  if (cudnn == nullptr || lt == nullptr || cudnn->version.major < 9) return {};
  if (!lt->found) {
    return {MakeFinding("cublaslt.missing", Severity::kError,
                        "cuBLASLt is not found; cuDNN 9 depends on it (cuDNN 9.0 release notes) and vigil uses it "
                        "for MatMul and Gemm",
                        {{"tried", lt->file}, {"error", lt->load_error}},
                        "install cuBLAS for your CUDA major (`apt install libcublas-13-0`, `pip install "
                        "nvidia-cublas-cu12`) and add its lib folder to LD_LIBRARY_PATH")};
  }
  const Component* cudart = Loaded(s, kCudart);
  if (cudart == nullptr || !lt->version.known() || !cudart->version.known() ||
      lt->version.major == cudart->version.major) {
    return {};
  }
  return {MakeFinding("cublaslt.cuda_major_mismatch", Severity::kError,
                      "cuBLASLt " + lt->version.ToString() + " belongs to CUDA " + std::to_string(lt->version.major) +
                          " but the CUDA runtime is " + cudart->version.ToString(),
                      {{"cuBLASLt", Describe(*lt)}, {"CUDA runtime", Describe(*cudart)}},
                      "install cuBLAS of the same CUDA major as the runtime")};
}

const Rule kCudnnRules[] = {
    {"cudnn.missing", CudnnMissing},
    {"cudnn.version_mismatch_file_name", VersionEncoding},
    {"cudnn.cuda_major_mismatch", CudaMajorMismatch},
    {"cudnn.sublib_missing", SubLibrariesMissing},
    {"cudnn.sublib_version_mismatch", SubLibraryVersions},
    {"cudnn.multiple_versions", MultipleVersions},
    {"cudnn.compute_capability_unsupported", ComputeCapability},
    {"cudnn.release_not_in_table", UnknownRelease},
    {"cublaslt.missing", CublasLt},
};

}  // namespace

std::span<const Rule> CudnnRules() { return kCudnnRules; }

}  // namespace vigil::doctor
