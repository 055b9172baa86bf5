// Probes each library of the stack through its own API, via dlsym only.
// Signatures are from the public headers (cuda.h, cuda_runtime_api.h,
// cudnn_graph.h, cublasLt.h, cublas_api.h); we declare them as plain
// function pointers so vigil needs none of those headers to build.
#include <dlfcn.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <map>

#include "doctor/probe/forked_child.h"
#include "doctor/probe/probe_internal.h"
#include "doctor/probe/stdout_guard.h"

namespace vigil::doctor {
namespace {

using IntGetter = int (*)(int*);          // cuDriverGetVersion, cudaRuntimeGetVersion: 0 = success
using SizeGetter = size_t (*)(void);      // cudnnGetVersion, cudnnGetCudartVersion, cublasLtGetVersion
using StatusGetter = int (*)(void);       // cudnn*VersionCheck: cudnnStatus_t
using ErrorString = const char* (*)(int);  // cudnnGetErrorString
using CublasProperty = int (*)(int, int*);  // cublasGetProperty(libraryPropertyType, int*)

// CUDA majors to try, newest first, preferring the one cuDNN was built for.
std::vector<int> CudaMajors(int preferred) {
  std::vector<int> majors = {13, 12, 11};
  if (preferred > 0) {
    std::erase(majors, preferred);
    majors.insert(majors.begin(), preferred);
  }
  return majors;
}

Component NewComponent(const std::string& id, const std::string& file) {
  Component c;
  c.id = id;
  c.file = file;
  return c;
}

// The driver's release ("580.65.06"): libcuda.so.1 is a link to
// libcuda.so.<release>; /proc/driver/nvidia/version says it too.
std::string DriverRelease(const std::string& real_path) {
  Version from_name = VersionFromFileName(real_path);
  if (from_name.parts >= 2) return real_path.substr(real_path.find(".so.") + 4);
  std::ifstream proc("/proc/driver/nvidia/version");
  std::string word;
  while (proc >> word) {
    if (word == "Module" && proc >> word) return word;
  }
  return {};
}

void ProbeDriver(const ProbeOptions& options, StackSnapshot& s, LoadedLibrary& lib) {
  Component c = NewComponent(kDriver, "libcuda.so.1");
  c.copies = FindCopies(c.file, kDriver, options);
  lib = OpenLibrary(c.file, options.lib_dirs);
  FillLoaded(c, lib);
  if (c.found) {
    s.driver_release = DriverRelease(c.path);
    c.version = ParseDottedVersion(s.driver_release).value_or(Version{});
    c.version_text = s.driver_release;
    c.version_source = "driver release (file name)";
    if (auto get = reinterpret_cast<IntGetter>(dlsym(lib.handle, "cuDriverGetVersion"))) {
      int v = 0;
      if (get(&v) == 0) s.driver_cuda_version = v;
    }
  }
  DropLoadedCopy(c);
  s.components.push_back(std::move(c));
}

// Which version-check function each sub-library exports (cudnn_*.h of 9.x;
// cuDNN 8 had one per infer/train library).
const char* VersionCheckFunction(const std::string& sub) {
  static const std::map<std::string, const char*> kFunctions = {
      {"graph", "cudnnGraphVersionCheck"},          {"ops", "cudnnOpsVersionCheck"},
      {"cnn", "cudnnCnnVersionCheck"},              {"adv", "cudnnAdvVersionCheck"},
      {"ops_infer", "cudnnOpsInferVersionCheck"},   {"ops_train", "cudnnOpsTrainVersionCheck"},
      {"cnn_infer", "cudnnCnnInferVersionCheck"},   {"cnn_train", "cudnnCnnTrainVersionCheck"},
      {"adv_infer", "cudnnAdvInferVersionCheck"},   {"adv_train", "cudnnAdvTrainVersionCheck"}};
  auto it = kFunctions.find(sub);
  return it == kFunctions.end() ? nullptr : it->second;
}

std::string Dir(const std::string& path) { return path.substr(0, path.rfind('/')); }

void ProbeSubLibrary(const std::string& sub, int major, const Component& cudnn, ErrorString error_string,
                     const ProbeOptions& options, StackSnapshot& s) {
  Component c = NewComponent(SubLibraryId(sub), "libcudnn_" + sub + ".so." + std::to_string(major));
  c.copies = FindCopies(c.file, "", options);
  LoadedLibrary lib = OpenLibrary(c.file, options.lib_dirs);
  FillLoaded(c, lib);
  if (c.found) {
    c.version = VersionFromFileName(c.path);  // the real path: libcudnn_ops.so.9.14.0
    c.version_source = "file name";
    // Wheels ship libcudnn_ops.so.9 as the file itself: then the library's
    // own version function, where it exports one, says the rest.
    if (c.version.parts < 3) {
      if (auto own = reinterpret_cast<SizeGetter>(OwnSymbol(lib, "cudnnGetVersion"))) {
        Version v = DecodeCudnnVersion(static_cast<int64_t>(own()));
        if (v.known()) {
          c.version = v;
          c.version_source = "cudnnGetVersion() of the sub-library";
        }
      }
    }
    const char* check_name = VersionCheckFunction(sub);
    auto check = check_name ? reinterpret_cast<StatusGetter>(OwnSymbol(lib, check_name)) : nullptr;
    if (check != nullptr) {
      int status = check();
      c.version_check_status = status;
      const char* name = error_string ? error_string(status) : nullptr;
      c.version_check_name = name ? name : "status " + std::to_string(status);
      // The check compares this sub-library with the cuDNN it loaded with.
      if (status == 0 && c.version.parts < 3 && c.version.CompatibleWith(cudnn.version)) {
        c.version = cudnn.version;
        c.version_source = std::string(check_name) + "() = success against cuDNN " + cudnn.version.ToString();
      }
    } else if (c.version.parts < 3 && c.version.CompatibleWith(cudnn.version) && Dir(c.path) == Dir(cudnn.path)) {
      // No version function in this sub-library: it is taken to be the
      // release it is installed with; the file name confirms the major.
      c.version = cudnn.version;
      c.version_source = "file name major + same folder as libcudnn (no version function)";
    }
  }
  DropLoadedCopy(c);
  s.components.push_back(std::move(c));
}

void ProbeCudnn(const ProbeOptions& options, StackSnapshot& s) {
  Component c = NewComponent(kCudnn, "libcudnn.so.9");
  std::vector<LibraryCopy> v9_copies = FindCopies("libcudnn.so.9", kCudnn, options);
  std::vector<LibraryCopy> v8_copies = FindCopies("libcudnn.so.8", kCudnn, options);
  LoadedLibrary lib = OpenLibrary(c.file, options.lib_dirs);
  int major = 9;
  if (lib.handle == nullptr) {
    LoadedLibrary v8 = OpenLibrary("libcudnn.so.8", options.lib_dirs);
    if (v8.handle != nullptr) {
      lib = v8;
      c.file = "libcudnn.so.8";
      major = 8;
    } else {
      lib.error += "; " + v8.error;
    }
  }
  FillLoaded(c, lib);
  // Copies of the other major are listed too: a program built for cuDNN 8
  // loads libcudnn.so.8 even where cuDNN 9 is installed.
  c.copies = major == 9 ? v9_copies : v8_copies;
  for (const LibraryCopy& other : (major == 9 ? v8_copies : v9_copies)) c.copies.push_back(other);
  ErrorString error_string = nullptr;
  if (c.found) {
    auto get = [&](const char* name) -> int64_t {
      auto f = reinterpret_cast<SizeGetter>(dlsym(lib.handle, name));
      return f ? static_cast<int64_t>(f()) : -1;
    };
    s.cudnn_version = get("cudnnGetVersion");
    s.cudnn_cudart_version = get("cudnnGetCudartVersion");
    s.cudnn_max_device_version = get("cudnnGetMaxDeviceVersion");  // cuDNN >= 9 only
    c.version = DecodeCudnnVersion(s.cudnn_version);
    c.version_source = "cudnnGetVersion()";
    error_string = reinterpret_cast<ErrorString>(dlsym(lib.handle, "cudnnGetErrorString"));
  }
  DropLoadedCopy(c);
  s.components.push_back(c);
  if (!c.found) return;
  for (const std::string& sub : CudnnSubLibraries(c.version.known() ? c.version.major : major)) {
    ProbeSubLibrary(sub, major, c, error_string, options, s);
  }
}

// Tries libNAME.so.<major> for each CUDA major; the first that loads wins.
LoadedLibrary OpenFirstMajor(const std::string& stem, const std::vector<int>& majors, const ProbeOptions& options,
                             Component& c) {
  LoadedLibrary lib;
  std::string errors;
  for (int major : majors) {
    std::string file = stem + ".so." + std::to_string(major);
    lib = OpenLibrary(file, options.lib_dirs);
    if (lib.handle != nullptr) {
      c.file = file;
      return lib;
    }
    errors += (errors.empty() ? "" : "; ") + lib.error;
  }
  lib.error = errors;
  return lib;
}

void ProbeCudart(const ProbeOptions& options, StackSnapshot& s) {
  Component c = NewComponent(kCudart, "libcudart.so.13/.12/.11");
  int preferred = s.cudnn_cudart_version > 0 ? static_cast<int>(s.cudnn_cudart_version / 1000) : 0;
  LoadedLibrary lib = OpenFirstMajor("libcudart", CudaMajors(preferred), options, c);
  FillLoaded(c, lib);
  if (c.found) {
    if (auto get = reinterpret_cast<IntGetter>(dlsym(lib.handle, "cudaRuntimeGetVersion"))) {
      int v = 0;
      if (get(&v) == 0) s.cudart_version = v;
    }
    c.version = DecodeCudaVersion(s.cudart_version);
    c.version_source = "cudaRuntimeGetVersion()";
    c.copies = FindCopies(c.file, kCudart, options);
  }
  DropLoadedCopy(c);
  s.components.push_back(std::move(c));
}

void ProbeCublas(const ProbeOptions& options, StackSnapshot& s) {
  const Component* cudart = s.Find(kCudart);
  int preferred = (cudart && cudart->found) ? cudart->version.major : 0;
  Component lt = NewComponent(kCublasLt, "libcublasLt.so.13/.12/.11");
  LoadedLibrary lt_lib = OpenFirstMajor("libcublasLt", CudaMajors(preferred), options, lt);
  FillLoaded(lt, lt_lib);
  if (lt.found) {
    if (auto get = reinterpret_cast<SizeGetter>(dlsym(lt_lib.handle, "cublasLtGetVersion"))) {
      s.cublaslt_version = static_cast<int64_t>(get());
    }
    lt.version = DecodeCublasLtVersion(s.cublaslt_version);
    lt.version_source = "cublasLtGetVersion()";
    lt.copies = FindCopies(lt.file, kCublasLt, options);
  }
  DropLoadedCopy(lt);

  Component blas = NewComponent(kCublas, "libcublas.so.13/.12/.11");
  LoadedLibrary blas_lib = OpenFirstMajor("libcublas", CudaMajors(preferred), options, blas);
  FillLoaded(blas, blas_lib);
  if (blas.found) {
    if (auto get = reinterpret_cast<CublasProperty>(dlsym(blas_lib.handle, "cublasGetProperty"))) {
      int parts[3] = {0, 0, 0};  // MAJOR_VERSION, MINOR_VERSION, PATCH_LEVEL
      bool ok = true;
      for (int i = 0; i < 3; ++i) ok = ok && get(i, &parts[i]) == 0;
      if (ok) blas.version = MakeVersion(parts[0], parts[1], parts[2]);
      blas.version_source = "cublasGetProperty()";
    }
    blas.copies = FindCopies(blas.file, kCublas, options);
  }
  DropLoadedCopy(blas);
  s.components.push_back(std::move(blas));
  s.components.push_back(std::move(lt));
}

// Static cuDNN archives next to where libraries are searched: relevant to
// GRAPH_JIT_ONLY, which works with the dynamic libraries only.
void FindStaticArchives(const ProbeOptions& options, StackSnapshot& s) {
  SearchEnvironment env = EffectiveSearch(options);
  for (const std::string& dir : options.lib_dirs) env.extra_dirs.push_back(dir);
  for (const std::string& path : FindAllCopies("libcudnn", env, /*prefix_match=*/true)) {
    if (path.size() > 2 && path.ends_with(".a") && path.find("static") != std::string::npos) {
      s.cudnn_static_archives.push_back(path);
    }
  }
}

}  // namespace

namespace {

// The sub-library a cuDNN copy answers its version API through: the copy's
// own one is loaded by absolute path before the API is called.
std::string VersionSubLibrary(const std::string& copy_path) {
  Version major = VersionFromFileName(copy_path);
  if (!major.known()) return {};
  const char* sub = major.major >= 9 ? "graph" : major.major == 8 ? "ops_infer" : nullptr;
  if (sub == nullptr) return {};
  return Dir(copy_path) + "/libcudnn_" + sub + ".so." + std::to_string(major.major);
}

}  // namespace

CopyVersion QueryCopyVersion(const std::string& path, const std::string& api, int timeout_ms) {
  ChildOutcome out = RunInForkedChild(
      [&](int fd) {
        SendStdoutToStderr();
        void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
        if (h == nullptr) return;
        int64_t raw = -1;
        int64_t cuda = -1;
        if (api == kCudnn) {
          std::string own = VersionSubLibrary(path);
          if (!own.empty() && access(own.c_str(), F_OK) == 0) dlopen(own.c_str(), RTLD_LAZY | RTLD_LOCAL);
          if (auto f = reinterpret_cast<SizeGetter>(dlsym(h, "cudnnGetVersion"))) raw = static_cast<int64_t>(f());
          if (auto f = reinterpret_cast<SizeGetter>(dlsym(h, "cudnnGetCudartVersion"))) {
            cuda = static_cast<int64_t>(f());
          }
        } else if (api == kCudart) {
          int v = 0;
          auto f = reinterpret_cast<IntGetter>(dlsym(h, "cudaRuntimeGetVersion"));
          if (f && f(&v) == 0) raw = v;
        }
        WriteAll(fd, std::to_string(raw) + " " + std::to_string(cuda));
      },
      timeout_ms);
  if (out.timed_out || out.output.empty()) return {};
  char* end = nullptr;
  int64_t raw = std::strtoll(out.output.c_str(), &end, 10);
  CopyVersion v;
  v.version = api == kCudnn ? DecodeCudnnVersion(raw) : DecodeCudaVersion(raw);
  v.cuda_version = std::strtoll(end, nullptr, 10);
  if (v.cuda_version <= 0) v.cuda_version = -1;
  return v;
}

StackSnapshot ProbeStackInProcess(const ProbeOptions& options) {
  StackSnapshot s;
  CaptureEnvironment(s);
  FindStaticArchives(options, s);
  LoadedLibrary driver;
  ProbeDriver(options, s, driver);
  ProbeCudnn(options, s);
  ProbeCudart(options, s);
  ProbeCublas(options, s);
  if (driver.handle != nullptr) {
    ReportStage("querying GPUs through libcuda");
    ProbeGpus(driver.handle, s);
  }
  return s;
}

}  // namespace vigil::doctor
