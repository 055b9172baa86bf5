// ONNX LinearAttention (opset 27) on the CPU: a recurrent state S [dk, dv]
// per batch entry and key/value head, updated step by step (the chunk_size
// hint does not change the result):
//
//   gated:  S = S * exp(g_t)                     (g_t per head, or per key dim: row-wise)
//   delta:  v_t = beta_t * (v_t - S^T k_t)       (the delta rule's correction)
//           S = S + k_t v_t^T
//   y_t   = scale * S^T q_t                      (for each query head of the group)
//
// with update rule 'linear' (neither), 'gated', 'delta' or 'gated_delta'
// (both), query head h reading kv head h / (q_heads / kv_heads), and scale
// the attribute or 1 / sqrt(dk). Computed in double; the output is rounded
// into query's dtype, present_state into past_state's (query's without it).
#include <cmath>
#include <vector>

#include "backends/cpu/attention_kernels.h"
#include "backends/cpu/element_codec.h"
#include "ops/attention_params.h"

namespace vigil::cpu {

using ir::DataType;
namespace {

// A float input's values as double ({} when absent).
Result<std::vector<double>> Doubles(KernelContext& ctx, size_t i) {
  if (!ctx.has_input(i)) return std::vector<double>{};
  return ReadParamAsDoubles(ctx, i);
}

// Writes `values` into a new output i of dtype `dtype`.
Status WriteDoubles(KernelContext& ctx, size_t i, DataType dtype, std::vector<int64_t> shape,
                    const std::vector<double>& values) {
  if (!ctx.output_wanted(i)) return Status::Ok();
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * t, ctx.Output(i, dtype, std::move(shape)));
  switch (dtype) {
    case DataType::kFloat32:
    case DataType::kFloat64:
    case DataType::kFloat16:
    case DataType::kBfloat16: break;
    default: return ctx.Fail("output {} would be {}, expected a float type", i, ir::DataTypeName(dtype));
  }
  auto store = [&]<DataType D>() {
    using C = ElementCodec<D>;
    auto* out = t->data<typename C::Storage>();
    for (size_t k = 0; k < values.size(); ++k) out[k] = C::Store(static_cast<typename C::Compute>(values[k]));
  };
  if (dtype == DataType::kFloat32) store.template operator()<DataType::kFloat32>();
  if (dtype == DataType::kFloat64) store.template operator()<DataType::kFloat64>();
  if (dtype == DataType::kFloat16) store.template operator()<DataType::kFloat16>();
  if (dtype == DataType::kBfloat16) store.template operator()<DataType::kBfloat16>();
  return Status::Ok();
}

}  // namespace

Status LinearAttentionKernel(KernelContext& ctx) {
  VIGIL_RETURN_IF_ERROR(RequireInputs(ctx, 3));
  VIGIL_ASSIGN_OR_RETURN(ops::LinearAttentionAttrs attrs, ops::ReadLinearAttentionAttrs(ctx.node()));
  auto shape_of = [&](size_t i) { return ctx.has_input(i) ? &ctx.input(i)->shape() : nullptr; };
  VIGIL_ASSIGN_OR_RETURN(ops::LinearAttentionDims d,
                         ops::ResolveLinearAttentionDims(ctx.node(), attrs, ctx.input(0)->shape(),
                                                         ctx.input(1)->shape(), ctx.input(2)->shape(), shape_of(3),
                                                         shape_of(4), shape_of(5)));
  std::vector<double> in[6];
  for (size_t i = 0; i < 6; ++i) {
    VIGIL_ASSIGN_OR_RETURN(in[i], Doubles(ctx, i));
  }
  const std::vector<double>&q = in[0], &k = in[1], &v = in[2], &g = in[4], &beta = in[5];
  const double scale = attrs.scale != 0 ? attrs.scale : 1.0 / std::sqrt(static_cast<double>(d.dk));
  const int64_t group = d.q_heads / d.kv_heads, dk = d.dk, dv = d.dv, T = d.seq;
  const int64_t state_size = dk * dv;
  std::vector<double> state = in[3];  // [B, Hkv, dk, dv]
  if (state.empty()) state.assign(static_cast<size_t>(d.batch * d.kv_heads * state_size), 0.0);
  std::vector<double> out(static_cast<size_t>(d.batch * T * d.q_heads * dv));
  std::vector<double> vt(static_cast<size_t>(dv));
  for (int64_t b = 0; b < d.batch; ++b) {
    for (int64_t h = 0; h < d.kv_heads; ++h) {
      double* s = state.data() + (b * d.kv_heads + h) * state_size;
      for (int64_t t = 0; t < T; ++t) {
        const int64_t row = b * T + t;
        const double* kt = k.data() + (row * d.kv_heads + h) * dk;
        for (int64_t m = 0; m < dv; ++m) vt[m] = v[(row * d.kv_heads + h) * dv + m];
        if (attrs.gated) {
          for (int64_t i = 0; i < dk; ++i) {
            const double log_decay = d.decay_per_key ? g[(row * d.kv_heads + h) * dk + i] : g[row * d.kv_heads + h];
            const double decay = std::exp(log_decay);
            for (int64_t m = 0; m < dv; ++m) s[i * dv + m] *= decay;
          }
        }
        if (attrs.delta) {
          const double bt = d.beta_shared ? beta[row] : beta[row * d.kv_heads + h];
          for (int64_t m = 0; m < dv; ++m) {
            double retrieved = 0;
            for (int64_t i = 0; i < dk; ++i) retrieved += s[i * dv + m] * kt[i];
            vt[m] = bt * (vt[m] - retrieved);
          }
        }
        for (int64_t i = 0; i < dk; ++i)
          for (int64_t m = 0; m < dv; ++m) s[i * dv + m] += kt[i] * vt[m];
        for (int64_t qh = h * group; qh < (h + 1) * group; ++qh) {
          const double* qt = q.data() + (row * d.q_heads + qh) * dk;
          double* y = out.data() + (row * d.q_heads + qh) * dv;
          for (int64_t m = 0; m < dv; ++m) {
            double acc = 0;
            for (int64_t i = 0; i < dk; ++i) acc += qt[i] * s[i * dv + m];
            y[m] = scale * acc;
          }
        }
      }
    }
  }
  const DataType qtype = ctx.input(0)->dtype();
  VIGIL_RETURN_IF_ERROR(WriteDoubles(ctx, 0, qtype, {d.batch, T, d.q_heads * dv}, out));
  const DataType state_type = ctx.has_input(3) ? ctx.input(3)->dtype() : qtype;
  return WriteDoubles(ctx, 1, state_type, {d.batch, d.kv_heads, dk, dv}, state);
}

}  // namespace vigil::cpu
