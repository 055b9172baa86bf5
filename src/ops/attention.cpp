// Schemas and shape inference of ONNX Attention (opsets 23, 24, 25),
// RotaryEmbedding (opset 23), LinearAttention (opset 27) and
// ai.onnx.preview FlexAttention (opset 1; sessions expand it into the ONNX
// ops it stands for, ir/expand_flex_attention.h). Attributes and, where every dim is a number,
// the whole geometry are checked by the helpers the kernels use
// (ops/attention_params.h); with symbolic dims, inference still gives every
// output its dtype, rank and the dims that follow from the inputs.
#include <optional>
#include <vector>

#include "ops/attention_params.h"
#include "ops/schema.h"
#include "ops/shape_helpers.h"
#include "ops/families.h"

namespace vigil::ops {
namespace {

bool IsTensor(const ir::TypeInfo* t) { return t && t->kind == ir::TypeInfo::Kind::kTensor; }

// Input i, when present with a known dtype: a float dtype, and `same`'s dtype
// when `same` is given.
Status CheckFloatInput(InferenceContext& ctx, size_t i, const char* name, const ir::TypeInfo* same = nullptr,
                       const char* same_name = nullptr) {
  const ir::TypeInfo* t = ctx.has_input(i) ? ctx.input_type(i) : nullptr;
  if (!IsTensor(t)) return Status::Ok();
  if (!ir::IsFloatingPoint(t->elem_type)) {
    return ctx.Fail("input {} ({}) has dtype {}; {} needs float32, float16, bfloat16 or float64", i, name,
                    ir::DataTypeName(t->elem_type), ctx.node().op_type);
  }
  if (IsTensor(same) && same->elem_type != t->elem_type) {
    return ctx.Fail("input {} ({}) has dtype {}, {} has {}; they must match", i, name, ir::DataTypeName(t->elem_type),
                    same_name, ir::DataTypeName(same->elem_type));
  }
  return Status::Ok();
}

// d / k for a known d, else a fresh symbol.
ir::Dim DivDim(InferenceContext& ctx, const ir::Dim& d, int64_t k) {
  return d.is_known() ? ir::Dim::Known(*d.value / k) : ctx.NewSymbol();
}

ir::Dim MulDim(InferenceContext& ctx, const ir::Dim& a, const ir::Dim& b) {
  return a.is_known() && b.is_known() ? ir::Dim::Known(*a.value * *b.value) : ctx.NewSymbol();
}

// Output shapes when some dims are symbolic: only ranks and the attributes
// that the dims need are checked; the run checks the rest.
Status InferAttentionSymbolic(InferenceContext& ctx, const AttentionAttrs& attrs, ir::DataType t1, ir::DataType t2) {
  const ir::TypeInfo *q = ctx.input_type(0), *k = ctx.input_type(1), *v = ctx.input_type(2);
  if (!HasRank(q) || !HasRank(k) || !HasRank(v)) return Status::Ok();
  const auto &qd = q->shape.dims, &kd = k->shape.dims, &vd = v->shape.dims;
  const size_t rank = qd.size();
  if (kd.size() != rank || vd.size() != rank || (rank != 3 && rank != 4)) {
    return ctx.Fail("Q {}, K {} and V {} must all be 3-D or all 4-D", ir::ShapeToString(q->shape),
                    ir::ShapeToString(k->shape), ir::ShapeToString(v->shape));
  }
  ir::Dim batch = qd[0], q_heads, kv_heads, q_seq, kv_seq, head, v_head;
  if (rank == 3) {
    if (!attrs.q_num_heads || !attrs.kv_num_heads) {
      return ctx.Fail("3-D Q, K and V need the attributes q_num_heads and kv_num_heads");
    }
    q_heads = ir::Dim::Known(*attrs.q_num_heads);
    kv_heads = ir::Dim::Known(*attrs.kv_num_heads);
    q_seq = qd[1];
    kv_seq = kd[1];
    head = DivDim(ctx, qd[2], *attrs.q_num_heads);
    v_head = DivDim(ctx, vd[2], *attrs.kv_num_heads);
  } else {
    q_heads = qd[1];
    kv_heads = kd[1];
    q_seq = qd[2];
    kv_seq = kd[2];
    head = qd[3];
    v_head = vd[3];
  }
  ir::Dim total = kv_seq;
  if (ctx.has_input(4)) {
    const ir::TypeInfo* past = ctx.input_type(4);
    const bool known = HasRank(past) && past->shape.dims.size() == 4 && past->shape.dims[2].is_known();
    total = known && kv_seq.is_known() ? ir::Dim::Known(*past->shape.dims[2].value + *kv_seq.value) : ctx.NewSymbol();
  }
  if (rank == 3) {
    ctx.set_output(0, TensorType(t1, {batch, q_seq, MulDim(ctx, q_heads, v_head)}));
  } else {
    ctx.set_output(0, TensorType(t1, {batch, q_heads, q_seq, v_head}));
  }
  ctx.set_output(1, TensorType(t1, {batch, kv_heads, total, head}));
  ctx.set_output(2, TensorType(t2, {batch, kv_heads, total, v_head}));
  ctx.set_output(3, TensorType(t1, {batch, q_heads, q_seq, total}));
  return Status::Ok();
}

Status InferAttention(InferenceContext& ctx) {
  VIGIL_ASSIGN_OR_RETURN(AttentionAttrs attrs, ReadAttentionAttrs(ctx.node(), ctx.opset()));
  if (ctx.has_input(4) != ctx.has_input(5)) return ctx.Fail("past_key and past_value must be given together");
  if (ctx.has_input(6) && ctx.has_input(4)) {
    return ctx.Fail("nonpad_kv_seqlen (an external KV cache) cannot be combined with past_key and past_value");
  }
  const ir::TypeInfo *q = ctx.input_type(0), *v = ctx.input_type(2);
  VIGIL_RETURN_IF_ERROR(CheckFloatInput(ctx, 0, "Q"));
  VIGIL_RETURN_IF_ERROR(CheckFloatInput(ctx, 1, "K", q, "Q"));
  VIGIL_RETURN_IF_ERROR(CheckFloatInput(ctx, 2, "V"));
  VIGIL_RETURN_IF_ERROR(CheckFloatInput(ctx, 4, "past_key", q, "Q"));
  VIGIL_RETURN_IF_ERROR(CheckFloatInput(ctx, 5, "past_value", v, "V"));
  const ir::TypeInfo* mask = ctx.has_input(3) ? ctx.input_type(3) : nullptr;
  if (IsTensor(mask) && mask->elem_type != ir::DataType::kBool && !ir::IsFloatingPoint(mask->elem_type)) {
    return ctx.Fail("input 3 (attn_mask) has dtype {}; it must be bool or a float dtype",
                    ir::DataTypeName(mask->elem_type));
  }
  const ir::TypeInfo* nonpad = ctx.has_input(6) ? ctx.input_type(6) : nullptr;
  if (IsTensor(nonpad) && nonpad->elem_type != ir::DataType::kInt64) {
    return ctx.Fail("input 6 (nonpad_kv_seqlen) has dtype {}; it must be int64", ir::DataTypeName(nonpad->elem_type));
  }
  if (!IsTensor(q) || !IsTensor(v)) return Status::Ok();
  const ir::DataType t1 = q->elem_type, t2 = v->elem_type;
  for (size_t i = 0; i < ctx.num_outputs(); ++i) ctx.set_output(i, TensorTypeUnknownShape(i == 2 ? t2 : t1));

  auto qd = KnownDims(q), kd = KnownDims(ctx.input_type(1)), vd = KnownDims(v);
  std::optional<std::vector<int64_t>> pk, pv;
  if (ctx.has_input(4)) pk = KnownDims(ctx.input_type(4)), pv = KnownDims(ctx.input_type(5));
  if (!qd || !kd || !vd || (ctx.has_input(4) && (!pk || !pv))) {
    return InferAttentionSymbolic(ctx, attrs, t1, t2);
  }
  VIGIL_ASSIGN_OR_RETURN(AttentionDims dims, ResolveAttentionDims(ctx.node(), ctx.opset(), attrs, *qd, *kd, *vd,
                                                                  pk ? &*pk : nullptr, pv ? &*pv : nullptr));
  if (auto md = KnownDims(mask)) {
    VIGIL_RETURN_IF_ERROR(ResolveAttentionMask(ctx.node(), ctx.opset(), dims, *md).status());
  }
  if (auto nd = KnownDims(nonpad); nd && (nd->size() != 1 || (*nd)[0] != dims.batch)) {
    return ctx.Fail("input 6 (nonpad_kv_seqlen) has shape {}; it must be [batch] = [{}]",
                    ir::ShapeToString(nonpad->shape), dims.batch);
  }
  ctx.set_output(0, TensorType(t1, dims.y_shape()));
  ctx.set_output(1, TensorType(t1, dims.present_key_shape()));
  ctx.set_output(2, TensorType(t2, dims.present_value_shape()));
  ctx.set_output(3, TensorType(t1, dims.qk_shape()));
  return Status::Ok();
}

// The caches' last dim against the rotary dim / 2, where both are known.
Status CheckRotaryCache(InferenceContext& ctx, size_t i, const char* name, size_t rank, int64_t half) {
  const ir::TypeInfo* t = ctx.input_type(i);
  if (!HasRank(t)) return Status::Ok();
  const auto& d = t->shape.dims;
  if (d.size() != rank) {
    return ctx.Fail("input {} ({}) has shape {}; it must be {}-D {}", i, name, ir::ShapeToString(t->shape), rank,
                    rank == 2 ? "[max_position + 1, rotary_dim / 2] (with position_ids)"
                              : "[batch, seq, rotary_dim / 2] (without position_ids)");
  }
  if (half >= 0 && d.back().is_known() && *d.back().value != half) {
    return ctx.Fail("input {} ({}) has shape {}; its last dim must be rotary_dim / 2 = {}", i, name,
                    ir::ShapeToString(t->shape), half);
  }
  return Status::Ok();
}

Status InferRotaryEmbedding(InferenceContext& ctx) {
  VIGIL_ASSIGN_OR_RETURN(RotaryAttrs attrs, ReadRotaryAttrs(ctx.node()));
  const ir::TypeInfo* x = ctx.input_type(0);
  for (size_t i : {0, 1, 2}) {
    const char* names[] = {"X", "cos_cache", "sin_cache"};
    const ir::TypeInfo* t = ctx.input_type(i);
    if (!IsTensor(t)) continue;
    const ir::DataType dt = t->elem_type;
    if (dt != ir::DataType::kFloat32 && dt != ir::DataType::kFloat16 && dt != ir::DataType::kBfloat16) {
      return ctx.Fail("input {} ({}) has dtype {}; RotaryEmbedding needs float32, float16 or bfloat16", i, names[i],
                      ir::DataTypeName(dt));
    }
    if (IsTensor(x) && dt != x->elem_type) {
      return ctx.Fail("input {} ({}) has dtype {}, X has {}; they must match", i, names[i], ir::DataTypeName(dt),
                      ir::DataTypeName(x->elem_type));
    }
  }
  const ir::TypeInfo* positions = ctx.has_input(3) ? ctx.input_type(3) : nullptr;
  if (IsTensor(positions) && positions->elem_type != ir::DataType::kInt64) {
    return ctx.Fail("input 3 (position_ids) has dtype {}; it must be int64", ir::DataTypeName(positions->elem_type));
  }
  if (HasRank(positions) && positions->shape.dims.size() != 2) {
    return ctx.Fail("input 3 (position_ids) has shape {}; it must be [batch, seq]",
                    ir::ShapeToString(positions->shape));
  }
  VIGIL_RETURN_IF_ERROR(PropagateFirstInput(ctx));
  if (!HasRank(x)) return Status::Ok();
  int64_t half = -1;  // unknown
  if (auto xd = KnownDims(x)) {
    VIGIL_ASSIGN_OR_RETURN(RotaryDims dims, ResolveRotaryDims(ctx.node(), attrs, *xd));
    half = dims.rotary_dim / 2;
  } else if (x->shape.dims.size() != 3 && x->shape.dims.size() != 4) {
    return ctx.Fail("input 0 (X) has shape {}; it must be 4-D [batch, heads, seq, head_size] or 3-D [batch, seq, "
                    "hidden]", ir::ShapeToString(x->shape));
  } else if (x->shape.dims.size() == 3 && attrs.num_heads < 1) {
    return ctx.Fail("a 3-D input 0 (X) needs the attribute num_heads");
  }
  const size_t cache_rank = ctx.has_input(3) ? 2 : 3;
  VIGIL_RETURN_IF_ERROR(CheckRotaryCache(ctx, 1, "cos_cache", cache_rank, half));
  return CheckRotaryCache(ctx, 2, "sin_cache", cache_rank, half);
}

// LinearAttention: output [B, T, Hq * dv] in query's dtype, present_state
// [B, Hkv, dk, dv] in past_state's dtype (query's without it).
Status InferLinearAttention(InferenceContext& ctx) {
  VIGIL_ASSIGN_OR_RETURN(LinearAttentionAttrs attrs, ReadLinearAttentionAttrs(ctx.node()));
  const char* names[] = {"query", "key", "value", "past_state", "decay", "beta"};
  for (size_t i = 0; i < 6; ++i) VIGIL_RETURN_IF_ERROR(CheckFloatInput(ctx, i, names[i]));
  const ir::TypeInfo *q = ctx.input_type(0), *k = ctx.input_type(1), *v = ctx.input_type(2);
  const ir::TypeInfo* past = ctx.has_input(3) ? ctx.input_type(3) : nullptr;
  if (attrs.gated != ctx.has_input(4)) {
    return ctx.Fail("the update rule {} the input decay", attrs.gated ? "needs" : "does not take");
  }
  if (attrs.delta != ctx.has_input(5)) {
    return ctx.Fail("the update rule {} the input beta", attrs.delta ? "needs" : "does not take");
  }
  if (!IsTensor(q)) return Status::Ok();
  const ir::DataType state_type = IsTensor(past) ? past->elem_type : q->elem_type;
  if (!HasRank(q) || !HasRank(v)) {
    ctx.set_output(0, TensorTypeUnknownShape(q->elem_type));
    if (ctx.num_outputs() > 1) ctx.set_output(1, TensorTypeUnknownShape(state_type));
    return Status::Ok();
  }
  auto kq = KnownDims(q), kk = KnownDims(k), kv = KnownDims(v);
  auto kp = ctx.has_input(3) ? KnownDims(past) : std::nullopt;
  auto kg = ctx.has_input(4) ? KnownDims(ctx.input_type(4)) : std::nullopt;
  auto kb = ctx.has_input(5) ? KnownDims(ctx.input_type(5)) : std::nullopt;
  const bool all_known = kq && kk && kv && (!ctx.has_input(3) || kp) && (!ctx.has_input(4) || kg) &&
                         (!ctx.has_input(5) || kb);
  if (all_known) {
    VIGIL_ASSIGN_OR_RETURN(LinearAttentionDims d,
                           ResolveLinearAttentionDims(ctx.node(), attrs, *kq, *kk, *kv, kp ? &*kp : nullptr,
                                                      kg ? &*kg : nullptr, kb ? &*kb : nullptr));
    ctx.set_output(0, TensorType(q->elem_type, std::vector<int64_t>{d.batch, d.seq, d.q_heads * d.dv}));
    if (ctx.num_outputs() > 1) {
      ctx.set_output(1, TensorType(state_type, std::vector<int64_t>{d.batch, d.kv_heads, d.dk, d.dv}));
    }
    return Status::Ok();
  }
  const auto &qd = q->shape.dims, &vd = v->shape.dims;
  if (qd.size() != 3 || vd.size() != 3) {
    return ctx.Fail("query {} and value {} must be 3-D [batch, seq, heads * head_size]", ir::ShapeToString(q->shape),
                    ir::ShapeToString(v->shape));
  }
  const ir::Dim dv = DivDim(ctx, vd[2], attrs.kv_num_heads);
  ctx.set_output(0, TensorType(q->elem_type, {qd[0], qd[1], MulDim(ctx, ir::Dim::Known(attrs.q_num_heads), dv)}));
  if (ctx.num_outputs() > 1) {
    ctx.set_output(1, TensorType(state_type, {qd[0], ir::Dim::Known(attrs.kv_num_heads),
                                              DivDim(ctx, qd[2], attrs.q_num_heads), dv}));
  }
  return Status::Ok();
}

// FlexAttention: Q [B, Hq, L, E], K [B, Hkv, S, E], V [B, Hkv, S, Ev], one
// float dtype, Hq a multiple of Hkv; Y [B, Hq, L, Ev] of Q's dtype. The
// modifier bodies are checked where the op is expanded.
Status InferFlexAttention(InferenceContext& ctx) {
  const ir::TypeInfo *q = ctx.input_type(0), *k = ctx.input_type(1), *v = ctx.input_type(2);
  VIGIL_RETURN_IF_ERROR(CheckFloatInput(ctx, 0, "Q"));
  VIGIL_RETURN_IF_ERROR(CheckFloatInput(ctx, 1, "K", q, "Q"));
  VIGIL_RETURN_IF_ERROR(CheckFloatInput(ctx, 2, "V", q, "Q"));
  const ir::DataType dtype = IsTensor(q) ? q->elem_type : ir::DataType::kUndefined;
  const char* names[] = {"Q", "K", "V"};
  const ir::TypeInfo* types[] = {q, k, v};
  for (int i = 0; i < 3; ++i) {
    if (HasRank(types[i]) && types[i]->shape.dims.size() != 4) {
      return ctx.Fail("input {} ({}) is {}, expected rank 4 ([batch, heads, sequence, head_size])", i, names[i],
                      ir::ShapeToString(types[i]->shape));
    }
  }
  auto known = [](const ir::TypeInfo* t, size_t d) -> std::optional<int64_t> {
    if (!HasRank(t)) return std::nullopt;
    return t->shape.dims[d].value;
  };
  const auto hq = known(q, 1), hkv = known(k, 1);
  if (hq && hkv && (*hkv <= 0 || *hq % *hkv != 0)) {
    return ctx.Fail("Q has {} heads and K {}; the query heads must be a multiple of the key/value heads", *hq, *hkv);
  }
  const auto eq = known(q, 3), ek = known(k, 3);
  if (eq && ek && *eq != *ek) return ctx.Fail("Q has head size {} and K {}; they must match", *eq, *ek);
  const auto sk = known(k, 2), sv = known(v, 2);
  if (sk && sv && *sk != *sv) return ctx.Fail("K has {} positions and V {}; they must match", *sk, *sv);
  if (!HasRank(q) || !HasRank(v)) {
    ctx.set_output(0, TensorTypeUnknownShape(dtype));
    return Status::Ok();
  }
  auto dim = [&ctx](const ir::Dim& d) { return d.is_known() || d.is_symbolic() ? d : ctx.NewSymbol(); };
  const auto& qd = q->shape.dims;
  ctx.set_output(0, TensorType(dtype, {dim(qd[0]), dim(qd[1]), dim(qd[2]), dim(v->shape.dims[3])}));
  return Status::Ok();
}

const OpSchema kAttentionSchemas[] = {
    // Opset 24 adds the input nonpad_kv_seqlen, opset 25 the window attributes.
    {"", "Attention", 23, 23, 3, 6, 1, 4, InferAttention},
    {"", "Attention", 24, 24, 3, 7, 1, 4, InferAttention},
    {"", "Attention", 25, kLatest, 3, 7, 1, 4, InferAttention},
    {"", "RotaryEmbedding", 23, kLatest, 3, 4, 1, 1, InferRotaryEmbedding},
    {"", "LinearAttention", 27, kLatest, 3, 6, 1, 2, InferLinearAttention},
    {"ai.onnx.preview", "FlexAttention", 1, kLatest, 3, 3, 1, 1, InferFlexAttention},
};

}  // namespace

std::span<const OpSchema> AttentionSchemas() { return kAttentionSchemas; }

}  // namespace vigil::ops
