// Internal to the CPU reduction family: reduction.cpp (Reduce*) joins the
// kernels of reduction_axis.cpp (ArgMax, ArgMin, CumSum, CumProd, TopK) into
// ReductionKernels().
#pragma once

#include <span>

#include "backends/cpu/kernel.h"

namespace vigil::cpu {

std::span<const KernelDef> AxisReductionKernels();

}  // namespace vigil::cpu
