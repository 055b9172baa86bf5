// CPU kernels of Resize (opsets 10 to 19+) and the deprecated Upsample.
//
// The arithmetic follows the ONNX reference implementation
// (onnx/reference/ops/op_resize.py): the resize is separable, so it runs one
// axis at a time in float64; along an axis every output position reads a
// fixed-size window of input positions (edge positions repeat) with weights
// from the interpolation kernel. Only the final store rounds to the output
// dtype (integers round half to even and saturate, like the reference).
#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include <fmt/ranges.h>

#include "backends/cpu/fast/fast_kernels.h"
#include "backends/cpu/shape_ops_common.h"
#include "ir/dtype.h"
#include "ops/shape_ops_common.h"

namespace vigil::cpu::shape_family {
namespace {

using Shape = std::vector<int64_t>;

enum class Interp { kNearest, kLinear, kCubic };

struct ResizeAttrs {
  Interp mode = Interp::kNearest;
  std::string coord = "half_pixel";  // coordinate_transformation_mode
  std::string nearest_mode = "round_prefer_floor";
  double cubic_a = -0.75;
  bool exclude_outside = false;
  double extrapolation = 0.0;
  bool antialias = false;
  // Resize-10 and Upsample predate nearest_mode: asymmetric coordinates,
  // rounded down when upsampling and up when downsampling (what ONNX Runtime
  // does for those opsets).
  bool legacy_nearest = false;
  std::vector<int64_t> axes;  // opset 18; empty: all
  std::string policy = "stretch";
};

Result<ResizeAttrs> ReadResizeAttrs(const KernelContext& ctx) {
  const ir::Node& node = ctx.node();
  ResizeAttrs a;
  VIGIL_ASSIGN_OR_RETURN(std::string mode, ops::StringAttr(node, "mode", "nearest"));
  bool modern = node.op_type == "Resize" && ctx.opset() >= 11;
  if (mode == "nearest") a.mode = Interp::kNearest;
  else if (mode == "linear" || (mode == "bilinear" && node.op_type == "Upsample")) a.mode = Interp::kLinear;
  else if (mode == "cubic" && modern) a.mode = Interp::kCubic;
  else return ctx.Fail("mode '{}' is not supported (nearest, linear{})", mode, modern ? ", cubic" : "");
  if (!modern) {
    a.coord = "asymmetric";
    a.legacy_nearest = true;
    return a;
  }
  VIGIL_ASSIGN_OR_RETURN(a.coord, ops::StringAttr(node, "coordinate_transformation_mode", "half_pixel"));
  static const char* kCoords[] = {"half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners",
                                  "asymmetric", "tf_crop_and_resize", "tf_half_pixel_for_nn"};
  if (std::find(std::begin(kCoords), std::end(kCoords), a.coord) == std::end(kCoords)) {
    return ctx.Fail("coordinate_transformation_mode '{}' is not supported", a.coord);
  }
  VIGIL_ASSIGN_OR_RETURN(a.nearest_mode, ops::StringAttr(node, "nearest_mode", "round_prefer_floor"));
  if (a.nearest_mode != "round_prefer_floor" && a.nearest_mode != "round_prefer_ceil" && a.nearest_mode != "floor" &&
      a.nearest_mode != "ceil") {
    return ctx.Fail("nearest_mode '{}' is not supported", a.nearest_mode);
  }
  VIGIL_ASSIGN_OR_RETURN(float cubic_a, ops::FloatAttr(node, "cubic_coeff_a", -0.75f));
  VIGIL_ASSIGN_OR_RETURN(int64_t exclude, ops::IntAttr(node, "exclude_outside", 0));
  VIGIL_ASSIGN_OR_RETURN(float extrapolation, ops::FloatAttr(node, "extrapolation_value", 0.0f));
  a.cubic_a = cubic_a;
  a.exclude_outside = exclude != 0;
  a.extrapolation = extrapolation;
  if (ctx.opset() >= 18) {
    VIGIL_ASSIGN_OR_RETURN(int64_t antialias, ops::IntAttr(node, "antialias", 0));
    a.antialias = antialias != 0 && a.mode != Interp::kNearest;  // no filter to widen for nearest
    VIGIL_ASSIGN_OR_RETURN(a.axes, ops::IntsAttr(node, "axes"));
    VIGIL_ASSIGN_OR_RETURN(a.policy, ops::StringAttr(node, "keep_aspect_ratio_policy", "stretch"));
  }
  return a;
}

// The interpolation weights for a position `ratio` in (0, 1] past the input
// index to its left; see the window convention in AxisTaps.
std::vector<double> Coefficients(const ResizeAttrs& at, double ratio, double scale) {
  if (at.mode == Interp::kNearest) {
    if (ratio == 1.0) return {0, 1};
    const std::string& m = at.nearest_mode;
    bool right = m == "round_prefer_floor" ? ratio > 0.5 : m == "round_prefer_ceil" ? ratio >= 0.5 : m == "ceil";
    return {right ? 0.0 : 1.0, right ? 1.0 : 0.0};
  }
  double s = std::min(scale, 1.0);  // antialias widens the filter only when downscaling
  std::vector<double> c;
  if (at.mode == Interp::kLinear) {
    if (!at.antialias) return {1 - ratio, ratio};
    int64_t start = static_cast<int64_t>(std::floor(-1 / s)) + 1;
    for (int64_t i = start; i < 2 - start; ++i) c.push_back(std::clamp(1 - std::fabs((i - ratio) * s), 0.0, 1.0));
  } else {
    double A = at.cubic_a;
    if (!at.antialias) {
      double r1 = ratio + 1, r0 = 1 - ratio, r2 = r0 + 1;
      return {((A * r1 - 5 * A) * r1 + 8 * A) * r1 - 4 * A, ((A + 2) * ratio - (A + 3)) * ratio * ratio + 1,
              ((A + 2) * r0 - (A + 3)) * r0 * r0 + 1, ((A * r2 - 5 * A) * r2 + 8 * A) * r2 - 4 * A};
    }
    auto kernel = [A](double x) {
      x = std::fabs(x);
      if (x <= 1) return (A + 2) * x * x * x - (A + 3) * x * x + 1;
      if (x < 2) return A * x * x * x - 5 * A * x * x + 8 * A * x - 4 * A;
      return 0.0;
    };
    int64_t start = static_cast<int64_t>(std::floor(-2 / s)) + 1;
    for (int64_t i = start; i < 2 - start; ++i) c.push_back(kernel(s * (i - ratio)));
  }
  double sum = 0;
  for (double v : c) sum += v;
  for (double& v : c) v /= sum;
  return c;
}

// Where output position y of an axis reads from in input coordinates.
double SourceCoordinate(const ResizeAttrs& at, double y, double scale, int64_t in, int64_t out, double roi_start,
                        double roi_end) {
  double out_w = scale * static_cast<double>(in);  // the real-valued output width
  double in_w = static_cast<double>(in);
  const std::string& m = at.coord;
  if (m == "align_corners") return out_w == 1 ? 0.0 : y * (in_w - 1) / (out_w - 1);
  if (m == "asymmetric") return y / scale;
  if (m == "tf_crop_and_resize") {
    double x = out_w == 1 ? (roi_end - roi_start) * (in_w - 1) / 2 : y * (roi_end - roi_start) * (in_w - 1) / (out_w - 1);
    return x + roi_start * (in_w - 1);
  }
  if (m == "pytorch_half_pixel") return out_w == 1 ? -0.5 : (y + 0.5) / scale - 0.5;
  if (m == "tf_half_pixel_for_nn") return (y + 0.5) / scale;
  if (m == "half_pixel_symmetric") {
    double adjustment = static_cast<double>(out) / out_w;
    double offset = in_w / 2 * (1 - adjustment);
    return offset + (y + 0.5) / scale - 0.5;
  }
  return (y + 0.5) / scale - 0.5;  // half_pixel
}

// Along one axis: for each output position, `width` input indices (clamped
// to the axis) and their weights, or an extrapolated flag.
struct AxisTaps {
  size_t width = 0;
  std::vector<int64_t> index;
  std::vector<double> weight;
  std::vector<bool> extrapolated;
};

AxisTaps ComputeTaps(const ResizeAttrs& at, int64_t in, int64_t out, double scale, double roi_start, double roi_end) {
  AxisTaps t;
  for (int64_t y = 0; y < out; ++y) {
    double x = SourceCoordinate(at, static_cast<double>(y), scale, in, out, roi_start, roi_end);
    t.extrapolated.push_back(at.coord == "tf_crop_and_resize" && (x < 0 || x > static_cast<double>(in - 1)));
    if (at.legacy_nearest && at.mode == Interp::kNearest) {
      int64_t i = static_cast<int64_t>(scale < 1 ? std::ceil(x) : std::floor(x));
      t.width = 1;
      t.index.push_back(std::clamp<int64_t>(i, 0, in - 1));
      t.weight.push_back(1.0);
      continue;
    }
    double x_floor = std::floor(x);
    // ratio is in (0, 1]: an exact integer position counts as the right end
    // of the interval to its left.
    double ratio = x == x_floor ? 1.0 : x - x_floor;
    std::vector<double> c = Coefficients(at, ratio, scale);
    int64_t n = static_cast<int64_t>(c.size());
    // The n input positions nearest to x, ties to the left (the reference's
    // window rule on the edge-padded axis).
    int64_t pad = (n + 1) / 2;
    double xp = x + static_cast<double>(pad);
    double p = std::floor(xp), frac = xp - p;
    int64_t offset = n % 2 == 0 ? (frac == 0 ? -(n / 2) : -(n / 2) + 1) : (frac <= 0.5 ? -((n - 1) / 2) : -((n - 1) / 2) + 1);
    int64_t first = static_cast<int64_t>(p) + offset - pad;
    if (at.exclude_outside) {
      double sum = 0;
      for (int64_t k = 0; k < n; ++k) {
        if (first + k < 0 || first + k >= in) c[k] = 0;
        sum += c[k];
      }
      for (double& v : c) v /= sum == 0 ? 1.0 : sum;
    }
    t.width = static_cast<size_t>(n);
    for (int64_t k = 0; k < n; ++k) {
      t.index.push_back(std::clamp<int64_t>(first + k, 0, in - 1));
      t.weight.push_back(c[k]);
    }
  }
  return t;
}

// Resizes axis `axis` of `data` (shape `shape`) to `out` positions.
std::vector<double> ResizeAxis(const std::vector<double>& data, Shape& shape, size_t axis, int64_t out,
                               const AxisTaps& taps, double extrapolation) {
  int64_t outer = 1, inner = 1;
  for (size_t k = 0; k < shape.size(); ++k) {
    if (k < axis) outer *= shape[k];
    if (k > axis) inner *= shape[k];
  }
  int64_t in = shape[axis];
  std::vector<double> result(static_cast<size_t>(outer * out * inner));
  for (int64_t o = 0; o < outer; ++o) {
    const double* src = data.data() + o * in * inner;
    double* dst = result.data() + o * out * inner;
    for (int64_t y = 0; y < out; ++y) {
      const int64_t* idx = taps.index.data() + y * taps.width;
      const double* w = taps.weight.data() + y * taps.width;
      for (int64_t i = 0; i < inner; ++i) {
        double sum = 0;
        // Zero weights are skipped so that an infinite neighbour outside the
        // window does not turn the result into NaN (0 * inf).
        for (size_t k = 0; k < taps.width; ++k) {
          if (w[k] != 0) sum += w[k] * src[idx[k] * inner + i];
        }
        dst[y * inner + i] = taps.extrapolated[y] ? extrapolation : sum;
      }
    }
  }
  shape[axis] = out;
  return result;
}

bool IsClose(double a, double b) { return std::fabs(a - b) <= 1e-9 * std::max(std::fabs(a), std::fabs(b)); }

// Whether the reference leaves axis a alone (it resizes only the others):
// scale 1 and the same size, and for tf_crop_and_resize the whole roi.
bool AxisLeftAlone(const ResizeAttrs& at, double scale, int64_t out_dim, int64_t in_dim,
                   const std::pair<double, double>& roi) {
  return IsClose(scale, 1.0) && out_dim == in_dim &&
         (at.coord != "tf_crop_and_resize" || (roi.first == 0 && IsClose(roi.second, 1)));
}

// The optimised path for float32 resized along two adjacent axes only (an
// image's height and width, NCHW or NHWC), in order, without
// tf_crop_and_resize's extrapolation: the reference's taps and sums row by
// row (fast::SeparableResizeFloat). False when it does not
// apply (nothing written).
bool SeparableFloatResize(const ResizeAttrs& at, const runtime::Tensor& x, const ops::shape_family::ResizeShape& shape,
                          const Shape& order, const std::vector<std::pair<double, double>>& roi,
                          runtime::Tensor& out) {
  const size_t rank = x.rank();
  if (rank < 2 || at.coord == "tf_crop_and_resize") return false;
  std::vector<int64_t> resized;
  for (int64_t a : order) {
    if (AxisLeftAlone(at, shape.scales[a], shape.dims[a], x.dim(static_cast<size_t>(a)), roi[a])) continue;
    if (!resized.empty() && resized.back() > a) return false;
    resized.push_back(a);
  }
  if (resized.empty()) return false;
  // The resized axes are one or two adjacent ones, [h, w]; the axes after w
  // (an NHWC image's channels) are carried along as `inner`.
  const int64_t w_axis = std::max<int64_t>(resized.back(), 1), h_axis = w_axis - 1;
  if (resized.front() < h_axis) return false;
  int64_t inner = 1;
  for (size_t a = static_cast<size_t>(w_axis) + 1; a < rank; ++a) inner *= x.dim(a);
  // An axis left alone is copied (width 0), as the reference skips it (a sum
  // from 0 would turn -0 into +0).
  auto taps = [&](int64_t a) {
    if (std::find(resized.begin(), resized.end(), a) == resized.end()) return AxisTaps{};
    return ComputeTaps(at, x.dim(static_cast<size_t>(a)), shape.dims[a], shape.scales[a], roi[a].first, roi[a].second);
  };
  const AxisTaps th = taps(h_axis), tw = taps(w_axis);
  int64_t planes = 1;
  for (int64_t a = 0; a < h_axis; ++a) planes *= x.dim(static_cast<size_t>(a));
  fast::SeparableResizeFloat(x.data<float>(), planes,
                             {x.dim(static_cast<size_t>(h_axis)), shape.dims[h_axis], th.width, th.index.data(),
                              th.weight.data()},
                             {x.dim(static_cast<size_t>(w_axis)), shape.dims[w_axis], tw.width, tw.index.data(),
                              tw.weight.data()},
                             out.data<float>(), inner);
  return true;
}

// For a nearest resize, the source index of every output position along
// each axis (the identity along axes left alone), from the same taps the
// reference uses; nullopt where a position is not one whole input element
// (an extrapolated one, or taps that are not one 1 among 0s).
template <typename ResizedShape, typename Roi>
std::optional<std::vector<std::vector<int64_t>>> NearestIndex(const ResizeAttrs& at, const Shape& in,
                                                              const ResizedShape& shape, const Shape& order,
                                                              const Roi& roi) {
  std::vector<std::vector<int64_t>> index(in.size());
  for (size_t a = 0; a < in.size(); ++a) {
    index[a].resize(static_cast<size_t>(in[a]));
    for (int64_t i = 0; i < in[a]; ++i) index[a][static_cast<size_t>(i)] = i;
  }
  for (int64_t a : order) {
    const int64_t out_dim = shape.dims[a];
    const double s = shape.scales[a];
    const bool identity = IsClose(s, 1.0) && out_dim == in[a] &&
                          (at.coord != "tf_crop_and_resize" || (roi[a].first == 0 && IsClose(roi[a].second, 1)));
    if (identity) continue;
    const AxisTaps taps = ComputeTaps(at, in[a], out_dim, s, roi[a].first, roi[a].second);
    std::vector<int64_t>& idx = index[static_cast<size_t>(a)];
    idx.assign(static_cast<size_t>(out_dim), -1);
    for (int64_t y = 0; y < out_dim; ++y) {
      if (taps.extrapolated[static_cast<size_t>(y)]) return std::nullopt;
      for (size_t k = 0; k < taps.width; ++k) {
        const double w = taps.weight[static_cast<size_t>(y) * taps.width + k];
        if (w == 0) continue;
        if (w != 1 || idx[static_cast<size_t>(y)] >= 0) return std::nullopt;
        idx[static_cast<size_t>(y)] = taps.index[static_cast<size_t>(y) * taps.width + k];
      }
      if (idx[static_cast<size_t>(y)] < 0) return std::nullopt;
    }
  }
  return index;
}

// The values of a float input (scales, roi) as doubles; empty when absent.
Result<std::vector<double>> ReadDoubles(const KernelContext& ctx, size_t i) {
  std::vector<double> out;
  const runtime::Tensor* t = ctx.input(i);
  for (uint64_t k = 0; t && k < t->element_count(); ++k) {
    VIGIL_ASSIGN_OR_RETURN(double v, ElementAsDouble(ctx, i, k));
    out.push_back(v);
  }
  return out;
}

struct ResizeInputs {
  std::vector<double> scales, roi;
  Shape sizes;
};

Result<ResizeInputs> ReadResizeInputs(KernelContext& ctx) {
  ResizeInputs r;
  const ir::Node& node = ctx.node();
  if (node.op_type == "Upsample" && ctx.opset() < 9) {
    VIGIL_ASSIGN_OR_RETURN(std::vector<float> f, ops::FloatsAttr(node, "scales"));
    r.scales.assign(f.begin(), f.end());
    return r;
  }
  if (node.op_type == "Upsample" || ctx.opset() < 11) {
    VIGIL_ASSIGN_OR_RETURN(r.scales, ReadDoubles(ctx, 1));
    return r;
  }
  VIGIL_ASSIGN_OR_RETURN(r.roi, ReadDoubles(ctx, 1));
  VIGIL_ASSIGN_OR_RETURN(r.scales, ReadDoubles(ctx, 2));
  if (ctx.has_input(3) && ctx.input(3)->element_count() > 0) {
    VIGIL_ASSIGN_OR_RETURN(r.sizes, ReadInts(ctx, 3, "sizes"));
  }
  return r;
}

// Per-axis ROI start and end for tf_crop_and_resize ([0, 1] elsewhere).
Result<std::vector<std::pair<double, double>>> FullRoi(const KernelContext& ctx, const ResizeAttrs& at,
                                                       const std::vector<double>& roi, const Shape& axes,
                                                       size_t rank) {
  std::vector<std::pair<double, double>> full(rank, {0.0, 1.0});
  if (at.coord != "tf_crop_and_resize") return full;
  if (roi.size() != 2 * axes.size()) {
    return ctx.Fail("roi has {} values, tf_crop_and_resize needs {} (start and end per resized axis)", roi.size(),
                    2 * axes.size());
  }
  for (size_t j = 0; j < axes.size(); ++j) full[axes[j]] = {roi[j], roi[j + axes.size()]};
  return full;
}

Status Resize(KernelContext& ctx) {
  const runtime::Tensor& x = *ctx.input(0);
  VIGIL_ASSIGN_OR_RETURN(ResizeAttrs at, ReadResizeAttrs(ctx));
  VIGIL_ASSIGN_OR_RETURN(ResizeInputs in, ReadResizeInputs(ctx));
  size_t rank = x.rank();
  Shape axes;
  for (int64_t a : at.axes) {
    VIGIL_ASSIGN_OR_RETURN(int64_t n, ops::NormalizeAxis(ctx.node(), a, static_cast<int64_t>(rank), "axes entry"));
    if (std::find(axes.begin(), axes.end(), n) != axes.end()) return ctx.Fail("axes repeats axis {}", n);
    axes.push_back(n);
  }
  // The order in which axes are resized: as listed in `axes`, else all in order.
  Shape order = axes;
  for (size_t i = 0; axes.empty() && i < rank; ++i) order.push_back(static_cast<int64_t>(i));
  if (in.scales.empty() == in.sizes.empty()) {
    return ctx.Fail("needs exactly one of scales and sizes (got {} scales, {} sizes)", in.scales.size(),
                    in.sizes.size());
  }
  auto shape = ops::shape_family::ComputeResizeShape(x.shape(), in.scales.empty() ? nullptr : &in.scales,
                                                     in.sizes.empty() ? nullptr : &in.sizes, axes, at.policy);
  if (!shape.ok()) return ctx.Fail("{}", shape.status().summary());
  VIGIL_ASSIGN_OR_RETURN(auto roi, FullRoi(ctx, at, in.roi, order, rank));
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * out, ctx.Output(0, x.dtype(), shape->dims));
  // Nearest on the dtypes the reference takes: the optimised gather.
  const ir::DataType dt = x.dtype();
  const bool gather_dtype = dt == ir::DataType::kFloat32 || dt == ir::DataType::kFloat16 ||
                            dt == ir::DataType::kBfloat16 || dt == ir::DataType::kUint8 || dt == ir::DataType::kInt8 ||
                            dt == ir::DataType::kInt32 || dt == ir::DataType::kInt64;
  if (ctx.optimised() && at.mode == Interp::kNearest && gather_dtype && out->element_count() > 0) {
    if (std::optional<std::vector<std::vector<int64_t>>> index = NearestIndex(at, x.shape(), *shape, order, roi)) {
      const int bits = ir::DataTypeBits(x.dtype());
      if (bits >= 8 && bits % 8 == 0 && x.byte_size() == x.element_count() * static_cast<uint64_t>(bits / 8)) {
        fast::GatherResize(static_cast<const uint8_t*>(x.raw_data()), x.shape(), static_cast<uint8_t*>(out->raw_data()),
                           out->shape(), *index, static_cast<size_t>(bits / 8));
        return Status::Ok();
      }
    }
  }
  // float32 resized along two adjacent axes only (linear, cubic, ...): the
  // same taps and sums, row by row.
  if (ctx.optimised() && dt == ir::DataType::kFloat32 && out->element_count() > 0 &&
      SeparableFloatResize(at, x, *shape, order, roi, *out)) {
    return Status::Ok();
  }
  return VisitNumeric(ctx, 0, x.dtype(), false, [&](auto traits) {
    using Tr = decltype(traits);
    using S = typename Tr::Storage;
    std::vector<double> data(x.element_count());
    for (size_t i = 0; i < data.size(); ++i) data[i] = Tr::ToDouble(x.data<S>()[i]);
    Shape cur = x.shape();
    for (int64_t a : order) {
      int64_t out_dim = shape->dims[a];
      double s = shape->scales[a];
      if (AxisLeftAlone(at, s, out_dim, cur[a], roi[a])) continue;
      AxisTaps taps = ComputeTaps(at, cur[a], out_dim, s, roi[a].first, roi[a].second);
      data = ResizeAxis(data, cur, static_cast<size_t>(a), out_dim, taps, at.extrapolation);
    }
    S* dst = out->data<S>();
    for (size_t i = 0; i < data.size(); ++i) dst[i] = Tr::FromDouble(data[i]);
    return Status::Ok();
  });
}

const KernelDef kResizeKernels[] = {
    {"", "Resize", 10, kLatest, WithInputs<Resize, 1>},
    {"", "Upsample", 7, 9, WithInputs<Resize, 1>},
};

}  // namespace

std::span<const KernelDef> ResizeKernels() { return kResizeKernels; }

}  // namespace vigil::cpu::shape_family
