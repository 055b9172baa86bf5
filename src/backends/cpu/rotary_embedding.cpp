// ONNX RotaryEmbedding (opset 23) on the CPU. Each head's first rotary_dim
// elements are taken as rotary_dim / 2 pairs, (x[k], x[k + rotary_dim / 2])
// or, interleaved, (x[2k], x[2k + 1]), and every pair (a, b) is rotated by
// the angle of its token's cache row:
//
//   (a, b) -> (cos[k] * a - sin[k] * b, sin[k] * a + cos[k] * b)
//
// The cache row is cos_cache[position_ids[b, s]] (2-D caches) or
// cos_cache[b, s] (3-D caches, without position_ids); the head's other
// elements are copied. Computed in double, rounded once into X's dtype.
#include <cstring>
#include <vector>

#include "backends/cpu/attention_kernels.h"
#include "backends/cpu/element_codec.h"
#include "ops/attention_params.h"

namespace vigil::cpu {
namespace {

// Where each token's cos/sin row starts (in elements), after checking the
// caches' shapes and the positions against them.
Result<std::vector<int64_t>> CacheRows(KernelContext& ctx, const ops::RotaryDims& d) {
  const runtime::Tensor &cos = *ctx.input(1), &sin = *ctx.input(2);
  const int64_t half = d.rotary_dim / 2;
  if (cos.shape() != sin.shape()) {
    return ctx.Fail("input 1 (cos_cache) is {} and input 2 (sin_cache) is {}; their shapes must match",
                    cos.Describe(), sin.Describe());
  }
  std::vector<int64_t> rows(static_cast<size_t>(d.batch * d.seq));
  const runtime::Tensor* ids = ctx.input(3);
  if (!ids) {
    if (cos.shape() != std::vector<int64_t>{d.batch, d.seq, half}) {
      return ctx.Fail("input 1 (cos_cache) is {}; without position_ids it must be [batch, seq, rotary_dim / 2] = "
                      "[{},{},{}]", cos.Describe(), d.batch, d.seq, half);
    }
    for (size_t t = 0; t < rows.size(); ++t) rows[t] = static_cast<int64_t>(t) * half;
    return rows;
  }
  if (ids->dtype() != ir::DataType::kInt64 || ids->shape() != std::vector<int64_t>{d.batch, d.seq}) {
    return ctx.Fail("input 3 (position_ids) is {}; it must be int64[{},{}] (batch, seq)", ids->Describe(), d.batch,
                    d.seq);
  }
  if (cos.rank() != 2 || cos.dim(1) != half) {
    return ctx.Fail("input 1 (cos_cache) is {}; with position_ids it must be [max_position + 1, rotary_dim / 2 = {}]",
                    cos.Describe(), half);
  }
  std::vector<int64_t> positions(rows.size());
  if (!positions.empty()) std::memcpy(positions.data(), ids->raw_data(), positions.size() * sizeof(int64_t));
  for (size_t t = 0; t < rows.size(); ++t) {
    if (positions[t] < 0 || positions[t] >= cos.dim(0)) {
      return ctx.Fail("position_ids[{}][{}] is {}; the caches {} have positions 0 to {}", t / d.seq, t % d.seq,
                      positions[t], cos.Describe(), cos.dim(0) - 1);
    }
    rows[t] = positions[t] * half;
  }
  return rows;
}

}  // namespace

Status RotaryEmbeddingKernel(KernelContext& ctx) {
  VIGIL_RETURN_IF_ERROR(RequireInputs(ctx, 3));
  const runtime::Tensor& x = *ctx.input(0);
  for (size_t i = 0; i < 3; ++i) {
    const ir::DataType dt = ctx.input(i)->dtype();
    if (dt != ir::DataType::kFloat32 && dt != ir::DataType::kFloat16 && dt != ir::DataType::kBfloat16) {
      return ctx.UnsupportedDtype(i);
    }
    if (dt != x.dtype()) {
      return ctx.Fail("input {} is {}, input 0 (X) is {}; their dtypes must match", i, ctx.input(i)->Describe(),
                      x.Describe());
    }
  }
  VIGIL_ASSIGN_OR_RETURN(ops::RotaryAttrs attrs, ops::ReadRotaryAttrs(ctx.node()));
  VIGIL_ASSIGN_OR_RETURN(ops::RotaryDims d, ops::ResolveRotaryDims(ctx.node(), attrs, x.shape()));
  VIGIL_ASSIGN_OR_RETURN(std::vector<int64_t> rows, CacheRows(ctx, d));
  VIGIL_ASSIGN_OR_RETURN(std::vector<double> cos, ReadParamAsDoubles(ctx, 1));
  VIGIL_ASSIGN_OR_RETURN(std::vector<double> sin, ReadParamAsDoubles(ctx, 2));
  const int64_t half = d.rotary_dim / 2;
  return DispatchFloat(ctx, 0, [&]<ir::DataType D>() -> Status {
    using C = ElementCodec<D>;
    using S = typename C::Storage;
    VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * y, ctx.Output(0, x.dtype(), x.shape()));
    std::vector<S> in(x.element_count());
    if (!in.empty()) std::memcpy(in.data(), x.raw_data(), in.size() * sizeof(S));
    S* out = y->data<S>();
    if (!in.empty()) std::memcpy(out, in.data(), in.size() * sizeof(S));  // the elements past rotary_dim
    for (int64_t b = 0; b < d.batch; ++b) {
      for (int64_t s = 0; s < d.seq; ++s) {
        const int64_t row = rows[b * d.seq + s];
        for (int64_t h = 0; h < d.heads; ++h) {
          const int64_t at = d.rank3 ? ((b * d.seq + s) * d.heads + h) * d.head_size
                                     : ((b * d.heads + h) * d.seq + s) * d.head_size;
          for (int64_t k = 0; k < half; ++k) {
            const int64_t i1 = at + (attrs.interleaved ? 2 * k : k);
            const int64_t i2 = at + (attrs.interleaved ? 2 * k + 1 : k + half);
            const double a = C::Load(in[i1]), c = cos[row + k];
            const double bv = C::Load(in[i2]), sn = sin[row + k];
            out[i1] = C::Store(static_cast<typename C::Compute>(c * a - sn * bv));
            out[i2] = C::Store(static_cast<typename C::Compute>(sn * a + c * bv));
          }
        }
      }
    }
    return Status::Ok();
  });
}

}  // namespace vigil::cpu
