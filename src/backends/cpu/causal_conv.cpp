// ONNX CausalConvWithState (opset 27) on the CPU: a depthwise 1-D causal
// convolution over input [B, C, L] with weight [C, 1, K], its left context
// the past_state [B, C, K - 1] (zeros without it):
//
//   padded    = concat(past_state, input) along L      [B, C, K - 1 + L]
//   out[b,c,t] = bias[c] + sum_j weight[c, 0, j] * padded[b, c, t + j]
//   output    = out, or out * sigmoid(out) for activation 'silu' / 'swish'
//   present_state = the last K - 1 steps of padded
//
// Sums are taken in double and rounded into the input's dtype before the
// activation (as the ONNX reference does); present_state is an exact copy.
#include <cmath>
#include <string>
#include <vector>

#include "backends/cpu/conv_pool_kernels.h"
#include "backends/cpu/element_codec.h"

namespace vigil::cpu {

using ir::DataType;

Status CausalConvWithStateKernel(KernelContext& ctx) {
  VIGIL_RETURN_IF_ERROR(RequireInputs(ctx, 2));
  const runtime::Tensor& x = *ctx.input(0);
  const runtime::Tensor& w = *ctx.input(1);
  VIGIL_ASSIGN_OR_RETURN(std::string activation, ops::StringAttr(ctx.node(), "activation", "none"));
  if (activation != "none" && activation != "silu" && activation != "swish") {
    return AttributeError(ctx, "attribute activation is '{}', expected 'none', 'silu' or 'swish'", activation);
  }
  const bool silu = activation != "none";
  if (x.rank() != 3) return ctx.Fail("input is {}, expected rank 3 [batch, channels, length]", x.Describe());
  const int64_t batch = x.dim(0), channels = x.dim(1), length = x.dim(2);
  if (w.rank() != 3 || w.dim(0) != channels || w.dim(1) != 1 || w.dim(2) < 1) {
    return ctx.Fail("weight is {}, expected [{}, 1, K] with K >= 1 (one filter per channel of input {})",
                    w.Describe(), channels, x.Describe());
  }
  const int64_t k = w.dim(2), context = k - 1;
  for (size_t i : {size_t{1}, size_t{2}, size_t{3}}) {
    if (ctx.has_input(i) && ctx.input(i)->dtype() != x.dtype()) {
      return ctx.Fail("input {} is {}, expected {} like the input", i, ir::DataTypeName(ctx.input(i)->dtype()),
                      ir::DataTypeName(x.dtype()));
    }
  }
  if (ctx.has_input(2) && (ctx.input(2)->rank() != 1 || ctx.input(2)->dim(0) != channels)) {
    return ctx.Fail("bias is {}, expected [{}]", ctx.input(2)->Describe(), channels);
  }
  const runtime::Tensor* past = ctx.input(3);
  if (past && (past->rank() != 3 || past->dim(0) != batch || past->dim(1) != channels || past->dim(2) != context)) {
    return ctx.Fail("past_state is {}, expected [{}, {}, {}] (kernel size {} - 1)", past->Describe(), batch, channels,
                    context, k);
  }
  return DispatchFloat(ctx, 0, [&]<DataType D>() -> Status {
    using C = ElementCodec<D>;
    using S = typename C::Storage;
    VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * y, ctx.Output(0, x.dtype(), x.shape()));
    runtime::Tensor* state = nullptr;
    if (ctx.output_wanted(1)) {
      VIGIL_ASSIGN_OR_RETURN(state, ctx.Output(1, x.dtype(), {batch, channels, context}));
    }
    const S* xs = x.data<S>();
    const S* ws = w.data<S>();
    const S* bs = ctx.has_input(2) ? ctx.input(2)->data<S>() : nullptr;
    const S* ps = past ? past->data<S>() : nullptr;
    S* ys = y->data<S>();
    std::vector<double> padded(static_cast<size_t>(context + length));
    std::vector<S> padded_raw(padded.size());
    for (int64_t b = 0; b < batch; ++b) {
      for (int64_t c = 0; c < channels; ++c) {
        const int64_t line = b * channels + c;
        for (int64_t t = 0; t < context; ++t) {
          padded_raw[t] = ps ? ps[line * context + t] : C::Store(0);
        }
        for (int64_t t = 0; t < length; ++t) padded_raw[context + t] = xs[line * length + t];
        for (size_t i = 0; i < padded.size(); ++i) padded[i] = static_cast<double>(C::Load(padded_raw[i]));
        const double bias = bs ? static_cast<double>(C::Load(bs[c])) : 0.0;
        for (int64_t t = 0; t < length; ++t) {
          double acc = bias;
          for (int64_t j = 0; j < k; ++j) acc += static_cast<double>(C::Load(ws[c * k + j])) * padded[t + j];
          S out = C::Store(static_cast<typename C::Compute>(acc));
          if (silu) {
            const double v = static_cast<double>(C::Load(out));
            out = C::Store(static_cast<typename C::Compute>(v / (1.0 + std::exp(-v))));
          }
          ys[line * length + t] = out;
        }
        if (state) {
          S* ss = state->data<S>() + line * context;
          for (int64_t t = 0; t < context; ++t) ss[t] = padded_raw[length + t];
        }
      }
    }
    return Status::Ok();
  });
}

}  // namespace vigil::cpu
