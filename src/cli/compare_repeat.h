// `vigil compare --repeat N`: runs the compared backend N times on the same
// inputs and reports nondeterminism (outputs not bitwise identical across
// repeats) and disagreement with the reference beyond tolerance, repeat by
// repeat. Disagreement that comes and goes between repeats is how a faulty
// GPU shows itself; disagreement that is the same every time is a numerical
// difference of the kernels.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/input_binding.h"
#include "runtime/session.h"

namespace vigil::cli {

struct RepeatRequest {
  int repeat = 2;
  double rtol = 0;
  double atol = 0;
  bool json = false;
  bool deterministic = false;              // --deterministic was given (only deterministic algorithms)
  std::vector<std::string> backend_names;  // {got, reference}
  std::string header_text;                 // printed before the report
  nlohmann::json header_json;              // fields of the JSON report
};

// Runs `ref` once and `got` `repeat` times; prints the report (text on
// stdout, its first line the verdict with the cause and fix; progress on
// stderr) and returns the exit code: 0 deterministic and
// within tolerance, 1 nondeterministic or beyond tolerance (or a run failed).
int CompareRepeated(const runtime::Session& got, const runtime::Session& ref,
                    const std::vector<runtime::InputBinding>& inputs, const RepeatRequest& request);

}  // namespace vigil::cli
