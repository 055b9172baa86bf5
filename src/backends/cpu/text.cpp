// The CPU kernel of TfIdfVectorizer (ops/text.h). For each row of the input
// ([C], or [N, C] row by row), skip distance s in 1 .. max_skip_count + 1 and
// start position, every n-gram x[start], x[start + s], ..., x[start +
// (n - 1) s] of a length n in [min_gram_length, max_gram_length] that lies in
// the row and is in the pool adds 1 to its output column. Unigrams have no
// skip, so they are counted at s = 1 only. The counts are then weighted:
// TF keeps them, IDF gives weight[column] (1 without weights) where the count
// is non-zero, TFIDF multiplies them by weight[column] (1 without weights).
#include <algorithm>
#include <vector>

#include "backends/cpu/kernel_families.h"
#include "backends/cpu/shape_ops_common.h"
#include "ops/text.h"

namespace vigil::cpu {
namespace {

Status TfIdfVectorizer(KernelContext& ctx) {
  if (!ctx.has_input(0)) return ctx.Fail("required input 0 (X) is missing");
  const runtime::Tensor& x = *ctx.input(0);
  VIGIL_ASSIGN_OR_RETURN(ops::TfIdfParams p, ops::ResolveTfIdf(ctx.node()));
  if (x.dtype() != ir::DataType::kInt32 && x.dtype() != ir::DataType::kInt64) {
    return ctx.UnsupportedDtype(0);
  }
  if (x.rank() != 1 && x.rank() != 2) {
    return ctx.Fail("input X is {}, expected rank 1 ([C]) or 2 ([N, C])", x.Describe());
  }
  VIGIL_ASSIGN_OR_RETURN(std::vector<int64_t> values, shape_family::ReadInts(ctx, 0, "X"));
  const int64_t rows = x.rank() == 2 ? x.dim(0) : 1;
  const int64_t c = x.dim(x.rank() - 1);
  std::vector<int64_t> out_shape = {p.output_size};
  if (x.rank() == 2) out_shape.insert(out_shape.begin(), rows);
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * y, ctx.Output(0, ir::DataType::kFloat32, out_shape));
  float* ys = y->data<float>();
  std::vector<int64_t> counts(static_cast<size_t>(p.output_size));
  std::vector<int64_t> gram;
  for (int64_t r = 0; r < rows; ++r) {
    std::fill(counts.begin(), counts.end(), 0);
    const int64_t* row = values.data() + r * c;
    for (int64_t s = 1; s <= p.max_skip + 1; ++s) {
      const int64_t shortest = s == 1 ? p.min_gram : std::max<int64_t>(p.min_gram, 2);
      for (int64_t n = shortest; n <= p.max_gram; ++n) {
        // (n - 1) * s, the span of the n-gram past its start, stays below c.
        if ((n - 1) >= c || (n > 1 && s > (c - 1) / (n - 1))) break;
        const int64_t span = (n - 1) * s;
        gram.resize(static_cast<size_t>(n));
        for (int64_t start = 0; start + span < c; ++start) {
          for (int64_t k = 0; k < n; ++k) gram[static_cast<size_t>(k)] = row[start + k * s];
          auto hit = p.columns.find(gram);
          if (hit != p.columns.end()) ++counts[static_cast<size_t>(hit->second)];
        }
      }
    }
    float* out = ys + r * p.output_size;
    for (int64_t i = 0; i < p.output_size; ++i) {
      const int64_t f = counts[static_cast<size_t>(i)];
      const float w = p.weights.empty() ? 1.0f : p.weights[static_cast<size_t>(i)];
      switch (p.mode) {
        case ops::TfIdfMode::kTf: out[i] = static_cast<float>(f); break;
        case ops::TfIdfMode::kIdf: out[i] = f > 0 ? w : 0.0f; break;
        case ops::TfIdfMode::kTfIdf: out[i] = w * static_cast<float>(f); break;
      }
    }
  }
  return Status::Ok();
}

const KernelDef kTextKernels[] = {
    {"", "TfIdfVectorizer", 9, kLatest, TfIdfVectorizer},
};

}  // namespace

std::span<const KernelDef> TextKernels() { return kTextKernels; }

}  // namespace vigil::cpu
