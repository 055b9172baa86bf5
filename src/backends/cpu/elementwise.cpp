// The CPU elementwise family's kernel list: the per-file lists of
// elementwise_{unary,activation,binary,nary,cast}.cpp joined.
#include <vector>

#include "backends/cpu/elementwise_kernels.h"
#include "backends/cpu/kernel_families.h"

namespace vigil::cpu {

std::span<const KernelDef> ElementwiseKernels() {
  static const std::vector<KernelDef> kAll = [] {
    std::vector<KernelDef> all;
    for (auto part : {ElementwiseUnaryKernels(), ElementwiseActivationKernels(), ElementwiseBinaryKernels(),
                      ElementwiseNaryKernels(), ElementwiseCastKernels()}) {
      all.insert(all.end(), part.begin(), part.end());
    }
    return all;
  }();
  return kAll;
}

}  // namespace vigil::cpu
