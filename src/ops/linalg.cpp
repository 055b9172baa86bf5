// Schemas and shape inference of the linear algebra ops: Gemm, MatMul, Einsum,
// Det.
#include <map>
#include <optional>
#include <string>

#include "ops/attributes.h"
#include "ops/einsum_equation.h"
#include "ops/linear_shapes.h"
#include "ops/schema.h"
#include "ops/shape_helpers.h"
#include "ops/families.h"

namespace vigil::ops {
namespace {

// A dim carried over to an output: unknown, unnamed dims become fresh symbols
// so that later nodes can still relate them.
ir::Dim Carry(InferenceContext& ctx, const ir::Dim& d) {
  if (d.is_known() || d.is_symbolic()) return d;
  return ctx.NewSymbol();
}

// Two dims that must be equal (a contraction dim): fails when both are known
// and differ.
Status CheckSameDim(InferenceContext& ctx, const ir::Dim& a, const ir::Dim& b, std::string_view what) {
  if (a.value && b.value && *a.value != *b.value) {
    return ctx.Fail("{}: {} against {}", what, *a.value, *b.value);
  }
  return Status::Ok();
}

// The dtype shared by inputs [0, count): fails when two known dtypes differ.
Result<ir::DataType> CommonDtype(InferenceContext& ctx, size_t count) {
  ir::DataType dtype = ir::DataType::kUndefined;
  for (size_t i = 0; i < count; ++i) {
    const ir::TypeInfo* t = ctx.input_type(i);
    if (!t || t->elem_type == ir::DataType::kUndefined) continue;
    if (dtype != ir::DataType::kUndefined && t->elem_type != dtype) {
      return ctx.Fail("input {} has dtype {}, input 0 has {}; {} needs them equal", i,
                      ir::DataTypeName(t->elem_type), ir::DataTypeName(dtype), ctx.node().op_type);
    }
    dtype = t->elem_type;
  }
  return dtype;
}

Status InferGemm(InferenceContext& ctx) {
  VIGIL_ASSIGN_OR_RETURN(ir::DataType dtype, CommonDtype(ctx, ctx.has_input(2) ? 3 : 2));
  VIGIL_ASSIGN_OR_RETURN(int64_t trans_a, IntAttr(ctx.node(), "transA", 0));
  VIGIL_ASSIGN_OR_RETURN(int64_t trans_b, IntAttr(ctx.node(), "transB", 0));
  const ir::TypeInfo* a = ctx.input_type(0);
  const ir::TypeInfo* b = ctx.input_type(1);
  for (size_t i = 0; i < 2; ++i) {
    const ir::TypeInfo* t = ctx.input_type(i);
    if (HasRank(t) && t->shape.dims.size() != 2) {
      return ctx.Fail("input {} has rank {}, Gemm needs rank 2", i == 0 ? "A" : "B", t->shape.dims.size());
    }
  }
  ir::Dim m = HasRank(a) ? Carry(ctx, a->shape.dims[trans_a ? 1 : 0]) : ctx.NewSymbol();
  ir::Dim n = HasRank(b) ? Carry(ctx, b->shape.dims[trans_b ? 0 : 1]) : ctx.NewSymbol();
  if (HasRank(a) && HasRank(b)) {
    VIGIL_RETURN_IF_ERROR(CheckSameDim(ctx, a->shape.dims[trans_a ? 0 : 1], b->shape.dims[trans_b ? 1 : 0],
                                       "the inner dims of A and B differ"));
  }
  // C broadcasts one way to [M, N]; before opset 7, only with broadcast=1.
  VIGIL_ASSIGN_OR_RETURN(int64_t broadcast, IntAttr(ctx.node(), "broadcast", ctx.opset() < 7 ? 0 : 1));
  const ir::TypeInfo* c = ctx.has_input(2) ? ctx.input_type(2) : nullptr;
  if (HasRank(c)) {
    const auto& cd = c->shape.dims;
    if (cd.size() > 2) return ctx.Fail("input C has rank {}, Gemm allows at most 2", cd.size());
    if (!broadcast && cd.size() != 2) {
      return ctx.Fail("input C has rank {}; with broadcast=0 it must be the [M, N] output's shape", cd.size());
    }
    const ir::Dim* out[2] = {&m, &n};
    for (size_t i = 0; i < cd.size(); ++i) {
      const ir::Dim& want = *out[2 - cd.size() + i];
      const bool may_be_one = broadcast && cd[i].value == 1;
      if (cd[i].value && !may_be_one && want.value && *want.value != *cd[i].value) {
        return ctx.Fail("input C has shape {}, which does not broadcast to [{}, {}]", ir::ShapeToString(c->shape),
                        m.value ? std::to_string(*m.value) : m.param, n.value ? std::to_string(*n.value) : n.param);
      }
    }
  }
  if (dtype == ir::DataType::kUndefined) return Status::Ok();
  ctx.set_output(0, TensorType(dtype, {m, n}));
  return Status::Ok();
}

Status InferMatMul(InferenceContext& ctx) {
  VIGIL_ASSIGN_OR_RETURN(ir::DataType dtype, CommonDtype(ctx, 2));
  if (dtype == ir::DataType::kUndefined) return Status::Ok();
  VIGIL_ASSIGN_OR_RETURN(std::optional<std::vector<ir::Dim>> dims, MatMulOutputDims(ctx, 0, 1));
  ctx.set_output(0, dims ? TensorType(dtype, std::move(*dims)) : TensorTypeUnknownShape(dtype));
  return Status::Ok();
}

// The size of one einsum label across all inputs: known sizes must agree or
// be 1 (numpy broadcasts size-1 dims).
struct LabelSize {
  std::optional<int64_t> known;  // the largest known size seen
  std::optional<ir::Dim> symbol;
};

Status InferEinsum(InferenceContext& ctx) {
  VIGIL_ASSIGN_OR_RETURN(std::string text, StringAttr(ctx.node(), "equation", ""));
  if (!HasAttr(ctx.node(), "equation")) return ctx.Fail("required attribute 'equation' is missing");
  auto parsed = ParseEinsumEquation(text);
  if (!parsed.ok()) return ctx.Failure(parsed.status().summary());
  const EinsumEquation& eq = *parsed;
  if (eq.inputs.size() != ctx.num_inputs()) {
    return ctx.Fail("equation '{}' has {} input terms, the node has {} inputs", text, eq.inputs.size(),
                    ctx.num_inputs());
  }
  VIGIL_ASSIGN_OR_RETURN(ir::DataType dtype, CommonDtype(ctx, ctx.num_inputs()));
  if (dtype == ir::DataType::kUndefined) return Status::Ok();
  std::vector<int64_t> ranks;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    const ir::TypeInfo* t = ctx.input_type(i);
    if (!HasRank(t)) break;
    ranks.push_back(static_cast<int64_t>(t->shape.dims.size()));
  }
  if (ranks.size() != ctx.num_inputs()) {
    // Some rank unknown: an explicit output without '...' still has a known rank.
    if (eq.explicit_output && eq.output.ellipsis_at < 0) {
      std::vector<ir::Dim> dims;
      for (size_t i = 0; i < eq.output.letters.size(); ++i) dims.push_back(ctx.NewSymbol());
      ctx.set_output(0, TensorType(dtype, std::move(dims)));
    } else {
      ctx.set_output(0, TensorTypeUnknownShape(dtype));
    }
    return Status::Ok();
  }
  auto labels = ExpandEinsumEquation(eq, ranks);
  if (!labels.ok()) return ctx.Failure(labels.status().summary());
  std::map<int, LabelSize> sizes;
  for (size_t i = 0; i < labels->inputs.size(); ++i) {
    for (size_t d = 0; d < labels->inputs[i].size(); ++d) {
      const int label = labels->inputs[i][d];
      const ir::Dim& dim = ctx.input_type(i)->shape.dims[d];
      LabelSize& s = sizes[label];
      if (dim.value) {
        if (s.known && *s.known != *dim.value && *s.known != 1 && *dim.value != 1) {
          return ctx.Fail("label '{}' has size {} in one input and {} in input {} (equation '{}')",
                          EinsumLabelName(label), *s.known, *dim.value, i, text);
        }
        if (!s.known || *s.known == 1) s.known = *dim.value;
      } else if (!s.symbol && dim.is_symbolic()) {
        s.symbol = dim;
      }
    }
  }
  std::vector<ir::Dim> out;
  for (int label : labels->output) {
    const LabelSize& s = sizes[label];
    if (s.known && (*s.known != 1 || !s.symbol)) {
      out.push_back(ir::Dim::Known(*s.known));
    } else {
      out.push_back(s.symbol ? *s.symbol : ctx.NewSymbol());
    }
  }
  ctx.set_output(0, TensorType(dtype, std::move(out)));
  return Status::Ok();
}

// Det: [*, M, M] -> [*], the determinant of every square matrix.
Status InferDet(InferenceContext& ctx) {
  const ir::TypeInfo* x = ctx.input_type(0);
  if (!x) return Status::Ok();
  const ir::DataType t = x->elem_type;
  if (t != ir::DataType::kUndefined && t != ir::DataType::kFloat32 && t != ir::DataType::kFloat64 &&
      t != ir::DataType::kFloat16 && t != ir::DataType::kBfloat16) {
    return ctx.Fail("input X is {}, expected a float type", ir::DataTypeName(t));
  }
  if (!HasRank(x)) {
    ctx.set_output(0, TensorTypeUnknownShape(t));
    return Status::Ok();
  }
  const auto& dims = x->shape.dims;
  if (dims.size() < 2) return ctx.Fail("input X has rank {}, expected at least 2 ([*, M, M])", dims.size());
  VIGIL_RETURN_IF_ERROR(CheckSameDim(ctx, dims[dims.size() - 2], dims.back(), "input X's matrices are not square"));
  std::vector<ir::Dim> out;
  for (size_t i = 0; i + 2 < dims.size(); ++i) out.push_back(Carry(ctx, dims[i]));
  ctx.set_output(0, TensorType(t, std::move(out)));
  return Status::Ok();
}

const OpSchema kLinalgSchemas[] = {
    // Gemm 1 and 6 broadcast C only with broadcast=1; 7 always broadcasts C
    // one way; 11 made C optional; 9 and 13 only added types.
    {"", "Gemm", 1, 10, 3, 3, 1, 1, InferGemm},
    {"", "Gemm", 11, kLatest, 2, 3, 1, 1, InferGemm},
    {"", "MatMul", 1, kLatest, 2, 2, 1, 1, InferMatMul},
    {"", "Einsum", 12, kLatest, 1, kVariadic, 1, 1, InferEinsum},
    // Det 22 only added types.
    {"", "Det", 11, kLatest, 1, 1, 1, 1, InferDet},
};

}  // namespace

Result<std::optional<std::vector<ir::Dim>>> MatMulOutputDims(InferenceContext& ctx, size_t a_index, size_t b_index) {
  const ir::TypeInfo* a = ctx.input_type(a_index);
  const ir::TypeInfo* b = ctx.input_type(b_index);
  for (size_t i : {a_index, b_index}) {
    if (HasRank(ctx.input_type(i)) && ctx.input_type(i)->shape.dims.empty()) {
      return ctx.Fail("input {} is a scalar; {} needs rank 1 or more", i, ctx.node().op_type);
    }
  }
  if (!HasRank(a) || !HasRank(b)) return std::optional<std::vector<ir::Dim>>();
  std::vector<ir::Dim> ad = a->shape.dims, bd = b->shape.dims;
  const bool a_vector = ad.size() == 1, b_vector = bd.size() == 1;
  // numpy: a vector A is a [1, K] row, a vector B a [K, 1] column; the added
  // dim is removed from the result again.
  if (a_vector) ad.insert(ad.begin(), ir::Dim::Known(1));
  if (b_vector) bd.push_back(ir::Dim::Known(1));
  VIGIL_RETURN_IF_ERROR(CheckSameDim(ctx, ad.back(), bd[bd.size() - 2], "the inner dims of A and B differ"));
  std::vector<ir::Dim> a_batch(ad.begin(), ad.end() - 2), b_batch(bd.begin(), bd.end() - 2);
  VIGIL_ASSIGN_OR_RETURN(std::vector<ir::Dim> out, BroadcastDims(ctx, a_batch, b_batch));
  for (ir::Dim& d : out) d = Carry(ctx, d);
  if (!a_vector) out.push_back(Carry(ctx, ad[ad.size() - 2]));
  if (!b_vector) out.push_back(Carry(ctx, bd.back()));
  return std::optional<std::vector<ir::Dim>>(std::move(out));
}

std::span<const OpSchema> LinalgSchemas() { return kLinalgSchemas; }

}  // namespace vigil::ops
