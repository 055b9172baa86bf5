// LayerNormalization, RMSNormalization and GroupNormalization: normalise
// contiguous segments of X (the trailing dims from `axis`, or one group of
// channels of one image), then scale (and shift). Statistics are computed in
// double, which is at least as precise as any stash_type.
#include <cmath>

#include "backends/cpu/element_codec.h"
#include "backends/cpu/fast/fast_kernels.h"
#include "backends/cpu/normalization_kernels.h"
#include "ops/attributes.h"

namespace vigil::cpu {
namespace {

Result<ir::DataType> ReadStashType(KernelContext& ctx) {
  VIGIL_ASSIGN_OR_RETURN(int64_t stash, ops::IntAttr(ctx.node(), "stash_type", 1));
  auto type = static_cast<ir::DataType>(stash);
  if (type != ir::DataType::kFloat32 && type != ir::DataType::kFloat64 && type != ir::DataType::kFloat16 &&
      type != ir::DataType::kBfloat16) {
    return AttributeError(ctx, "stash_type is {}, expected a float dtype (1 float32, 10 float16, 11 float64, 16 bfloat16)",
                    stash);
  }
  return type;
}

// Scale or B of LayerNormalization: values as double and their strides when
// broadcast to X (unidirectional broadcasting, as the spec allows).
struct BroadcastParam {
  std::vector<double> values;
  std::vector<int64_t> strides;
};

Result<BroadcastParam> ReadBroadcastParam(KernelContext& ctx, size_t i, const char* name) {
  const runtime::Tensor& x = *ctx.input(0);
  const runtime::Tensor& t = *ctx.input(i);
  auto strides = BroadcastStrides(t.shape(), x.shape());
  if (!strides) {
    return ctx.Fail("input {} ({}) is {}, which does not broadcast to input 0 (X) {}", i, name, t.Describe(),
                    x.Describe());
  }
  BroadcastParam p;
  p.strides = std::move(*strides);
  VIGIL_ASSIGN_OR_RETURN(p.values, ReadParamAsDoubles(ctx, i));
  return p;
}

// Whether `p`, broadcast to X's `shape`, gives one value per element of a
// row (the dims from `axis`), in order, the same for every row: strides 0
// before axis and row-major after (a dim of extent 1 may have any stride).
bool PerRowElement(const BroadcastParam& p, const std::vector<int64_t>& shape, int64_t axis, int64_t inner) {
  if (static_cast<int64_t>(p.values.size()) != inner || p.strides.size() != shape.size()) return false;
  int64_t expected = 1;
  for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
    if (shape[d] == 1) continue;
    if (p.strides[d] != (d < axis ? 0 : expected)) return false;
    if (d >= axis) expected *= shape[d];
  }
  return true;
}

// Mean / InvStdDev outputs: X's leading dims up to axis, then 1s.
Result<runtime::Tensor*> StatOutput(KernelContext& ctx, size_t i, ir::DataType type, int64_t axis) {
  if (ctx.num_outputs() <= i || !ctx.output_wanted(i)) return static_cast<runtime::Tensor*>(nullptr);
  std::vector<int64_t> shape = ctx.input(0)->shape();
  for (size_t d = axis; d < shape.size(); ++d) shape[d] = 1;
  return ctx.Output(i, type, std::move(shape));
}

}  // namespace

Status LayerNormKernel(KernelContext& ctx) {
  VIGIL_RETURN_IF_ERROR(RequireInputs(ctx, 2));
  const runtime::Tensor& x = *ctx.input(0);
  VIGIL_ASSIGN_OR_RETURN(int64_t axis_attr, ops::IntAttr(ctx.node(), "axis", -1));
  VIGIL_ASSIGN_OR_RETURN(int64_t axis, ops::NormalizeAxis(ctx.node(), axis_attr, static_cast<int64_t>(x.rank())));
  VIGIL_ASSIGN_OR_RETURN(float epsilon, ops::FloatAttr(ctx.node(), "epsilon", 1e-5f));
  VIGIL_ASSIGN_OR_RETURN(ir::DataType stash, ReadStashType(ctx));
  VIGIL_ASSIGN_OR_RETURN(BroadcastParam scale, ReadBroadcastParam(ctx, 1, "Scale"));
  BroadcastParam bias;
  if (ctx.has_input(2)) {
    VIGIL_ASSIGN_OR_RETURN(bias, ReadBroadcastParam(ctx, 2, "B"));
  }
  int64_t rows = 1, inner = 1;
  for (size_t d = 0; d < x.rank(); ++d) (static_cast<int64_t>(d) < axis ? rows : inner) *= x.dim(d);
  return DispatchFloat(ctx, 0, [&]<ir::DataType D>() -> Status {
    using C = ElementCodec<D>;
    VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * y, ctx.Output(0, x.dtype(), x.shape()));
    VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * mean_out, StatOutput(ctx, 1, stash, axis));
    VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * inv_out, StatOutput(ctx, 2, stash, axis));
    if constexpr (D == ir::DataType::kFloat32) {
      // The optimised rows: float32, Y only, Scale and B one value per
      // element of a row (the usual [inner], broadcast along the rows).
      if (ctx.optimised() && !mean_out && !inv_out && PerRowElement(scale, x.shape(), axis, inner) &&
          (bias.values.empty() || PerRowElement(bias, x.shape(), axis, inner)) &&
          fast::LayerNormRowsFloat(x.data<float>(), y->data<float>(), rows, inner, scale.values.data(),
                                   bias.values.empty() ? nullptr : bias.values.data(), epsilon)) {
        return Status::Ok();
      }
    }
    const auto* xs = x.data<typename C::Storage>();
    auto* ys = y->data<typename C::Storage>();
    OffsetWalker scale_at(x.shape(), scale.strides);
    OffsetWalker bias_at(x.shape(), bias.strides.empty() ? std::vector<int64_t>(x.rank(), 0) : bias.strides);
    for (int64_t r = 0; r < rows; ++r) {  // an empty row still gets (NaN) statistics
      const auto* row = xs + r * inner;
      Moments m = ComputeMoments<D>(row, inner);
      const double inv = 1.0 / std::sqrt(m.variance + epsilon);
      if (mean_out) StoreAsFloat(*mean_out, r, m.mean);
      if (inv_out) StoreAsFloat(*inv_out, r, inv);
      for (int64_t j = 0; j < inner; ++j, scale_at.Next(), bias_at.Next()) {
        double v = (C::Load(row[j]) - m.mean) * inv * scale.values[scale_at.offset()];
        if (!bias.values.empty()) v += bias.values[bias_at.offset()];
        ys[r * inner + j] = C::Store(static_cast<typename C::Compute>(v));
      }
    }
    return Status::Ok();
  });
}

// Y = X / sqrt(mean(X^2 over the dims from axis) + epsilon) * scale, with
// scale broadcast to X; Y has X's dtype.
Status RmsNormKernel(KernelContext& ctx) {
  VIGIL_RETURN_IF_ERROR(RequireInputs(ctx, 2));
  const runtime::Tensor& x = *ctx.input(0);
  VIGIL_ASSIGN_OR_RETURN(int64_t axis_attr, ops::IntAttr(ctx.node(), "axis", -1));
  VIGIL_ASSIGN_OR_RETURN(int64_t axis, ops::NormalizeAxis(ctx.node(), axis_attr, static_cast<int64_t>(x.rank())));
  VIGIL_ASSIGN_OR_RETURN(float epsilon, ops::FloatAttr(ctx.node(), "epsilon", 1e-5f));
  VIGIL_RETURN_IF_ERROR(ReadStashType(ctx).status());
  VIGIL_ASSIGN_OR_RETURN(BroadcastParam scale, ReadBroadcastParam(ctx, 1, "scale"));
  int64_t rows = 1, inner = 1;
  for (size_t d = 0; d < x.rank(); ++d) (static_cast<int64_t>(d) < axis ? rows : inner) *= x.dim(d);
  return DispatchFloat(ctx, 0, [&]<ir::DataType D>() -> Status {
    using C = ElementCodec<D>;
    VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * y, ctx.Output(0, x.dtype(), x.shape()));
    const auto* xs = x.data<typename C::Storage>();
    auto* ys = y->data<typename C::Storage>();
    OffsetWalker scale_at(x.shape(), scale.strides);
    for (int64_t r = 0; r < rows; ++r) {
      const auto* row = xs + r * inner;
      double squares = 0;
      for (int64_t j = 0; j < inner; ++j) {
        const double v = C::Load(row[j]);
        squares += v * v;
      }
      const double inv = 1.0 / std::sqrt(squares / static_cast<double>(inner) + epsilon);
      for (int64_t j = 0; j < inner; ++j, scale_at.Next()) {
        const double v = C::Load(row[j]) * inv * scale.values[scale_at.offset()];
        ys[r * inner + j] = C::Store(static_cast<typename C::Compute>(v));
      }
    }
    return Status::Ok();
  });
}

// Per (n, group): normalise the group's channels together, then scale and
// shift per group (opset 18) or per channel (opset 21).
Status GroupNormKernel(KernelContext& ctx) {
  VIGIL_RETURN_IF_ERROR(RequireInputs(ctx, 3));
  const runtime::Tensor& x = *ctx.input(0);
  if (x.rank() < 2) return ctx.Fail("input 0 (X) is {}, GroupNormalization needs rank >= 2 (N x C x ...)", x.Describe());
  VIGIL_ASSIGN_OR_RETURN(int64_t groups, ops::RequiredIntAttr(ctx.node(), "num_groups"));
  VIGIL_ASSIGN_OR_RETURN(float epsilon, ops::FloatAttr(ctx.node(), "epsilon", 1e-5f));
  if (groups < 1) return AttributeError(ctx, "num_groups is {}, must be at least 1", groups);
  const int64_t batch = x.dim(0), channels = x.dim(1);
  if (channels % groups != 0) {
    return ctx.Fail("num_groups is {}, must divide the {} channels of input 0 (X) {}", groups,
                    channels, x.Describe());
  }
  const bool per_channel = ctx.opset() >= 21;
  const int64_t params = per_channel ? channels : groups;
  std::vector<double> p[3];
  const char* names[] = {"", "scale", "bias"};
  for (size_t i = 1; i <= 2; ++i) {
    if (static_cast<int64_t>(ctx.input(i)->element_count()) != params) {
      return ctx.Fail("input {} ({}) is {}, expected {} elements (one per {} in opset {})", i, names[i],
                      ctx.input(i)->Describe(), params, per_channel ? "channel" : "group", ctx.opset());
    }
    VIGIL_ASSIGN_OR_RETURN(p[i], ReadParamAsDoubles(ctx, i));
  }
  const int64_t inner = batch * channels == 0 ? 0 : static_cast<int64_t>(x.element_count()) / (batch * channels);
  const int64_t per_group = channels / groups;
  return DispatchFloat(ctx, 0, [&]<ir::DataType D>() -> Status {
    using C = ElementCodec<D>;
    VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * y, ctx.Output(0, x.dtype(), x.shape()));
    const auto* xs = x.data<typename C::Storage>();
    auto* ys = y->data<typename C::Storage>();
    for (int64_t n = 0; n < batch; ++n) {
      for (int64_t g = 0; g < groups; ++g) {
        const int64_t start = (n * channels + g * per_group) * inner;
        Moments m = ComputeMoments<D>(xs + start, per_group * inner);
        const double inv = 1.0 / std::sqrt(m.variance + epsilon);
        for (int64_t c = 0; c < per_group; ++c) {
          const int64_t k = per_channel ? g * per_group + c : g;
          for (int64_t i = 0; i < inner; ++i) {
            const int64_t at = start + c * inner + i;
            double v = (C::Load(xs[at]) - m.mean) * inv * p[1][k] + p[2][k];
            ys[at] = C::Store(static_cast<typename C::Compute>(v));
          }
        }
      }
    }
    return Status::Ok();
  });
}

}  // namespace vigil::cpu
