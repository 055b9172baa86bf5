// Conv and ConvTranspose as im2col/col2im plus a matrix product (gemm.h), per
// image and channel group. Conv is the hot op of CNNs, so unlike most of the
// reference backend it is written for speed as well: the patch copy works a
// contiguous row at a time and 1x1 stride-1 convolutions skip it entirely.
// float16/bfloat16 are computed in float, float64 in double.
#include <algorithm>
#include <cstring>

#include "backends/cpu/conv_pool_kernels.h"
#include "backends/cpu/element_codec.h"
#include "backends/cpu/fast/fast_kernels.h"
#include "backends/cpu/gemm.h"
#include "ops/attributes.h"

namespace vigil::cpu {

int64_t SpatialGeometry::ImageSize() const {
  int64_t n = 1;
  for (int64_t d : image) n *= d;
  return n;
}
int64_t SpatialGeometry::ColumnSize() const {
  int64_t n = 1;
  for (int64_t d : columns) n *= d;
  return n;
}
int64_t SpatialGeometry::KernelSize() const {
  int64_t n = 1;
  for (int64_t d : kernel) n *= d;
  return n;
}

Result<SpatialGeometry> ForwardGeometry(const ir::Node& node, const ops::WindowAttrs& w,
                                        const std::vector<int64_t>& input_spatial) {
  SpatialGeometry g{input_spatial, {}, w.kernel, w.strides, w.dilations, {}, {}};
  for (size_t i = 0; i < input_spatial.size(); ++i) {
    VIGIL_ASSIGN_OR_RETURN(ops::WindowExtent e, ops::ForwardExtent(node, w, i, input_spatial[i]));
    g.columns.push_back(e.output);
    g.pad_begin.push_back(e.pad_begin);
    g.pad_end.push_back(e.pad_end);
  }
  return g;
}

namespace {

// ceil(a / b) for b > 0 and any sign of a.
int64_t CeilDiv(int64_t a, int64_t b) { return a >= 0 ? (a + b - 1) / b : -((-a) / b); }

// Walks every (channel, kernel tap, outer column position) row of the patch
// matrix and calls `row(channel, tap_index, image_offset, base, col_offset,
// lo, hi)`: along the last spatial dim, column position o reads image
// position o * stride + base (relative to image_offset), which lies inside
// the image exactly for o in [lo, hi). Rows whose outer dims fall in the
// padding get lo == hi. Shared by Im2Col and Col2Im so both index alike.
template <typename RowFn>
void ForEachPatchRow(const SpatialGeometry& g, int64_t channels, RowFn&& row) {
  const size_t n = g.rank();
  const int64_t kernel_size = g.KernelSize();
  const int64_t last_cols = g.columns[n - 1];
  if (last_cols == 0 || g.ColumnSize() == 0) return;
  const int64_t outer_cols = g.ColumnSize() / last_cols;
  const int64_t last_stride = g.strides[n - 1];
  std::vector<int64_t> tap(n), col(n);
  for (int64_t c = 0; c < channels; ++c) {
    for (int64_t k = 0; k < kernel_size; ++k) {
      for (int64_t rem = k, d = static_cast<int64_t>(n) - 1; d >= 0; --d) {
        tap[d] = rem % g.kernel[d];
        rem /= g.kernel[d];
      }
      const int64_t base = tap[n - 1] * g.dilations[n - 1] - g.pad_begin[n - 1];
      const int64_t lo = std::clamp<int64_t>(CeilDiv(-base, last_stride), 0, last_cols);
      const int64_t hi = std::clamp<int64_t>(CeilDiv(g.image[n - 1] - base, last_stride), lo, last_cols);
      for (int64_t outer = 0; outer < outer_cols; ++outer) {
        for (int64_t rem = outer, d = static_cast<int64_t>(n) - 2; d >= 0; --d) {
          col[d] = rem % g.columns[d];
          rem /= g.columns[d];
        }
        int64_t offset = 0;
        bool inside = true;
        for (size_t d = 0; d + 1 < n && inside; ++d) {
          int64_t pos = col[d] * g.strides[d] - g.pad_begin[d] + tap[d] * g.dilations[d];
          inside = pos >= 0 && pos < g.image[d];
          offset = offset * g.image[d] + pos;
        }
        if (!inside) {
          row(c, k, int64_t{0}, base, outer * last_cols, int64_t{0}, int64_t{0});
          continue;
        }
        row(c, k, offset * g.image[n - 1], base, outer * last_cols, lo, hi);
      }
    }
  }
}

// Copies one channel group's image patches into `col`, a (channels *
// kernel_size) x column_size row-major matrix: row (c, tap) holds, for every
// output position, the input element under that kernel tap (0 in padding).
template <typename T>
void Im2Col(const SpatialGeometry& g, int64_t channels, const T* image, T* col) {
  const int64_t image_size = g.ImageSize(), col_size = g.ColumnSize(), kernel_size = g.KernelSize();
  const int64_t last_cols = g.columns[g.rank() - 1], stride = g.strides[g.rank() - 1];
  ForEachPatchRow(g, channels, [&](int64_t c, int64_t k, int64_t offset, int64_t base, int64_t col_offset,
                                   int64_t lo, int64_t hi) {
    T* dst = col + (c * kernel_size + k) * col_size + col_offset;
    const T* src = image + c * image_size + offset;  // src[base + o * stride] is in range for o in [lo, hi)
    std::fill(dst, dst + lo, T(0));
    if (stride == 1) {
      if (hi > lo) std::memcpy(dst + lo, src + base + lo, (hi - lo) * sizeof(T));
    } else {
      for (int64_t o = lo; o < hi; ++o) dst[o] = src[base + o * stride];
    }
    std::fill(dst + hi, dst + last_cols, T(0));
  });
}

// The adjoint of Im2Col: adds every entry of `col` into the image position it
// was taken from (ConvTranspose). Entries that map into padding are dropped.
template <typename T>
void Col2Im(const SpatialGeometry& g, int64_t channels, const T* col, T* image) {
  const int64_t image_size = g.ImageSize(), col_size = g.ColumnSize(), kernel_size = g.KernelSize();
  const int64_t stride = g.strides[g.rank() - 1];
  ForEachPatchRow(g, channels, [&](int64_t c, int64_t k, int64_t offset, int64_t base, int64_t col_offset,
                                   int64_t lo, int64_t hi) {
    const T* src = col + (c * kernel_size + k) * col_size + col_offset;
    T* dst = image + c * image_size + offset;
    for (int64_t o = lo; o < hi; ++o) dst[base + o * stride] += src[o];
  });
}

// Tensor sizes of one Conv/ConvTranspose run, checked against each other.
struct ConvDims {
  int64_t batch = 0;
  int64_t in_channels = 0;   // X's C
  int64_t out_channels = 0;  // Y's channels
  int64_t group = 1;
  SpatialGeometry g;         // image = Conv's input (ConvTranspose's output)
};

// X and W of one dtype and X's rank >= 3, W of X's rank; B (if given) of
// `out_channels` elements and X's dtype.
Status CheckOperands(KernelContext& ctx) {
  VIGIL_RETURN_IF_ERROR(RequireInputs(ctx, 2));
  const runtime::Tensor& x = *ctx.input(0);
  const runtime::Tensor& w = *ctx.input(1);
  if (x.rank() < 3) {
    return ctx.Fail("input 0 (X) is {}, {} needs rank >= 3 (N x C x D1 x ...)", x.Describe(), ctx.node().op_type);
  }
  if (w.rank() != x.rank()) {
    return ctx.Fail("input 1 (W) is {}, {} needs rank {} like input 0 (X) {}", w.Describe(), ctx.node().op_type,
                    x.rank(), x.Describe());
  }
  if (w.dtype() != x.dtype()) {
    return ctx.Fail("input 1 (W) has dtype {}, input 0 (X) has {}; they must match", ir::DataTypeName(w.dtype()),
                    ir::DataTypeName(x.dtype()));
  }
  return Status::Ok();
}

Status CheckBias(KernelContext& ctx, int64_t out_channels) {
  const runtime::Tensor* b = ctx.input(2);
  if (!b) return Status::Ok();
  if (b->dtype() != ctx.input(0)->dtype()) {
    return ctx.Fail("input 2 (B) has dtype {}, input 0 (X) has {}; they must match", ir::DataTypeName(b->dtype()),
                    ir::DataTypeName(ctx.input(0)->dtype()));
  }
  if (b->rank() != 1 || b->dim(0) != out_channels) {
    return ctx.Fail("input 2 (B) is {}, expected one value per output channel [{}]", b->Describe(), out_channels);
  }
  return Status::Ok();
}

std::vector<int64_t> SpatialOf(const runtime::Tensor& t) { return {t.shape().begin() + 2, t.shape().end()}; }

Result<ConvDims> ConvDimsOf(KernelContext& ctx) {
  VIGIL_RETURN_IF_ERROR(CheckOperands(ctx));
  const runtime::Tensor& x = *ctx.input(0);
  const runtime::Tensor& w = *ctx.input(1);
  ConvDims d;
  VIGIL_ASSIGN_OR_RETURN(d.group, ops::IntAttr(ctx.node(), "group", 1));
  d.batch = x.dim(0);
  d.in_channels = x.dim(1);
  d.out_channels = w.dim(0);
  if (d.group < 1) return AttributeError(ctx, "group is {}, must be at least 1", d.group);
  if (d.in_channels != w.dim(1) * d.group || d.out_channels % d.group != 0) {
    return ctx.Fail("input 0 (X) {} and input 1 (W) {} do not fit group {}: X needs W.dims[1] * group channels and "
                    "W.dims[0] must be divisible by group",
                    x.Describe(), w.Describe(), d.group);
  }
  VIGIL_RETURN_IF_ERROR(CheckBias(ctx, d.out_channels));
  VIGIL_ASSIGN_OR_RETURN(ops::WindowAttrs wa,
                         ops::ReadWindowAttrs(ctx.node(), x.rank() - 2, SpatialOf(w), ops::WindowOptions{}));
  VIGIL_ASSIGN_OR_RETURN(d.g, ForwardGeometry(ctx.node(), wa, SpatialOf(x)));
  return d;
}

template <typename T>
void AddBias(const T* bias, int64_t channels, int64_t size, T* y) {
  if (!bias) return;
  for (int64_t c = 0; c < channels; ++c) {
    for (int64_t i = 0; i < size; ++i) y[c * size + i] += bias[c];
  }
}

// Whether geometry `g` is pointwise (a 1x1 window of stride 1, no padding:
// X serves as its own patch matrix); otherwise `col` is sized for the
// [depth, cols] patch matrix, or an error says it cannot be.
template <typename T>
Result<bool> PatchBuffer(KernelContext& ctx, const SpatialGeometry& g, int64_t depth, int64_t cols,
                         std::vector<T>& col) {
  bool pointwise = g.KernelSize() == 1 && g.image == g.columns;
  for (size_t i = 0; i < g.rank(); ++i) pointwise = pointwise && g.strides[i] == 1 && g.pad_begin[i] == 0;
  if (pointwise) return true;
  int64_t col_size = 0;
  if (__builtin_mul_overflow(depth, cols, &col_size)) {
    return OutOfMemoryError("{}: patch matrix too large", ops::NodeLabel(ctx.node()));
  }
  VIGIL_RETURN_IF_ERROR(ResizeScratch(ctx, col, static_cast<size_t>(col_size)));
  return false;
}

// Y[n, group g] = W_g (Mg x Cg*K) * im2col(X[n, group g]) (Cg*K x cols).
template <typename T>
Status ConvCompute(KernelContext& ctx, const ConvDims& d, const T* x, const T* w, const T* bias, T* y) {
  const SpatialGeometry& g = d.g;
  const int64_t cg = d.in_channels / d.group, mg = d.out_channels / d.group;
  const int64_t depth = cg * g.KernelSize(), cols = g.ColumnSize(), image = g.ImageSize();
  std::vector<T> col;
  VIGIL_ASSIGN_OR_RETURN(const bool pointwise, PatchBuffer(ctx, g, depth, cols, col));
  for (int64_t n = 0; n < d.batch; ++n) {
    for (int64_t gi = 0; gi < d.group; ++gi) {
      const T* xg = x + (n * d.in_channels + gi * cg) * image;
      const T* patches = xg;  // a 1x1 stride-1 unpadded conv reads X as is
      if (!pointwise) {
        Im2Col(g, cg, xg, col.data());
        patches = col.data();
      }
      T* yg = y + (n * d.out_channels + gi * mg) * cols;
      GemmRowMajor(GemmShape{mg, cols, depth}, w + gi * mg * depth, patches, yg, T(1), false);
      AddBias(bias ? bias + gi * mg : nullptr, mg, cols, yg);
    }
  }
  return Status::Ok();
}

// Y[n, group g] = col2im(W_g^T (Mg*K x Cg) * X[n, group g] (Cg x cols)).
template <typename T>
Status ConvTransposeCompute(KernelContext& ctx, const ConvDims& d, const T* x, const T* w, const T* bias, T* y) {
  const SpatialGeometry& g = d.g;
  const int64_t cg = d.in_channels / d.group, mg = d.out_channels / d.group;
  const int64_t depth = mg * g.KernelSize(), cols = g.ColumnSize(), image = g.ImageSize();
  std::vector<T> col;
  VIGIL_ASSIGN_OR_RETURN(const bool pointwise, PatchBuffer(ctx, g, depth, cols, col));
  for (int64_t n = 0; n < d.batch; ++n) {
    for (int64_t gi = 0; gi < d.group; ++gi) {
      const T* wg = w + gi * cg * depth;  // [Cg, Mg*K]: multiplied transposed
      const T* xg = x + (n * d.in_channels + gi * cg) * cols;
      T* yg = y + (n * d.out_channels + gi * mg) * image;
      const GemmShape shape{depth, cols, cg, /*trans_a=*/true, /*trans_b=*/false};
      if (pointwise) {
        GemmRowMajor(shape, wg, xg, yg, T(1), false);
      } else {
        GemmRowMajor(shape, wg, xg, col.data(), T(1), false);
        std::fill(yg, yg + mg * image, T(0));
        Col2Im(g, mg, col.data(), yg);
      }
      AddBias(bias ? bias + gi * mg : nullptr, mg, image, yg);
    }
  }
  return Status::Ok();
}

// Runs `compute` on X, W, B and Y in the dtype's compute type, converting
// float16/bfloat16 in and out.
template <ir::DataType D, typename ComputeFn>
Status RunInComputeType(KernelContext& ctx, const ConvDims& d, runtime::Tensor& y, ComputeFn&& compute) {
  using C = ElementCodec<D>;
  using T = typename C::Compute;
  std::vector<T> xs, ws, bs, ys;
  VIGIL_ASSIGN_OR_RETURN(const T* x, ComputeView<D>(ctx, *ctx.input(0), xs));
  VIGIL_ASSIGN_OR_RETURN(const T* w, ComputeView<D>(ctx, *ctx.input(1), ws));
  const T* b = nullptr;
  if (ctx.has_input(2)) {
    VIGIL_ASSIGN_OR_RETURN(b, ComputeView<D>(ctx, *ctx.input(2), bs));
  }
  if constexpr (std::is_same_v<typename C::Storage, T>) {
    return compute(ctx, d, x, w, b, y.data<T>());
  } else {
    VIGIL_RETURN_IF_ERROR(ResizeScratch(ctx, ys, y.element_count()));
    VIGIL_RETURN_IF_ERROR(compute(ctx, d, x, w, b, ys.data()));
    auto* out = y.data<typename C::Storage>();
    for (size_t i = 0; i < ys.size(); ++i) out[i] = C::Store(ys[i]);
    return Status::Ok();
  }
}

std::vector<int64_t> OutputShape(const ConvDims& d, const std::vector<int64_t>& spatial) {
  std::vector<int64_t> shape{d.batch, d.out_channels};
  shape.insert(shape.end(), spatial.begin(), spatial.end());
  return shape;
}

}  // namespace

Status ConvKernel(KernelContext& ctx) {
  VIGIL_ASSIGN_OR_RETURN(ConvDims d, ConvDimsOf(ctx));
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * y, ctx.Output(0, ctx.input(0)->dtype(), OutputShape(d, d.g.columns)));
  return DispatchFloat(ctx, 0, [&]<ir::DataType D>() -> Status {
    if (y->element_count() == 0) return Status::Ok();
    if constexpr (D == ir::DataType::kFloat32) {
      if (ctx.optimised()) {
        fast::ConvProblem p{d.batch, d.in_channels, d.out_channels, d.group, &d.g, ctx.input(1),
                            ctx.input(0)->data<float>(), ctx.input(1)->data<float>(),
                            ctx.has_input(2) ? ctx.input(2)->data<float>() : nullptr, y->data<float>()};
        VIGIL_ASSIGN_OR_RETURN(bool done, fast::ConvDnnl(p, ctx.cache()));
        if (done) return Status::Ok();
      }
    }
    return RunInComputeType<D>(ctx, d, *y, [](auto&&... args) { return ConvCompute(args...); });
  });
}

namespace {

// ConvTranspose's W is C x M/group x k1 x ...; its window runs from the
// output ("image") back to the input ("columns").
Result<ConvDims> ConvTransposeDimsOf(KernelContext& ctx) {
  VIGIL_RETURN_IF_ERROR(CheckOperands(ctx));
  const runtime::Tensor& x = *ctx.input(0);
  const runtime::Tensor& w = *ctx.input(1);
  ConvDims d;
  VIGIL_ASSIGN_OR_RETURN(d.group, ops::IntAttr(ctx.node(), "group", 1));
  if (d.group < 1) return AttributeError(ctx, "group is {}, must be at least 1", d.group);
  d.batch = x.dim(0);
  d.in_channels = x.dim(1);
  if (d.in_channels != w.dim(0) || d.in_channels % d.group != 0) {
    return ctx.Fail("input 0 (X) {} and input 1 (W) {} do not fit group {}: W.dims[0] must equal X's channels, "
                    "divisible by group",
                    x.Describe(), w.Describe(), d.group);
  }
  if (__builtin_mul_overflow(w.dim(1), d.group, &d.out_channels)) return ctx.Fail("too many output channels");
  VIGIL_RETURN_IF_ERROR(CheckBias(ctx, d.out_channels));
  ops::WindowOptions options;
  options.transpose = true;
  VIGIL_ASSIGN_OR_RETURN(ops::WindowAttrs wa, ops::ReadWindowAttrs(ctx.node(), x.rank() - 2, SpatialOf(w), options));
  d.g = SpatialGeometry{{}, SpatialOf(x), wa.kernel, wa.strides, wa.dilations, {}, {}};
  for (size_t i = 0; i < x.rank() - 2; ++i) {
    VIGIL_ASSIGN_OR_RETURN(ops::WindowExtent e, ops::TransposeExtent(ctx.node(), wa, i, x.dim(i + 2)));
    d.g.image.push_back(e.output);
    d.g.pad_begin.push_back(e.pad_begin);
    d.g.pad_end.push_back(e.pad_end);
  }
  return d;
}

}  // namespace

Status ConvTransposeKernel(KernelContext& ctx) {
  VIGIL_ASSIGN_OR_RETURN(ConvDims d, ConvTransposeDimsOf(ctx));
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * y, ctx.Output(0, ctx.input(0)->dtype(), OutputShape(d, d.g.image)));
  return DispatchFloat(ctx, 0, [&]<ir::DataType D>() -> Status {
    if (y->element_count() == 0) return Status::Ok();
    return RunInComputeType<D>(ctx, d, *y, [](auto&&... args) { return ConvTransposeCompute(args...); });
  });
}

}  // namespace vigil::cpu
