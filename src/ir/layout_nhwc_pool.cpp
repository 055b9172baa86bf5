#include "ir/layout_nhwc_pool.h"

#include <algorithm>

#include "ir/layout_nhwc.h"

namespace vigil::ir {

const char* NhwcPoolOpFor(const Node& n, const std::vector<std::string>& enabled) {
  if (!(n.domain.empty() || n.domain == "ai.onnx") || n.inputs.size() != 1 || n.inputs[0].empty() ||
      n.outputs.empty() || n.outputs[0].empty()) {
    return nullptr;
  }
  if (std::find(enabled.begin(), enabled.end(), n.op_type) == enabled.end()) return nullptr;
  if (n.op_type == "MaxPool") return kMaxPoolNhwcOp;
  if (n.op_type == "AveragePool") return kAveragePoolNhwcOp;
  if (n.op_type == "GlobalAveragePool") return kGlobalAveragePoolNhwcOp;
  return nullptr;
}

void RewriteAsNhwcPool(Node& n, const char* nhwc_op, const std::string& x_nhwc, const std::string& y_nhwc) {
  n.domain = kVigilDomain;
  n.op_type = nhwc_op;
  n.inputs = {x_nhwc};
  n.outputs = {y_nhwc};
  std::erase_if(n.attributes, [](const Attribute& a) { return a.name == "storage_order"; });
}

}  // namespace vigil::ir
