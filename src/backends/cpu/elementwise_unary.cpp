// Unary math kernels: Abs, Neg, Reciprocal, Floor, Ceil, Round, Sqrt, Exp,
// Log, the trigonometric and hyperbolic functions, Erf, Sign, IsNaN, IsInf,
// Not, BitwiseNot. float16/bfloat16 compute in float; integer ops wrap.
#include <cmath>
#include <type_traits>

#include "backends/cpu/elementwise_kernels.h"
#include "backends/cpu/fast/fast_kernels.h"

namespace vigil::cpu {
namespace {

template <typename T>
constexpr bool kIsInt = std::is_integral_v<T>;

// numpy's round: halves go to the even neighbour, independent of the
// floating-point environment's rounding mode.
template <typename F>
F RoundHalfToEven(F x) {
  F r = std::round(x);  // halves away from zero
  if (std::fabs(x - std::trunc(x)) == F(0.5)) r = F(2) * std::round(x / F(2));
  return r;
}

Status Abs(KernelContext& ctx) {
  return MapUnary<kNumericTypes>(ctx, [](auto x) {
    using T = decltype(x);
    if constexpr (std::is_unsigned_v<T>) {
      return x;
    } else if constexpr (kIsInt<T>) {
      return x < 0 ? WrapNeg(x) : x;  // the most negative value stays itself, as in numpy
    } else {
      return std::fabs(x);
    }
  });
}

Status Neg(KernelContext& ctx) {
  return MapUnary<kSignedTypes>(ctx, [](auto x) { return WrapNeg(x); });
}

Status Sign(KernelContext& ctx) {
  return MapUnary<kNumericTypes>(ctx, [](auto x) {
    using T = decltype(x);
    if constexpr (std::is_unsigned_v<T>) {
      return x > 0 ? T(1) : T(0);
    } else {
      if constexpr (std::is_floating_point_v<T>) {
        if (std::isnan(x)) return x;
      }
      return x > T(0) ? T(1) : (x < T(0) ? T(-1) : T(0));
    }
  });
}

Status Reciprocal(KernelContext& ctx) {
  return MapUnary<kFloatTypes>(ctx, [](auto x) { return decltype(x)(1) / x; });
}

// Float-only functions of one argument.
#define VIGIL_FLOAT_UNARY_(Name, expr)                                                   \
  Status Name(KernelContext& ctx) {                                                      \
    return MapUnary<kFloatTypes>(ctx, [](auto x) -> decltype(x) { return expr; });       \
  }

VIGIL_FLOAT_UNARY_(Floor, std::floor(x))
VIGIL_FLOAT_UNARY_(Ceil, std::ceil(x))
VIGIL_FLOAT_UNARY_(Round, RoundHalfToEven(x))
VIGIL_FLOAT_UNARY_(Sqrt, std::sqrt(x))
VIGIL_FLOAT_UNARY_(Exp, std::exp(x))
VIGIL_FLOAT_UNARY_(Log, std::log(x))
VIGIL_FLOAT_UNARY_(Sin, std::sin(x))
VIGIL_FLOAT_UNARY_(Cos, std::cos(x))
VIGIL_FLOAT_UNARY_(Tan, std::tan(x))
VIGIL_FLOAT_UNARY_(Asin, std::asin(x))
VIGIL_FLOAT_UNARY_(Acos, std::acos(x))
VIGIL_FLOAT_UNARY_(Atan, std::atan(x))
VIGIL_FLOAT_UNARY_(Sinh, std::sinh(x))
VIGIL_FLOAT_UNARY_(Cosh, std::cosh(x))
VIGIL_FLOAT_UNARY_(Asinh, std::asinh(x))
VIGIL_FLOAT_UNARY_(Acosh, std::acosh(x))
VIGIL_FLOAT_UNARY_(Atanh, std::atanh(x))
#undef VIGIL_FLOAT_UNARY_

// Erf (opset 13) also takes integer tensors: erf of an integer truncates to
// 0 or +-1. float32 has an optimised version (fast::ErfFloat).
Status Erf(KernelContext& ctx) {
  VIGIL_ASSIGN_OR_RETURN(bool done, MapFloat32Optimised(ctx, fast::ErfFloat));
  if (done) return Status::Ok();
  return MapUnary<kNumericTypes>(ctx, [](auto x) {
    using T = decltype(x);
    if constexpr (kIsInt<T>) {
      return ConvertValue<T>(std::erf(static_cast<double>(x)));
    } else {
      return std::erf(x);
    }
  });
}

Status IsNaN(KernelContext& ctx) {
  return MapUnary<kFloatTypes, /*kBoolOut=*/true>(ctx, [](auto x) { return std::isnan(x); });
}

Status IsInf(KernelContext& ctx) {
  VIGIL_ASSIGN_OR_RETURN(int64_t neg, ops::IntAttr(ctx.node(), "detect_negative", 1));
  VIGIL_ASSIGN_OR_RETURN(int64_t pos, ops::IntAttr(ctx.node(), "detect_positive", 1));
  return MapUnary<kFloatTypes, /*kBoolOut=*/true>(ctx, [neg, pos](auto x) {
    return std::isinf(x) && ((x > 0 && pos != 0) || (x < 0 && neg != 0));
  });
}

Status Not(KernelContext& ctx) {
  return MapUnary<kBoolType>(ctx, [](bool x) { return !x; });
}

Status BitwiseNot(KernelContext& ctx) {
  return MapUnary<kIntTypes>(ctx, [](auto x) { return static_cast<decltype(x)>(~x); });
}

constexpr KernelDef kUnaryKernels[] = {
    {"", "Abs", 6, kLatest, Abs},
    {"", "Neg", 6, kLatest, Neg},
    {"", "Sign", 9, kLatest, Sign},
    {"", "Reciprocal", 6, kLatest, Reciprocal},
    {"", "Floor", 6, kLatest, Floor},
    {"", "Ceil", 6, kLatest, Ceil},
    {"", "Round", 11, kLatest, Round},
    {"", "Sqrt", 6, kLatest, Sqrt},
    {"", "Exp", 6, kLatest, Exp},
    {"", "Log", 6, kLatest, Log},
    {"", "Sin", 7, kLatest, Sin},
    {"", "Cos", 7, kLatest, Cos},
    {"", "Tan", 7, kLatest, Tan},
    {"", "Asin", 7, kLatest, Asin},
    {"", "Acos", 7, kLatest, Acos},
    {"", "Atan", 7, kLatest, Atan},
    {"", "Sinh", 9, kLatest, Sinh},
    {"", "Cosh", 9, kLatest, Cosh},
    {"", "Asinh", 9, kLatest, Asinh},
    {"", "Acosh", 9, kLatest, Acosh},
    {"", "Atanh", 9, kLatest, Atanh},
    {"", "Erf", 9, kLatest, Erf},
    {"", "IsNaN", 9, kLatest, IsNaN},
    {"", "IsInf", 10, kLatest, IsInf},
    {"", "Not", 1, kLatest, Not},
    {"", "BitwiseNot", 18, kLatest, BitwiseNot},
};

}  // namespace

std::span<const KernelDef> ElementwiseUnaryKernels() { return kUnaryKernels; }

}  // namespace vigil::cpu
