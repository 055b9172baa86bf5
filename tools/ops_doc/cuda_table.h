// The CUDA column's source: the kernel table of a built CUDA module
// (libvigil_cuda.so), read through its plain-C symbol
// vigil_backend_kernel_table (doctor/module_kernel_table.h). The module is
// opened but not probed and no backend is created, so no GPU is needed.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "op_table.h"

namespace vigil::opsdoc {

Result<std::vector<KernelEntry>> ReadCudaKernelTable(const std::string& module_path);

}  // namespace vigil::opsdoc
