// Internal to the CPU elementwise family (elementwise*.cpp): the per-file
// kernel lists that ElementwiseKernels() joins, and the loops every file
// shares: an elementwise map over one tensor and integer arithmetic that wraps
// instead of overflowing (signed overflow is undefined in C++; ONNX integer
// ops wrap like numpy).
#pragma once

#include <cstdint>
#include <span>
#include <type_traits>

#include "backends/cpu/element_types.h"
#include "backends/cpu/kernel.h"
#include "backends/cpu/parallel.h"

namespace vigil::cpu {

// Unary math (Abs ... BitwiseNot, IsNaN, IsInf): elementwise_unary.cpp.
std::span<const KernelDef> ElementwiseUnaryKernels();
// Activations, Clip, Identity: elementwise_activation.cpp.
std::span<const KernelDef> ElementwiseActivationKernels();
// Broadcasting binary ops, comparisons, logic: elementwise_binary.cpp.
std::span<const KernelDef> ElementwiseBinaryKernels();
// Variadic Max/Min/Sum/Mean, Where, PRelu: elementwise_nary.cpp.
std::span<const KernelDef> ElementwiseNaryKernels();
// Cast, CastLike: elementwise_cast.cpp.
std::span<const KernelDef> ElementwiseCastKernels();

// --- Wrapping integer arithmetic -----------------------------------------

// An unsigned type at least as wide as T and at least as wide as unsigned
// int, so that the arithmetic itself never promotes back to (signed) int.
template <typename T>
using WrapUnsigned = std::conditional_t<(sizeof(T) <= 4), uint32_t, uint64_t>;

template <typename T>
T WrapAdd(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using U = WrapUnsigned<T>;
    return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
  } else {
    return a + b;
  }
}
template <typename T>
T WrapSub(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using U = WrapUnsigned<T>;
    return static_cast<T>(static_cast<U>(a) - static_cast<U>(b));
  } else {
    return a - b;
  }
}
template <typename T>
T WrapMul(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using U = WrapUnsigned<T>;
    return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
  } else {
    return a * b;
  }
}
template <typename T>
T WrapNeg(T a) {
  return WrapSub(T(0), a);
}

// --- Elementwise map over one tensor ---------------------------------------

// f(i) for i in [0, n), where f(i) reads and writes index i only (an output
// may be an input, in place, but nothing else overlaps). The loop runs in
// blocks of a fixed 16 so that the compiler vectorises the block at -O2
// (GCC's cost model there only vectorises loops of a known trip count) and
// turns a select such as Relu's into a vector compare instead of a branch
// per element, which mispredicts on real data; the last n % 16 run one at a
// time. The results are those of the plain loop, bit for bit.
template <typename Int, typename F>
inline void ForEachIndexBlocked(Int n, F&& f) {
  constexpr Int kBlock = 16;
  Int i = 0;
  for (; i + kBlock <= n; i += kBlock) {
#pragma GCC ivdep
    for (Int j = 0; j < kBlock; ++j) f(i + j);
  }
  for (; i < n; ++i) f(i);
}

// out[i] = op(x[i]) for n elements: loads each element in its compute type,
// and stores the result as `OutElem`'s storage. `out` may be `x` (in place)
// but no other overlap.
template <typename InElem, typename OutElem, typename Op>
void MapElements(const typename InElem::Storage* x, typename OutElem::Storage* out, uint64_t n, const Op& op) {
  ParallelFor(static_cast<int64_t>(n), kParallelGrain, [&](int64_t begin, int64_t end) {
    const auto* xb = x + begin;
    auto* ob = out + begin;
    ForEachIndexBlocked(end - begin, [&](int64_t i) { ob[i] = OutElem::Store(op(InElem::Load(xb[i]))); });
  });
}

// Allocates output 0 with input 0's shape and dtype `out_dtype`, and maps
// `op` over input 0, whose dtype the caller has already resolved to InElem.
template <typename InElem, typename OutElem, typename Op>
Status MapTyped(KernelContext& ctx, DataType out_dtype, const Op& op) {
  const runtime::Tensor* x = ctx.input(0);
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * y, ctx.Output(0, out_dtype, x->shape()));
  MapElements<InElem, OutElem>(x->data<typename InElem::Storage>(), y->data<typename OutElem::Storage>(),
                               x->element_count(), op);
  return Status::Ok();
}

// The optimised float32 path of a unary op: y = fast(x) over X, chunk by
// chunk on the pool (kComputeGrain: these are exp, erf and the like), where
// the node may take optimised paths and X is float32. False, with nothing
// written, otherwise (the reference runs).
template <typename Fast>
Result<bool> MapFloat32Optimised(KernelContext& ctx, Fast fast) {
  const runtime::Tensor* x = ctx.input(0);
  if (!ctx.optimised() || !x || x->dtype() != ir::DataType::kFloat32) return false;
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * y, ctx.Output(0, x->dtype(), x->shape()));
  const float* xs = x->data<float>();
  float* ys = y->data<float>();
  ParallelFor(static_cast<int64_t>(x->element_count()), kComputeGrain, [&](int64_t begin, int64_t end) {
    fast(xs + begin, ys + begin, static_cast<uint64_t>(end - begin));
  });
  return true;
}

// Maps `op` over input 0 into output 0 of the same shape; input 0's dtype
// must be in kMask. The output has input 0's dtype, or bool for kBoolOut.
// `op` is called with the element's compute type.
template <TypeMask kMask, bool kBoolOut = false, typename Op>
Status MapUnary(KernelContext& ctx, const Op& op) {
  const runtime::Tensor* x = ctx.input(0);
  if (!x) return ctx.Fail("input 0 is missing");
  return DispatchDtype<kMask>(
      x->dtype(),
      [&](auto tag) -> Status {
        using E = Elem<decltype(tag)::value>;
        if constexpr (kBoolOut) {
          return MapTyped<E, Elem<DataType::kBool>>(ctx, DataType::kBool, op);
        } else {
          return MapTyped<E, E>(ctx, x->dtype(), op);
        }
      },
      [&] { return ctx.UnsupportedDtype(0); });
}

}  // namespace vigil::cpu
