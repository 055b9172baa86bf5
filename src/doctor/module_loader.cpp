#include "doctor/module_loader.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cctype>

#include "doctor/rules/rules.h"
#include "doctor/rules/rules_common.h"

namespace vigil::doctor {
namespace {

// "libcudnn_ops.so.9" -> "libcudnn": findings about that family are relevant.
std::string Stem(const std::string& soname) {
  std::string stem = soname.substr(0, soname.find('.'));
  size_t underscore = stem.find('_');
  return underscore == std::string::npos ? stem : stem.substr(0, underscore);
}

bool Mentions(const Finding& f, const std::string& stem) {
  if (f.summary.find(stem) != std::string::npos) return true;
  for (const Fact& e : f.evidence) {
    if (e.value.find(stem) != std::string::npos || e.name.find(stem) != std::string::npos) return true;
  }
  // Component ids: libcudnn -> cudnn.*, libcuda -> driver.*, libcudart -> cudart.*
  std::string family = stem == "libcuda" ? "driver." : stem.substr(3) + ".";
  std::string lower;
  for (char c : family) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return f.id.starts_with(lower);
}

// Step 1's extra: what the doctor knows about the missing library.
void AttachDoctorFindings(const std::string& missing, const ModuleLoadOptions& options, Status& status) {
  StackSnapshot snapshot = ProbeStack(options.probe);
  std::string stem = Stem(missing);
  int attached = 0;
  for (const Finding& f : RunRules(snapshot)) {
    if (f.severity == Severity::kInfo || !Mentions(f, stem)) continue;
    status.WithCause(f.summary, "doctor finding " + f.id);
    if (!f.fix.empty()) status.WithFix(f.fix);
    ++attached;
  }
  for (const Component& c : snapshot.components) {
    if (c.file != missing || !c.found) continue;
    // The doctor can load it where the module could not: a search-path issue.
    status.WithFact("doctor found " + missing, Describe(c));
    status.WithCause(missing + " exists but is not on the module's search path",
                     "the doctor loaded it from " + c.path);
    status.WithFix("add " + c.path.substr(0, c.path.rfind('/')) + " to LD_LIBRARY_PATH");
    ++attached;
  }
  if (attached == 0) status.WithFact("doctor", "no finding about " + missing + "; run `vigil doctor` for the full report");
}

Status OpenFailed(const std::string& path, const std::string& error, const ModuleLoadOptions& options) {
  Status status = EnvironmentError("cannot load backend module {}: {}", path, error);
  status.WithFact("module", path).WithFact("dlopen error", error);
  std::optional<std::string> missing = MissingLibraryIn(error);
  if (!missing) {
    if (access(path.c_str(), F_OK) != 0) status.WithFix("install vigil's CUDA module next to the vigil library");
    return status;
  }
  status.WithFact("missing library", *missing);
  if (options.diagnose_missing_libraries) AttachDoctorFindings(*missing, options, status);
  return status;
}

}  // namespace


std::optional<std::string> MissingLibraryIn(const std::string& error) {
  const std::string marker = ": cannot open shared object file";
  size_t at = error.find(marker);
  if (at == std::string::npos) return std::nullopt;
  size_t start = error.rfind(' ', at);
  start = start == std::string::npos ? 0 : start + 1;
  std::string name = error.substr(start, at - start);
  size_t slash = name.rfind('/');
  return slash == std::string::npos ? name : name.substr(slash + 1);
}

Result<LoadedModule> LoadBackendModule(const std::string& path, const ModuleLoadOptions& options) {
  LoadedModule module;
  module.path = path;
  dlerror();
  module.handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (module.handle == nullptr) {
    const char* error = dlerror();
    return OpenFailed(path, error ? error : "dlopen failed", options);
  }
  auto entry_fn = reinterpret_cast<VigilBackendEntryFn>(dlsym(module.handle, options.entry_symbol.c_str()));
  if (entry_fn == nullptr) {
    return std::move(EnvironmentError("{} is not a vigil backend module: it has no symbol {}", path, options.entry_symbol)
                         .WithFact("module", path)
                         .WithCause("a different library with the same name, or a module from an incompatible build")
                         .WithFix("reinstall vigil so that the module and the library come from one build"));
  }
  module.entry = entry_fn();
  if (module.entry == nullptr || module.entry->abi_version != options.abi_version) {
    int got = module.entry ? module.entry->abi_version : -1;
    return std::move(EnvironmentError("backend module {} has ABI version {}, this vigil needs {}", path, got,
                                      options.abi_version)
                         .WithFact("expected ABI", std::to_string(options.abi_version))
                         .WithFact("module ABI", std::to_string(got))
                         .WithCause("the module comes from another vigil release")
                         .WithFix("install the CUDA module of the same vigil release"));
  }
  if (options.run_module_probe && module.entry->probe != nullptr) {
    char message[512] = {};
    if (module.entry->probe(message, sizeof message - 1) != 0) {
      std::string reason = message[0] ? message : "no reason given";
      return std::move(EnvironmentError("the {} backend cannot run here: {}",
                                        module.entry->name ? module.entry->name : "backend", reason)
                           .WithFact("module", path)
                           .WithFix("run `vigil doctor` for the full GPU stack report"));
    }
  }
  return module;
}

}  // namespace vigil::doctor
