#include "ir/types.h"

#include <fmt/format.h>

namespace vigil::ir {

std::string ShapeToString(const Shape& shape) {
  if (!shape.rank_known) return "[*]";
  std::string out = "[";
  for (size_t i = 0; i < shape.dims.size(); ++i) {
    if (i) out += ",";
    const Dim& d = shape.dims[i];
    if (d.value) out += std::to_string(*d.value);
    else if (!d.param.empty()) out += d.param;
    else out += "?";
  }
  return out + "]";
}

std::string TypeToString(const TypeInfo& type) {
  auto inner = [&] { return type.inner ? TypeToString(*type.inner) : std::string("?"); };
  switch (type.kind) {
    case TypeInfo::Kind::kTensor:
      return fmt::format("{}{}", DataTypeName(type.elem_type), ShapeToString(type.shape));
    case TypeInfo::Kind::kSparseTensor:
      return fmt::format("sparse({}{})", DataTypeName(type.elem_type), ShapeToString(type.shape));
    case TypeInfo::Kind::kSequence: return fmt::format("seq({})", inner());
    case TypeInfo::Kind::kOptional: return fmt::format("optional({})", inner());
    case TypeInfo::Kind::kMap:
      return fmt::format("map({},{})", DataTypeName(type.elem_type), inner());
    case TypeInfo::Kind::kUnknown: break;
  }
  return "unknown";
}

}  // namespace vigil::ir
