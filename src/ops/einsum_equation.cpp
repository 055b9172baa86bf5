#include "ops/einsum_equation.h"

#include <algorithm>
#include <array>
#include <cctype>

namespace vigil::ops {
namespace {

bool IsLabelLetter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

Result<EinsumTerm> ParseTerm(std::string_view text, std::string_view equation) {
  EinsumTerm term;
  for (size_t i = 0; i < text.size();) {
    char c = text[i];
    if (IsLabelLetter(c)) {
      term.letters += c;
      ++i;
    } else if (c == '.') {
      if (text.substr(i, 3) != "...") {
        return InvalidModelError("einsum equation '{}': a '.' that is not part of '...' in term '{}'", equation, text);
      }
      if (term.ellipsis_at >= 0) {
        return InvalidModelError("einsum equation '{}': term '{}' has more than one '...'", equation, text);
      }
      term.ellipsis_at = static_cast<int>(term.letters.size());
      i += 3;
    } else {
      return InvalidModelError("einsum equation '{}': character '{}' is not a letter, ',', '...' or '->'", equation,
                               c);
    }
  }
  return term;
}

}  // namespace

Result<EinsumEquation> ParseEinsumEquation(std::string_view equation) {
  std::string eq;
  for (char c : equation) {
    if (!std::isspace(static_cast<unsigned char>(c))) eq += c;
  }
  EinsumEquation out;
  std::string_view lhs = eq;
  size_t arrow = eq.find("->");
  if (arrow != std::string::npos) {
    lhs = std::string_view(eq).substr(0, arrow);
    std::string_view rhs = std::string_view(eq).substr(arrow + 2);
    if (rhs.find("->") != std::string_view::npos || rhs.find(',') != std::string_view::npos) {
      return InvalidModelError("einsum equation '{}': the output after '->' must be a single term", equation);
    }
    out.explicit_output = true;
    VIGIL_ASSIGN_OR_RETURN(out.output, ParseTerm(rhs, equation));
    std::string sorted = out.output.letters;
    std::sort(sorted.begin(), sorted.end());
    auto dup = std::adjacent_find(sorted.begin(), sorted.end());
    if (dup != sorted.end()) {
      return InvalidModelError("einsum equation '{}': output label '{}' appears more than once", equation, *dup);
    }
  }
  if (lhs.find('-') != std::string_view::npos || lhs.find('>') != std::string_view::npos) {
    return InvalidModelError("einsum equation '{}': malformed '->'", equation);
  }
  size_t start = 0;
  while (true) {
    size_t comma = lhs.find(',', start);
    std::string_view text = lhs.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    VIGIL_ASSIGN_OR_RETURN(EinsumTerm term, ParseTerm(text, equation));
    out.inputs.push_back(std::move(term));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return out;
}

Result<EinsumLabels> ExpandEinsumEquation(const EinsumEquation& eq, std::span<const int64_t> ranks) {
  if (ranks.size() != eq.inputs.size()) {
    return InvalidModelError("einsum equation has {} input terms but the node has {} inputs", eq.inputs.size(),
                             ranks.size());
  }
  EinsumLabels out;
  // How many dims each ellipsis covers.
  std::vector<int64_t> ellipsis_dims(ranks.size(), 0);
  for (size_t i = 0; i < ranks.size(); ++i) {
    const EinsumTerm& t = eq.inputs[i];
    const int64_t letters = static_cast<int64_t>(t.letters.size());
    if (t.ellipsis_at < 0 ? ranks[i] != letters : ranks[i] < letters) {
      return InvalidModelError("einsum term {} ('{}{}') does not fit input {} of rank {}", i, t.letters,
                               t.ellipsis_at >= 0 ? " with '...'" : "", i, ranks[i]);
    }
    if (t.ellipsis_at >= 0) ellipsis_dims[i] = ranks[i] - letters;
    out.ellipsis_rank = std::max<int>(out.ellipsis_rank, static_cast<int>(ellipsis_dims[i]));
  }
  auto expand = [&](const EinsumTerm& t, int64_t covered) {
    std::vector<int> labels;
    for (size_t j = 0; j <= t.letters.size(); ++j) {
      if (static_cast<int>(j) == t.ellipsis_at) {
        for (int64_t e = out.ellipsis_rank - covered; e < out.ellipsis_rank; ++e) {
          labels.push_back(kEllipsisLabel + static_cast<int>(e));
        }
      }
      if (j < t.letters.size()) labels.push_back(static_cast<unsigned char>(t.letters[j]));
    }
    return labels;
  };
  std::array<int, 128> occurrences{};
  for (size_t i = 0; i < ranks.size(); ++i) {
    out.inputs.push_back(expand(eq.inputs[i], ellipsis_dims[i]));
    for (char c : eq.inputs[i].letters) ++occurrences[static_cast<unsigned char>(c)];
  }
  if (eq.explicit_output) {
    for (char c : eq.output.letters) {
      if (occurrences[static_cast<unsigned char>(c)] == 0) {
        return InvalidModelError("einsum output label '{}' does not occur in any input term", c);
      }
    }
    if (out.ellipsis_rank > 0 && eq.output.ellipsis_at < 0) {
      return InvalidModelError("einsum inputs have '...' covering {} dims but the output has no '...'",
                               out.ellipsis_rank);
    }
    out.output = expand(eq.output, out.ellipsis_rank);
  } else {
    for (int e = 0; e < out.ellipsis_rank; ++e) out.output.push_back(kEllipsisLabel + e);
    for (int c = 0; c < 128; ++c) {
      if (occurrences[c] == 1) out.output.push_back(c);
    }
  }
  return out;
}

std::string EinsumLabelName(int label) {
  if (label >= kEllipsisLabel) return "...#" + std::to_string(label - kEllipsisLabel);
  return std::string(1, static_cast<char>(label));
}

}  // namespace vigil::ops
