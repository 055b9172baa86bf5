// Which dtypes each CUDA kernel takes, found by asking its support function
// (CudaKernelDef::supports) about synthesized nodes, so that the answer is
// the support functions' own and cannot drift from them. Host code only: no
// GPU is touched, so tools/ops_doc can read it (through the module's kernel
// table, doctor/module_kernel_table.h) on a machine without one.
#pragma once

#include <cstdint>

#include "backends/cuda/cuda_kernel.h"

namespace vigil::cuda {

struct ProbedDtypes {
  // Bit d (ONNX numbering): the support function took a node whose main
  // input (the first type variable of the CPU kernel's declaration,
  // backends/cpu/kernel_type_constraints.h; input 0 without one) has dtype d.
  uint64_t dtypes = 0;
  // False when it took no synthesized node at all: its decision needs
  // attributes or shapes the probe does not make ("per node" in the doc).
  bool decided = false;
};

// A kernel without a support function takes every dtype. For one with it,
// each candidate dtype of the main input is tried with: the required inputs
// or every input the CPU declaration binds; the other inputs at each dtype
// their CPU type variable takes (the main dtype first); ranks unknown, 4, 2
// and 1; no attributes, then `to` set to the candidate (Cast); the outputs'
// dtypes unknown, and only where that finds none, output 0 at each dtype
// (support functions that check it: QuantizeLinear's integer output).
ProbedDtypes ProbeKernelDtypes(const CudaKernelDef& def);

}  // namespace vigil::cuda
