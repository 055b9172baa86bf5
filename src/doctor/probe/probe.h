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
// The version a library at `path` reports through its own API, read in a
// short-lived child so that loading it cannot disturb this process (two
// copies of one SONAME cannot be told apart in one process). `api` is the
// component id whose API to call ("cudnn", "cudart", "cublasLt").
Version QueryCopyVersion(const std::string& path, const std::string& api, int timeout_ms = 3000);

}  // namespace vigil::doctor
