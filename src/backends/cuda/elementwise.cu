// CUDA broadcasting elementwise kernels: Add, Sub, Mul, Div, Mod, Pow, the
// comparisons, And/Or/Xor, variadic Max/Min/Sum/Mean, Where, PRelu, Cast and
// CastLike, with the CPU backend's semantics (backends/cpu/elementwise_binary.cpp,
// elementwise_nary.cpp, elementwise_cast.cpp): numpy broadcasting (and the
// pre-opset-7 broadcast/axis attributes), wrapping integer arithmetic,
// truncating integer Div, NaN-propagating Max/Min, saturating float-to-int
// Cast. Also joins the activation list (elementwise_activation.cu) into
// ElementwiseCudaKernels().
//
// One difference from the CPU: an integer Div or Mod by zero gives 0 here
// (the CPU reports an error naming the element; finding the zero here would
// need a device read and a stream synchronisation in every integer Div and
// Mod, and would break CUDA graph capture). No input traps the GPU.
#include <iterator>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "backends/cuda/elementwise_common.cuh"
#include "backends/cuda/unknown_dtype.h"

namespace vigil::cuda::elementwise {
namespace {

// --- Binary plan ------------------------------------------------------------------

// Before opset 7, binary ops broadcast only with attribute broadcast=1, and
// only B onto A, B's dims lining up with A's from `axis` (default: trailing).
// Returns B's shape padded with 1s to A's rank.
Result<std::vector<int64_t>> LegacyBShape(CudaKernelContext& ctx, const std::vector<int64_t>& a,
                                          const std::vector<int64_t>& b) {
  VIGIL_ASSIGN_OR_RETURN(int64_t broadcast, ops::IntAttr(ctx.node(), "broadcast", 0));
  if (broadcast == 0) {
    if (a != b) {
      return ctx.Fail("input shapes {} and {} differ; at opset {} that needs attribute broadcast=1", ShapeText(a),
                      ShapeText(b), ctx.opset());
    }
    return b;
  }
  const auto ra = static_cast<int64_t>(a.size()), rb = static_cast<int64_t>(b.size());
  VIGIL_ASSIGN_OR_RETURN(int64_t axis, ops::IntAttr(ctx.node(), "axis", ra - rb));
  if (axis < 0) axis += ra;
  if (axis < 0 || axis + rb > ra) {
    return ctx.Fail("input 1 of shape {} does not fit into input 0 of shape {} at axis {}", ShapeText(b),
                    ShapeText(a), axis);
  }
  std::vector<int64_t> shaped(a.size(), 1);
  for (int64_t i = 0; i < rb; ++i) shaped[static_cast<size_t>(axis + i)] = b[static_cast<size_t>(i)];
  return shaped;
}

// Two inputs and the output, with their operands planned.
struct BinaryPlan {
  const runtime::Tensor* a = nullptr;
  const runtime::Tensor* b = nullptr;
  runtime::Tensor* out = nullptr;
  Operand ma, mb;
  int64_t n = 0;
};

Result<BinaryPlan> PlanBinary(CudaKernelContext& ctx, bool same_dtype) {
  BinaryPlan p;
  p.a = ctx.input(0);
  p.b = ctx.input(1);
  if (!p.a || !p.b) return ctx.Fail("input {} is missing", p.a ? 1 : 0);
  if (same_dtype && p.a->dtype() != p.b->dtype()) {
    return ctx.Fail("input 1 has dtype {} but input 0 has dtype {}; they must be equal",
                    ir::DataTypeName(p.b->dtype()), ir::DataTypeName(p.a->dtype()));
  }
  std::vector<int64_t> b_shape = p.b->shape();
  if (ctx.opset() < 7) {
    VIGIL_ASSIGN_OR_RETURN(b_shape, LegacyBShape(ctx, p.a->shape(), p.b->shape()));
  }
  VIGIL_ASSIGN_OR_RETURN(p.out, ctx.Output(0));
  const std::vector<int64_t>* shapes[] = {&p.a->shape(), &b_shape};
  Operand maps[2];
  VIGIL_RETURN_IF_ERROR(PlanOperands(ctx, p.out->shape(), shapes, maps));
  p.ma = maps[0];
  p.mb = maps[1];
  p.n = static_cast<int64_t>(p.out->element_count());
  return p;
}

// Both inputs of one dtype in kMask; output of that dtype, or bool.
template <TypeMask kMask, bool kBoolOut = false, typename Op>
Status BinaryOp(CudaKernelContext& ctx, Op op, const char* name) {
  VIGIL_ASSIGN_OR_RETURN(BinaryPlan p, PlanBinary(ctx, /*same_dtype=*/true));
  return Dispatch<kMask>(
      p.a->dtype(),
      [&](auto tag) -> Status {
        using E = Elem<decltype(tag)>;
        using O = std::conditional_t<kBoolOut, Elem<Bool8>, E>;
        return LaunchBinary<E, E, O>(ctx, p.a->raw_data(), p.ma, p.b->raw_data(), p.mb, p.out->raw_data(), p.n, op,
                                     name);
      },
      [&] { return ctx.Unsupported("dtype {} of input 0", ir::DataTypeName(p.a->dtype())); });
}

// --- Arithmetic -------------------------------------------------------------------

struct AddOp {
  template <typename C>
  __device__ C operator()(C a, C b) const { return WrapAdd(a, b); }
};
struct SubOp {
  template <typename C>
  __device__ C operator()(C a, C b) const { return WrapSub(a, b); }
};
struct MulOp {
  template <typename C>
  __device__ C operator()(C a, C b) const { return WrapMul(a, b); }
};
// Integer division truncates toward zero; for signed types MIN / -1 wraps to
// MIN (numpy; C++ would trap); x / 0 is 0 (the CPU reports an error instead:
// see the file comment). An unsigned divisor of all ones is just a large
// number, so the -1 case exists only for signed types.
struct DivOp {
  template <typename C>
  __device__ C operator()(C a, C b) const {
    if constexpr (std::is_integral_v<C>) {
      if (b == C(0)) return C(0);
      if constexpr (std::is_signed_v<C>) {
        if (b == C(-1)) return WrapSub(C(0), a);
      }
      return static_cast<C>(a / b);
    } else {
      return a / b;
    }
  }
};

// C's remainder (sign of the dividend); an integer x % 0 is 0.
template <typename C>
__device__ __forceinline__ C TruncMod(C a, C b) {
  if constexpr (std::is_integral_v<C>) {
    if (b == C(0)) return C(0);
    if constexpr (std::is_signed_v<C>) {
      if (b == C(-1)) return C(0);  // MIN % -1 would trap
    }
    return static_cast<C>(a % b);
  } else if constexpr (std::is_same_v<C, double>) {
    return fmod(a, b);
  } else {
    return fmodf(a, b);
  }
}
// fmod=1: C's remainder; fmod=0: Python's (the sign of the divisor). Unsigned
// remainders are the same either way. |r + b| < |b|, so the sum never wraps.
struct ModOp {
  bool fmod;
  template <typename C>
  __device__ C operator()(C a, C b) const {
    C r = TruncMod(a, b);
    if constexpr (std::is_signed_v<C> || std::is_floating_point_v<C>) {
      if (!fmod && r != C(0) && ((r < C(0)) != (b < C(0)))) r = static_cast<C>(r + b);
    }
    return r;
  }
};

Status Add(CudaKernelContext& ctx) { return BinaryOp<kWrapTypes>(ctx, AddOp{}, "Add"); }
Status Sub(CudaKernelContext& ctx) { return BinaryOp<kWrapTypes>(ctx, SubOp{}, "Sub"); }
Status Mul(CudaKernelContext& ctx) { return BinaryOp<kWrapTypes>(ctx, MulOp{}, "Mul"); }
Status Div(CudaKernelContext& ctx) { return BinaryOp<kWrapTypes>(ctx, DivOp{}, "Div"); }
Status Mod(CudaKernelContext& ctx) {
  VIGIL_ASSIGN_OR_RETURN(int64_t fmod, ops::IntAttr(ctx.node(), "fmod", 0));
  if (fmod != 0 && fmod != 1) return ctx.Fail("attribute fmod is {}, expected 0 or 1", fmod);
  return BinaryOp<kWrapTypes>(ctx, ModOp{fmod == 1}, "Mod");
}

// --- Conversions ------------------------------------------------------------------

// The CPU's ConvertValue: to bool is "!= 0"; float to integer truncates,
// saturates and maps NaN to 0; anything else is a plain cast.
template <typename To, typename From>
__device__ __forceinline__ To ConvertTo(From v) {
  if constexpr (std::is_same_v<To, bool>) {
    return v != From(0);
  } else if constexpr (std::is_floating_point_v<From> && std::is_integral_v<To>) {
    if (isnan(v)) return To(0);
    constexpr From lo = static_cast<From>(std::numeric_limits<To>::min());
    constexpr From hi = static_cast<From>(std::numeric_limits<To>::max());
    if (v <= lo) return std::numeric_limits<To>::min();
    if (v >= hi) return std::numeric_limits<To>::max();
    return static_cast<To>(v);
  } else {
    return static_cast<To>(v);
  }
}

// double -> float rounding to odd (truncate, then set the last bit if
// anything was lost): rounding that once more to float16/bfloat16 equals
// rounding the double directly.
__device__ __forceinline__ float RoundToOddFloat(double d) {
  if (isnan(d) || isinf(d)) return static_cast<float>(d);
  const double max_float = static_cast<double>(std::numeric_limits<float>::max());
  if (fabs(d) > max_float) return static_cast<float>(copysign(max_float, d));
  float f = __double2float_rz(d);
  if (static_cast<double>(f) != d) f = __uint_as_float(__float_as_uint(f) | 1u);
  return f;
}

// --- Pow --------------------------------------------------------------------------

// Integer powers by squaring, wrapping; a negative exponent gives the
// truncated real result (1 for base 1, +-1 for base -1, else 0).
template <typename T>
__device__ T PowInt(T base, int64_t exp) {
  if (exp < 0) {
    if (base == T(1)) return T(1);
    if (base == T(-1)) return (exp & 1) ? T(-1) : T(1);
    return T(0);
  }
  T result = T(1);
  while (exp > 0) {
    if (exp & 1) result = WrapMul(result, base);
    base = WrapMul(base, base);
    exp >>= 1;
  }
  return result;
}

// The output has the base's dtype. Float bases compute in float (the CPU
// uses double: results may differ in the last bit); integer bases with an
// integer exponent are exact, with a float exponent they go through double
// and convert back saturating.
struct PowOp {
  template <typename CB, typename CE>
  __device__ CB operator()(CB x, CE e) const {
    if constexpr (std::is_integral_v<CB> && std::is_integral_v<CE>) {
      return PowInt(x, static_cast<int64_t>(e));
    } else if constexpr (std::is_integral_v<CB>) {
      return ConvertTo<CB>(pow(static_cast<double>(x), static_cast<double>(e)));
    } else {
      const float ef = static_cast<float>(e);
      if (ef == 2.0f) return x * x;  // exact, and the common case
      return powf(x, ef);
    }
  }
};

// Exponents: every integer width (converted to int64 as the CPU does) and the
// float dtypes of the base.
constexpr TypeMask kPowExponentTypes = kArithTypes | kIntTypes;

Status Pow(CudaKernelContext& ctx) {
  VIGIL_ASSIGN_OR_RETURN(BinaryPlan p, PlanBinary(ctx, /*same_dtype=*/false));
  return Dispatch<kArithTypes>(
      p.a->dtype(),
      [&](auto base_tag) -> Status {
        return Dispatch<kPowExponentTypes>(
            p.b->dtype(),
            [&](auto exp_tag) -> Status {
              using EB = Elem<decltype(base_tag)>;
              using EE = Elem<decltype(exp_tag)>;
              return LaunchBinary<EB, EE, EB>(ctx, p.a->raw_data(), p.ma, p.b->raw_data(), p.mb, p.out->raw_data(),
                                              p.n, PowOp{}, "Pow");
            },
            [&] { return ctx.Unsupported("dtype {} of input 1", ir::DataTypeName(p.b->dtype())); });
      },
      [&] { return ctx.Unsupported("dtype {} of input 0", ir::DataTypeName(p.a->dtype())); });
}

// --- Comparisons and logic ------------------------------------------------------------

#define VIGIL_EW_COMPARE_(Name, expr, mask)                                                           \
  struct Name##Op {                                                                                 \
    template <typename C>                                                                           \
    __device__ bool operator()(C a, C b) const { return expr; }                                     \
  };                                                                                                \
  Status Name(CudaKernelContext& ctx) { return BinaryOp<mask, true>(ctx, Name##Op{}, #Name); }

VIGIL_EW_COMPARE_(Equal, a == b, kCompareTypes)
VIGIL_EW_COMPARE_(Less, a < b, kCompareTypes)
VIGIL_EW_COMPARE_(LessOrEqual, a <= b, kCompareTypes)
VIGIL_EW_COMPARE_(Greater, a > b, kCompareTypes)
VIGIL_EW_COMPARE_(GreaterOrEqual, a >= b, kCompareTypes)
VIGIL_EW_COMPARE_(And, a && b, kBoolType)
VIGIL_EW_COMPARE_(Or, a || b, kBoolType)
VIGIL_EW_COMPARE_(Xor, a != b, kBoolType)
#undef VIGIL_EW_COMPARE_

// --- Variadic Max, Min, Sum, Mean ---------------------------------------------------------

// numpy's maximum/minimum: a NaN in either operand gives NaN.
template <typename C>
__device__ __forceinline__ bool IsNan(C v) {
  if constexpr (std::is_floating_point_v<C>) {
    return isnan(v);
  } else {
    return false;
  }
}
struct MaxOp {
  template <typename C>
  __device__ C operator()(C a, C b) const { return IsNan(a) || a >= b ? a : b; }
};
struct MinOp {
  template <typename C>
  __device__ C operator()(C a, C b) const { return IsNan(a) || a <= b ? a : b; }
};
struct DivideByOp {
  float n;
  __device__ float operator()(float x) const { return x / n; }
};

// out = in0 op in1, then out = out op in_i for each further input, all
// broadcast to the output (the CPU's order, rounding to the output dtype
// after each step); Mean then divides by the input count.
template <TypeMask kMask, typename Op>
Status Variadic(CudaKernelContext& ctx, Op op, bool mean, const char* name) {
  const size_t count = ctx.num_inputs();
  if (count == 0 || !ctx.input(0)) return ctx.Fail("needs at least one input");
  const DataType dtype = ctx.input(0)->dtype();
  for (size_t i = 1; i < count; ++i) {
    if (!ctx.input(i)) return ctx.Fail("input {} is missing", i);
    if (ctx.input(i)->dtype() != dtype) {
      return ctx.Fail("input {} has dtype {} but input 0 has dtype {}; they must be equal", i,
                      ir::DataTypeName(ctx.input(i)->dtype()), ir::DataTypeName(dtype));
    }
  }
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * out, ctx.Output(0));
  const auto n = static_cast<int64_t>(out->element_count());
  if (count == 1) {  // a copy (Mean of one input divides by 1)
    if (ctx.input(0)->byte_size() != out->byte_size()) {
      return InternalError("{}: output {} does not match input {}", ops::NodeLabel(ctx.node()), out->Describe(),
                           ctx.input(0)->Describe());
    }
    if (out->byte_size() > 0) {
      VIGIL_CUDA_CALL(cudaMemcpyAsync(out->raw_data(), ctx.input(0)->raw_data(), out->byte_size(),
                                      cudaMemcpyDeviceToDevice, ctx.stream()));
    }
    return Status::Ok();
  }
  return Dispatch<kMask>(
      dtype,
      [&](auto tag) -> Status {
        using E = Elem<decltype(tag)>;
        for (size_t i = 1; i < count; ++i) {
          const runtime::Tensor* a = i == 1 ? ctx.input(0) : out;
          const runtime::Tensor* b = ctx.input(i);
          const std::vector<int64_t>* shapes[] = {&a->shape(), &b->shape()};
          Operand maps[2];
          VIGIL_RETURN_IF_ERROR(PlanOperands(ctx, out->shape(), shapes, maps));
          Status st = LaunchBinary<E, E, E>(ctx, a->raw_data(), maps[0], b->raw_data(), maps[1], out->raw_data(), n,
                                            op, name);
          if (!st.ok()) return st;
        }
        if constexpr (std::is_same_v<typename E::Compute, float>) {
          if (mean) {
            return LaunchUnary<E, E>(ctx, out->raw_data(), out->raw_data(), n,
                                     DivideByOp{static_cast<float>(count)}, name);
          }
        }
        return Status::Ok();
      },
      [&] { return ctx.Unsupported("dtype {} of input 0", ir::DataTypeName(dtype)); });
}

Status Max(CudaKernelContext& ctx) { return Variadic<kWrapTypes>(ctx, MaxOp{}, false, "Max"); }
Status Min(CudaKernelContext& ctx) { return Variadic<kWrapTypes>(ctx, MinOp{}, false, "Min"); }
Status Sum(CudaKernelContext& ctx) { return Variadic<kWrapTypes>(ctx, AddOp{}, false, "Sum"); }
Status Mean(CudaKernelContext& ctx) { return Variadic<kFloatTypes>(ctx, AddOp{}, true, "Mean"); }

// --- Where --------------------------------------------------------------------------------

template <typename T>
__global__ void WhereKernel(const uint8_t* c, Operand mc, const T* x, Operand mx, const T* y, Operand my, T* out,
                            int64_t n) {
  const int64_t start = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  if (mc.mode == Operand::kContiguous && mx.mode == Operand::kContiguous && my.mode == Operand::kContiguous) {
    for (int64_t i = start; i < n; i += step) out[i] = c[i] != 0 ? x[i] : y[i];
  } else {
    for (int64_t i = start; i < n; i += step) out[i] = c[mc.Offset(i)] != 0 ? x[mx.Offset(i)] : y[my.Offset(i)];
  }
}

Status Where(CudaKernelContext& ctx) {
  const runtime::Tensor* c = ctx.input(0);
  const runtime::Tensor* x = ctx.input(1);
  const runtime::Tensor* y = ctx.input(2);
  if (!c || !x || !y) return ctx.Fail("needs three inputs (condition, X, Y)");
  if (c->dtype() != DataType::kBool) {
    return ctx.Fail("input 0 (condition) has dtype {}, expected bool", ir::DataTypeName(c->dtype()));
  }
  if (x->dtype() != y->dtype()) {
    return ctx.Fail("input 2 (Y) has dtype {} but input 1 (X) has dtype {}; they must be equal",
                    ir::DataTypeName(y->dtype()), ir::DataTypeName(x->dtype()));
  }
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * out, ctx.Output(0));
  const std::vector<int64_t>* shapes[] = {&c->shape(), &x->shape(), &y->shape()};
  Operand maps[3];
  VIGIL_RETURN_IF_ERROR(PlanOperands(ctx, out->shape(), shapes, maps));
  const auto n = static_cast<int64_t>(out->element_count());
  if (n == 0) return Status::Ok();
  const auto* cond = static_cast<const uint8_t*>(c->raw_data());
  const unsigned blocks = BlocksFor(n, kThreads);
  switch (ir::DataTypeBits(x->dtype())) {
#define VIGIL_EW_WHERE_(bits, T)                                                                                  \
  case bits:                                                                                                     \
    WhereKernel<T><<<blocks, kThreads, 0, ctx.stream()>>>(cond, maps[0], static_cast<const T*>(x->raw_data()),   \
                                                          maps[1], static_cast<const T*>(y->raw_data()), maps[2], \
                                                          static_cast<T*>(out->raw_data()), n);                  \
    break;
    VIGIL_EW_WHERE_(8, uint8_t)
    VIGIL_EW_WHERE_(16, uint16_t)
    VIGIL_EW_WHERE_(32, uint32_t)
    VIGIL_EW_WHERE_(64, uint64_t)
#undef VIGIL_EW_WHERE_
    default:
      return ctx.Unsupported("dtype {} of input 1", ir::DataTypeName(x->dtype()));
  }
  VIGIL_CHECK_LAUNCH("Where");
  return Status::Ok();
}

// --- PRelu --------------------------------------------------------------------------------

// The slope's shape as broadcast onto X (as the CPU): before opset 7 a 1-D
// slope is per channel (X's dim 1); from 7 unidirectional broadcasting, and a
// 1-D slope that does not broadcast but equals exactly one of X's dims is
// applied along that dim.
bool PreluSlopeShape(int64_t opset, const std::vector<int64_t>& x, const std::vector<int64_t>& s,
                     std::vector<int64_t>* shaped) {
  if (opset < 7 && s.size() == 1 && s[0] != 1 && x.size() >= 2 && x[1] == s[0]) {
    shaped->assign(x.size(), 1);
    (*shaped)[1] = s[0];
    return true;
  }
  bool broadcasts = s.size() <= x.size();
  for (size_t i = 0; broadcasts && i < s.size(); ++i) {
    const int64_t d = s[s.size() - 1 - i];
    broadcasts = d == 1 || d == x[x.size() - 1 - i];
  }
  if (broadcasts) {
    *shaped = s;
    return true;
  }
  if (s.size() != 1) return false;
  shaped->assign(x.size(), 1);
  int matches = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    if (x[i] == s[0]) {
      (*shaped)[i] = s[0];
      ++matches;
    }
  }
  return matches == 1;
}

struct PreluOp {
  template <typename C>
  __device__ C operator()(C v, C a) const { return v > C(0) ? v : WrapMul(v, a); }
};

Status PRelu(CudaKernelContext& ctx) {
  const runtime::Tensor* x = ctx.input(0);
  const runtime::Tensor* slope = ctx.input(1);
  if (!x || !slope) return ctx.Fail("needs two inputs (X, slope)");
  if (x->dtype() != slope->dtype()) {
    return ctx.Fail("input 1 (slope) has dtype {} but input 0 (X) has dtype {}; they must be equal",
                    ir::DataTypeName(slope->dtype()), ir::DataTypeName(x->dtype()));
  }
  std::vector<int64_t> slope_shape;
  if (!PreluSlopeShape(ctx.opset(), x->shape(), slope->shape(), &slope_shape)) {
    return ctx.Fail("slope of shape {} does not broadcast to X of shape {}", ShapeText(slope->shape()),
                    ShapeText(x->shape()));
  }
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * out, ctx.Output(0));
  const std::vector<int64_t>* shapes[] = {&x->shape(), &slope_shape};
  Operand maps[2];
  VIGIL_RETURN_IF_ERROR(PlanOperands(ctx, out->shape(), shapes, maps));
  const auto n = static_cast<int64_t>(out->element_count());
  return Dispatch<kArithTypes>(
      x->dtype(),
      [&](auto tag) -> Status {
        using E = Elem<decltype(tag)>;
        return LaunchBinary<E, E, E>(ctx, x->raw_data(), maps[0], slope->raw_data(), maps[1], out->raw_data(), n,
                                     PreluOp{}, "PRelu");
      },
      [&] { return ctx.Unsupported("dtype {} of input 0", ir::DataTypeName(x->dtype())); });
}

// --- Cast, CastLike --------------------------------------------------------------------------

// Converts a source compute value to the output's compute type. To
// float16/bfloat16 rounds once to nearest even: sources wider than float go
// through the round-to-odd float first.
template <typename TO>
struct CastOp {
  template <typename CI>
  __device__ typename Elem<TO>::Compute operator()(CI v) const {
    if constexpr (std::is_same_v<TO, __half> || std::is_same_v<TO, __nv_bfloat16>) {
      if constexpr (std::is_same_v<CI, float> || std::is_same_v<CI, bool>) {
        return static_cast<float>(v);
      } else {
        return RoundToOddFloat(static_cast<double>(v));
      }
    } else {
      return ConvertTo<typename Elem<TO>::Compute>(v);
    }
  }
};

// Input 0 into output 0, whose dtype (from shape inference: Cast's `to`,
// CastLike's input 1) says what to convert to.
Status CastKernel(CudaKernelContext& ctx) {
  const runtime::Tensor* x = ctx.input(0);
  if (!x) return ctx.Fail("input 0 is missing");
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * y, ctx.Output(0));
  if (y->element_count() != x->element_count()) {
    return InternalError("{}: output {} does not match input {}", ops::NodeLabel(ctx.node()), y->Describe(),
                         x->Describe());
  }
  if (x->dtype() == y->dtype()) {
    if (y->byte_size() > 0) {
      VIGIL_CUDA_CALL(
          cudaMemcpyAsync(y->raw_data(), x->raw_data(), y->byte_size(), cudaMemcpyDeviceToDevice, ctx.stream()));
    }
    return Status::Ok();
  }
  const auto n = static_cast<int64_t>(x->element_count());
  return Dispatch<kCastTypes>(
      x->dtype(),
      [&](auto in_tag) -> Status {
        return Dispatch<kCastTypes>(
            y->dtype(),
            [&](auto out_tag) -> Status {
              using TI = decltype(in_tag);
              using TO = decltype(out_tag);
              if constexpr (std::is_same_v<TI, TO>) {
                return InternalError("{}: unreachable same-dtype cast", ops::NodeLabel(ctx.node()));
              } else {
                return LaunchUnary<Elem<TI>, Elem<TO>>(ctx, x->raw_data(), y->raw_data(), n, CastOp<TO>{}, "Cast");
              }
            },
            [&] { return ctx.Unsupported("cast to {}", ir::DataTypeName(y->dtype())); });
      },
      [&] { return ctx.Unsupported("dtype {} of input 0", ir::DataTypeName(x->dtype())); });
}

// --- Support predicates ------------------------------------------------------------------------

// Inputs 0 and 1 present, of one dtype in kMask.
template <TypeMask kMask>
bool BinarySupports(const ir::Node& node, const runtime::NodeTypes& types, std::string* why_not) {
  if (!HasNodeInput(node, 0) || !HasNodeInput(node, 1)) return WhyNot(why_not, "an input is missing");
  return InputIn(types, 0, kMask, why_not) && SameAsInput0(types, 1, why_not) && RanksFit(types, why_not);
}

bool ModSupports(const ir::Node& node, const runtime::NodeTypes& types, std::string* why_not) {
  if (!BinarySupports<kWrapTypes>(node, types, why_not)) return false;
  auto fmod = ops::IntAttr(node, "fmod", 0);
  if (!fmod.ok() || (*fmod != 0 && *fmod != 1)) return WhyNot(why_not, "attribute fmod is not 0 or 1");
  return true;
}

bool PowSupports(const ir::Node& node, const runtime::NodeTypes& types, std::string* why_not) {
  if (!HasNodeInput(node, 0) || !HasNodeInput(node, 1)) return WhyNot(why_not, "an input is missing");
  return InputIn(types, 0, kArithTypes, why_not) && InputIn(types, 1, kPowExponentTypes, why_not) &&
         RanksFit(types, why_not);
}

// At least one input; all present, of one dtype in kMask.
template <TypeMask kMask>
bool VariadicSupports(const ir::Node& node, const runtime::NodeTypes& types, std::string* why_not) {
  if (node.inputs.empty()) return WhyNot(why_not, "no inputs");
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    if (!HasNodeInput(node, i)) return WhyNot(why_not, "input " + std::to_string(i) + " is missing");
    if (i > 0 && !SameAsInput0(types, i, why_not)) return false;
  }
  return InputIn(types, 0, kMask, why_not) && RanksFit(types, why_not);
}

bool WhereSupports(const ir::Node& node, const runtime::NodeTypes& types, std::string* why_not) {
  for (size_t i = 0; i < 3; ++i) {
    if (!HasNodeInput(node, i)) return WhyNot(why_not, "input " + std::to_string(i) + " is missing");
  }
  if (!InputIn(types, 0, kBoolType, why_not)) return false;
  const DataType t = InputDtype(types, 1);
  const int bits = t == DataType::kUndefined || t == DataType::kString ? 0 : ir::DataTypeBits(t);
  if (bits != 8 && bits != 16 && bits != 32 && bits != 64) {
    return WhyNot(why_not, "dtype " + std::string(ir::DataTypeName(t)) + " of input 1");
  }
  if (InputDtype(types, 2) != t) return WhyNot(why_not, "input 2 has another dtype than input 1");
  return RanksFit(types, why_not);
}

// An input 0 whose dtype is not known at load time (unknown_dtype.h) is
// taken: CastKernel refuses, with Unsupported, a dtype outside kCastTypes
// when it runs.
bool CastSupports(const ir::Node& node, const runtime::NodeTypes& types, std::string* why_not) {
  if (!HasNodeInput(node, 0)) return WhyNot(why_not, "input 0 is missing");
  if (!UnknownTensorDtype(types, 0) && !UnarySupports<kCastTypes>(node, types, why_not)) return false;
  if (!RanksFit(types, why_not)) return false;
  auto to = ops::RequiredIntAttr(node, "to");
  if (!to.ok() || *to <= 0 || *to >= 64 || !InMask(kCastTypes, static_cast<DataType>(*to))) {
    return WhyNot(why_not, "cast to this dtype is not implemented");
  }
  return true;
}

bool CastLikeSupports(const ir::Node& node, const runtime::NodeTypes& types, std::string* why_not) {
  if (!HasNodeInput(node, 0) || !HasNodeInput(node, 1)) return WhyNot(why_not, "an input is missing");
  if (!UnknownTensorDtype(types, 0) && !UnarySupports<kCastTypes>(node, types, why_not)) return false;
  return RanksFit(types, why_not) && InputIn(types, 1, kCastTypes, why_not);
}

const CudaKernelDef kBinaryKernels[] = {
    {"", "Add", 6, kLatest, Add, BinarySupports<kWrapTypes>},
    {"", "Sub", 6, kLatest, Sub, BinarySupports<kWrapTypes>},
    {"", "Mul", 6, kLatest, Mul, BinarySupports<kWrapTypes>},
    {"", "Div", 6, kLatest, Div, BinarySupports<kWrapTypes>},
    {"", "Mod", 10, kLatest, Mod, ModSupports},
    {"", "Pow", 1, kLatest, Pow, PowSupports},
    {"", "Equal", 1, kLatest, Equal, BinarySupports<kCompareTypes>},
    {"", "Less", 1, kLatest, Less, BinarySupports<kCompareTypes>},
    {"", "LessOrEqual", 12, kLatest, LessOrEqual, BinarySupports<kCompareTypes>},
    {"", "Greater", 1, kLatest, Greater, BinarySupports<kCompareTypes>},
    {"", "GreaterOrEqual", 12, kLatest, GreaterOrEqual, BinarySupports<kCompareTypes>},
    {"", "And", 1, kLatest, And, BinarySupports<kBoolType>},
    {"", "Or", 1, kLatest, Or, BinarySupports<kBoolType>},
    {"", "Xor", 1, kLatest, Xor, BinarySupports<kBoolType>},
    {"", "Max", 6, kLatest, Max, VariadicSupports<kWrapTypes>},
    {"", "Min", 6, kLatest, Min, VariadicSupports<kWrapTypes>},
    {"", "Sum", 6, kLatest, Sum, VariadicSupports<kWrapTypes>},
    {"", "Mean", 6, kLatest, Mean, VariadicSupports<kFloatTypes>},
    {"", "Where", 9, kLatest, Where, WhereSupports},
    {"", "PRelu", 6, kLatest, PRelu, BinarySupports<kArithTypes>},
    {"", "Cast", 6, kLatest, CastKernel, CastSupports},
    {"", "CastLike", 15, kLatest, CastKernel, CastLikeSupports},
};

}  // namespace
}  // namespace vigil::cuda::elementwise

namespace vigil::cuda {

std::span<const CudaKernelDef> ElementwiseCudaKernels() {
  static const std::vector<CudaKernelDef> all = [] {
    std::vector<CudaKernelDef> v(std::begin(elementwise::kBinaryKernels), std::end(elementwise::kBinaryKernels));
    const auto more = elementwise::ElementwiseActivationCudaKernels();
    v.insert(v.end(), more.begin(), more.end());
    return v;
  }();
  return all;
}

}  // namespace vigil::cuda
