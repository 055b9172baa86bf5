// `vigil doctor --binary FILE`: every library FILE needs, resolved the way the
// dynamic loader would, with findings in plain words.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "doctor/resolver/elf_file.h"
#include "doctor/resolver/library_resolver.h"

namespace vigil::doctor {

// One conclusion about the binary's libraries. Deliberately plain so the
// doctor's general report can map it onto its own finding type:
//   id        stable, dotted, e.g. "binary.library_missing"; tests and tools key on it
//   severity  "error" (the binary will not load), "warning" (it loads, maybe
//             not with what you think), "info" (worth knowing)
//   summary   one sentence naming the library and the problem
//   evidence  facts behind it: who needs it, where the loader looked, paths
//   fix       one concrete action, or empty
struct BinaryFinding {
  std::string id;
  std::string severity;  // "error" | "warning" | "info"
  std::string summary;
  std::vector<std::string> evidence;
  std::string fix;
};

// One DT_NEEDED name, resolved once as the loader does (it loads each soname
// once, for the first object that needs it, in breadth-first order).
struct BinaryDependency {
  std::string name;                    // as in DT_NEEDED, e.g. "libcudnn.so.9"
  std::vector<std::string> needed_by;  // every requester; the first one's search paths decided
  std::optional<std::string> path;     // where the loader takes it from; nullopt if missing
  std::string found_via;               // Resolution::found_via
  std::vector<std::string> other_copies;         // real paths of other files with this name
  std::vector<std::string> skipped_wrong_class;  // candidates the loader skipped
  std::string load_error;              // non-empty if the loader stops at `path` with an error
  std::vector<std::string> searched;   // where the loader looked, in order
  std::string cuda_family;             // "cudnn", "cudart", "cublas", "cublasLt", "cuda", "nvrtc" or ""
  std::optional<int> major_version;    // from the soname, for the CUDA family only
  int depth = 1;                       // 1 = needed by the binary itself
};

struct BinaryReport {
  std::string path;       // as given
  std::string real_path;  // symlinks resolved
  ElfInfo elf;            // the binary's own ELF facts
  std::vector<BinaryDependency> dependencies;  // breadth-first, the loader's order
  std::vector<BinaryFinding> findings;         // most severe first
  bool truncated = false;  // a bound below was hit; the list is incomplete
};

// Bounds against pathological or hostile dependency graphs.
struct ResolveLimits {
  int max_depth = 32;
  size_t max_libraries = 1024;
};

// Resolves every DT_NEEDED of `path` recursively. Fails only if `path` itself
// cannot be read as ELF; problems with dependencies are findings.
Result<BinaryReport> ResolveBinary(const std::string& path, const SearchEnvironment& env,
                                   const ResolveLimits& limits = {});

// "libcudnn_ops.so.9" -> "cudnn"; "" for libraries outside the CUDA family.
std::string CudaFamilyOf(const std::string& soname);
// The first number after ".so." ("libcudnn.so.9.14.0" -> 9), if any.
std::optional<int> SonameMajor(const std::string& soname);

// Plain-text rendering, one dependency a line, then the findings.
std::string FormatBinaryReport(const BinaryReport& report);

}  // namespace vigil::doctor
