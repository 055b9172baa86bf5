// The op catalogue: for every supported op, its opset range, input/output
// counts and its shape inference. Shared by all backends; the catalogue is an
// explicit table assembled in catalogue.cpp from one list per op family.
#pragma once

#include <climits>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "ir/graph.h"

namespace vigil::ops {

// What shape inference sees of one node.
class InferenceContext {
 public:
  // `input_types[i]` may be null for an omitted optional input (or an input
  // whose type is unknown); `input_values[i]` is non-null when the input's
  // value is known at this point (initializer, Constant, folded shape math).
  InferenceContext(const ir::Node& node, int64_t opset, std::vector<const ir::TypeInfo*> input_types,
                   std::vector<const ir::Tensor*> input_values, int* symbol_counter);

  const ir::Node& node() const { return node_; }
  int64_t opset() const { return opset_; }

  size_t num_inputs() const { return node_.inputs.size(); }
  // Present: listed and not "" (omitted optional inputs are "").
  bool has_input(size_t i) const { return i < node_.inputs.size() && !node_.inputs[i].empty(); }
  // Type of input i, or null when absent or unknown.
  const ir::TypeInfo* input_type(size_t i) const { return i < input_types_.size() ? input_types_[i] : nullptr; }
  // Known value of input i, or null.
  const ir::Tensor* input_value(size_t i) const { return i < input_values_.size() ? input_values_[i] : nullptr; }

  size_t num_outputs() const { return node_.outputs.size(); }
  void set_output(size_t i, ir::TypeInfo type);
  std::vector<ir::TypeInfo>& outputs() { return outputs_; }

  // A fresh symbolic dim ("unk_7") for a size only known at run time.
  ir::Dim NewSymbol();

  // InvalidModel error that names the node: "node Conv 'conv1': <message>".
  template <typename... Args>
  Status Fail(fmt::format_string<Args...> f, Args&&... args) const {
    return Failure(fmt::format(f, std::forward<Args>(args)...));
  }
  Status Failure(std::string message) const;

 private:
  const ir::Node& node_;
  int64_t opset_;
  std::vector<const ir::TypeInfo*> input_types_;
  std::vector<const ir::Tensor*> input_values_;
  std::vector<ir::TypeInfo> outputs_;
  int* symbol_counter_;
};

using InferFn = Status (*)(InferenceContext& ctx);

struct OpSchema {
  const char* domain;  // "" for the default ONNX domain
  const char* name;
  int since_version;   // first opset of this definition
  int until_version;   // last opset it covers (kLatest for the current one)
  int min_inputs;
  int max_inputs;      // kVariadic for no limit
  int min_outputs;
  int max_outputs;
  InferFn infer;
};

inline constexpr int kLatest = INT_MAX;
inline constexpr int kVariadic = INT_MAX;

// "" and "ai.onnx" both name the default ONNX domain.
inline bool IsDefaultDomain(std::string_view domain) { return domain.empty() || domain == "ai.onnx"; }

// Every schema in the catalogue.
std::span<const OpSchema> AllSchemas();

// The schema for `op` in `domain` ("" or "ai.onnx" are the default) at `opset`,
// or null.
const OpSchema* FindSchema(std::string_view domain, std::string_view op, int64_t opset);

// Checks the node's input/output counts against the schema.
Status CheckArity(const OpSchema& schema, const ir::Node& node);

}  // namespace vigil::ops
