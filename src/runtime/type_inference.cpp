#include "runtime/type_inference.h"

#include <fmt/format.h>

#include "ops/attributes.h"
#include "ops/fault_injection.h"
#include "ops/missing_op.h"
#include "ops/schema.h"
#include "ops/shape_helpers.h"

namespace vigil::runtime {
namespace {

class HeapOutputs : public OutputAllocator {
 public:
  Result<Tensor> Allocate(size_t, ir::DataType dtype, std::vector<int64_t> shape) override {
    return Tensor::Allocate(dtype, std::move(shape));
  }
};

ir::TypeInfo TypeOf(const Tensor& t) { return ops::TensorType(t.dtype(), t.shape()); }

// Shape and Size only need the input's shape, not its value.
std::optional<Tensor> ValueFromShape(const ir::Node& node, const ir::TypeInfo* in) {
  auto dims = ops::KnownDims(in);
  if (!dims) return std::nullopt;
  std::vector<int64_t> values;
  if (node.op_type == "Size") {
    int64_t n = 1;
    for (int64_t d : *dims) n *= d;
    values = {n};
  } else {
    int64_t rank = static_cast<int64_t>(dims->size());
    auto start = ops::IntAttr(node, "start", 0);
    auto end = ops::IntAttr(node, "end", rank);
    if (!start.ok() || !end.ok()) return std::nullopt;
    auto clamp = [&](int64_t v) { return std::clamp(v < 0 ? v + rank : v, int64_t{0}, rank); };
    for (int64_t i = clamp(*start); i < clamp(*end); ++i) values.push_back((*dims)[i]);
  }
  auto t = Tensor::Allocate(ir::DataType::kInt64,
                            node.op_type == "Size" ? std::vector<int64_t>{} : std::vector<int64_t>{int64_t(values.size())});
  if (!t.ok()) return std::nullopt;
  std::copy(values.begin(), values.end(), t->data<int64_t>());
  return std::move(*t);
}


class GraphInference {
 public:
  GraphInference(const ir::Model& model, const FoldingPolicy& folding) : model_(model), folding_(folding) {}

  Status Seed(const std::map<std::string, ir::TypeInfo>& input_types) {
    for (const ir::Tensor& t : model_.graph.initializers) {
      Tensor value = Tensor::FromConstant(t);
      out_.types[t.name] = TypeOf(value);
      out_.values[t.name] = std::move(value);
    }
    for (const ir::ValueInfo& vi : model_.graph.inputs) {
      auto it = input_types.find(vi.name);
      if (it != input_types.end()) {
        out_.types[vi.name] = it->second;
        out_.values.erase(vi.name);  // a bound input overrides an initializer default
      } else if (vi.has_type && !out_.types.count(vi.name)) {
        out_.types[vi.name] = vi.type;
      }
    }
    for (const ir::ValueInfo& vi : model_.graph.value_infos) {
      if (vi.has_type) declared_[vi.name] = &vi.type;
    }
    return Status::Ok();
  }

  // Why the catalogue has no schema for the node (ops/missing_op.h), said on
  // the first line.
  static Status UnknownOp(const ir::Node& node, size_t index, int64_t opset) {
    using Kind = ops::MissingOp::Kind;
    const std::string where = fmt::format("{} (node #{})", ops::NodeLabel(node), index);
    const std::optional<ops::MissingOp> missing = ops::WhyMissing(node.domain, node.op_type, opset);
    const ops::MissingOp m = missing.value_or(ops::MissingOp{Kind::kOnnxNotImplemented});
    switch (m.kind) {
      case Kind::kTestOp:
        return UnsupportedError("{}: op {}::{} is a test-only fault-injection op", where, node.domain, node.op_type)
            .WithFix("it exists only with VIGIL_ENABLE_TEST_OPS=1");
      case Kind::kOtherDomain:
        return UnsupportedError("{}: op {}::{} is from the domain '{}', {}", where, node.domain, node.op_type,
                                node.domain,
                                m.domain_ops.empty() ? std::string("which vigil does not implement")
                                                     : fmt::format("of which vigil implements only {}", m.domain_ops))
            .WithFix("re-export the model with operators from the default ONNX domain (for example without the "
                     "exporter's fused or contrib ops), or report the op as missing");
      case Kind::kOtherOpsets: {
        const std::string last = m.last_opset == ops::kLatest ? std::string("the latest") : std::to_string(m.last_opset);
        const bool newer = m.last_opset != ops::kLatest && opset > m.last_opset;
        return UnsupportedError("{}: vigil implements {} for opsets {} to {}, the model imports opset {}", where,
                                node.op_type, m.first_opset, last, opset)
            .WithFix(newer ? fmt::format("re-export the model at opset {} (torch.onnx.export(..., opset_version={}))",
                                         m.last_opset, m.last_opset)
                           : fmt::format("re-export the model at opset {} or later", m.first_opset));
      }
      case Kind::kOnnxNotImplemented:
        return UnsupportedError("{}: vigil does not implement the ONNX operator {} yet", where, node.op_type)
            .WithFact("opset", std::to_string(opset))
            .WithFix(fmt::format("report {} as missing; `vigil inspect MODEL` lists every op the model uses and "
                                 "those vigil lacks",
                                 node.op_type))
            .WithFix("run the model where the op exists (another runtime), or replace the op before export");
      case Kind::kNotOnnx:
        break;
    }
    Status status = InvalidModelError("{}: '{}' is not an ONNX operator, yet the node is in the default ONNX domain",
                                      where, node.op_type);
    if (!m.nearest.empty()) {
      status.WithCause(fmt::format("'{}' is not an ONNX operator: a misspelling of {}", node.op_type, m.nearest),
                       "the names differ by a letter or two");
    }
    status.WithCause(fmt::format("'{}' is not an ONNX operator: a custom op exported without a domain of its own",
                                 node.op_type),
                     "ONNX defines no operator of this name in any opset");
    return std::move(status.WithFix(m.nearest.empty() ? "give the custom op its own domain and a runtime that "
                                                        "implements it, or replace it with standard ONNX ops before "
                                                        "export"
                                                      : fmt::format("rename the op to {} if that is what it is; else "
                                                                    "give it its own domain",
                                                                    m.nearest)));
  }

  Status Visit(size_t index) {
    const ir::Node& node = model_.graph.nodes[index];
    int64_t opset = model_.OpsetVersion(node.domain);
    const ops::OpSchema* schema = ops::FindSchema(node.domain, node.op_type, opset);
    if (!schema) return UnknownOp(node, index, opset);
    VIGIL_RETURN_IF_ERROR(ops::CheckArity(*schema, node));
    std::vector<const ir::TypeInfo*> types;
    std::vector<ir::Tensor> constant_views(node.inputs.size());
    std::vector<const ir::Tensor*> values;
    std::vector<const Tensor*> runtime_inputs;
    bool all_known = true;
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      const std::string& name = node.inputs[i];
      auto t = name.empty() ? out_.types.end() : out_.types.find(name);
      types.push_back(t == out_.types.end() ? nullptr : &t->second);
      auto v = name.empty() ? out_.values.end() : out_.values.find(name);
      if (v != out_.values.end()) {
        constant_views[i] = v->second.AsConstant(name);
        values.push_back(&constant_views[i]);
        runtime_inputs.push_back(&v->second);
      } else {
        values.push_back(nullptr);
        runtime_inputs.push_back(nullptr);
        if (!name.empty()) all_known = false;
      }
    }
    ops::InferenceContext ctx(node, opset, types, values, &symbol_counter_);
    VIGIL_RETURN_IF_ERROR(schema->infer(ctx));
    for (size_t i = 0; i < node.outputs.size(); ++i) {
      const std::string& name = node.outputs[i];
      if (name.empty()) continue;
      ir::TypeInfo t = ctx.outputs()[i];
      auto declared = declared_.find(name);
      if (t.kind == ir::TypeInfo::Kind::kUnknown && declared != declared_.end()) t = *declared->second;
      out_.types[name] = std::move(t);
    }
    if ((node.op_type == "Shape" || node.op_type == "Size") && ops::IsDefaultDomain(node.domain) && !node.outputs.empty()) {
      if (auto v = ValueFromShape(node, types.empty() ? nullptr : types[0])) {
        out_.values[node.outputs[0]] = std::move(*v);
        out_.folded_nodes.insert(index);
        return Status::Ok();
      }
    }
    if (all_known) return Fold(index, node, opset, runtime_inputs);
    return Status::Ok();
  }

  InferredGraph Take() { return std::move(out_); }

 private:
  Status Fold(size_t index, const ir::Node& node, int64_t opset, const std::vector<const Tensor*>& inputs) {
    // Fault-injection ops must fail where they are placed, not at load.
    if (node.domain == ops::kTestOpDomain) return Status::Ok();
    if (!folding_.evaluator) return Status::Ok();
    // Not where the evaluator refuses the node's dtypes (the CPU backend's
    // declared kernel dtypes): the node stays, and the partition names why.
    std::vector<ir::TypeInfo> input_types(inputs.size());
    NodeTypes types;
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (inputs[i]) input_types[i] = TypeOf(*inputs[i]);
      types.inputs.push_back(inputs[i] ? &input_types[i] : nullptr);
    }
    if (!folding_.evaluator->SupportsTyped(node, opset, types, nullptr)) return Status::Ok();
    if (folding_.keep_dequantize && node.op_type == "DequantizeLinear" &&
        (node.domain.empty() || node.domain == "ai.onnx")) {
      return Status::Ok();
    }
    if (folding_.max_output_elements) {
      uint64_t total = 0;
      for (const std::string& name : node.outputs) {
        auto t = out_.types.find(name);
        auto dims = t == out_.types.end() ? std::nullopt : ops::KnownDims(&t->second);
        if (!dims) return Status::Ok();  // unknown size: don't risk a large evaluation
        total += ElementCount(*dims).value_or(UINT64_MAX);
      }
      if (total > folding_.max_output_elements) return Status::Ok();
    }
    std::vector<Tensor> outputs(node.outputs.size());
    HeapOutputs heap;
    Status s = folding_.evaluator->Run(node, opset, inputs, outputs, heap);
    if (!s.ok()) return s.WithContext("while folding constants at load");
    for (size_t i = 0; i < node.outputs.size(); ++i) {
      if (node.outputs[i].empty()) continue;
      out_.types[node.outputs[i]] = TypeOf(outputs[i]);
      out_.values[node.outputs[i]] = std::move(outputs[i]);
    }
    out_.folded_nodes.insert(index);
    return Status::Ok();
  }

  const ir::Model& model_;
  const FoldingPolicy& folding_;
  InferredGraph out_;
  std::unordered_map<std::string, const ir::TypeInfo*> declared_;
  int symbol_counter_ = 0;
};

}  // namespace

Result<InferredGraph> InferGraph(const ir::Model& model, const std::vector<size_t>& order,
                                 const std::map<std::string, ir::TypeInfo>& input_types, const FoldingPolicy& folding) {
  GraphInference inference(model, folding);
  VIGIL_RETURN_IF_ERROR(inference.Seed(input_types));
  for (size_t index : order) VIGIL_RETURN_IF_ERROR(inference.Visit(index));
  return inference.Take();
}

}  // namespace vigil::runtime
