// Library resolution as glibc's dynamic loader does it (ld.so(8), and the
// behaviour of elf/dl-load.c), reimplemented so the doctor can say where a
// library would come from without loading it:
//   1. a name with '/' is a path, used as is;
//   2. DT_RPATH of the requester, then of the objects that loaded it, but only
//      if the requester has no DT_RUNPATH (an object with both ignores RPATH);
//   3. LD_LIBRARY_PATH;  4. DT_RUNPATH of the requester only;
//   5. /etc/ld.so.cache; 6. the default folders.
// A candidate of another ELF class or machine is skipped silently; a file
// that is not ELF at all (or too short) stops the search with an error.
// Not modelled: glibc-hwcaps subfolders, $LIB/$PLATFORM, -z nodeflib, and
// secure-execution (setuid) mode.
#include "doctor/resolver/library_resolver.h"

#include <dirent.h>
#include <glob.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <climits>
#include <cstdlib>
#include <set>

#include "doctor/resolver/ld_so_cache.h"

namespace vigil::doctor {
namespace {

// FromProcess globs many patterns; a runaway home folder must not slow us.
constexpr size_t kMaxExtraDirs = 256;
constexpr size_t kMaxPathDirs = 64;

bool IsRegularFile(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

bool IsDirectory(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::string RealPath(const std::string& path) {
  char buf[PATH_MAX];
  return ::realpath(path.c_str(), buf) != nullptr ? std::string(buf) : path;
}

std::string Join(const std::string& dir, const std::string& name) {
  if (dir.empty()) return name;
  return dir.back() == '/' ? dir + name : dir + "/" + name;
}

std::vector<std::string> Glob(const std::string& pattern) {
  std::vector<std::string> out;
  glob_t g{};
  if (::glob(pattern.c_str(), GLOB_NOSORT | GLOB_ONLYDIR, nullptr, &g) == 0) {
    for (size_t i = 0; i < g.gl_pathc; ++i) out.emplace_back(g.gl_pathv[i]);
  }
  ::globfree(&g);
  std::sort(out.begin(), out.end());  // stable output, independent of readdir order
  return out;
}

std::string GetEnv(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? std::string(v) : std::string();
}

// glibc splits LD_LIBRARY_PATH on ':' and ';'; an empty element means the
// current folder.
std::vector<std::string> SplitLibraryPath(const std::string& value) {
  std::vector<std::string> out;
  if (value.empty()) return out;
  size_t begin = 0;
  while (begin <= value.size()) {
    size_t end = value.find_first_of(":;", begin);
    if (end == std::string::npos) end = value.size();
    std::string part = value.substr(begin, end - begin);
    out.push_back(part.empty() ? "." : part);
    begin = end + 1;
  }
  return out;
}

// Python installs whose site-packages may hold NVIDIA wheels (nvidia/*/lib).
std::vector<std::string> PythonPrefixPatterns() {
  std::vector<std::string> prefixes = {"/usr/lib", "/usr/local/lib"};
  const std::string home = GetEnv("HOME");
  if (!home.empty()) {
    prefixes.push_back(home + "/.local/lib");
    prefixes.push_back(home + "/.pyenv/versions/*/lib");
  }
  for (const char* var : {"VIRTUAL_ENV", "CONDA_PREFIX"}) {
    const std::string v = GetEnv(var);
    if (!v.empty()) prefixes.push_back(v + "/lib");
  }
  // A python3 on PATH at PREFIX/bin has its packages under PREFIX/lib.
  size_t seen = 0;
  for (const std::string& dir : SplitLibraryPath(GetEnv("PATH"))) {
    if (++seen > kMaxPathDirs) break;
    if (::access(Join(dir, "python3").c_str(), X_OK) == 0) prefixes.push_back(dir + "/../lib");
  }
  return prefixes;
}

std::vector<std::string> ExtraDirPatterns() {
  // targets/*/lib covers x86_64-linux and sbsa-linux (Arm servers) toolkits.
  std::vector<std::string> patterns = {"/usr/local/cuda/lib64", "/usr/local/cuda/targets/*/lib",
                                       "/usr/local/cuda-*/lib64", "/usr/local/cuda-*/targets/*/lib"};
  for (const std::string& prefix : PythonPrefixPatterns()) {
    patterns.push_back(prefix + "/python3*/site-packages/nvidia/*/lib");
    patterns.push_back(prefix + "/python3*/dist-packages/nvidia/*/lib");
  }
  return patterns;
}

struct Place {
  std::string label;  // found_via value
  std::string dir;
};

std::vector<Place> SearchPlacesBeforeCache(const ElfInfo& requester, const std::string& origin,
                                           const SearchEnvironment& env,
                                           const std::vector<std::string>& inherited_rpath) {
  std::vector<Place> places;
  if (requester.runpath.empty()) {
    for (const std::string& d : requester.rpath) places.push_back({"RPATH", ExpandOrigin(d, origin)});
    for (const std::string& d : inherited_rpath) places.push_back({"RPATH of a loading object", d});
  }
  for (const std::string& d : env.ld_library_path) places.push_back({"LD_LIBRARY_PATH", d});
  for (const std::string& d : requester.runpath) places.push_back({"RUNPATH", ExpandOrigin(d, origin)});
  return places;
}

enum class Verdict { kAbsent, kTake, kSkip, kFatal };

// What the loader does with one candidate path.
Verdict Examine(const std::string& path, const ElfInfo& requester, std::string& error) {
  // The loader moves on past files it cannot open (missing, unreadable).
  if (!IsRegularFile(path) || ::access(path.c_str(), R_OK) != 0) return Verdict::kAbsent;
  Result<ElfIdentity> id = ReadElfIdentity(path);
  if (!id.ok()) {
    error = id.status().summary();
    return Verdict::kFatal;
  }
  // glibc's order: another class is skipped, another byte order is an
  // error, another machine is skipped again.
  if (id->is_64bit != requester.is_64bit) return Verdict::kSkip;
  if (!id->little_endian) {
    error = "'" + path + "' is big-endian; the loader refuses it";
    return Verdict::kFatal;
  }
  if (id->machine != requester.machine) return Verdict::kSkip;
  return Verdict::kTake;
}

// Tries one candidate; true when the search is over (taken or fatal).
bool TryCandidate(const std::string& path, const std::string& label, const ElfInfo& requester, Resolution& r) {
  std::string error;
  switch (Examine(path, requester, error)) {
    case Verdict::kAbsent:
      return false;
    case Verdict::kSkip:
      r.skipped_wrong_class.push_back(path);
      return false;
    case Verdict::kFatal:
      r.load_error = error;
      [[fallthrough]];
    case Verdict::kTake:
      r.path = path;
      r.found_via = label;
      return true;
  }
  return false;
}

// The first cache entry the requester's loader would accept. Entries for
// glibc-hwcaps subfolders (hwcap != 0) depend on the CPU; plain ones are
// preferred so the answer does not depend on the machine running the doctor.
std::optional<std::string> CacheLookup(const std::string& name, const ElfInfo& requester,
                                       const SearchEnvironment& env, Resolution& r) {
  if (env.ld_so_cache.empty()) return std::nullopt;
  Result<std::vector<LdSoCacheEntry>> entries = ReadLdSoCacheEntries(env.ld_so_cache);
  if (!entries.ok()) {
    r.searched.push_back("ld.so.cache (unreadable: " + entries.status().summary() + ")");
    return std::nullopt;
  }
  r.searched.push_back("ld.so.cache: " + env.ld_so_cache);
  std::optional<std::string> hwcap_match;
  for (const LdSoCacheEntry& e : *entries) {
    if (e.soname != name || !LdCacheEntryMatches(e.flags, requester.machine, requester.is_64bit)) continue;
    if (e.hwcap == 0) return e.path;
    if (!hwcap_match) hwcap_match = e.path;
  }
  return hwcap_match;
}

void FillOtherCopies(const std::string& name, const ElfInfo& requester, const std::string& origin,
                     const SearchEnvironment& env, Resolution& r) {
  // RPATH/RUNPATH folders are the requester's own; add them to the scan.
  SearchEnvironment wide = env;
  for (const auto* list : {&requester.rpath, &requester.runpath}) {
    for (const std::string& d : *list) wide.extra_dirs.push_back(ExpandOrigin(d, origin));
  }
  const std::string chosen = r.path ? RealPath(*r.path) : std::string();
  for (std::string& copy : FindAllCopies(name, wide)) {
    if (copy != chosen) r.other_copies.push_back(std::move(copy));
  }
}

std::string DescribeSkips(const Resolution& r) {
  if (r.skipped_wrong_class.empty()) return {};
  return " (after skipping " + std::to_string(r.skipped_wrong_class.size()) +
         " copy/copies of another ELF class or machine: " + r.skipped_wrong_class.front() + ")";
}

void SearchByName(const std::string& name, const ElfInfo& requester, const std::string& origin,
                  const SearchEnvironment& env, const std::vector<std::string>& inherited_rpath, Resolution& r) {
  for (const Place& p : SearchPlacesBeforeCache(requester, origin, env, inherited_rpath)) {
    r.searched.push_back(p.label + ": " + p.dir);
    if (TryCandidate(Join(p.dir, name), p.label, requester, r)) return;
  }
  if (std::optional<std::string> cached = CacheLookup(name, requester, env, r)) {
    if (TryCandidate(*cached, "ld.so.cache", requester, r)) return;
  }
  for (const std::string& d : env.default_dirs) {
    r.searched.push_back("default dirs: " + d);
    if (TryCandidate(Join(d, name), "default dirs", requester, r)) return;
  }
}

void AddUnique(std::vector<std::string>& dirs, std::set<std::string>& seen, const std::string& dir) {
  if (dir.empty() || !IsDirectory(dir)) return;
  if (seen.insert(RealPath(dir)).second) dirs.push_back(dir);
}

void ScanFolder(const std::string& dir, const std::string& name, bool prefix_match, std::set<std::string>& seen,
                std::vector<std::string>& out) {
  auto add = [&](const std::string& path) {
    if (!IsRegularFile(path)) return;
    std::string real = RealPath(path);
    if (seen.insert(real).second) out.push_back(std::move(real));
  };
  if (!prefix_match) {
    add(Join(dir, name));
    return;
  }
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return;
  std::vector<std::string> names;
  while (const dirent* e = ::readdir(d)) {
    std::string entry = e->d_name;
    if (entry.compare(0, name.size(), name) == 0) names.push_back(std::move(entry));
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  for (const std::string& n : names) add(Join(dir, n));
}

}  // namespace

std::string ExpandOrigin(const std::string& entry, const std::string& origin_dir) {
  std::string out;
  for (size_t i = 0; i < entry.size();) {
    if (entry.compare(i, 9, "${ORIGIN}") == 0) {
      out += origin_dir;
      i += 9;
    } else if (entry.compare(i, 7, "$ORIGIN") == 0 &&
               (i + 7 == entry.size() || !(std::isalnum(static_cast<unsigned char>(entry[i + 7])) || entry[i + 7] == '_'))) {
      out += origin_dir;  // "$ORIGINX" is another (unknown) token, left alone
      i += 7;
    } else {
      out += entry[i++];
    }
  }
  return out;
}

SearchEnvironment SearchEnvironment::FromProcess() {
  SearchEnvironment env;
  env.ld_library_path = SplitLibraryPath(GetEnv("LD_LIBRARY_PATH"));
  std::set<std::string> seen;
  for (const std::string& pattern : ExtraDirPatterns()) {
    for (const std::string& dir : Glob(pattern)) {
      if (env.extra_dirs.size() >= kMaxExtraDirs) return env;
      AddUnique(env.extra_dirs, seen, dir);
    }
  }
  return env;
}

Resolution ResolveLibrary(const std::string& name, const ElfInfo& requester, const std::string& origin_dir,
                          const SearchEnvironment& env) {
  return ResolveLibrary(name, requester, origin_dir, env, {});
}

Resolution ResolveLibrary(const std::string& name, const ElfInfo& requester, const std::string& origin_dir,
                          const SearchEnvironment& env, const std::vector<std::string>& inherited_rpath) {
  Resolution r;
  r.name = name;
  if (name.find('/') != std::string::npos) {
    const std::string path = ExpandOrigin(name, origin_dir);
    r.searched.push_back("path: " + path);
    TryCandidate(path, "path in DT_NEEDED", requester, r);
  } else {
    SearchByName(name, requester, origin_dir, env, inherited_rpath, r);
  }
  r.found_via += DescribeSkips(r);
  if (name.find('/') == std::string::npos) FillOtherCopies(name, requester, origin_dir, env, r);
  return r;
}

std::vector<std::string> FindAllCopies(const std::string& name, const SearchEnvironment& env, bool prefix_match) {
  std::vector<std::string> dirs;
  std::set<std::string> seen_dirs;
  for (const auto* list : {&env.ld_library_path, &env.default_dirs, &env.extra_dirs}) {
    for (const std::string& d : *list) AddUnique(dirs, seen_dirs, d);
  }
  // Folders ldconfig indexed (from /etc/ld.so.conf.d) hold libraries too.
  if (!env.ld_so_cache.empty()) {
    if (Result<std::vector<LdSoCacheEntry>> entries = ReadLdSoCacheEntries(env.ld_so_cache); entries.ok()) {
      std::set<std::string> cache_dirs;  // hundreds of entries share a few folders
      for (const LdSoCacheEntry& e : *entries) {
        const size_t slash = e.path.rfind('/');
        if (slash == std::string::npos || slash == 0) continue;
        std::string dir = e.path.substr(0, slash);
        if (cache_dirs.insert(dir).second) AddUnique(dirs, seen_dirs, dir);
      }
    }
  }
  std::vector<std::string> out;
  std::set<std::string> seen_files;
  for (const std::string& d : dirs) ScanFolder(d, name, prefix_match, seen_files, out);
  return out;
}

}  // namespace vigil::doctor
