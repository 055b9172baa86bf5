// The dtypes each CPU kernel takes, declared per type variable (as ONNX's
// type constraints and ONNX Runtime's kernel definitions are): which inputs
// a variable binds and the dtypes the kernel's dispatch handles for it.
// There is one declaration per entry of AllKernels() (the same domain, op
// and opset range); a test keeps the two lists equal.
//
// The CPU backend refuses, when a model loads, a node whose known input
// dtype is outside its kernel's declaration (cpu_backend.cpp); the kernels
// still check at run time (a declaration states what the dispatch takes, the
// kernel also checks what must agree between inputs). tools/ops_doc writes
// the first type variable's dtypes into docs/ops.md.
//
// Kept apart from kernel.h (a header every kernel includes).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "backends/cpu/element_types.h"
#include "backends/cpu/kernel.h"
#include "runtime/backend.h"
#include "runtime/float16_compute.h"

namespace vigil::cpu {

// Every dtype vigil knows (strings and 4-bit types too).
inline constexpr TypeMask kAnyDtype = (TypeMask{1} << (static_cast<int>(DataType::kFloat4E2M1) + 1)) - 2;
// The dtypes of fixed size (not strings).
inline constexpr TypeMask kFixedSizeDtypes = kAnyDtype & ~Bit(DataType::kString);
// The dtypes stored in whole bytes: what data movement copies byte-wise
// (shape_family::ElementBytes): every numeric type, bool, float8, complex.
inline constexpr TypeMask kByteSizedDtypes =
    kAllTypes | Bit(DataType::kFloat8E4M3FN) | Bit(DataType::kFloat8E4M3FNUZ) | Bit(DataType::kFloat8E5M2) |
    Bit(DataType::kFloat8E5M2FNUZ) | Bit(DataType::kComplex64) | Bit(DataType::kComplex128);

// One type variable of a kernel: the inputs it binds and the dtypes the
// kernel takes for it.
struct KernelTypeVariable {
  const char* name = nullptr;  // "T", "Tind", ...; null ends the list
  uint32_t inputs = 0;         // bit i: input i
  TypeMask dtypes = 0;
  bool and_later = false;      // also every input after the highest in `inputs` (variadic)
};

inline constexpr size_t kMaxKernelTypeVariables = 5;

struct KernelTypeConstraints {
  const char* domain;  // as in the KernelDef
  const char* op;
  int since_version;
  int until_version;
  // The first is the op's main one (its data input), shown in docs/ops.md.
  KernelTypeVariable variables[kMaxKernelTypeVariables];

  size_t variable_count() const;
  // The variable that binds input i, or null.
  const KernelTypeVariable* VariableOf(size_t input) const;
};

// Every declaration, one per CPU kernel.
std::span<const KernelTypeConstraints> AllKernelTypeConstraints();

// The declaration of kernel `def` (same domain, op and opset range), or null.
const KernelTypeConstraints* FindKernelTypeConstraints(const KernelDef& def);

// The declaration of the CPU kernel for `op` in `domain` at `opset`, or null
// (without the kernel table: the CUDA module, which has no CPU kernels, uses
// the declarations as the dtypes to probe its support functions with).
const KernelTypeConstraints* FindKernelTypeConstraintsAt(std::string_view domain, std::string_view op, int64_t opset);

// Whether the kernel `def` takes the node's known input dtypes. Inputs whose
// type is unknown at load, or not a tensor, are not refused. On false,
// `why_not` says "dtype int8 of input 0 is not among the CPU Relu kernel's
// dtypes for T (float32, ...)".
bool KernelTakesInputTypes(const KernelDef& def, const ir::Node& node, const runtime::NodeTypes& types,
                           std::string* why_not);

// Whether input `input` of `node` may be float16 where the model has float32
// (runtime/float16_compute.h's question): the CPU kernel's type variable for
// that input takes both float32 and float16; tied when it is the op's main
// variable (the first declared: Where's T, not its condition's), free when
// it is another. kNo for undeclared ops.
runtime::Float16Input TakesFloat16Input(const ir::Node& node, int64_t opset, size_t input);

// "float32, float16, bfloat16": the dtypes in `mask` in ONNX order.
std::string DtypeNames(TypeMask mask);

}  // namespace vigil::cpu
