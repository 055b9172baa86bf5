// CUDA kernels of the Reduce* ops (Sum, Mean, Max, Min, Prod, L1, L2,
// SumSquare, LogSum, LogSumExp), of ArgMax/ArgMin and of TopK, with the semantics of
// the CPU kernels (backends/cpu/reduction.cpp, reduction_axis.cpp).
//
// A reduction is planned on the host as two index maps over the input: one
// from an output element to the input offset of its first element (the kept
// dims), one from the index within the reduced set to an offset (the reduced
// dims); adjacent dims of the same kind are merged and size-1 dims dropped.
// Each output element is then folded by one thread (small sets, or when
// neighbouring outputs are neighbours in memory) or by one block with a
// shared-memory tree. float32/float16/bfloat16 accumulate in float, float64
// in double; int32/int64 Sum, Prod, Max and Min in their own type, wrapping
// like numpy; bool Max and Min (any, all) as bool.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "backends/cuda/cuda_kernel.h"
#include "backends/cuda/device_common.cuh"
#include "ops/op_params.h"

namespace vigil::cuda {
namespace {

enum class Kind { kSum, kMean, kProd, kMax, kMin, kL1, kL2, kSumSquare, kLogSum, kLogSumExp };

constexpr int kMaxBlock = 512;

// --- the fold of each kind ---------------------------------------------------

template <typename A>
__device__ __forceinline__ A Plus(A a, A b) {
  if constexpr (std::is_integral_v<A>) {
    return static_cast<A>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
  } else {
    return a + b;
  }
}
template <typename A>
__device__ __forceinline__ A Times(A a, A b) {
  if constexpr (std::is_integral_v<A>) {
    return static_cast<A>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
  } else {
    return a * b;
  }
}

template <Kind K, typename A>
__device__ __forceinline__ A Identity() {
  if constexpr (K == Kind::kProd) {
    return A(1);
  } else if constexpr (std::is_same_v<A, bool>) {
    return K == Kind::kMin;  // the empty "all" is true, the empty "any" false
  } else if constexpr (K == Kind::kMax) {
    if constexpr (std::is_same_v<A, int32_t>) {
      return INT32_MIN;
    } else if constexpr (std::is_same_v<A, int64_t>) {
      return INT64_MIN;
    } else {
      return -INFINITY;
    }
  } else if constexpr (K == Kind::kMin) {
    if constexpr (std::is_same_v<A, int32_t>) {
      return INT32_MAX;
    } else if constexpr (std::is_same_v<A, int64_t>) {
      return INT64_MAX;
    } else {
      return INFINITY;
    }
  } else {
    return A(0);
  }
}

// Max/Min: NaN wins (and stays).
template <Kind K, typename A>
__device__ __forceinline__ A Combine(A a, A b) {
  if constexpr (K == Kind::kProd) {
    return Times(a, b);
  } else if constexpr (K == Kind::kMax) {
    if constexpr (!std::is_integral_v<A>) {
      if (isnan(b)) return b;
    }
    return b > a ? b : a;
  } else if constexpr (K == Kind::kMin) {
    if constexpr (!std::is_integral_v<A>) {
      if (isnan(b)) return b;
    }
    return b < a ? b : a;
  } else {
    return Plus(a, b);
  }
}

// The float functions in the accumulator's precision (float or double).
template <typename A>
__device__ __forceinline__ A AbsOf(A v) {
  if constexpr (std::is_same_v<A, double>) return fabs(v); else return fabsf(v);
}
template <typename A>
__device__ __forceinline__ A ExpOf(A v) {
  if constexpr (std::is_same_v<A, double>) return exp(v); else return expf(v);
}
template <typename A>
__device__ __forceinline__ A LogOf(A v) {
  if constexpr (std::is_same_v<A, double>) return log(v); else return logf(v);
}
template <typename A>
__device__ __forceinline__ A SqrtOf(A v) {
  if constexpr (std::is_same_v<A, double>) return sqrt(v); else return sqrtf(v);
}
template <typename A>
__device__ __forceinline__ A MaxOf(A a, A b) {
  if constexpr (std::is_same_v<A, double>) return fmax(a, b); else return fmaxf(a, b);
}

template <Kind K, typename A>
__device__ __forceinline__ A Pre(A v, A shift) {
  if constexpr (K == Kind::kL1) {
    return AbsOf(v);
  } else if constexpr (K == Kind::kL2 || K == Kind::kSumSquare) {
    return v * v;
  } else if constexpr (K == Kind::kLogSumExp) {
    return ExpOf(v - shift);
  } else {
    return v;
  }
}

template <Kind K, typename A>
__device__ __forceinline__ A Finish(A acc, int64_t count, A shift) {
  if constexpr (K == Kind::kMean) {
    return acc / static_cast<A>(count);  // 0 / 0 = NaN for an empty set
  } else if constexpr (K == Kind::kL2) {
    return SqrtOf(acc);
  } else if constexpr (K == Kind::kLogSum) {
    return LogOf(acc);
  } else if constexpr (K == Kind::kLogSumExp) {
    return LogOf(acc) + shift;
  } else {
    return acc;
  }
}

// Storage to accumulator and back: the same type (double, integers) as is,
// bool from any non-zero byte, the 16-bit floats through float.
template <typename A, typename T>
__device__ __forceinline__ A Load(T v) {
  if constexpr (std::is_same_v<A, T> || std::is_integral_v<A>) {
    return static_cast<A>(v);
  } else {
    return ToFloat<T>(v);
  }
}
template <typename T, typename A>
__device__ __forceinline__ T Store(A v) {
  if constexpr (std::is_same_v<A, T> || std::is_integral_v<A>) {
    return static_cast<T>(v);
  } else {
    return FromFloat<T>(v);
  }
}

// LogSumExp shifts by the largest finite value (0 when there is none), so
// that exp cannot overflow and infinities pass through as they are.
template <typename A>
__device__ __forceinline__ A FiniteOrLowest(A v) { return isfinite(v) ? v : A(-INFINITY); }
template <typename A>
__device__ __forceinline__ A ShiftFrom(A m) { return isfinite(m) ? m : A(0); }

// --- index plan ---------------------------------------------------------------

// Offsets within the reduced set: without divisions for one or two dims.
__device__ __forceinline__ int64_t MapOffset(const IndexMap& m, int64_t i) {
  if (m.rank == 0) return 0;
  if (m.rank == 1) return i * m.strides[0];
  if (m.rank == 2) {
    int64_t q = i / m.dims[1];
    return q * m.strides[0] + (i - q * m.dims[1]) * m.strides[1];
  }
  return m.Offset(i);
}

struct ReducePlan {
  IndexMap kept;     // output index -> input offset
  IndexMap reduced;  // index within the reduced set -> offset from there
  int64_t out_count = 1;
  int64_t count = 1;  // elements per reduced set
};

// Splits the input's dims into the kept and the reduced ones (merging
// neighbours of the same kind, dropping 1s).
ReducePlan PlanReduce(const std::vector<int64_t>& shape, const std::vector<bool>& reduced) {
  ReducePlan p;
  const int rank = static_cast<int>(shape.size());
  std::vector<int64_t> strides(rank, 1);
  for (int d = rank - 2; d >= 0; --d) strides[d] = strides[d + 1] * shape[d + 1];
  int last_kind = -1;  // 0 kept, 1 reduced
  for (int d = 0; d < rank; ++d) {
    if (reduced[d]) {
      p.count *= shape[d];
    } else {
      p.out_count *= shape[d];
    }
    if (shape[d] == 1) continue;
    IndexMap& m = reduced[d] ? p.reduced : p.kept;
    const int kind = reduced[d] ? 1 : 0;
    if (kind == last_kind) {  // merge with the previous dim of this map
      m.dims[m.rank - 1] *= shape[d];
      m.strides[m.rank - 1] = strides[d];
    } else {
      m.dims[m.rank] = shape[d];
      m.strides[m.rank] = strides[d];
      ++m.rank;
    }
    last_kind = kind;
  }
  return p;
}

// --- kernels --------------------------------------------------------------------

// buf[0..blockDim) tree-reduced; blockDim is a power of two. All threads get
// the result.
template <typename A, typename F>
__device__ A BlockReduce(A v, A* buf, F combine) {
  const unsigned t = threadIdx.x;
  buf[t] = v;
  __syncthreads();
  for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
    if (t < s) buf[t] = combine(buf[t], buf[t + s]);
    __syncthreads();
  }
  A r = buf[0];
  __syncthreads();
  return r;
}

template <Kind K, typename T, typename A>
__global__ void ReduceThreadKernel(const T* __restrict__ x, T* __restrict__ y, ReducePlan p) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t o = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; o < p.out_count; o += step) {
    const T* base = x + p.kept.Offset(o);
    A shift = A(0);
    if constexpr (K == Kind::kLogSumExp) {
      A m = A(-INFINITY);
      for (int64_t r = 0; r < p.count; ++r) m = MaxOf(m, FiniteOrLowest(Load<A>(base[MapOffset(p.reduced, r)])));
      shift = ShiftFrom(m);
    }
    A acc = Identity<K, A>();
    for (int64_t r = 0; r < p.count; ++r) {
      acc = Combine<K, A>(acc, Pre<K, A>(Load<A>(base[MapOffset(p.reduced, r)]), shift));
    }
    y[o] = Store<T>(Finish<K, A>(acc, p.count, shift));
  }
}

template <Kind K, typename T, typename A>
__global__ void ReduceBlockKernel(const T* __restrict__ x, T* __restrict__ y, ReducePlan p) {
  __shared__ A buf[kMaxBlock];
  for (int64_t o = blockIdx.x; o < p.out_count; o += gridDim.x) {
    const T* base = x + p.kept.Offset(o);
    A shift = A(0);
    if constexpr (K == Kind::kLogSumExp) {
      A m = A(-INFINITY);
      for (int64_t r = threadIdx.x; r < p.count; r += blockDim.x) {
        m = MaxOf(m, FiniteOrLowest(Load<A>(base[MapOffset(p.reduced, r)])));
      }
      shift = ShiftFrom(BlockReduce<A>(m, buf, [](A a, A b) { return MaxOf(a, b); }));
    }
    A acc = Identity<K, A>();
    for (int64_t r = threadIdx.x; r < p.count; r += blockDim.x) {
      acc = Combine<K, A>(acc, Pre<K, A>(Load<A>(base[MapOffset(p.reduced, r)]), shift));
    }
    acc = BlockReduce<A>(acc, buf, [](A a, A b) { return Combine<K, A>(a, b); });
    if (threadIdx.x == 0) y[o] = Store<T>(Finish<K, A>(acc, p.count, shift));
  }
}

int BlockSizeFor(int64_t count) {
  if (count <= 256) return 32;
  if (count <= 2048) return 128;
  if (count <= 16384) return 256;
  return kMaxBlock;
}

template <Kind K, typename T, typename A>
Status LaunchReduce(CudaKernelContext& ctx, const void* x, void* y, const ReducePlan& p) {
  if (p.out_count == 0) return Status::Ok();
  // Neighbouring outputs read neighbouring inputs when the innermost dim is
  // kept: then one thread per output reads coalesced.
  const bool inner_kept = p.kept.rank > 0 && p.kept.strides[p.kept.rank - 1] == 1;
  const bool per_thread = p.count <= 16 || (inner_kept && p.out_count >= 2048);
  if (per_thread) {
    ReduceThreadKernel<K, T, A><<<BlocksFor(p.out_count), 256, 0, ctx.stream()>>>(static_cast<const T*>(x),
                                                                                   static_cast<T*>(y), p);
    VIGIL_CHECK_LAUNCH("ReduceThreadKernel");
  } else {
    const int64_t blocks = std::min<int64_t>(p.out_count, 65535LL * 32);
    ReduceBlockKernel<K, T, A><<<static_cast<unsigned>(blocks), BlockSizeFor(p.count), 0, ctx.stream()>>>(
        static_cast<const T*>(x), static_cast<T*>(y), p);
    VIGIL_CHECK_LAUNCH("ReduceBlockKernel");
  }
  return Status::Ok();
}

// Which kinds take integers (in their own type): Sum, Prod, Max, Min.
constexpr bool IntegerKind(Kind k) {
  return k == Kind::kSum || k == Kind::kProd || k == Kind::kMax || k == Kind::kMin;
}

// --- host side --------------------------------------------------------------------

// f(T{}) for the float dtypes (whose Status it returns), otherwise
// otherwise(). (DispatchFloat's void callbacks would need a Status assigned
// in a lambda, which nvcc flags as a discarded [[nodiscard]] value.)
template <typename F, typename G>
Status FloatDispatch(ir::DataType t, F&& f, G&& otherwise) {
  switch (t) {
    case ir::DataType::kFloat32: return f(float{});
    case ir::DataType::kFloat16: return f(__half{});
    case ir::DataType::kBfloat16: return f(__nv_bfloat16{});
    default: return otherwise();
  }
}

// Which dims are reduced (ops/op_params.h, shared with the CPU kernel).
Result<std::vector<bool>> ReducedDims(const CudaKernelContext& ctx, int64_t rank, bool axes_from_input) {
  std::vector<int64_t> axes;
  const runtime::Tensor* t = axes_from_input ? ctx.input(1) : nullptr;
  if (t) {
    if (!t->on_host() || t->rank() > 1 ||
        (t->dtype() != ir::DataType::kInt64 && t->dtype() != ir::DataType::kInt32)) {
      return ctx.Fail("input axes is {}; it must be a 1-D int64 tensor on the host", t->Describe());
    }
    const int64_t n = static_cast<int64_t>(t->element_count());
    for (int64_t i = 0; i < n; ++i) {
      axes.push_back(t->dtype() == ir::DataType::kInt64 ? t->data<int64_t>()[i] : t->data<int32_t>()[i]);
    }
  }
  return ops::ResolveReducedDims(ctx.node(), rank, axes_from_input, t ? &axes : nullptr, ctx.input(0)->Describe());
}

template <Kind K, int kAxesInputSince>
Status ReduceKernel(CudaKernelContext& ctx) {
  const runtime::Tensor* x = ctx.input(0);
  if (!x) return ctx.Fail("input data is missing");
  if (x->rank() > static_cast<size_t>(kMaxRank)) return ctx.Unsupported("rank {} > {}", x->rank(), kMaxRank);
  VIGIL_ASSIGN_OR_RETURN(int64_t keepdims, ops::IntAttr(ctx.node(), "keepdims", 1));
  VIGIL_ASSIGN_OR_RETURN(std::vector<bool> reduced,
                         ReducedDims(ctx, static_cast<int64_t>(x->rank()), ctx.opset() >= kAxesInputSince));
  std::vector<int64_t> out_shape;
  for (size_t d = 0; d < x->rank(); ++d) {
    if (!reduced[d]) {
      out_shape.push_back(x->dim(d));
    } else if (keepdims != 0) {
      out_shape.push_back(1);
    }
  }
  const ReducePlan plan = PlanReduce(x->shape(), reduced);
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * y, ctx.Output(0, x->dtype(), out_shape));
  return FloatDispatch(
      x->dtype(),
      [&](auto tag) { return LaunchReduce<K, decltype(tag), float>(ctx, x->raw_data(), y->raw_data(), plan); },
      [&]() -> Status {
        if (x->dtype() == ir::DataType::kFloat64) {
          return LaunchReduce<K, double, double>(ctx, x->raw_data(), y->raw_data(), plan);
        }
        if constexpr (K == Kind::kMax || K == Kind::kMin) {
          if (x->dtype() == ir::DataType::kBool) {
            return LaunchReduce<K, uint8_t, bool>(ctx, x->raw_data(), y->raw_data(), plan);
          }
        }
        if constexpr (IntegerKind(K)) {
          if (x->dtype() == ir::DataType::kInt32) {
            return LaunchReduce<K, int32_t, int32_t>(ctx, x->raw_data(), y->raw_data(), plan);
          }
          if (x->dtype() == ir::DataType::kInt64) {
            return LaunchReduce<K, int64_t, int64_t>(ctx, x->raw_data(), y->raw_data(), plan);
          }
        }
        return ctx.Unsupported("dtype {} of input 0", ir::DataTypeName(x->dtype()));
      });
}

bool RankAtMost8(const runtime::NodeTypes& types, std::string* why_not) {
  if (!types.inputs.empty() && types.inputs[0] && types.inputs[0]->shape.rank_known &&
      types.inputs[0]->shape.dims.size() > static_cast<size_t>(kMaxRank)) {
    if (why_not) *why_not = fmt::format("rank {} > {}", types.inputs[0]->shape.dims.size(), kMaxRank);
    return false;
  }
  return true;
}

bool DtypeIn(const runtime::NodeTypes& types, bool integers, std::string* why_not) {
  const ir::DataType t = InputDtype(types, 0);
  const bool ok = IsCudaFloat(t) || (integers && (t == ir::DataType::kInt32 || t == ir::DataType::kInt64));
  if (!ok && why_not) {
    *why_not = t == ir::DataType::kUndefined ? std::string("the dtype of input 0 is not known at load time")
                                             : fmt::format("dtype {} of input 0", ir::DataTypeName(t));
  }
  return ok;
}

template <bool kIntegers>
bool SupportsReduce(const ir::Node&, const runtime::NodeTypes& types, std::string* why_not) {
  return DtypeIn(types, kIntegers, why_not) && RankAtMost8(types, why_not);
}

// The Reduce* ops: the float dtypes and float64 for every kind, int32/int64
// for Sum, Prod, Max and Min, bool for Max and Min.
template <Kind K>
bool SupportsReduceKind(const ir::Node& node, const runtime::NodeTypes& types, std::string* why_not) {
  const ir::DataType t = InputDtype(types, 0);
  const bool extra = t == ir::DataType::kFloat64 || ((K == Kind::kMax || K == Kind::kMin) && t == ir::DataType::kBool);
  if (extra) return RankAtMost8(types, why_not);
  return SupportsReduce<IntegerKind(K)>(node, types, why_not);
}

// TopK: every float and integer dtype (what the CPU kernel takes).
bool SupportsTopK(const ir::Node&, const runtime::NodeTypes& types, std::string* why_not) {
  const ir::DataType t = InputDtype(types, 0);
  const bool ok = IsCudaFloat(t) || t == ir::DataType::kFloat64 || t == ir::DataType::kInt8 ||
                  t == ir::DataType::kUint8 || t == ir::DataType::kInt16 || t == ir::DataType::kUint16 ||
                  t == ir::DataType::kInt32 || t == ir::DataType::kUint32 || t == ir::DataType::kInt64 ||
                  t == ir::DataType::kUint64;
  if (!ok) {
    if (why_not) {
      *why_not = t == ir::DataType::kUndefined ? std::string("the dtype of input 0 is not known at load time")
                                               : fmt::format("dtype {} of input 0", ir::DataTypeName(t));
    }
    return false;
  }
  return RankAtMost8(types, why_not);
}

// --- ArgMax / ArgMin -------------------------------------------------------------

struct ArgPlan {
  int64_t outer = 1, n = 1, inner = 1;
  bool is_max = true;
  bool last = false;
};

// Whether (v, i) replaces (best, bi) as the answer, both being candidates
// found in a line: NaN beats numbers; among NaNs or equal values the first
// index wins (the last with select_last_index). bi < 0: no candidate yet.
template <typename C>
__device__ __forceinline__ bool Better(C v, int64_t i, C best, int64_t bi, const ArgPlan& p) {
  if (i < 0) return false;
  if (bi < 0) return true;
  if constexpr (!std::is_integral_v<C>) {
    const bool vn = isnan(v), bn = isnan(best);
    if (vn || bn) {
      if (vn && bn) return p.last ? i > bi : i < bi;
      return vn;
    }
  }
  if (v == best) return p.last ? i > bi : i < bi;
  return p.is_max ? v > best : v < best;
}

template <typename T, typename C>
__global__ void ArgThreadKernel(const T* __restrict__ x, int64_t* __restrict__ y, ArgPlan p) {
  const int64_t total = p.outer * p.inner;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t o = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; o < total; o += step) {
    const int64_t a = o / p.inner, b = o - a * p.inner;
    const T* line = x + a * p.n * p.inner + b;
    C best = C(0);
    int64_t bi = -1;
    for (int64_t i = 0; i < p.n; ++i) {
      C v = Load<C>(line[i * p.inner]);
      if (Better(v, i, best, bi, p)) {
        best = v;
        bi = i;
      }
    }
    y[o] = bi;
  }
}

template <typename T, typename C>
__global__ void ArgBlockKernel(const T* __restrict__ x, int64_t* __restrict__ y, ArgPlan p) {
  __shared__ C values[kMaxBlock];
  __shared__ int64_t indices[kMaxBlock];
  const int64_t total = p.outer * p.inner;
  const unsigned t = threadIdx.x;
  for (int64_t o = blockIdx.x; o < total; o += gridDim.x) {
    const int64_t a = o / p.inner, b = o - a * p.inner;
    const T* line = x + a * p.n * p.inner + b;
    C best = C(0);
    int64_t bi = -1;
    for (int64_t i = t; i < p.n; i += blockDim.x) {
      C v = Load<C>(line[i * p.inner]);
      if (Better(v, i, best, bi, p)) {
        best = v;
        bi = i;
      }
    }
    values[t] = best;
    indices[t] = bi;
    __syncthreads();
    for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
      if (t < s && Better(values[t + s], indices[t + s], values[t], indices[t], p)) {
        values[t] = values[t + s];
        indices[t] = indices[t + s];
      }
      __syncthreads();
    }
    if (t == 0) y[o] = indices[0];
    __syncthreads();
  }
}

template <typename T, typename C>
Status LaunchArg(CudaKernelContext& ctx, const void* x, int64_t* y, const ArgPlan& p) {
  const int64_t total = p.outer * p.inner;
  if (total == 0) return Status::Ok();
  if (p.n >= 128 && (p.inner == 1 || total < 4096)) {
    const int64_t blocks = std::min<int64_t>(total, 65535LL * 32);
    ArgBlockKernel<T, C><<<static_cast<unsigned>(blocks), BlockSizeFor(p.n), 0, ctx.stream()>>>(
        static_cast<const T*>(x), y, p);
    VIGIL_CHECK_LAUNCH("ArgBlockKernel");
  } else {
    ArgThreadKernel<T, C><<<BlocksFor(total), 256, 0, ctx.stream()>>>(static_cast<const T*>(x), y, p);
    VIGIL_CHECK_LAUNCH("ArgThreadKernel");
  }
  return Status::Ok();
}

template <bool kIsMax>
Status ArgKernel(CudaKernelContext& ctx) {
  const runtime::Tensor* x = ctx.input(0);
  if (!x) return ctx.Fail("input data is missing");
  VIGIL_ASSIGN_OR_RETURN(int64_t axis_attr, ops::IntAttr(ctx.node(), "axis", 0));
  VIGIL_ASSIGN_OR_RETURN(int64_t keepdims, ops::IntAttr(ctx.node(), "keepdims", 1));
  VIGIL_ASSIGN_OR_RETURN(int64_t last, ops::IntAttr(ctx.node(), "select_last_index", 0));
  const int64_t rank = static_cast<int64_t>(x->rank());
  VIGIL_ASSIGN_OR_RETURN(const int64_t axis, ops::ResolveReductionAxis(ctx.node(), axis_attr, rank, x->Describe()));
  ArgPlan p;
  p.is_max = kIsMax;
  p.last = last != 0;
  for (int64_t d = 0; d < rank; ++d) {
    if (d < axis) p.outer *= x->dim(d);
    else if (d == axis) p.n = x->dim(d);
    else p.inner *= x->dim(d);
  }
  if (p.n == 0 && p.outer * p.inner > 0) {
    return ctx.Fail("axis {} of input {} is empty; there is no index to return", axis, x->Describe());
  }
  std::vector<int64_t> out_shape = x->shape();
  if (keepdims != 0) {
    out_shape[axis] = 1;
  } else {
    out_shape.erase(out_shape.begin() + axis);
  }
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * y, ctx.Output(0, ir::DataType::kInt64, out_shape));
  int64_t* ys = y->data<int64_t>();
  return FloatDispatch(
      x->dtype(), [&](auto tag) { return LaunchArg<decltype(tag), float>(ctx, x->raw_data(), ys, p); },
      [&]() -> Status {
        if (x->dtype() == ir::DataType::kInt32) return LaunchArg<int32_t, int32_t>(ctx, x->raw_data(), ys, p);
        if (x->dtype() == ir::DataType::kInt64) return LaunchArg<int64_t, int64_t>(ctx, x->raw_data(), ys, p);
        return ctx.Unsupported("dtype {} of input 0", ir::DataTypeName(x->dtype()));
      });
}

// --- TopK ------------------------------------------------------------------------
//
// One thread per line, k passes: pass r finds the first element (in TopK's
// order) that comes after the one pass r - 1 found. The order is the CPU
// kernel's (backends/cpu/reduction_axis.cpp): by value, largest or smallest
// first, NaN before every number when largest (after, when smallest), ties
// by lower index. O(k n) per line: made for the small k of detection heads
// and classifiers, not for sorting whole rows.

template <typename C>
__device__ __forceinline__ bool TopKBefore(C a, int64_t ai, C b, int64_t bi, bool largest) {
  if constexpr (!std::is_integral_v<C>) {
    const bool an = isnan(a), bn = isnan(b);
    if (an || bn) {
      if (an && bn) return ai < bi;
      return largest ? an : bn;
    }
  }
  if (a != b) return largest ? a > b : a < b;
  return ai < bi;
}

struct TopKPlan {
  int64_t outer = 1, n = 1, inner = 1, k = 0;
  bool largest = true;
};

template <typename T, typename C>
__global__ void TopKLineKernel(const T* __restrict__ x, T* __restrict__ values, int64_t* __restrict__ indices,
                               TopKPlan p) {
  const int64_t total = p.outer * p.inner;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t o = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; o < total; o += step) {
    const int64_t a = o / p.inner, b = o - a * p.inner;
    const T* line = x + a * p.n * p.inner + b;
    T* vout = values + a * p.k * p.inner + b;
    int64_t* iout = indices + a * p.k * p.inner + b;
    C prev = C(0);
    int64_t prev_i = -1;
    for (int64_t r = 0; r < p.k; ++r) {
      C best = C(0);
      int64_t bi = -1;
      for (int64_t i = 0; i < p.n; ++i) {
        const C v = Load<C>(line[i * p.inner]);
        if (prev_i >= 0 && !TopKBefore(prev, prev_i, v, i, p.largest)) continue;
        if (bi < 0 || TopKBefore(v, i, best, bi, p.largest)) {
          best = v;
          bi = i;
        }
      }
      vout[r * p.inner] = line[bi * p.inner];
      iout[r * p.inner] = bi;
      prev = best;
      prev_i = bi;
    }
  }
}

template <typename T, typename C>
Status LaunchTopK(const runtime::Tensor& x, runtime::Tensor& values, runtime::Tensor& indices, const TopKPlan& p,
                  cudaStream_t stream) {
  const int64_t total = p.outer * p.inner;
  if (total == 0 || p.k == 0) return Status::Ok();
  TopKLineKernel<T, C><<<BlocksFor(total, 128), 128, 0, stream>>>(static_cast<const T*>(x.raw_data()),
                                                            static_cast<T*>(values.raw_data()),
                                                            indices.data<int64_t>(), p);
  VIGIL_CHECK_LAUNCH("TopKLineKernel");
  return Status::Ok();
}

Status TopKKernel(CudaKernelContext& ctx) {
  const runtime::Tensor* x = ctx.input(0);
  if (!x) return ctx.Fail("input X is missing");
  if (x->rank() == 0) return ctx.Fail("input X is a scalar; TopK needs rank 1 or more");
  int64_t k = 0;
  if (ctx.opset() < 10) {
    VIGIL_ASSIGN_OR_RETURN(k, ops::RequiredIntAttr(ctx.node(), "k"));
  } else {
    const runtime::Tensor* kt = ctx.input(1);
    if (!kt || !kt->on_host() || kt->element_count() != 1 || kt->dtype() != ir::DataType::kInt64) {
      return ctx.Fail("input K must be one int64 value");
    }
    k = kt->data<int64_t>()[0];
  }
  VIGIL_ASSIGN_OR_RETURN(int64_t axis_attr, ops::IntAttr(ctx.node(), "axis", -1));
  VIGIL_ASSIGN_OR_RETURN(int64_t largest, ops::IntAttr(ctx.node(), "largest", 1));
  const int64_t rank = static_cast<int64_t>(x->rank());
  VIGIL_ASSIGN_OR_RETURN(int64_t axis, ops::NormalizeAxis(ctx.node(), axis_attr, rank));
  if (k < 0 || k > x->dim(static_cast<size_t>(axis))) {
    return ctx.Fail("k = {} is out of range: axis {} of input {} has {} elements", k, axis, x->Describe(),
                    x->dim(static_cast<size_t>(axis)));
  }
  TopKPlan p;
  p.k = k;
  p.largest = largest != 0;
  for (int64_t d = 0; d < rank; ++d) {
    if (d < axis) p.outer *= x->dim(d);
    else if (d == axis) p.n = x->dim(d);
    else p.inner *= x->dim(d);
  }
  std::vector<int64_t> out_shape = x->shape();
  out_shape[static_cast<size_t>(axis)] = k;
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * values, ctx.Output(0, x->dtype(), out_shape));
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * indices, ctx.Output(1, ir::DataType::kInt64, out_shape));
  return FloatDispatch(
      x->dtype(), [&](auto tag) { return LaunchTopK<decltype(tag), float>(*x, *values, *indices, p, ctx.stream()); },
      [&]() -> Status {
        // The other numeric dtypes compare as they are stored.
        auto exact = [&](auto tag) {
          using T = decltype(tag);
          return LaunchTopK<T, T>(*x, *values, *indices, p, ctx.stream());
        };
        switch (x->dtype()) {
          case ir::DataType::kFloat64: return exact(double{});
          case ir::DataType::kInt8: return exact(int8_t{});
          case ir::DataType::kUint8: return exact(uint8_t{});
          case ir::DataType::kInt16: return exact(int16_t{});
          case ir::DataType::kUint16: return exact(uint16_t{});
          case ir::DataType::kInt32: return exact(int32_t{});
          case ir::DataType::kUint32: return exact(uint32_t{});
          case ir::DataType::kInt64: return exact(int64_t{});
          case ir::DataType::kUint64: return exact(uint64_t{});
          default: return ctx.Unsupported("dtype {} of input 0", ir::DataTypeName(x->dtype()));
        }
      });
}

#define VIGIL_CUDA_REDUCE(name, kind, since)                                                      \
  CudaKernelDef{"", name, 1, since - 1, ReduceKernel<kind, since>, SupportsReduceKind<kind>},    \
      CudaKernelDef{"", name, since, kLatest, ReduceKernel<kind, since>, SupportsReduceKind<kind>, HostInput(1)}

const CudaKernelDef kReductionKernels[] = {
    VIGIL_CUDA_REDUCE("ReduceSum", Kind::kSum, 13),
    VIGIL_CUDA_REDUCE("ReduceMean", Kind::kMean, 18),
    VIGIL_CUDA_REDUCE("ReduceMax", Kind::kMax, 18),
    VIGIL_CUDA_REDUCE("ReduceMin", Kind::kMin, 18),
    VIGIL_CUDA_REDUCE("ReduceProd", Kind::kProd, 18),
    VIGIL_CUDA_REDUCE("ReduceL1", Kind::kL1, 18),
    VIGIL_CUDA_REDUCE("ReduceL2", Kind::kL2, 18),
    VIGIL_CUDA_REDUCE("ReduceSumSquare", Kind::kSumSquare, 18),
    VIGIL_CUDA_REDUCE("ReduceLogSum", Kind::kLogSum, 18),
    VIGIL_CUDA_REDUCE("ReduceLogSumExp", Kind::kLogSumExp, 18),
    {"", "ArgMax", 1, kLatest, ArgKernel<true>, SupportsReduce<true>},
    {"", "ArgMin", 1, kLatest, ArgKernel<false>, SupportsReduce<true>},
    {"", "TopK", 1, 9, TopKKernel, SupportsTopK},
    {"", "TopK", 10, kLatest, TopKKernel, SupportsTopK, HostInput(1)},
};

#undef VIGIL_CUDA_REDUCE

}  // namespace

std::span<const CudaKernelDef> ReductionCudaKernels() { return kReductionKernels; }

}  // namespace vigil::cuda
