// Rules about environment variables that change cuDNN's behaviour:
// CUDNN_LIB_CONFIG and the logging variables.
#include <algorithm>

#include "doctor/rules/compat_facts.h"
#include "doctor/rules/rules.h"
#include "doctor/rules/rules_common.h"

namespace vigil::doctor {
namespace {

constexpr const char* kLibConfig = "CUDNN_LIB_CONFIG";

std::vector<Finding> LibConfigUnknown(const StackSnapshot& s) {
  std::optional<std::string> value = s.Env(kLibConfig);
  if (!value) return {};
  const std::vector<std::string>& known = KnownCudnnLibConfigs();
  if (std::find(known.begin(), known.end(), *value) != known.end()) return {};
  return {MakeFinding("env.cudnn_lib_config_unknown", Severity::kError,
                      "CUDNN_LIB_CONFIG=\"" + *value + "\" is not a cuDNN library configuration (FULL, GRAPH_JIT_ONLY)",
                      {{kLibConfig, *value}, {"source", std::string(CudnnLibConfigSource())}},
                      "unset CUDNN_LIB_CONFIG (FULL is the default) or set it to GRAPH_JIT_ONLY")};
}

bool GraphJitOnly(const StackSnapshot& s) { return s.Env(kLibConfig) == "GRAPH_JIT_ONLY"; }

std::vector<Finding> GraphJitOnlyPreAmpere(const StackSnapshot& s) {
  if (!GraphJitOnly(s)) return {};
  std::vector<Finding> out;
  for (const Gpu& gpu : s.gpus) {
    if (CcOf(gpu) >= GraphJitOnlyMinCc()) continue;
    out.push_back(MakeFinding(
        "env.graph_jit_only_pre_ampere", Severity::kError,
        "CUDNN_LIB_CONFIG=GRAPH_JIT_ONLY needs an Ampere (8.0) or newer GPU; GPU " + std::to_string(gpu.index) + " (" +
            gpu.name + ") is " + CcText(CcOf(gpu)),
        {{kLibConfig, "GRAPH_JIT_ONLY"},
         {"GPU " + std::to_string(gpu.index), gpu.name + ", compute capability " + CcText(CcOf(gpu))},
         {"source", std::string(CudnnLibConfigSource())}},
        "unset CUDNN_LIB_CONFIG and install every cuDNN sub-library (the FULL configuration)"));
  }
  return out;
}

std::vector<Finding> GraphJitOnlyLibraries(const StackSnapshot& s) {
  const Component* cudnn = s.Find(kCudnn);
  if (!GraphJitOnly(s) || cudnn == nullptr) return {};
  std::vector<std::string> missing;
  if (!cudnn->found) missing.push_back(cudnn->file.empty() ? "libcudnn.so.9" : cudnn->file);
  for (const std::string& sub : GraphJitOnlyRequiredSubLibraries()) {
    const Component* c = s.Find(SubLibraryId(sub));
    if (c != nullptr && !c->found) missing.push_back(c->file);
    if (c == nullptr && cudnn->found) missing.push_back("libcudnn_" + sub + ".so.9");
  }
  if (missing.empty()) return {};
  std::string list;
  for (const std::string& m : missing) list += (list.empty() ? "" : ", ") + m;
  return {MakeFinding("env.graph_jit_only_missing_libraries", Severity::kError,
                      "CUDNN_LIB_CONFIG=GRAPH_JIT_ONLY needs libcudnn, libcudnn_graph and "
                      "libcudnn_engines_runtime_compiled; missing: " + list,
                      {{kLibConfig, "GRAPH_JIT_ONLY"}, {"missing", list},
                       {"source", std::string(CudnnLibConfigSource())}},
                      "install the missing libraries next to libcudnn and keep them on LD_LIBRARY_PATH")};
}

std::vector<Finding> GraphJitOnlyStatic(const StackSnapshot& s) {
  const Component* cudnn = s.Find(kCudnn);
  if (!GraphJitOnly(s) || s.cudnn_static_archives.empty() || (cudnn != nullptr && cudnn->found)) return {};
  return {MakeFinding("env.graph_jit_only_static", Severity::kError,
                      "CUDNN_LIB_CONFIG=GRAPH_JIT_ONLY works with the dynamic cuDNN libraries only, and only static "
                      "ones were found",
                      {{kLibConfig, "GRAPH_JIT_ONLY"}, {"static archive", s.cudnn_static_archives.front()},
                       {"source", std::string(CudnnLibConfigSource())}},
                      "link cuDNN dynamically (libcudnn.so.9) or unset CUDNN_LIB_CONFIG")};
}

std::vector<Finding> DeprecatedLogVariables(const StackSnapshot& s) {
  std::vector<Finding> out;
  for (const DeprecatedVariable& var : DeprecatedCudnnLogVariables()) {
    std::optional<std::string> value = s.Env(std::string(var.name));
    if (!value) continue;
    out.push_back(MakeFinding("env.cudnn_deprecated_log_variable", Severity::kWarning,
                              std::string(var.name) + " is deprecated; cuDNN 9 logs through CUDNN_LOGLEVEL_DBG",
                              {{std::string(var.name), *value}, {"source", std::string(CudnnLoggingSource())}},
                              "use " + std::string(var.replacement) + " with CUDNN_LOGDEST_DBG=stderr (or a file), "
                              "and unset " + std::string(var.name)));
  }
  return out;
}

std::vector<Finding> LogDestUnwritable(const StackSnapshot& s) {
  std::optional<std::string> dest = s.Env("CUDNN_LOGDEST_DBG");
  if (!dest || !s.logdest_writable || *s.logdest_writable) return {};
  return {MakeFinding("env.cudnn_logdest_unwritable", Severity::kWarning,
                      "CUDNN_LOGDEST_DBG=\"" + *dest + "\" cannot be written, so the cuDNN API log is lost",
                      {{"CUDNN_LOGDEST_DBG", *dest}, {"error", s.logdest_error}},
                      "set CUDNN_LOGDEST_DBG to stderr, stdout, or a file in a writable folder")};
}

std::vector<Finding> LogLevelInvalid(const StackSnapshot& s) {
  std::optional<std::string> level = s.Env("CUDNN_LOGLEVEL_DBG");
  if (!level || (level->size() == 1 && (*level)[0] >= '0' && (*level)[0] <= '3')) return {};
  return {MakeFinding("env.cudnn_loglevel_invalid", Severity::kWarning,
                      "CUDNN_LOGLEVEL_DBG=\"" + *level + "\" is not one of 0, 1, 2, 3",
                      {{"CUDNN_LOGLEVEL_DBG", *level}, {"source", std::string(CudnnLoggingSource())}},
                      "set CUDNN_LOGLEVEL_DBG to 0 (off), 1 (errors), 2 (warnings) or 3 (info)")};
}

const Rule kEnvRules[] = {
    {"env.cudnn_lib_config_unknown", LibConfigUnknown},
    {"env.graph_jit_only_pre_ampere", GraphJitOnlyPreAmpere},
    {"env.graph_jit_only_missing_libraries", GraphJitOnlyLibraries},
    {"env.graph_jit_only_static", GraphJitOnlyStatic},
    {"env.cudnn_deprecated_log_variable", DeprecatedLogVariables},
    {"env.cudnn_logdest_unwritable", LogDestUnwritable},
    {"env.cudnn_loglevel_invalid", LogLevelInvalid},
};

}  // namespace

std::span<const Rule> EnvRules() { return kEnvRules; }

}  // namespace vigil::doctor
