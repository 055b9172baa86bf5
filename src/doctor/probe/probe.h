// Probes the GPU stack with dlopen/dlsym only (vigil never links the CUDA
// driver), and fills a StackSnapshot. By default the probe runs in a forked
// child, so a library that crashes or hangs while loading becomes a finding,
// and the caller's process never holds a cuDNN or CUDA handle.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "doctor/probe/snapshot.h"
#include "doctor/resolver/library_resolver.h"

namespace vigil::doctor {

struct ProbeOptions {
  // Folders to load the libraries from (by full path, first folder that has
  // the file wins). Empty: dlopen by name, so the dynamic loader decides
  // exactly as it would for any program here. Tests point this at folders of
  // fake libraries.
  std::vector<std::string> lib_dirs;
  // Where other copies are looked for; default SearchEnvironment::FromProcess().
  std::optional<SearchEnvironment> search;
  // Physical GPUs the kernel driver knows (one folder each).
  std::string proc_gpus_dir = "/proc/driver/nvidia/gpus";
  // Run in a forked child (recommended). Off only for debugging.
  bool isolate = true;
  int timeout_ms = 20000;
};

// Probes everything: driver, CUDA runtime, cuDNN and its sub-libraries,
// cuBLAS(Lt), GPUs, environment variables. Never fails: what could not be
// probed is recorded in the snapshot (Component::load_error,
// StackSnapshot::probe_error, ...).
StackSnapshot ProbeStack(const ProbeOptions& options = {});

// The same, in this process: loads libraries here and never unloads them.
// Used by the forked child; call it directly only in a process that exists
// to probe.
StackSnapshot ProbeStackInProcess(const ProbeOptions& options);

// Parts of the probe, exposed for tests and for the child.
void CaptureEnvironment(StackSnapshot& snapshot);
void ProbeGpus(void* libcuda_handle, StackSnapshot& snapshot);
// What a copy reports through its own API.
struct CopyVersion {
  Version version;           // unknown when the child could not tell
  int64_t cuda_version = -1;  // cuDNN: cudnnGetCudartVersion()
};

// The version a library at `path` reports through its own API, read in a
// short-lived child so that loading it cannot disturb this process (two
// copies of one SONAME cannot be told apart in one process). `api` is the
// component id whose API to call ("cudnn", "cudart").
//
// A cuDNN copy answers through its sub-libraries, which it loads by name:
// in a process whose LD_LIBRARY_PATH names another cuDNN's folder, those
// would come from there (a 9.19 copy then reports the other's version). The
// loader reads LD_LIBRARY_PATH once, at process start, so the child cannot
// change it; instead it loads the copy and then the copy's own
// libcudnn_graph (cuDNN 8: libcudnn_ops_infer) by absolute path, and a later
// load by name finds that one already loaded (glibc matches loaded objects by
// SONAME first). The child's stdout goes to stderr (cuDNN logs to stdout when
// CUDNN_LOGDEST_DBG=stdout).
CopyVersion QueryCopyVersion(const std::string& path, const std::string& api, int timeout_ms = 3000);

}  // namespace vigil::doctor
