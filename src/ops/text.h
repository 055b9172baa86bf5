// Parameter resolution of TfIdfVectorizer, shared by its shape inference
// (text.cpp) and the CPU kernel (backends/cpu/text.cpp), so that both accept
// the same nodes and fail with the same messages. Only integer n-grams
// (pool_int64s) are supported; pool_strings is an Unsupported error.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "base/status.h"
#include "ir/graph.h"

namespace vigil::ops {

enum class TfIdfMode { kTf, kIdf, kTfIdf };

// The n-grams to count and where each one's count goes.
struct TfIdfParams {
  TfIdfMode mode = TfIdfMode::kTf;
  int64_t min_gram = 1, max_gram = 1;
  int64_t max_skip = 0;
  // Each pooled n-gram of a length in [min_gram, max_gram] -> its output
  // column (ngram_indexes at its position in the pool). A repeated n-gram
  // keeps the column of its last occurrence.
  std::map<std::vector<int64_t>, int64_t> columns;
  int64_t output_size = 0;      // max(ngram_indexes) + 1
  std::vector<float> weights;  // empty, or at least output_size entries (per output column)
};

// Checks the attributes: mode TF, IDF or TFIDF; 1 <= min_gram_length <=
// max_gram_length; max_skip_count >= 0; ngram_counts non-decreasing start
// offsets into pool_int64s, each group a whole number of n-grams;
// ngram_indexes one non-negative column per pooled n-gram.
Result<TfIdfParams> ResolveTfIdf(const ir::Node& node);

}  // namespace vigil::ops
