// CUDA kernels of GridSample (opsets 16 to latest: 1, 2 or 3 spatial dims,
// modes nearest/linear/cubic, paddings zeros/border/reflection,
// align_corners) and AffineGrid (opset 20: 2-D and 3-D, align_corners).
//
// Both follow the CPU kernels (backends/cpu/grid_sample.cpp, vision.cpp)
// operation for operation, so that discrete decisions (which pixel a
// coordinate falls in, nearest's rounding, reflections) come out the same:
// pixel coordinates in float (in double for a double grid), taps and sums in
// double. This file is compiled with --fmad=false (CMakeLists.txt), so that
// no multiply-add is contracted where the CPU rounds twice.
//
// GridSample: one thread per output position (batch, spatial position). It
// reads its grid entry, builds the tensor product of the axes' taps once (at
// most 4^3), and then writes the position in every channel. AffineGrid: one
// thread per output position; the size input is read on the host.
#pragma nv_diag_suppress 20208

#include <algorithm>
#include <cmath>
#include <string>
#include <type_traits>
#include <vector>

#include "backends/cuda/data_movement_common.cuh"
#include "backends/cuda/device_common.cuh"
#include "backends/cuda/vision.h"
#include "ops/grid_sample.h"
#include "ops/vision.h"

namespace vigil::cuda {
namespace {

using movement::HostInts;
using movement::RequireInputs;
constexpr int kThreads = 256;
constexpr int kMaxAxes = 3;  // GridSample's spatial dims on the device
constexpr int kMaxTaps = 64;  // 4 cubic taps on each of 3 axes

using ops::GridSampleMode;
using ops::GridSamplePadding;

// ---------------------------------------------------------------- GridSample (device)

struct GridParams {
  int axes = 0;                  // spatial dims r
  int64_t size[kMaxAxes] = {};   // X's spatial dims, outermost first
  double lo[kMaxAxes] = {}, hi[kMaxAxes] = {};  // what each axis spans in pixel coordinates
  int64_t image = 0;             // elements per channel plane of X
  int64_t positions = 0;         // output positions per batch and channel
  int64_t batches = 0, channels = 0;
  GridSampleMode mode = GridSampleMode::kLinear;
  GridSamplePadding padding = GridSamplePadding::kZeros;
  bool align_corners = false;
};

template <typename G>
__device__ __forceinline__ double GridValue(G v) { return static_cast<double>(ToFloat(v)); }
template <>
__device__ __forceinline__ double GridValue<double>(double v) { return v; }

// As the CPU's Denormalize: float arithmetic unless the grid is double.
__device__ double Denormalize(double n, int64_t size, bool align_corners, bool double_grid) {
  if (double_grid) {
    double d = static_cast<double>(size);
    return align_corners ? (n + 1) / 2 * (d - 1) : ((n + 1) * d - 1) / 2;
  }
  float f = static_cast<float>(n), d = static_cast<float>(size);
  return align_corners ? (f + 1) / 2 * (d - 1) : ((f + 1) * d - 1) / 2;
}

__device__ double Reflect(double x, double lo, double hi) {
  if (!(x < lo || x > hi)) return x;
  double range = hi - lo;
  if (!(range > 0)) return lo;
  double beyond = x < lo ? lo - x : x - hi;
  double flips = trunc(beyond / range);
  double rest = beyond - flips * range;
  bool even = fmod(flips, 2.0) == 0;
  if (x < lo) return even ? lo + rest : hi - rest;
  return even ? hi - rest : lo + rest;
}

// std::clamp's comparisons (a NaN stays NaN, where fmin/fmax would drop it).
__device__ __forceinline__ double StdClamp(double v, double lo, double hi) { return v < lo ? lo : hi < v ? hi : v; }

__device__ __forceinline__ int64_t ToIndex(double v) {
  constexpr double kFar = static_cast<double>(int64_t{1} << 40);
  if (isnan(v)) return -(int64_t{1} << 40);
  return static_cast<int64_t>(StdClamp(v, -kFar, kFar));
}

__device__ __forceinline__ int64_t Clamp64(int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : v > hi ? hi : v; }

__device__ int64_t PadIndex(int64_t i, const GridParams& p, int d) {
  const int64_t size = p.size[d];
  if (size <= 0) return -1;
  if (i >= 0 && i < size) return i;
  switch (p.padding) {
    case GridSamplePadding::kZeros: return -1;
    case GridSamplePadding::kBorder: return Clamp64(i, 0, size - 1);
    case GridSamplePadding::kReflection:
      return Clamp64(ToIndex(Reflect(static_cast<double>(i), p.lo[d], p.hi[d])), 0, size - 1);
  }
  return -1;
}

__device__ void CubicWeights(double t, double w[4]) {
  constexpr double a = -0.75;
  auto near = [](double x) { return ((a + 2) * x - (a + 3)) * x * x + 1; };
  auto far = [](double x) { return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a; };
  w[0] = far(t + 1);
  w[1] = near(t);
  w[2] = near(1 - t);
  w[3] = far(2 - t);
}

struct AxisTaps {
  int count = 0;
  int64_t index[4] = {};
  double weight[4] = {};
};

__device__ AxisTaps TapsAt(double x, const GridParams& p, int d, bool double_grid) {
  if (p.mode == GridSampleMode::kNearest) x = nearbyint(x);  // half to even
  if (x < p.lo[d] || x > p.hi[d]) {
    if (p.padding == GridSamplePadding::kBorder) {
      x = StdClamp(x, 0.0, static_cast<double>(p.size[d] - 1));
    } else if (p.padding == GridSamplePadding::kReflection) {
      x = Reflect(x, p.lo[d], p.hi[d]);
      if (!double_grid) x = static_cast<float>(x);
    }
  }
  AxisTaps t;
  if (p.mode == GridSampleMode::kNearest) {
    t.count = 1;
    t.index[0] = PadIndex(ToIndex(x), p, d);
    t.weight[0] = 1;
    return t;
  }
  const double base = floor(x);
  const int64_t i0 = ToIndex(base);
  const double frac = x - base;
  if (p.mode == GridSampleMode::kLinear) {
    t.count = 2;
    t.weight[0] = 1 - frac;
    t.weight[1] = frac;
    for (int k = 0; k < 2; ++k) t.index[k] = PadIndex(i0 + k, p, d);
    return t;
  }
  t.count = 4;
  CubicWeights(frac, t.weight);
  for (int k = 0; k < 4; ++k) t.index[k] = PadIndex(i0 - 1 + k, p, d);
  return t;
}

// X [N, C, D1..Dr], grid [N, O1..Or, r] (innermost coordinate first),
// Y [N, C, O1..Or].
template <typename T, typename G>
__global__ void GridSampleKernel(const T* __restrict__ x, const G* __restrict__ grid, T* __restrict__ y,
                                 GridParams p) {
  constexpr bool kDoubleGrid = std::is_same_v<G, double>;
  const int64_t total = p.batches * p.positions;
  for (int64_t t = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; t < total; t += int64_t{gridDim.x} * blockDim.x) {
    const int64_t n = t / p.positions, pos = t - n * p.positions;
    const G* g = grid + t * p.axes;
    AxisTaps axes[kMaxAxes];
    for (int d = 0; d < p.axes; ++d) {
      double pixel = Denormalize(GridValue(g[p.axes - 1 - d]), p.size[d], p.align_corners, kDoubleGrid);
      axes[d] = TapsAt(pixel, p, d, kDoubleGrid);
    }
    // The tensor product of the taps, outermost axis slowest, leaving out
    // those that read zero (the CPU's CombineTaps order and products).
    int64_t offset[kMaxTaps];
    double weight[kMaxTaps];
    int taps = 0;
    int k[kMaxAxes] = {0, 0, 0};
    for (int d = p.axes; d < kMaxAxes; ++d) axes[d].count = 1, axes[d].index[0] = 0, axes[d].weight[0] = 1;
    for (k[0] = 0; k[0] < axes[0].count; ++k[0]) {
      if (axes[0].index[k[0]] < 0) continue;
      for (k[1] = 0; k[1] < axes[1].count; ++k[1]) {
        if (axes[1].index[k[1]] < 0) continue;
        for (k[2] = 0; k[2] < axes[2].count; ++k[2]) {
          if (axes[2].index[k[2]] < 0) continue;
          int64_t off = 0;
          double w = 1.0;
          for (int d = 0; d < p.axes; ++d) {
            off = off * p.size[d] + axes[d].index[k[d]];
            w = w * axes[d].weight[k[d]];
          }
          offset[taps] = off;
          weight[taps] = w;
          ++taps;
        }
      }
    }
    for (int64_t c = 0; c < p.channels; ++c) {
      const T* plane = x + (n * p.channels + c) * p.image;
      double sum = 0;
      for (int j = 0; j < taps; ++j) sum += weight[j] * static_cast<double>(ToFloat(plane[offset[j]]));
      y[(n * p.channels + c) * p.positions + pos] = FromFloat<T>(static_cast<float>(sum));
    }
  }
}

// ---------------------------------------------------------------- GridSample (host)

// Calls f(G{}) with G the grid's element type.
template <typename F>
bool DispatchGrid(ir::DataType t, F&& f) {
  if (t == ir::DataType::kFloat64) {
    f(double{});
    return true;
  }
  return DispatchFloat(t, std::forward<F>(f));
}

Status GridSample(CudaKernelContext& ctx) {
  VIGIL_RETURN_IF_ERROR(RequireInputs(ctx, 2));
  const runtime::Tensor& x = *ctx.input(0);
  const runtime::Tensor& grid = *ctx.input(1);
  VIGIL_ASSIGN_OR_RETURN(ops::GridSampleAttrs a, ops::ReadGridSampleAttrs(ctx.node(), ctx.opset()));
  VIGIL_ASSIGN_OR_RETURN(std::vector<int64_t> out_shape,
                         ops::GridSampleOutputDims(ctx.node(), ctx.opset(), x.shape(), x.Describe(), grid.shape(),
                                                   grid.Describe()));
  const size_t r = x.rank() - 2;
  if (r > static_cast<size_t>(kMaxAxes)) return ctx.Unsupported("{} spatial dims (at most {})", r, kMaxAxes);
  GridParams p;
  p.axes = static_cast<int>(r);
  p.mode = a.mode;
  p.padding = a.padding;
  p.align_corners = a.align_corners;
  p.batches = x.dim(0);
  p.channels = x.dim(1);
  p.image = 1;
  p.positions = 1;
  for (size_t d = 0; d < r; ++d) {
    const int64_t size = x.dim(d + 2);
    p.size[d] = size;
    p.lo[d] = a.align_corners ? 0.0 : -0.5;
    p.hi[d] = a.align_corners ? size - 1.0 : size - 0.5;
    p.image *= size;
    p.positions *= out_shape[d + 2];
  }
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * y, ctx.Output(0, x.dtype(), out_shape));
  if (y->element_count() == 0) return Status::Ok();
  const int64_t work = p.batches * p.positions;
  bool ok = false;
  bool grid_ok = DispatchGrid(grid.dtype(), [&](auto gtag) {
    using G = decltype(gtag);
    ok = DispatchFloat(x.dtype(), [&](auto xtag) {
      using T = decltype(xtag);
      GridSampleKernel<T, G><<<BlocksFor(work, kThreads), kThreads, 0, ctx.stream()>>>(
          static_cast<const T*>(x.raw_data()), static_cast<const G*>(grid.raw_data()), static_cast<T*>(y->raw_data()),
          p);
    });
  });
  if (!grid_ok) return ctx.Unsupported("dtype {} of input 1 (grid)", ir::DataTypeName(grid.dtype()));
  if (!ok) return ctx.Unsupported("dtype {} of input 0 (X)", ir::DataTypeName(x.dtype()));
  VIGIL_CHECK_LAUNCH("GridSample");
  return Status::Ok();
}

bool SupportsGridSample(const ir::Node& node, const runtime::NodeTypes& types, std::string* why_not) {
  auto say = [&](std::string s) {
    if (why_not) *why_not = std::move(s);
    return false;
  };
  ir::DataType xt = InputDtype(types, 0), gt = InputDtype(types, 1);
  if (!IsCudaFloat(xt)) {
    return say(xt == ir::DataType::kUndefined ? "the dtype of input 0 (X) is not known at load time"
                                              : fmt::format("dtype {} of input 0 (X)", ir::DataTypeName(xt)));
  }
  if (!IsCudaFloat(gt) && gt != ir::DataType::kFloat64) {
    return say(gt == ir::DataType::kUndefined ? "the dtype of input 1 (grid) is not known at load time"
                                              : fmt::format("dtype {} of input 1 (grid)", ir::DataTypeName(gt)));
  }
  const ir::TypeInfo* in = types.inputs.empty() ? nullptr : types.inputs[0];
  if (in && in->shape.rank_known && in->shape.dims.size() > static_cast<size_t>(kMaxAxes) + 2) {
    return say(fmt::format("{} spatial dims of input 0 (X); at most {}", in->shape.dims.size() - 2, kMaxAxes));
  }
  (void)node;
  return true;
}

// ---------------------------------------------------------------- AffineGrid

// As ops::AffineGridCoordinate.
__device__ __forceinline__ double AffineCoordinate(int64_t i, int64_t n, bool align_corners) {
  if (align_corners) return n > 1 ? -1.0 + 2.0 * static_cast<double>(i) / static_cast<double>(n - 1) : -1.0;
  return -1.0 + (2.0 * static_cast<double>(i) + 1.0) / static_cast<double>(n);
}

struct AffineParams {
  int nd = 2;                    // spatial dims (2 or 3)
  int64_t spatial[3] = {};       // (D,) H, W
  int64_t positions = 0, batch = 0;
  bool align_corners = false;
};

// theta [N, nd, nd + 1] -> grid [N, (D,) H, W, nd]: grid[n, p] = theta[n] *
// (x_w, y_h, (z_d,) 1), summed in double in the CPU's order.
template <typename T>
__global__ void AffineGridKernel(const T* __restrict__ theta, T* __restrict__ out, AffineParams p) {
  const int64_t total = p.batch * p.positions;
  for (int64_t t = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; t < total; t += int64_t{gridDim.x} * blockDim.x) {
    const int64_t n = t / p.positions;
    int64_t rest = t - n * p.positions;
    int64_t index[3] = {0, 0, 0};
    for (int d = p.nd - 1; d >= 0; --d) {
      index[d] = rest % p.spatial[d];
      rest /= p.spatial[d];
    }
    double base[4] = {1.0, 1.0, 1.0, 1.0};
    for (int j = 0; j < p.nd; ++j) base[j] = AffineCoordinate(index[p.nd - 1 - j], p.spatial[p.nd - 1 - j], p.align_corners);
    const T* m = theta + n * p.nd * (p.nd + 1);
    for (int r = 0; r < p.nd; ++r) {
      double v = 0;
      for (int j = 0; j <= p.nd; ++j) v += static_cast<double>(ToFloat(m[r * (p.nd + 1) + j])) * base[j];
      out[t * p.nd + r] = FromFloat<T>(static_cast<float>(v));
    }
  }
}

Status AffineGrid(CudaKernelContext& ctx) {
  VIGIL_RETURN_IF_ERROR(RequireInputs(ctx, 2));
  const runtime::Tensor& theta = *ctx.input(0);
  if (ctx.input(1)->rank() != 1) return ctx.Fail("input size is {}; it must be 1-D", ctx.input(1)->Describe());
  VIGIL_ASSIGN_OR_RETURN(bool align_corners, ops::ReadAlignCorners(ctx.node()));
  VIGIL_ASSIGN_OR_RETURN(std::vector<int64_t> size, HostInts(ctx, 1, "size"));
  VIGIL_ASSIGN_OR_RETURN(std::vector<int64_t> spatial, ops::ResolveAffineGridSize(ctx.node(), size, theta.shape()));
  AffineParams p;
  p.nd = static_cast<int>(spatial.size());
  p.batch = theta.dim(0);
  p.align_corners = align_corners;
  p.positions = 1;
  std::vector<int64_t> out_shape = {p.batch};
  for (int d = 0; d < p.nd; ++d) {
    p.spatial[d] = spatial[d];
    p.positions *= spatial[d];
    out_shape.push_back(spatial[d]);
  }
  out_shape.push_back(p.nd);
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * y, ctx.Output(0, theta.dtype(), out_shape));
  if (y->element_count() == 0) return Status::Ok();
  const int64_t work = p.batch * p.positions;
  bool ok = DispatchFloat(theta.dtype(), [&](auto tag) {
    using T = decltype(tag);
    AffineGridKernel<T><<<BlocksFor(work, kThreads), kThreads, 0, ctx.stream()>>>(
        static_cast<const T*>(theta.raw_data()), static_cast<T*>(y->raw_data()), p);
  });
  if (!ok) return ctx.Unsupported("dtype {} of input 0 (theta)", ir::DataTypeName(theta.dtype()));
  VIGIL_CHECK_LAUNCH("AffineGrid");
  return Status::Ok();
}

bool SupportsAffineGrid(const ir::Node& node, const runtime::NodeTypes& types, std::string* why_not) {
  ir::DataType t = InputDtype(types, 0);
  if (!IsCudaFloat(t)) {
    if (why_not) {
      *why_not = t == ir::DataType::kUndefined ? "the dtype of input 0 (theta) is not known at load time"
                                               : fmt::format("dtype {} of input 0 (theta)", ir::DataTypeName(t));
    }
    return false;
  }
  (void)node;
  return true;
}

const CudaKernelDef kVisionKernels[] = {
    {"", "GridSample", 16, kLatest, GridSample, SupportsGridSample},
    {"", "AffineGrid", 20, kLatest, AffineGrid, SupportsAffineGrid, HostInput(1)},
};

}  // namespace

std::span<const CudaKernelDef> VisionCudaKernels() { return kVisionKernels; }

}  // namespace vigil::cuda
