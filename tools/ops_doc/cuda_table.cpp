#include "cuda_table.h"

#include <dlfcn.h>
#include <unistd.h>

#include "doctor/module_kernel_table.h"
#include "doctor/module_loader.h"

namespace vigil::opsdoc {

Result<std::vector<KernelEntry>> ReadCudaKernelTable(const std::string& module_path) {
  if (access(module_path.c_str(), F_OK) != 0) {
    return std::move(EnvironmentError("the CUDA module {} does not exist", module_path)
                         .WithFix("build it: cmake --build build --target vigil_cuda"));
  }
  doctor::ModuleLoadOptions options;
  options.run_module_probe = false;  // no GPU needed: only the tables are read
  VIGIL_ASSIGN_OR_RETURN(doctor::LoadedModule module, doctor::LoadBackendModule(module_path, options));
  auto table_fn = reinterpret_cast<VigilKernelTableFn>(dlsym(module.handle, doctor::kKernelTableSymbol));
  if (table_fn == nullptr) {
    return std::move(EnvironmentError("the CUDA module {} has no kernel table (symbol {})", module_path,
                                      doctor::kKernelTableSymbol)
                         .WithCause("the module comes from an older vigil build")
                         .WithFix("rebuild the module: cmake --build build --target vigil_cuda"));
  }
  const VigilKernelTable* table = table_fn();
  if (table == nullptr || table->version != doctor::kKernelTableVersion) {
    return std::move(EnvironmentError("the CUDA module {} has kernel table version {}, this tool reads {}",
                                      module_path, table ? table->version : -1, doctor::kKernelTableVersion)
                         .WithFix("rebuild the module and this tool from one source tree"));
  }
  std::vector<KernelEntry> kernels;
  for (size_t i = 0; i < table->count; ++i) {
    const VigilKernelInfo& k = table->kernels[i];
    if (k.op == nullptr || k.domain == nullptr) {
      return InternalError("the CUDA module {} has a kernel table entry {} without a name", module_path, i);
    }
    kernels.push_back(
        {k.domain, k.op, {k.since_version, k.until_version}, k.checks_types != 0, k.dtypes, k.dtypes_decided != 0});
  }
  return kernels;
}

}  // namespace vigil::opsdoc
