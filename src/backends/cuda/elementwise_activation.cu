// CUDA unary math (Abs ... Atanh, Erf, Sign, IsNaN, IsInf, Not), activations
// (Relu, LeakyRelu, ThresholdedRelu, Elu, Selu, Celu, Sigmoid, HardSigmoid,
// HardSwish, Softplus, Softsign, Tanh, Mish, Gelu, Shrink) and Clip, with the
// CPU backend's semantics (backends/cpu/elementwise_unary.cpp and
// elementwise_activation.cpp): the same stable formulas, NaN kept where the
// CPU keeps it, round half to even, Neg/Abs of integers wrapping. float16
// and bfloat16 compute in float; the plain math functions (Exp, Log, Sqrt,
// ...) also take float64, computed in double; Abs, Neg, Sign and Relu also
// take int32/int64 (Relu int8 too), and Clip every integer width and float64.
#include <string>
#include <type_traits>

#include "backends/cuda/elementwise_common.cuh"
#include "vigil/float16.h"
#include "ops/op_params.h"

namespace vigil::cuda::elementwise {
namespace {

// Maps `op` over input 0 into output 0 (same shape; input 0's dtype, or bool
// for kBoolOut). Input 0's dtype must be in kMask.
template <TypeMask kMask, bool kBoolOut = false, typename Op>
Status MapUnary(CudaKernelContext& ctx, Op op, const char* name) {
  const runtime::Tensor* x = ctx.input(0);
  if (!x) return ctx.Fail("input 0 is missing");
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * y, ctx.Output(0));
  if (y->element_count() != x->element_count()) {
    return InternalError("{}: output {} does not match input {}", ops::NodeLabel(ctx.node()), y->Describe(),
                         x->Describe());
  }
  const auto n = static_cast<int64_t>(x->element_count());
  return Dispatch<kMask>(
      x->dtype(),
      [&](auto tag) -> Status {
        using E = Elem<decltype(tag)>;
        using O = std::conditional_t<kBoolOut, Elem<Bool8>, E>;
        return LaunchUnary<E, O>(ctx, x->raw_data(), y->raw_data(), n, op, name);
      },
      [&] { return ctx.Unsupported("dtype {} of input 0", ir::DataTypeName(x->dtype())); });
}

// --- Unary math ------------------------------------------------------------------

struct AbsOp {
  template <typename C>
  __device__ C operator()(C x) const {
    if constexpr (std::is_integral_v<C>) {
      return x < C(0) ? WrapSub(C(0), x) : x;  // the most negative value stays itself
    } else {
      return fabsf(x);
    }
  }
};
struct NegOp {
  template <typename C>
  __device__ C operator()(C x) const { return WrapSub(C(0), x); }  // as the CPU: 0 - x
};
struct SignOp {
  template <typename C>
  __device__ C operator()(C x) const {
    if constexpr (!std::is_integral_v<C>) {
      if (isnan(x)) return x;
    }
    return x > C(0) ? C(1) : (x < C(0) ? C(-1) : C(0));
  }
};
struct ReluOp {
  template <typename C>
  __device__ C operator()(C x) const { return x < C(0) ? C(0) : x; }  // keeps NaN
};
struct NotOp {
  __device__ bool operator()(bool x) const { return !x; }
};
struct IsNaNOp {
  __device__ bool operator()(float x) const { return isnan(x); }
};
struct IsInfOp {
  bool neg, pos;
  __device__ bool operator()(float x) const { return isinf(x) && ((x > 0 && pos) || (x < 0 && neg)); }
};

Status Abs(CudaKernelContext& ctx) { return MapUnary<kArithTypes>(ctx, AbsOp{}, "Abs"); }
Status Neg(CudaKernelContext& ctx) { return MapUnary<kArithTypes>(ctx, NegOp{}, "Neg"); }
Status Sign(CudaKernelContext& ctx) { return MapUnary<kArithTypes>(ctx, SignOp{}, "Sign"); }
// Relu also on int8 (opset 14+): the int8 QDQ path's Relu (ir/fuse_qdq.h).
constexpr TypeMask kReluTypes = kArithTypes | Bit(DataType::kInt8);
Status Relu(CudaKernelContext& ctx) { return MapUnary<kReluTypes>(ctx, ReluOp{}, "Relu"); }
Status Not(CudaKernelContext& ctx) { return MapUnary<kBoolType>(ctx, NotOp{}, "Not"); }
// The float dtypes of the math functions below: float64 as well.
constexpr TypeMask kMathTypes = kFloatTypes | Bit(DataType::kFloat64);

Status IsNaN(CudaKernelContext& ctx) { return MapUnary<kFloatTypes, true>(ctx, IsNaNOp{}, "IsNaN"); }
Status IsInf(CudaKernelContext& ctx) {
  VIGIL_ASSIGN_OR_RETURN(int64_t neg, ops::IntAttr(ctx.node(), "detect_negative", 1));
  VIGIL_ASSIGN_OR_RETURN(int64_t pos, ops::IntAttr(ctx.node(), "detect_positive", 1));
  return MapUnary<kFloatTypes, true>(ctx, IsInfOp{neg != 0, pos != 0}, "IsInf");
}

// Float-only functions of one argument: computed in float for float32,
// float16 and bfloat16, in double for float64 (the CPU computes float64 in
// double too).
#define VIGIL_EW_FLOAT_FN_(Name, expr, dexpr)                                                   \
  struct Name##Op {                                                                          \
    __device__ float operator()(float x) const { return expr; }                              \
    __device__ double operator()(double x) const { return dexpr; }                           \
  };                                                                                         \
  Status Name(CudaKernelContext& ctx) { return MapUnary<kMathTypes>(ctx, Name##Op{}, #Name); }

VIGIL_EW_FLOAT_FN_(Reciprocal, 1.0f / x, 1.0 / x)
VIGIL_EW_FLOAT_FN_(Floor, floorf(x), floor(x))
VIGIL_EW_FLOAT_FN_(Ceil, ceilf(x), ceil(x))
VIGIL_EW_FLOAT_FN_(Round, rintf(x), rint(x))  // round to nearest, halves to even (numpy's round)
VIGIL_EW_FLOAT_FN_(Sqrt, sqrtf(x), sqrt(x))
VIGIL_EW_FLOAT_FN_(Exp, expf(x), exp(x))
VIGIL_EW_FLOAT_FN_(Log, logf(x), log(x))
VIGIL_EW_FLOAT_FN_(Sin, sinf(x), sin(x))
VIGIL_EW_FLOAT_FN_(Cos, cosf(x), cos(x))
VIGIL_EW_FLOAT_FN_(Tan, tanf(x), tan(x))
VIGIL_EW_FLOAT_FN_(Asin, asinf(x), asin(x))
VIGIL_EW_FLOAT_FN_(Acos, acosf(x), acos(x))
VIGIL_EW_FLOAT_FN_(Atan, atanf(x), atan(x))
VIGIL_EW_FLOAT_FN_(Sinh, sinhf(x), sinh(x))
VIGIL_EW_FLOAT_FN_(Cosh, coshf(x), cosh(x))
VIGIL_EW_FLOAT_FN_(Asinh, asinhf(x), asinh(x))
VIGIL_EW_FLOAT_FN_(Acosh, acoshf(x), acosh(x))
VIGIL_EW_FLOAT_FN_(Atanh, atanhf(x), atanh(x))
VIGIL_EW_FLOAT_FN_(Erf, erff(x), erf(x))
VIGIL_EW_FLOAT_FN_(Tanh, tanhf(x), tanh(x))
VIGIL_EW_FLOAT_FN_(Softsign, x / (1.0f + fabsf(x)), x / (1.0 + fabs(x)))
#undef VIGIL_EW_FLOAT_FN_

// --- Activations -------------------------------------------------------------------

__device__ __forceinline__ float StableSigmoid(float x) {
  if (x >= 0) return 1.0f / (1.0f + expf(-x));
  const float e = expf(x);  // no overflow for very negative x
  return e / (1.0f + e);
}
// log(1 + exp(x)) without overflow.
__device__ __forceinline__ float StableSoftplus(float x) {
  if (isnan(x)) return x;
  return (x > 0 ? x : 0.0f) + log1pf(expf(-fabsf(x)));
}
__device__ __forceinline__ float ClampUnit(float y) {  // to [0, 1], keeping NaN
  y = y > 1.0f ? 1.0f : y;
  return y < 0.0f ? 0.0f : y;
}

struct SigmoidOp {
  __device__ float operator()(float x) const { return StableSigmoid(x); }
};
struct SoftplusOp {
  __device__ float operator()(float x) const { return StableSoftplus(x); }
};
struct MishOp {
  __device__ float operator()(float x) const { return x * tanhf(StableSoftplus(x)); }
};
struct HardSwishOp {
  __device__ float operator()(float x) const { return x * ClampUnit(x / 6.0f + 0.5f); }
};
struct LeakyReluOp {
  float alpha;
  __device__ float operator()(float x) const { return x < 0 ? alpha * x : x; }
};
struct ThresholdedReluOp {
  float alpha;
  __device__ float operator()(float x) const { return x > alpha ? x : 0.0f; }  // NaN gives 0
};
struct EluOp {
  float alpha;
  __device__ float operator()(float x) const { return x < 0 ? alpha * expm1f(x) : x; }
};
struct SeluOp {
  float alpha, gamma;
  __device__ float operator()(float x) const { return gamma * (x > 0 ? x : alpha * expm1f(x)); }
};
struct CeluOp {
  float alpha;
  __device__ float operator()(float x) const { return x > 0 ? x : alpha * expm1f(x / alpha); }
};
struct HardSigmoidOp {
  float alpha, beta;
  __device__ float operator()(float x) const { return ClampUnit(alpha * x + beta); }
};
struct GeluOp {
  __device__ float operator()(float x) const { return 0.5f * x * (1.0f + erff(x * 0.70710678118654752440f)); }
};
// Gelu for float16 / bfloat16 outputs: x * Phi(x) with Phi from erfc of
// |x| / sqrt(2) in the form t * P(t) * exp(-z^2), t = 1 / (1 + p z)
// (Abramowitz and Stegun 7.1.26), so that the negative tail keeps its
// relative accuracy: 0.5 * x * (1 + erf) cancels there, to 0 below about
// -5.5 (2 units in the last place in float16 and thousands in bfloat16,
// against the correctly rounded GELU). With the SFU's reciprocal and 2^x,
// about half the instructions of erff, which made the float16 map
// issue-bound (ViT-B/16's Gelu at batch 64: ~65 us against a ~34 us memory
// floor). Checked over every float16 and bfloat16 input
// (CudaElementwise.GeluHalfOverEveryInput): float16 within 1 unit in the last
// place everywhere; bfloat16 too down to x = -6, below which GELU is under
// 1e-8 and A&S's tail error reaches a few units. float32 keeps erff.
struct GeluHalfOp {
  __device__ float operator()(float x) const {
    const float z = fabsf(x) * 0.70710678118654752440f;
    float t;
    asm("rcp.approx.ftz.f32 %0, %1;\n" : "=f"(t) : "f"(fmaf(0.3275911f, z, 1.0f)));
    const float poly =
        t * fmaf(t, fmaf(t, fmaf(t, fmaf(t, 1.061405429f, -1.453152027f), 1.421413741f), -0.284496736f), 0.254829592f);
    float e;
    asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(e) : "f"(-z * z * 1.4426950408889634f));
    const float half_erfc = 0.5f * poly * e;  // Phi(-|x|)
    return x * (x >= 0.0f ? 1.0f - half_erfc : half_erfc);
  }
};
struct GeluTanhOp {
  __device__ float operator()(float x) const {
    const float k = 0.79788456080286535588f;  // sqrt(2/pi)
    return 0.5f * x * (1.0f + tanhf(k * (x + 0.044715f * x * x * x)));
  }
};
struct ShrinkOp {
  float lambd, bias;
  __device__ float operator()(float x) const {
    return x < -lambd ? x + bias : (x > lambd ? x - bias : 0.0f);  // NaN gives 0
  }
};

Status Sigmoid(CudaKernelContext& ctx) { return MapUnary<kFloatTypes>(ctx, SigmoidOp{}, "Sigmoid"); }
Status Softplus(CudaKernelContext& ctx) { return MapUnary<kFloatTypes>(ctx, SoftplusOp{}, "Softplus"); }
Status Mish(CudaKernelContext& ctx) { return MapUnary<kFloatTypes>(ctx, MishOp{}, "Mish"); }
Status HardSwish(CudaKernelContext& ctx) { return MapUnary<kFloatTypes>(ctx, HardSwishOp{}, "HardSwish"); }

Status LeakyRelu(CudaKernelContext& ctx) {
  VIGIL_ASSIGN_OR_RETURN(float alpha, ops::FloatAttr(ctx.node(), "alpha", 0.01f));
  return MapUnary<kFloatTypes>(ctx, LeakyReluOp{alpha}, "LeakyRelu");
}
Status ThresholdedRelu(CudaKernelContext& ctx) {
  VIGIL_ASSIGN_OR_RETURN(float alpha, ops::FloatAttr(ctx.node(), "alpha", 1.0f));
  return MapUnary<kFloatTypes>(ctx, ThresholdedReluOp{alpha}, "ThresholdedRelu");
}
Status Elu(CudaKernelContext& ctx) {
  VIGIL_ASSIGN_OR_RETURN(float alpha, ops::FloatAttr(ctx.node(), "alpha", 1.0f));
  return MapUnary<kFloatTypes>(ctx, EluOp{alpha}, "Elu");
}
Status Selu(CudaKernelContext& ctx) {
  VIGIL_ASSIGN_OR_RETURN(float alpha, ops::FloatAttr(ctx.node(), "alpha", 1.67326319217681884765625f));
  VIGIL_ASSIGN_OR_RETURN(float gamma, ops::FloatAttr(ctx.node(), "gamma", 1.05070102214813232421875f));
  return MapUnary<kFloatTypes>(ctx, SeluOp{alpha, gamma}, "Selu");
}
Status Celu(CudaKernelContext& ctx) {
  VIGIL_ASSIGN_OR_RETURN(float alpha, ops::FloatAttr(ctx.node(), "alpha", 1.0f));
  if (alpha == 0) return ctx.Fail("attribute alpha must not be 0 (Celu divides by it)");
  return MapUnary<kFloatTypes>(ctx, CeluOp{alpha}, "Celu");
}
Status HardSigmoid(CudaKernelContext& ctx) {
  VIGIL_ASSIGN_OR_RETURN(float alpha, ops::FloatAttr(ctx.node(), "alpha", 0.2f));
  VIGIL_ASSIGN_OR_RETURN(float beta, ops::FloatAttr(ctx.node(), "beta", 0.5f));
  return MapUnary<kFloatTypes>(ctx, HardSigmoidOp{alpha, beta}, "HardSigmoid");
}
Status Gelu(CudaKernelContext& ctx) {
  // (Not VIGIL_ASSIGN_OR_RETURN: g++ then warns that the moved string may be
  // uninitialised.)
  Result<std::string> attr = ops::StringAttr(ctx.node(), "approximate", "none");
  if (!attr.ok()) return attr.status();
  const std::string& approximate = *attr;
  if (approximate == "none") {
    const ir::DataType t = ctx.input(0) ? ctx.input(0)->dtype() : ir::DataType::kUndefined;
    constexpr TypeMask kHalfTypes = Bit(ir::DataType::kFloat16) | Bit(ir::DataType::kBfloat16);
    if (t == ir::DataType::kFloat16 || t == ir::DataType::kBfloat16) {
      return MapUnary<kHalfTypes>(ctx, GeluHalfOp{}, "Gelu");  // instantiated for the half types only
    }
    return MapUnary<kFloatTypes>(ctx, GeluOp{}, "Gelu");
  }
  if (approximate == "tanh") return MapUnary<kFloatTypes>(ctx, GeluTanhOp{}, "Gelu");
  return ctx.Fail("attribute approximate is '{}', expected 'none' or 'tanh'", approximate);
}
Status Shrink(CudaKernelContext& ctx) {
  VIGIL_ASSIGN_OR_RETURN(float lambd, ops::FloatAttr(ctx.node(), "lambd", 0.5f));
  VIGIL_ASSIGN_OR_RETURN(float bias, ops::FloatAttr(ctx.node(), "bias", 0.0f));
  return MapUnary<kFloatTypes>(ctx, ShrinkOp{lambd, bias}, "Shrink");
}

// --- Clip ------------------------------------------------------------------------------

// v clamped to [lo, hi], each bound optional; NaN stays NaN and lo > hi gives
// hi everywhere (the CPU's order of the two tests).
template <typename C>
struct ClipOp {
  bool has_lo, has_hi;
  C lo, hi;
  __device__ C operator()(C v) const {
    if (has_lo && v < lo) v = lo;
    if (has_hi && v > hi) v = hi;
    return v;
  }
};

// Clip 6-10: float attributes; an absent one means unbounded.
Status Clip6(CudaKernelContext& ctx) {
  VIGIL_ASSIGN_OR_RETURN(ops::ClipAttrBounds b, ops::ReadClipAttrBounds(ctx.node()));
  const ClipOp<float> op{b.has_lo, b.has_hi, b.lo, b.hi};
  return MapUnary<kFloatTypes>(ctx, op, "Clip");
}

// A host scalar of tag type T as its compute type.
template <typename T>
typename Elem<T>::Compute HostScalar(const runtime::Tensor& t) {
  if constexpr (std::is_same_v<T, __half>) {
    return Float16ToFloat(t.data<uint16_t>()[0]);
  } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    return Bfloat16ToFloat(t.data<uint16_t>()[0]);
  } else {
    return t.data<T>()[0];
  }
}

// Reads Clip 11's optional bound at input i (host-read) into has/value.
template <typename T>
Status ReadClipBound(CudaKernelContext& ctx, size_t i, bool* has, typename Elem<T>::Compute* value) {
  const runtime::Tensor* b = ctx.input(i);
  *has = b != nullptr;
  if (!b) return Status::Ok();
  const char* name = i == 1 ? "min" : "max";
  if (b->dtype() != ctx.input(0)->dtype()) {
    return ctx.Fail("input {} ({}) has dtype {}, input 0 has {}", i, name, ir::DataTypeName(b->dtype()),
                    ir::DataTypeName(ctx.input(0)->dtype()));
  }
  if (b->element_count() != 1) return ctx.Fail("input {} ({}) must be a scalar, got shape {}", i, name, b->Describe());
  if (!b->on_host()) return InternalError("{}: input {} ({}) is not on the host", ops::NodeLabel(ctx.node()), i, name);
  *value = HostScalar<T>(*b);
  return Status::Ok();
}

// Clip 11+: optional scalar inputs min and max, read on the host.
Status Clip11(CudaKernelContext& ctx) {
  const runtime::Tensor* x = ctx.input(0);
  if (!x) return ctx.Fail("input 0 is missing");
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * y, ctx.Output(0));
  if (y->element_count() != x->element_count()) {
    return InternalError("{}: output {} does not match input {}", ops::NodeLabel(ctx.node()), y->Describe(),
                         x->Describe());
  }
  return Dispatch<kWrapTypes>(
      x->dtype(),
      [&](auto tag) -> Status {
        using T = decltype(tag);
        ClipOp<typename Elem<T>::Compute> op{};
        VIGIL_RETURN_IF_ERROR(ReadClipBound<T>(ctx, 1, &op.has_lo, &op.lo));
        VIGIL_RETURN_IF_ERROR(ReadClipBound<T>(ctx, 2, &op.has_hi, &op.hi));
        return LaunchUnary<Elem<T>, Elem<T>>(ctx, x->raw_data(), y->raw_data(),
                                             static_cast<int64_t>(x->element_count()), op, "Clip");
      },
      [&] { return ctx.Unsupported("dtype {} of input 0", ir::DataTypeName(x->dtype())); });
}

// --- Support predicates ------------------------------------------------------------------

bool CeluSupports(const ir::Node& node, const runtime::NodeTypes& types, std::string* why_not) {
  if (!UnarySupports<kFloatTypes>(node, types, why_not)) return false;
  auto alpha = ops::FloatAttr(node, "alpha", 1.0f);
  if (!alpha.ok() || *alpha == 0) return WhyNot(why_not, "attribute alpha is 0 or not a float");
  return true;
}

bool GeluSupports(const ir::Node& node, const runtime::NodeTypes& types, std::string* why_not) {
  if (!UnarySupports<kFloatTypes>(node, types, why_not)) return false;
  auto approximate = ops::StringAttr(node, "approximate", "none");
  if (!approximate.ok() || (*approximate != "none" && *approximate != "tanh")) {
    return WhyNot(why_not, "attribute approximate is not 'none' or 'tanh'");
  }
  return true;
}

bool Clip11Supports(const ir::Node& node, const runtime::NodeTypes& types, std::string* why_not) {
  if (!UnarySupports<kWrapTypes>(node, types, why_not)) return false;
  for (size_t i = 1; i <= 2; ++i) {
    if (HasNodeInput(node, i) && !SameAsInput0(types, i, why_not)) return false;
  }
  return true;
}

constexpr auto kFloatOnly = UnarySupports<kFloatTypes>;
constexpr auto kArith = UnarySupports<kArithTypes>;
constexpr auto kRelu = UnarySupports<kReluTypes>;
constexpr auto kMath = UnarySupports<kMathTypes>;

const CudaKernelDef kActivationKernels[] = {
    {"", "Abs", 6, kLatest, Abs, kArith},
    {"", "Neg", 6, kLatest, Neg, kArith},
    {"", "Sign", 9, kLatest, Sign, kArith},
    {"", "Relu", 6, kLatest, Relu, kRelu},
    {"", "Not", 1, kLatest, Not, UnarySupports<kBoolType>},
    {"", "IsNaN", 9, kLatest, IsNaN, kFloatOnly},
    {"", "IsInf", 10, kLatest, IsInf, kFloatOnly},
    {"", "Reciprocal", 6, kLatest, Reciprocal, kMath},
    {"", "Floor", 6, kLatest, Floor, kMath},
    {"", "Ceil", 6, kLatest, Ceil, kMath},
    {"", "Round", 11, kLatest, Round, kMath},
    {"", "Sqrt", 6, kLatest, Sqrt, kMath},
    {"", "Exp", 6, kLatest, Exp, kMath},
    {"", "Log", 6, kLatest, Log, kMath},
    {"", "Sin", 7, kLatest, Sin, kMath},
    {"", "Cos", 7, kLatest, Cos, kMath},
    {"", "Tan", 7, kLatest, Tan, kMath},
    {"", "Asin", 7, kLatest, Asin, kMath},
    {"", "Acos", 7, kLatest, Acos, kMath},
    {"", "Atan", 7, kLatest, Atan, kMath},
    {"", "Sinh", 9, kLatest, Sinh, kMath},
    {"", "Cosh", 9, kLatest, Cosh, kMath},
    {"", "Asinh", 9, kLatest, Asinh, kMath},
    {"", "Acosh", 9, kLatest, Acosh, kMath},
    {"", "Atanh", 9, kLatest, Atanh, kMath},
    {"", "Erf", 9, kLatest, Erf, kMath},
    {"", "Tanh", 6, kLatest, Tanh, kMath},
    {"", "Sigmoid", 6, kLatest, Sigmoid, kFloatOnly},
    {"", "Softplus", 1, kLatest, Softplus, kFloatOnly},
    {"", "Softsign", 1, kLatest, Softsign, kMath},
    {"", "Mish", 18, kLatest, Mish, kFloatOnly},
    {"", "HardSwish", 14, kLatest, HardSwish, kFloatOnly},
    {"", "LeakyRelu", 6, kLatest, LeakyRelu, kFloatOnly},
    {"", "ThresholdedRelu", 10, kLatest, ThresholdedRelu, kFloatOnly},
    {"", "Elu", 6, kLatest, Elu, kFloatOnly},
    {"", "Selu", 6, kLatest, Selu, kFloatOnly},
    {"", "Celu", 12, kLatest, Celu, CeluSupports},
    {"", "HardSigmoid", 6, kLatest, HardSigmoid, kFloatOnly},
    {"", "Gelu", 20, kLatest, Gelu, GeluSupports},
    {"", "Shrink", 9, kLatest, Shrink, kFloatOnly},
    {"", "Clip", 6, 10, Clip6, kFloatOnly},
    {"", "Clip", 11, kLatest, Clip11, Clip11Supports, HostInput(1) | HostInput(2)},
};

}  // namespace

std::span<const CudaKernelDef> ElementwiseActivationCudaKernels() { return kActivationKernels; }

}  // namespace vigil::cuda::elementwise
