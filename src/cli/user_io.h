// What the user-facing commands (run, check, bench, inspect) share, written
// against the public C++ API (vigil/vigil.hpp) alone.
#pragma once

#include <string>
#include <vector>

#include "command.h"
#include "vigil/vigil.hpp"

namespace vigil::cli {

// The session options a BackendChoice asks for (no fallback = CUDA alone).
vigil::SessionOptions ToSessionOptions(const BackendChoice& choice);

// Input files (`--input NAME=FILE` or `--input FILE`), read; `refs` describe
// them for a run and point into `values`. Throws vigil::Error naming the
// input.
struct InputFileSet {
  std::vector<vigil::Value> values;
  std::vector<std::vector<uint8_t>> buffers;  // plain host memory refs may point into
  std::vector<vigil::TensorRef> refs;
};
InputFileSet ReadInputFileSet(const std::vector<std::string>& specs);

// Prints a failure (text on stderr, or {"ok":false,"error":...} on stdout)
// and returns its exit code: 3 for an internal error, else 1.
int ReportError(const vigil::Error& error, bool json);

// "[1,3,224,224]"
std::string ShapeText(const std::vector<int64_t>& shape);

// Element i of a host value as double; false for dtypes without a numeric view.
bool ElementAsDouble(const vigil::Value& v, size_t i, double* out);

}  // namespace vigil::cli
