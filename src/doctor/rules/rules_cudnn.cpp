// Rules about cuDNN and cuBLAS(Lt): versions, sub-libraries, copies, and the
// GPUs a cuDNN build supports.
#include <algorithm>

#include "doctor/rules/compat_facts.h"
#include "doctor/rules/rules.h"
#include "doctor/rules/rules_common.h"

namespace vigil::doctor {
namespace {

bool GraphJitOnly(const StackSnapshot& s) { return s.Env("CUDNN_LIB_CONFIG") == "GRAPH_JIT_ONLY"; }

std::string CudaMajorText(int cuda) { return cuda > 0 ? "CUDA " + std::to_string(cuda) : "your CUDA major"; }
std::string AptMajor(int cuda) { return cuda > 0 ? std::to_string(cuda) : "<major>"; }

std::vector<Finding> CudnnMissing(const StackSnapshot& s) {
  const Component* cudnn = s.Find(kCudnn);
  if (cudnn == nullptr) return {};
  if (!cudnn->found) {
    int cuda = StackCudaMajor(s);
    std::string apt = "cudnn9-cuda-" + AptMajor(cuda);
    return {MakeFinding("cudnn.missing", Severity::kError,
                        "cuDNN is not found (libcudnn.so.9 or libcudnn.so.8); vigil's CUDA backend needs cuDNN 9",
                        {{"tried", cudnn->file}, {"error", cudnn->load_error}},
                        "install cuDNN 9 for " + CudaMajorText(cuda) + " (`apt install " + apt + "` or `pip install " + PipPackage("nvidia-cudnn", cuda) +
                            "`) and put its lib folder on LD_LIBRARY_PATH",
                        kCudnn)};
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
  // The right build is installed but an LD_LIBRARY_PATH folder hides it:
  // cudnn.older_first_on_ld_library_path says so, with the fix that applies.
  const LibraryCopy* hidden = ShadowedNewerCudnn(s);
  if (hidden != nullptr && DecodeCudaVersion(hidden->cuda_version).major == runtime.major) return {};
  return {MakeFinding("cudnn.cuda_major_mismatch", Severity::kError,
                      "cuDNN " + cudnn->version.ToString() + " was built for CUDA " + built_for.ToString() +
                          " but the CUDA runtime found is " + runtime.ToString(),
                      {{"cudnnGetCudartVersion", std::to_string(s.cudnn_cudart_version)},
                       {"cuDNN", Describe(*cudnn)},
                       {"CUDA runtime", Describe(*cudart)}},
                      "install the cuDNN build for CUDA " + std::to_string(runtime.major) +
                          " (e.g. cudnn9-cuda-" + std::to_string(runtime.major) + " or nvidia-cudnn-cu" +
                          std::to_string(runtime.major) + "), or the CUDA " + std::to_string(built_for.major) +
                          " runtime",
                      kCudnn)};
}

bool FileMissing(const Component& c) {
  return c.load_error.find(c.file + ": cannot open shared object file") != std::string::npos;
}

// Whether CUDNN_LIB_CONFIG=GRAPH_JIT_ONLY would make do without `sub`: it
// needs libcudnn, libcudnn_graph and libcudnn_engines_runtime_compiled, a
// cuDNN 9, and Ampere (8.0) or newer GPUs (FACTS.md, compat_facts.cpp).
bool JitOnlyWouldDoWithout(const StackSnapshot& s, const Component& cudnn, const std::string& sub) {
  if (cudnn.version.major < 9) return false;
  const std::vector<std::string>& needed = GraphJitOnlyRequiredSubLibraries();
  if (std::find(needed.begin(), needed.end(), sub) != needed.end()) return false;
  return std::all_of(s.gpus.begin(), s.gpus.end(), [](const Gpu& g) { return CcOf(g) >= GraphJitOnlyMinCc(); });
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
                                    DirOf(cudnn->path) +
                                    (JitOnlyWouldDoWithout(s, *cudnn, sub)
                                         ? ", or set CUDNN_LIB_CONFIG=GRAPH_JIT_ONLY if it was removed on purpose"
                                         : ""),
                                c->id));
    } else {
      out.push_back(MakeFinding("cudnn.sublib_unloadable", Severity::kError,
                                "cuDNN sub-library " + c->file + " is there but cannot be loaded: " + c->load_error,
                                {{"error", c->load_error}},
                                "install the library the error names (often libnvrtc or libcublasLt of the same "
                                "CUDA major) and put it on LD_LIBRARY_PATH",
                                c->id));
    }
  }
  return out;
}

// Where a stray sub-library comes from decides the fix: an LD_LIBRARY_PATH
// folder (take it off), or the cuDNN folder itself (replace the file).
std::string StrayFix(const StackSnapshot& s, const Component& cudnn, const Component& c) {
  std::string dir = DirOf(c.path);
  std::string release = "cuDNN " + cudnn.version.ToString();
  bool from_ld_path = !s.Env("LD_LIBRARY_PATH").value_or("").empty() && dir != DirOf(cudnn.path) &&
                      s.OnLdLibraryPath(dir);
  if (from_ld_path) {
    return "take " + dir + " off LD_LIBRARY_PATH (its " + c.file + " is " + c.version.ToString() +
           "), or remove " + c.path + " from it: every sub-library must come from " + release;
  }
  return "replace " + c.path + " with the " + c.file + " of " + release + " (reinstall " + release + " into " + dir +
         "): every sub-library must come from one release";
}

std::vector<Finding> SubLibraryVersions(const StackSnapshot& s) {
  const Component* cudnn = LoadedCudnn(s);
  if (cudnn == nullptr) return {};
  // A sub-library whose full version matches cuDNN's but whose version check
  // fails is collateral: it loaded with a stray one (cudnnCnnVersionCheck
  // fails when libcudnn_ops is from another release). Only the stray one is
  // named, as long as one is identified.
  std::vector<const Component*> stray, collateral;
  for (const std::string& sub : CudnnSubLibraries(cudnn->version.major)) {
    const Component* c = Loaded(s, SubLibraryId(sub));
    if (c == nullptr) continue;
    bool check_failed = c->version_check_status && *c->version_check_status != 0;
    bool differs = !c->version.CompatibleWith(cudnn->version);
    bool known_same = !differs && c->version.parts >= 3 && cudnn->version.parts >= 3;
    if (differs || (check_failed && !known_same)) stray.push_back(c);
    else if (check_failed) collateral.push_back(c);
  }
  if (stray.empty()) std::swap(stray, collateral);  // no culprit identified: name every failing one
  std::vector<Finding> out;
  for (const Component* c : stray) {
    std::vector<Fact> evidence = {{"cuDNN", Describe(*cudnn)}, {c->file, Describe(*c)}};
    if (c->version_check_status && *c->version_check_status != 0) {
      evidence.push_back({"version check", c->version_check_name + " (" +
                                               std::to_string(*c->version_check_status) + ")"});
    }
    if (c == stray.front()) {
      for (const Component* other : collateral) {
        evidence.push_back({"also fails its version check", other->file + " " + other->version.ToString() +
                                                                 " (matches cuDNN; it loaded with the stray library)"});
      }
    }
    out.push_back(MakeFinding("cudnn.sublib_version_mismatch", Severity::kError,
                              "cuDNN sub-library " + c->file + " (" + c->version.ToString() +
                                  ") does not match cuDNN " + cudnn->version.ToString(),
                              std::move(evidence), StrayFix(s, *cudnn, *c), c->id));
  }
  return out;
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
                        "install cuBLAS for " + CudaMajorText(StackCudaMajor(s)) + " (`apt install libcublas-" +
                            AptMajor(StackCudaMajor(s)) + "-0`, `pip install " +
                            PipPackage("nvidia-cublas", StackCudaMajor(s)) + "`) and add its lib folder to LD_LIBRARY_PATH",
                        kCublasLt)};
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
                      "install cuBLAS of the same CUDA major as the runtime",
                      kCublasLt)};
}

const Rule kCudnnRules[] = {
    {"cudnn.missing", CudnnMissing},
    {"cudnn.version_mismatch_file_name", VersionEncoding},
    {"cudnn.older_first_on_ld_library_path", CudnnShadowedByLdLibraryPath},
    {"cudnn.cuda_major_mismatch", CudaMajorMismatch},
    {"cudnn.sublib_missing", SubLibrariesMissing},
    {"cudnn.sublib_version_mismatch", SubLibraryVersions},
    {"cudnn.multiple_versions", MultipleCudnnVersions},
    {"cudnn.compute_capability_unsupported", ComputeCapability},
    {"cudnn.release_not_in_table", UnknownRelease},
    {"cublaslt.missing", CublasLt},
};

}  // namespace

std::span<const Rule> CudnnRules() { return kCudnnRules; }

}  // namespace vigil::doctor
