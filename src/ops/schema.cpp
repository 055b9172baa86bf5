#include "ops/schema.h"

#include <vector>

#include "ops/attributes.h"
#include "ops/families.h"

namespace vigil::ops {

InferenceContext::InferenceContext(const ir::Node& node, int64_t opset, std::vector<const ir::TypeInfo*> input_types,
                                   std::vector<const ir::Tensor*> input_values, int* symbol_counter)
    : node_(node),
      opset_(opset),
      input_types_(std::move(input_types)),
      input_values_(std::move(input_values)),
      outputs_(node.outputs.size()),
      symbol_counter_(symbol_counter) {}

void InferenceContext::set_output(size_t i, ir::TypeInfo type) {
  if (i < outputs_.size()) outputs_[i] = std::move(type);
}

ir::Dim InferenceContext::NewSymbol() { return ir::Dim::Symbolic("unk_" + std::to_string((*symbol_counter_)++)); }

Status InferenceContext::Failure(std::string message) const {
  return InvalidModelError("{}: {}", NodeLabel(node_), message);
}

std::span<const OpSchema> AllSchemas() {
  static const std::vector<OpSchema> kAll = [] {
    std::vector<OpSchema> all;
    for (auto family : {ElementwiseSchemas(), ConvPoolSchemas(), NormalizationSchemas(), AttentionSchemas(),
                        LinalgSchemas(), ReductionSchemas(), ShapeOpSchemas(), TensorGenSchemas(), RecurrentSchemas(),
                        QuantizationSchemas(), QuantizedLinearSchemas(), QuantizedContribSchemas(), DropoutSchemas(),
                        LossSchemas(), VisionSchemas(), DetectionSchemas(), GridSampleSchemas(), ControlFlowSchemas(),
                        SequenceSchemas(), SelectionSchemas(), TextSchemas(), ClassicMlSchemas(), ImageSchemas(),
                        SignalSchemas(), LayoutSchemas(), QdqSchemas(), FusedSchemas(), FaultInjectionSchemas()}) {
      all.insert(all.end(), family.begin(), family.end());
    }
    return all;
  }();
  return kAll;
}

static bool SameDomain(std::string_view a, std::string_view b) {
  return a == b || (IsDefaultDomain(a) && IsDefaultDomain(b));
}

const OpSchema* FindSchema(std::string_view domain, std::string_view op, int64_t opset) {
  for (const OpSchema& s : AllSchemas()) {
    if (op == s.name && SameDomain(domain, s.domain) && opset >= s.since_version && opset <= s.until_version) {
      return &s;
    }
  }
  return nullptr;
}

Status CheckArity(const OpSchema& schema, const ir::Node& node) {
  auto count = [](const std::vector<std::string>& names) {
    // Trailing omitted optional values ("") do not count.
    size_t n = names.size();
    while (n > 0 && names[n - 1].empty()) --n;
    return static_cast<int64_t>(n);
  };
  int64_t in = count(node.inputs), out = count(node.outputs);
  if (in < schema.min_inputs || in > schema.max_inputs) {
    return InvalidModelError("{}: has {} inputs, {} opset {} takes {} to {}", NodeLabel(node), in, schema.name,
                             schema.since_version, schema.min_inputs,
                             schema.max_inputs == kVariadic ? std::string("any number")
                                                            : std::to_string(schema.max_inputs));
  }
  if (out < schema.min_outputs || out > schema.max_outputs) {
    return InvalidModelError("{}: has {} outputs, {} takes {} to {}", NodeLabel(node), out, schema.name,
                             schema.min_outputs,
                             schema.max_outputs == kVariadic ? std::string("any number")
                                                             : std::to_string(schema.max_outputs));
  }
  return Status::Ok();
}

}  // namespace vigil::ops
