// Einsum equations ("bij,bjk->bik", "...ii->...i", "ij,jk"): parsing, and
// expansion into one label per dim once the input ranks are known. Shared by
// Einsum's shape inference and its kernels.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace vigil::ops {

// One term of an equation as written: its letters in order, and where the
// ellipsis stands among them.
struct EinsumTerm {
  std::string letters;
  int ellipsis_at = -1;  // index into `letters` before which "..." stands; -1 without one
};

struct EinsumEquation {
  std::vector<EinsumTerm> inputs;
  bool explicit_output = false;  // "->" present
  EinsumTerm output;             // only when explicit_output
};

// Parses the equation (spaces are ignored). Errors (InvalidModel) say what is
// wrong with it and do not name a node; callers add that.
Result<EinsumEquation> ParseEinsumEquation(std::string_view equation);

// Labels: a letter is its ASCII code; dim i of the broadcast ellipsis (counted
// from the left, 0 <= i < ellipsis_rank) is kEllipsisLabel + i.
inline constexpr int kEllipsisLabel = 256;

struct EinsumLabels {
  std::vector<std::vector<int>> inputs;  // one label per dim of each input
  std::vector<int> output;               // one label per output dim
  int ellipsis_rank = 0;                 // the most dims any input's ellipsis covers
};

// Assigns a label to every dim, given each input's rank. An ellipsis covering
// fewer dims than ellipsis_rank takes the rightmost ellipsis labels (numpy
// broadcasting aligns them right). Without "->", the output is the ellipsis
// dims followed by the letters that occur exactly once, in ASCII order.
Result<EinsumLabels> ExpandEinsumEquation(const EinsumEquation& eq, std::span<const int64_t> ranks);

// "a", "B", or "...#1" for ellipsis dims: for messages.
std::string EinsumLabelName(int label);

}  // namespace vigil::ops
