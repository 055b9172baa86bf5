// Why the op catalogue has no schema for an op at an opset: the one place
// that tells an op of another domain, an ONNX op vigil lacks (at this opset
// or at all) and a name that is no ONNX operator apart. Session creation
// (runtime/type_inference) and `vigil inspect` say it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace vigil::ops {

struct MissingOp {
  enum class Kind {
    kTestOp,             // ai.vigil.testing without VIGIL_ENABLE_TEST_OPS=1
    kOtherDomain,        // an op of another domain vigil has no schema for (com.microsoft, ...)
    kOtherOpsets,        // vigil has the op, for opsets first..last only
    kOnnxNotImplemented, // an ONNX operator vigil does not implement yet
    kNotOnnx,            // in the default domain, but not an ONNX operator
  };
  Kind kind;
  int64_t first_opset = 0, last_opset = 0;  // kOtherOpsets
  std::string nearest = {};                 // kNotOnnx: the closest ONNX operator name, or ""
  std::string domain_ops = {};              // kOtherDomain: the domain's ops vigil has ("A, B"), or ""
};

// Nothing when the catalogue has a schema for the op at `opset`.
std::optional<MissingOp> WhyMissing(std::string_view domain, std::string_view op, int64_t opset);

// A few words for a listing: "not an ONNX operator (nearest: Relu)", ...
std::string ShortReason(const MissingOp& missing, std::string_view domain, int64_t opset);

}  // namespace vigil::ops
