// Schema, parameter resolution (text.h) and shape inference of
// TfIdfVectorizer: counts the n-grams of a pool (with skips) in each row of
// an integer input [C] or [N, C], giving [V] or [N, V] floats, V the largest
// output column + 1, weighted by the mode (TF, IDF or TFIDF).
#include "ops/text.h"

#include <algorithm>
#include <climits>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "ops/attributes.h"
#include "ops/families.h"
#include "ops/schema.h"
#include "ops/shape_helpers.h"

namespace vigil::ops {
namespace {

template <typename... Args>
Status Fail(const ir::Node& node, fmt::format_string<Args...> f, Args&&... args) {
  return InvalidModelError("{}: {}", NodeLabel(node), fmt::format(f, std::forward<Args>(args)...));
}

// Output columns above this are refused, so that rows stay addressable.
constexpr int64_t kMaxColumns = INT32_MAX;

}  // namespace

Result<TfIdfParams> ResolveTfIdf(const ir::Node& node) {
  TfIdfParams p;
  VIGIL_ASSIGN_OR_RETURN(std::string mode, StringAttr(node, "mode", ""));
  if (mode == "TF") {
    p.mode = TfIdfMode::kTf;
  } else if (mode == "IDF") {
    p.mode = TfIdfMode::kIdf;
  } else if (mode == "TFIDF") {
    p.mode = TfIdfMode::kTfIdf;
  } else {
    return Fail(node, "attribute mode is '{}', expected 'TF', 'IDF' or 'TFIDF'", mode);
  }
  VIGIL_ASSIGN_OR_RETURN(p.min_gram, RequiredIntAttr(node, "min_gram_length"));
  VIGIL_ASSIGN_OR_RETURN(p.max_gram, RequiredIntAttr(node, "max_gram_length"));
  VIGIL_ASSIGN_OR_RETURN(p.max_skip, RequiredIntAttr(node, "max_skip_count"));
  if (p.min_gram < 1 || p.max_gram < p.min_gram) {
    return Fail(node, "attributes min_gram_length {} and max_gram_length {}: expected 1 <= min <= max", p.min_gram,
                p.max_gram);
  }
  if (p.max_skip < 0 || p.max_skip > kMaxColumns) {
    return Fail(node, "attribute max_skip_count is {}, expected 0 to {}", p.max_skip, kMaxColumns);
  }
  if (HasAttr(node, "pool_strings")) {
    return UnsupportedError("{}: string n-grams (attribute pool_strings) are not supported; only pool_int64s",
                            NodeLabel(node));
  }
  VIGIL_ASSIGN_OR_RETURN(std::vector<int64_t> pool, IntsAttr(node, "pool_int64s"));
  VIGIL_ASSIGN_OR_RETURN(std::vector<int64_t> counts, RequiredIntsAttr(node, "ngram_counts"));
  VIGIL_ASSIGN_OR_RETURN(std::vector<int64_t> indexes, RequiredIntsAttr(node, "ngram_indexes"));
  VIGIL_ASSIGN_OR_RETURN(p.weights, FloatsAttr(node, "weights"));
  if (indexes.empty()) return Fail(node, "attribute ngram_indexes is empty; it needs one column per pooled n-gram");
  const int64_t pool_size = static_cast<int64_t>(pool.size());
  for (size_t i = 0; i < counts.size(); ++i) {
    if (counts[i] < (i == 0 ? 0 : counts[i - 1]) || counts[i] > pool_size) {
      return Fail(node, "attribute ngram_counts[{}] is {}; the start offsets must be non-decreasing and within the "
                  "{} pooled values", i, counts[i], pool_size);
    }
  }
  size_t ngram = 0;  // position of the next n-gram in the pool (and in ngram_indexes)
  for (size_t i = 0; i < counts.size(); ++i) {
    const int64_t n = static_cast<int64_t>(i) + 1;  // the n-gram length of this group
    const int64_t begin = counts[i], end = i + 1 < counts.size() ? counts[i + 1] : pool_size;
    if ((end - begin) % n != 0) {
      return Fail(node, "the {} pooled values of {}-grams (from ngram_counts[{}] = {}) are not a whole number of "
                  "{}-grams", end - begin, n, i, begin, n);
    }
    for (int64_t at = begin; at < end; at += n, ++ngram) {
      if (ngram >= indexes.size()) {
        return Fail(node, "attribute ngram_indexes has {} entries but the pool holds more n-grams", indexes.size());
      }
      const int64_t column = indexes[ngram];
      if (column < 0 || column >= kMaxColumns) {
        return Fail(node, "attribute ngram_indexes[{}] is {}, expected 0 to {}", ngram, column, kMaxColumns - 1);
      }
      p.output_size = std::max(p.output_size, column + 1);
      if (n >= p.min_gram && n <= p.max_gram) {
        p.columns[std::vector<int64_t>(pool.begin() + at, pool.begin() + at + n)] = column;
      }
    }
  }
  if (ngram != indexes.size()) {
    return Fail(node, "attribute ngram_indexes has {} entries but the pool holds {} n-grams", indexes.size(), ngram);
  }
  if (!p.weights.empty() && static_cast<int64_t>(p.weights.size()) < p.output_size) {
    return Fail(node, "attribute weights has {} entries, expected {} (one per output column)", p.weights.size(),
                p.output_size);
  }
  return p;
}

namespace {

Status InferTfIdfVectorizer(InferenceContext& ctx) {
  VIGIL_ASSIGN_OR_RETURN(TfIdfParams p, ResolveTfIdf(ctx.node()));
  const ir::TypeInfo* x = ctx.input_type(0);
  if (x && x->elem_type != ir::DataType::kInt32 && x->elem_type != ir::DataType::kInt64 &&
      x->elem_type != ir::DataType::kUndefined) {
    return ctx.Fail("input X is {}, expected int32 or int64", ir::DataTypeName(x->elem_type));
  }
  if (!HasRank(x)) {
    ctx.set_output(0, TensorTypeUnknownShape(ir::DataType::kFloat32));
    return Status::Ok();
  }
  const auto& dims = x->shape.dims;
  if (dims.size() == 1) {
    ctx.set_output(0, TensorType(ir::DataType::kFloat32, std::vector<ir::Dim>{ir::Dim::Known(p.output_size)}));
  } else if (dims.size() == 2) {
    const ir::Dim n = dims[0].is_known() || dims[0].is_symbolic() ? dims[0] : ctx.NewSymbol();
    ctx.set_output(0, TensorType(ir::DataType::kFloat32, std::vector<ir::Dim>{n, ir::Dim::Known(p.output_size)}));
  } else {
    return ctx.Fail("input X has rank {}, expected 1 ([C]) or 2 ([N, C])", dims.size());
  }
  return Status::Ok();
}

const OpSchema kTextSchemas[] = {
    {"", "TfIdfVectorizer", 9, kLatest, 1, 1, 1, 1, InferTfIdfVectorizer},
};

}  // namespace

std::span<const OpSchema> TextSchemas() { return kTextSchemas; }

}  // namespace vigil::ops
