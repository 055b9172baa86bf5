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
#include <optional>
#include <string>

#include "base/status.h"
#include "doctor/probe.h"

extern "C" {
// What a backend module's entry function returns. Plain C so that modules
// built by another compiler (or another vigil version) can be inspected
// safely before anything else is called.
struct VigilBackendEntry {
  int abi_version;   // must equal vigil::doctor::kBackendAbiVersion
  const char* name;  // "cuda"
  // 0 when the backend can run on this machine; otherwise non-zero, with a
  // one-line reason written into `message` (NUL-terminated, <= size bytes).
  int (*probe)(char* message, size_t size);
};
typedef const struct VigilBackendEntry* (*VigilBackendEntryFn)(void);
}

namespace vigil::doctor {

inline constexpr int kBackendAbiVersion = 1;
inline constexpr const char* kBackendEntrySymbol = "vigil_backend_entry";

struct ModuleLoadOptions {
  std::string entry_symbol = kBackendEntrySymbol;
  int abi_version = kBackendAbiVersion;
  bool diagnose_missing_libraries = true;  // run the doctor's probe on step 1 failures
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
