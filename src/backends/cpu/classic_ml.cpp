// CPU kernels of the ai.onnx.ml ops (ops/classic_ml.h):
//   ArrayFeatureExtractor: copies X[..., Y[k]] for every index k of Y (any
//     shape, flattened) into the last axis of the output.
//   Binarizer: 1 where X > threshold (compared in double), else 0; NaN gives 0.
//   TreeEnsemble: each row walks every tree from its root to a leaf: at an
//     interior node, x = X[row, feature] goes to the true branch when the
//     comparison (x <= split, <, >=, >, ==, != or membership of the node's
//     set) holds, or when x is NaN and the node sends missing values there.
//     The leaf's weight joins its target: summed (SUM), summed and divided by
//     the number of trees (AVERAGE), or the least / greatest (MIN, MAX; a
//     target no leaf reached keeps the dtype's greatest / least finite value,
//     as in ONNX's reference). The row's targets are then post-transformed
//     (SOFTMAX, LOGISTIC, SOFTMAX_ZERO or PROBIT, as onnxruntime defines them).
//     Computed in double, rounded once into X's dtype.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numbers>
#include <vector>

#include "backends/cpu/element_codec.h"
#include "backends/cpu/kernel_families.h"
#include "ops/classic_ml.h"
#include "vigil/float16.h"

namespace vigil::cpu {
namespace {

using ir::DataType;

bool IsMlNumeric(DataType t) {
  return t == DataType::kFloat32 || t == DataType::kFloat64 || t == DataType::kInt64 || t == DataType::kInt32;
}

// Element i of a float32/float64/float16/int32/int64 tensor as double.
double Load(const runtime::Tensor& t, int64_t i) {
  const auto* p = static_cast<const uint8_t*>(t.raw_data());
  switch (t.dtype()) {
    case DataType::kFloat32: { float v; std::memcpy(&v, p + i * 4, 4); return v; }
    case DataType::kFloat64: { double v; std::memcpy(&v, p + i * 8, 8); return v; }
    case DataType::kFloat16: { uint16_t v; std::memcpy(&v, p + i * 2, 2); return Float16ToFloat(v); }
    case DataType::kInt32: { int32_t v; std::memcpy(&v, p + i * 4, 4); return v; }
    case DataType::kInt64: { int64_t v; std::memcpy(&v, p + i * 8, 8); return static_cast<double>(v); }
    default: return std::numeric_limits<double>::quiet_NaN();
  }
}

// Stores v (already an integer for the integer dtypes) as element i.
void Store(runtime::Tensor& t, int64_t i, double v) {
  auto* p = static_cast<uint8_t*>(t.raw_data());
  switch (t.dtype()) {
    case DataType::kFloat32: { const float f = static_cast<float>(v); std::memcpy(p + i * 4, &f, 4); break; }
    case DataType::kFloat64: std::memcpy(p + i * 8, &v, 8); break;
    case DataType::kFloat16: { const uint16_t h = FloatToFloat16(static_cast<float>(v)); std::memcpy(p + i * 2, &h, 2); break; }
    case DataType::kInt32: { const int32_t n = static_cast<int32_t>(v); std::memcpy(p + i * 4, &n, 4); break; }
    case DataType::kInt64: { const int64_t n = static_cast<int64_t>(v); std::memcpy(p + i * 8, &n, 8); break; }
    default: break;
  }
}

Status ArrayFeatureExtractor(KernelContext& ctx) {
  VIGIL_RETURN_IF_ERROR(RequireInputs(ctx, 2));
  const runtime::Tensor &x = *ctx.input(0), &y = *ctx.input(1);
  if (!IsMlNumeric(x.dtype())) return ctx.UnsupportedDtype(0);
  if (y.dtype() != DataType::kInt64) return ctx.Fail("input Y (indices) is {}, expected int64", y.Describe());
  if (x.rank() < 1) return ctx.Fail("input X is {}, expected rank >= 1", x.Describe());
  const int64_t c = x.dim(x.rank() - 1);
  const int64_t count = static_cast<int64_t>(y.element_count());
  std::vector<int64_t> index(static_cast<size_t>(count));
  if (count) std::memcpy(index.data(), y.raw_data(), index.size() * sizeof(int64_t));
  for (int64_t k = 0; k < count; ++k) {
    if (index[k] < 0 || index[k] >= c) {
      return ctx.Fail("input Y[{}] is {}, outside [0, {}] (the last axis of X, {})", k, index[k], c - 1,
                      x.Describe());
    }
  }
  std::vector<int64_t> shape;
  if (x.rank() == 1) {
    shape = {1, count};
  } else {
    shape.assign(x.shape().begin(), x.shape().end() - 1);
    shape.push_back(count);
  }
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * z, ctx.Output(0, x.dtype(), shape));
  const size_t width = static_cast<size_t>(ir::DataTypeBits(x.dtype()) / 8);
  const int64_t rows = c == 0 ? 0 : static_cast<int64_t>(x.element_count()) / c;
  const auto* from = static_cast<const uint8_t*>(x.raw_data());
  auto* to = static_cast<uint8_t*>(z->raw_data());
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t k = 0; k < count; ++k) {
      std::memcpy(to + (r * count + k) * width, from + (r * c + index[k]) * width, width);
    }
  }
  return Status::Ok();
}

Status Binarizer(KernelContext& ctx) {
  VIGIL_RETURN_IF_ERROR(RequireInputs(ctx, 1));
  const runtime::Tensor& x = *ctx.input(0);
  if (!IsMlNumeric(x.dtype())) return ctx.UnsupportedDtype(0);
  VIGIL_ASSIGN_OR_RETURN(float threshold, ops::FloatAttr(ctx.node(), "threshold", 0.0f));
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * y, ctx.Output(0, x.dtype(), x.shape()));
  const int64_t n = static_cast<int64_t>(x.element_count());
  for (int64_t i = 0; i < n; ++i) Store(*y, i, Load(x, i) > static_cast<double>(threshold) ? 1.0 : 0.0);
  return Status::Ok();
}

// ---------------------------------------------------------------- TreeEnsemble

bool GoesTrue(const ops::TreeEnsembleParams& p, const ops::TreeBranch& b, double x) {
  if (std::isnan(x) && b.missing_tracks_true) return true;
  switch (b.mode) {
    case ops::TreeMode::kLeq: return x <= b.split;
    case ops::TreeMode::kLt: return x < b.split;
    case ops::TreeMode::kGte: return x >= b.split;
    case ops::TreeMode::kGt: return x > b.split;
    case ops::TreeMode::kEq: return x == b.split;
    case ops::TreeMode::kNeq: return x != b.split;
    case ops::TreeMode::kMember:
      // NaN is in no set (binary_search would find it "equivalent" to any member).
      return !std::isnan(x) && std::binary_search(p.members.begin() + static_cast<std::ptrdiff_t>(b.set_begin),
                                p.members.begin() + static_cast<std::ptrdiff_t>(b.set_end), x);
  }
  return false;
}

// The leaf a row reaches from `root` (ResolveTreeEnsemble has checked that no
// path loops).
int64_t LeafOf(const ops::TreeEnsembleParams& p, ops::TreeEdge at, const double* row) {
  while (!at.leaf) {
    const ops::TreeBranch& b = p.nodes[static_cast<size_t>(at.index)];
    at = GoesTrue(p, b, row[b.feature]) ? b.on_true : b.on_false;
  }
  return at.index;
}

// The inverse error function as onnxruntime's PROBIT computes it (a closed
// approximation with a = 0.147).
double ErfInvApprox(double x) {
  const double sign = x < 0 ? -1.0 : 1.0;
  const double t = (1.0 - x) * (1.0 + x);
  if (t == 0) return 0;
  const double log_t = std::log(t);
  const double v = 2.0 / (std::numbers::pi * 0.147) + 0.5 * log_t;
  const double v2 = 1.0 / 0.147 * log_t;
  return sign * std::sqrt(-v + std::sqrt(v * v - v2));
}

void PostTransform(ops::TreePostTransform transform, std::vector<double>& v) {
  switch (transform) {
    case ops::TreePostTransform::kNone: return;
    case ops::TreePostTransform::kSoftmax: {
      const double top = *std::max_element(v.begin(), v.end());
      double sum = 0;
      for (double& e : v) sum += (e = std::exp(e - top));
      for (double& e : v) e /= sum;
      return;
    }
    case ops::TreePostTransform::kLogistic:
      for (double& e : v) {
        const double s = 1.0 / (1.0 + std::exp(-std::fabs(e)));
        e = e < 0 ? 1.0 - s : s;
      }
      return;
    case ops::TreePostTransform::kSoftmaxZero: {
      // Scores at zero (|v| <= 1e-7) stay zero-weighted: exp(-max) * v.
      const double top = *std::max_element(v.begin(), v.end());
      const double exp_neg_top = std::exp(-top);
      double sum = 0;
      for (double& e : v) {
        e = (e > 1e-7 || e < -1e-7) ? std::exp(e - top) : e * exp_neg_top;
        sum += e;
      }
      for (double& e : v) e = sum == 0 ? 0.5 : e / sum;
      return;
    }
    case ops::TreePostTransform::kProbit:
      for (double& e : v) e = 1.41421356 * ErfInvApprox(e * 2 - 1);
      return;
  }
}

double LargestFinite(DataType t) {
  if (t == DataType::kFloat64) return std::numeric_limits<double>::max();
  if (t == DataType::kFloat16) return 65504.0;
  return std::numeric_limits<float>::max();
}

Status TreeEnsemble(KernelContext& ctx) {
  VIGIL_RETURN_IF_ERROR(RequireInputs(ctx, 1));
  const runtime::Tensor& x = *ctx.input(0);
  VIGIL_ASSIGN_OR_RETURN(ops::TreeEnsembleParams p, ops::ResolveTreeEnsemble(ctx.node()));
  if (x.dtype() != p.split_dtype) {
    return ctx.Fail("input X is {}, but the splits (attribute nodes_splits) are {}; they must have one dtype",
                    x.Describe(), ir::DataTypeName(p.split_dtype));
  }
  if (x.rank() != 2) return ctx.Fail("input X is {}, expected rank 2 ([N, F])", x.Describe());
  const int64_t rows = x.dim(0), features = x.dim(1);
  if (features <= p.max_feature) {
    return ctx.Fail("input X is {} ({} features), but the trees read feature {}", x.Describe(), features,
                    p.max_feature);
  }
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * y, ctx.Output(0, x.dtype(), {rows, p.n_targets}));
  const double trees = static_cast<double>(p.roots.size());
  const double start = p.aggregate == ops::TreeAggregate::kMin   ? LargestFinite(x.dtype())
                       : p.aggregate == ops::TreeAggregate::kMax ? -LargestFinite(x.dtype())
                                                                 : 0.0;
  std::vector<double> row(static_cast<size_t>(features));
  std::vector<double> scores(static_cast<size_t>(p.n_targets));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t f = 0; f < features; ++f) row[static_cast<size_t>(f)] = Load(x, r * features + f);
    std::fill(scores.begin(), scores.end(), start);
    for (const ops::TreeEdge& root : p.roots) {
      const size_t leaf = static_cast<size_t>(LeafOf(p, root, row.data()));
      double& s = scores[static_cast<size_t>(p.leaf_targets[leaf])];
      const double w = p.leaf_weights[leaf];
      switch (p.aggregate) {
        case ops::TreeAggregate::kSum: s += w; break;
        case ops::TreeAggregate::kAverage: s += w / trees; break;
        case ops::TreeAggregate::kMin: s = std::min(s, w); break;
        case ops::TreeAggregate::kMax: s = std::max(s, w); break;
      }
    }
    PostTransform(p.post_transform, scores);
    for (int64_t t = 0; t < p.n_targets; ++t) Store(*y, r * p.n_targets + t, scores[static_cast<size_t>(t)]);
  }
  return Status::Ok();
}

const KernelDef kClassicMlKernels[] = {
    {"ai.onnx.ml", "ArrayFeatureExtractor", 1, kLatest, ArrayFeatureExtractor},
    {"ai.onnx.ml", "Binarizer", 1, kLatest, Binarizer},
    {"ai.onnx.ml", "TreeEnsemble", 5, kLatest, TreeEnsemble},
};

}  // namespace

std::span<const KernelDef> ClassicMlKernels() { return kClassicMlKernels; }

}  // namespace vigil::cpu
