// ONNX Attention (opsets 23, 24, 25) on the CPU, and the family's kernel
// list (RotaryEmbedding is in rotary_embedding.cpp, LinearAttention in
// linear_attention.cpp). Per batch, query head and query row:
//
//   logit[j]  = scale * q . k[j]                 (scale: attribute, else 1/sqrt(head_size))
//   capped[j] = softcap * tanh(logit[j] / softcap)   (when softcap > 0)
//   bias[j]   = attn_mask + causal + window + padding, each 0 or -inf except a float mask's values
//   p         = softmax(capped + bias), all 0 where every bias[j] is -inf
//   y         = sum_j p[j] v[j]
//
// with K and V the past cache followed by the new keys and values, and query
// head h reading key/value head h / (q_heads / kv_heads) (GQA, MQA). The causal
// frontier and the window are offset-aligned at the bottom right: query i sits
// at position i + offset, offset being the past length (internal cache),
// nonpad_kv_seqlen[b] - q_seq (external cache) or 0.
//
// Everything is computed in double from the inputs' values and rounded once
// into each output's dtype, which is at least as precise as any
// softmax_precision. The present caches are exact copies.
#include <cmath>
#include <cstring>
#include <limits>

#include "backends/cpu/attention_kernels.h"
#include "backends/cpu/element_codec.h"
#include "ops/attention_params.h"
#include "backends/cpu/kernel_families.h"

namespace vigil::cpu {
namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

// Input i (when present) has a float dtype, and input `same`'s dtype when given.
Status CheckFloatInput(const KernelContext& ctx, size_t i, const char* name, int same = -1,
                       const char* same_name = "") {
  const runtime::Tensor* t = ctx.input(i);
  if (!t) return Status::Ok();
  if (!ir::IsFloatingPoint(t->dtype())) return ctx.UnsupportedDtype(i);
  if (same >= 0 && t->dtype() != ctx.input(same)->dtype()) {
    return ctx.Fail("input {} ({}) is {}, {} is {}; their dtypes must match", i, name, t->Describe(), same_name,
                    ctx.input(same)->Describe());
  }
  return Status::Ok();
}

// Writes `values` into a float tensor of any float dtype, rounding once.
void StoreAll(runtime::Tensor& t, const std::vector<double>& values) {
  auto store = [&]<ir::DataType D>() {
    using C = ElementCodec<D>;
    auto* out = t.data<typename C::Storage>();
    for (size_t i = 0; i < values.size(); ++i) out[i] = C::Store(static_cast<typename C::Compute>(values[i]));
  };
  switch (t.dtype()) {
    case ir::DataType::kFloat32: store.template operator()<ir::DataType::kFloat32>(); break;
    case ir::DataType::kFloat64: store.template operator()<ir::DataType::kFloat64>(); break;
    case ir::DataType::kFloat16: store.template operator()<ir::DataType::kFloat16>(); break;
    case ir::DataType::kBfloat16: store.template operator()<ir::DataType::kBfloat16>(); break;
    default: break;  // only float outputs are allocated
  }
}

// K (or V) after the past cache: [batch, kv_heads, total_seq, size] in double.
// When `present` (output 1 or 2) is wanted it gets the same rows, copied
// bit for bit in the input's dtype.
Result<std::vector<double>> JoinCache(KernelContext& ctx, const ops::AttentionDims& d, size_t input, size_t past,
                                      int64_t size, size_t present) {
  const runtime::Tensor& cur = *ctx.input(input);
  const runtime::Tensor* prev = ctx.input(past);
  const int64_t rows = d.batch * d.kv_heads * d.total_seq;
  // Element offset of row (b, h, t) of the joined cache in `prev` (t < past_seq)
  // or `cur`, whose layout is [B, S, H * size] (3-D) or [B, H, S, size].
  auto source = [&](int64_t b, int64_t h, int64_t t) -> std::pair<const runtime::Tensor*, int64_t> {
    if (t < d.past_seq) return {prev, ((b * d.kv_heads + h) * d.past_seq + t) * size};
    const int64_t s = t - d.past_seq;
    if (d.rank3) return {&cur, ((b * d.kv_seq + s) * d.kv_heads + h) * size};
    return {&cur, ((b * d.kv_heads + h) * d.kv_seq + s) * size};
  };
  std::vector<double> joined, cur_values, prev_values;
  VIGIL_RETURN_IF_ERROR(ResizeScratch(ctx, joined, static_cast<size_t>(rows * size)));
  VIGIL_ASSIGN_OR_RETURN(cur_values, ReadParamAsDoubles(ctx, input));
  if (prev) {
    VIGIL_ASSIGN_OR_RETURN(prev_values, ReadParamAsDoubles(ctx, past));
  }
  runtime::Tensor* out = nullptr;
  if (ctx.output_wanted(present)) {
    const std::vector<int64_t> shape = present == 1 ? d.present_key_shape() : d.present_value_shape();
    VIGIL_ASSIGN_OR_RETURN(out, ctx.Output(present, cur.dtype(), shape));
  }
  const size_t elem = static_cast<size_t>(ir::DataTypeBits(cur.dtype()) / 8);
  int64_t row = 0;
  for (int64_t b = 0; b < d.batch; ++b) {
    for (int64_t h = 0; h < d.kv_heads; ++h) {
      for (int64_t t = 0; t < d.total_seq; ++t, ++row) {
        auto [from, at] = source(b, h, t);
        const std::vector<double>& values = from == prev ? prev_values : cur_values;
        std::copy_n(values.begin() + at, size, joined.begin() + row * size);
        if (out && size > 0) {
          std::memcpy(static_cast<uint8_t*>(out->raw_data()) + row * size * elem,
                      static_cast<const uint8_t*>(from->raw_data()) + at * elem, size * elem);
        }
      }
    }
  }
  return joined;
}

// attn_mask as an additive bias: bool True -> 0, False -> -inf; float values
// as they are. Keys past the mask's last dim (opset 24 on) are masked out.
struct MaskBias {
  std::vector<double> values;  // empty: no mask
  int64_t stride[4] = {0, 0, 0, 0};
  int64_t keys = 0;
  bool padded = false;  // keys >= `keys` are -inf (else a last dim of 1 broadcasts)

  double At(int64_t b, int64_t h, int64_t i, int64_t j) const {
    if (values.empty()) return 0;
    if (padded && j >= keys) return kNegInf;
    return values[b * stride[0] + h * stride[1] + i * stride[2] + j * stride[3]];
  }
};

Result<MaskBias> ReadMask(KernelContext& ctx, const ops::AttentionDims& d) {
  MaskBias m;
  const runtime::Tensor* mask = ctx.input(3);
  if (!mask) return m;
  VIGIL_ASSIGN_OR_RETURN(std::vector<int64_t> dims,
                         ops::ResolveAttentionMask(ctx.node(), ctx.opset(), d, mask->shape()));
  if (mask->dtype() == ir::DataType::kBool) {
    const auto* bits = static_cast<const uint8_t*>(mask->raw_data());
    VIGIL_RETURN_IF_ERROR(ResizeScratch(ctx, m.values, mask->element_count()));
    for (size_t i = 0; i < m.values.size(); ++i) m.values[i] = bits[i] ? 0.0 : kNegInf;
  } else if (ir::IsFloatingPoint(mask->dtype())) {
    VIGIL_ASSIGN_OR_RETURN(m.values, ReadParamAsDoubles(ctx, 3));
  } else {
    return ctx.Unsupported("input 3 (attn_mask) is {}; the CPU kernel takes a bool or float mask", mask->Describe());
  }
  int64_t stride = 1;
  for (int i = 3; i >= 0; --i) {
    m.stride[i] = dims[i] == 1 ? 0 : stride;
    stride *= dims[i];
  }
  m.keys = dims[3];
  m.padded = ctx.opset() >= 24;
  return m;
}

// nonpad_kv_seqlen: one count of valid keys per batch, in [0, kv_seq].
Result<std::vector<int64_t>> ReadValidKeys(KernelContext& ctx, const ops::AttentionDims& d) {
  const runtime::Tensor* t = ctx.input(6);
  if (!t) return std::vector<int64_t>{};
  if (ctx.has_input(4)) {
    return ctx.Fail("nonpad_kv_seqlen (an external KV cache) cannot be combined with past_key and past_value");
  }
  if (t->dtype() != ir::DataType::kInt64 || t->shape() != std::vector<int64_t>{d.batch}) {
    return ctx.Fail("input 6 (nonpad_kv_seqlen) is {}; it must be int64[{}] (one count per batch)", t->Describe(),
                    d.batch);
  }
  std::vector<int64_t> n(static_cast<size_t>(d.batch));
  if (!n.empty()) std::memcpy(n.data(), t->raw_data(), n.size() * sizeof(int64_t));
  for (size_t b = 0; b < n.size(); ++b) {
    if (n[b] < 0 || n[b] > d.kv_seq) {
      return ctx.Fail("nonpad_kv_seqlen[{}] is {}; it must be in [0, {}] (the keys in K)", b, n[b], d.kv_seq);
    }
  }
  return n;
}

// Softmax of one row in place; NaN anywhere gives NaN everywhere. A row of
// only -inf gives 0s (its max is taken as 0, its sum of 0 as 1).
void SoftmaxRow(std::vector<double>& row) {
  double top = kNegInf;
  for (double v : row) {
    if (v > top || std::isnan(v)) top = v;
    if (std::isnan(top)) break;
  }
  if (top == kNegInf) top = 0;
  double sum = 0;
  for (double& v : row) sum += (v = std::exp(v - top));
  if (sum == 0) sum = 1;
  for (double& v : row) v /= sum;
}

}  // namespace

Status AttentionKernel(KernelContext& ctx) {
  VIGIL_RETURN_IF_ERROR(RequireInputs(ctx, 3));
  VIGIL_ASSIGN_OR_RETURN(ops::AttentionAttrs attrs, ops::ReadAttentionAttrs(ctx.node(), ctx.opset()));
  VIGIL_RETURN_IF_ERROR(CheckFloatInput(ctx, 0, "Q"));
  VIGIL_RETURN_IF_ERROR(CheckFloatInput(ctx, 1, "K", 0, "Q"));
  VIGIL_RETURN_IF_ERROR(CheckFloatInput(ctx, 2, "V"));
  VIGIL_RETURN_IF_ERROR(CheckFloatInput(ctx, 4, "past_key", 0, "Q"));
  VIGIL_RETURN_IF_ERROR(CheckFloatInput(ctx, 5, "past_value", 2, "V"));
  const runtime::Tensor &q = *ctx.input(0), &v = *ctx.input(2);
  const runtime::Tensor *past_key = ctx.input(4), *past_value = ctx.input(5);
  VIGIL_ASSIGN_OR_RETURN(ops::AttentionDims d,
                         ops::ResolveAttentionDims(ctx.node(), ctx.opset(), attrs, q.shape(), ctx.input(1)->shape(),
                                                   v.shape(), past_key ? &past_key->shape() : nullptr,
                                                   past_value ? &past_value->shape() : nullptr));
  VIGIL_ASSIGN_OR_RETURN(MaskBias mask, ReadMask(ctx, d));
  VIGIL_ASSIGN_OR_RETURN(std::vector<int64_t> valid_keys, ReadValidKeys(ctx, d));
  VIGIL_ASSIGN_OR_RETURN(std::vector<double> keys, JoinCache(ctx, d, 1, 4, d.head_size, 1));
  VIGIL_ASSIGN_OR_RETURN(std::vector<double> values, JoinCache(ctx, d, 2, 5, d.v_head_size, 2));
  VIGIL_ASSIGN_OR_RETURN(std::vector<double> queries, ReadParamAsDoubles(ctx, 0));

  const double scale = attrs.scale ? double{*attrs.scale} : 1.0 / std::sqrt(static_cast<double>(d.head_size));
  const double softcap = attrs.softcap;
  const int64_t group = d.q_heads / d.kv_heads;
  const bool want_qk = ctx.output_wanted(3);
  std::vector<double> y, qk;
  VIGIL_RETURN_IF_ERROR(ResizeScratch(ctx, y, static_cast<size_t>(d.batch * d.q_heads * d.q_seq * d.v_head_size)));
  if (want_qk) {
    VIGIL_RETURN_IF_ERROR(ResizeScratch(ctx, qk, static_cast<size_t>(d.batch * d.q_heads * d.q_seq * d.total_seq)));
  }
  std::vector<double> raw(d.total_seq), capped(d.total_seq), score(d.total_seq);
  for (int64_t b = 0; b < d.batch; ++b) {
    // Position of query row 0 among the keys.
    const int64_t offset = past_key ? d.past_seq : valid_keys.empty() ? 0 : valid_keys[b] - d.q_seq;
    for (int64_t h = 0; h < d.q_heads; ++h) {
      const int64_t kv_row0 = (b * d.kv_heads + h / group) * d.total_seq;
      for (int64_t i = 0; i < d.q_seq; ++i) {
        const int64_t q_at = d.rank3 ? ((b * d.q_seq + i) * d.q_heads + h) * d.head_size
                                     : ((b * d.q_heads + h) * d.q_seq + i) * d.head_size;
        const int64_t pos = i + offset;
        bool all_masked = true;
        for (int64_t j = 0; j < d.total_seq; ++j) {
          const double* k = &keys[(kv_row0 + j) * d.head_size];
          double dot = 0;
          for (int64_t e = 0; e < d.head_size; ++e) dot += queries[q_at + e] * k[e];
          raw[j] = scale * dot;
          capped[j] = softcap > 0 ? softcap * std::tanh(raw[j] / softcap) : raw[j];
          double bias = mask.At(b, h, i, j);
          const bool blocked = (attrs.is_causal && j > pos) || (attrs.left_window >= 0 && pos - j > attrs.left_window) ||
                               (attrs.right_window >= 0 && j - pos > attrs.right_window) ||
                               (!valid_keys.empty() && j >= valid_keys[b]);
          if (blocked) bias += kNegInf;
          all_masked = all_masked && bias == kNegInf;
          score[j] = capped[j] + bias;
        }
        const int64_t row = (b * d.q_heads + h) * d.q_seq + i;
        if (want_qk && attrs.qk_mode != ops::QkOutputMode::kSoftmax) {
          const std::vector<double>& src = attrs.qk_mode == ops::QkOutputMode::kRaw         ? raw
                                           : attrs.qk_mode == ops::QkOutputMode::kSoftcapped ? capped
                                                                                             : score;
          std::copy(src.begin(), src.end(), qk.begin() + row * d.total_seq);
        }
        SoftmaxRow(score);
        if (all_masked) std::fill(score.begin(), score.end(), 0.0);
        if (want_qk && attrs.qk_mode == ops::QkOutputMode::kSoftmax) {
          std::copy(score.begin(), score.end(), qk.begin() + row * d.total_seq);
        }
        const int64_t y_at = d.rank3 ? ((b * d.q_seq + i) * d.q_heads + h) * d.v_head_size : row * d.v_head_size;
        for (int64_t j = 0; j < d.total_seq; ++j) {
          const double* val = &values[(kv_row0 + j) * d.v_head_size];
          for (int64_t e = 0; e < d.v_head_size; ++e) y[y_at + e] += score[j] * val[e];
        }
      }
    }
  }
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * y_out, ctx.Output(0, q.dtype(), d.y_shape()));
  StoreAll(*y_out, y);
  if (want_qk) {
    VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * qk_out, ctx.Output(3, q.dtype(), d.qk_shape()));
    StoreAll(*qk_out, qk);
  }
  return Status::Ok();
}

std::span<const KernelDef> AttentionKernels() {
  // One kernel for every opset: it reads the opset (nonpad_kv_seqlen from
  // 24, windows from 25, mask padding from 24).
  static const KernelDef kKernels[] = {
      {"", "Attention", 23, kLatest, AttentionKernel},
      {"", "RotaryEmbedding", 23, kLatest, RotaryEmbeddingKernel},
      {"", "LinearAttention", 27, kLatest, LinearAttentionKernel},
  };
  return kKernels;
}

}  // namespace vigil::cpu
