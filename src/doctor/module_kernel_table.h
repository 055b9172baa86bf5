// A backend module's kernel table as plain C: which ops, in which domains and
// opsets, the module has kernels for. Read without creating the backend and
// without touching a GPU (tools/ops_doc writes docs/ops.md from it), so it
// is a second exported symbol, apart from vigil_backend_entry, with its own
// version. Optional: a module without it simply cannot be listed.
#pragma once

#include <stddef.h>
#include <stdint.h>

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
  // Version 2: the dtypes of the kernel's main input (its first type
  // variable) that it takes, bit d for ONNX's TensorProto dtype d. For a
  // kernel that checks types, found by calling its support function on
  // synthesized nodes (src/backends/cuda/kernel_dtype_probe.h), not kept by
  // hand. dtypes_decided is 0 where the probe found no node the support
  // function takes: it decides per node, from attributes or shapes.
  int dtypes_decided;
  uint64_t dtypes;
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
// 2: and dtypes_decided, dtypes (VigilKernelInfo grew: a reader of version 1
//    must not read a version 2 table).
inline constexpr int kKernelTableVersion = 2;
inline constexpr const char* kKernelTableSymbol = "vigil_backend_kernel_table";

}  // namespace vigil::doctor
