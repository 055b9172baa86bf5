// CPU kernel of GridSample, for any number of spatial dims (opset 20; 2-D in
// opsets 16 to 19).
//
// Every output position reads its grid entry once: per spatial axis the
// normalized coordinate becomes a pixel coordinate, the padding mode brings
// it back towards the image, and the interpolation gives a few taps (input
// index and weight) along that axis. The position's value in every channel is
// then the sum over the tensor product of the axes' taps. As in the ONNX
// reference (and PyTorch), pixel coordinates are computed in float (in
// double for a double grid): the nearest mode rounds them half to even, and
// the padding modes act on them before the interpolation and again on each
// tap. Weights and sums are double.
#include <algorithm>
#include <cmath>
#include <vector>

#include "backends/cpu/element_codec.h"
#include "backends/cpu/kernel.h"
#include "ops/grid_sample.h"
#include "backends/cpu/kernel_families.h"

namespace vigil::cpu {
namespace {

using ops::GridSampleMode;
using ops::GridSamplePadding;

// The taps of one axis: input indices (-1: outside the image, reads zero)
// and their weights. Cubic interpolation has 4, linear 2, nearest 1.
struct AxisTaps {
  int count = 0;
  int64_t index[4] = {};
  double weight[4] = {};
};

// What one spatial axis of X spans in pixel coordinates: [-0.5, size - 0.5]
// for pixel areas, [0, size - 1] for pixel centers (align_corners).
struct AxisRange {
  int64_t size = 0;
  double lo = 0, hi = 0;
};

// The pixel coordinate of normalized coordinate n (-1 and 1 are the range's
// ends), computed in the grid's precision: float unless the grid is double.
double Denormalize(double n, int64_t size, bool align_corners, bool double_grid) {
  if (double_grid) {
    double d = static_cast<double>(size);
    return align_corners ? (n + 1) / 2 * (d - 1) : ((n + 1) * d - 1) / 2;
  }
  float f = static_cast<float>(n), d = static_cast<float>(size);
  return align_corners ? (f + 1) / 2 * (d - 1) : ((f + 1) * d - 1) / 2;
}

// x reflected at the ends of [lo, hi] until it lies inside.
double Reflect(double x, double lo, double hi) {
  if (!(x < lo || x > hi)) return x;
  double range = hi - lo;
  if (!(range > 0)) return lo;
  double beyond = x < lo ? lo - x : x - hi;
  double flips = std::trunc(beyond / range);
  double rest = beyond - flips * range;
  bool even = std::fmod(flips, 2.0) == 0;
  if (x < lo) return even ? lo + rest : hi - rest;
  return even ? hi - rest : lo + rest;
}

// A coordinate as an integer, towards zero (floor: rounded down first);
// far-out and NaN coordinates become indices far outside any image.
int64_t ToIndex(double v) {
  constexpr double kFar = static_cast<double>(int64_t{1} << 40);
  if (std::isnan(v)) return -(int64_t{1} << 40);
  return static_cast<int64_t>(std::clamp(v, -kFar, kFar));
}

// The input index that pixel index i reads under the padding mode; -1 for a
// zero.
int64_t PadIndex(int64_t i, const AxisRange& r, GridSamplePadding padding) {
  if (r.size <= 0) return -1;
  if (i >= 0 && i < r.size) return i;
  switch (padding) {
    case GridSamplePadding::kZeros: return -1;
    case GridSamplePadding::kBorder: return std::clamp<int64_t>(i, 0, r.size - 1);
    case GridSamplePadding::kReflection:
      return std::clamp<int64_t>(ToIndex(Reflect(static_cast<double>(i), r.lo, r.hi)), 0, r.size - 1);
  }
  return -1;
}

// Keys' cubic convolution weights (a = -0.75, as PyTorch) of the taps at
// -1, 0, 1 and 2 from the pixel left of a point t in [0, 1) past it.
void CubicWeights(double t, double w[4]) {
  constexpr double a = -0.75;
  // |x| <= 1: (a + 2)|x|^3 - (a + 3)|x|^2 + 1; 1 < |x| < 2: a|x|^3 - 5a|x|^2 + 8a|x| - 4a.
  auto near = [](double x) { return ((a + 2) * x - (a + 3)) * x * x + 1; };
  auto far = [](double x) { return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a; };
  w[0] = far(t + 1);
  w[1] = near(t);
  w[2] = near(1 - t);
  w[3] = far(2 - t);
}

// The taps of pixel coordinate x; `double_grid` as for Denormalize (a float
// coordinate stays a float after the padding mode moves it).
AxisTaps TapsAt(double x, const AxisRange& r, const ops::GridSampleAttrs& a, bool double_grid) {
  if (a.mode == GridSampleMode::kNearest) x = std::nearbyint(x);  // half to even
  if (x < r.lo || x > r.hi) {
    if (a.padding == GridSamplePadding::kBorder) {
      x = std::clamp(x, 0.0, static_cast<double>(r.size - 1));
    } else if (a.padding == GridSamplePadding::kReflection) {
      x = Reflect(x, r.lo, r.hi);
      if (!double_grid) x = static_cast<float>(x);
    }
  }
  AxisTaps t;
  if (a.mode == GridSampleMode::kNearest) {
    t.count = 1;
    t.index[0] = PadIndex(ToIndex(x), r, a.padding);
    t.weight[0] = 1;
    return t;
  }
  const double base = std::floor(x);
  const int64_t i0 = ToIndex(base);
  const double frac = x - base;
  if (a.mode == GridSampleMode::kLinear) {
    t.count = 2;
    t.weight[0] = 1 - frac;
    t.weight[1] = frac;
    for (int k = 0; k < 2; ++k) t.index[k] = PadIndex(i0 + k, r, a.padding);
    return t;
  }
  t.count = 4;
  CubicWeights(frac, t.weight);
  for (int k = 0; k < 4; ++k) t.index[k] = PadIndex(i0 - 1 + k, r, a.padding);
  return t;
}

// One input element an output position reads: its offset in the image and
// its weight.
struct Tap {
  int64_t offset;
  double weight;
};

// The tensor product of the axes' taps, leaving out those that read zero.
void CombineTaps(const std::vector<AxisTaps>& axes, const std::vector<AxisRange>& ranges, std::vector<Tap>& out) {
  out.clear();
  out.push_back({0, 1.0});
  for (size_t d = 0; d < axes.size(); ++d) {
    const size_t n = out.size();
    std::vector<Tap> next;
    next.reserve(n * axes[d].count);
    for (size_t j = 0; j < n; ++j) {
      for (int k = 0; k < axes[d].count; ++k) {
        if (axes[d].index[k] < 0) continue;
        next.push_back({out[j].offset * ranges[d].size + axes[d].index[k], out[j].weight * axes[d].weight[k]});
      }
    }
    out.swap(next);
  }
}

Status GridSampleKernel(KernelContext& ctx) {
  VIGIL_RETURN_IF_ERROR(RequireInputs(ctx, 2));
  const runtime::Tensor& x = *ctx.input(0);
  const runtime::Tensor& grid = *ctx.input(1);
  VIGIL_ASSIGN_OR_RETURN(ops::GridSampleAttrs a, ops::ReadGridSampleAttrs(ctx.node(), ctx.opset()));
  VIGIL_ASSIGN_OR_RETURN(std::vector<int64_t> out_shape,
                         ops::GridSampleOutputDims(ctx.node(), ctx.opset(), x.shape(), x.Describe(), grid.shape(),
                                                   grid.Describe()));
  const size_t r = x.rank() - 2;
  std::vector<AxisRange> ranges(r);
  int64_t image = 1, positions = 1;
  for (size_t d = 0; d < r; ++d) {
    int64_t size = x.dim(d + 2);
    ranges[d] = {size, a.align_corners ? 0.0 : -0.5, a.align_corners ? size - 1.0 : size - 0.5};
    image *= size;
    positions *= out_shape[d + 2];
  }
  const bool double_grid = grid.dtype() == ir::DataType::kFloat64;
  VIGIL_ASSIGN_OR_RETURN(std::vector<double> coords, ReadParamAsDoubles(ctx, 1));
  const int64_t batches = x.dim(0), channels = x.dim(1);
  return DispatchFloat(ctx, 0, [&]<ir::DataType D>() -> Status {
    using C = ElementCodec<D>;
    std::vector<typename C::Compute> scratch;
    VIGIL_ASSIGN_OR_RETURN(const typename C::Compute* xs, ComputeView<D>(ctx, x, scratch));
    VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * y, ctx.Output(0, x.dtype(), out_shape));
    auto* ys = y->data<typename C::Storage>();
    std::vector<AxisTaps> axes(r);
    std::vector<Tap> taps;
    for (int64_t n = 0; n < batches; ++n) {
      for (int64_t p = 0; p < positions; ++p) {
        // The grid lists the coordinates innermost axis first (x, y, ...).
        const double* g = &coords[(n * positions + p) * static_cast<int64_t>(r)];
        for (size_t d = 0; d < r; ++d) {
          double pixel = Denormalize(g[r - 1 - d], ranges[d].size, a.align_corners, double_grid);
          axes[d] = TapsAt(pixel, ranges[d], a, double_grid);
        }
        CombineTaps(axes, ranges, taps);
        for (int64_t c = 0; c < channels; ++c) {
          const auto* plane = xs + (n * channels + c) * image;
          double sum = 0;
          for (const Tap& t : taps) sum += t.weight * static_cast<double>(plane[t.offset]);
          ys[(n * channels + c) * positions + p] = C::Store(static_cast<typename C::Compute>(sum));
        }
      }
    }
    return Status::Ok();
  });
}

const KernelDef kGridSampleKernels[] = {
    {"", "GridSample", 16, kLatest, GridSampleKernel},
};

}  // namespace

std::span<const KernelDef> GridSampleKernels() { return kGridSampleKernels; }

}  // namespace vigil::cpu
