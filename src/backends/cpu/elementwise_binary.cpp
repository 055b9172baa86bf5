// Broadcasting binary kernels: Add, Sub, Mul, Div, Pow, Mod, BitShift,
// BitwiseAnd/Or/Xor, And/Or/Xor and the comparisons (with the pre-opset-7
// `broadcast`/`axis` attributes where those versions had them). Integer arithmetic wraps
// (as numpy does); integer Div truncates toward zero (the ONNX reference);
// an integer division or modulo by zero is an error naming the element,
// never a SIGFPE.
#include <cmath>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "backends/cpu/elementwise_broadcast.h"

namespace vigil::cpu {
namespace {

// Both inputs of dtype in kMask (and equal); the output has that dtype, or
// bool for kBoolOut. `op` takes and returns compute-type values.
template <TypeMask kMask, bool kBoolOut = false, typename Op>
Status BinaryKernel(KernelContext& ctx, const Op& op) {
  VIGIL_ASSIGN_OR_RETURN(BinaryPlan p, PlanBinary(ctx, 0, 1, /*same_dtype=*/true));
  return DispatchDtype<kMask>(
      p.a->dtype(),
      [&](auto tag) -> Status {
        using E = Elem<decltype(tag)::value>;
        using O = std::conditional_t<kBoolOut, Elem<DataType::kBool>, E>;
        VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * out,
                               ctx.Output(0, kBoolOut ? DataType::kBool : p.a->dtype(), p.out_shape));
        RunBinary<E, E, O>(p.walk, p.a->data<typename E::Storage>(), p.b->data<typename E::Storage>(),
                           out->data<typename O::Storage>(), op);
        return Status::Ok();
      },
      [&] { return ctx.UnsupportedDtype(0); });
}

// --- Arithmetic ----------------------------------------------------------------

Status Add(KernelContext& ctx) {
  return BinaryKernel<kNumericTypes>(ctx, [](auto a, auto b) { return WrapAdd(a, b); });
}
Status Sub(KernelContext& ctx) {
  return BinaryKernel<kNumericTypes>(ctx, [](auto a, auto b) { return WrapSub(a, b); });
}
Status Mul(KernelContext& ctx) {
  return BinaryKernel<kNumericTypes>(ctx, [](auto a, auto b) { return WrapMul(a, b); });
}

// Index of the first zero element of an integer tensor, or -1. An integer is
// zero exactly when all its bytes are, so this needs no dispatch on dtype.
int64_t FirstZeroInteger(const runtime::Tensor& t) {
  const size_t width = static_cast<size_t>(ir::DataTypeBits(t.dtype()) / 8);
  const auto* p = static_cast<const uint8_t*>(t.raw_data());
  const uint64_t n = t.element_count();
  for (uint64_t i = 0; i < n; ++i, p += width) {
    bool zero = true;
    for (size_t k = 0; k < width; ++k) zero = zero && p[k] == 0;
    if (zero) return static_cast<int64_t>(i);
  }
  return -1;
}

// Integer Div and Mod refuse zero divisors up front (C++ would trap).
Status CheckIntegerDivisor(KernelContext& ctx) {
  const runtime::Tensor* b = ctx.input(1);
  if (!b || !InMask(kIntTypes, b->dtype())) return Status::Ok();
  int64_t zero = FirstZeroInteger(*b);
  if (zero >= 0) {
    return ctx.Fail("integer division by zero: input 1 (the divisor, {}) is 0 at flat index {}", b->Describe(),
                    zero);
  }
  return Status::Ok();
}

// Truncating integer division; MIN / -1 wraps to MIN as numpy does.
template <typename T>
T DivInt(T a, T b) {
  if constexpr (std::is_signed_v<T>) {
    if (b == T(-1)) return WrapNeg(a);
  }
  return static_cast<T>(a / b);
}

Status Div(KernelContext& ctx) {
  VIGIL_RETURN_IF_ERROR(CheckIntegerDivisor(ctx));
  return BinaryKernel<kNumericTypes>(ctx, [](auto a, auto b) {
    if constexpr (std::is_integral_v<decltype(a)>) {
      return DivInt(a, b);
    } else {
      return a / b;
    }
  });
}

// C's remainder: the sign of the dividend (fmod = 1).
template <typename T>
T TruncMod(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    return std::fmod(a, b);
  } else {
    if constexpr (std::is_signed_v<T>) {
      if (b == T(-1)) return T(0);  // MIN % -1 traps in C++
    }
    return static_cast<T>(a % b);
  }
}

// Python's remainder: the sign of the divisor (fmod = 0).
template <typename T>
T FloorMod(T a, T b) {
  T r = TruncMod(a, b);
  if constexpr (std::is_signed_v<T> || std::is_floating_point_v<T>) {
    if (r != T(0) && ((r < T(0)) != (b < T(0)))) r = static_cast<T>(r + b);
  }
  return r;
}

Status Mod(KernelContext& ctx) {
  VIGIL_ASSIGN_OR_RETURN(int64_t fmod, ops::IntAttr(ctx.node(), "fmod", 0));
  if (fmod != 0 && fmod != 1) return ctx.Fail("attribute fmod is {}, expected 0 or 1", fmod);
  VIGIL_RETURN_IF_ERROR(CheckIntegerDivisor(ctx));
  if (fmod == 1) return BinaryKernel<kNumericTypes>(ctx, [](auto a, auto b) { return TruncMod(a, b); });
  return BinaryKernel<kNumericTypes>(ctx, [](auto a, auto b) { return FloorMod(a, b); });
}

// --- Pow ----------------------------------------------------------------------

// base^exp for integers by squaring, wrapping in T like numpy. A negative
// exponent gives the truncated real result: 1 for base 1, +-1 for base -1,
// else 0.
template <typename T>
T PowInt(T base, int64_t exp) {
  if (exp < 0) {
    if (base == T(1)) return T(1);
    if constexpr (std::is_signed_v<T>) {
      if (base == T(-1)) return (exp & 1) ? T(-1) : T(1);
    }
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

// The exponent tensor converted to one of two types: int64 when both base
// and exponent are integers (exact powers), double otherwise. Converting
// first keeps Pow's instantiations to base types x 2 instead of x 13.
template <typename X>
Result<std::vector<X>> ExponentValues(KernelContext& ctx, const runtime::Tensor& e) {
  std::vector<X> out(e.element_count());
  Status st = DispatchDtype<kNumericTypes>(
      e.dtype(),
      [&](auto tag) -> Status {
        using E = Elem<decltype(tag)::value>;
        const auto* p = e.data<typename E::Storage>();
        for (size_t i = 0; i < out.size(); ++i) out[i] = ConvertValue<X>(E::Load(p[i]));
        return Status::Ok();
      },
      [&] { return ctx.UnsupportedDtype(1); });
  VIGIL_RETURN_IF_ERROR(st);
  return out;
}

// Pow (opset 12+ allows the exponent to have another dtype than the base);
// the output has the base's dtype.
Status Pow(KernelContext& ctx) {
  constexpr TypeMask kBaseTypes = kFloatTypes | kIntTypes;
  VIGIL_ASSIGN_OR_RETURN(BinaryPlan p, PlanBinary(ctx, 0, 1, /*same_dtype=*/false));
  const bool int_pow = InMask(kIntTypes, p.a->dtype()) && InMask(kIntTypes, p.b->dtype());
  return DispatchDtype<kBaseTypes>(
      p.a->dtype(),
      [&](auto tag) -> Status {
        using E = Elem<decltype(tag)::value>;
        using C = typename E::Compute;
        VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * out, ctx.Output(0, p.a->dtype(), p.out_shape));
        const auto* base = p.a->data<typename E::Storage>();
        auto* dst = out->data<typename E::Storage>();
        if constexpr (std::is_integral_v<C>) {
          if (int_pow) {
            VIGIL_ASSIGN_OR_RETURN(auto exps, ExponentValues<int64_t>(ctx, *p.b));
            RunBinary<E, PlainElem<int64_t>, E>(p.walk, base, exps.data(), dst,
                                                [](C x, int64_t n) { return PowInt(x, n); });
            return Status::Ok();
          }
        }
        VIGIL_ASSIGN_OR_RETURN(auto exps, ExponentValues<double>(ctx, *p.b));
        RunBinary<E, PlainElem<double>, E>(p.walk, base, exps.data(), dst, [](C x, double n) {
          return ConvertValue<C>(std::pow(static_cast<double>(x), n));
        });
        return Status::Ok();
      },
      [&] { return ctx.UnsupportedDtype(0); });
}

// --- Bits and logic ------------------------------------------------------------

Status BitShift(KernelContext& ctx) {
  VIGIL_ASSIGN_OR_RETURN(std::string direction, ops::StringAttr(ctx.node(), "direction", ""));
  if (direction != "LEFT" && direction != "RIGHT") {
    return ctx.Fail("attribute direction is '{}', expected 'LEFT' or 'RIGHT'", direction);
  }
  const bool left = direction == "LEFT";
  // The opset-28 rule, for every integer type: a shift by a negative amount
  // or by the bit width or more (undefined in C++) leaves only what the sign
  // fill produces, -1 for a right shift of a negative value and 0 otherwise.
  // A signed right shift is arithmetic; a signed left shift works on the bits
  // (in the unsigned type of the same width), so it may flip the sign.
  return BinaryKernel<kIntTypes>(ctx, [left](auto a, auto b) {
    using T = decltype(a);
    using Bits = std::make_unsigned_t<T>;
    using Wide = WrapUnsigned<T>;  // no promotion to int while shifting
    constexpr int kWidth = static_cast<int>(sizeof(T) * 8);
    bool in_range = b < T(kWidth);
    if constexpr (std::is_signed_v<T>) in_range = in_range && b >= T(0);
    if (!in_range) {
      if constexpr (std::is_signed_v<T>) {
        if (!left && a < T(0)) return T(-1);
      }
      return T(0);
    }
    const int n = static_cast<int>(b);
    if (left) return static_cast<T>(static_cast<Bits>(static_cast<Wide>(static_cast<Bits>(a)) << n));
    if constexpr (std::is_signed_v<T>) {
      return static_cast<T>(a >> n);  // arithmetic from C++20
    } else {
      return static_cast<T>(static_cast<Wide>(a) >> n);
    }
  });
}

Status BitwiseAnd(KernelContext& ctx) {
  return BinaryKernel<kIntTypes>(ctx, [](auto a, auto b) { return static_cast<decltype(a)>(a & b); });
}
Status BitwiseOr(KernelContext& ctx) {
  return BinaryKernel<kIntTypes>(ctx, [](auto a, auto b) { return static_cast<decltype(a)>(a | b); });
}
Status BitwiseXor(KernelContext& ctx) {
  return BinaryKernel<kIntTypes>(ctx, [](auto a, auto b) { return static_cast<decltype(a)>(a ^ b); });
}

Status And(KernelContext& ctx) {
  return BinaryKernel<kBoolType>(ctx, [](bool a, bool b) { return a && b; });
}
Status Or(KernelContext& ctx) {
  return BinaryKernel<kBoolType>(ctx, [](bool a, bool b) { return a || b; });
}
Status Xor(KernelContext& ctx) {
  return BinaryKernel<kBoolType>(ctx, [](bool a, bool b) { return a != b; });
}

// --- Comparisons (bool output) --------------------------------------------------

Status Equal(KernelContext& ctx) {
  return BinaryKernel<kAllTypes, true>(ctx, [](auto a, auto b) { return a == b; });
}
Status Less(KernelContext& ctx) {
  return BinaryKernel<kAllTypes, true>(ctx, [](auto a, auto b) { return a < b; });
}
Status LessOrEqual(KernelContext& ctx) {
  return BinaryKernel<kAllTypes, true>(ctx, [](auto a, auto b) { return a <= b; });
}
Status Greater(KernelContext& ctx) {
  return BinaryKernel<kAllTypes, true>(ctx, [](auto a, auto b) { return a > b; });
}
Status GreaterOrEqual(KernelContext& ctx) {
  return BinaryKernel<kAllTypes, true>(ctx, [](auto a, auto b) { return a >= b; });
}

constexpr KernelDef kBinaryKernels[] = {
    {"", "Add", 6, kLatest, Add},
    {"", "Sub", 6, kLatest, Sub},
    {"", "Mul", 6, kLatest, Mul},
    {"", "Div", 6, kLatest, Div},
    {"", "Mod", 10, kLatest, Mod},
    {"", "Pow", 1, kLatest, Pow},
    {"", "BitShift", 11, kLatest, BitShift},
    {"", "BitwiseAnd", 18, kLatest, BitwiseAnd},
    {"", "BitwiseOr", 18, kLatest, BitwiseOr},
    {"", "BitwiseXor", 18, kLatest, BitwiseXor},
    {"", "And", 1, kLatest, And},
    {"", "Or", 1, kLatest, Or},
    {"", "Xor", 1, kLatest, Xor},
    {"", "Equal", 1, kLatest, Equal},
    {"", "Less", 1, kLatest, Less},
    {"", "LessOrEqual", 12, kLatest, LessOrEqual},
    {"", "Greater", 1, kLatest, Greater},
    {"", "GreaterOrEqual", 12, kLatest, GreaterOrEqual},
};

}  // namespace

std::span<const KernelDef> ElementwiseBinaryKernels() { return kBinaryKernels; }

}  // namespace vigil::cpu
