#include "ir/types.h"

#include <fmt/format.h>

namespace vigil::ir {

bool SameDims(const Shape& a, const Shape& b) {
  if (!a.rank_known || !b.rank_known || a.dims.size() != b.dims.size()) return false;
  for (size_t i = 0; i < a.dims.size(); ++i) {
    const Dim &x = a.dims[i], &y = b.dims[i];
    bool same = x.is_known() ? y.is_known() && *x.value == *y.value : x.is_symbolic() && y.param == x.param;
    if (!same) return false;
  }
  return true;
}

bool IsUnknownDimName(std::string_view param) {
  if (param.find_first_not_of(' ') == std::string_view::npos) return true;
  for (std::string_view unknown : {"?", "-1", "*", "None", "none", "unknown", "Unknown", "dynamic"}) {
    if (param == unknown) return true;
  }
  return false;
}

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
