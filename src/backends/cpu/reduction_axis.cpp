// CPU kernels of the ops that work along one axis: ArgMax, ArgMin, CumSum,
// CumProd, TopK. Each views its input as [outer, n, inner] around the axis and walks
// the `n` elements of every (outer, inner) line.
#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "backends/cpu/element_types.h"
#include "backends/cpu/reduction_internal.h"
#include "ops/op_params.h"

namespace vigil::cpu {
namespace {

// A tensor viewed as [outer, n, inner] around `axis`.
struct AxisView {
  int64_t outer = 1, n = 1, inner = 1;
};

AxisView ViewAround(const std::vector<int64_t>& shape, int64_t axis) {
  AxisView v;
  for (int64_t i = 0; i < static_cast<int64_t>(shape.size()); ++i) {
    if (i < axis) v.outer *= shape[i];
    else if (i == axis) v.n = shape[i];
    else v.inner *= shape[i];
  }
  return v;
}

Result<int64_t> AxisFrom(const KernelContext& ctx, int64_t axis, size_t rank) {
  return ops::ResolveReductionAxis(ctx.node(), axis, static_cast<int64_t>(rank), ctx.input(0)->Describe());
}

// --- ArgMax / ArgMin ---------------------------------------------------------

// Whether `v` at a later index replaces the current best `best`. NaN wins
// over numbers (numpy's argmax and argmin both return the first NaN; with
// select_last_index, the last).
template <typename T>
bool Replaces(T v, T best, bool is_max, bool last) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(best)) return last && std::isnan(v);
    if (std::isnan(v)) return true;
  }
  if (v == best) return last;
  return is_max ? v > best : v < best;
}

template <DataType D>
Status RunArgReduce(KernelContext& ctx, int64_t axis, bool keepdims, bool last, bool is_max) {
  using E = Elem<D>;
  using T = typename E::Compute;
  const runtime::Tensor& x = *ctx.input(0);
  const AxisView v = ViewAround(x.shape(), axis);
  std::vector<int64_t> out_shape = x.shape();
  if (keepdims) {
    out_shape[axis] = 1;
  } else {
    out_shape.erase(out_shape.begin() + axis);
  }
  if (v.n == 0 && v.outer * v.inner > 0) {
    return ctx.Fail("axis {} of input {} is empty; there is no index to return", axis, x.Describe());
  }
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * y, ctx.Output(0, DataType::kInt64, out_shape));
  const auto* xs = x.data<typename E::Storage>();
  int64_t* out = y->data<int64_t>();
  std::vector<T> best(v.inner);
  for (int64_t o = 0; o < v.outer; ++o) {
    const auto* block = xs + o * v.n * v.inner;
    int64_t* index = out + o * v.inner;
    for (int64_t j = 0; j < v.inner; ++j) {
      best[j] = E::Load(block[j]);
      index[j] = 0;
    }
    for (int64_t i = 1; i < v.n; ++i) {
      const auto* row = block + i * v.inner;
      for (int64_t j = 0; j < v.inner; ++j) {
        T value = E::Load(row[j]);
        if (Replaces(value, best[j], is_max, last)) {
          best[j] = value;
          index[j] = i;
        }
      }
    }
  }
  return Status::Ok();
}

template <bool kIsMax>
Status ArgReduceKernel(KernelContext& ctx) {
  const runtime::Tensor* x = ctx.input(0);
  if (!x) return ctx.Fail("input data is missing");
  VIGIL_ASSIGN_OR_RETURN(int64_t axis_attr, ops::IntAttr(ctx.node(), "axis", 0));
  VIGIL_ASSIGN_OR_RETURN(int64_t keepdims, ops::IntAttr(ctx.node(), "keepdims", 1));
  VIGIL_ASSIGN_OR_RETURN(int64_t last, ops::IntAttr(ctx.node(), "select_last_index", 0));
  VIGIL_ASSIGN_OR_RETURN(int64_t axis, AxisFrom(ctx, axis_attr, x->rank()));
  return DispatchDtype<kNumericTypes>(
      x->dtype(),
      [&](auto tag) { return RunArgReduce<decltype(tag)::value>(ctx, axis, keepdims != 0, last != 0, kIsMax); },
      [&] { return ctx.UnsupportedDtype(0); });
}

// --- CumSum, CumProd -----------------------------------------------------------

// a + b or a * b; integers wrap (computed in uint64, whose result reduced to
// A's width is the wrapped one).
template <bool kProduct, typename A>
A Accumulate(A a, A b) {
  if constexpr (std::is_integral_v<A>) {
    const uint64_t ua = static_cast<uint64_t>(a), ub = static_cast<uint64_t>(b);
    return static_cast<A>(kProduct ? ua * ub : ua + ub);
  } else {
    return kProduct ? a * b : a + b;
  }
}

// Floats accumulate in double, integers in their own type (wrapping). An
// exclusive scan writes the running value before taking the element in, so
// its first output is the identity (0 or 1).
template <DataType D, bool kProduct>
Status RunCumulative(KernelContext& ctx, int64_t axis, bool exclusive, bool reverse) {
  using E = Elem<D>;
  using T = typename E::Compute;
  using A = std::conditional_t<std::is_floating_point_v<T>, double, T>;
  const runtime::Tensor& x = *ctx.input(0);
  const AxisView v = ViewAround(x.shape(), axis);
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * y, ctx.Output(0, x.dtype(), x.shape()));
  const auto* xs = x.data<typename E::Storage>();
  auto* ys = y->data<typename E::Storage>();
  std::vector<A> acc(v.inner);
  for (int64_t o = 0; o < v.outer; ++o) {
    std::fill(acc.begin(), acc.end(), A(kProduct ? 1 : 0));
    for (int64_t step = 0; step < v.n; ++step) {
      const int64_t i = reverse ? v.n - 1 - step : step;
      const int64_t base = (o * v.n + i) * v.inner;
      for (int64_t j = 0; j < v.inner; ++j) {
        const A value = static_cast<A>(E::Load(xs[base + j]));
        if (exclusive) {
          ys[base + j] = E::Store(static_cast<T>(acc[j]));
          acc[j] = Accumulate<kProduct>(acc[j], value);
        } else {
          acc[j] = Accumulate<kProduct>(acc[j], value);
          ys[base + j] = E::Store(static_cast<T>(acc[j]));
        }
      }
    }
  }
  return Status::Ok();
}

// The one value of an integer input that must be a scalar (or hold one value).
Result<int64_t> ScalarInput(const KernelContext& ctx, size_t i, const char* what) {
  const runtime::Tensor* t = ctx.input(i);
  if (!t) return ctx.Fail("input {} is missing", what);
  if (t->element_count() != 1 || t->rank() > 1) {
    return ctx.Fail("input {} is {}; it must hold a single value", what, t->Describe());
  }
  if (t->dtype() == DataType::kInt64) return t->data<int64_t>()[0];
  if (t->dtype() == DataType::kInt32) return static_cast<int64_t>(t->data<int32_t>()[0]);
  return ctx.Fail("input {} has dtype {}; it must be int32 or int64", what, ir::DataTypeName(t->dtype()));
}

template <bool kProduct>
Status CumulativeKernel(KernelContext& ctx) {
  const char* op = kProduct ? "CumProd" : "CumSum";
  const runtime::Tensor* x = ctx.input(0);
  if (!x) return ctx.Fail("input x is missing");
  VIGIL_ASSIGN_OR_RETURN(int64_t axis_value, ScalarInput(ctx, 1, "axis"));
  VIGIL_ASSIGN_OR_RETURN(int64_t exclusive, ops::IntAttr(ctx.node(), "exclusive", 0));
  VIGIL_ASSIGN_OR_RETURN(int64_t reverse, ops::IntAttr(ctx.node(), "reverse", 0));
  if (x->rank() == 0) return ctx.Fail("input x is a scalar; {} needs rank 1 or more", op);
  VIGIL_ASSIGN_OR_RETURN(int64_t axis, AxisFrom(ctx, axis_value, x->rank()));
  return DispatchDtype<kNumericTypes>(
      x->dtype(),
      [&](auto tag) {
        return RunCumulative<decltype(tag)::value, kProduct>(ctx, axis, exclusive != 0, reverse != 0);
      },
      [&] { return ctx.UnsupportedDtype(0); });
}

// --- TopK --------------------------------------------------------------------

// One candidate: its value and its index along the axis.
template <typename T>
struct Candidate {
  T value;
  int64_t index;
};

// The order TopK returns elements in: by value (largest or smallest first),
// ties by lower index. NaN counts as larger than every number, as in numpy's
// sort (the ONNX reference sorts with numpy).
template <typename T>
bool Before(const Candidate<T>& a, const Candidate<T>& b, bool largest) {
  if constexpr (std::is_floating_point_v<T>) {
    const bool a_nan = std::isnan(a.value), b_nan = std::isnan(b.value);
    if (a_nan || b_nan) {
      if (a_nan && b_nan) return a.index < b.index;
      return largest ? a_nan : b_nan;
    }
  }
  if (a.value != b.value) return largest ? a.value > b.value : a.value < b.value;
  return a.index < b.index;
}

template <DataType D>
Status RunTopK(KernelContext& ctx, int64_t axis, int64_t k, bool largest) {
  using E = Elem<D>;
  using T = typename E::Compute;
  const runtime::Tensor& x = *ctx.input(0);
  const AxisView v = ViewAround(x.shape(), axis);
  std::vector<int64_t> out_shape = x.shape();
  out_shape[axis] = k;
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * values, ctx.Output(0, x.dtype(), out_shape));
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * indices, ctx.Output(1, DataType::kInt64, out_shape));
  const auto* xs = x.data<typename E::Storage>();
  auto* vs = values->data<typename E::Storage>();
  int64_t* is = indices->data<int64_t>();
  std::vector<Candidate<T>> line(v.n);
  auto before = [largest](const Candidate<T>& a, const Candidate<T>& b) { return Before(a, b, largest); };
  for (int64_t o = 0; o < v.outer; ++o) {
    for (int64_t j = 0; j < v.inner; ++j) {
      const int64_t in_base = o * v.n * v.inner + j;
      for (int64_t i = 0; i < v.n; ++i) line[i] = {E::Load(xs[in_base + i * v.inner]), i};
      // Always sorted: with sorted=0 the order is unspecified, so sorted is
      // a valid answer too.
      std::partial_sort(line.begin(), line.begin() + k, line.end(), before);
      const int64_t out_base = o * k * v.inner + j;
      for (int64_t i = 0; i < k; ++i) {
        vs[out_base + i * v.inner] = xs[in_base + line[i].index * v.inner];
        is[out_base + i * v.inner] = line[i].index;
      }
    }
  }
  return Status::Ok();
}

Status TopKKernel(KernelContext& ctx) {
  const runtime::Tensor* x = ctx.input(0);
  if (!x) return ctx.Fail("input X is missing");
  int64_t k = 0;
  if (ctx.opset() < 10) {
    VIGIL_ASSIGN_OR_RETURN(k, ops::RequiredIntAttr(ctx.node(), "k"));
  } else {
    VIGIL_ASSIGN_OR_RETURN(k, ScalarInput(ctx, 1, "K"));
  }
  VIGIL_ASSIGN_OR_RETURN(int64_t axis_attr, ops::IntAttr(ctx.node(), "axis", -1));
  VIGIL_ASSIGN_OR_RETURN(int64_t largest, ops::IntAttr(ctx.node(), "largest", 1));
  if (x->rank() == 0) return ctx.Fail("input X is a scalar; TopK needs rank 1 or more");
  VIGIL_ASSIGN_OR_RETURN(int64_t axis, AxisFrom(ctx, axis_attr, x->rank()));
  if (k < 0 || k > x->dim(axis)) {
    return ctx.Fail("k = {} is out of range: axis {} of input {} has {} elements", k, axis, x->Describe(),
                    x->dim(axis));
  }
  return DispatchDtype<kNumericTypes>(
      x->dtype(), [&](auto tag) { return RunTopK<decltype(tag)::value>(ctx, axis, k, largest != 0); },
      [&] { return ctx.UnsupportedDtype(0); });
}

const KernelDef kAxisReductionKernels[] = {
    {"", "ArgMax", 1, kLatest, ArgReduceKernel<true>},
    {"", "ArgMin", 1, kLatest, ArgReduceKernel<false>},
    {"", "CumSum", 11, kLatest, CumulativeKernel<false>},
    {"", "CumProd", 26, kLatest, CumulativeKernel<true>},
    {"", "TopK", 1, kLatest, TopKKernel},
};

}  // namespace

std::span<const KernelDef> AxisReductionKernels() { return kAxisReductionKernels; }

}  // namespace vigil::cpu
