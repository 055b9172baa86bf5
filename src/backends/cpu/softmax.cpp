// Softmax, LogSoftmax, Hardmax and LpNormalization. Before opset 13 the first
// three coerce X to 2-D at `axis` (default 1) and work along each row of the
// flattened trailing dims; from opset 13 they work along the single dim
// `axis` (default -1), as LpNormalization always does. Both are
// "outer x n x inner" with a stride of `inner` between the n elements.
#include <algorithm>
#include <cmath>
#include <limits>

#include "backends/cpu/element_codec.h"
#include "backends/cpu/fast/fast_kernels.h"
#include "backends/cpu/normalization_kernels.h"
#include "backends/cpu/parallel.h"
#include "ops/attributes.h"

namespace vigil::cpu {
namespace {

struct AxisSplit {
  int64_t outer = 1;  // dims before the axis
  int64_t n = 1;      // the reduced extent
  int64_t inner = 1;  // dims after it (1 for the 2-D coercion)
};

// How an op reads its `axis`: along that one dim, or (Softmax before opset
// 13) over the trailing dims flattened from it.
struct AxisRule {
  bool single_axis;
  int64_t default_axis;
};

AxisRule SoftmaxAxisRule(const KernelContext& ctx) {
  return ctx.opset() >= 13 ? AxisRule{true, -1} : AxisRule{false, 1};
}

Result<AxisSplit> SplitAtAxis(KernelContext& ctx, AxisRule rule) {
  VIGIL_RETURN_IF_ERROR(RequireInputs(ctx, 1));
  const runtime::Tensor& x = *ctx.input(0);
  const bool single_axis = rule.single_axis;
  VIGIL_ASSIGN_OR_RETURN(int64_t attr, ops::IntAttr(ctx.node(), "axis", rule.default_axis));
  VIGIL_ASSIGN_OR_RETURN(int64_t axis, ops::NormalizeAxis(ctx.node(), attr, static_cast<int64_t>(x.rank())));
  AxisSplit s;
  for (int64_t d = 0; d < static_cast<int64_t>(x.rank()); ++d) {
    if (d < axis) {
      s.outer *= x.dim(d);
    } else if (d == axis || !single_axis) {
      s.n *= x.dim(d);
    } else {
      s.inner *= x.dim(d);
    }
  }
  return s;
}

// Calls `row(load, store)` for every line of n elements along the axis, where
// load(k) reads element k of the line (in the compute type, as double) and
// store(k, v) writes it to Y.
template <typename RowFn>
Status ForEachLine(KernelContext& ctx, AxisRule rule, RowFn&& row) {
  VIGIL_ASSIGN_OR_RETURN(AxisSplit s, SplitAtAxis(ctx, rule));
  const runtime::Tensor& x = *ctx.input(0);
  return DispatchFloat(ctx, 0, [&]<ir::DataType D>() -> Status {
    using C = ElementCodec<D>;
    VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * y, ctx.Output(0, x.dtype(), x.shape()));
    const auto* xs = x.data<typename C::Storage>();
    auto* ys = y->data<typename C::Storage>();
    for (int64_t o = 0; o < s.outer; ++o) {
      for (int64_t i = 0; i < s.inner; ++i) {
        const int64_t base = o * s.n * s.inner + i;
        auto load = [&](int64_t k) { return static_cast<double>(C::Load(xs[base + k * s.inner])); };
        auto store = [&](int64_t k, double v) {
          ys[base + k * s.inner] = C::Store(static_cast<typename C::Compute>(v));
        };
        row(s.n, load, store);
      }
    }
    return Status::Ok();
  });
}

// max over the line; NaN if any element is NaN.
template <typename Load>
double LineMax(int64_t n, Load&& load) {
  double m = -std::numeric_limits<double>::infinity();
  for (int64_t k = 0; k < n; ++k) {
    double v = load(k);
    if (v > m || std::isnan(v)) m = v;
    if (std::isnan(m)) break;
  }
  return m;
}

// sum of exp(x - max) over the line; subtracting the max keeps exp in range.
template <typename Load>
double SumExp(int64_t n, double max, Load&& load) {
  double sum = 0;
  for (int64_t k = 0; k < n; ++k) sum += std::exp(load(k) - max);
  return sum;
}

// One line of the reference Softmax: exp(x - max) / sum, in double. A line
// of only -inf has no softmax: exp(-inf - -inf) gives NaN, as in the ONNX
// reference.
template <typename Load, typename Store>
void SoftmaxLine(int64_t n, Load&& load, Store&& store) {
  const double max = LineMax(n, load);
  const double sum = SumExp(n, max, load);
  for (int64_t k = 0; k < n; ++k) store(k, std::exp(load(k) - max) / sum);
}

}  // namespace

Status SoftmaxKernel(KernelContext& ctx) {
  if (ctx.optimised() && ctx.input(0) && ctx.input(0)->dtype() == ir::DataType::kFloat32) {
    VIGIL_ASSIGN_OR_RETURN(AxisSplit s, SplitAtAxis(ctx, SoftmaxAxisRule(ctx)));
    if (s.inner == 1) {
      // Contiguous lines: the optimised line where it takes it, else the reference's line.
      const runtime::Tensor& x = *ctx.input(0);
      VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * y, ctx.Output(0, x.dtype(), x.shape()));
      const float* xs = x.data<float>();
      float* ys = y->data<float>();
      // Lines split across the pool's threads (parallel.h, kComputeGrain), each on its own.
      ParallelFor(s.outer, ItemsPerGrain(s.n, kComputeGrain), [&](int64_t first, int64_t last) {
        for (int64_t o = first; o < last; ++o) {
          const float* xl = xs + o * s.n;
          float* yl = ys + o * s.n;
          if (fast::SoftmaxLineFloat(xl, yl, s.n)) continue;
          SoftmaxLine(
              s.n, [&](int64_t k) { return static_cast<double>(xl[k]); },
              [&](int64_t k, double v) { yl[k] = static_cast<float>(v); });
        }
      });
      return Status::Ok();
    }
  }
  return ForEachLine(ctx, SoftmaxAxisRule(ctx),
                     [](int64_t n, auto&& load, auto&& store) { SoftmaxLine(n, load, store); });
}

Status LogSoftmaxKernel(KernelContext& ctx) {
  return ForEachLine(ctx, SoftmaxAxisRule(ctx), [](int64_t n, auto&& load, auto&& store) {
    const double max = LineMax(n, load);
    const double log_sum = std::log(SumExp(n, max, load));
    for (int64_t k = 0; k < n; ++k) store(k, load(k) - max - log_sum);
  });
}

// 1 at the first maximum of the line (a NaN counts as the maximum), 0 elsewhere.
Status HardmaxKernel(KernelContext& ctx) {
  return ForEachLine(ctx, SoftmaxAxisRule(ctx), [](int64_t n, auto&& load, auto&& store) {
    int64_t best = 0;
    double best_value = n > 0 ? load(0) : 0.0;
    for (int64_t k = 1; k < n && !std::isnan(best_value); ++k) {
      double v = load(k);
      if (v > best_value || std::isnan(v)) {
        best = k;
        best_value = v;
      }
    }
    for (int64_t k = 0; k < n; ++k) store(k, k == best ? 1.0 : 0.0);
  });
}

// y = x / ||line||_p for p = 1 (sum of |x|) or 2 (sqrt of the sum of
// squares); a line whose norm is 0 gives zeros, not NaN.
Status LpNormKernel(KernelContext& ctx) {
  VIGIL_ASSIGN_OR_RETURN(int64_t p, ops::IntAttr(ctx.node(), "p", 2));
  if (p != 1 && p != 2) return AttributeError(ctx, "p is {}, expected 1 or 2", p);
  return ForEachLine(ctx, AxisRule{true, -1}, [p](int64_t n, auto&& load, auto&& store) {
    double norm = 0;
    for (int64_t k = 0; k < n; ++k) norm += p == 1 ? std::fabs(load(k)) : load(k) * load(k);
    if (p == 2) norm = std::sqrt(norm);
    for (int64_t k = 0; k < n; ++k) store(k, norm == 0 ? 0.0 : load(k) / norm);
  });
}

}  // namespace vigil::cpu
