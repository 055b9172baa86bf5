// The CPU backend: the reference implementation of every op in the catalogue,
// and the fallback for nodes other backends cannot run.
#pragma once

#include <memory>

#include "runtime/backend.h"

namespace vigil::cpu {

struct CpuOptions {
  // At most this many threads for one node (the session's
  // intra_op_num_threads; 0: as many as the CPU has, 1: each node on the
  // calling thread alone).
  int max_threads = 0;
  // Run every node on its reference kernel, never on an optimised path
  // (src/backends/cpu/fast/, oneDNN): slower, and the oracle the optimised
  // paths are tested against.
  bool reference_kernels = false;
};
std::shared_ptr<const runtime::Backend> MakeCpuBackend(const CpuOptions& options);
inline std::shared_ptr<const runtime::Backend> MakeCpuBackend(int max_threads = 0) {
  return MakeCpuBackend(CpuOptions{max_threads, false});
}

}  // namespace vigil::cpu
