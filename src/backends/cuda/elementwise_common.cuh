// Internal to the CUDA elementwise family (elementwise.cu and
// elementwise_activation.cu): element traits (storage vs compute type), a
// dtype dispatcher over the dtypes the family computes on, broadcast operands
// planned on the host, the flat unary and the broadcasting binary kernels,
// and the support predicates the two kernel lists share.
//
// The kernels are bandwidth-bound: each thread moves up to 16 bytes per
// operand per step (a "pack" of elements) when the pointers allow it, and a
// broadcast operand costs one fast division per pack in the common cases
// (Operand::kDivMod) rather than a division per dim per element.
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "backends/cuda/cuda_kernel.h"
#include "backends/cuda/device_common.cuh"
#include "backends/cuda/fast_divmod.cuh"

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
inline constexpr TypeMask kSmallIntTypes = Bit(DataType::kInt8) | Bit(DataType::kUint8);
// Every integer width, signed and unsigned.
inline constexpr TypeMask kIntTypes = kIndexTypes | kSmallIntTypes | Bit(DataType::kInt16) | Bit(DataType::kUint16) |
                                      Bit(DataType::kUint32) | Bit(DataType::kUint64);
// Add, Sub, Mul (wrapping, as numpy), Div, Mod, Max, Min, Sum and Clip: every
// integer width and the four float dtypes. (Div and Mod pick their integer
// edge cases per type: MIN / -1 only exists for signed types.)
inline constexpr TypeMask kWrapTypes = kFloatTypes | Bit(DataType::kFloat64) | kIntTypes;
inline constexpr TypeMask kCompareTypes = kWrapTypes | kBoolType;
// Cast converts between these (each pair is a kernel: the list stays short).
inline constexpr TypeMask kCastTypes = kArithTypes | kBoolType | Bit(DataType::kFloat64) | kSmallIntTypes;

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
    VIGIL_EW_CASE_(DataType::kInt16, int16_t)
    VIGIL_EW_CASE_(DataType::kUint16, uint16_t)
    VIGIL_EW_CASE_(DataType::kInt32, int32_t)
    VIGIL_EW_CASE_(DataType::kUint32, uint32_t)
    VIGIL_EW_CASE_(DataType::kInt64, int64_t)
    VIGIL_EW_CASE_(DataType::kUint64, uint64_t)
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

// How one input is read for output element i, planned on the host after the
// shapes are simplified (PlanOperands):
//  - kContiguous: the same index (its shape equals the output's);
//  - kScalar: always element 0;
//  - kDivMod: (i / inner) % count, the input being contiguous along one
//    merged dim and broadcast along all others. This covers the common
//    broadcasts cheaply: a trailing vector ([..., C] + [C]: inner 1), a
//    per-channel operand ([N,C,H,W] + [C,1,1]: inner H*W, count C) and a
//    per-row one ([N,C,H,W] * [N,C,1,1]). Only when the output has fewer
//    than 2^31 elements (FastDivmod's range);
//  - kStrided: the generic map of the merged output dims, with stride 0 on
//    broadcast dims.
struct Operand {
  enum Mode : int { kContiguous = 0, kScalar = 1, kDivMod = 2, kStrided = 3 };
  int mode = kContiguous;
  bool narrow = false;  // kStrided: every index fits in 32 bits, cheaper divisions
  FastDivmod inner, count;  // kDivMod
  IndexMap map;             // kStrided

  __host__ __device__ __forceinline__ int64_t Offset(int64_t i) const {
    if (mode == kContiguous) return i;
    if (mode == kScalar) return 0;
    if (mode == kDivMod) return count.Mod(inner.Div(static_cast<uint32_t>(i)));
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

// The operand of a broadcast input (neither scalar nor the output's size)
// over the merged dims `dims` (innermost first), with its strides `st` (one
// per merged dim, 0 where broadcast).
inline Operand BroadcastOperand(const std::vector<int64_t>& dims, const std::vector<int64_t>& st,
                                int64_t out_count) {
  Operand o;
  // kDivMod: exactly one merged dim with a non-zero stride, and that stride 1.
  int steps = -1, nonzero = 0;
  for (size_t d = 0; d < dims.size(); ++d) {
    if (st[d] != 0) steps = static_cast<int>(d), ++nonzero;
  }
  if (nonzero == 1 && st[steps] == 1 && static_cast<uint64_t>(out_count) < kFastDivmodLimit) {
    int64_t inner = 1;
    for (int d = 0; d < steps; ++d) inner *= dims[d];
    o.mode = Operand::kDivMod;
    o.inner = FastDivmod(static_cast<uint32_t>(inner));
    o.count = FastDivmod(static_cast<uint32_t>(dims[steps]));
    return o;
  }
  o.mode = Operand::kStrided;
  o.narrow = out_count <= int64_t{UINT32_MAX};
  o.map.rank = static_cast<int>(dims.size());
  for (size_t d = 0; d < dims.size(); ++d) {  // map dims are outermost first
    o.map.dims[dims.size() - 1 - d] = dims[d];
    o.map.strides[dims.size() - 1 - d] = st[d];
  }
  return o;
}

// Plans the operands for inputs of shapes `ins` broadcast (numpy rules) to the
// output shape `out`. Adjacent dims that every input steps through the same
// way are merged first, so that most broadcasts become kDivMod and the maps
// of the rest stay short.
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
      std::vector<int64_t> st(dims.size());
      for (size_t d = 0; d < dims.size(); ++d) st[d] = strides[d][j];
      o = BroadcastOperand(dims, st, out_count);
    }
  }
  return Status::Ok();
}

// --- Packs of elements ---------------------------------------------------------------

// An unsigned word of kBytes (1 to 16) bytes: one load or store instruction.
template <int kBytes>
struct RawWord;
template <>
struct RawWord<1> { using Type = uint8_t; };
template <>
struct RawWord<2> { using Type = uint16_t; };
template <>
struct RawWord<4> { using Type = uint32_t; };
template <>
struct RawWord<8> { using Type = uint2; };
template <>
struct RawWord<16> { using Type = uint4; };

// Elements per thread and step: as many as fit into 16 bytes of the widest
// of the storage types (8 halves, 4 floats, 2 int64).
template <typename... S>
constexpr int PackWidth() {
  size_t widest = 1;
  ((widest = sizeof(S) > widest ? sizeof(S) : widest), ...);
  return static_cast<int>(16 / widest);
}

inline bool AlignedTo(const void* p, size_t bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }

// v[0..N) = p[0..N) with one load (p aligned to N elements).
template <int N, typename T>
__device__ __forceinline__ void LoadContiguous(const T* __restrict__ p, T (&v)[N]) {
  using W = typename RawWord<sizeof(T) * N>::Type;
  const W w = *reinterpret_cast<const W*>(p);
  memcpy(v, &w, sizeof(W));
}

// v[0..N) = elements i..i+N-1 of operand m over p. A contiguous operand is
// read with one N-element load (the launcher checked the alignment); a
// kDivMod one finds the offset of i once and steps it.
template <int N, typename T>
__device__ __forceinline__ void LoadPack(const T* __restrict__ p, const Operand& m, int64_t i, T (&v)[N]) {
  if (m.mode == Operand::kContiguous) {
    LoadContiguous<N>(p + i, v);
  } else if (m.mode == Operand::kScalar) {
    const T s = p[0];
#pragma unroll
    for (int j = 0; j < N; ++j) v[j] = s;
  } else if (m.mode == Operand::kDivMod) {
    uint32_t q, r;
    m.inner.DivMod(static_cast<uint32_t>(i), &q, &r);
    uint32_t c = m.count.Mod(q);
#pragma unroll
    for (int j = 0; j < N; ++j) {
      v[j] = p[c];
      if (++r == m.inner.divisor) {
        r = 0;
        if (++c == m.count.divisor) c = 0;
      }
    }
  } else {
#pragma unroll
    for (int j = 0; j < N; ++j) v[j] = p[m.Offset(i + j)];
  }
}

template <int N, typename T>
__device__ __forceinline__ void StorePack(T* __restrict__ p, const T (&v)[N]) {
  using W = typename RawWord<sizeof(T) * N>::Type;
  W w;
  memcpy(&w, v, sizeof(W));
  *reinterpret_cast<W*>(p) = w;
}

// --- Kernels ------------------------------------------------------------------------

// y[i] = op(x[i]); the op works on compute-type values. N elements per step
// (x and y aligned to N elements), then the n % N left over one each.
template <int N, typename EI, typename EO, typename Op>
__global__ void UnaryKernel(const typename EI::Storage* __restrict__ x, typename EO::Storage* __restrict__ y,
                            int64_t n, Op op) {
  using SI = typename EI::Storage;
  using SO = typename EO::Storage;
  const int64_t start = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t packs = n / N;
  for (int64_t p = start; p < packs; p += step) {
    SI in[N];
    SO out[N];
    LoadContiguous<N>(x + p * N, in);
#pragma unroll
    for (int j = 0; j < N; ++j) out[j] = EO::Store(op(EI::Load(in[j])));
    StorePack<N>(y + p * N, out);
  }
  for (int64_t i = packs * N + start; i < n; i += step) y[i] = EO::Store(op(EI::Load(x[i])));
}

// out[i] = op(a[ma(i)], b[mb(i)]), N outputs per step. `a` may alias `out`
// when ma is contiguous (variadic ops accumulate in place: each thread reads
// its elements before it writes them), so no __restrict__ here.
template <int N, typename EA, typename EB, typename EO, typename Op>
__global__ void BinaryKernel(const typename EA::Storage* a, Operand ma, const typename EB::Storage* b, Operand mb,
                             typename EO::Storage* out, int64_t n, Op op) {
  using SA = typename EA::Storage;
  using SB = typename EB::Storage;
  using SO = typename EO::Storage;
  const int64_t start = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t packs = n / N;
  for (int64_t p = start; p < packs; p += step) {
    SA va[N];
    SB vb[N];
    SO vo[N];
    LoadPack<N>(a, ma, p * N, va);
    LoadPack<N>(b, mb, p * N, vb);
#pragma unroll
    for (int j = 0; j < N; ++j) vo[j] = EO::Store(op(EA::Load(va[j]), EB::Load(vb[j])));
    StorePack<N>(out + p * N, vo);
  }
  for (int64_t i = packs * N + start; i < n; i += step) {
    out[i] = EO::Store(op(EA::Load(a[ma.Offset(i)]), EB::Load(b[mb.Offset(i)])));
  }
}

// Blocks for n elements taken N per thread.
inline unsigned PackBlocks(int64_t n, int pack) { return BlocksFor((n + pack - 1) / pack, kThreads); }

template <typename EI, typename EO, typename Op>
Status LaunchUnary(const CudaKernelContext& ctx, const void* x, void* y, int64_t n, Op op, const char* name) {
  if (n <= 0) return Status::Ok();
  using SI = typename EI::Storage;
  using SO = typename EO::Storage;
  constexpr int kPack = PackWidth<SI, SO>();
  const auto* xs = static_cast<const SI*>(x);
  auto* ys = static_cast<SO*>(y);
  if (AlignedTo(x, kPack * sizeof(SI)) && AlignedTo(y, kPack * sizeof(SO))) {
    UnaryKernel<kPack, EI, EO, Op><<<PackBlocks(n, kPack), kThreads, 0, ctx.stream()>>>(xs, ys, n, op);
  } else {
    UnaryKernel<1, EI, EO, Op><<<PackBlocks(n, 1), kThreads, 0, ctx.stream()>>>(xs, ys, n, op);
  }
  VIGIL_CHECK_LAUNCH(name);
  return Status::Ok();
}

template <typename EA, typename EB, typename EO, typename Op>
Status LaunchBinary(const CudaKernelContext& ctx, const void* a, const Operand& ma, const void* b,
                    const Operand& mb, void* out, int64_t n, Op op, const char* name) {
  if (n <= 0) return Status::Ok();
  using SA = typename EA::Storage;
  using SB = typename EB::Storage;
  using SO = typename EO::Storage;
  constexpr int kPack = PackWidth<SA, SB, SO>();
  const auto* as = static_cast<const SA*>(a);
  const auto* bs = static_cast<const SB*>(b);
  auto* os = static_cast<SO*>(out);
  const bool aligned = AlignedTo(out, kPack * sizeof(SO)) &&
                       (ma.mode != Operand::kContiguous || AlignedTo(a, kPack * sizeof(SA))) &&
                       (mb.mode != Operand::kContiguous || AlignedTo(b, kPack * sizeof(SB)));
  if (aligned) {
    BinaryKernel<kPack, EA, EB, EO, Op><<<PackBlocks(n, kPack), kThreads, 0, ctx.stream()>>>(as, ma, bs, mb, os, n, op);
  } else {
    BinaryKernel<1, EA, EB, EO, Op><<<PackBlocks(n, 1), kThreads, 0, ctx.stream()>>>(as, ma, bs, mb, os, n, op);
  }
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
