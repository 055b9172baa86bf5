// The CPU backend: the reference implementation of every op in the catalogue,
// and the fallback for nodes other backends cannot run.
#pragma once

#include <memory>

#include "runtime/backend.h"

namespace vigil::cpu {

std::shared_ptr<const runtime::Backend> MakeCpuBackend();

}  // namespace vigil::cpu
