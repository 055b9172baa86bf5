// CPU kernels of the Reduce* ops; ArgMax/ArgMin, CumSum, CumProd and TopK are in
// reduction_axis.cpp. Every Reduce* op is one walk over the input in memory
// order that folds each element into its output element's accumulator:
//   ReduceX = finish(fold(combine, pre(x) for x in the reduced set))
// e.g. ReduceL2 = sqrt(sum(x*x)), ReduceLogSumExp = log(sum(exp(x - m))) + m.
// Reducing an empty set leaves the accumulator at combine's identity, which
// gives the values ONNX specifies: 0 for sums, 1 for products, -inf (or the
// type's lowest value) for max, +inf (or its highest) for min, NaN for the
// mean of floats, -inf for the log-sums. With noop_with_empty_axes and no axes,
// every set is one element and only pre/finish apply (ReduceSumSquare squares).
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "backends/cpu/element_types.h"
#include "backends/cpu/kernel.h"
#include "backends/cpu/reduction_internal.h"
#include "ops/op_params.h"
#include "backends/cpu/kernel_families.h"

namespace vigil::cpu {
namespace {

enum class ReduceKind { kSum, kMean, kProd, kMax, kMin, kL1, kL2, kSumSquare, kLogSum, kLogSumExp };

// Which dims are reduced: from the `axes` attribute (older opsets) or input 1,
// with noop_with_empty_axes deciding what no axes means.
Result<std::vector<bool>> ReducedDims(const KernelContext& ctx, int64_t rank, bool axes_from_input) {
  std::vector<int64_t> axes;
  const runtime::Tensor* t = axes_from_input ? ctx.input(1) : nullptr;
  if (t) {
    if (t->dtype() != ir::DataType::kInt64 || t->rank() > 1) {
      return ctx.Fail("input axes is {}; it must be a 1-D int64 tensor", t->Describe());
    }
    const int64_t* v = t->data<int64_t>();
    axes.assign(v, v + t->element_count());
  }
  // The resolution itself is shared with the other backends (ops/op_params.h).
  return ops::ResolveReducedDims(ctx.node(), rank, axes_from_input, t ? &axes : nullptr, ctx.input(0)->Describe());
}

// How input elements map to output elements: dims merged where adjacent dims
// are both reduced or both kept (size-1 dims dropped), so the walk is a loop
// over runs of the innermost merged dim.
struct ReduceLayout {
  std::vector<int64_t> out_shape;
  std::vector<int64_t> sizes;        // merged dims, outermost first, never empty
  std::vector<int64_t> out_strides;  // per merged dim; 0 where reduced
  bool inner_reduced = false;        // whether the innermost merged dim is reduced
  int64_t in_count = 1;
  int64_t out_count = 1;
  int64_t group = 1;                 // input elements per output element
};

ReduceLayout PlanReduce(const std::vector<int64_t>& shape, const std::vector<bool>& reduced, bool keepdims) {
  ReduceLayout l;
  std::vector<bool> merged_reduced;
  for (size_t i = 0; i < shape.size(); ++i) {
    l.in_count *= shape[i];
    if (reduced[i]) {
      l.group *= shape[i];
      if (keepdims) l.out_shape.push_back(1);
    } else {
      l.out_count *= shape[i];
      l.out_shape.push_back(shape[i]);
    }
    if (shape[i] == 1) continue;
    if (!l.sizes.empty() && merged_reduced.back() == reduced[i]) {
      l.sizes.back() *= shape[i];
    } else {
      l.sizes.push_back(shape[i]);
      merged_reduced.push_back(reduced[i]);
    }
  }
  if (l.sizes.empty()) {
    l.sizes.push_back(1);
    merged_reduced.push_back(false);
  }
  l.out_strides.resize(l.sizes.size());
  int64_t stride = 1;
  for (size_t i = l.sizes.size(); i-- > 0;) {
    l.out_strides[i] = merged_reduced[i] ? 0 : stride;
    if (!merged_reduced[i]) stride *= l.sizes[i];
  }
  l.inner_reduced = merged_reduced.back();
  return l;
}

// Calls run(in_offset, out_offset) for every run of the innermost merged dim.
template <typename RunFn>
void ForEachRun(const ReduceLayout& l, const RunFn& run) {
  if (l.in_count == 0) return;
  const size_t outer = l.sizes.size() - 1;
  const int64_t inner = l.sizes.back();
  std::vector<int64_t> index(outer, 0);
  int64_t out = 0;
  for (int64_t in = 0; in < l.in_count; in += inner) {
    run(in, out);
    for (size_t d = outer; d-- > 0;) {  // odometer step
      if (++index[d] < l.sizes[d]) {
        out += l.out_strides[d];
        break;
      }
      out -= l.out_strides[d] * (l.sizes[d] - 1);
      index[d] = 0;
    }
  }
}

// acc[o] = combine(acc[o], pre(x, o)) for every input element x and its
// output element o.
template <typename S, typename A, typename Pre, typename Combine>
void Fold(const ReduceLayout& l, const S* x, std::vector<A>& acc, const Pre& pre, const Combine& combine) {
  const int64_t inner = l.sizes.back();
  A* a = acc.data();
  ForEachRun(l, [&](int64_t in, int64_t out) {
    const S* row = x + in;
    if (l.inner_reduced) {
      A v = a[out];
      for (int64_t j = 0; j < inner; ++j) v = combine(v, pre(row[j], out));
      a[out] = v;
    } else {
      for (int64_t j = 0; j < inner; ++j) a[out + j] = combine(a[out + j], pre(row[j], out + j));
    }
  });
}

// Max/Min: NaN wins, as numpy's maximum/minimum propagate it.
template <typename A>
A MaxOf(A acc, A v) {
  if constexpr (std::is_floating_point_v<A>) {
    if (std::isnan(v)) return v;
  }
  return v > acc ? v : acc;
}
template <typename A>
A MinOf(A acc, A v) {
  if constexpr (std::is_floating_point_v<A>) {
    if (std::isnan(v)) return v;
  }
  return v < acc ? v : acc;
}

template <typename A>
A Lowest() {
  if constexpr (std::is_floating_point_v<A>) return -std::numeric_limits<A>::infinity();
  return std::numeric_limits<A>::lowest();
}
template <typename A>
A Highest() {
  if constexpr (std::is_floating_point_v<A>) return std::numeric_limits<A>::infinity();
  return std::numeric_limits<A>::max();
}

// Max and Min of any numeric type or bool (False < True), in the element's
// compute type widened to double for floats.
template <DataType D>
Status ReduceMaxMin(KernelContext& ctx, const ReduceLayout& l, bool is_max) {
  using E = Elem<D>;
  using T = typename E::Compute;
  // bool folds as 0/1 bytes (std::vector<bool> has no data()).
  using A = std::conditional_t<std::is_floating_point_v<T>, double,
                               std::conditional_t<std::is_same_v<T, bool>, uint8_t, T>>;
  const runtime::Tensor& x = *ctx.input(0);
  std::vector<A> acc(l.out_count, is_max ? Lowest<A>() : Highest<A>());
  auto pre = [](typename E::Storage s, int64_t) { return static_cast<A>(E::Load(s)); };
  if (is_max) {
    Fold(l, x.data<typename E::Storage>(), acc, pre, MaxOf<A>);
  } else {
    Fold(l, x.data<typename E::Storage>(), acc, pre, MinOf<A>);
  }
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * y, ctx.Output(0, x.dtype(), l.out_shape));
  auto* out = y->data<typename E::Storage>();
  for (int64_t i = 0; i < l.out_count; ++i) out[i] = E::Store(static_cast<T>(acc[i]));
  return Status::Ok();
}

// Integer sums and products wrap like numpy's (signed overflow is undefined
// in C++, so the arithmetic is done unsigned).
template <typename A>
A Plus(A a, A b) {
  if constexpr (std::is_integral_v<A>) {
    return static_cast<A>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
  } else {
    return a + b;
  }
}
template <typename A>
A Times(A a, A b) {
  if constexpr (std::is_integral_v<A>) {
    return static_cast<A>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
  } else {
    return a * b;
  }
}
template <typename A>
A Magnitude(A v) {
  if constexpr (std::is_unsigned_v<A>) {
    return v;
  } else {
    return v < 0 ? Times<A>(v, A(-1)) : v;
  }
}

// sum / count, truncating like numpy's integer mean; the mean of an empty
// set of integers is undefined, and 0 here.
template <typename A>
A IntegerMean(A sum, int64_t count) {
  if (count == 0) return A(0);
  if constexpr (std::is_signed_v<A>) {
    return static_cast<A>(static_cast<int64_t>(sum) / count);
  } else {
    return static_cast<A>(static_cast<uint64_t>(sum) / static_cast<uint64_t>(count));
  }
}

// The arithmetic reductions. Floats accumulate in double; integers in their
// own type, wrapping.
template <DataType D>
Status ReduceArithmetic(KernelContext& ctx, const ReduceLayout& l, ReduceKind kind) {
  using E = Elem<D>;
  using S = typename E::Storage;
  using T = typename E::Compute;
  constexpr bool kFloat = std::is_floating_point_v<T>;
  using A = std::conditional_t<kFloat, double, T>;
  if (!kFloat && (kind == ReduceKind::kLogSum || kind == ReduceKind::kLogSumExp)) return ctx.UnsupportedDtype(0);
  const runtime::Tensor& x = *ctx.input(0);
  const S* xs = x.data<S>();
  auto load = [](S s) { return static_cast<A>(E::Load(s)); };
  std::vector<A> acc(l.out_count, kind == ReduceKind::kProd ? A(1) : A(0));
  std::vector<double> shift;  // LogSumExp: per output, subtracted before exp
  switch (kind) {
    case ReduceKind::kProd:
      Fold(l, xs, acc, [&](S s, int64_t) { return load(s); }, Times<A>);
      break;
    case ReduceKind::kL1:
      Fold(l, xs, acc, [&](S s, int64_t) { return Magnitude(load(s)); }, Plus<A>);
      break;
    case ReduceKind::kL2:
    case ReduceKind::kSumSquare:
      Fold(l, xs, acc, [&](S s, int64_t) { return Times(load(s), load(s)); }, Plus<A>);
      break;
    case ReduceKind::kLogSumExp:
      if constexpr (kFloat) {
        // Shift by the largest finite value so exp cannot overflow; infinite
        // values pass through exp as they are.
        shift.assign(l.out_count, -std::numeric_limits<double>::infinity());
        Fold(
            l, xs, shift,
            [&](S s, int64_t) {
              double v = load(s);
              return std::isfinite(v) ? v : -std::numeric_limits<double>::infinity();
            },
            MaxOf<double>);
        for (double& m : shift) m = std::isfinite(m) ? m : 0.0;
        Fold(l, xs, acc, [&](S s, int64_t o) { return std::exp(load(s) - shift[o]); }, Plus<A>);
      }
      break;
    default:  // Sum, Mean, LogSum
      Fold(l, xs, acc, [&](S s, int64_t) { return load(s); }, Plus<A>);
      break;
  }
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * y, ctx.Output(0, x.dtype(), l.out_shape));
  S* out = y->data<S>();
  for (int64_t i = 0; i < l.out_count; ++i) {
    A v = acc[i];
    if constexpr (kFloat) {
      if (kind == ReduceKind::kMean) v /= static_cast<double>(l.group);  // 0/0 = NaN for an empty set
      if (kind == ReduceKind::kL2) v = std::sqrt(v);
      if (kind == ReduceKind::kLogSum) v = std::log(v);
      if (kind == ReduceKind::kLogSumExp) v = std::log(v) + shift[i];
      out[i] = E::Store(static_cast<T>(v));
    } else {
      if (kind == ReduceKind::kMean) v = IntegerMean(v, l.group);
      if (kind == ReduceKind::kL2) v = ConvertValue<A>(std::sqrt(static_cast<double>(v)));
      out[i] = E::Store(v);
    }
  }
  return Status::Ok();
}

template <ReduceKind kKind, int kAxesInputSince>
Status ReduceKernel(KernelContext& ctx) {
  const runtime::Tensor* x = ctx.input(0);
  if (!x) return ctx.Fail("input data is missing");
  VIGIL_ASSIGN_OR_RETURN(int64_t keepdims, ops::IntAttr(ctx.node(), "keepdims", 1));
  VIGIL_ASSIGN_OR_RETURN(std::vector<bool> reduced,
                         ReducedDims(ctx, static_cast<int64_t>(x->rank()), ctx.opset() >= kAxesInputSince));
  const ReduceLayout layout = PlanReduce(x->shape(), reduced, keepdims != 0);
  if constexpr (kKind == ReduceKind::kMax || kKind == ReduceKind::kMin) {
    return DispatchDtype<kNumericTypes | kBoolType>(
        x->dtype(),
        [&](auto tag) { return ReduceMaxMin<decltype(tag)::value>(ctx, layout, kKind == ReduceKind::kMax); },
        [&] { return ctx.UnsupportedDtype(0); });
  } else {
    return DispatchDtype<kNumericTypes>(
        x->dtype(), [&](auto tag) { return ReduceArithmetic<decltype(tag)::value>(ctx, layout, kKind); },
        [&] { return ctx.UnsupportedDtype(0); });
  }
}

// An op whose axes are an attribute before opset `since` and an input from it.
#define VIGIL_REDUCE_KERNELS(name, kind, since) \
  {"", name, 1, since - 1, ReduceKernel<kind, since>}, {"", name, since, kLatest, ReduceKernel<kind, since>}

const std::vector<KernelDef>& AllReductionKernels() {
  static const std::vector<KernelDef> kAll = [] {
    std::vector<KernelDef> all = {
        VIGIL_REDUCE_KERNELS("ReduceSum", ReduceKind::kSum, 13),
        VIGIL_REDUCE_KERNELS("ReduceMean", ReduceKind::kMean, 18),
        VIGIL_REDUCE_KERNELS("ReduceMax", ReduceKind::kMax, 18),
        VIGIL_REDUCE_KERNELS("ReduceMin", ReduceKind::kMin, 18),
        VIGIL_REDUCE_KERNELS("ReduceProd", ReduceKind::kProd, 18),
        VIGIL_REDUCE_KERNELS("ReduceL1", ReduceKind::kL1, 18),
        VIGIL_REDUCE_KERNELS("ReduceL2", ReduceKind::kL2, 18),
        VIGIL_REDUCE_KERNELS("ReduceLogSum", ReduceKind::kLogSum, 18),
        VIGIL_REDUCE_KERNELS("ReduceLogSumExp", ReduceKind::kLogSumExp, 18),
        VIGIL_REDUCE_KERNELS("ReduceSumSquare", ReduceKind::kSumSquare, 18),
    };
    std::span<const KernelDef> axis_ops = AxisReductionKernels();
    all.insert(all.end(), axis_ops.begin(), axis_ops.end());
    return all;
  }();
  return kAll;
}

#undef VIGIL_REDUCE_KERNELS

}  // namespace

std::span<const KernelDef> ReductionKernels() { return AllReductionKernels(); }

}  // namespace vigil::cpu
