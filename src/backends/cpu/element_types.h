// Element types for CPU kernels: how each ONNX dtype is stored and in which
// C++ type a kernel computes on it, and a dispatcher from a runtime dtype to a
// template instantiation. float16 and bfloat16 are stored as uint16_t and
// computed in float; bool is stored as uint8_t and computed as bool, so a
// byte other than 0/1 in an input is read as true instead of being undefined
// behaviour.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <utility>

#include "vigil/float16.h"
#include "ir/dtype.h"

namespace vigil::cpu {

using ir::DataType;

template <DataType D>
struct Elem;

// Types that need no conversion between storage and computation.
template <typename T>
struct PlainElem {
  using Storage = T;
  using Compute = T;
  static Compute Load(Storage v) { return v; }
  static Storage Store(Compute v) { return v; }
};

template <> struct Elem<DataType::kFloat32> : PlainElem<float> {};
template <> struct Elem<DataType::kFloat64> : PlainElem<double> {};
template <> struct Elem<DataType::kInt8> : PlainElem<int8_t> {};
template <> struct Elem<DataType::kInt16> : PlainElem<int16_t> {};
template <> struct Elem<DataType::kInt32> : PlainElem<int32_t> {};
template <> struct Elem<DataType::kInt64> : PlainElem<int64_t> {};
template <> struct Elem<DataType::kUint8> : PlainElem<uint8_t> {};
template <> struct Elem<DataType::kUint16> : PlainElem<uint16_t> {};
template <> struct Elem<DataType::kUint32> : PlainElem<uint32_t> {};
template <> struct Elem<DataType::kUint64> : PlainElem<uint64_t> {};

template <>
struct Elem<DataType::kFloat16> {
  using Storage = uint16_t;
  using Compute = float;
  static Compute Load(Storage v) { return Float16ToFloat(v); }
  static Storage Store(Compute v) { return FloatToFloat16(v); }
};

template <>
struct Elem<DataType::kBfloat16> {
  using Storage = uint16_t;
  using Compute = float;
  static Compute Load(Storage v) { return Bfloat16ToFloat(v); }
  static Storage Store(Compute v) { return FloatToBfloat16(v); }
};

template <>
struct Elem<DataType::kBool> {
  using Storage = uint8_t;
  using Compute = bool;
  static Compute Load(Storage v) { return v != 0; }
  static Storage Store(Compute v) { return v ? 1 : 0; }
};

// Sets of dtypes as bit masks over the ONNX numbering.
using TypeMask = uint64_t;
constexpr TypeMask Bit(DataType d) { return TypeMask{1} << static_cast<int>(d); }

inline constexpr TypeMask kFloatTypes =
    Bit(DataType::kFloat32) | Bit(DataType::kFloat64) | Bit(DataType::kFloat16) | Bit(DataType::kBfloat16);
inline constexpr TypeMask kSignedIntTypes =
    Bit(DataType::kInt8) | Bit(DataType::kInt16) | Bit(DataType::kInt32) | Bit(DataType::kInt64);
inline constexpr TypeMask kUnsignedIntTypes =
    Bit(DataType::kUint8) | Bit(DataType::kUint16) | Bit(DataType::kUint32) | Bit(DataType::kUint64);
inline constexpr TypeMask kIntTypes = kSignedIntTypes | kUnsignedIntTypes;
inline constexpr TypeMask kSignedTypes = kFloatTypes | kSignedIntTypes;
inline constexpr TypeMask kNumericTypes = kFloatTypes | kIntTypes;
inline constexpr TypeMask kBoolType = Bit(DataType::kBool);
inline constexpr TypeMask kAllTypes = kNumericTypes | kBoolType;

constexpr bool InMask(TypeMask mask, DataType d) {
  return static_cast<int>(d) >= 0 && static_cast<int>(d) < 64 && (mask & Bit(d)) != 0;
}

template <DataType D>
using DtypeTag = std::integral_constant<DataType, D>;

// Calls fn(DtypeTag<D>{}) for the runtime dtype `d` when it is in `kMask`,
// else returns unsupported(). Only the dtypes in the mask are instantiated.
// Both callables must return the same type.
template <TypeMask kMask, typename Fn, typename Unsupported>
auto DispatchDtype(DataType d, Fn&& fn, Unsupported&& unsupported) {
#define VIGIL_DISPATCH_CASE_(D)                                        \
  case D:                                                              \
    if constexpr (InMask(kMask, D)) return fn(DtypeTag<D>{});          \
    break;
  switch (d) {
    VIGIL_DISPATCH_CASE_(DataType::kFloat32)
    VIGIL_DISPATCH_CASE_(DataType::kFloat64)
    VIGIL_DISPATCH_CASE_(DataType::kFloat16)
    VIGIL_DISPATCH_CASE_(DataType::kBfloat16)
    VIGIL_DISPATCH_CASE_(DataType::kInt8)
    VIGIL_DISPATCH_CASE_(DataType::kInt16)
    VIGIL_DISPATCH_CASE_(DataType::kInt32)
    VIGIL_DISPATCH_CASE_(DataType::kInt64)
    VIGIL_DISPATCH_CASE_(DataType::kUint8)
    VIGIL_DISPATCH_CASE_(DataType::kUint16)
    VIGIL_DISPATCH_CASE_(DataType::kUint32)
    VIGIL_DISPATCH_CASE_(DataType::kUint64)
    VIGIL_DISPATCH_CASE_(DataType::kBool)
    default:
      break;
  }
#undef VIGIL_DISPATCH_CASE_
  return unsupported();
}

// Converts a computed value to another compute type with defined results
// where C++ leaves them undefined: float to integer truncates toward zero,
// saturates out-of-range values and maps NaN to 0; anything to bool is
// "!= 0" (NaN is true, as in numpy).
template <typename To, typename From>
To ConvertValue(From v) {
  if constexpr (std::is_same_v<To, bool>) {
    return v != From(0);
  } else if constexpr (std::is_floating_point_v<From> && std::is_integral_v<To>) {
    if (std::isnan(v)) return To(0);
    // The limits as From: min is a power of two (exact); max may round up to
    // the next power of two, and then v >= hi still means "too large".
    constexpr From lo = static_cast<From>(std::numeric_limits<To>::min());
    constexpr From hi = static_cast<From>(std::numeric_limits<To>::max());
    if (v <= lo) return std::numeric_limits<To>::min();
    if (v >= hi) return std::numeric_limits<To>::max();
    return static_cast<To>(v);
  } else {
    return static_cast<To>(v);
  }
}

}  // namespace vigil::cpu
