// CPU kernels of the normalisation family: the kernel list, and
// BatchNormalization (inference), InstanceNormalization, LRN and
// MeanVarianceNormalization. LayerNormalization, RMSNormalization and
// GroupNormalization are in layer_group_norm.cpp, Softmax/LogSoftmax/Hardmax/
// LpNormalization in softmax.cpp.
// Statistics are computed in double.
#include <cmath>

#include "backends/cpu/element_codec.h"
#include "backends/cpu/elementwise_kernels.h"  // ForEachIndexBlocked
#include "backends/cpu/normalization_kernels.h"
#include "ops/attributes.h"
#include "backends/cpu/kernel_families.h"

namespace vigil::cpu {

std::optional<std::vector<int64_t>> BroadcastStrides(const std::vector<int64_t>& small,
                                                     const std::vector<int64_t>& shape) {
  if (small.size() > shape.size()) return std::nullopt;
  std::vector<int64_t> strides(shape.size(), 0);
  int64_t stride = 1;
  for (size_t i = 0; i < small.size(); ++i) {
    size_t s = small.size() - 1 - i, d = shape.size() - 1 - i;
    if (small[s] != shape[d] && small[s] != 1) return std::nullopt;
    strides[d] = small[s] == 1 ? 0 : stride;
    stride *= small[s];
  }
  return strides;
}

void StoreAsFloat(runtime::Tensor& t, size_t i, double value) {
  switch (t.dtype()) {
    case ir::DataType::kFloat32: t.data<float>()[i] = static_cast<float>(value); break;
    case ir::DataType::kFloat64: t.data<double>()[i] = value; break;
    case ir::DataType::kFloat16: t.data<uint16_t>()[i] = FloatToFloat16(static_cast<float>(value)); break;
    case ir::DataType::kBfloat16: t.data<uint16_t>()[i] = FloatToBfloat16(static_cast<float>(value)); break;
    default: break;  // callers only allocate float dtypes
  }
}

namespace {

Status CheckRank(KernelContext& ctx, size_t min_rank) {
  VIGIL_RETURN_IF_ERROR(RequireInputs(ctx, 1));
  const runtime::Tensor& x = *ctx.input(0);
  if (x.rank() < min_rank) {
    return ctx.Fail("input 0 (X) is {}, {} needs rank >= {} (N x C x ...)", x.Describe(), ctx.node().op_type,
                    min_rank);
  }
  return Status::Ok();
}

// A parameter input read as double, which must hold `expected` elements.
Result<std::vector<double>> ReadParam(KernelContext& ctx, size_t i, const char* name, int64_t expected,
                                      const char* per) {
  const runtime::Tensor* t = ctx.input(i);
  if (static_cast<int64_t>(t->element_count()) != expected) {
    return ctx.Fail("input {} ({}) is {}, expected {} elements (one per {})", i, name, t->Describe(), expected, per);
  }
  return ReadParamAsDoubles(ctx, i);
}

// BatchNormalization in training mode would update running statistics; only
// inference is supported.
Status RejectTraining(KernelContext& ctx) {
  VIGIL_ASSIGN_OR_RETURN(int64_t training, ops::IntAttr(ctx.node(), "training_mode", 0));
  bool stats_wanted = false;
  for (size_t i = 1; i < ctx.num_outputs(); ++i) stats_wanted = stats_wanted || ctx.output_wanted(i);
  if (training != 0 || stats_wanted) {
    return ctx.Unsupported(
        "training mode (training_mode=1 or the running/saved statistics outputs) is not supported; only inference "
        "(one output Y) is. Export the model for inference (e.g. model.eval() before torch.onnx.export)");
  }
  return Status::Ok();
}

}  // namespace

// y = (x - mean) / sqrt(var + epsilon) * scale + B, per channel; with
// spatial=0 (before opset 9) per element of C x D1 x ... instead.
Status BatchNormKernel(KernelContext& ctx) {
  VIGIL_RETURN_IF_ERROR(RejectTraining(ctx));
  VIGIL_RETURN_IF_ERROR(RequireInputs(ctx, 5));
  VIGIL_RETURN_IF_ERROR(CheckRank(ctx, 2));
  const runtime::Tensor& x = *ctx.input(0);
  VIGIL_ASSIGN_OR_RETURN(float epsilon, ops::FloatAttr(ctx.node(), "epsilon", 1e-5f));
  VIGIL_ASSIGN_OR_RETURN(int64_t spatial, ops::IntAttr(ctx.node(), "spatial", 1));
  const bool per_element = ctx.opset() < 9 && spatial == 0;
  const int64_t batch = x.dim(0);
  const int64_t sample = batch == 0 ? 0 : static_cast<int64_t>(x.element_count()) / batch;
  const int64_t inner = x.dim(1) == 0 ? 0 : sample / x.dim(1);
  const int64_t params = per_element ? sample : x.dim(1);
  const char* per = per_element ? "element of C x D1 x ... (spatial=0)" : "channel";
  const char* names[] = {"", "scale", "B", "input_mean", "input_var"};
  std::vector<double> p[5];
  for (size_t i = 1; i <= 4; ++i) {
    VIGIL_ASSIGN_OR_RETURN(p[i], ReadParam(ctx, i, names[i], params, per));
  }
  // Folded into y = x * a + b.
  std::vector<double> a(params), b(params);
  for (int64_t c = 0; c < params; ++c) {
    a[c] = p[1][c] / std::sqrt(p[4][c] + epsilon);
    b[c] = p[2][c] - p[3][c] * a[c];
  }
  return DispatchFloat(ctx, 0, [&]<ir::DataType D>() -> Status {
    using C = ElementCodec<D>;
    VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * y, ctx.Output(0, x.dtype(), x.shape()));
    const auto* xs = x.data<typename C::Storage>();
    auto* ys = y->data<typename C::Storage>();
    // Plane by plane (one channel's `inner` elements share a and b), in
    // blocks the compiler vectorises; the same arithmetic per element.
    const int64_t planes = per_element ? sample : params, run = per_element ? 1 : inner;
    for (int64_t n = 0; n < batch; ++n) {
      for (int64_t c = 0; c < planes; ++c) {
        const auto* xp = xs + n * sample + c * run;
        auto* yp = ys + n * sample + c * run;
        const double ac = a[c], bc = b[c];
        ForEachIndexBlocked(run, [&](int64_t i) {
          yp[i] = C::Store(static_cast<typename C::Compute>(C::Load(xp[i]) * ac + bc));
        });
      }
    }
    return Status::Ok();
  });
}

// Per (n, c) plane: y = (x - mean) / sqrt(var + epsilon) * scale[c] + B[c].
Status InstanceNormKernel(KernelContext& ctx) {
  VIGIL_RETURN_IF_ERROR(RequireInputs(ctx, 3));
  VIGIL_RETURN_IF_ERROR(CheckRank(ctx, 2));
  const runtime::Tensor& x = *ctx.input(0);
  VIGIL_ASSIGN_OR_RETURN(float epsilon, ops::FloatAttr(ctx.node(), "epsilon", 1e-5f));
  const int64_t channels = x.dim(1), planes = x.dim(0) * channels;
  const int64_t size = planes == 0 ? 0 : static_cast<int64_t>(x.element_count()) / planes;
  VIGIL_ASSIGN_OR_RETURN(std::vector<double> scale, ReadParam(ctx, 1, "scale", channels, "channel"));
  VIGIL_ASSIGN_OR_RETURN(std::vector<double> bias, ReadParam(ctx, 2, "B", channels, "channel"));
  return DispatchFloat(ctx, 0, [&]<ir::DataType D>() -> Status {
    using C = ElementCodec<D>;
    VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * y, ctx.Output(0, x.dtype(), x.shape()));
    const auto* xs = x.data<typename C::Storage>();
    auto* ys = y->data<typename C::Storage>();
    for (int64_t p = 0; p < planes; ++p) {
      Moments m = ComputeMoments<D>(xs + p * size, size);
      double a = scale[p % channels] / std::sqrt(m.variance + epsilon);
      double b = bias[p % channels] - m.mean * a;
      for (int64_t i = 0; i < size; ++i) {
        ys[p * size + i] = C::Store(static_cast<typename C::Compute>(C::Load(xs[p * size + i]) * a + b));
      }
    }
    return Status::Ok();
  });
}

// Across channels: y = x / (bias + alpha / size * sum of x^2 over the
// channels [c - floor((size-1)/2), c + ceil((size-1)/2)])^beta.
Status LrnKernel(KernelContext& ctx) {
  VIGIL_RETURN_IF_ERROR(CheckRank(ctx, 2));
  const runtime::Tensor& x = *ctx.input(0);
  VIGIL_ASSIGN_OR_RETURN(int64_t size, ops::RequiredIntAttr(ctx.node(), "size"));
  if (size < 1) return AttributeError(ctx, "size is {}, must be at least 1", size);
  VIGIL_ASSIGN_OR_RETURN(float alpha, ops::FloatAttr(ctx.node(), "alpha", 1e-4f));
  VIGIL_ASSIGN_OR_RETURN(float beta, ops::FloatAttr(ctx.node(), "beta", 0.75f));
  VIGIL_ASSIGN_OR_RETURN(float bias, ops::FloatAttr(ctx.node(), "bias", 1.0f));
  const int64_t batch = x.dim(0), channels = x.dim(1);
  const int64_t inner = batch * channels == 0 ? 0 : static_cast<int64_t>(x.element_count()) / (batch * channels);
  const int64_t before = (size - 1) / 2, after = size - 1 - before;
  return DispatchFloat(ctx, 0, [&]<ir::DataType D>() -> Status {
    using C = ElementCodec<D>;
    VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * y, ctx.Output(0, x.dtype(), x.shape()));
    const auto* xs = x.data<typename C::Storage>();
    auto* ys = y->data<typename C::Storage>();
    for (int64_t n = 0; n < batch; ++n) {
      for (int64_t c = 0; c < channels; ++c) {
        const int64_t lo = std::max<int64_t>(0, c - before), hi = std::min(channels - 1, c + after);
        for (int64_t i = 0; i < inner; ++i) {
          double sum = 0;
          for (int64_t k = lo; k <= hi; ++k) {
            double v = C::Load(xs[(n * channels + k) * inner + i]);
            sum += v * v;
          }
          double v = C::Load(xs[(n * channels + c) * inner + i]);
          double out = v / std::pow(bias + alpha / static_cast<double>(size) * sum, beta);
          ys[(n * channels + c) * inner + i] = C::Store(static_cast<typename C::Compute>(out));
        }
      }
    }
    return Status::Ok();
  });
}

// y = (x - mean) / (sqrt(variance) + 1e-9), with mean and variance over
// `axes` (default [0, 2, 3]), as ONNX's function body defines it.
Status MeanVarianceNormKernel(KernelContext& ctx) {
  VIGIL_RETURN_IF_ERROR(RequireInputs(ctx, 1));
  const runtime::Tensor& x = *ctx.input(0);
  VIGIL_ASSIGN_OR_RETURN(std::vector<int64_t> axes, ops::IntsAttr(ctx.node(), "axes", {0, 2, 3}));
  std::vector<int64_t> reduced = x.shape();
  for (int64_t a : axes) {
    VIGIL_ASSIGN_OR_RETURN(int64_t axis, ops::NormalizeAxis(ctx.node(), a, static_cast<int64_t>(x.rank()), "axes"));
    reduced[axis] = 1;
  }
  int64_t groups = 1;
  for (int64_t d : reduced) groups *= d;
  const int64_t count = groups == 0 ? 0 : static_cast<int64_t>(x.element_count()) / groups;
  const std::vector<int64_t> strides = *BroadcastStrides(reduced, x.shape());
  return DispatchFloat(ctx, 0, [&]<ir::DataType D>() -> Status {
    using C = ElementCodec<D>;
    VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * y, ctx.Output(0, x.dtype(), x.shape()));
    const auto* xs = x.data<typename C::Storage>();
    auto* ys = y->data<typename C::Storage>();
    const size_t total = x.element_count();
    std::vector<double> mean, var;
    VIGIL_RETURN_IF_ERROR(ResizeScratch(ctx, mean, static_cast<size_t>(groups)));
    VIGIL_RETURN_IF_ERROR(ResizeScratch(ctx, var, static_cast<size_t>(groups)));
    OffsetWalker walk(x.shape(), strides);
    for (size_t i = 0; i < total; ++i, walk.Next()) mean[walk.offset()] += C::Load(xs[i]);
    for (double& m : mean) m /= static_cast<double>(count);
    walk = OffsetWalker(x.shape(), strides);
    for (size_t i = 0; i < total; ++i, walk.Next()) {
      double d = C::Load(xs[i]) - mean[walk.offset()];
      var[walk.offset()] += d * d;
    }
    walk = OffsetWalker(x.shape(), strides);
    for (size_t i = 0; i < total; ++i, walk.Next()) {
      int64_t g = walk.offset();
      double out = (C::Load(xs[i]) - mean[g]) / (std::sqrt(var[g] / static_cast<double>(count)) + 1e-9);
      ys[i] = C::Store(static_cast<typename C::Compute>(out));
    }
    return Status::Ok();
  });
}

std::span<const KernelDef> NormalizationKernels() {
  static const KernelDef kKernels[] = {
      {"", "BatchNormalization", 1, kLatest, BatchNormKernel},
      {"", "InstanceNormalization", 1, kLatest, InstanceNormKernel},
      {"", "LayerNormalization", 17, kLatest, LayerNormKernel},
      {"", "RMSNormalization", 23, kLatest, RmsNormKernel},
      // The kernel reads the opset: scale/bias per group in 18, per channel in 21.
      {"", "GroupNormalization", 18, kLatest, GroupNormKernel},
      {"", "LRN", 1, kLatest, LrnKernel},
      {"", "MeanVarianceNormalization", 9, kLatest, MeanVarianceNormKernel},
      // The kernels read the opset: 2-D coercion before 13, one axis from 13.
      {"", "Softmax", 1, 12, SoftmaxKernel},
      {"", "Softmax", 13, kLatest, SoftmaxKernel},
      {"", "LogSoftmax", 1, 12, LogSoftmaxKernel},
      {"", "LogSoftmax", 13, kLatest, LogSoftmaxKernel},
      {"", "Hardmax", 1, 12, HardmaxKernel},
      {"", "Hardmax", 13, kLatest, HardmaxKernel},
      {"", "LpNormalization", 1, kLatest, LpNormKernel},
  };
  return kKernels;
}

}  // namespace vigil::cpu
