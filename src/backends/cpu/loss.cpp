// NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss. The scores
// [N, C, d1, ..., dk] are read as N x C x D (D = d1 * ... * dk, 1 without
// trailing dims) and the target [N, d1, ..., dk] as N x D. Per element:
//   loss[n, d] = -w[c] * s[n, c, d], c = target[n, d]
// with w the optional per-class weights (1 without), s the scores
// (NegativeLogLikelihoodLoss) or their log-softmax over C
// (SoftmaxCrossEntropyLoss), and w = 0 where c is ignore_index. 'mean'
// divides the sum by the sum of the weights used. Computed in double.
#include <cmath>
#include <limits>
#include <optional>
#include <vector>

#include "backends/cpu/broadcast.h"
#include "backends/cpu/element_codec.h"
#include "ops/attributes.h"
#include "backends/cpu/kernel_families.h"

namespace vigil::cpu {
namespace {

struct LossShape {
  int64_t n = 0, c = 0, d = 1;
};

Result<LossShape> CheckShapes(KernelContext& ctx) {
  const runtime::Tensor& scores = *ctx.input(0);
  const runtime::Tensor& target = *ctx.input(1);
  if (scores.rank() < 2) return ctx.Fail("input 0 (scores) has rank {}, expected at least 2 ([N, C, ...])", scores.rank());
  if (target.rank() + 1 != scores.rank()) {
    return ctx.Fail("input 1 (target) has shape {}, expected rank {} (the scores {} without C)",
                    ShapeString(target.shape()), scores.rank() - 1, ShapeString(scores.shape()));
  }
  LossShape s;
  s.n = scores.dim(0);
  s.c = scores.dim(1);
  for (size_t i = 0; i < target.rank(); ++i) {
    const int64_t want = scores.dim(i == 0 ? 0 : i + 1);
    if (target.dim(i) != want) {
      return ctx.Fail("input 1 (target) has shape {}, expected dim {} to be {} as in the scores {}",
                      ShapeString(target.shape()), i, want, ShapeString(scores.shape()));
    }
    if (i > 0) s.d *= target.dim(i);
  }
  if (ctx.has_input(2)) {
    const runtime::Tensor& w = *ctx.input(2);
    if (w.rank() != 1 || w.dim(0) != s.c) {
      return ctx.Fail("input 2 (weight) has shape {}, expected [{}] (one weight per class)",
                      ShapeString(w.shape()), s.c);
    }
    if (w.dtype() != scores.dtype()) {
      return ctx.Fail("input 2 (weight) is {}, expected {} like the scores", ir::DataTypeName(w.dtype()),
                      ir::DataTypeName(scores.dtype()));
    }
  }
  return s;
}

Result<std::vector<int64_t>> ReadTarget(KernelContext& ctx) {
  const runtime::Tensor& t = *ctx.input(1);
  std::vector<int64_t> out(t.element_count());
  if (t.dtype() == ir::DataType::kInt64) {
    const auto* v = t.data<int64_t>();
    for (size_t i = 0; i < out.size(); ++i) out[i] = v[i];
  } else if (t.dtype() == ir::DataType::kInt32) {
    const auto* v = t.data<int32_t>();
    for (size_t i = 0; i < out.size(); ++i) out[i] = v[i];
  } else {
    return ctx.Fail("input 1 (target) is {}, expected int32 or int64", ir::DataTypeName(t.dtype()));
  }
  return out;
}

// The loss from the per-element negated, weighted picks, reduced.
template <ir::DataType D>
Status WriteLoss(KernelContext& ctx, const std::string& reduction, const std::vector<double>& loss,
                 double weight_sum) {
  using C = ElementCodec<D>;
  const runtime::Tensor& target = *ctx.input(1);
  if (reduction == "none") {
    VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * y, ctx.Output(0, ctx.input(0)->dtype(), target.shape()));
    auto* ys = y->data<typename C::Storage>();
    for (size_t i = 0; i < loss.size(); ++i) ys[i] = C::Store(static_cast<typename C::Compute>(loss[i]));
    return Status::Ok();
  }
  double sum = 0;
  for (double v : loss) sum += v;
  // Every element ignored: 0 / 0, NaN, as ONNX's reference gives.
  const double value = reduction == "sum" ? sum : sum / weight_sum;
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * y, ctx.Output(0, ctx.input(0)->dtype(), {}));
  y->data<typename C::Storage>()[0] = C::Store(static_cast<typename C::Compute>(value));
  return Status::Ok();
}

// Both ops: `log_softmax` says whether the scores are first turned into
// log-probabilities over C (written to output 1 when it is wanted).
Status LossKernel(KernelContext& ctx, bool log_softmax) {
  VIGIL_ASSIGN_OR_RETURN(LossShape s, CheckShapes(ctx));
  VIGIL_ASSIGN_OR_RETURN(std::vector<int64_t> target, ReadTarget(ctx));
  VIGIL_ASSIGN_OR_RETURN(std::string reduction, ops::StringAttr(ctx.node(), "reduction", "mean"));
  if (reduction != "none" && reduction != "sum" && reduction != "mean") {
    return ctx.Fail("reduction is '{}', expected 'none', 'sum' or 'mean'", reduction);
  }
  std::optional<int64_t> ignore;
  if (ops::HasAttr(ctx.node(), "ignore_index")) {
    VIGIL_ASSIGN_OR_RETURN(int64_t v, ops::RequiredIntAttr(ctx.node(), "ignore_index"));
    ignore = v;
  }
  std::vector<double> weights;
  if (ctx.has_input(2)) {
    VIGIL_ASSIGN_OR_RETURN(weights, ReadParamAsDoubles(ctx, 2));
  }
  return DispatchFloat(ctx, 0, [&]<ir::DataType D>() -> Status {
    using C = ElementCodec<D>;
    const auto* xs = ctx.input(0)->data<typename C::Storage>();
    // The scores, or their log-softmax over C, in double.
    std::vector<double> scores(static_cast<size_t>(s.n * s.c * s.d));
    for (size_t i = 0; i < scores.size(); ++i) scores[i] = static_cast<double>(C::Load(xs[i]));
    if (log_softmax) {
      for (int64_t n = 0; n < s.n; ++n) {
        for (int64_t d = 0; d < s.d; ++d) {
          double* line = scores.data() + n * s.c * s.d + d;
          double max = -std::numeric_limits<double>::infinity();
          for (int64_t c = 0; c < s.c; ++c) max = std::max(max, line[c * s.d]);
          double sum = 0;
          for (int64_t c = 0; c < s.c; ++c) sum += std::exp(line[c * s.d] - max);
          const double log_sum = std::log(sum);
          for (int64_t c = 0; c < s.c; ++c) line[c * s.d] = line[c * s.d] - max - log_sum;
        }
      }
      if (ctx.output_wanted(1)) {
        VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * lp, ctx.Output(1, ctx.input(0)->dtype(), ctx.input(0)->shape()));
        auto* out = lp->data<typename C::Storage>();
        for (size_t i = 0; i < scores.size(); ++i) out[i] = C::Store(static_cast<typename C::Compute>(scores[i]));
      }
    }
    std::vector<double> loss(static_cast<size_t>(s.n * s.d));
    double weight_sum = 0;
    for (int64_t n = 0; n < s.n; ++n) {
      for (int64_t d = 0; d < s.d; ++d) {
        const size_t i = static_cast<size_t>(n * s.d + d);
        const int64_t c = target[i];
        if (ignore && c == *ignore) {
          loss[i] = 0;  // a -0 would print as "-0" in a 'none' output
          continue;
        }
        if (c < 0 || c >= s.c) {
          return ctx.Fail("input 1 (target) holds class {} at element {}, expected 0 to {} (C = {}){}", c, i,
                          s.c - 1, s.c, ignore ? fmt::format(" or ignore_index {}", *ignore) : "");
        }
        const double w = weights.empty() ? 1.0 : weights[static_cast<size_t>(c)];
        loss[i] = -w * scores[static_cast<size_t>((n * s.c + c) * s.d + d)];
        weight_sum += w;
      }
    }
    return WriteLoss<D>(ctx, reduction, loss, weight_sum);
  });
}

Status NegativeLogLikelihoodLossKernel(KernelContext& ctx) { return LossKernel(ctx, false); }
Status SoftmaxCrossEntropyLossKernel(KernelContext& ctx) { return LossKernel(ctx, true); }

const KernelDef kLossKernels[] = {
    {"", "NegativeLogLikelihoodLoss", 12, kLatest, NegativeLogLikelihoodLossKernel},
    {"", "SoftmaxCrossEntropyLoss", 12, kLatest, SoftmaxCrossEntropyLossKernel},
};

}  // namespace

std::span<const KernelDef> LossKernels() { return kLossKernels; }

}  // namespace vigil::cpu
