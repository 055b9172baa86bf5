// The module's exported symbols: vigil_backend_entry, the plain-C table the
// core's loader (doctor/module_loader.h) checks step by step before it
// creates the backend, and vigil_backend_kernel_table, the kernel table as
// plain C (doctor/module_kernel_table.h; read by tools/ops_doc, no GPU needed).
#include <cstring>
#include <string>
#include <vector>

#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/cuda_kernel_list.h"
#include "backends/cuda/kernel_dtype_probe.h"
#include "doctor/module_kernel_table.h"
#include "doctor/module_loader.h"

namespace {

void Write(char* message, size_t size, const std::string& text) {
  if (size == 0) return;
  size_t n = text.size() < size - 1 ? text.size() : size - 1;
  std::memcpy(message, text.data(), n);
  message[n] = '\0';
}

// Whether this machine can run the backend: a driver, a visible GPU, and a
// cuDNN 9 whose version can be read.
int Probe(char* message, size_t size) {
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    Write(message, size, std::string("no usable CUDA device: ") + cudaGetErrorName(e) + ": " + cudaGetErrorString(e));
    return 1;
  }
  if (count == 0) {
    Write(message, size, "no CUDA device is visible");
    return 1;
  }
  size_t v = cudnnGetVersion();
  if (v / 10000 != 9) {
    Write(message, size, "cuDNN " + std::to_string(v) + " was loaded; the module needs cuDNN 9");
    return 1;
  }
  return 0;
}

int Create(const VigilBackendOptions* options, void** backend, void** status) {
  vigil::cuda::CudaOptions o;
  if (options && options->cxx_runtime_marker != vigil::doctor::CxxRuntimeMarker()) {
    // The backend is a C++ object whose strings, vectors and statuses the
    // caller frees: that is only sound with one C++ runtime in the process.
    *status = new vigil::Status(std::move(
        vigil::EnvironmentError("the CUDA module and the program loading it use two different copies of the C++ "
                                "runtime")
            .WithCause("the program (or the library loading the module) was linked with -static-libstdc++, while "
                       "the module uses the shared libstdc++.so.6")
            .WithFix("link the program against the shared C++ runtime (no -static-libstdc++), or use vigil through "
                     "libvigil.so and its C API")));
    return 1;
  }
  if (options) {
    o.device = options->device;
    o.allow_tf32 = options->allow_tf32 != 0;
    o.deterministic = options->deterministic != 0;
    o.memory_limit = options->memory_limit;
    o.tune = options->tune != 0;
    if (options->tuning_cache) o.tuning_cache = options->tuning_cache;
    o.sync_each_node = options->sync_each_node != 0;
    o.allow_tf32x3 = options->allow_tf32x3 != 0;
    o.measure_first_run = options->measure_first_run != 0;
    o.tf32x3_convolutions = options->tf32x3_convolutions != 0;
  }
  auto created = vigil::cuda::CreateCudaBackend(o);
  if (!created.ok()) {
    *status = new vigil::Status(std::move(created).TakeStatus());
    return 1;
  }
  *backend = std::move(created).value().release();
  return 0;
}

void Destroy(void* backend) { delete static_cast<vigil::runtime::Backend*>(backend); }

const char* Describe(int device) {
  static thread_local std::string text;
  text = vigil::cuda::DescribeCudaStack(device);
  return text.c_str();
}

const VigilBackendEntry kEntry = {vigil::doctor::kBackendAbiVersion,
                                  "cuda",
                                  Probe,
                                  vigil::runtime::kBackendInterfaceVersion,
                                  Create,
                                  Destroy,
                                  Describe};

}  // namespace

extern "C" __attribute__((visibility("default"))) const VigilBackendEntry* vigil_backend_entry(void) {
  return &kEntry;
}

// Built once from the kernel families: the domain and op strings are the
// tables' own literals, so they live as long as the module. The dtypes come
// from the support functions, probed on the host (no GPU).
extern "C" __attribute__((visibility("default"))) const VigilKernelTable* vigil_backend_kernel_table(void) {
  static const std::vector<VigilKernelInfo> kernels = [] {
    std::vector<VigilKernelInfo> v;
    for (const vigil::cuda::CudaKernelDef* def : vigil::cuda::AllCudaKernels()) {
      const vigil::cuda::ProbedDtypes probed = vigil::cuda::ProbeKernelDtypes(*def);
      v.push_back({def->domain, def->op, def->since_version, def->until_version, def->supports != nullptr ? 1 : 0,
                   probed.decided ? 1 : 0, probed.dtypes});
    }
    return v;
  }();
  static const VigilKernelTable table = {vigil::doctor::kKernelTableVersion, kernels.size(), kernels.data()};
  return &table;
}
