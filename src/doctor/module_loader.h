// Loads a backend module (libvigil_cuda.so) at run time, one step at a
// time, each with its own diagnosis:
//   1. open          dlopen; a missing dependency ("libcudnn.so.9: cannot
//                    open shared object file") runs the doctor's probe and
//                    attaches what it finds about that library;
//   2. find symbol   the module's entry function (vigil_backend_entry);
//   3. version check the module's ABI version against ours;
//   4. can it run    the module's own probe (driver, GPU, cuDNN present).
#pragma once

#include <cstddef>
#include <new>
#include <optional>
#include <string>

#include "base/status.h"
#include "doctor/probe/probe.h"

extern "C" {
// Options for creating a backend, as plain C.
struct VigilBackendOptions {
  int device;                        // CUDA device ordinal
  int allow_tf32;                    // 0/1
  int deterministic;                 // 0/1
  unsigned long long memory_limit;   // bytes; 0 = free device memory
  int tune;                          // 0/1: measure candidate algorithms (autotuning)
  const char* tuning_cache;          // file of recorded choices, or NULL
  int sync_each_node;                // 0/1: synchronise after every node (profiling)
  // Where the caller's C++ runtime keeps operator new (CxxRuntimeMarker()).
  // The backend object crosses into the caller as a C++ object, so the module
  // refuses to create it when the two sides use different copies of the C++
  // runtime (a caller linked with -static-libstdc++).
  const void* cxx_runtime_marker;
  int allow_tf32x3;                  // 0/1: large float32 products as 3xTF32 without TF32 (ABI 5)
  int measure_first_run;             // 0/1: measure the slow-pick operations on first run without tune (ABI 6)
  int tf32x3_convolutions;           // 0/1: float32 convolutions as 3xTF32 without TF32 (ABI 7)
};

// What a backend module's entry function returns. Plain C so that modules
// built by another compiler (or another vigil version) can be inspected
// safely before anything else is called.
struct VigilBackendEntry {
  int abi_version;   // must equal vigil::doctor::kBackendAbiVersion
  const char* name;  // "cuda"
  // 0 when the backend can run on this machine; otherwise non-zero, with a
  // one-line reason written into `message` (NUL-terminated, <= size bytes).
  int (*probe)(char* message, size_t size);
  // The vigil::runtime::kBackendInterfaceVersion the module was built with;
  // `create` may be called only when it equals the core's.
  int backend_interface_version;
  // Creates the backend: returns 0 and a vigil::runtime::Backend* in
  // *backend, or non-zero and a vigil::Status* (owned by the caller) in
  // *status.
  int (*create)(const struct VigilBackendOptions* options, void** backend, void** status);
  void (*destroy)(void* backend);
  // "CUDA runtime 13.0, cuDNN 9.14.0, ..." for device `device`; valid until
  // the next call.
  const char* (*describe)(int device);
};
typedef const struct VigilBackendEntry* (*VigilBackendEntryFn)(void);
}

namespace vigil::doctor {

// 3: VigilBackendOptions gained tune and tuning_cache.
// 4: sync_each_node and cxx_runtime_marker.
// 5: allow_tf32x3. 6: measure_first_run. 7: tf32x3_convolutions.
inline constexpr int kBackendAbiVersion = 7;

// The address of the C++ runtime's operator new as this binary sees it: the
// same in two binaries only when they share one copy of libstdc++.
inline const void* CxxRuntimeMarker() {
  return reinterpret_cast<const void*>(static_cast<void* (*)(std::size_t)>(&::operator new));
}
inline constexpr const char* kBackendEntrySymbol = "vigil_backend_entry";

struct ModuleLoadOptions {
  std::string entry_symbol = kBackendEntrySymbol;
  int abi_version = kBackendAbiVersion;
  bool diagnose_missing_libraries = true;  // run the doctor's probe on step 1 failures
  bool run_module_probe = true;            // step 4; off to read a module's tables on a machine without a GPU
  ProbeOptions probe;                      // how that probe looks (tests: fake library folders)
};

struct LoadedModule {
  void* handle = nullptr;  // kept open for the life of the process
  const VigilBackendEntry* entry = nullptr;
  std::string path;
};

Result<LoadedModule> LoadBackendModule(const std::string& path, const ModuleLoadOptions& options = {});

// The library a dlopen error says is missing: "libcudnn.so.9: cannot open
// shared object file: No such file or directory" -> "libcudnn.so.9".
std::optional<std::string> MissingLibraryIn(const std::string& dlopen_error);

}  // namespace vigil::doctor
