// Kernels that broadcast more than two inputs or one input onto another:
// variadic Max, Min, Sum, Mean; Where (three inputs); PRelu (slope onto X).
#include <array>
#include <cmath>
#include <cstring>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "backends/cpu/elementwise_broadcast.h"

namespace vigil::cpu {
namespace {

// The inputs of a variadic op: all present, all of input 0's dtype; and the
// shape they broadcast to.
Result<std::vector<int64_t>> VariadicShape(KernelContext& ctx) {
  if (ctx.num_inputs() == 0 || !ctx.input(0)) return ctx.Fail("needs at least one input");
  std::vector<const std::vector<int64_t>*> shapes;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    const runtime::Tensor* t = ctx.input(i);
    if (!t) return ctx.Fail("input {} is missing", i);
    if (t->dtype() != ctx.input(0)->dtype()) {
      return ctx.Fail("input {} has dtype {} but input 0 has dtype {}; they must be equal", i,
                      ir::DataTypeName(t->dtype()), ir::DataTypeName(ctx.input(0)->dtype()));
    }
    shapes.push_back(&t->shape());
  }
  auto shape = BroadcastShape(shapes);
  if (!shape) {
    std::string all;
    for (size_t i = 0; i < shapes.size(); ++i) all += (i ? ", " : "") + ShapeString(*shapes[i]);
    return ctx.Fail("cannot broadcast the input shapes {} together", all);
  }
  return std::move(*shape);
}

// Copies `in` broadcast to the output shape `out_shape` (element type T).
template <typename T>
void BroadcastCopy(const std::vector<int64_t>& out_shape, const runtime::Tensor& in, T* out) {
  BroadcastWalk<1> w = PlanBroadcast<1>(out_shape, {&in.shape()});
  const T* src = in.data<T>();
  ForEachBroadcastRun(w, [&](int64_t o, const std::array<int64_t, 1>& off, const std::array<int64_t, 1>& st,
                             int64_t n) {
    if (st[0]) {
      std::memcpy(out + o, src + off[0], static_cast<size_t>(n) * sizeof(T));
    } else {
      std::fill(out + o, out + o + n, src[off[0]]);
    }
  });
}

// out = input 0, then out = op(out, input i) for each further input, each
// broadcast to the common shape; with `mean`, divided by the input count.
template <TypeMask kMask, typename Op>
Status VariadicKernel(KernelContext& ctx, const Op& op, bool mean = false) {
  VIGIL_ASSIGN_OR_RETURN(std::vector<int64_t> shape, VariadicShape(ctx));
  return DispatchDtype<kMask>(
      ctx.input(0)->dtype(),
      [&](auto tag) -> Status {
        using E = Elem<decltype(tag)::value>;
        using S = typename E::Storage;
        VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * out, ctx.Output(0, ctx.input(0)->dtype(), shape));
        S* dst = out->data<S>();
        BroadcastCopy<S>(shape, *ctx.input(0), dst);
        for (size_t i = 1; i < ctx.num_inputs(); ++i) {
          BroadcastWalk<2> w = PlanBroadcast<2>(shape, {&shape, &ctx.input(i)->shape()});
          RunBinary<E, E, E>(w, dst, ctx.input(i)->data<S>(), dst, op);
        }
        if constexpr (std::is_floating_point_v<typename E::Compute>) {
          if (mean) {
            const auto n = static_cast<typename E::Compute>(ctx.num_inputs());
            for (uint64_t j = 0; j < out->element_count(); ++j) dst[j] = E::Store(E::Load(dst[j]) / n);
          }
        }
        return Status::Ok();
      },
      [&] { return ctx.UnsupportedDtype(0); });
}

// numpy's maximum/minimum: a NaN in either operand gives NaN.
template <typename C>
bool IsNan(C v) {
  if constexpr (std::is_floating_point_v<C>) {
    return std::isnan(v);
  } else {
    return false;
  }
}

Status Max(KernelContext& ctx) {
  return VariadicKernel<kNumericTypes>(ctx, [](auto a, auto b) { return IsNan(a) || a >= b ? a : b; });
}
Status Min(KernelContext& ctx) {
  return VariadicKernel<kNumericTypes>(ctx, [](auto a, auto b) { return IsNan(a) || a <= b ? a : b; });
}
Status Sum(KernelContext& ctx) {
  return VariadicKernel<kNumericTypes>(ctx, [](auto a, auto b) { return WrapAdd(a, b); });
}
Status Mean(KernelContext& ctx) {
  return VariadicKernel<kFloatTypes>(ctx, [](auto a, auto b) { return a + b; }, /*mean=*/true);
}

// --- Where ---------------------------------------------------------------------

// Where only moves elements, so it dispatches on the element width.
template <typename T>
void RunWhere(const BroadcastWalk<3>& w, const uint8_t* cond, const T* x, const T* y, T* out) {
  ForEachBroadcastRun(w, [&](int64_t o, const std::array<int64_t, 3>& off, const std::array<int64_t, 3>& st,
                             int64_t n) {
    const uint8_t* c = cond + off[0];
    const T* px = x + off[1];
    const T* py = y + off[2];
    for (int64_t i = 0; i < n; ++i) out[o + i] = c[i * st[0]] != 0 ? px[i * st[1]] : py[i * st[2]];
  });
}

Status Where(KernelContext& ctx) {
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
  const std::vector<int64_t>* shapes[] = {&c->shape(), &x->shape(), &y->shape()};
  auto shape = BroadcastShape(shapes);
  if (!shape) {
    return ctx.Fail("cannot broadcast condition {}, X {} and Y {} together", ShapeString(c->shape()),
                    ShapeString(x->shape()), ShapeString(y->shape()));
  }
  const int bits = ir::DataTypeBits(x->dtype());
  if (bits % 8 != 0 || bits == 0 || bits > 64 || !InMask(kAllTypes, x->dtype())) return ctx.UnsupportedDtype(1);
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * out, ctx.Output(0, x->dtype(), *shape));
  BroadcastWalk<3> w = PlanBroadcast<3>(*shape, {&c->shape(), &x->shape(), &y->shape()});
  const auto* cond = c->data<uint8_t>();
  switch (bits) {
    case 8: RunWhere(w, cond, x->data<uint8_t>(), y->data<uint8_t>(), out->data<uint8_t>()); break;
    case 16: RunWhere(w, cond, x->data<uint16_t>(), y->data<uint16_t>(), out->data<uint16_t>()); break;
    case 32: RunWhere(w, cond, x->data<uint32_t>(), y->data<uint32_t>(), out->data<uint32_t>()); break;
    default: RunWhere(w, cond, x->data<uint64_t>(), y->data<uint64_t>(), out->data<uint64_t>()); break;
  }
  return Status::Ok();
}

// --- PRelu -----------------------------------------------------------------------

// The slope's shape as broadcast onto X. Before opset 7 a 1-D slope is per
// channel (X's dim 1). From 7 the spec wants unidirectional broadcasting;
// like ONNX's reference, a 1-D slope that does not broadcast but matches
// exactly one of X's dims is applied along that dim (old converters emit [C]
// slopes for NCHW inputs).
std::optional<std::vector<int64_t>> PreluSlopeShape(int64_t opset, const std::vector<int64_t>& x,
                                                    const std::vector<int64_t>& s) {
  if (opset < 7 && s.size() == 1 && s[0] != 1 && x.size() >= 2 && x[1] == s[0]) {
    std::vector<int64_t> channel(x.size(), 1);
    channel[1] = s[0];
    return channel;
  }
  auto b = BroadcastShape(x, s);
  if (b && *b == x) return s;
  if (s.size() != 1) return std::nullopt;
  std::vector<int64_t> shaped(x.size(), 1);
  int matches = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    if (x[i] == s[0]) {
      shaped[i] = s[0];
      ++matches;
    }
  }
  if (matches != 1) return std::nullopt;
  return shaped;
}

Status PRelu(KernelContext& ctx) {
  const runtime::Tensor* x = ctx.input(0);
  const runtime::Tensor* slope = ctx.input(1);
  if (!x || !slope) return ctx.Fail("needs two inputs (X, slope)");
  if (x->dtype() != slope->dtype()) {
    return ctx.Fail("input 1 (slope) has dtype {} but input 0 (X) has dtype {}; they must be equal",
                    ir::DataTypeName(slope->dtype()), ir::DataTypeName(x->dtype()));
  }
  auto slope_shape = PreluSlopeShape(ctx.opset(), x->shape(), slope->shape());
  if (!slope_shape) {
    return ctx.Fail("slope of shape {} does not broadcast to X of shape {}", ShapeString(slope->shape()),
                    ShapeString(x->shape()));
  }
  BroadcastWalk<2> w = PlanBroadcast<2>(x->shape(), {&x->shape(), &*slope_shape});
  return DispatchDtype<kNumericTypes>(
      x->dtype(),
      [&](auto tag) -> Status {
        using E = Elem<decltype(tag)::value>;
        using S = typename E::Storage;
        VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * out, ctx.Output(0, x->dtype(), x->shape()));
        RunBinary<E, E, E>(w, x->data<S>(), slope->data<S>(), out->data<S>(),
                           [](auto v, auto a) { return v > 0 ? v : WrapMul(v, a); });
        return Status::Ok();
      },
      [&] { return ctx.UnsupportedDtype(0); });
}

constexpr KernelDef kNaryKernels[] = {
    {"", "Max", 6, kLatest, Max},
    {"", "Min", 6, kLatest, Min},
    {"", "Sum", 6, kLatest, Sum},
    {"", "Mean", 6, kLatest, Mean},
    {"", "Where", 9, kLatest, Where},
    {"", "PRelu", 6, kLatest, PRelu},
};

}  // namespace

std::span<const KernelDef> ElementwiseNaryKernels() { return kNaryKernels; }

}  // namespace vigil::cpu
