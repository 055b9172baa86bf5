#include "backends/cuda/kernel_dtype_probe.h"

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "backends/cpu/kernel_type_constraints.h"
#include "ops/schema.h"

namespace vigil::cuda {
namespace {

using cpu::KernelTypeConstraints;
using cpu::KernelTypeVariable;
using ir::DataType;

// At most this many combinations of the other type variables' dtypes per
// candidate, shape and input list: the main dtype first, then each in turn.
constexpr size_t kMaxCombinations = 16;

std::vector<DataType> DtypesOf(uint64_t mask, std::optional<DataType> first) {
  std::vector<DataType> out;
  if (first && ((mask >> static_cast<int>(*first)) & 1u)) out.push_back(*first);
  for (int d = 1; d < 64; ++d) {
    if (((mask >> d) & 1u) && (!first || d != static_cast<int>(*first))) out.push_back(static_cast<DataType>(d));
  }
  return out;
}

ir::TypeInfo TensorOf(DataType dtype, std::optional<size_t> rank) {
  ir::TypeInfo t;
  t.kind = ir::TypeInfo::Kind::kTensor;
  t.elem_type = dtype;
  if (rank) {
    t.shape.rank_known = true;
    t.shape.dims.assign(*rank, ir::Dim::Known(2));
  }
  return t;
}

struct Probe {
  const CudaKernelDef& def;
  const KernelTypeConstraints* decl;  // the CPU kernel's declaration, or null
  const KernelTypeVariable* main;     // its first variable, or null (then input 0)

  bool IsMain(size_t input) const {
    if (!decl) return input == 0;
    return decl->VariableOf(input) == main;
  }

  // Whether the support function takes a node of `inputs` inputs with main
  // dtype `d`, for some dtypes of the other variables, at `rank`; output 0
  // of dtype `output`, or unknown.
  bool Takes(size_t inputs, DataType d, std::optional<size_t> rank, bool to_attribute,
             std::optional<DataType> output) const {
    ir::Node node;
    node.op_type = def.op;
    node.domain = def.domain;
    node.name = "probe";
    for (size_t i = 0; i < inputs; ++i) node.inputs.push_back("in" + std::to_string(i));
    node.outputs = {"out"};
    if (to_attribute) {
      ir::Attribute to;
      to.name = "to";
      to.type = ir::AttributeType::kInt;
      to.i = static_cast<int64_t>(d);
      node.attributes.push_back(to);
    }
    // The other variables bound by these inputs, each with its candidates.
    std::vector<const KernelTypeVariable*> others;
    for (size_t i = 0; decl && i < inputs; ++i) {
      const KernelTypeVariable* v = decl->VariableOf(i);
      if (v && v != main && std::find(others.begin(), others.end(), v) == others.end()) others.push_back(v);
    }
    std::vector<std::vector<DataType>> candidates;
    for (const KernelTypeVariable* v : others) candidates.push_back(DtypesOf(v->dtypes, d));
    std::vector<size_t> pick(others.size(), 0);
    std::vector<ir::TypeInfo> types(inputs);
    for (size_t combination = 0; combination < kMaxCombinations; ++combination) {
      runtime::NodeTypes node_types;
      for (size_t i = 0; i < inputs; ++i) {
        if (IsMain(i)) {
          types[i] = TensorOf(d, rank);
          node_types.inputs.push_back(&types[i]);
          continue;
        }
        const KernelTypeVariable* v = decl ? decl->VariableOf(i) : nullptr;
        auto it = std::find(others.begin(), others.end(), v);
        if (v == nullptr || it == others.end()) {
          node_types.inputs.push_back(nullptr);  // unknown, as for a value of no known type
          continue;
        }
        const size_t k = static_cast<size_t>(it - others.begin());
        types[i] = TensorOf(candidates[k][pick[k]], rank);
        node_types.inputs.push_back(&types[i]);
      }
      node_types.outputs.assign(node.outputs.size(), nullptr);
      ir::TypeInfo output_type;
      if (output) {
        output_type = TensorOf(*output, rank);
        node_types.outputs[0] = &output_type;
      }
      if (def.supports(node, node_types, nullptr)) return true;
      // The next combination: like an odometer over the candidate lists.
      size_t k = 0;
      while (k < pick.size() && ++pick[k] == candidates[k].size()) pick[k++] = 0;
      if (k == pick.size()) return false;  // every combination tried
    }
    return false;
  }
};

}  // namespace

ProbedDtypes ProbeKernelDtypes(const CudaKernelDef& def) {
  ProbedDtypes out;
  if (def.supports == nullptr) {
    out.dtypes = cpu::kAnyDtype;
    out.decided = true;
    return out;
  }
  Probe probe{def, cpu::FindKernelTypeConstraintsAt(def.domain, def.op, def.since_version), nullptr};
  if (probe.decl && probe.decl->variable_count() > 0) probe.main = &probe.decl->variables[0];

  // Input lists: the required inputs (at least up to the main input), and
  // every input the declaration binds (two for a variadic op).
  const ops::OpSchema* schema = ops::FindSchema(def.domain, def.op, def.since_version);
  size_t required = schema ? static_cast<size_t>(schema->min_inputs) : 1;
  size_t declared = required;
  if (probe.decl) {
    for (size_t v = 0; v < probe.decl->variable_count(); ++v) {
      const KernelTypeVariable& var = probe.decl->variables[v];
      for (size_t i = 0; i < 32; ++i) {
        if ((var.inputs >> i) & 1u) declared = std::max(declared, i + (var.and_later ? 2 : 1));
      }
    }
  }
  if (schema && schema->max_inputs != ops::kVariadic) declared = std::min(declared, size_t(schema->max_inputs));
  if (probe.main && probe.main->inputs != 0) {
    required = std::max(required, size_t(__builtin_ctz(probe.main->inputs)) + 1);
  }
  std::vector<size_t> input_counts = {required};
  if (declared != required) input_counts.push_back(declared);

  const std::optional<size_t> ranks[] = {std::nullopt, 4, 2, 1};
  // `outputs`: the dtypes output 0 is tried at (nullopt: unknown).
  auto probe_all = [&](auto&& outputs_for) {
    uint64_t taken_mask = 0;
    for (DataType d : DtypesOf(cpu::kAnyDtype, std::nullopt)) {
      bool taken = false;
      for (std::optional<DataType> output : outputs_for(d)) {
        for (bool to_attribute : {false, true}) {
          for (size_t inputs : input_counts) {
            for (const std::optional<size_t>& rank : ranks) {
              taken = probe.Takes(inputs, d, rank, to_attribute, output);
              if (taken) break;
            }
            if (taken) break;
          }
          if (taken) break;
        }
        if (taken) break;
      }
      if (taken) taken_mask |= uint64_t{1} << static_cast<int>(d);
    }
    return taken_mask;
  };
  out.dtypes = probe_all([](DataType) { return std::vector<std::optional<DataType>>{std::nullopt}; });
  if (out.dtypes == 0) {
    // Support functions that also check the output's dtype (QuantizeLinear's
    // integer output): output 0 at the main dtype, then at each other.
    out.dtypes = probe_all([](DataType d) {
      std::vector<std::optional<DataType>> outputs;
      for (DataType e : DtypesOf(cpu::kAnyDtype, d)) outputs.push_back(e);
      return outputs;
    });
  }
  out.decided = out.dtypes != 0;
  return out;
}

}  // namespace vigil::cuda
