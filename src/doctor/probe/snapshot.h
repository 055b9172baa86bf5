// What the doctor found on this machine, as plain data. Probing fills it in
// (probe.h); rules read it (rules.h) and never probe anything themselves, so
// every rule can be tested from a hand-built snapshot.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "doctor/probe/version.h"

namespace vigil::doctor {

// Component ids, also the keys of the JSON report.
inline constexpr const char* kDriver = "driver";
inline constexpr const char* kCudart = "cudart";
inline constexpr const char* kCudnn = "cudnn";
inline constexpr const char* kCublas = "cublas";
inline constexpr const char* kCublasLt = "cublasLt";

// Another file of the same name that a different search order, a different
// LD_LIBRARY_PATH or another program could load instead.
struct LibraryCopy {
  std::string path;     // real path
  Version version;      // from the file name, or from loading it in a child
  std::string version_source;
  // cuDNN copies: cudnnGetCudartVersion() of the copy (the CUDA it was built
  // for), read in the same child; -1 unknown.
  int64_t cuda_version = -1;
};

// One library of the stack: the driver, the runtime, cuDNN, one cuDNN
// sub-library, cuBLAS or cuBLASLt.
struct Component {
  std::string id;            // "driver", "cudart", "cudnn", "cudnn_ops", ...
  std::string file;          // the name looked for: "libcudnn.so.9"
  bool found = false;
  std::string load_error;    // dlerror() text when not found
  std::string path;          // real path it was loaded from
  std::string build_id;      // GNU build-id, lowercase hex
  Version version;
  std::string version_source;     // "cudnnGetVersion()", "file name", ...
  // The version as its vendor writes it, where that differs from
  // version.ToString(): the driver's "580.159.04" (nvidia-smi keeps the 0).
  std::string version_text;
  // cuDNN sub-libraries: status of their *VersionCheck() function, which
  // checks them against the libcudnn_graph they loaded with. nullopt: the
  // sub-library has no such function.
  std::optional<int64_t> version_check_status;
  std::string version_check_name;  // "CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH"
  std::vector<LibraryCopy> copies;  // other copies, not the loaded one
};

struct Gpu {
  int index = 0;
  std::string name;
  int cc_major = 0;
  int cc_minor = 0;
  int64_t total_memory = -1;  // bytes; -1 unknown
  int64_t free_memory = -1;   // bytes; needs a context, -1 unknown
  std::string error;          // why part of it could not be read
};

struct StackSnapshot {
  std::vector<Component> components;  // in report order

  // Raw integers as the APIs returned them; -1 where not available.
  int64_t driver_cuda_version = -1;     // cuDriverGetVersion: highest CUDA the driver supports
  std::string driver_release;           // "580.65.06", from the file name or /proc
  int64_t cudart_version = -1;          // cudaRuntimeGetVersion
  int64_t cudnn_version = -1;           // cudnnGetVersion
  int64_t cudnn_cudart_version = -1;    // cudnnGetCudartVersion: CUDA cuDNN was built for
  int64_t cudnn_max_device_version = -1;  // cudnnGetMaxDeviceVersion (cuDNN >= 9)
  int64_t cublaslt_version = -1;        // cublasLtGetVersion

  std::vector<Gpu> gpus;
  bool gpu_query_ran = false;       // cuInit was reached
  std::string gpu_query_error;      // "cuInit: CUDA_ERROR_NO_DEVICE (100)"
  int physical_gpu_count = -1;      // entries in /proc/driver/nvidia/gpus; -1 unknown

  // Relevant environment variables that are set (set-but-empty included:
  // CUDA_VISIBLE_DEVICES="" hides every GPU).
  std::map<std::string, std::string> env;
  std::optional<bool> logdest_writable;  // CUDNN_LOGDEST_DBG, when it names a file
  std::string logdest_error;
  std::vector<std::string> cudnn_static_archives;  // libcudnn*_static*.a found

  std::string probe_error;  // the probe itself failed (crash or timeout in a library)

  // The folders of LD_LIBRARY_PATH the loader searched, as real paths, in
  // order (rules compare them with the real paths of libraries).
  std::vector<std::string> ld_library_path_dirs;

  const Component* Find(const std::string& id) const;
  Component* Find(const std::string& id);
  // The value of an environment variable if set.
  std::optional<std::string> Env(const std::string& name) const;
  // True when `dir` (a real path) is one of ld_library_path_dirs.
  bool OnLdLibraryPath(const std::string& dir) const;
};

// The cuDNN sub-libraries of a major version, in load order
// (FACTS.md: cuDNN 9.0 split; cuDNN 8 names).
const std::vector<std::string>& CudnnSubLibraries(int cudnn_major);

// The component id of a sub-library: "graph" -> "cudnn_graph".
std::string SubLibraryId(const std::string& sub);

void to_json(nlohmann::json& j, const Version& v);
void from_json(const nlohmann::json& j, Version& v);
void to_json(nlohmann::json& j, const LibraryCopy& c);
void from_json(const nlohmann::json& j, LibraryCopy& c);
void to_json(nlohmann::json& j, const Component& c);
void from_json(const nlohmann::json& j, Component& c);
void to_json(nlohmann::json& j, const Gpu& g);
void from_json(const nlohmann::json& j, Gpu& g);
void to_json(nlohmann::json& j, const StackSnapshot& s);
void from_json(const nlohmann::json& j, StackSnapshot& s);

}  // namespace vigil::doctor
