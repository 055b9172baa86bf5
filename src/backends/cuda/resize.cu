// CUDA kernels of Resize (opsets 10 to latest) and the deprecated Upsample
// (opsets 7 to 9): modes nearest (all four nearest_mode roundings; any dtype
// of 1, 2, 4 or 8 bytes) and N-d linear (float32, float16, bfloat16), with
// the coordinate transformations half_pixel, half_pixel_symmetric,
// pytorch_half_pixel, align_corners, asymmetric and tf_half_pixel_for_nn, the
// axes attribute and every keep_aspect_ratio_policy. Refused (the node falls
// back to the CPU): cubic, tf_crop_and_resize, antialias with linear, and
// exclude_outside.
//
// The coordinate math follows the CPU kernel (backends/cpu/resize.cpp)
// operation for operation, in float64: a first kernel computes, for every
// output position of every resized axis, the two input positions of its
// window (clamped to the axis) and their weights; a second one gathers (or
// for linear, sums the 2^k weighted corners of) the input for each output
// element. Linear sums are accumulated in float32.
//
// fmt's constexpr formatting code mentions long double; with
// --expt-relaxed-constexpr nvcc warns about it (#20208) in any .cu file that
// formats a message, although none of it runs on the device.
#pragma nv_diag_suppress 20208

#include <algorithm>
#include <cmath>
#include <string>
#include <type_traits>
#include <vector>

#include "backends/cuda/cuda_kernel.h"
#include "backends/cuda/device_common.cuh"
#include "backends/cuda/fast_divmod.cuh"
#include "vigil/float16.h"
#include "ops/shape_ops_common.h"

namespace vigil::cuda {
namespace {

using Shape = std::vector<int64_t>;
constexpr int kThreads = 256;
constexpr uint64_t kNarrowLimit = uint64_t{1} << 30;  // int32 indexing below this

enum class Coord : int { kHalfPixel, kHalfPixelSymmetric, kPytorchHalfPixel, kAlignCorners, kAsymmetric, kTfHalfPixelForNn };
enum class Nearest : int { kRoundPreferFloor, kRoundPreferCeil, kFloor, kCeil };

struct ResizeAttrs {
  bool linear = false;
  Coord coord = Coord::kHalfPixel;
  Nearest nearest = Nearest::kRoundPreferFloor;
  // Resize-10 and Upsample: asymmetric coordinates, nearest rounds down when
  // upsampling and up when downsampling (as the CPU kernel).
  bool legacy = false;
  Shape axes;
  std::string policy = "stretch";
};

bool ParseCoord(const std::string& s, Coord* c) {
  if (s == "half_pixel") *c = Coord::kHalfPixel;
  else if (s == "half_pixel_symmetric") *c = Coord::kHalfPixelSymmetric;
  else if (s == "pytorch_half_pixel") *c = Coord::kPytorchHalfPixel;
  else if (s == "align_corners") *c = Coord::kAlignCorners;
  else if (s == "asymmetric") *c = Coord::kAsymmetric;
  else if (s == "tf_half_pixel_for_nn") *c = Coord::kTfHalfPixelForNn;
  else return false;
  return true;
}

bool ParseNearest(const std::string& s, Nearest* n) {
  if (s == "round_prefer_floor") *n = Nearest::kRoundPreferFloor;
  else if (s == "round_prefer_ceil") *n = Nearest::kRoundPreferCeil;
  else if (s == "floor") *n = Nearest::kFloor;
  else if (s == "ceil") *n = Nearest::kCeil;
  else return false;
  return true;
}

bool IsModern(const ir::Node& node, int64_t opset) { return node.op_type == "Resize" && opset >= 11; }

// Reads the attributes as the CPU kernel does (`modern`: Resize-11+; `v18`:
// opset 18+, where axes and keep_aspect_ratio_policy exist); `refuse` gets a
// reason when the node uses something this file does not implement.
Result<ResizeAttrs> ReadAttrs(const ir::Node& node, bool modern, bool v18, std::string* refuse) {
  ResizeAttrs a;
  VIGIL_ASSIGN_OR_RETURN(std::string mode, ops::StringAttr(node, "mode", "nearest"));
  if (mode == "linear" || (mode == "bilinear" && node.op_type == "Upsample")) a.linear = true;
  else if (mode != "nearest") *refuse = fmt::format("mode '{}' is not implemented", mode);
  if (!modern) {
    a.coord = Coord::kAsymmetric;
    a.legacy = true;
    return a;
  }
  VIGIL_ASSIGN_OR_RETURN(std::string coord, ops::StringAttr(node, "coordinate_transformation_mode", "half_pixel"));
  if (!ParseCoord(coord, &a.coord)) *refuse = fmt::format("coordinate_transformation_mode '{}' is not implemented", coord);
  VIGIL_ASSIGN_OR_RETURN(std::string nearest, ops::StringAttr(node, "nearest_mode", "round_prefer_floor"));
  if (!ParseNearest(nearest, &a.nearest)) *refuse = fmt::format("nearest_mode '{}' is not implemented", nearest);
  VIGIL_ASSIGN_OR_RETURN(int64_t exclude, ops::IntAttr(node, "exclude_outside", 0));
  if (exclude != 0) *refuse = "exclude_outside=1 is not implemented";
  // antialias exists from opset 18; a linear antialias is refused whatever
  // the opset (the support predicates do not know it).
  VIGIL_ASSIGN_OR_RETURN(int64_t antialias, ops::IntAttr(node, "antialias", 0));
  if (antialias != 0 && a.linear) *refuse = "antialias=1 is not implemented";
  if (v18) {
    VIGIL_ASSIGN_OR_RETURN(a.axes, ops::IntsAttr(node, "axes"));
    VIGIL_ASSIGN_OR_RETURN(a.policy, ops::StringAttr(node, "keep_aspect_ratio_policy", "stretch"));
  }
  return a;
}

// A host-read float input (scales) as doubles; empty when absent.
Result<std::vector<double>> HostDoubles(const CudaKernelContext& ctx, size_t i) {
  std::vector<double> out;
  const runtime::Tensor* t = ctx.input(i);
  if (!t) return out;
  for (uint64_t k = 0; k < t->element_count(); ++k) {
    switch (t->dtype()) {
      case ir::DataType::kFloat32: out.push_back(t->data<float>()[k]); break;
      case ir::DataType::kFloat64: out.push_back(t->data<double>()[k]); break;
      case ir::DataType::kFloat16: out.push_back(Float16ToFloat(t->data<uint16_t>()[k])); break;
      default: return ctx.Unsupported("input {} of dtype {}", i, ir::DataTypeName(t->dtype()));
    }
  }
  return out;
}

Result<Shape> HostInts(const CudaKernelContext& ctx, size_t i) {
  const runtime::Tensor* t = ctx.input(i);
  Shape out(t->element_count());
  for (size_t k = 0; k < out.size(); ++k) {
    if (t->dtype() == ir::DataType::kInt64) out[k] = t->data<int64_t>()[k];
    else if (t->dtype() == ir::DataType::kInt32) out[k] = t->data<int32_t>()[k];
    else return ctx.Fail("input {} (sizes) has dtype {}; it must be int64 or int32", i, ir::DataTypeName(t->dtype()));
  }
  return out;
}

// ---------------------------------------------------------------- device side

struct Tap {
  int64_t o0, o1;  // element offsets (index * stride) of the window's two input positions
  float w0, w1;    // their weights; nearest: o0 is the pick and w0 = 1
};

struct AxisParams {
  int64_t in = 0, stride = 0, table = 0;  // table: where this axis's taps start
  double scale = 1, in_w = 0, out_w = 0, offset = 0;  // out_w = scale * in; offset: half_pixel_symmetric
};

struct TapParams {
  int count = 0;  // resized axes
  AxisParams axes[kMaxRank];
  Coord coord = Coord::kHalfPixel;
  Nearest nearest = Nearest::kRoundPreferFloor;
  bool linear = false, legacy = false;
};

// Where output position y reads from in input coordinates (the CPU's
// SourceCoordinate; no multiply is followed by an add, so no FMA contraction
// can change the rounding).
__device__ double SourceCoordinate(Coord coord, const AxisParams& a, double y) {
  switch (coord) {
    case Coord::kAlignCorners: return a.out_w == 1 ? 0.0 : y * (a.in_w - 1) / (a.out_w - 1);
    case Coord::kAsymmetric: return y / a.scale;
    case Coord::kPytorchHalfPixel: return a.out_w == 1 ? -0.5 : (y + 0.5) / a.scale - 0.5;
    case Coord::kTfHalfPixelForNn: return (y + 0.5) / a.scale;
    case Coord::kHalfPixelSymmetric: return a.offset + (y + 0.5) / a.scale - 0.5;
    default: return (y + 0.5) / a.scale - 0.5;
  }
}

__device__ int64_t ClampIndex(int64_t i, int64_t n) { return i < 0 ? 0 : i >= n ? n - 1 : i; }

__global__ void TapsKernel(TapParams p, Tap* __restrict__ taps, int64_t total) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; t < total; t += stride) {
    int j = 0;
    while (j + 1 < p.count && p.axes[j + 1].table <= t) ++j;
    const AxisParams& a = p.axes[j];
    double x = SourceCoordinate(p.coord, a, static_cast<double>(t - a.table));
    Tap tap;
    if (p.legacy && !p.linear) {
      int64_t i = ClampIndex(static_cast<int64_t>(a.scale < 1 ? ceil(x) : floor(x)), a.in);
      tap = {i * a.stride, i * a.stride, 1.0f, 0.0f};
    } else {
      // The two positions nearest to x, ties to the left; ratio in (0, 1]:
      // an exact integer position is the right end of the interval to its left.
      double x_floor = floor(x);
      double ratio = x == x_floor ? 1.0 : x - x_floor;
      double xp = x + 1.0;
      double pf = floor(xp);
      int64_t first = static_cast<int64_t>(pf) + (xp - pf == 0 ? -1 : 0) - 1;
      int64_t i0 = ClampIndex(first, a.in) * a.stride, i1 = ClampIndex(first + 1, a.in) * a.stride;
      if (p.linear) {
        tap = {i0, i1, static_cast<float>(1 - ratio), static_cast<float>(ratio)};
      } else {
        bool right = ratio == 1.0;
        if (!right) {
          switch (p.nearest) {
            case Nearest::kRoundPreferFloor: right = ratio > 0.5; break;
            case Nearest::kRoundPreferCeil: right = ratio >= 0.5; break;
            case Nearest::kFloor: right = false; break;
            case Nearest::kCeil: right = true; break;
          }
        }
        int64_t pick = right ? i1 : i0;
        tap = {pick, pick, 1.0f, 0.0f};
      }
    }
    taps[t] = tap;
  }
}

// Output dims; per dim the input stride (identity axes) or where the dim's
// taps start (resized axes, table >= 0).
template <typename I>
struct OutMap {
  int rank = 0;
  I dims[kMaxRank] = {};
  I strides[kMaxRank] = {};
  I table[kMaxRank] = {};
};

template <typename W, typename I>
__global__ void NearestKernel(const W* __restrict__ src, W* __restrict__ dst, const Tap* __restrict__ taps,
                              OutMap<I> m, I total) {
  const I stride = static_cast<I>(gridDim.x) * static_cast<I>(blockDim.x);
  for (I i = static_cast<I>(blockIdx.x) * static_cast<I>(blockDim.x) + static_cast<I>(threadIdx.x); i < total;
       i += stride) {
    I rest = i, off = 0;
    for (int d = m.rank - 1; d >= 0; --d) {
      I q = rest / m.dims[d];
      I c = rest - q * m.dims[d];
      rest = q;
      off += m.table[d] < 0 ? c * m.strides[d] : static_cast<I>(taps[m.table[d] + c].o0);
    }
    dst[i] = src[off];
  }
}

template <typename T, typename I>
__global__ void LinearKernel(const T* __restrict__ src, T* __restrict__ dst, const Tap* __restrict__ taps,
                             OutMap<I> m, I total) {
  const I stride = static_cast<I>(gridDim.x) * static_cast<I>(blockDim.x);
  for (I i = static_cast<I>(blockIdx.x) * static_cast<I>(blockDim.x) + static_cast<I>(threadIdx.x); i < total;
       i += stride) {
    I rest = i, base = 0;
    int k = 0;
    Tap corner[kMaxRank];
    for (int d = m.rank - 1; d >= 0; --d) {
      I q = rest / m.dims[d];
      I c = rest - q * m.dims[d];
      rest = q;
      if (m.table[d] < 0) base += c * m.strides[d];
      else corner[k++] = taps[m.table[d] + c];
    }
    // Sum over the 2^k corners; a zero weight drops its term (so that an
    // infinite neighbour outside the window gives no NaN), as on the CPU.
    float acc = 0;
    for (int combo = 0; combo < (1 << k); ++combo) {
      float w = 1;
      I off = base;
      for (int j = 0; j < k && w != 0; ++j) {
        bool hi = (combo >> j) & 1;
        w *= hi ? corner[j].w1 : corner[j].w0;
        off += static_cast<I>(hi ? corner[j].o1 : corner[j].o0);
      }
      if (w != 0) acc += w * ToFloat(src[off]);
    }
    dst[i] = FromFloat<T>(acc);
  }
}

// Resizes of two adjacent axes only (an image's height and width, NCHW or
// NHWC; the other axes copied): one thread per output element finds (plane,
// oy, ox, c) with three invariant divisions, c running over the `inner`
// elements after the two axes (1 for NCHW, the channels for NHWC), and reads
// its taps directly. The kernels above walk every axis with hardware-less
// divisions and keep the corners in local memory: UNet's 2x bilinear
// upsample of [64, 64, 112, 112] took 6.8 ms through LinearKernel on an
// H200. The sums are LinearKernel's, term for term: corners (y0, x0), (y0,
// x1), (y1, x0), (y1, x1), weights wx * wy, zero weights dropped. The taps'
// offsets already count `inner` (they are index * stride).
//
// Channels-last, each thread takes `V` consecutive elements of `inner` (a
// 16-byte vector where inner and the pointers allow): the per-element work
// was most of the time of UNet's upsample in float16 (0.84 ms for [64, 112,
// 112, 64] -> [64, 224, 224, 64] on an H200, 8x its memory time). Each
// element still gets the same sums.
template <typename T, int V>
struct alignas(sizeof(T) * V) Pack {
  T v[V];
};

struct PlaneMap {
  FastDivmod inner, plane_size, row;  // inner / V; OH * OW; OW
  uint32_t in_plane = 0;              // IH * IW * inner
};

// Output vector i's plane (the leading axes, flattened), row, column and
// vector c within `inner`.
__device__ __forceinline__ void PlaneCoordinates(uint32_t i, const PlaneMap& m, uint32_t* plane, uint32_t* oy,
                                                 uint32_t* ox, uint32_t* c) {
  uint32_t pixel, at;
  m.inner.DivMod(i, &pixel, c);
  m.plane_size.DivMod(pixel, plane, &at);
  m.row.DivMod(at, oy, ox);
}

template <typename T, int V>
__global__ void LinearPlanesKernel(const T* __restrict__ src, T* __restrict__ dst, const Tap* __restrict__ ty,
                                   const Tap* __restrict__ tx, PlaneMap m, uint32_t vectors) {
  using P = Pack<T, V>;
  const uint32_t stride = gridDim.x * blockDim.x;
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < vectors; i += stride) {
    uint32_t plane, oy, ox, c;
    PlaneCoordinates(i, m, &plane, &oy, &ox, &c);
    const Tap a = ty[oy], b = tx[ox];
    const T* s = src + plane * m.in_plane + c * V;
    const uint32_t y0 = static_cast<uint32_t>(a.o0), y1 = static_cast<uint32_t>(a.o1);
    const uint32_t x0 = static_cast<uint32_t>(b.o0), x1 = static_cast<uint32_t>(b.o1);
    const float w00 = b.w0 * a.w0, w01 = b.w1 * a.w0, w10 = b.w0 * a.w1, w11 = b.w1 * a.w1;
    float acc[V] = {};
    auto add = [&](float w, uint32_t off) {
      if (w == 0) return;
      const P p = *reinterpret_cast<const P*>(s + off);
#pragma unroll
      for (int k = 0; k < V; ++k) acc[k] += w * ToFloat(p.v[k]);
    };
    add(w00, y0 + x0);
    add(w01, y0 + x1);
    add(w10, y1 + x0);
    add(w11, y1 + x1);
    P out;
#pragma unroll
    for (int k = 0; k < V; ++k) out.v[k] = FromFloat<T>(acc[k]);
    reinterpret_cast<P*>(dst)[i] = out;
  }
}

template <typename W, int V>
__global__ void NearestPlanesKernel(const W* __restrict__ src, W* __restrict__ dst, const Tap* __restrict__ ty,
                                    const Tap* __restrict__ tx, PlaneMap m, uint32_t vectors) {
  using P = Pack<W, V>;
  const uint32_t stride = gridDim.x * blockDim.x;
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < vectors; i += stride) {
    uint32_t plane, oy, ox, c;
    PlaneCoordinates(i, m, &plane, &oy, &ox, &c);
    const uint32_t off = plane * m.in_plane + c * V + static_cast<uint32_t>(ty[oy].o0) + static_cast<uint32_t>(tx[ox].o0);
    reinterpret_cast<P*>(dst)[i] = *reinterpret_cast<const P*>(src + off);
  }
}

// Elements per thread for `inner` elements of `bytes` bytes: a 16-byte
// vector where inner is a multiple of it and both pointers are 16-byte
// aligned, else 1.
int PlaneVector(int64_t inner, size_t bytes, const void* src, const void* dst) {
  const auto v = static_cast<int64_t>(16 / bytes);
  const bool aligned = reinterpret_cast<uintptr_t>(src) % 16 == 0 && reinterpret_cast<uintptr_t>(dst) % 16 == 0;
  return bytes <= 8 && v > 1 && inner % v == 0 && aligned ? static_cast<int>(v) : 1;
}

// ---------------------------------------------------------------- host side

bool IsClose(double a, double b) { return std::fabs(a - b) <= 1e-9 * std::max(std::fabs(a), std::fabs(b)); }

Status Resize(CudaKernelContext& ctx) {
  if (!ctx.has_input(0)) return ctx.Fail("required input 0 is missing");
  const runtime::Tensor& x = *ctx.input(0);
  const ir::Node& node = ctx.node();
  std::string refuse;
  VIGIL_ASSIGN_OR_RETURN(ResizeAttrs at, ReadAttrs(node, IsModern(node, ctx.opset()), ctx.opset() >= 18, &refuse));
  if (!refuse.empty()) return ctx.Unsupported("{}", refuse);
  size_t rank = x.rank();
  if (rank > static_cast<size_t>(kMaxRank)) return ctx.Unsupported("rank {} (at most {})", rank, kMaxRank);
  // Scales or sizes, as the CPU kernel reads them.
  std::vector<double> scales;
  Shape sizes;
  if (node.op_type == "Upsample" && ctx.opset() < 9) {
    VIGIL_ASSIGN_OR_RETURN(std::vector<float> f, ops::FloatsAttr(node, "scales"));
    scales.assign(f.begin(), f.end());
  } else if (node.op_type == "Upsample" || ctx.opset() < 11) {
    VIGIL_ASSIGN_OR_RETURN(scales, HostDoubles(ctx, 1));
  } else {
    VIGIL_ASSIGN_OR_RETURN(scales, HostDoubles(ctx, 2));
    if (ctx.has_input(3) && ctx.input(3)->element_count() > 0) {
      VIGIL_ASSIGN_OR_RETURN(sizes, HostInts(ctx, 3));
    }
  }
  Shape axes;
  for (int64_t a : at.axes) {
    VIGIL_ASSIGN_OR_RETURN(int64_t n, ops::NormalizeAxis(node, a, static_cast<int64_t>(rank), "axes entry"));
    if (std::find(axes.begin(), axes.end(), n) != axes.end()) return ctx.Fail("axes repeats axis {}", n);
    axes.push_back(n);
  }
  if (scales.empty() == sizes.empty()) {
    return ctx.Fail("needs exactly one of scales and sizes (got {} scales, {} sizes)", scales.size(), sizes.size());
  }
  auto shape = ops::shape_family::ComputeResizeShape(x.shape(), scales.empty() ? nullptr : &scales,
                                                     sizes.empty() ? nullptr : &sizes, axes, at.policy);
  if (!shape.ok()) return ctx.Fail("{}", shape.status().summary());
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * out, ctx.Output(0, x.dtype(), shape->dims));
  uint64_t total = out->element_count();
  if (total == 0) return Status::Ok();

  // Per-axis parameters; identity axes (as the CPU decides them) copy straight.
  TapParams p;
  p.coord = at.coord;
  p.nearest = at.nearest;
  p.linear = at.linear;
  p.legacy = at.legacy;
  Shape strides(rank, 1), table(rank, -1);
  for (size_t d = rank; d-- > 1;) strides[d - 1] = strides[d] * x.dim(d);
  int64_t taps_total = 0;
  for (size_t d = 0; d < rank; ++d) {
    int64_t out_dim = shape->dims[d];
    double s = shape->scales[d];
    if (IsClose(s, 1.0) && out_dim == x.dim(d)) continue;
    AxisParams& a = p.axes[p.count++];
    a.in = x.dim(d);
    a.stride = strides[d];
    a.table = table[d] = taps_total;
    a.scale = s;
    a.in_w = static_cast<double>(x.dim(d));
    a.out_w = s * a.in_w;
    double adjustment = static_cast<double>(out_dim) / a.out_w;
    a.offset = a.in_w / 2 * (1 - adjustment);
    taps_total += out_dim;
  }
  const Tap* taps = nullptr;
  if (taps_total > 0) {
    VIGIL_ASSIGN_OR_RETURN(void* ws, ctx.stream_context().Workspace(static_cast<size_t>(taps_total) * sizeof(Tap)));
    TapsKernel<<<BlocksFor(taps_total, kThreads), kThreads, 0, ctx.stream()>>>(p, static_cast<Tap*>(ws), taps_total);
    VIGIL_CHECK_LAUNCH("Resize taps");
    taps = static_cast<const Tap*>(ws);
  }

  bool narrow = total < kNarrowLimit && x.element_count() < kNarrowLimit;
  unsigned blocks = BlocksFor(static_cast<int64_t>(total), kThreads);
  auto make_map = [&](auto tag) {
    using I = decltype(tag);
    OutMap<I> m{static_cast<int>(rank)};
    for (int d = 0; d < m.rank; ++d) m.dims[d] = I(shape->dims[d]), m.strides[d] = I(strides[d]), m.table[d] = I(table[d]);
    return m;
  };
  // Only two adjacent axes resized: the planes kernels.
  size_t first = rank;
  for (size_t d = 0; d + 1 < rank; ++d) {
    if (table[d] >= 0 && table[d + 1] >= 0) first = d;
  }
  const bool planes = narrow && p.count == 2 && first < rank;
  bool ok;
  if (planes) {
    const Tap* ty = taps + table[first];
    const Tap* tx = taps + table[first + 1];
    const auto inner = static_cast<uint32_t>(strides[first + 1]);  // the axes after them are copied
    const int v = PlaneVector(inner, static_cast<size_t>(ir::DataTypeBits(x.dtype()) / 8), x.raw_data(),
                              out->raw_data());
    PlaneMap m;
    m.inner = FastDivmod(inner / static_cast<uint32_t>(v));
    m.plane_size = FastDivmod(static_cast<uint32_t>(shape->dims[first] * shape->dims[first + 1]));
    m.row = FastDivmod(static_cast<uint32_t>(shape->dims[first + 1]));
    m.in_plane = static_cast<uint32_t>(x.dim(first) * x.dim(first + 1)) * inner;
    const auto vectors = static_cast<uint32_t>(total / static_cast<uint64_t>(v));
    const unsigned vblocks = BlocksFor(static_cast<int64_t>(vectors), kThreads);
    // f(std::integral_constant<int, V>) for the chosen width: 1, or 16 bytes of T.
    auto with_width = [&](auto t, auto f) {
      using T = decltype(t);
      if (v == 1) f(std::integral_constant<int, 1>{});
      else if constexpr (sizeof(T) <= 8) f(std::integral_constant<int, static_cast<int>(16 / sizeof(T))>{});
    };
    if (at.linear) {
      ok = DispatchFloat(x.dtype(), [&](auto t) {
        using T = decltype(t);
        with_width(t, [&](auto width) {
          LinearPlanesKernel<T, decltype(width)::value><<<vblocks, kThreads, 0, ctx.stream()>>>(
              static_cast<const T*>(x.raw_data()), static_cast<T*>(out->raw_data()), ty, tx, m, vectors);
        });
      });
    } else {
      int bits = ir::DataTypeBits(x.dtype());
      ok = bits % 8 == 0 && DispatchBySize(static_cast<size_t>(bits / 8), [&](auto w) {
        using W = decltype(w);
        with_width(w, [&](auto width) {
          NearestPlanesKernel<W, decltype(width)::value><<<vblocks, kThreads, 0, ctx.stream()>>>(
              static_cast<const W*>(x.raw_data()), static_cast<W*>(out->raw_data()), ty, tx, m, vectors);
        });
      });
    }
  } else if (at.linear) {
    ok = DispatchFloat(x.dtype(), [&](auto v) {
      using T = decltype(v);
      const T* s = static_cast<const T*>(x.raw_data());
      T* o = static_cast<T*>(out->raw_data());
      if (narrow) LinearKernel<<<blocks, kThreads, 0, ctx.stream()>>>(s, o, taps, make_map(int32_t{}), int32_t(total));
      else LinearKernel<<<blocks, kThreads, 0, ctx.stream()>>>(s, o, taps, make_map(int64_t{}), int64_t(total));
    });
  } else {
    int bits = ir::DataTypeBits(x.dtype());
    ok = bits % 8 == 0 && DispatchBySize(static_cast<size_t>(bits / 8), [&](auto w) {
      using W = decltype(w);
      const W* s = static_cast<const W*>(x.raw_data());
      W* o = static_cast<W*>(out->raw_data());
      if (narrow) NearestKernel<<<blocks, kThreads, 0, ctx.stream()>>>(s, o, taps, make_map(int32_t{}), int32_t(total));
      else NearestKernel<<<blocks, kThreads, 0, ctx.stream()>>>(s, o, taps, make_map(int64_t{}), int64_t(total));
    });
  }
  if (!ok) return ctx.Unsupported("dtype {} in mode {}", ir::DataTypeName(x.dtype()), at.linear ? "linear" : "nearest");
  VIGIL_CHECK_LAUNCH(at.linear ? "Resize linear" : "Resize nearest");
  return Status::Ok();
}

// ---------------------------------------------------------------- support predicates

// `modern`: Resize-11+; `scales`: the index of the scales input (-1: attribute).
bool SupportsResizeAt(const ir::Node& node, const runtime::NodeTypes& types, std::string* why_not, bool modern,
                      int scales) {
  auto say = [&](std::string s) {
    if (why_not) *why_not = std::move(s);
    return false;
  };
  std::string refuse;
  auto at = ReadAttrs(node, modern, modern, &refuse);
  if (!at.ok()) return say("malformed attributes");
  if (!refuse.empty()) return say(refuse);
  if (at->policy != "stretch" && at->policy != "not_larger" && at->policy != "not_smaller") {
    return say(fmt::format("keep_aspect_ratio_policy '{}'", at->policy));
  }
  ir::DataType t = InputDtype(types, 0);
  if (at->linear && !IsCudaFloat(t)) {
    return say(t == ir::DataType::kUndefined ? "the dtype of input 0 is not known at load time"
                                             : fmt::format("dtype {} of input 0 in linear mode", ir::DataTypeName(t)));
  }
  if (!at->linear && !FixedSizeInput(types, 0, why_not)) return false;
  const ir::TypeInfo* in = types.inputs.empty() ? nullptr : types.inputs[0];
  if (in && in->shape.rank_known && in->shape.dims.size() > static_cast<size_t>(kMaxRank)) {
    return say(fmt::format("rank {} of input 0 (at most {})", in->shape.dims.size(), kMaxRank));
  }
  if (scales >= 0 && static_cast<size_t>(scales) < node.inputs.size() && !node.inputs[scales].empty()) {
    ir::DataType st = InputDtype(types, scales);
    if (st != ir::DataType::kFloat32 && st != ir::DataType::kFloat64 && st != ir::DataType::kFloat16) {
      return say(fmt::format("scales of dtype {}", ir::DataTypeName(st)));
    }
  }
  return true;
}

bool SupportsResize10(const ir::Node& n, const runtime::NodeTypes& t, std::string* w) { return SupportsResizeAt(n, t, w, false, 1); }
bool SupportsResize11(const ir::Node& n, const runtime::NodeTypes& t, std::string* w) { return SupportsResizeAt(n, t, w, true, 2); }
bool SupportsUpsample7(const ir::Node& n, const runtime::NodeTypes& t, std::string* w) { return SupportsResizeAt(n, t, w, false, -1); }
bool SupportsUpsample9(const ir::Node& n, const runtime::NodeTypes& t, std::string* w) { return SupportsResizeAt(n, t, w, false, 1); }

// roi (input 1 from opset 11) is only used by tf_crop_and_resize, which is
// refused, so it stays where it is.
const CudaKernelDef kResizeKernels[] = {
    {"", "Resize", 10, 10, Resize, SupportsResize10, HostInput(1)},
    {"", "Resize", 11, kLatest, Resize, SupportsResize11, HostInput(2) | HostInput(3)},
    {"", "Upsample", 7, 8, Resize, SupportsUpsample7},
    {"", "Upsample", 9, 9, Resize, SupportsUpsample9, HostInput(1)},
};

}  // namespace

std::span<const CudaKernelDef> ResizeCudaKernels() { return kResizeKernels; }

}  // namespace vigil::cuda
