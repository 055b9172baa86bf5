// Value-by-value comparison of two runs of one model, shared by
// `vigil compare` (outputs, --per-node, --repeat) and `vigil reduce
// --first-divergent`.
#pragma once

#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"
#include "runtime/input_binding.h"
#include "runtime/session.h"
#include "runtime/tensor_compare.h"

namespace vigil::cli {

struct ValueComparison {
  std::string name;
  std::string got_type;  // "float32[2,10]"
  std::string ref_type;
  runtime::TensorComparison cmp;
  ir::DataType ref_dtype = ir::DataType::kUndefined;
};

ValueComparison CompareValue(const std::string& name, const runtime::Tensor& got, const runtime::Tensor& ref,
                             double rtol, double atol);

// For a failed comparison of a float16 or bfloat16 value at an `rtol` under
// four steps of the dtype (a step is at most 2^-10 or 2^-7 relative): a
// note saying that rounding alone can fail it; "" otherwise. Two correct
// float16 runs of one model (the GPU's float32 sums, the CPU's own order)
// differ by a few such steps after a few layers: a float16 UNet failed the
// default --rtol 1e-3 at rel L2 1.1e-3, while closer to the float64 result
// than onnxruntime's CUDA provider.
std::string HalfPrecisionNote(const ValueComparison& v, double rtol);

// The comparison's description, with both types when they differ.
std::string Detail(const ValueComparison& v);
nlohmann::json ValueJson(const ValueComparison& v);

// The first value (in step order) where two RunKeepingAll runs part ways.
struct FirstDivergence {
  size_t compared = 0;  // values compared, the diverging one included
  size_t skipped = 0;   // reference values the other side did not produce
  std::optional<ValueComparison> value;  // none: every compared value matched
  std::optional<size_t> node_index;      // its producer in the reference model
  // The producer's inputs: name and "float32[2,3]" (or "... (initializer)").
  std::vector<std::pair<std::string, std::string>> node_inputs;
  // Every value of each run, kept for callers that cut the node out.
  std::vector<runtime::NamedTensor> got_values;
  std::vector<runtime::NamedTensor> ref_values;
};

// Runs both sessions with RunKeepingAll and compares every value the
// reference computed, in step order, stopping at the first that diverges.
// A failing run returns its status with a "compare side" fact.
Result<FirstDivergence> FindFirstDivergence(const runtime::Session& got, const runtime::Session& ref,
                                            const std::vector<runtime::InputBinding>& inputs,
                                            const std::vector<std::string>& backend_names, double rtol,
                                            double atol);

// Adds which side of a comparison (backend, "got"/"reference") failed.
Status OnSide(Status s, const std::string& backend, const char* role);

}  // namespace vigil::cli
