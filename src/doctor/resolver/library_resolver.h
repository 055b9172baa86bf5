// Finds shared libraries the way the dynamic loader would, and every other
// copy a user might get instead.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "doctor/resolver/elf_file.h"

namespace vigil::doctor {

// Where the search looks; defaults come from the process environment and the
// system, and tests replace them with folders of fake libraries.
struct SearchEnvironment {
  std::vector<std::string> ld_library_path;  // LD_LIBRARY_PATH entries
  std::string ld_so_cache = "/etc/ld.so.cache";
  std::vector<std::string> default_dirs = {"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu",
                                           "/lib64", "/usr/lib64", "/lib", "/usr/lib"};
  // Extra places users' libraries live that the loader does not search by
  // itself: CUDA toolkits, Python wheel folders site-packages/nvidia/*/lib.
  std::vector<std::string> extra_dirs;

  static SearchEnvironment FromProcess();  // reads LD_LIBRARY_PATH, finds toolkits and wheels
};

// Parses /etc/ld.so.cache (the glibc "glibc-ld.so.cache1.1" format, and the
// old "ld.so-1.7.0" one if present): soname -> paths, in cache order.
Result<std::multimap<std::string, std::string>> ReadLdSoCache(const std::string& path);

// How one DT_NEEDED name resolved.
struct Resolution {
  std::string name;            // as needed, e.g. "libcudnn.so.9"
  std::optional<std::string> path;  // where the loader would take it from
  std::string found_via;       // "RPATH", "LD_LIBRARY_PATH", "RUNPATH", "ld.so.cache", "default dirs"
  std::vector<std::string> other_copies;  // other files of the same name anywhere searched

  // Additions beyond the original interface:
  // Candidates the loader passed over because their ELF class or machine
  // differs from the requester's (it does so silently), in search order.
  std::vector<std::string> skipped_wrong_class;
  // Non-empty when the loader would stop with an error at `path` (a file that
  // is not ELF, e.g. a linker script, or one too short): the load fails.
  std::string load_error;
  // Every place looked at, in order: "LD_LIBRARY_PATH: /dir", "ld.so.cache", ...
  std::vector<std::string> searched;
};

// Resolves one name as the loader would for an object with these search
// paths ($ORIGIN expanded against `origin_dir`).
Resolution ResolveLibrary(const std::string& name, const ElfInfo& requester, const std::string& origin_dir,
                          const SearchEnvironment& env);

// Addition: the same, with the DT_RPATH folders of the objects that loaded
// the requester (its loader chain up to the executable, $ORIGIN already
// expanded against each one's own folder). glibc searches those after the
// requester's own DT_RPATH, and only when the requester has no DT_RUNPATH.
Resolution ResolveLibrary(const std::string& name, const ElfInfo& requester, const std::string& origin_dir,
                          const SearchEnvironment& env, const std::vector<std::string>& inherited_rpath);

// Addition: `entry` with $ORIGIN and ${ORIGIN} replaced by `origin_dir`.
// $LIB and $PLATFORM are left as they are (the doctor does not guess them).
std::string ExpandOrigin(const std::string& entry, const std::string& origin_dir);

// Every file named `name` (or, with `prefix_match`, starting with `name`) in
// any folder of `env`, real paths, without duplicates.
std::vector<std::string> FindAllCopies(const std::string& name, const SearchEnvironment& env,
                                       bool prefix_match = false);

}  // namespace vigil::doctor
