// Internal to the CUDA elementwise family (elementwise.cu and
// elementwise_activation.cu): element traits (storage vs compute type), a
// dtype dispatcher over the dtypes the family computes on, broadcast operands
// planned on the host, the flat unary and the broadcasting binary kernels,
// and the support predicates the two kernel lists share.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "backends/cuda/cuda_kernel.h"
#include "backends/cuda/device_common.cuh"

namespace vigil::cuda::elementwise {

using ir::DataType;

// Unary math, activations and Clip (elementwise_activation.cu); joined into
// ElementwiseCudaKernels() by elementwise.cu.
std::span<const CudaKernelDef> ElementwiseActivationCudaKernels();

inline constexpr int kThreads = 256;

// --- Element traits ------------------------------------------------------------

// Tag for bool tensors: stored as one byte, computed as bool (any non-zero
// byte reads as true, as in the CPU backend).
struct Bool8 {};

template <typename T>
struct Elem {
  using Storage = T;
  using Compute = T;
  static __device__ __forceinline__ T Load(T v) { return v; }
  static __device__ __forceinline__ T Store(T v) { return v; }
};
template <>
struct Elem<__half> {
  using Storage = __half;
  using Compute = float;
  static __device__ __forceinline__ float Load(__half v) { return __half2float(v); }
  static __device__ __forceinline__ __half Store(float v) { return __float2half_rn(v); }
};
template <>
struct Elem<__nv_bfloat16> {
  using Storage = __nv_bfloat16;
  using Compute = float;
  static __device__ __forceinline__ float Load(__nv_bfloat16 v) { return __bfloat162float(v); }
  static __device__ __forceinline__ __nv_bfloat16 Store(float v) { return __float2bfloat16_rn(v); }
};
template <>
struct Elem<Bool8> {
  using Storage = uint8_t;
  using Compute = bool;
  static __device__ __forceinline__ bool Load(uint8_t v) { return v != 0; }
  static __device__ __forceinline__ uint8_t Store(bool v) { return v ? 1 : 0; }
};

// --- Dtype sets and dispatch -----------------------------------------------------

using TypeMask = uint64_t;
constexpr TypeMask Bit(DataType d) { return TypeMask{1} << static_cast<int>(d); }
inline constexpr TypeMask kFloatTypes = Bit(DataType::kFloat32) | Bit(DataType::kFloat16) | Bit(DataType::kBfloat16);
inline constexpr TypeMask kIndexTypes = Bit(DataType::kInt32) | Bit(DataType::kInt64);
inline constexpr TypeMask kArithTypes = kFloatTypes | kIndexTypes;
inline constexpr TypeMask kBoolType = Bit(DataType::kBool);
inline constexpr TypeMask kCompareTypes = kArithTypes | kBoolType;
// Cast converts between these.
inline constexpr TypeMask kCastTypes = kCompareTypes | Bit(DataType::kFloat64) | Bit(DataType::kInt8) |
                                       Bit(DataType::kUint8);

constexpr bool InMask(TypeMask mask, DataType d) {
  return static_cast<int>(d) > 0 && static_cast<int>(d) < 64 && (mask & Bit(d)) != 0;
}

// Returns f(T{}) with T the tag type of dtype `t` when `t` is in kMask (only
// those are instantiated), else unsupported(). Both return Status.
template <TypeMask kMask, typename F, typename U>
Status Dispatch(DataType t, F&& f, U&& unsupported) {
#define VIGIL_EW_CASE_(D, T)                                         \
  case D:                                                            \
    if constexpr ((kMask & Bit(D)) != 0) return f(T{});              \
    break;
  switch (t) {
    VIGIL_EW_CASE_(DataType::kFloat32, float)
    VIGIL_EW_CASE_(DataType::kFloat16, __half)
    VIGIL_EW_CASE_(DataType::kBfloat16, __nv_bfloat16)
    VIGIL_EW_CASE_(DataType::kFloat64, double)
    VIGIL_EW_CASE_(DataType::kInt8, int8_t)
    VIGIL_EW_CASE_(DataType::kUint8, uint8_t)
    VIGIL_EW_CASE_(DataType::kInt32, int32_t)
    VIGIL_EW_CASE_(DataType::kInt64, int64_t)
    VIGIL_EW_CASE_(DataType::kBool, Bool8)
    default:
      break;
  }
#undef VIGIL_EW_CASE_
  return unsupported();
}

// --- Wrapping integer arithmetic (numpy wraps; signed overflow is UB) -------------

template <typename T>
using WrapU = std::conditional_t<(sizeof(T) <= 4), uint32_t, uint64_t>;

template <typename T>
__device__ __forceinline__ T WrapAdd(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(static_cast<WrapU<T>>(a) + static_cast<WrapU<T>>(b));
  } else {
    return a + b;
  }
}
template <typename T>
__device__ __forceinline__ T WrapSub(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(static_cast<WrapU<T>>(a) - static_cast<WrapU<T>>(b));
  } else {
    return a - b;
  }
}
template <typename T>
__device__ __forceinline__ T WrapMul(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(static_cast<WrapU<T>>(a) * static_cast<WrapU<T>>(b));
  } else {
    return a * b;
  }
}

// --- Broadcast operands ------------------------------------------------------------

// How one input is read for output element i: the same index (its shape
// equals the output's), always element 0, or through a map of the merged
// output dims with stride 0 on broadcast dims.
struct Operand {
  enum Mode : int { kContiguous = 0, kScalar = 1, kStrided = 2 };
  int mode = kContiguous;
  bool narrow = false;  // every index fits in 32 bits: cheaper divisions
  IndexMap map;

  __host__ __device__ __forceinline__ int64_t Offset(int64_t i) const {
    if (mode == kContiguous) return i;
    if (mode == kScalar) return 0;
    if (narrow) {
      uint32_t linear = static_cast<uint32_t>(i), off = 0;
      for (int d = map.rank - 1; d >= 0; --d) {
        const auto dim = static_cast<uint32_t>(map.dims[d]);
        const uint32_t q = linear / dim;
        off += (linear - q * dim) * static_cast<uint32_t>(map.strides[d]);
        linear = q;
      }
      return off;
    }
    int64_t off = 0;
    for (int d = map.rank - 1; d >= 0; --d) {
      const int64_t q = i / map.dims[d];
      off += (i - q * map.dims[d]) * map.strides[d];
      i = q;
    }
    return off;
  }
};

inline std::string ShapeText(const std::vector<int64_t>& s) {
  std::string t = "[";
  for (size_t i = 0; i < s.size(); ++i) t += (i ? "," : "") + std::to_string(s[i]);
  return t + "]";
}

// Plans the operands for inputs of shapes `ins` broadcast (numpy rules) to the
// output shape `out`. Adjacent dims that every input steps through the same
// way are merged, so the maps stay short.
inline Status PlanOperands(const CudaKernelContext& ctx, const std::vector<int64_t>& out,
                           std::span<const std::vector<int64_t>* const> ins, Operand* operands) {
  const size_t rank = out.size();
  const size_t k = ins.size();
  int64_t out_count = 1;
  for (int64_t d : out) out_count *= d;
  // Per input, per output dim: the input's element stride (0 where broadcast).
  std::vector<std::vector<int64_t>> full(k, std::vector<int64_t>(rank, 0));
  for (size_t j = 0; j < k; ++j) {
    const std::vector<int64_t>& s = *ins[j];
    if (s.size() > rank) {
      return InternalError("{}: input of shape {} has a higher rank than the output {}", ops::NodeLabel(ctx.node()),
                           ShapeText(s), ShapeText(out));
    }
    int64_t stride = 1;
    for (size_t i = rank; i-- > 0;) {
      const size_t offset = rank - s.size();
      const int64_t d = i >= offset ? s[i - offset] : 1;
      if (d != 1 && d != out[i]) {
        return ctx.Fail("an input of shape {} does not broadcast to the output shape {}", ShapeText(s),
                        ShapeText(out));
      }
      full[j][i] = d == 1 ? 0 : stride;
      stride *= d;
    }
  }
  // Merge from the inside out (size-1 output dims vanish).
  std::vector<int64_t> dims;                  // innermost first
  std::vector<std::vector<int64_t>> strides;  // per merged dim, per input
  for (size_t i = rank; i-- > 0;) {
    if (out[i] == 1) continue;
    if (!dims.empty()) {
      bool mergeable = true;
      for (size_t j = 0; j < k; ++j) mergeable = mergeable && full[j][i] == strides.back()[j] * dims.back();
      if (mergeable) {
        dims.back() *= out[i];
        continue;
      }
    }
    dims.push_back(out[i]);
    std::vector<int64_t> st(k);
    for (size_t j = 0; j < k; ++j) st[j] = full[j][i];
    strides.push_back(std::move(st));
  }
  for (size_t j = 0; j < k; ++j) {
    int64_t in_count = 1;
    for (int64_t d : *ins[j]) in_count *= d;
    Operand& o = operands[j];
    o = Operand{};
    if (in_count == out_count) {
      o.mode = Operand::kContiguous;
    } else if (in_count == 1) {
      o.mode = Operand::kScalar;
    } else {
      if (dims.size() > static_cast<size_t>(kMaxRank)) {
        return ctx.Unsupported("broadcasting over {} distinct dims (at most {} are implemented)", dims.size(),
                               kMaxRank);
      }
      o.mode = Operand::kStrided;
      o.narrow = out_count <= int64_t{UINT32_MAX};
      o.map.rank = static_cast<int>(dims.size());
      for (size_t d = 0; d < dims.size(); ++d) {  // map dims are outermost first
        o.map.dims[dims.size() - 1 - d] = dims[d];
        o.map.strides[dims.size() - 1 - d] = strides[d][j];
      }
    }
  }
  return Status::Ok();
}

// --- Kernels ------------------------------------------------------------------------

// y[i] = op(x[i]); the op works on compute-type values.
template <typename EI, typename EO, typename Op>
__global__ void UnaryKernel(const typename EI::Storage* x, typename EO::Storage* y, int64_t n, Op op) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    y[i] = EO::Store(op(EI::Load(x[i])));
  }
}

// out[i] = op(a[ma(i)], b[mb(i)]). `a` may alias `out` when ma is contiguous
// (variadic ops accumulate in place).
template <typename EA, typename EB, typename EO, typename Op>
__global__ void BinaryKernel(const typename EA::Storage* a, Operand ma, const typename EB::Storage* b, Operand mb,
                             typename EO::Storage* out, int64_t n, Op op) {
  const int64_t start = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  if (ma.mode == Operand::kContiguous && mb.mode == Operand::kContiguous) {  // no broadcasting: flat loop
    for (int64_t i = start; i < n; i += step) out[i] = EO::Store(op(EA::Load(a[i]), EB::Load(b[i])));
  } else {
    for (int64_t i = start; i < n; i += step) {
      out[i] = EO::Store(op(EA::Load(a[ma.Offset(i)]), EB::Load(b[mb.Offset(i)])));
    }
  }
}

template <typename EI, typename EO, typename Op>
Status LaunchUnary(const CudaKernelContext& ctx, const void* x, void* y, int64_t n, Op op, const char* name) {
  if (n <= 0) return Status::Ok();
  UnaryKernel<EI, EO, Op><<<BlocksFor(n, kThreads), kThreads, 0, ctx.stream()>>>(
      static_cast<const typename EI::Storage*>(x), static_cast<typename EO::Storage*>(y), n, op);
  VIGIL_CHECK_LAUNCH(name);
  return Status::Ok();
}

template <typename EA, typename EB, typename EO, typename Op>
Status LaunchBinary(const CudaKernelContext& ctx, const void* a, const Operand& ma, const void* b,
                    const Operand& mb, void* out, int64_t n, Op op, const char* name) {
  if (n <= 0) return Status::Ok();
  BinaryKernel<EA, EB, EO, Op><<<BlocksFor(n, kThreads), kThreads, 0, ctx.stream()>>>(
      static_cast<const typename EA::Storage*>(a), ma, static_cast<const typename EB::Storage*>(b), mb,
      static_cast<typename EO::Storage*>(out), n, op);
  VIGIL_CHECK_LAUNCH(name);
  return Status::Ok();
}

// --- Support predicates ----------------------------------------------------------------

inline bool WhyNot(std::string* why_not, std::string reason) {
  if (why_not) *why_not = std::move(reason);
  return false;
}

// Whether input i is named by the node (not an omitted optional input).
inline bool HasNodeInput(const ir::Node& node, size_t i) { return i < node.inputs.size() && !node.inputs[i].empty(); }

// Input i's dtype is known and in `mask`.
inline bool InputIn(const runtime::NodeTypes& types, size_t i, TypeMask mask, std::string* why_not) {
  const DataType t = InputDtype(types, i);
  if (t == DataType::kUndefined) return WhyNot(why_not, "unknown dtype of input " + std::to_string(i));
  if (!InMask(mask, t)) {
    return WhyNot(why_not, "dtype " + std::string(ir::DataTypeName(t)) + " of input " + std::to_string(i));
  }
  return true;
}

// Input i has the same (known) dtype as input 0.
inline bool SameAsInput0(const runtime::NodeTypes& types, size_t i, std::string* why_not) {
  if (InputDtype(types, i) == DataType::kUndefined || InputDtype(types, i) != InputDtype(types, 0)) {
    return WhyNot(why_not, "input " + std::to_string(i) + " has another dtype than input 0");
  }
  return true;
}

// No input or output has a known rank above kMaxRank. (Merged broadcast dims
// are checked again at run time.)
inline bool RanksFit(const runtime::NodeTypes& types, std::string* why_not) {
  auto too_big = [](const ir::TypeInfo* t) {
    return t && t->shape.rank_known && t->shape.dims.size() > static_cast<size_t>(kMaxRank);
  };
  for (const ir::TypeInfo* t : types.inputs) {
    if (too_big(t)) return WhyNot(why_not, "rank above 8");
  }
  for (const ir::TypeInfo* t : types.outputs) {
    if (too_big(t)) return WhyNot(why_not, "rank above 8");
  }
  return true;
}

// One input (input 0) with a dtype in kMask.
template <TypeMask kMask>
bool UnarySupports(const ir::Node& node, const runtime::NodeTypes& types, std::string* why_not) {
  if (!HasNodeInput(node, 0)) return WhyNot(why_not, "input 0 is missing");
  return InputIn(types, 0, kMask, why_not) && RanksFit(types, why_not);
}

}  // namespace vigil::cuda::elementwise
