#include "backends/module/backend_module.h"

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include <fmt/format.h>

#include "doctor/module_loader.h"
#include "doctor/probe/probe.h"
#include "doctor/rules/rules.h"

namespace vigil::backends {
namespace {

constexpr const char* kModuleName = "libvigil_cuda.so";

// The folder of the shared object (or executable) this code is linked into:
// libvigil.so's folder when the library is used, so the module is found
// relative to it wherever it is installed.
std::string ThisLibraryDir() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&ThisLibraryDir), &info) == 0 || !info.dli_fname) return {};
  std::error_code ec;
  auto path = std::filesystem::canonical(info.dli_fname, ec);
  return ec ? std::string() : path.parent_path().string();
}

std::string ExecutableDir() {
  std::error_code ec;
  auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string() : exe.parent_path().string();
}

// The doctor's error findings: why the GPU stack cannot be used here. The
// probe runs in this process: the module has already initialised CUDA here,
// and a child forked after that cannot safely load the GPU libraries (it
// dies in libcudnn_graph), while the libraries are loaded here already.
// They lead: the status the module saw (cudaErrorInsufficientDriver when
// there is no driver at all) is the symptom, a finding names the cause.
void AttachDoctorErrors(Status& status) {
  doctor::StackSnapshot snapshot = doctor::ProbeStackInProcess({});
  std::vector<Cause> causes;
  std::vector<std::string> fixes;
  for (const doctor::Finding& f : doctor::RunRules(snapshot)) {
    if (f.severity != doctor::Severity::kError) continue;
    causes.push_back({f.summary, "doctor finding " + f.id});
    if (!f.fix.empty()) fixes.push_back(f.fix);
  }
  if (status.ok()) return;
  Diagnosis& d = status.diagnosis();
  d.causes.insert(d.causes.begin(), causes.begin(), causes.end());
  d.fixes.insert(d.fixes.begin(), fixes.begin(), fixes.end());
  const std::string doctor = "run `vigil doctor` for the full GPU stack report";
  if (std::find(d.fixes.begin(), d.fixes.end(), doctor) == d.fixes.end()) d.fixes.push_back(doctor);
}

}  // namespace

std::vector<std::string> InstalledFileCandidates(const std::string& name) {
  std::vector<std::string> v;
  auto add = [&v](const std::string& path) {
    if (std::find(v.begin(), v.end(), path) == v.end()) v.push_back(path);
  };
  for (const std::string& dir : {ThisLibraryDir(), ExecutableDir()}) {
    if (dir.empty()) continue;
    add(dir + "/" + name);
    add(dir + "/vigil/" + name);
    add(dir + "/../lib/vigil/" + name);
    add(dir + "/../" VIGIL_INSTALL_LIBDIR "/vigil/" + name);
  }
  return v;
}

std::vector<std::string> CudaModuleCandidates() {
  std::vector<std::string> v;
  if (const char* env = std::getenv("VIGIL_CUDA_MODULE"); env && *env) v.push_back(env);
  for (std::string& c : InstalledFileCandidates(kModuleName)) {
    if (std::find(v.begin(), v.end(), c) == v.end()) v.push_back(std::move(c));
  }
#ifdef VIGIL_BUILD_MODULE_DIR
  v.push_back(std::string(VIGIL_BUILD_MODULE_DIR) + "/" + kModuleName);
#endif
  return v;
}

Result<LoadedBackend> LoadCudaBackend(const CudaBackendOptions& options) {
  std::vector<std::string> candidates =
      options.module_path.empty() ? CudaModuleCandidates() : std::vector<std::string>{options.module_path};
  std::string path;
  for (const std::string& c : candidates) {
    if (access(c.c_str(), F_OK) == 0) {
      path = c;
      break;
    }
  }
  if (path.empty()) {
    std::string searched;
    for (const std::string& c : candidates) searched += (searched.empty() ? "" : ", ") + c;
    return std::move(EnvironmentError("the CUDA backend module {} was not found", kModuleName)
                         .WithFact("searched", searched)
                         .WithCause("this vigil was built without the CUDA backend (no CUDA toolkit or cuDNN 9 "
                                    "headers at build time)")
                         .WithFix("rebuild where nvcc and cuDNN 9 are installed, or give the module's path "
                                  "(cuda_module_path)")
                         .WithFix("run on the CPU backend (--backend cpu; in the API, list only the CPU backend)"));
  }
  Result<doctor::LoadedModule> module = doctor::LoadBackendModule(path);
  if (!module.ok()) {
    Status s = std::move(module).TakeStatus();
    if (s.summary().find("cannot run here") != std::string::npos) AttachDoctorErrors(s);
    return s;
  }
  const VigilBackendEntry* entry = module->entry;
  if (entry->backend_interface_version != runtime::kBackendInterfaceVersion || !entry->create || !entry->destroy) {
    return std::move(EnvironmentError("backend module {} was built for backend interface {}, this vigil has {}", path,
                                      entry->backend_interface_version, runtime::kBackendInterfaceVersion)
                         .WithFix("install the CUDA module of the same vigil build"));
  }
  VigilBackendOptions c{options.device,
                        options.allow_tf32 ? 1 : 0,
                        options.deterministic ? 1 : 0,
                        static_cast<unsigned long long>(options.memory_limit),
                        options.tune ? 1 : 0,
                        options.tuning_cache.empty() ? nullptr : options.tuning_cache.c_str(),
                        options.sync_each_node ? 1 : 0,
                        doctor::CxxRuntimeMarker(),
                        options.allow_tf32x3 ? 1 : 0,
                        options.measure_first_run ? 1 : 0,
                        options.tf32x3_convolutions ? 1 : 0};
  void* backend = nullptr;
  void* status = nullptr;
  if (entry->create(&c, &backend, &status) != 0 || !backend) {
    std::unique_ptr<Status> owned(static_cast<Status*>(status));
    Status s = owned ? *owned : InternalError("the CUDA module's create failed without a reason");
    s.WithContext("creating the CUDA backend").WithFact("module", path);
    if (s.code() == ErrorCode::kEnvironment) AttachDoctorErrors(s);
    return s;
  }
  LoadedBackend loaded;
  void (*destroy)(void*) = entry->destroy;
  loaded.backend = std::shared_ptr<const runtime::Backend>(
      static_cast<runtime::Backend*>(backend), [destroy](const runtime::Backend* b) {
        destroy(const_cast<runtime::Backend*>(b));
      });
  loaded.module_path = path;
  if (entry->describe) loaded.description = entry->describe(options.device);
  return loaded;
}

}  // namespace vigil::backends
