// Loading libraries for the probe, and finding their other copies.
#include <dlfcn.h>
#include <link.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <filesystem>
#include <set>

#include "doctor/probe/forked_child.h"
#include "doctor/probe/probe_internal.h"
#include "doctor/resolver/elf_file.h"

namespace vigil::doctor {
namespace {

int g_stage_fd = -1;

std::string RealPath(const std::string& path) {
  char buffer[PATH_MAX];
  return realpath(path.c_str(), buffer) != nullptr ? std::string(buffer) : path;
}

std::string JoinDirs(const std::vector<std::string>& dirs) {
  std::string out;
  for (const std::string& d : dirs) out += (out.empty() ? "" : ":") + d;
  return out;
}

}  // namespace

void SetStageFd(int fd) { g_stage_fd = fd; }

void ReportStage(const std::string& stage) {
  if (g_stage_fd >= 0) WriteAll(g_stage_fd, "@ " + stage + "\n");
}

LoadedLibrary OpenLibrary(const std::string& file, const std::vector<std::string>& lib_dirs) {
  LoadedLibrary lib;
  std::string target = file;
  if (!lib_dirs.empty()) {
    target.clear();
    for (const std::string& dir : lib_dirs) {
      std::string candidate = dir + "/" + file;
      if (access(candidate.c_str(), F_OK) == 0) {
        target = candidate;
        break;
      }
    }
    if (target.empty()) {
      // Same wording as the loader's, so rules treat both alike.
      lib.error = file + ": cannot open shared object file: not in " + JoinDirs(lib_dirs);
      return lib;
    }
  }
  ReportStage("loading " + target);
  dlerror();
  lib.handle = dlopen(target.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib.handle == nullptr) {
    const char* error = dlerror();
    lib.error = error != nullptr ? error : "dlopen failed";
    return lib;
  }
  link_map* map = nullptr;
  if (dlinfo(lib.handle, RTLD_DI_LINKMAP, &map) == 0 && map != nullptr && map->l_name != nullptr) {
    lib.path = RealPath(map->l_name);
  } else {
    lib.path = RealPath(target);
  }
  return lib;
}

void* OwnSymbol(const LoadedLibrary& lib, const char* name) {
  if (lib.handle == nullptr) return nullptr;
  void* symbol = dlsym(lib.handle, name);
  if (symbol == nullptr) return nullptr;
  Dl_info info{};
  if (dladdr(symbol, &info) == 0 || info.dli_fname == nullptr) return symbol;
  return RealPath(info.dli_fname) == lib.path ? symbol : nullptr;
}

void FillLoaded(Component& c, const LoadedLibrary& lib) {
  c.found = lib.handle != nullptr;
  c.load_error = lib.error;
  c.path = lib.path;
  if (!c.found) return;
  Result<ElfInfo> elf = ReadElf(lib.path);
  if (elf.ok()) c.build_id = elf->build_id;
}

SearchEnvironment EffectiveSearch(const ProbeOptions& options) {
  if (options.search) return *options.search;
  SearchEnvironment env = SearchEnvironment::FromProcess();
  return env;
}

std::vector<LibraryCopy> FindCopies(const std::string& file, const std::string& api, const ProbeOptions& options) {
  SearchEnvironment env = EffectiveSearch(options);
  // The folders we load from are part of the search too.
  for (const std::string& dir : options.lib_dirs) env.extra_dirs.push_back(dir);
  std::vector<std::string> paths = FindAllCopies(file, env);
  std::set<std::string> unique;
  for (const std::string& p : paths) unique.insert(RealPath(p));
  std::vector<LibraryCopy> copies;
  for (const std::string& path : unique) {
    LibraryCopy copy{path, VersionFromFileName(path), "file name"};
    // cuDNN copies always go through a child: the file name of a wheel's
    // libcudnn.so.9 (or .8) carries only the major, and the rules need the
    // CUDA each copy was built for. cudart only when there is something to
    // compare with; never the 500 MB cuBLASLt.
    bool ask = api == kCudnn || (api == kCudart && copy.version.parts < 3 && unique.size() > 1);
    if (ask) {
      CopyVersion v = QueryCopyVersion(path, api);
      if (v.version.known()) copy = {path, v.version, "loaded in a child process", v.cuda_version};
    }
    copies.push_back(std::move(copy));
  }
  return copies;
}

std::vector<std::string> LdLibraryPathDirs(const ProbeOptions& options) {
  std::vector<std::string> dirs;
  for (const std::string& d : EffectiveSearch(options).ld_library_path) {
    if (!d.empty()) dirs.push_back(RealPath(d));
  }
  return dirs;
}

void DropLoadedCopy(Component& c) {
  std::erase_if(c.copies, [&](const LibraryCopy& copy) { return copy.path == c.path; });
}

}  // namespace vigil::doctor
