#include "api/model_description.h"

#include <map>

#include "api/model_json.h"
#include "api/node_shapes.h"
#include "ir/fuse_conv_epilogue.h"
#include "ir/layout_nhwc.h"
#include "ir/model_stats.h"
#include "ops/missing_op.h"

namespace vigil::api {

Result<nlohmann::json> DescribeModel(const ir::Model& m, bool with_shapes) {
  ir::ModelStats stats = ir::ComputeStats(m);
  nlohmann::json j = ModelInterfaceJson(m);
  j["model"] = m.path;
  j["nodes"] = stats.nodes;
  j["nodes_including_subgraphs"] = stats.nodes_including_subgraphs;
  j["subgraphs"] = stats.subgraphs;
  j["ops"] = stats.ops;
  j["parameters"] = stats.parameters;
  j["parameter_bytes"] = stats.parameter_bytes;
  j["functions"] = m.functions.size();
  // Ops of the main graph the catalogue has no schema for, and why (session
  // creation would fail on the first of them).
  std::map<std::pair<std::string, std::string>, size_t> missing_nodes;
  for (const ir::Node& n : m.graph.nodes) {
    if (ops::WhyMissing(n.domain, n.op_type, m.OpsetVersion(n.domain))) ++missing_nodes[{n.domain, n.op_type}];
  }
  nlohmann::json missing = nlohmann::json::array();
  for (const auto& [key, count] : missing_nodes) {
    const auto& [domain, op] = key;
    const int64_t opset = m.OpsetVersion(domain);
    missing.push_back({{"op", op}, {"domain", domain}, {"opset", opset}, {"nodes", count},
                       {"reason", ops::ShortReason(*ops::WhyMissing(domain, op, opset), domain, opset)}});
  }
  j["unsupported_ops"] = missing;
  if (with_shapes) {
    VIGIL_ASSIGN_OR_RETURN(std::vector<NodeShapes> shapes, InferNodeShapes(m));
    nlohmann::json nodes = nlohmann::json::array();
    uint64_t total = 0;
    for (const NodeShapes& s : shapes) {
      nodes.push_back({{"index", s.index}, {"node", s.label}, {"outputs", s.outputs}, {"flops", s.flops}});
      total += s.flops;
    }
    j["node_shapes"] = nodes;
    j["flops"] = total;
  }
  return j;
}

nlohmann::json DescribeSession(const AssembledSession& a) {
  std::map<std::string, size_t> per_backend;
  nlohmann::json fallbacks = nlohmann::json::array();
  for (const runtime::NodePlacement& n : a.session->placement()) {
    ++per_backend[n.backend];
    if (!n.fallback_reason.empty()) {
      fallbacks.push_back({{"node", n.node}, {"backend", n.backend}, {"reason", n.fallback_reason}});
    }
  }
  nlohmann::json out = {{"backends", a.backends}, {"nodes_per_backend", per_backend}, {"fallbacks", fallbacks}};
  // The convolutions and matrix products of QDQ chains: which run in int8
  // on the device, and why the others do not.
  if (!a.session->int8_notes().empty()) {
    nlohmann::json convs = nlohmann::json::array(), products = nlohmann::json::array();
    for (const ir::QdqNote& n : a.session->int8_notes()) {
      (n.op_type == "Conv" ? convs : products).push_back({{"node", n.node}, {"int8", n.int8}, {"reason", n.reason}});
    }
    if (!convs.empty()) out["int8_convolutions"] = convs;
    if (!products.empty()) out["int8_matmuls"] = products;
  }
  if (!a.session->layout_note().empty()) out["layout"] = a.session->layout_note();
  return out;
}

nlohmann::json SessionNotesJson(const AssembledSession& a) {
  size_t nhwc = 0, transposes = 0, convolutions = 0;
  for (const ir::Node& n : a.session->model().graph.nodes) {
    const bool vigil_op = n.domain == ir::kVigilDomain;
    nhwc += n.op_type == ir::kConvNhwcOp && vigil_op;
    transposes += n.op_type == "Transpose";
    convolutions += vigil_op ? n.op_type == ir::kConvNhwcOp || n.op_type == ir::kFusedConvOp
                             : n.domain.empty() && n.op_type == "Conv";
  }
  nlohmann::json j = DescribeSession(a);
  j["cuda_module"] = a.cuda_module_path;
  j["cuda_stack"] = a.cuda_description;
  j["nhwc_convolutions"] = nhwc;
  j["convolutions"] = convolutions;  // Conv, FusedConv and ConvNhwc nodes of the main graph
  j["transposes"] = transposes;
  j["cuda_graphs"] = a.session->DeviceGraphNotes();
  j["backend_notes"] = a.session->BackendNotes();
  return j;
}

}  // namespace vigil::api
