// Loads the CUDA backend module (libvigil_cuda.so) and creates the backend:
// the doctor's loader does open / find symbol / ABI / can-it-run-here, then
// this checks the backend interface version and calls the module's create.
// Every failure is a Diagnosis; when the GPU stack is at fault, the doctor's
// findings about it are attached.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "runtime/backend.h"

namespace vigil::backends {

struct CudaBackendOptions {
  int device = 0;
  bool allow_tf32 = false;
  bool allow_tf32x3 = true;  // large float32 products as 3xTF32 without TF32 (split_tf32.h)
  bool deterministic = false;
  uint64_t memory_limit = 0;  // bytes (0: free device memory)
  bool tune = false;          // autotuning: measure candidate algorithms (docs/tuning.md)
  bool measure_first_run = true;  // without tune, measure the slow-pick operations once (docs/tuning.md)
  bool tf32x3_convolutions = false;  // without allow_tf32, float32 convolutions as 3xTF32 (docs/cuda.md)
  std::string tuning_cache;   // file of recorded algorithm choices; empty: none
  bool sync_each_node = false;  // synchronise after every node (profiling, fault location)
  std::string module_path;    // libvigil_cuda.so to load; empty: CudaModuleCandidates()
};

struct LoadedBackend {
  std::shared_ptr<const runtime::Backend> backend;
  std::string module_path;
  std::string description;  // "CUDA runtime 13.0, cuDNN 9.14.0, ..."
};

// Where the module is looked for, in order: $VIGIL_CUDA_MODULE (a developer
// switch), next to the library holding this code (libvigil.so, or the
// executable it is linked into), ../lib/vigil/ and ./vigil/ from there, next
// to the running executable, then the build tree.
std::vector<std::string> CudaModuleCandidates();

// Where a file installed with vigil is looked for: next to the shared object
// this code is linked into (libvigil.so) and next to the executable, each also
// in ./vigil/, ../lib/vigil/ and ../<libdir>/vigil/. The CUDA module and the
// isolated worker (vigil-worker) live there.
std::vector<std::string> InstalledFileCandidates(const std::string& name);

Result<LoadedBackend> LoadCudaBackend(const CudaBackendOptions& options);

}  // namespace vigil::backends
