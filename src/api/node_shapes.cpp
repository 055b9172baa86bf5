#include "api/node_shapes.h"

#include <functional>
#include <map>

#include <fmt/format.h>

#include "backends/cpu/cpu_backend.h"
#include "ir/validate.h"
#include "ops/attributes.h"
#include "ops/shape_helpers.h"
#include "runtime/type_inference.h"

namespace vigil::api {
namespace {

using DimsOf = std::function<std::optional<std::vector<int64_t>>(const std::string&)>;

uint64_t Product(const std::vector<int64_t>& v, size_t from = 0) {
  uint64_t p = 1;
  for (size_t i = from; i < v.size(); ++i) p *= static_cast<uint64_t>(std::max<int64_t>(v[i], 0));
  return p;
}

// 2 × multiply-adds of the ops that dominate inference cost; 0 when a shape
// involved is not fully known.
uint64_t Flops(const ir::Node& n, const DimsOf& dims) {
  auto in = [&](size_t i) { return i < n.inputs.size() ? dims(n.inputs[i]) : std::nullopt; };
  auto out = n.outputs.empty() ? std::nullopt : dims(n.outputs[0]);
  if (n.op_type == "Conv") {
    auto w = in(1);
    if (out && w) return 2 * Product(*out) * Product(*w, 1);
  } else if (n.op_type == "ConvTranspose") {
    auto x = in(0), w = in(1);
    if (x && w) return 2 * Product(*x) * Product(*w, 1);
  } else if (n.op_type == "MatMul") {
    auto a = in(0);
    if (out && a && !a->empty()) return 2 * Product(*out) * static_cast<uint64_t>(a->back());
  } else if (n.op_type == "Gemm") {
    auto a = in(0);
    auto trans_a = ops::IntAttr(n, "transA", 0);
    if (out && a && a->size() == 2 && trans_a.ok()) return 2 * Product(*out) * static_cast<uint64_t>((*a)[*trans_a ? 0 : 1]);
  }
  return 0;
}


// The graph inputs' declared types with every symbolic or unknown dim set to 1.
std::map<std::string, ir::TypeInfo> UnitDims(const ir::Model& model) {
  std::map<std::string, ir::TypeInfo> types;
  for (const ir::ValueInfo& vi : model.graph.inputs) {
    if (!vi.has_type || vi.type.kind != ir::TypeInfo::Kind::kTensor || !vi.type.shape.rank_known) continue;
    ir::TypeInfo t = vi.type;
    for (ir::Dim& d : t.shape.dims) {
      if (!d.value) d = ir::Dim::Known(1);
    }
    types[vi.name] = t;
  }
  return types;
}

}  // namespace

Result<std::vector<NodeShapes>> InferNodeShapes(const ir::Model& model) {
  VIGIL_ASSIGN_OR_RETURN(std::vector<size_t> order, ir::TopologicalOrder(model.graph));
  auto cpu = cpu::MakeCpuBackend();
  runtime::FoldingPolicy folding{cpu.get(), 65536};
  VIGIL_ASSIGN_OR_RETURN(runtime::InferredGraph inferred, runtime::InferGraph(model, order, {}, folding));
  // FLOPs are counted with symbolic dims (batch, sequence) set to 1.
  VIGIL_ASSIGN_OR_RETURN(runtime::InferredGraph unit, runtime::InferGraph(model, order, UnitDims(model), folding));
  DimsOf dims = [&](const std::string& name) -> std::optional<std::vector<int64_t>> {
    auto t = unit.types.find(name);
    return t == unit.types.end() ? std::nullopt : ops::KnownDims(&t->second);
  };
  std::vector<NodeShapes> result;
  for (size_t i : order) {
    const ir::Node& n = model.graph.nodes[i];
    NodeShapes s{i, n.Describe(i), {}, Flops(n, dims)};
    for (const std::string& out : n.outputs) {
      if (out.empty()) continue;
      auto t = inferred.types.find(out);
      s.outputs.push_back(fmt::format("{}: {}", out, t == inferred.types.end() ? "?" : ir::TypeToString(t->second)));
    }
    result.push_back(std::move(s));
  }
  return result;
}

}  // namespace vigil::api
