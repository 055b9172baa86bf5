// Internal to the CPU linear algebra family (linalg.cpp, einsum.cpp): the type
// products are computed in, and conversions of whole tensors to and from it.
// float32, float16 and bfloat16 multiply in float, float64 in double, every
// integer type in int64_t with wrap-around arithmetic (truncating back to the
// element type gives exactly the element type's own wrap-around result).
#pragma once

#include <cstdint>
#include <type_traits>
#include <vector>

#include "backends/cpu/element_types.h"
#include "backends/cpu/kernel.h"

namespace vigil::cpu {

// The dtypes the family's kernels accept.
inline constexpr TypeMask kLinalgTypes = kNumericTypes;

template <DataType D>
using LinalgCompute = std::conditional_t<D == DataType::kFloat64, double,
                                         std::conditional_t<InMask(kFloatTypes, D), float, int64_t>>;

// Whether dtype D's storage can be used as LinalgCompute<D> in place: same
// width, and either the same type or two integer types (int64/uint64 share
// their bits under wrap-around arithmetic).
template <DataType D>
constexpr bool kLinalgInPlace =
    sizeof(typename Elem<D>::Storage) == sizeof(LinalgCompute<D>) &&
    (std::is_same_v<typename Elem<D>::Storage, LinalgCompute<D>> ||
     (std::is_integral_v<typename Elem<D>::Storage> && std::is_integral_v<LinalgCompute<D>>));

// The elements of `t` as LinalgCompute<D>: the tensor's own buffer where it
// already has that layout, else a converted copy kept in `scratch`.
template <DataType D>
const LinalgCompute<D>* LoadLinalg(const runtime::Tensor& t, std::vector<LinalgCompute<D>>& scratch) {
  using C = LinalgCompute<D>;
  using S = typename Elem<D>::Storage;
  const S* src = t.data<S>();
  if constexpr (kLinalgInPlace<D>) {
    return reinterpret_cast<const C*>(src);
  } else {
    scratch.resize(t.element_count());
    for (size_t i = 0; i < scratch.size(); ++i) scratch[i] = static_cast<C>(Elem<D>::Load(src[i]));
    return scratch.data();
  }
}

// Where to compute an output of `count` elements: the output's own buffer
// where it has the compute layout, else `scratch` (then StoreLinalg copies).
template <DataType D>
LinalgCompute<D>* LinalgResultBuffer(runtime::Tensor& out, std::vector<LinalgCompute<D>>& scratch) {
  if constexpr (kLinalgInPlace<D>) {
    return reinterpret_cast<LinalgCompute<D>*>(out.data<typename Elem<D>::Storage>());
  } else {
    scratch.resize(out.element_count());
    return scratch.data();
  }
}

// Converts a result computed by LinalgResultBuffer into the output.
template <DataType D>
void StoreLinalg(const LinalgCompute<D>* result, runtime::Tensor& out) {
  if constexpr (!kLinalgInPlace<D>) {
    using S = typename Elem<D>::Storage;
    S* dst = out.data<S>();
    const uint64_t n = out.element_count();
    for (uint64_t i = 0; i < n; ++i) {
      if constexpr (std::is_integral_v<LinalgCompute<D>>) {
        dst[i] = static_cast<S>(result[i]);  // modular since C++20: the element type's wrap-around
      } else {
        dst[i] = Elem<D>::Store(result[i]);
      }
    }
  }
}

// Einsum (einsum.cpp).
Status EinsumKernel(KernelContext& ctx);

}  // namespace vigil::cpu
