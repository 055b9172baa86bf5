// CPU kernels of the image-geometry ops (ops/vision.h): CenterCropPad,
// Col2Im and AffineGrid. Parameters are resolved by ops/vision.cpp, which
// shape inference shares. Col2Im sums floats in double and integers in
// their own type (wrapping); AffineGrid computes in double.
#include <algorithm>
#include <type_traits>
#include <vector>

#include "backends/cpu/element_codec.h"
#include "backends/cpu/element_types.h"
#include "backends/cpu/shape_ops_common.h"
#include "ops/vision.h"
#include "backends/cpu/kernel_families.h"

namespace vigil::cpu {
namespace {

using ir::DataType;
using shape_family::ReadInts;

// --- CenterCropPad -----------------------------------------------------------------

// Every listed axis becomes its `shape` size: cropped around the centre when
// smaller, zero-padded around the input when larger.
Status CenterCropPad(KernelContext& ctx) {
  VIGIL_RETURN_IF_ERROR(RequireInputs(ctx, 2));
  const runtime::Tensor& x = *ctx.input(0);
  VIGIL_ASSIGN_OR_RETURN(size_t elem, shape_family::MovableElementBytes(ctx, 0));
  VIGIL_ASSIGN_OR_RETURN(std::vector<int64_t> shape, ReadInts(ctx, 1, "shape"));
  if (ctx.input(1)->rank() != 1) return ctx.Fail("input shape is {}; it must be 1-D", ctx.input(1)->Describe());
  VIGIL_ASSIGN_OR_RETURN(std::vector<int64_t> axes,
                         ops::ResolveCenterCropPadAxes(ctx.node(), static_cast<int64_t>(x.rank()), shape.size()));
  std::vector<int64_t> out_shape = x.shape();
  for (size_t k = 0; k < axes.size(); ++k) {
    if (shape[k] < 0) {
      return ctx.Fail("input shape has size {} for axis {}; sizes must not be negative", shape[k], axes[k]);
    }
    out_shape[static_cast<size_t>(axes[k])] = shape[k];
  }
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * y, ctx.Output(0, x.dtype(), out_shape));
  // Per output axis, the input index each position reads (-1: zero fill).
  std::vector<std::vector<int64_t>> maps(x.rank());
  for (size_t a = 0; a < x.rank(); ++a) {
    const int64_t in = x.dim(a), out = out_shape[a], shift = ops::CenterCropPadShift(in, out);
    maps[a].resize(static_cast<size_t>(out));
    for (int64_t o = 0; o < out; ++o) {
      const int64_t i = o + shift;
      maps[a][static_cast<size_t>(o)] = i >= 0 && i < in ? i : -1;
    }
  }
  const shape_family::Word128 zero{0, 0};
  shape_family::AxisMapCopy(elem, x.raw_data(), x.shape(), maps, &zero, y->raw_data());
  return Status::Ok();
}

// --- Col2Im --------------------------------------------------------------------------

// Row-major multi-index of `flat` in `dims`.
void Unravel(int64_t flat, const std::vector<int64_t>& dims, std::vector<int64_t>& index) {
  for (size_t d = dims.size(); d-- > 0;) {
    index[d] = flat % dims[d];
    flat /= dims[d];
  }
}

template <typename A>
A AddWrapping(A a, A b) {
  if constexpr (std::is_integral_v<A>) {
    return static_cast<A>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
  } else {
    return a + b;
  }
}

// out[n, c, image position] = sum of input[n, c * block_size + k, p] over the
// block offsets k and block positions p that land on that image position
// (position p * stride - pad_begin + k * dilation along each spatial dim).
template <DataType D>
Status RunCol2Im(KernelContext& ctx, const ops::Col2ImGeometry& g, int64_t channels) {
  using E = Elem<D>;
  using T = typename E::Compute;
  using A = std::conditional_t<std::is_floating_point_v<T>, double, T>;
  const runtime::Tensor& x = *ctx.input(0);
  const int64_t batch = x.dim(0);
  std::vector<int64_t> out_shape = {batch, channels};
  out_shape.insert(out_shape.end(), g.image.begin(), g.image.end());
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * y, ctx.Output(0, x.dtype(), out_shape));
  int64_t image_size = 1;
  for (int64_t d : g.image) image_size *= d;
  const auto* xs = x.data<typename E::Storage>();
  auto* ys = y->data<typename E::Storage>();
  const size_t n_dims = g.image.size();
  std::vector<int64_t> k_index(n_dims), p_index(n_dims);
  std::vector<A> acc(static_cast<size_t>(image_size));
  for (int64_t plane = 0; plane < batch * channels; ++plane) {
    std::fill(acc.begin(), acc.end(), A(0));
    const auto* rows = xs + plane * g.block_size * g.position_count;
    for (int64_t k = 0; k < g.block_size; ++k) {
      Unravel(k, g.block, k_index);
      for (int64_t p = 0; p < g.position_count; ++p) {
        Unravel(p, g.positions, p_index);
        int64_t at = 0;
        bool inside = true;
        for (size_t d = 0; d < n_dims && inside; ++d) {
          const int64_t i = p_index[d] * g.strides[d] - g.pads_begin[d] + k_index[d] * g.dilations[d];
          inside = i >= 0 && i < g.image[d];
          at = at * g.image[d] + i;
        }
        if (!inside) continue;
        acc[static_cast<size_t>(at)] =
            AddWrapping(acc[static_cast<size_t>(at)], static_cast<A>(E::Load(rows[k * g.position_count + p])));
      }
    }
    auto* out = ys + plane * image_size;
    for (int64_t i = 0; i < image_size; ++i) out[i] = E::Store(static_cast<T>(acc[static_cast<size_t>(i)]));
  }
  return Status::Ok();
}

Status Col2Im(KernelContext& ctx) {
  VIGIL_RETURN_IF_ERROR(RequireInputs(ctx, 3));
  const runtime::Tensor& x = *ctx.input(0);
  for (size_t i : {size_t{1}, size_t{2}}) {
    if (ctx.input(i)->rank() != 1) {
      return ctx.Fail("input {} ({}) is {}; it must be 1-D", i, i == 1 ? "image_shape" : "block_shape",
                      ctx.input(i)->Describe());
    }
  }
  VIGIL_ASSIGN_OR_RETURN(std::vector<int64_t> image, ReadInts(ctx, 1, "image_shape"));
  VIGIL_ASSIGN_OR_RETURN(std::vector<int64_t> block, ReadInts(ctx, 2, "block_shape"));
  VIGIL_ASSIGN_OR_RETURN(ops::Col2ImGeometry g, ops::ResolveCol2Im(ctx.node(), image, block));
  VIGIL_ASSIGN_OR_RETURN(int64_t channels, ops::Col2ImChannels(ctx.node(), g, x.shape()));
  return DispatchDtype<kNumericTypes>(
      x.dtype(), [&](auto tag) { return RunCol2Im<decltype(tag)::value>(ctx, g, channels); },
      [&] { return ctx.UnsupportedDtype(0); });
}

// --- AffineGrid ----------------------------------------------------------------------

// grid[n, (d,) h, w] = theta[n] * (x_w, y_h, (z_d,) 1): the base position of
// each output pixel, its coordinates evenly spaced in [-1, 1] and listed
// from the last (width) dim first, mapped by the affine matrix.
Status AffineGrid(KernelContext& ctx) {
  VIGIL_RETURN_IF_ERROR(RequireInputs(ctx, 2));
  const runtime::Tensor& theta = *ctx.input(0);
  if (ctx.input(1)->rank() != 1) return ctx.Fail("input size is {}; it must be 1-D", ctx.input(1)->Describe());
  VIGIL_ASSIGN_OR_RETURN(bool align_corners, ops::ReadAlignCorners(ctx.node()));
  VIGIL_ASSIGN_OR_RETURN(std::vector<int64_t> size, ReadInts(ctx, 1, "size"));
  VIGIL_ASSIGN_OR_RETURN(std::vector<int64_t> spatial, ops::ResolveAffineGridSize(ctx.node(), size, theta.shape()));
  VIGIL_ASSIGN_OR_RETURN(std::vector<double> matrices, ReadParamAsDoubles(ctx, 0));
  const size_t nd = spatial.size();
  const int64_t batch = theta.dim(0);
  std::vector<int64_t> out_shape = {batch};
  out_shape.insert(out_shape.end(), spatial.begin(), spatial.end());
  out_shape.push_back(static_cast<int64_t>(nd));
  int64_t positions = 1;
  for (int64_t s : spatial) positions *= s;
  // Each dim's coordinates, once.
  std::vector<std::vector<double>> coords(nd);
  for (size_t d = 0; d < nd; ++d) {
    for (int64_t i = 0; i < spatial[d]; ++i) {
      coords[d].push_back(ops::AffineGridCoordinate(i, spatial[d], align_corners));
    }
  }
  return DispatchFloat(ctx, 0, [&]<DataType D>() -> Status {
    using C = ElementCodec<D>;
    VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * y, ctx.Output(0, theta.dtype(), out_shape));
    auto* out = y->data<typename C::Storage>();
    std::vector<int64_t> index(nd);
    std::vector<double> base(nd + 1, 1.0);
    for (int64_t n = 0; n < batch; ++n) {
      const double* m = matrices.data() + static_cast<size_t>(n) * nd * (nd + 1);
      for (int64_t p = 0; p < positions; ++p) {
        Unravel(p, spatial, index);
        for (size_t j = 0; j < nd; ++j) base[j] = coords[nd - 1 - j][static_cast<size_t>(index[nd - 1 - j])];
        for (size_t r = 0; r < nd; ++r) {
          double v = 0;
          for (size_t j = 0; j <= nd; ++j) v += m[r * (nd + 1) + j] * base[j];
          *out++ = C::Store(static_cast<typename C::Compute>(v));
        }
      }
    }
    return Status::Ok();
  });
}

const KernelDef kVisionKernels[] = {
    {"", "CenterCropPad", 18, kLatest, CenterCropPad},
    {"", "Col2Im", 18, kLatest, Col2Im},
    {"", "AffineGrid", 20, kLatest, AffineGrid},
};

}  // namespace

std::span<const KernelDef> VisionKernels() { return kVisionKernels; }

}  // namespace vigil::cpu
