// Every option of a session, as typed fields, passed once: the C API's
// vigil_session_options in C++ form. The library reads no VIGIL_* variable
// to decide any of these (docs/api.md lists the developer switches that
// remain).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/conv_layout.h"

namespace vigil::api {

enum class BackendKind { kCpu, kCuda };

struct SessionConfig {
  // In order of preference. Empty: {kCpu}. kCuda without kCpu: no fallback
  // (a node the CUDA backend cannot run fails the session's creation).
  std::vector<BackendKind> backends;
  int device_id = 0;
  bool allow_tf32 = false;
  bool deterministic = false;
  uint64_t gpu_mem_limit = 0;  // bytes; 0: free device memory
  runtime::ConvLayout layout = runtime::ConvLayout::kNhwcWhereFaster;
  bool cuda_graphs = false;
  std::string cudnn_log_file;  // empty: no cuDNN API log
  bool tune = false;
  std::string tuning_cache_file;
  bool constant_folding = true;
  std::string cuda_module_path;  // empty: the usual places (backends/module)
  // Synchronise after every device node, so per-node host timings are device
  // timings (profiling) and a fault is reported at the node that caused it.
  bool enable_profiling = false;
  bool isolate = false;
  double isolate_timeout_s = 0;
  int intra_op_num_threads = 0;
  // A float32 model computed in float16 (runtime/float16_compute.h).
  bool run_as_float16 = false;
  // Large float32 products as 3xTF32 where TF32 is off (vigil.h).
  bool allow_tf32x3 = true;
  // Without tune, the operations whose library pick is often slow are
  // measured on their first run (vigil.h).
  bool measure_first_run = true;
  // Without allow_tf32, float32 convolutions as 3xTF32 (vigil.h).
  bool tf32x3_convolutions = false;

  bool wants_cuda() const;
  bool cpu_fallback() const;
};

}  // namespace vigil::api
