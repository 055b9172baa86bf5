// Rules about the driver, the CUDA runtime and the GPUs the driver shows.
#include <algorithm>

#include "doctor/rules/compat_facts.h"
#include "doctor/rules/rules.h"
#include "doctor/rules/rules_common.h"

namespace vigil::doctor {
namespace {

std::vector<Finding> ProbeFailed(const StackSnapshot& s) {
  if (s.probe_error.empty()) return {};
  return {MakeFinding("probe.failed", Severity::kError,
                      "probing the GPU stack failed inside a library: " + s.probe_error,
                      {{"probe", s.probe_error}},
                      "the library named above crashes or hangs when loaded; reinstall it or remove it from the "
                      "search path, then run `vigil doctor` again")};
}

std::vector<Finding> DriverMissing(const StackSnapshot& s) {
  const Component* driver = s.Find(kDriver);
  if (driver == nullptr || driver->found) return {};
  return {MakeFinding(
      "driver.missing", Severity::kError,
      "no NVIDIA driver: libcuda.so.1 cannot be loaded, so nothing can run on a GPU; this is the cause that "
      "blocks GPU use",
      {{"libcuda.so.1", driver->load_error.empty() ? "not found" : driver->load_error},
       {"/proc/driver/nvidia/gpus", s.physical_gpu_count < 0 ? "absent (no kernel driver loaded)"
                                                              : std::to_string(s.physical_gpu_count) + " GPU(s)"}},
      "install the NVIDIA driver (e.g. `apt install nvidia-driver-580` or the .run installer) and reboot; in a "
      "container, start it with the NVIDIA Container Toolkit (`docker run --gpus all ...`)")};
}

std::vector<Finding> DriverTooOldForRuntime(const StackSnapshot& s) {
  const Component* cudart = Loaded(s, kCudart);
  if (!Loaded(s, kDriver) || cudart == nullptr || s.driver_cuda_version <= 0 || s.cudart_version <= 0) return {};
  Version driver = DecodeCudaVersion(s.driver_cuda_version);
  Version runtime = DecodeCudaVersion(s.cudart_version);
  if (!(driver < runtime)) return {};
  std::vector<Fact> evidence = {{"driver supports CUDA up to", driver.ToString() + " (cuDriverGetVersion)"},
                                {"CUDA runtime", Describe(*cudart)}};
  if (driver.major < runtime.major) {
    return {MakeFinding("driver.too_old_for_runtime", Severity::kError,
                        "the driver supports CUDA " + driver.ToString() + " but the CUDA runtime is " +
                            runtime.ToString() + ": a newer CUDA major needs a newer driver",
                        std::move(evidence),
                        "upgrade the NVIDIA driver to one for CUDA " + std::to_string(runtime.major) +
                            " (Linux >= " + MinimumDriverForCudaMajor(runtime.major).ToString() +
                            "), or use a CUDA " + std::to_string(driver.major) + " runtime")};
  }
  // Same major, older minor: minor-version compatibility (FACTS.md, CUDA
  // compatibility) lets it run, except features and PTX newer than the driver.
  return {MakeFinding("driver.minor_version_compat", Severity::kInfo,
                      "the driver (CUDA " + driver.ToString() + ") is older than the runtime (" +
                          runtime.ToString() + "); it runs under CUDA minor-version compatibility",
                      std::move(evidence),
                      "nothing to do unless PTX JIT or a newer-runtime feature fails; then upgrade the driver")};
}

// The driver release against the minimum for the CUDA major cuDNN was built for.
std::vector<Finding> DriverTooOldForCudnn(const StackSnapshot& s) {
  const Component* cudnn = LoadedCudnn(s);
  if (!Loaded(s, kDriver) || cudnn == nullptr || s.cudnn_cudart_version <= 0) return {};
  Version built_for = DecodeCudaVersion(s.cudnn_cudart_version);
  std::optional<Version> release = ParseDottedVersion(s.driver_release);
  const CudnnSupportRow* row = FindCudnnSupport(cudnn->version, built_for);
  Version minimum = row ? row->min_driver_linux : MinimumDriverForCudaMajor(built_for.major);
  std::string source = row ? std::string(row->source) : std::string(MinimumDriverSource());
  Version driver_cuda = DecodeCudaVersion(s.driver_cuda_version);
  bool release_low = release && minimum.known() && *release < minimum;
  bool cuda_low = driver_cuda.known() && driver_cuda.major < built_for.major;
  if (!release_low && !cuda_low) return {};
  return {MakeFinding(
      "driver.too_old_for_cudnn", Severity::kError,
      "cuDNN " + cudnn->version.ToString() + " was built for CUDA " + built_for.ToString() + " and needs driver >= " +
          minimum.ToString() + ", but the driver is " + (s.driver_release.empty() ? "older" : s.driver_release),
      {{"driver release", s.driver_release.empty() ? "unknown" : s.driver_release},
       {"driver supports CUDA up to", driver_cuda.ToString()},
       {"cuDNN", Describe(*cudnn)},
       {"cudnnGetCudartVersion", std::to_string(s.cudnn_cudart_version)},
       {"source", source}},
      "upgrade the NVIDIA driver to >= " + minimum.ToString() + ", or install a cuDNN built for CUDA " +
          std::to_string(driver_cuda.known() ? driver_cuda.major : built_for.major - 1))};
}

std::vector<Finding> RuntimeMissing(const StackSnapshot& s) {
  const Component* cudart = s.Find(kCudart);
  if (cudart == nullptr || cudart->found) return {};
  return {MakeFinding("cudart.missing", Severity::kWarning,
                      "no CUDA runtime (libcudart.so.13/.12/.11) found; vigil's CUDA backend and most frameworks "
                      "need it",
                      {{"tried", cudart->file}, {"error", cudart->load_error}},
                      "install the CUDA runtime (`apt install cuda-cudart-13-0`, or `pip install "
                      "nvidia-cuda-runtime-cu12`) and add its lib folder to LD_LIBRARY_PATH")};
}

// CUDA_VISIBLE_DEVICES="" or "-1", or a list naming no existing device.
bool HidesEverything(const StackSnapshot& s, const std::string& value) {
  if (value.empty() || value == "-1" || value == "NoDevFiles") return true;
  return s.gpu_query_ran && s.gpus.empty() && s.physical_gpu_count != 0;
}

std::vector<Finding> VisibleDevicesHidesAll(const StackSnapshot& s) {
  std::optional<std::string> value = s.Env("CUDA_VISIBLE_DEVICES");
  if (!value || !Loaded(s, kDriver) || !HidesEverything(s, *value)) return {};
  return {MakeFinding(
      "env.cuda_visible_devices_hides_all", Severity::kError,
      "CUDA_VISIBLE_DEVICES=\"" + *value + "\" hides every GPU, so CUDA sees no device",
      {{"CUDA_VISIBLE_DEVICES", *value},
       {"GPUs visible to CUDA", std::to_string(s.gpus.size())},
       {"GPUs in /proc/driver/nvidia/gpus", s.physical_gpu_count < 0 ? "unknown" : std::to_string(s.physical_gpu_count)}},
      "unset CUDA_VISIBLE_DEVICES, or set it to existing device indices or UUIDs (e.g. CUDA_VISIBLE_DEVICES=0)")};
}

std::vector<Finding> GpuQueryFailed(const StackSnapshot& s) {
  if (!Loaded(s, kDriver) || s.gpu_query_error.empty()) return {};
  std::optional<std::string> visible = s.Env("CUDA_VISIBLE_DEVICES");
  if (visible && HidesEverything(s, *visible)) return {};  // said by the rule above
  return {MakeFinding("gpu.query_failed", Severity::kError,
                      "the driver loads but cannot use a GPU: " + s.gpu_query_error,
                      {{"driver", Describe(*s.Find(kDriver))}, {"error", s.gpu_query_error}},
                      "check `nvidia-smi`; CUDA_ERROR_NO_DEVICE means no GPU is visible (container without "
                      "--gpus, or a missing /dev/nvidia*); a driver/library version mismatch (error 803) needs "
                      "a reboot or a matching libcuda")};
}

std::vector<Finding> NoGpu(const StackSnapshot& s) {
  if (!Loaded(s, kDriver) || !s.gpu_query_ran || !s.gpu_query_error.empty() || !s.gpus.empty()) return {};
  if (s.Env("CUDA_VISIBLE_DEVICES")) return {};
  return {MakeFinding("gpu.none", Severity::kError, "the driver loads but reports no GPU",
                      {{"cuDeviceGetCount", "0"}},
                      "check `nvidia-smi` and that /dev/nvidia* exist (in a container: --gpus all)")};
}

const Rule kDriverRules[] = {
    {"probe.failed", ProbeFailed},
    {"driver.missing", DriverMissing},
    {"driver.too_old_for_runtime", DriverTooOldForRuntime},
    {"driver.too_old_for_cudnn", DriverTooOldForCudnn},
    {"cudart.missing", RuntimeMissing},
    {"env.cuda_visible_devices_hides_all", VisibleDevicesHidesAll},
    {"gpu.query_failed", GpuQueryFailed},
    {"gpu.none", NoGpu},
};

}  // namespace

std::span<const Rule> DriverRules() { return kDriverRules; }

std::vector<Finding> RunRules(const StackSnapshot& snapshot) {
  std::vector<Finding> all;
  for (auto table : {DriverRules(), CudnnRules(), EnvRules()}) {
    for (const Rule& rule : table) {
      std::vector<Finding> found = rule.check(snapshot);
      all.insert(all.end(), std::make_move_iterator(found.begin()), std::make_move_iterator(found.end()));
    }
  }
  std::stable_sort(all.begin(), all.end(),
                   [](const Finding& a, const Finding& b) { return a.severity > b.severity; });
  return all;
}

}  // namespace vigil::doctor
