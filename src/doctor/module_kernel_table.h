// A backend module's kernel table as plain C: which ops, in which domains and
// opsets, the module has kernels for. Read without creating the backend and
// without touching a GPU (tools/ops_doc writes docs/ops.md from it), so it
// is a second exported symbol, apart from vigil_backend_entry, with its own
// version. Optional: a module without it simply cannot be listed.
#pragma once

#include <stddef.h>

extern "C" {
struct VigilKernelInfo {
  const char* domain;  // "" for the default ONNX domain
  const char* op;
  int since_version;   // first opset the kernel covers
  int until_version;   // last opset it covers; INT_MAX for the latest
  // 1: the kernel decides per node, from the node's dtypes (and for some
  // kernels its attributes and ranks), whether it takes it (SupportsTyped);
  // 0: it takes any types.
  int checks_types;
};

struct VigilKernelTable {
  int version;  // vigil::doctor::kKernelTableVersion
  size_t count;
  const struct VigilKernelInfo* kernels;  // `count` entries, valid while the module is loaded
};
typedef const struct VigilKernelTable* (*VigilKernelTableFn)(void);
}

namespace vigil::doctor {

// 1: domain, op, opset range, checks_types.
inline constexpr int kKernelTableVersion = 1;
inline constexpr const char* kKernelTableSymbol = "vigil_backend_kernel_table";

}  // namespace vigil::doctor
