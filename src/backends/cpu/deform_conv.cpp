// DeformConv: a convolution whose every tap reads the input at a learned
// fractional offset from its usual position, scaled by an optional mask.
// N-D: each tap samples X by multilinear interpolation (bilinear in 2D), with
// zeros outside the image, as GridSample with align_corners=1 and zero
// padding does in the ONNX reference. Everything is computed in double:
// for each image and offset group, the sampled taps are gathered into
// columns [channel * taps + tap][output position], then each output channel
// sums its group's columns times its weights.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "backends/cpu/conv_pool_kernels.h"
#include "backends/cpu/element_codec.h"
#include "ops/attributes.h"

namespace vigil::cpu {
namespace {

// Row-major multi-index of `flat` in `dims`.
void Unravel(int64_t flat, const std::vector<int64_t>& dims, std::vector<int64_t>& index) {
  for (size_t d = dims.size(); d-- > 0;) {
    index[d] = flat % dims[d];
    flat /= dims[d];
  }
}

struct DeformDims {
  int64_t batch = 0, in_channels = 0, out_channels = 0, group = 1, offset_group = 1;
  SpatialGeometry g;  // image: X's spatial dims; columns: the output's
};

// Input i must have `want` as its shape.
Status CheckShape(const KernelContext& ctx, size_t i, const char* name, const std::vector<int64_t>& want,
                  const char* layout) {
  const runtime::Tensor& t = *ctx.input(i);
  if (t.dtype() != ctx.input(0)->dtype()) {
    return ctx.Fail("input {} ({}) is {} but input 0 (X) is {}; their dtypes must match", i, name, t.Describe(),
                    ctx.input(0)->Describe());
  }
  if (t.shape() != want) {
    std::string dims;
    for (size_t d = 0; d < want.size(); ++d) dims += (d ? "," : "") + std::to_string(want[d]);
    return ctx.Fail("input {} ({}) is {}, expected [{}] ({})", i, name, t.Describe(), dims, layout);
  }
  return Status::Ok();
}

Result<DeformDims> DeformDimsOf(KernelContext& ctx) {
  VIGIL_RETURN_IF_ERROR(RequireInputs(ctx, 3));
  const runtime::Tensor& x = *ctx.input(0);
  const runtime::Tensor& w = *ctx.input(1);
  if (x.rank() < 3) return ctx.Fail("input 0 (X) is {}; DeformConv needs N x C x D1 x ...", x.Describe());
  if (w.rank() != x.rank()) {
    return ctx.Fail("input 1 (W) is {}; it needs the rank of input 0 (X) {}", w.Describe(), x.Describe());
  }
  DeformDims d;
  VIGIL_ASSIGN_OR_RETURN(d.group, ops::IntAttr(ctx.node(), "group", 1));
  VIGIL_ASSIGN_OR_RETURN(d.offset_group, ops::IntAttr(ctx.node(), "offset_group", 1));
  if (d.group < 1) return AttributeError(ctx, "group is {}, must be at least 1", d.group);
  if (d.offset_group < 1) return AttributeError(ctx, "offset_group is {}, must be at least 1", d.offset_group);
  d.batch = x.dim(0);
  d.in_channels = x.dim(1);
  d.out_channels = w.dim(0);
  if (d.in_channels % d.group != 0 || w.dim(1) * d.group != d.in_channels || d.out_channels % d.group != 0) {
    return ctx.Fail("input 0 (X) {} and input 1 (W) {} do not fit group {}: X's channels must be W.dims[1] x group, "
                    "W.dims[0] divisible by group",
                    x.Describe(), w.Describe(), d.group);
  }
  if (d.in_channels % d.offset_group != 0) {
    return ctx.Fail("input 0 (X) has {} channels, not divisible by offset_group {}", d.in_channels, d.offset_group);
  }
  std::vector<int64_t> x_spatial(x.shape().begin() + 2, x.shape().end());
  std::vector<int64_t> w_spatial(w.shape().begin() + 2, w.shape().end());
  VIGIL_ASSIGN_OR_RETURN(ops::WindowAttrs wa, ops::ReadWindowAttrs(ctx.node(), x.rank() - 2, w_spatial, {}));
  VIGIL_ASSIGN_OR_RETURN(d.g, ForwardGeometry(ctx.node(), wa, x_spatial));
  const int64_t taps = d.g.KernelSize(), nd = static_cast<int64_t>(d.g.rank());
  std::vector<int64_t> want = {d.batch, d.offset_group * taps * nd};
  want.insert(want.end(), d.g.columns.begin(), d.g.columns.end());
  VIGIL_RETURN_IF_ERROR(
      CheckShape(ctx, 2, "offset", want, "N x offset_group * prod(kernel) * spatial rank x output dims"));
  if (ctx.has_input(3)) VIGIL_RETURN_IF_ERROR(CheckShape(ctx, 3, "B", {d.out_channels}, "one per output channel"));
  if (ctx.has_input(4)) {
    want[1] = d.offset_group * taps;
    VIGIL_RETURN_IF_ERROR(CheckShape(ctx, 4, "mask", want, "N x offset_group * prod(kernel) x output dims"));
  }
  return d;
}

// X[plane] at the fractional position `at` (one coordinate per spatial dim):
// the weighted sum of the 2^n integer neighbours, those outside the image
// counting as 0.
double Sample(const double* plane, const std::vector<int64_t>& image, const std::vector<int64_t>& image_strides,
              const std::vector<double>& at) {
  const size_t n = image.size();
  std::vector<int64_t> low(n);
  std::vector<double> frac(n);
  for (size_t i = 0; i < n; ++i) {
    const double f = std::floor(at[i]);
    // Far outside the image every neighbour is 0; this also keeps the cast
    // below in range (offsets come from data).
    if (!(f > -2.0 && f < static_cast<double>(image[i]) + 1.0)) return 0.0;
    low[i] = static_cast<int64_t>(f);
    frac[i] = at[i] - f;
  }
  double sum = 0;
  for (uint32_t corner = 0; corner < (1u << n); ++corner) {
    double weight = 1;
    int64_t offset = 0;
    bool inside = true;
    for (size_t i = 0; i < n && inside; ++i) {
      const bool high = (corner >> i) & 1u;
      const int64_t p = low[i] + (high ? 1 : 0);
      inside = p >= 0 && p < image[i];
      weight *= high ? frac[i] : 1.0 - frac[i];
      offset += p * image_strides[i];
    }
    if (inside && weight != 0) sum += weight * plane[offset];
  }
  return sum;
}

// The output, N x out_channels x positions, in double.
Status RunDeformConv(KernelContext& ctx, const DeformDims& d, std::vector<double>& result) {
  const SpatialGeometry& g = d.g;
  const size_t nd = g.rank();
  if (nd > 16) return ctx.Unsupported("{} spatial dims; DeformConv supports up to 16", nd);
  const int64_t taps = g.KernelSize(), positions = g.ColumnSize(), image_size = g.ImageSize();
  VIGIL_ASSIGN_OR_RETURN(std::vector<double> x, ReadParamAsDoubles(ctx, 0));
  VIGIL_ASSIGN_OR_RETURN(std::vector<double> w, ReadParamAsDoubles(ctx, 1));
  VIGIL_ASSIGN_OR_RETURN(std::vector<double> offset, ReadParamAsDoubles(ctx, 2));
  std::vector<double> bias(static_cast<size_t>(d.out_channels), 0.0), mask;
  if (ctx.has_input(3)) {
    VIGIL_ASSIGN_OR_RETURN(bias, ReadParamAsDoubles(ctx, 3));
  }
  if (ctx.has_input(4)) {
    VIGIL_ASSIGN_OR_RETURN(mask, ReadParamAsDoubles(ctx, 4));
  }
  std::vector<int64_t> image_strides(nd, 1);
  for (size_t i = nd; i-- > 1;) image_strides[i - 1] = image_strides[i] * g.image[i];
  const int64_t channels_per_offset_group = d.in_channels / d.offset_group;
  const int64_t in_per_group = d.in_channels / d.group, out_per_group = d.out_channels / d.group;
  // columns[(c * taps + tap) * positions + position]: X's channel c sampled for that tap.
  std::vector<double> columns;
  VIGIL_RETURN_IF_ERROR(ResizeScratch(ctx, columns, static_cast<size_t>(d.in_channels * taps * positions)));
  VIGIL_RETURN_IF_ERROR(ResizeScratch(ctx, result, static_cast<size_t>(d.batch * d.out_channels * positions)));
  std::vector<int64_t> tap_index(nd), position_index(nd);
  std::vector<double> at(nd);
  for (int64_t n = 0; n < d.batch; ++n) {
    for (int64_t og = 0; og < d.offset_group; ++og) {
      for (int64_t t = 0; t < taps; ++t) {
        Unravel(t, g.kernel, tap_index);
        const int64_t row = og * taps + t;  // in the mask; the offsets' row is row * nd + dim
        for (int64_t p = 0; p < positions; ++p) {
          Unravel(p, g.columns, position_index);
          for (size_t i = 0; i < nd; ++i) {
            const double shift =
                offset[static_cast<size_t>(((n * d.offset_group * taps + row) * static_cast<int64_t>(nd) +
                                            static_cast<int64_t>(i)) * positions + p)];
            at[i] = static_cast<double>(position_index[i] * g.strides[i] - g.pad_begin[i] +
                                        tap_index[i] * g.dilations[i]) + shift;
          }
          const double scale =
              mask.empty() ? 1.0 : mask[static_cast<size_t>((n * d.offset_group * taps + row) * positions + p)];
          for (int64_t c = og * channels_per_offset_group; c < (og + 1) * channels_per_offset_group; ++c) {
            const double* plane = x.data() + (n * d.in_channels + c) * image_size;
            columns[static_cast<size_t>((c * taps + t) * positions + p)] =
                scale == 0 ? 0.0 : scale * Sample(plane, g.image, image_strides, at);
          }
        }
      }
    }
    for (int64_t oc = 0; oc < d.out_channels; ++oc) {
      double* dst = result.data() + (n * d.out_channels + oc) * positions;
      std::fill(dst, dst + positions, bias[static_cast<size_t>(oc)]);
      const int64_t first = (oc / out_per_group) * in_per_group;
      for (int64_t ci = 0; ci < in_per_group; ++ci) {
        for (int64_t t = 0; t < taps; ++t) {
          const double weight = w[static_cast<size_t>((oc * in_per_group + ci) * taps + t)];
          const double* col = columns.data() + ((first + ci) * taps + t) * positions;
          for (int64_t p = 0; p < positions; ++p) dst[p] += weight * col[p];
        }
      }
    }
  }
  return Status::Ok();
}

}  // namespace

Status DeformConvKernel(KernelContext& ctx) {
  VIGIL_ASSIGN_OR_RETURN(DeformDims d, DeformDimsOf(ctx));
  std::vector<int64_t> shape = {d.batch, d.out_channels};
  shape.insert(shape.end(), d.g.columns.begin(), d.g.columns.end());
  return DispatchFloat(ctx, 0, [&]<ir::DataType D>() -> Status {
    using C = ElementCodec<D>;
    std::vector<double> result;
    VIGIL_RETURN_IF_ERROR(RunDeformConv(ctx, d, result));
    VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * y, ctx.Output(0, ctx.input(0)->dtype(), shape));
    auto* ys = y->data<typename C::Storage>();
    for (size_t i = 0; i < result.size(); ++i) ys[i] = C::Store(static_cast<typename C::Compute>(result[i]));
    return Status::Ok();
  });
}

}  // namespace vigil::cpu
