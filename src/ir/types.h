// Value types: tensors with shapes whose dims may be symbolic, and the
// sequence/optional/map/sparse wrappers ONNX allows around them.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/dtype.h"

namespace vigil::ir {

// One dimension: a known size, a symbolic name ("N", "batch"), or unknown.
struct Dim {
  std::optional<int64_t> value;  // set for dim_value
  std::string param;             // non-empty for dim_param
  std::string denotation;

  static Dim Known(int64_t v) { return Dim{v, {}, {}}; }
  static Dim Symbolic(std::string name) { return Dim{std::nullopt, std::move(name), {}}; }
  bool is_known() const { return value.has_value(); }
  bool is_symbolic() const { return !value && !param.empty(); }
};

// Whether a dim_param is an exporter's way of writing "unknown" rather than
// the name of a size shared with other dims: "?" (Paddle writes it for every
// dynamic dim of an input), "-1", "*", "None", "unknown", "dynamic", and a
// name of only spaces. The reader keeps such dims unnamed, so that they are
// not bound to each other.
bool IsUnknownDimName(std::string_view param);

// A tensor shape. `rank_known == false` means the shape field was absent:
// any rank is allowed.
struct Shape {
  bool rank_known = false;
  std::vector<Dim> dims;
};

struct TypeInfo {
  enum class Kind { kUnknown, kTensor, kSparseTensor, kSequence, kOptional, kMap };
  Kind kind = Kind::kUnknown;
  DataType elem_type = DataType::kUndefined;  // tensor, sparse tensor; key type for maps
  Shape shape;                                // tensor, sparse tensor
  std::shared_ptr<const TypeInfo> inner;      // sequence/optional element, map value
  std::string denotation;
};

// "float32[1,3,H,224]", "seq(float32[?])", ...
std::string TypeToString(const TypeInfo& type);
std::string ShapeToString(const Shape& shape);

// Whether two shapes are proven equal: both ranks known and equal, each dim
// the same number or the same named symbol (an unnamed dim equals nothing).
bool SameDims(const Shape& a, const Shape& b);

}  // namespace vigil::ir
