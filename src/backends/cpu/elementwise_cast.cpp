// Cast and CastLike between every pair of supported dtypes (float32/64,
// float16, bfloat16, int8..int64, uint8..uint64, bool). Float to integer
// truncates toward zero; NaN becomes 0 and out-of-range values saturate (C++
// leaves both undefined; numpy's result there is platform-dependent). To
// bool is "!= 0". Narrowing to float16/bfloat16 rounds once, to nearest even.
// BitCast keeps the bits and changes only the dtype.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "backends/cpu/elementwise_kernels.h"

namespace vigil::cpu {
namespace {

// double -> float rounding to odd: truncate toward zero, then set the last
// bit if anything was lost. Rounding that result once more to a format with
// at least two bits fewer (half: 11, bfloat16: 8 of float's 24) gives the
// same answer as rounding the double directly, so double -> float16 does not
// round twice.
float RoundToOddFloat(double d) {
  if (std::isnan(d) || std::isinf(d)) return static_cast<float>(d);
  const double max_float = std::numeric_limits<float>::max();
  if (std::fabs(d) > max_float) return static_cast<float>(std::copysign(max_float, d));  // still overflows later
  float f = static_cast<float>(d);
  if (std::fabs(static_cast<double>(f)) > std::fabs(d)) f = std::nextafter(f, 0.0f);
  if (static_cast<double>(f) != d) {
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    bits |= 1u;
    std::memcpy(&f, &bits, 4);
  }
  return f;
}

// Per-target conversion from a source compute value. Half types go through
// double and the round-to-odd float above; everything else is ConvertValue.
template <typename OutElem, DataType kOut, typename C>
typename OutElem::Storage CastValue(C v) {
  if constexpr (kOut == DataType::kFloat16 || kOut == DataType::kBfloat16) {
    if constexpr (std::is_same_v<C, float> || std::is_same_v<C, bool>) {
      return OutElem::Store(static_cast<float>(v));  // exact in float already
    } else {
      return OutElem::Store(RoundToOddFloat(static_cast<double>(v)));
    }
  } else {
    return OutElem::Store(ConvertValue<typename OutElem::Compute>(v));
  }
}

template <DataType kIn, DataType kOut>
void CastElements(const runtime::Tensor& in, runtime::Tensor& out) {
  using I = Elem<kIn>;
  using O = Elem<kOut>;
  const auto* src = in.data<typename I::Storage>();
  auto* dst = out.data<typename O::Storage>();
  const uint64_t n = in.element_count();
  for (uint64_t i = 0; i < n; ++i) dst[i] = CastValue<O, kOut>(I::Load(src[i]));
}

// Converts input 0 into output 0 of dtype `to`.
Status CastTo(KernelContext& ctx, DataType to) {
  const runtime::Tensor* x = ctx.input(0);
  if (!x) return ctx.Fail("input 0 is missing");
  if (!InMask(kAllTypes, to)) {
    return ctx.Unsupported("cast to {} is not supported by the CPU kernel", ir::DataTypeName(to));
  }
  if (!InMask(kAllTypes, x->dtype())) return ctx.UnsupportedDtype(0);
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * y, ctx.Output(0, to, x->shape()));
  if (to == x->dtype()) {
    if (y->byte_size() > 0) std::memcpy(y->raw_data(), x->raw_data(), y->byte_size());
    return Status::Ok();
  }
  return DispatchDtype<kAllTypes>(
      x->dtype(),
      [&](auto in_tag) -> Status {
        return DispatchDtype<kAllTypes>(
            to,
            [&](auto out_tag) -> Status {
              CastElements<decltype(in_tag)::value, decltype(out_tag)::value>(*x, *y);
              return Status::Ok();
            },
            [&] { return ctx.Unsupported("cast to {} is not supported", ir::DataTypeName(to)); });
      },
      [&] { return ctx.UnsupportedDtype(0); });
}

Status Cast(KernelContext& ctx) {
  VIGIL_ASSIGN_OR_RETURN(int64_t to, ops::RequiredIntAttr(ctx.node(), "to"));
  if (to < 0 || to > std::numeric_limits<int32_t>::max() || !ir::IsKnownDataType(static_cast<int32_t>(to))) {
    return ctx.Fail("attribute to is {}, which is not an ONNX dtype", to);
  }
  return CastTo(ctx, static_cast<DataType>(to));
}

Status CastLike(KernelContext& ctx) {
  const runtime::Tensor* target = ctx.input(1);
  if (!target) return ctx.Fail("input 1 (target_type) is missing");
  return CastTo(ctx, target->dtype());
}

// The input's bytes read as dtype `to` of the same bit width: a view that
// shares the input's storage (little-endian, as the host is).
Status BitCast(KernelContext& ctx) {
  const runtime::Tensor* x = ctx.input(0);
  if (!x) return ctx.Fail("input 0 is missing");
  VIGIL_ASSIGN_OR_RETURN(int64_t to_attr, ops::RequiredIntAttr(ctx.node(), "to"));
  if (to_attr < 0 || to_attr > std::numeric_limits<int32_t>::max() ||
      !ir::IsKnownDataType(static_cast<int32_t>(to_attr))) {
    return ctx.Fail("attribute to is {}, which is not an ONNX dtype that vigil knows", to_attr);
  }
  const auto to = static_cast<DataType>(to_attr);
  if (to == DataType::kString) return ctx.Fail("attribute to is string; BitCast takes no strings");
  if (x->dtype() == DataType::kString) return ctx.Fail("input 0 has dtype string; BitCast takes no strings");
  const int in_bits = ir::DataTypeBits(x->dtype()), out_bits = ir::DataTypeBits(to);
  if (in_bits != out_bits) {
    return ctx.Fail("input 0 ({}) has {}-bit elements but attribute to is {} ({} bits); BitCast needs equal widths",
                    x->Describe(), in_bits, ir::DataTypeName(to), out_bits);
  }
  return ctx.SetOutput(0, runtime::Tensor::Shared(to, x->shape(), const_cast<void*>(x->raw_data()), x->storage()));
}

constexpr KernelDef kCastKernels[] = {
    {"", "Cast", 6, kLatest, Cast},
    {"", "CastLike", 15, kLatest, CastLike},
    {"", "BitCast", 26, kLatest, BitCast},
};

}  // namespace

std::span<const KernelDef> ElementwiseCastKernels() { return kCastKernels; }

}  // namespace vigil::cpu
