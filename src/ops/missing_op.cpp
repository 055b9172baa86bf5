#include "ops/missing_op.h"

#include <algorithm>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "ops/fault_injection.h"
#include "ops/onnx_operators.h"
#include "ops/schema.h"

namespace vigil::ops {
std::optional<MissingOp> WhyMissing(std::string_view domain, std::string_view op, int64_t opset) {
  if (FindSchema(domain, op, opset)) return std::nullopt;
  if (domain == kTestOpDomain) return MissingOp{MissingOp::Kind::kTestOp};
  if (!IsDefaultDomain(domain)) {
    MissingOp m{MissingOp::Kind::kOtherDomain};
    std::vector<std::string_view> names;  // the domain's ops, once each, in catalogue order
    for (const OpSchema& s : AllSchemas()) {
      if (s.domain == domain && std::find(names.begin(), names.end(), s.name) == names.end()) names.push_back(s.name);
    }
    m.domain_ops = fmt::format("{}", fmt::join(names, ", "));
    return m;
  }
  MissingOp m{MissingOp::Kind::kOtherOpsets};
  for (const OpSchema& s : AllSchemas()) {
    if (s.name == op && IsDefaultDomain(s.domain)) {
      m.first_opset = m.first_opset == 0 ? s.since_version : std::min<int64_t>(m.first_opset, s.since_version);
      m.last_opset = std::max<int64_t>(m.last_opset, s.until_version);
    }
  }
  if (m.first_opset > 0) return m;
  if (IsOnnxOperator(op)) return MissingOp{MissingOp::Kind::kOnnxNotImplemented};
  return MissingOp{MissingOp::Kind::kNotOnnx, 0, 0, NearestOnnxOperator(op)};
}

std::string ShortReason(const MissingOp& m, std::string_view domain, int64_t opset) {
  switch (m.kind) {
    case MissingOp::Kind::kTestOp: return "a test-only op (VIGIL_ENABLE_TEST_OPS=1)";
    case MissingOp::Kind::kOtherDomain:
      return m.domain_ops.empty() ? fmt::format("the domain '{}' is not implemented", domain)
                                  : fmt::format("not among the ops of domain '{}' vigil has", domain);
    case MissingOp::Kind::kOtherOpsets:
      return fmt::format("vigil has it for opsets {} to {}, the model imports {}", m.first_opset,
                         m.last_opset == kLatest ? std::string("the latest") : std::to_string(m.last_opset), opset);
    case MissingOp::Kind::kOnnxNotImplemented: return "an ONNX operator vigil does not implement yet";
    case MissingOp::Kind::kNotOnnx:
      return m.nearest.empty() ? std::string("not an ONNX operator")
                               : fmt::format("not an ONNX operator (nearest: {})", m.nearest);
  }
  return "";
}

}  // namespace vigil::ops
