#include "ops/attributes.h"

#include <fmt/format.h>

namespace vigil::ops {
namespace {

Status WrongType(const ir::Node& node, const ir::Attribute& a, ir::AttributeType want) {
  return InvalidModelError("{}: attribute '{}' is {}, expected {}", NodeLabel(node), a.name,
                           ir::AttributeTypeName(a.type), ir::AttributeTypeName(want));
}

}  // namespace

std::string NodeLabel(const ir::Node& node) {
  if (node.name.empty()) return fmt::format("node {}", node.op_type);
  return fmt::format("node {} '{}'", node.op_type, node.name);
}

bool HasAttr(const ir::Node& node, std::string_view name) { return node.FindAttribute(name) != nullptr; }

Result<int64_t> IntAttr(const ir::Node& node, std::string_view name, int64_t default_value) {
  const ir::Attribute* a = node.FindAttribute(name);
  if (!a) return default_value;
  if (a->type != ir::AttributeType::kInt) return WrongType(node, *a, ir::AttributeType::kInt);
  return a->i;
}

Result<float> FloatAttr(const ir::Node& node, std::string_view name, float default_value) {
  const ir::Attribute* a = node.FindAttribute(name);
  if (!a) return default_value;
  if (a->type != ir::AttributeType::kFloat) return WrongType(node, *a, ir::AttributeType::kFloat);
  return a->f;
}

Result<std::string> StringAttr(const ir::Node& node, std::string_view name, std::string default_value) {
  const ir::Attribute* a = node.FindAttribute(name);
  if (!a) return default_value;
  if (a->type != ir::AttributeType::kString) return WrongType(node, *a, ir::AttributeType::kString);
  return a->s;
}

Result<std::vector<int64_t>> IntsAttr(const ir::Node& node, std::string_view name,
                                      std::vector<int64_t> default_value) {
  const ir::Attribute* a = node.FindAttribute(name);
  if (!a) return default_value;
  if (a->type != ir::AttributeType::kInts) return WrongType(node, *a, ir::AttributeType::kInts);
  return a->ints;
}

Result<std::vector<float>> FloatsAttr(const ir::Node& node, std::string_view name,
                                      std::vector<float> default_value) {
  const ir::Attribute* a = node.FindAttribute(name);
  if (!a) return default_value;
  if (a->type != ir::AttributeType::kFloats) return WrongType(node, *a, ir::AttributeType::kFloats);
  return a->floats;
}

Result<std::vector<std::string>> StringsAttr(const ir::Node& node, std::string_view name,
                                             std::vector<std::string> default_value) {
  const ir::Attribute* a = node.FindAttribute(name);
  if (!a) return default_value;
  if (a->type != ir::AttributeType::kStrings) return WrongType(node, *a, ir::AttributeType::kStrings);
  return a->strings;
}

Result<const ir::Tensor*> TensorAttr(const ir::Node& node, std::string_view name) {
  const ir::Attribute* a = node.FindAttribute(name);
  if (!a) return static_cast<const ir::Tensor*>(nullptr);
  if (a->type != ir::AttributeType::kTensor) return WrongType(node, *a, ir::AttributeType::kTensor);
  return &a->t;
}

Result<int64_t> RequiredIntAttr(const ir::Node& node, std::string_view name) {
  if (!HasAttr(node, name)) return InvalidModelError("{}: required attribute '{}' is missing", NodeLabel(node), name);
  return IntAttr(node, name, 0);
}

Result<std::vector<int64_t>> RequiredIntsAttr(const ir::Node& node, std::string_view name) {
  if (!HasAttr(node, name)) return InvalidModelError("{}: required attribute '{}' is missing", NodeLabel(node), name);
  return IntsAttr(node, name);
}

Result<int64_t> NormalizeAxis(const ir::Node& node, int64_t axis, int64_t rank, std::string_view what) {
  if (axis < -rank || axis >= rank) {
    return InvalidModelError("{}: {} {} is out of range for a rank-{} input (allowed: {} to {})", NodeLabel(node),
                             what, axis, rank, -rank, rank - 1);
  }
  return axis < 0 ? axis + rank : axis;
}

}  // namespace vigil::ops
