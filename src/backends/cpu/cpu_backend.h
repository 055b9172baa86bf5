// The CPU backend: the reference implementation of every op in the catalogue,
// and the fallback for nodes other backends cannot run.
#pragma once

#include <memory>

#include "runtime/backend.h"

namespace vigil::cpu {

// `max_threads`: at most this many threads for one node's matrix products
// (the session's intra_op_num_threads; 0: as many as the CPU has, 1: each
// node on the calling thread alone).
std::shared_ptr<const runtime::Backend> MakeCpuBackend(int max_threads = 0);

}  // namespace vigil::cpu
