// Element access for kernels that compute in floating point (conv, pooling,
// normalisation, softmax): per dtype, the storage type and the type to
// compute in. float16 and bfloat16 are stored as uint16_t bits and computed in
// float (base/float16.h); since both share uint16_t storage, kernels are
// templated on the ir::DataType rather than on the storage type.
#pragma once

#include <cstdint>
#include <cstring>
#include <new>
#include <type_traits>
#include <vector>

#include "backends/cpu/kernel.h"
#include "vigil/float16.h"

namespace vigil::cpu {

template <ir::DataType D>
struct ElementCodec;

template <>
struct ElementCodec<ir::DataType::kFloat32> {
  using Storage = float;
  using Compute = float;
  static float Load(float v) { return v; }
  static float Store(float v) { return v; }
};

template <>
struct ElementCodec<ir::DataType::kFloat64> {
  using Storage = double;
  using Compute = double;
  static double Load(double v) { return v; }
  static double Store(double v) { return v; }
};

template <>
struct ElementCodec<ir::DataType::kFloat16> {
  using Storage = uint16_t;
  using Compute = float;
  static float Load(uint16_t v) { return Float16ToFloat(v); }
  static uint16_t Store(float v) { return FloatToFloat16(v); }
};

template <>
struct ElementCodec<ir::DataType::kBfloat16> {
  using Storage = uint16_t;
  using Compute = float;
  static float Load(uint16_t v) { return Bfloat16ToFloat(v); }
  static uint16_t Store(float v) { return FloatToBfloat16(v); }
};

// 8-bit integers only appear in MaxPool, which never leaves their range.
template <>
struct ElementCodec<ir::DataType::kInt8> {
  using Storage = int8_t;
  using Compute = float;
  static float Load(int8_t v) { return v; }
  static int8_t Store(float v) { return static_cast<int8_t>(v); }
};

template <>
struct ElementCodec<ir::DataType::kUint8> {
  using Storage = uint8_t;
  using Compute = float;
  static float Load(uint8_t v) { return v; }
  static uint8_t Store(float v) { return static_cast<uint8_t>(v); }
};

// Calls `fn.template operator()<D>()` with D the dtype of input `input`
// when it is float32, float64, float16 or bfloat16; an Unsupported error
// naming the node and dtype otherwise. Use a templated lambda:
//   DispatchFloat(ctx, 0, [&]<ir::DataType D>() -> Status { ... });
template <typename Fn>
Status DispatchFloat(KernelContext& ctx, size_t input, Fn&& fn) {
  switch (ctx.input(input)->dtype()) {
    case ir::DataType::kFloat32: return fn.template operator()<ir::DataType::kFloat32>();
    case ir::DataType::kFloat64: return fn.template operator()<ir::DataType::kFloat64>();
    case ir::DataType::kFloat16: return fn.template operator()<ir::DataType::kFloat16>();
    case ir::DataType::kBfloat16: return fn.template operator()<ir::DataType::kBfloat16>();
    default: return ctx.UnsupportedDtype(input);
  }
}

// DispatchFloat plus int8 and uint8 (MaxPool, GlobalMaxPool).
template <typename Fn>
Status DispatchFloatOrByte(KernelContext& ctx, size_t input, Fn&& fn) {
  switch (ctx.input(input)->dtype()) {
    case ir::DataType::kInt8: return fn.template operator()<ir::DataType::kInt8>();
    case ir::DataType::kUint8: return fn.template operator()<ir::DataType::kUint8>();
    default: return DispatchFloat(ctx, input, std::forward<Fn>(fn));
  }
}

// The values of a small float parameter tensor (scale, bias, mean, ...) as
// double, whatever its float dtype; Unsupported for other dtypes.
inline Result<std::vector<double>> ReadParamAsDoubles(KernelContext& ctx, size_t input) {
  const runtime::Tensor* t = ctx.input(input);
  std::vector<double> out(t->element_count());
  Status st = DispatchFloat(ctx, input, [&]<ir::DataType D>() -> Status {
    using C = ElementCodec<D>;
    using S = typename C::Storage;
    // Initializers mapped from the model file may sit at any offset, so the
    // elements are copied out rather than loaded through a typed pointer.
    const auto* bytes = static_cast<const uint8_t*>(t->raw_data());
    for (size_t i = 0; i < out.size(); ++i) {
      S v;
      std::memcpy(&v, bytes + i * sizeof(S), sizeof(S));
      out[i] = C::Load(v);
    }
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return out;
}

// An InvalidModel error naming the node, for attribute values the op cannot
// take (as opposed to ctx.Fail's InvalidInput for bad run-time data).
template <typename... Args>
Status AttributeError(const KernelContext& ctx, fmt::format_string<Args...> f, Args&&... args) {
  return InvalidModelError("{}: {}", ops::NodeLabel(ctx.node()), fmt::format(f, std::forward<Args>(args)...));
}

// The first `count` inputs, which the op requires, are present.
inline Status RequireInputs(const KernelContext& ctx, size_t count) {
  for (size_t i = 0; i < count; ++i) {
    if (!ctx.has_input(i)) return ctx.Fail("required input {} is missing", i);
  }
  return Status::Ok();
}

// Sizes a scratch buffer; an OutOfMemory error naming the node instead of an
// exception when the allocation fails.
template <typename T>
Status ResizeScratch(const KernelContext& ctx, std::vector<T>& buffer, size_t count) {
  try {
    buffer.resize(count);
  } catch (const std::bad_alloc&) {
    return OutOfMemoryError("{}: cannot allocate {} bytes of scratch memory", ops::NodeLabel(ctx.node()),
                            count * sizeof(T));
  } catch (const std::length_error&) {
    return OutOfMemoryError("{}: cannot allocate {} elements of scratch memory", ops::NodeLabel(ctx.node()), count);
  }
  return Status::Ok();
}

// A tensor's elements in its compute type: the tensor's own buffer when
// storage and compute types agree (float32, float64) and it is aligned, else
// a converted copy in `scratch` (float16, bfloat16 -> float; or a weight
// initializer mapped from the file at an unaligned offset).
template <ir::DataType D>
Result<const typename ElementCodec<D>::Compute*> ComputeView(const KernelContext& ctx, const runtime::Tensor& t,
                                                             std::vector<typename ElementCodec<D>::Compute>& scratch) {
  using C = ElementCodec<D>;
  using S = typename C::Storage;
  const auto* bytes = static_cast<const uint8_t*>(t.raw_data());
  if constexpr (std::is_same_v<S, typename C::Compute>) {
    if (reinterpret_cast<uintptr_t>(bytes) % alignof(S) == 0) return t.data<S>();
  }
  VIGIL_RETURN_IF_ERROR(ResizeScratch(ctx, scratch, t.element_count()));
  for (size_t i = 0; i < scratch.size(); ++i) {
    S v;
    std::memcpy(&v, bytes + i * sizeof(S), sizeof(S));
    scratch[i] = C::Load(v);
  }
  return static_cast<const typename C::Compute*>(scratch.data());
}

}  // namespace vigil::cpu
