// Shape and data-movement ops: the family's schema list and the helpers its
// shape inference shares. The inference functions themselves live in
// shape_ops_layout.cpp, shape_ops_indexing.cpp and shape_ops_spatial.cpp.
#include <vector>

#include "ops/shape_ops_common.h"
#include "ops/families.h"

namespace vigil::ops {
namespace shape_family {

ir::DataType ElemType(const InferenceContext& ctx, size_t i) {
  const ir::TypeInfo* t = ctx.input_type(i);
  return t && t->kind == ir::TypeInfo::Kind::kTensor ? t->elem_type : ir::DataType::kUndefined;
}

const std::vector<ir::Dim>* InputDims(const InferenceContext& ctx, size_t i) {
  const ir::TypeInfo* t = ctx.input_type(i);
  return HasRank(t) ? &t->shape.dims : nullptr;
}

Result<std::optional<std::vector<int64_t>>> KnownInts(const InferenceContext& ctx, size_t i) {
  if (!ctx.has_input(i) || ctx.input_value(i) == nullptr) return std::optional<std::vector<int64_t>>();
  VIGIL_ASSIGN_OR_RETURN(std::vector<int64_t> values, ReadInt64s(ctx, *ctx.input_value(i)));
  return std::optional<std::vector<int64_t>>(std::move(values));
}

std::vector<ir::Dim> ToDims(const std::vector<int64_t>& values) {
  std::vector<ir::Dim> dims;
  dims.reserve(values.size());
  for (int64_t v : values) dims.push_back(ir::Dim::Known(v));
  return dims;
}

ir::Dim ProductDim(InferenceContext& ctx, std::span<const ir::Dim> dims) {
  int64_t known = 1;
  const ir::Dim* symbolic = nullptr;
  size_t unknown_count = 0;
  for (const ir::Dim& d : dims) {
    if (d.value) {
      // A zero anywhere makes the product zero whatever the symbols are.
      if (*d.value == 0) return ir::Dim::Known(0);
      std::optional<int64_t> p = CheckedMul(known, *d.value);
      if (!p) return ctx.NewSymbol();
      known = *p;
    } else {
      symbolic = &d;
      ++unknown_count;
    }
  }
  if (unknown_count == 0) return ir::Dim::Known(known);
  if (unknown_count == 1 && known == 1 && symbolic->is_symbolic()) return *symbolic;
  return ctx.NewSymbol();
}

void SetTensor(InferenceContext& ctx, size_t i, ir::DataType dtype, std::vector<ir::Dim> dims) {
  if (dtype == ir::DataType::kUndefined) return;
  ctx.set_output(i, TensorType(dtype, std::move(dims)));
}

void SetUnknownShape(InferenceContext& ctx, size_t i, ir::DataType dtype) {
  if (dtype == ir::DataType::kUndefined) return;
  ctx.set_output(i, TensorTypeUnknownShape(dtype));
}

std::vector<ir::Dim> Symbols(InferenceContext& ctx, size_t count) {
  std::vector<ir::Dim> dims;
  dims.reserve(count);
  for (size_t i = 0; i < count; ++i) dims.push_back(ctx.NewSymbol());
  return dims;
}

std::optional<int64_t> KnownLength(const InferenceContext& ctx, size_t i) {
  const std::vector<ir::Dim>* dims = InputDims(ctx, i);
  if (!dims) return std::nullopt;
  if (dims->empty()) return 1;  // a scalar counts as one value
  if (dims->size() == 1 && (*dims)[0].value) return *(*dims)[0].value;
  return std::nullopt;
}

bool SameDim(const ir::Dim& a, const ir::Dim& b) {
  if (a.value && b.value) return *a.value == *b.value;
  return a.is_symbolic() && b.is_symbolic() && a.param == b.param;
}

}  // namespace shape_family

std::span<const OpSchema> ShapeOpSchemas() {
  static const std::vector<OpSchema> kAll = [] {
    std::vector<OpSchema> all;
    for (auto part : {shape_family::LayoutSchemas(), shape_family::IndexingSchemas(),
                      shape_family::SpatialSchemas()}) {
      all.insert(all.end(), part.begin(), part.end());
    }
    return all;
  }();
  return kAll;
}

}  // namespace vigil::ops
