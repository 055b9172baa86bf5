// Typed access to a node's attributes, shared by shape inference and every
// backend's kernels. A present attribute of the wrong type is an InvalidModel
// error naming the node and attribute; an absent one gives the default.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "ir/graph.h"

namespace vigil::ops {

Result<int64_t> IntAttr(const ir::Node& node, std::string_view name, int64_t default_value);
Result<float> FloatAttr(const ir::Node& node, std::string_view name, float default_value);
Result<std::string> StringAttr(const ir::Node& node, std::string_view name, std::string default_value);
Result<std::vector<int64_t>> IntsAttr(const ir::Node& node, std::string_view name,
                                      std::vector<int64_t> default_value = {});
Result<std::vector<float>> FloatsAttr(const ir::Node& node, std::string_view name,
                                      std::vector<float> default_value = {});
Result<std::vector<std::string>> StringsAttr(const ir::Node& node, std::string_view name,
                                             std::vector<std::string> default_value = {});
// The TENSOR attribute (Constant's value, ConstantOfShape's value), or null.
Result<const ir::Tensor*> TensorAttr(const ir::Node& node, std::string_view name);

// Absent attributes: whether the node sets it at all.
bool HasAttr(const ir::Node& node, std::string_view name);

// An attribute that must be present.
Result<int64_t> RequiredIntAttr(const ir::Node& node, std::string_view name);
Result<std::vector<int64_t>> RequiredIntsAttr(const ir::Node& node, std::string_view name);

// Normalises a possibly negative axis against `rank` (axis in [-rank, rank-1]);
// an error naming the node otherwise.
Result<int64_t> NormalizeAxis(const ir::Node& node, int64_t axis, int64_t rank, std::string_view what = "axis");

// "node Conv 'conv1'" (or "node Conv" for an unnamed node), for messages.
std::string NodeLabel(const ir::Node& node);

}  // namespace vigil::ops
