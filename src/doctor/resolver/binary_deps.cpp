// Breadth-first resolution of a binary's DT_NEEDED tree, as glibc's loader
// walks it (each object's needs in file order, new objects appended to the
// list; a name already loaded, by DT_NEEDED name or DT_SONAME, is reused),
// followed by findings a user can act on.
#include "doctor/resolver/binary_deps.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <climits>
#include <cstdlib>
#include <deque>
#include <map>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace vigil::doctor {
namespace {

std::string RealPathOf(const std::string& path) {
  char buf[PATH_MAX];
  return ::realpath(path.c_str(), buf) != nullptr ? std::string(buf) : path;
}

std::string DirName(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string BaseName(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// glibc makes a relative path absolute against the working folder but does
// not resolve symlinks when it computes a library's $ORIGIN.
std::string Absolute(const std::string& path) {
  if (!path.empty() && path.front() == '/') return path;
  char cwd[PATH_MAX];
  if (::getcwd(cwd, sizeof cwd) == nullptr) return path;
  return std::string(cwd) + "/" + path;
}

// One object in the loader's list, waiting for its own needs to be resolved.
struct Node {
  ElfInfo elf;
  std::string path;                          // as found
  std::string origin;                        // its $ORIGIN
  std::vector<std::string> inherited_rpath;  // RPATHs of the objects that loaded it
  int depth = 0;
};

// The RPATH folders a node passes on to what it loads: its own (unless it
// has a RUNPATH, which makes glibc ignore its RPATH), then its loaders'.
std::vector<std::string> RpathForChildren(const Node& n) {
  std::vector<std::string> out;
  if (n.elf.runpath.empty()) {
    for (const std::string& d : n.elf.rpath) out.push_back(ExpandOrigin(d, n.origin));
  }
  out.insert(out.end(), n.inherited_rpath.begin(), n.inherited_rpath.end());
  return out;
}

BinaryDependency FromResolution(Resolution r, const std::string& requester, int depth) {
  BinaryDependency d;
  d.name = r.name;
  d.needed_by.push_back(requester);
  d.path = std::move(r.path);
  d.found_via = std::move(r.found_via);
  d.other_copies = std::move(r.other_copies);
  d.skipped_wrong_class = std::move(r.skipped_wrong_class);
  d.load_error = std::move(r.load_error);
  d.searched = std::move(r.searched);
  d.cuda_family = CudaFamilyOf(d.name);
  if (!d.cuda_family.empty()) d.major_version = SonameMajor(d.name);
  d.depth = depth;
  return d;
}

// The walk itself: names and files already loaded, and the queue.
class Walker {
 public:
  Walker(const SearchEnvironment& env, const ResolveLimits& limits, BinaryReport& report)
      : env_(env), limits_(limits), report_(report) {}

  void Run(Node root) {
    Remember(root.elf.soname, -1);
    loaded_files_[RealPathOf(root.path)] = -1;
    queue_.push_back(std::move(root));
    while (!queue_.empty()) {
      Node n = std::move(queue_.front());
      queue_.pop_front();
      for (const std::string& name : n.elf.needed) Visit(name, n);
    }
  }

 private:
  void Remember(const std::string& name, int index) {
    if (!name.empty()) loaded_names_.emplace(name, index);
  }

  void Visit(const std::string& name, const Node& requester) {
    if (auto it = loaded_names_.find(name); it != loaded_names_.end()) {
      if (it->second >= 0) report_.dependencies[it->second].needed_by.push_back(requester.path);
      return;
    }
    if (report_.dependencies.size() >= limits_.max_libraries || requester.depth + 1 > limits_.max_depth) {
      report_.truncated = true;
      return;
    }
    // The requester's own RPATH is searched by ResolveLibrary; pass only its loaders'.
    Resolution r = ResolveLibrary(name, requester.elf, requester.origin, env_, requester.inherited_rpath);
    const int index = static_cast<int>(report_.dependencies.size());
    report_.dependencies.push_back(FromResolution(std::move(r), requester.path, requester.depth + 1));
    Remember(name, index);
    const BinaryDependency& dep = report_.dependencies.back();
    if (dep.path && dep.load_error.empty()) Enqueue(*dep.path, index, requester);
  }

  void Enqueue(const std::string& path, int index, const Node& requester) {
    // The loader recognises a file it already has (same inode) under a new name.
    if (!loaded_files_.emplace(RealPathOf(path), index).second) return;
    Result<ElfInfo> elf = ReadElf(path);
    if (!elf.ok()) {
      report_.dependencies[index].load_error = elf.status().summary();
      return;
    }
    Remember(elf->soname, index);
    Node child;
    child.elf = std::move(elf).value();
    child.path = path;
    child.origin = DirName(Absolute(path));
    child.inherited_rpath = RpathForChildren(requester);
    child.depth = requester.depth + 1;
    queue_.push_back(std::move(child));
  }

  const SearchEnvironment& env_;
  const ResolveLimits& limits_;
  BinaryReport& report_;
  std::deque<Node> queue_;
  std::map<std::string, int> loaded_names_;  // -1: the binary itself
  std::map<std::string, int> loaded_files_;
};

// ---- findings ----

std::string FamilyTitle(const std::string& family) {
  if (family == "cudnn") return "cuDNN";
  if (family == "cudart") return "CUDA runtime";
  if (family == "cublas") return "cuBLAS";
  if (family == "cublasLt") return "cuBLASLt";
  if (family == "nvrtc") return "NVRTC";
  if (family == "cuda") return "CUDA driver";
  return family;
}

// "libcudnn.so.9.14.0" -> "9.14.0"; "" when the file name carries no version.
std::string VersionInFileName(const std::string& path) {
  const std::string base = BaseName(path);
  const size_t so = base.find(".so.");
  return so == std::string::npos ? std::string() : base.substr(so + 4);
}

bool RightClass(const std::string& path, const ElfInfo& binary) {
  Result<ElfIdentity> id = ReadElfIdentity(path);
  return id.ok() && id->is_64bit == binary.is_64bit && id->machine == binary.machine;
}

std::string LdLibraryPathFix(const std::string& dir) {
  return fmt::format("export LD_LIBRARY_PATH={}${{LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}}", dir);
}

void AddCommonEvidence(const BinaryDependency& d, BinaryFinding& f) {
  f.evidence.push_back("needed by: " + fmt::format("{}", fmt::join(d.needed_by, ", ")));
  if (!d.searched.empty()) f.evidence.push_back("searched: " + fmt::format("{}", fmt::join(d.searched, "; ")));
  for (const std::string& s : d.skipped_wrong_class) {
    f.evidence.push_back("skipped (other ELF class or machine): " + s);
  }
}

// Files of the same library with another major version ("libcudnn.so.9" when
// "libcudnn.so.8" is needed), as "path" strings by major.
std::map<int, std::vector<std::string>> OtherMajors(const BinaryDependency& d, const SearchEnvironment& env) {
  std::map<int, std::vector<std::string>> out;
  const size_t so = d.name.find(".so.");
  const std::optional<int> need = SonameMajor(d.name);
  if (so == std::string::npos || !need) return out;
  for (const std::string& copy : FindAllCopies(d.name.substr(0, so + 4), env, /*prefix_match=*/true)) {
    const std::optional<int> major = SonameMajor(BaseName(copy));
    if (major && *major != *need) out[*major].push_back(copy);
  }
  return out;
}

std::string WrongMajorFix(const BinaryDependency& d, int need, int have) {
  if (d.cuda_family == "cudnn") {
    return fmt::format("install cuDNN {} (built for this program's CUDA major version), or use a build of this "
                       "program made for cuDNN {}", need, have);
  }
  if (!d.cuda_family.empty()) {
    return fmt::format("install the CUDA {} libraries ({}), or use a build of this program made for CUDA {}", need,
                       FamilyTitle(d.cuda_family), have);
  }
  return fmt::format("install version {} of {}, or use a build of this program made for version {}", need, d.name,
                     have);
}

BinaryFinding MissingFinding(const BinaryDependency& d, const BinaryReport& report, const SearchEnvironment& env) {
  BinaryFinding f;
  f.severity = "error";
  AddCommonEvidence(d, f);
  std::vector<std::string> usable;
  for (const std::string& c : d.other_copies) {
    if (RightClass(c, report.elf)) usable.push_back(c);
  }
  const std::map<int, std::vector<std::string>> majors = OtherMajors(d, env);
  for (const auto& [major, paths] : majors) {
    f.evidence.push_back(fmt::format("installed with major version {}: {}", major, fmt::join(paths, ", ")));
  }
  if (!usable.empty()) {
    // The pip-wheel case: the library is on disk, but nowhere the loader looks.
    f.id = "binary.library_not_on_search_path";
    f.summary = fmt::format("{} is missing for the loader, but a copy exists in {}", d.name, DirName(usable.front()));
    for (const std::string& c : usable) f.evidence.push_back("copy not on the search path: " + c);
    f.fix = "add its folder to LD_LIBRARY_PATH: " + LdLibraryPathFix(DirName(usable.front()));
  } else if (const std::optional<int> need = SonameMajor(d.name); !majors.empty() && need) {
    const auto& [have, paths] = *majors.rbegin();  // the newest other major
    const std::string what = d.cuda_family.empty() ? d.name.substr(0, d.name.find(".so.")) : FamilyTitle(d.cuda_family);
    f.id = "binary.library_wrong_major";
    f.summary = fmt::format("this binary needs {} ({} {}) but only {} {} is installed ({})", d.name, what, *need,
                            what, have, fmt::join(paths, ", "));
    f.fix = WrongMajorFix(d, *need, have);
  } else {
    f.id = "binary.library_missing";
    f.summary = fmt::format("{} cannot be found: the loader will refuse to start {}", d.name, BaseName(report.path));
    if (!d.skipped_wrong_class.empty()) {
      f.summary = fmt::format("{} exists only for another ELF class or machine ({}); the loader skips it", d.name,
                              d.skipped_wrong_class.front());
    }
    f.fix = fmt::format("install the package that provides {}, or add its folder to LD_LIBRARY_PATH", d.name);
  }
  return f;
}

BinaryFinding LoadErrorFinding(const BinaryDependency& d) {
  BinaryFinding f;
  f.id = "binary.library_unloadable";
  f.severity = "error";
  f.summary = fmt::format("the loader finds {} at {} ({}) and stops there: {}", d.name, *d.path, d.found_via,
                          d.load_error);
  AddCommonEvidence(d, f);
  f.fix = fmt::format("remove or replace {}; a linker script or damaged file there hides any good copy later in the "
                      "search", *d.path);
  return f;
}

BinaryFinding WrongClassFinding(const BinaryDependency& d) {
  BinaryFinding f;
  f.id = "binary.wrong_class_skipped";
  f.severity = "warning";
  f.summary = fmt::format("{} at {} was skipped because it is built for another ELF class or machine; the loader "
                          "takes {} instead", d.name, d.skipped_wrong_class.front(), *d.path);
  AddCommonEvidence(d, f);
  f.fix = "remove the folder holding the other-architecture copy from LD_LIBRARY_PATH/RUNPATH if it is a mistake";
  return f;
}

// "9.14.0", or "build-id abc…" when the file name carries no version.
std::string Identify(const std::string& path) {
  std::string v = VersionInFileName(path);
  if (!v.empty()) return v;
  Result<ElfInfo> elf = ReadElf(path);
  return elf.ok() && !elf->build_id.empty() ? "build-id " + elf->build_id : std::string();
}

std::optional<BinaryFinding> OtherVersionsFinding(const BinaryDependency& d, const BinaryReport& report) {
  const std::string chosen_real = RealPathOf(*d.path);
  const std::string chosen = Identify(chosen_real);
  std::vector<std::string> differing;
  for (const std::string& c : d.other_copies) {
    if (!RightClass(c, report.elf)) continue;
    const std::string other = Identify(c);
    if (!chosen.empty() && !other.empty() && other != chosen) differing.push_back(fmt::format("{} ({})", c, other));
  }
  if (differing.empty()) return std::nullopt;
  BinaryFinding f;
  f.id = "binary.other_versions_present";
  f.severity = d.cuda_family.empty() ? "info" : "warning";
  f.summary = fmt::format("{} resolves to {} ({}) via {}; other copies differ: {}", d.name, chosen_real, chosen,
                          d.found_via, fmt::join(differing, ", "));
  AddCommonEvidence(d, f);
  f.fix = "to use another copy, put its folder first in LD_LIBRARY_PATH (RPATH still wins over it, RUNPATH does not)";
  return f;
}

// cuDNN sub-libraries resolved from different folders mix versions; cuDNN
// checks them against each other and fails with obscure errors.
std::optional<BinaryFinding> MixedCudnnFinding(const BinaryReport& report) {
  std::map<std::string, std::vector<std::string>> by_dir;
  for (const BinaryDependency& d : report.dependencies) {
    if (d.cuda_family == "cudnn" && d.path) by_dir[DirName(RealPathOf(*d.path))].push_back(d.name);
  }
  if (by_dir.size() < 2) return std::nullopt;
  BinaryFinding f;
  f.id = "binary.cudnn_mixed_folders";
  f.severity = "warning";
  f.summary = fmt::format("cuDNN libraries come from {} different folders; mixed copies fail their version checks",
                          by_dir.size());
  for (const auto& [dir, names] : by_dir) f.evidence.push_back(fmt::format("{}: {}", dir, fmt::join(names, ", ")));
  f.fix = "make one cuDNN installation come first on LD_LIBRARY_PATH, or remove the others";
  return f;
}

int SeverityRank(const std::string& s) { return s == "error" ? 0 : s == "warning" ? 1 : 2; }

void AddFindings(BinaryReport& report, const SearchEnvironment& env, const ResolveLimits& limits) {
  auto& out = report.findings;
  for (const BinaryDependency& d : report.dependencies) {
    if (!d.path) {
      out.push_back(MissingFinding(d, report, env));
      continue;
    }
    if (!d.load_error.empty()) out.push_back(LoadErrorFinding(d));
    if (!d.skipped_wrong_class.empty()) out.push_back(WrongClassFinding(d));
    if (d.load_error.empty()) {
      if (auto f = OtherVersionsFinding(d, report)) out.push_back(std::move(*f));
    }
  }
  if (auto f = MixedCudnnFinding(report)) out.push_back(std::move(*f));
  if (report.truncated) {
    out.push_back({"binary.walk_truncated", "info",
                   fmt::format("stopped after {} libraries or depth {}; the list is incomplete",
                               limits.max_libraries, limits.max_depth),
                   {}, ""});
  }
  std::stable_sort(out.begin(), out.end(), [](const BinaryFinding& a, const BinaryFinding& b) {
    return SeverityRank(a.severity) < SeverityRank(b.severity);
  });
}

}  // namespace

std::string CudaFamilyOf(const std::string& soname) {
  const std::string base = BaseName(soname);
  auto starts = [&](const char* p) { return base.rfind(p, 0) == 0; };
  if (starts("libcudnn")) return "cudnn";
  if (starts("libcudart")) return "cudart";
  if (starts("libcublasLt")) return "cublasLt";  // before "libcublas", its prefix
  if (starts("libcublas")) return "cublas";
  if (starts("libcuda.so")) return "cuda";
  if (starts("libnvrtc")) return "nvrtc";
  return {};
}

std::optional<int> SonameMajor(const std::string& soname) {
  const size_t so = soname.find(".so.");
  if (so == std::string::npos) return std::nullopt;
  size_t i = so + 4;
  int value = 0;
  size_t digits = 0;
  for (; i < soname.size() && std::isdigit(static_cast<unsigned char>(soname[i])) && digits < 6; ++i, ++digits) {
    value = value * 10 + (soname[i] - '0');
  }
  if (digits == 0) return std::nullopt;
  return value;
}

Result<BinaryReport> ResolveBinary(const std::string& path, const SearchEnvironment& env,
                                   const ResolveLimits& limits) {
  Result<ElfInfo> elf = ReadElf(path);
  if (!elf.ok()) return std::move(elf).TakeStatus().WithContext("--binary");
  BinaryReport report;
  report.path = path;
  report.real_path = RealPathOf(path);
  report.elf = elf.value();
  Node root;
  root.elf = std::move(elf).value();
  root.path = path;
  // An executable's $ORIGIN is its real folder (the kernel resolves links).
  root.origin = DirName(report.real_path);
  Walker(env, limits, report).Run(std::move(root));
  AddFindings(report, env, limits);
  return report;
}

std::string FormatBinaryReport(const BinaryReport& report) {
  std::string out = fmt::format("{} ({}-bit, machine {}{})\n", report.path, report.elf.is_64bit ? 64 : 32,
                                report.elf.machine,
                                report.elf.build_id.empty() ? "" : ", build-id " + report.elf.build_id);
  for (const BinaryDependency& d : report.dependencies) {
    out += fmt::format("{:{}}{} => {}", "", 2 * d.depth, d.name, d.path ? *d.path : "NOT FOUND");
    if (d.path) out += fmt::format(" [{}]", d.found_via);
    if (d.major_version) out += fmt::format(" {{{} {}}}", FamilyTitle(d.cuda_family), *d.major_version);
    if (!d.other_copies.empty()) out += fmt::format(" (+{} other copies)", d.other_copies.size());
    out += "\n";
  }
  for (const BinaryFinding& f : report.findings) {
    out += fmt::format("{}: [{}] {}\n", f.severity, f.id, f.summary);
    for (const std::string& e : f.evidence) out += "    " + e + "\n";
    if (!f.fix.empty()) out += "    fix: " + f.fix + "\n";
  }
  return out;
}

}  // namespace vigil::doctor
