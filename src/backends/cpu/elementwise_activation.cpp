// Activation kernels (Relu, LeakyRelu, Elu, Selu, Celu, Sigmoid, HardSigmoid,
// HardSwish, Swish, SwiGLU, Softplus, Softsign, Tanh, Gelu, Mish,
// ThresholdedRelu, Shrink), the fused ai.vigil.Silu and HardSwishChain,
// Clip and Identity. Where the spec's formula overflows or loses precision in
// a naive form (Sigmoid, Softplus, Elu near 0), a stable equivalent is used.
// NaN inputs give NaN outputs, as numpy's reference does.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <type_traits>

#include "backends/cpu/element_codec.h"
#include "ir/fuse_hardswish.h"
#include "ir/fuse_silu.h"
#include "ir/layout_nhwc.h"  // kVigilDomain
#include "backends/cpu/elementwise_kernels.h"
#include "backends/cpu/parallel.h"
#include "backends/cpu/fast/fast_kernels.h"
#include "ops/op_params.h"

namespace vigil::cpu {
namespace {

Status Relu(KernelContext& ctx) {
  // `x < 0 ? 0 : x` rather than max(x, 0): keeps NaN.
  return MapUnary<kSignedTypes>(ctx, [](auto x) { return x < 0 ? decltype(x)(0) : x; });
}

Status LeakyRelu(KernelContext& ctx) {
  VIGIL_ASSIGN_OR_RETURN(float alpha, ops::FloatAttr(ctx.node(), "alpha", 0.01f));
  return MapUnary<kFloatTypes>(ctx, [alpha](auto x) { return x < 0 ? decltype(x)(alpha) * x : x; });
}

Status ThresholdedRelu(KernelContext& ctx) {
  VIGIL_ASSIGN_OR_RETURN(float alpha, ops::FloatAttr(ctx.node(), "alpha", 1.0f));
  return MapUnary<kFloatTypes>(ctx, [alpha](auto x) {
    using C = decltype(x);
    return x > C(alpha) ? x : C(0);  // NaN gives 0, as in the reference
  });
}

Status Elu(KernelContext& ctx) {
  VIGIL_ASSIGN_OR_RETURN(float alpha, ops::FloatAttr(ctx.node(), "alpha", 1.0f));
  return MapUnary<kFloatTypes>(ctx, [alpha](auto x) { return x < 0 ? decltype(x)(alpha) * std::expm1(x) : x; });
}

Status Selu(KernelContext& ctx) {
  VIGIL_ASSIGN_OR_RETURN(float alpha, ops::FloatAttr(ctx.node(), "alpha", 1.67326319217681884765625f));
  VIGIL_ASSIGN_OR_RETURN(float gamma, ops::FloatAttr(ctx.node(), "gamma", 1.05070102214813232421875f));
  return MapUnary<kFloatTypes>(ctx, [alpha, gamma](auto x) {
    using C = decltype(x);
    return C(gamma) * (x > 0 ? x : C(alpha) * std::expm1(x));
  });
}

Status Celu(KernelContext& ctx) {
  VIGIL_ASSIGN_OR_RETURN(float alpha, ops::FloatAttr(ctx.node(), "alpha", 1.0f));
  if (alpha == 0) return ctx.Fail("attribute alpha must not be 0 (Celu divides by it)");
  // max(0,x) + min(0, alpha*(exp(x/alpha)-1)) is one branch or the other for
  // alpha > 0; written as two branches it also keeps NaN.
  return MapUnary<kFloatTypes>(ctx, [alpha](auto x) {
    using C = decltype(x);
    return x > 0 ? x : C(alpha) * std::expm1(x / C(alpha));
  });
}

// 1 / (1 + exp(-x)) for x >= 0 and exp(x) / (1 + exp(x)) below, so that exp
// never overflows; written as one exp(-|x|) and a select of the numerator, so
// that the sign of x (random in real activations) costs no branch, with the
// same roundings as the two-branch form.
template <typename C>
C StableSigmoid(C x) {
  const C e = std::exp(-std::abs(x));
  return (x >= 0 ? C(1) : e) / (C(1) + e);
}

Status Sigmoid(KernelContext& ctx) {
  VIGIL_ASSIGN_OR_RETURN(bool done, MapFloat32Optimised(ctx, fast::SigmoidFloat));
  if (done) return Status::Ok();
  return MapUnary<kFloatTypes>(ctx, [](auto v) { return StableSigmoid(v); });
}

template <typename C>
C ClampUnit(C y) {  // to [0, 1], keeping NaN
  y = y > C(1) ? C(1) : y;
  return y < C(0) ? C(0) : y;
}

Status HardSigmoid(KernelContext& ctx) {
  VIGIL_ASSIGN_OR_RETURN(float alpha, ops::FloatAttr(ctx.node(), "alpha", 0.2f));
  VIGIL_ASSIGN_OR_RETURN(float beta, ops::FloatAttr(ctx.node(), "beta", 0.5f));
  return MapUnary<kFloatTypes>(ctx, [alpha, beta](auto x) {
    using C = decltype(x);
    return ClampUnit(C(alpha) * x + C(beta));
  });
}

Status HardSwish(KernelContext& ctx) {
  return MapUnary<kFloatTypes>(ctx, [](auto x) {
    using C = decltype(x);
    return x * ClampUnit(x / C(6) + C(0.5));
  });
}

// x * sigmoid(alpha * x).
Status Swish(KernelContext& ctx) {
  VIGIL_ASSIGN_OR_RETURN(float alpha, ops::FloatAttr(ctx.node(), "alpha", 1.0f));
  return MapUnary<kFloatTypes>(ctx, [alpha](auto x) {
    using C = decltype(x);
    return x * StableSigmoid(C(alpha) * x);
  });
}

// ai.vigil.Silu (ir/fuse_silu.h): x * Sigmoid(x), the sigmoid rounded to
// the dtype first, so that it equals the Sigmoid and Mul it replaces bit for
// bit, on the reference code and on the optimised one (float32: the
// vectorised sigmoid and the product in one pass, fast::SiluFloat).
Status Silu(KernelContext& ctx) {
  VIGIL_RETURN_IF_ERROR(RequireInputs(ctx, 1));
  VIGIL_ASSIGN_OR_RETURN(bool done, MapFloat32Optimised(ctx, fast::SiluFloat));
  if (done) return Status::Ok();
  const runtime::Tensor& x = *ctx.input(0);
  return DispatchFloat(ctx, 0, [&]<ir::DataType D>() -> Status {
    using C = ElementCodec<D>;
    VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * y, ctx.Output(0, x.dtype(), x.shape()));
    const auto* xs = x.data<typename C::Storage>();
    auto* ys = y->data<typename C::Storage>();
    for (size_t i = 0; i < x.element_count(); ++i) {
      const typename C::Compute v = C::Load(xs[i]);
      const typename C::Compute s = C::Load(C::Store(StableSigmoid(v)));
      ys[i] = C::Store(v * s);
    }
    return Status::Ok();
  });
}

// ai.vigil.HardSwishChain (ir/fuse_hardswish.h): (x * Clip(x + add, min,
// max)) / div, each step rounded to the dtype as the Add, Clip, Mul and Div
// it replaces round it (Clip as Clip11: NaN stays), so that it equals them
// bit for bit; one pass instead of four, on the OpenMP pool where optimised.
Status HardSwishChain(KernelContext& ctx) {
  VIGIL_RETURN_IF_ERROR(RequireInputs(ctx, 1));
  const ir::Node& n = ctx.node();
  VIGIL_ASSIGN_OR_RETURN(float add, ops::FloatAttr(n, "add", 3.0f));
  VIGIL_ASSIGN_OR_RETURN(float lo, ops::FloatAttr(n, "min", 0.0f));
  VIGIL_ASSIGN_OR_RETURN(float hi, ops::FloatAttr(n, "max", 6.0f));
  VIGIL_ASSIGN_OR_RETURN(float div, ops::FloatAttr(n, "div", 6.0f));
  const runtime::Tensor& x = *ctx.input(0);
  return DispatchFloat(ctx, 0, [&]<ir::DataType D>() -> Status {
    using C = ElementCodec<D>;
    using V = typename C::Compute;
    VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * y, ctx.Output(0, x.dtype(), x.shape()));
    const auto* xs = x.data<typename C::Storage>();
    auto* ys = y->data<typename C::Storage>();
    const V k = V(add), l = V(lo), h = V(hi), d = V(div);
    auto chunk = [&](int64_t begin, int64_t end) {
      ForEachIndexBlocked(end - begin, [&](int64_t i) {
        const V v = C::Load(xs[begin + i]);
        V c = C::Load(C::Store(v + k));
        c = c < l ? l : c;
        c = c > h ? h : c;
        ys[begin + i] = C::Store(C::Load(C::Store(v * c)) / d);
      });
    };
    const auto count = static_cast<int64_t>(x.element_count());
    if (ctx.optimised()) {
      ParallelFor(count, kParallelGrain, chunk);
    } else if (count > 0) {
      chunk(0, count);
    }
    return Status::Ok();
  });
}

// SwiGLU: Swish(A) * B, elementwise over two tensors of one shape and dtype
// (no broadcasting), computed in float (double for float64).
Status SwiGLU(KernelContext& ctx) {
  if (!ctx.has_input(0) || !ctx.has_input(1)) return ctx.Fail("SwiGLU needs inputs A and B");
  const runtime::Tensor& a = *ctx.input(0);
  const runtime::Tensor& b = *ctx.input(1);
  if (a.dtype() != b.dtype() || a.shape() != b.shape()) {
    return ctx.Fail("inputs A {} and B {} differ; SwiGLU needs one dtype and one shape (no broadcasting)",
                    a.Describe(), b.Describe());
  }
  VIGIL_ASSIGN_OR_RETURN(float alpha, ops::FloatAttr(ctx.node(), "alpha", 1.0f));
  return DispatchFloat(ctx, 0, [&]<DataType D>() -> Status {
    using Codec = ElementCodec<D>;
    using C = typename Codec::Compute;
    VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * y, ctx.Output(0, a.dtype(), a.shape()));
    const auto* as = a.data<typename Codec::Storage>();
    const auto* bs = b.data<typename Codec::Storage>();
    auto* ys = y->data<typename Codec::Storage>();
    for (uint64_t i = 0; i < a.element_count(); ++i) {
      const C x = Codec::Load(as[i]);
      ys[i] = Codec::Store(x * StableSigmoid(C(alpha) * x) * Codec::Load(bs[i]));
    }
    return Status::Ok();
  });
}

// log(1 + exp(x)) without overflow: max(x, 0) + log1p(exp(-|x|)).
template <typename C>
C StableSoftplus(C x) {
  if (std::isnan(x)) return x;
  return (x > 0 ? x : C(0)) + std::log1p(std::exp(-std::fabs(x)));
}

Status Softplus(KernelContext& ctx) {
  return MapUnary<kFloatTypes>(ctx, [](auto x) { return StableSoftplus(x); });
}

Status Softsign(KernelContext& ctx) {
  return MapUnary<kFloatTypes>(ctx, [](auto x) { return x / (decltype(x)(1) + std::fabs(x)); });
}

Status Tanh(KernelContext& ctx) {
  return MapUnary<kFloatTypes>(ctx, [](auto x) { return std::tanh(x); });
}

Status Mish(KernelContext& ctx) {
  return MapUnary<kFloatTypes>(ctx, [](auto x) { return x * std::tanh(StableSoftplus(x)); });
}

Status Gelu(KernelContext& ctx) {
  VIGIL_ASSIGN_OR_RETURN(std::string approximate, ops::StringAttr(ctx.node(), "approximate", "none"));
  if (approximate == "none") {
    VIGIL_ASSIGN_OR_RETURN(bool done, MapFloat32Optimised(ctx, fast::GeluFloat));
    if (done) return Status::Ok();
    return MapUnary<kFloatTypes>(ctx, [](auto x) {
      using C = decltype(x);
      return C(0.5) * x * (C(1) + std::erf(x * C(0.70710678118654752440)));
    });
  }
  if (approximate == "tanh") {
    return MapUnary<kFloatTypes>(ctx, [](auto x) {
      using C = decltype(x);
      const C k = C(0.79788456080286535588);  // sqrt(2/pi)
      return C(0.5) * x * (C(1) + std::tanh(k * (x + C(0.044715) * x * x * x)));
    });
  }
  return ctx.Fail("attribute approximate is '{}', expected 'none' or 'tanh'", approximate);
}

// Shrink takes every numeric type; integers compute in double and convert
// back (truncating, saturating) so that a fractional bias behaves as numpy's
// `(x - bias).astype(x.dtype)`.
Status Shrink(KernelContext& ctx) {
  VIGIL_ASSIGN_OR_RETURN(float lambd, ops::FloatAttr(ctx.node(), "lambd", 0.5f));
  VIGIL_ASSIGN_OR_RETURN(float bias, ops::FloatAttr(ctx.node(), "bias", 0.0f));
  return MapUnary<kNumericTypes>(ctx, [lambd, bias](auto x) {
    using C = decltype(x);
    using W = std::conditional_t<std::is_integral_v<C>, double, C>;
    W v = static_cast<W>(x);
    W y = v < -W(lambd) ? v + W(bias) : (v > W(lambd) ? v - W(bias) : W(0));  // NaN gives 0, as in the reference
    return ConvertValue<C>(y);
  });
}

// --- Clip --------------------------------------------------------------------

// v clamped to [lo, hi] where each bound is optional; NaN stays NaN, and
// lo > hi gives hi everywhere, as the spec says.
// An absent bound is the dtype's extreme (infinite for floats), so that the
// two selects need no test of has_lo/has_hi per element and compile to
// vector min/max-like code.
template <typename C>
struct ClipOp {
  C lo, hi;
  ClipOp(bool has_lo, bool has_hi, C lo_value, C hi_value)
      : lo(has_lo ? lo_value : Lowest()), hi(has_hi ? hi_value : Highest()) {}
  static C Lowest() {
    return std::numeric_limits<C>::has_infinity ? -std::numeric_limits<C>::infinity()
                                                : std::numeric_limits<C>::lowest();
  }
  static C Highest() {
    return std::numeric_limits<C>::has_infinity ? std::numeric_limits<C>::infinity() : std::numeric_limits<C>::max();
  }
  C operator()(C v) const {
    v = v < lo ? lo : v;
    return v > hi ? hi : v;
  }
};

// Clip 6-10: bounds are float attributes; absent ones mean "unbounded" (the
// spec's defaults are +-FLT_MAX, which would wrongly clamp large doubles).
Status Clip6(KernelContext& ctx) {
  VIGIL_ASSIGN_OR_RETURN(ops::ClipAttrBounds b, ops::ReadClipAttrBounds(ctx.node()));
  const runtime::Tensor* x = ctx.input(0);
  if (!x) return ctx.Fail("input 0 is missing");
  return DispatchDtype<kFloatTypes>(
      x->dtype(),
      [&](auto tag) -> Status {
        using E = Elem<decltype(tag)::value>;
        using C = typename E::Compute;
        return MapTyped<E, E>(ctx, x->dtype(), ClipOp<C>(b.has_lo, b.has_hi, C(b.lo), C(b.hi)));
      },
      [&] { return ctx.UnsupportedDtype(0); });
}

// Reads the optional scalar bound at input `i` (Clip 11+) into `value`.
template <typename E>
Status ReadClipBound(KernelContext& ctx, size_t i, bool* present, typename E::Compute* value) {
  const runtime::Tensor* b = ctx.input(i);
  *present = b != nullptr;
  if (!b) return Status::Ok();
  const char* name = i == 1 ? "min" : "max";
  if (b->dtype() != ctx.input(0)->dtype()) {
    return ctx.Fail("input {} ({}) has dtype {}, input 0 has {}", i, name, ir::DataTypeName(b->dtype()),
                    ir::DataTypeName(ctx.input(0)->dtype()));
  }
  if (b->element_count() != 1) {
    return ctx.Fail("input {} ({}) must be a scalar, got shape {}", i, name, b->Describe());
  }
  *value = E::Load(b->data<typename E::Storage>()[0]);
  return Status::Ok();
}

Status Clip11(KernelContext& ctx) {
  const runtime::Tensor* x = ctx.input(0);
  if (!x) return ctx.Fail("input 0 is missing");
  return DispatchDtype<kNumericTypes>(
      x->dtype(),
      [&](auto tag) -> Status {
        using E = Elem<decltype(tag)::value>;
        using C = typename E::Compute;
        bool has_lo = false, has_hi = false;
        C lo{}, hi{};
        VIGIL_RETURN_IF_ERROR(ReadClipBound<E>(ctx, 1, &has_lo, &lo));
        VIGIL_RETURN_IF_ERROR(ReadClipBound<E>(ctx, 2, &has_hi, &hi));
        return MapTyped<E, E>(ctx, x->dtype(), ClipOp<C>(has_lo, has_hi, lo, hi));
      },
      [&] { return ctx.UnsupportedDtype(0); });
}

// Identity hands its input on as a view: no copy. The runtime never writes
// into a kernel's input, so sharing the storage is safe.
Status Identity(KernelContext& ctx) {
  const runtime::Tensor* x = ctx.input(0);
  if (!x) return ctx.Fail("input 0 is missing");
  return ctx.SetOutput(0, *x);
}

constexpr KernelDef kActivationKernels[] = {
    {"", "Relu", 6, kLatest, Relu},
    {"", "LeakyRelu", 6, kLatest, LeakyRelu},
    {"", "ThresholdedRelu", 10, kLatest, ThresholdedRelu},
    {"", "Elu", 6, kLatest, Elu},
    {"", "Selu", 6, kLatest, Selu},
    {"", "Celu", 12, kLatest, Celu},
    {"", "Sigmoid", 6, kLatest, Sigmoid},
    {"", "HardSigmoid", 6, kLatest, HardSigmoid},
    {"", "HardSwish", 14, kLatest, HardSwish},
    {"", "Swish", 24, kLatest, Swish},
    {ir::kVigilDomain, ir::kSiluOp, 1, kLatest, Silu},
    {ir::kVigilDomain, ir::kHardSwishChainOp, 1, kLatest, HardSwishChain},
    {"", "Softplus", 1, kLatest, Softplus},
    {"", "Softsign", 1, kLatest, Softsign},
    {"", "Tanh", 6, kLatest, Tanh},
    {"", "Mish", 18, kLatest, Mish},
    {"", "Gelu", 20, kLatest, Gelu},
    {"", "Shrink", 9, kLatest, Shrink},
    {"", "SwiGLU", 28, kLatest, SwiGLU},
    {"", "Clip", 6, 10, Clip6},
    {"", "Clip", 11, kLatest, Clip11},
    {"", "Identity", 1, kLatest, Identity},
};

}  // namespace

std::span<const KernelDef> ElementwiseActivationKernels() { return kActivationKernels; }

}  // namespace vigil::cpu
