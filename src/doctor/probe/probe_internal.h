// Internals shared by the probe_*.cpp files (not a public header).
#pragma once

#include <string>
#include <vector>

#include "doctor/probe/probe.h"

namespace vigil::doctor {

// A library this process loaded, or why it could not.
struct LoadedLibrary {
  void* handle = nullptr;  // never dlclose'd: cuDNN/CUDA may still run code from it
  std::string path;        // real path
  std::string error;
};

// dlopen(RTLD_NOW|RTLD_LOCAL): by name, or from the first of `lib_dirs` that
// holds `file`.
LoadedLibrary OpenLibrary(const std::string& file, const std::vector<std::string>& lib_dirs);

// The symbol if it is defined in the library at `path` itself, not in one of
// its dependencies (dlsym on a handle also searches those: libcudnn_ops's
// handle finds libcudnn_graph's cudnnGetVersion).
void* OwnSymbol(const LoadedLibrary& lib, const char* name);

// Fills the fields every component has: found, path, build-id, load_error.
void FillLoaded(Component& c, const LoadedLibrary& lib);

// Writes a progress line ("@ loading libcudnn_ops.so.9") so the parent can
// name the library if the child dies.
void ReportStage(const std::string& stage);
void SetStageFd(int fd);

// The search environment to look for copies in.
SearchEnvironment EffectiveSearch(const ProbeOptions& options);

// Other copies of `file` with their versions (excluding `loaded_path`).
std::vector<LibraryCopy> FindCopies(const std::string& file, const std::string& api, const ProbeOptions& options);
void DropLoadedCopy(Component& c);

// The LD_LIBRARY_PATH folders of the search, as real paths, in order.
std::vector<std::string> LdLibraryPathDirs(const ProbeOptions& options);

}  // namespace vigil::doctor
