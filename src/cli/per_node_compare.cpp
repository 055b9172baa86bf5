#include "cli/per_node_compare.h"

#include <cmath>
#include <functional>
#include <set>

#include <fmt/format.h>

namespace vigil::cli {
namespace {

std::string ShapeText(const std::vector<int64_t>& dims) {
  std::string shape;
  for (size_t i = 0; i < dims.size(); ++i) shape += (i ? "," : "") + std::to_string(dims[i]);
  return shape;
}

// Every value the reference produced, in an order where each value comes after
// the values its node reads: RunKeepingAll lists the graph outputs first and
// then the other values in step order, so each graph output is moved to just
// before the first value whose node reads it (or to the end).
std::vector<const runtime::NamedTensor*> StepOrder(const std::vector<runtime::NamedTensor>& all, size_t n_outputs,
                                                   const std::unordered_map<std::string, size_t>& producer,
                                                   const ir::Graph& graph) {
  std::unordered_map<std::string, const runtime::NamedTensor*> outputs;
  for (size_t i = 0; i < n_outputs && i < all.size(); ++i) outputs[all[i].name] = &all[i];
  std::vector<const runtime::NamedTensor*> order;
  std::set<std::string> placed;
  // Places graph output `name` after the graph outputs its node reads.
  std::function<void(const std::string&)> place_output = [&](const std::string& name) {
    auto it = outputs.find(name);
    if (it == outputs.end() || !placed.insert(name).second) return;
    auto p = producer.find(name);
    if (p != producer.end()) {
      for (const std::string& in : graph.nodes[p->second].inputs) place_output(in);
    }
    order.push_back(it->second);
  };
  for (size_t i = n_outputs; i < all.size(); ++i) {
    auto p = producer.find(all[i].name);
    if (p != producer.end()) {
      for (const std::string& in : graph.nodes[p->second].inputs) place_output(in);
    }
    order.push_back(&all[i]);
  }
  for (size_t i = 0; i < n_outputs && i < all.size(); ++i) place_output(all[i].name);
  return order;
}

// "float32[2,3]" for each input of `node`: from the run, the bindings, or
// the initializers.
std::vector<std::pair<std::string, std::string>> NodeInputTypes(
    const ir::Node& node, const ir::Graph& graph, const std::vector<runtime::InputBinding>& inputs,
    const std::unordered_map<std::string, const runtime::Tensor*>& ref_values) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const std::string& name : node.inputs) {
    if (name.empty()) continue;
    std::string type = "?";
    if (auto r = ref_values.find(name); r != ref_values.end()) type = r->second->Describe();
    for (const runtime::InputBinding& b : inputs) {
      if (b.name == name) type = fmt::format("{}[{}]", ir::DataTypeName(b.dtype), ShapeText(b.shape));
    }
    for (const ir::Tensor& init : graph.initializers) {
      if (init.name == name && type == "?") {
        type = fmt::format("{}[{}] (initializer)", ir::DataTypeName(init.dtype), ShapeText(init.dims));
      }
    }
    out.emplace_back(name, type);
  }
  return out;
}

}  // namespace

ValueComparison CompareValue(const std::string& name, const runtime::Tensor& got, const runtime::Tensor& ref,
                             double rtol, double atol) {
  return {name, got.Describe(), ref.Describe(), runtime::CompareTensors(ref, got, rtol, atol), ref.dtype()};
}

std::string HalfPrecisionNote(const ValueComparison& v, double rtol) {
  if (v.cmp.ok() || !v.cmp.same_dtype || !v.cmp.same_shape) return "";
  int bits = 0;  // explicit mantissa bits
  if (v.ref_dtype == ir::DataType::kFloat16) bits = 10;
  else if (v.ref_dtype == ir::DataType::kBfloat16) bits = 7;
  else return "";
  // A step of the dtype is at most 2^-bits relative; under four of them
  // the differences of rounding alone fail the comparison.
  const double spacing = std::ldexp(1.0, -bits);
  if (rtol >= 4 * spacing) return "";
  return fmt::format("'{}' is {}, whose neighbouring values are up to 2^-{} ({:.2g}) apart relative: --rtol {:g} "
                     "allows {:.1f} such steps, so rounding differences alone can fail it. Judge it by the rel L2 "
                     "error above, or raise --rtol and --atol",
                     v.name, ir::DataTypeName(v.ref_dtype), bits, spacing, rtol, rtol / spacing);
}

std::string Detail(const ValueComparison& v) {
  if (!v.cmp.same_dtype || !v.cmp.same_shape) {
    return fmt::format("{}: got {}, reference {}", v.cmp.Describe(), v.got_type, v.ref_type);
  }
  return v.cmp.Describe();
}

nlohmann::json ValueJson(const ValueComparison& v) {
  const runtime::TensorComparison& c = v.cmp;
  nlohmann::json j = {{"name", v.name},          {"got", v.got_type},
                      {"reference", v.ref_type}, {"pass", c.ok()},
                      {"same_dtype", c.same_dtype}, {"same_shape", c.same_shape}};
  if (c.same_dtype && c.same_shape) {
    j["elements"] = c.elements;
    j["mismatches"] = c.mismatches;
    j["nan_mismatches"] = c.nan_mismatches;
    j["max_abs_error"] = c.max_abs_error;
    j["max_rel_error"] = c.max_rel_error;
    j["rel_l2_error"] = c.rel_l2_error;
    if (c.mismatches > 0) {
      j["first_mismatch"] = {{"index", c.first_mismatch}, {"reference", c.expected_at_first}, {"got", c.got_at_first}};
    }
  }
  j["detail"] = Detail(v);
  return j;
}

Status OnSide(Status s, const std::string& backend, const char* role) {
  s.WithFact("compare side", fmt::format("{} ({})", backend, role));
  return s;
}

Result<FirstDivergence> FindFirstDivergence(const runtime::Session& got, const runtime::Session& ref,
                                            const std::vector<runtime::InputBinding>& inputs,
                                            const std::vector<std::string>& names, double rtol, double atol) {
  FirstDivergence result;
  auto got_all = got.RunKeepingAll(inputs);
  if (!got_all.ok()) return OnSide(got_all.status(), names[0], "got");
  auto ref_all = ref.RunKeepingAll(inputs);
  if (!ref_all.ok()) return OnSide(ref_all.status(), names[1], "reference");
  result.got_values = std::move(got_all).value();
  result.ref_values = std::move(ref_all).value();

  const ir::Graph& graph = ref.model().graph;
  std::unordered_map<std::string, size_t> producer;
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    for (const std::string& out : graph.nodes[i].outputs) {
      if (!out.empty()) producer.emplace(out, i);
    }
  }
  std::unordered_map<std::string, const runtime::Tensor*> got_values, ref_values;
  for (const runtime::NamedTensor& v : result.got_values) got_values.emplace(v.name, &v.tensor);
  for (const runtime::NamedTensor& v : result.ref_values) ref_values.emplace(v.name, &v.tensor);

  for (const runtime::NamedTensor* v : StepOrder(result.ref_values, ref.outputs().size(), producer, graph)) {
    auto g = got_values.find(v->name);
    if (g == got_values.end()) {  // e.g. folded or fused away on the other side
      ++result.skipped;
      continue;
    }
    ++result.compared;
    ValueComparison c = CompareValue(v->name, *g->second, v->tensor, rtol, atol);
    if (!c.cmp.ok()) {
      result.value = std::move(c);
      break;
    }
  }
  if (result.value) {
    auto p = producer.find(result.value->name);
    if (p != producer.end()) {
      result.node_index = p->second;
      result.node_inputs = NodeInputTypes(graph.nodes[p->second], graph, inputs, ref_values);
    }
  }
  return result;
}

}  // namespace vigil::cli
