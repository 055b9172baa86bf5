// MaxPool, AveragePool, LpPool, the Global pools and MaxUnpool. Windows are
// cartesian products of per-dim tap lists, so each dim's valid input
// positions are worked out once per output index and the pools only combine
// them. Averages and Lp norms accumulate in double.
#include <cmath>
#include <cstring>
#include <limits>

#include <fmt/ranges.h>

#include "backends/cpu/conv_pool_kernels.h"
#include "backends/cpu/element_codec.h"
#include "backends/cpu/fast/fast_kernels.h"
#include "ops/attributes.h"

namespace vigil::cpu {
namespace {

// One dim's window at one output index: the input positions it reads that
// lie inside the image, and how many of its taps lie inside the padded
// extent [-pad_begin, image + pad_end) (what count_include_pad divides by).
struct AxisWindow {
  std::vector<int64_t> positions;
  int64_t padded_taps = 0;
};
using WindowTable = std::vector<std::vector<AxisWindow>>;  // [dim][output index]

WindowTable BuildWindowTable(const SpatialGeometry& g) {
  WindowTable table(g.rank());
  for (size_t d = 0; d < g.rank(); ++d) {
    table[d].resize(g.columns[d]);
    for (int64_t o = 0; o < g.columns[d]; ++o) {
      AxisWindow& w = table[d][o];
      for (int64_t k = 0; k < g.kernel[d]; ++k) {
        int64_t pos = o * g.strides[d] - g.pad_begin[d] + k * g.dilations[d];
        if (pos >= 0 && pos < g.image[d]) w.positions.push_back(pos);
        if (pos >= -g.pad_begin[d] && pos < g.image[d] + g.pad_end[d]) ++w.padded_taps;
      }
    }
  }
  return table;
}

// Calls visit(out_index, windows) for every output position in row-major
// order, with windows[d] the AxisWindow of dim d.
template <typename Visit>
void ForEachOutput(const SpatialGeometry& g, const WindowTable& table, Visit&& visit) {
  const size_t n = g.rank();
  const int64_t count = g.ColumnSize();
  std::vector<int64_t> o(n, 0);
  std::vector<const AxisWindow*> windows(n);
  for (int64_t i = 0; i < count; ++i) {
    for (size_t d = 0; d < n; ++d) windows[d] = &table[d][o[d]];
    visit(i, windows);
    for (size_t d = n; d-- > 0;) {
      if (++o[d] < g.columns[d]) break;
      o[d] = 0;
    }
  }
}

// Calls tap(row_major_offset, column_major_offset) for every input element
// of one window (inside the image), in row-major window order.
template <typename Tap>
void ForEachTap(const SpatialGeometry& g, const std::vector<const AxisWindow*>& windows, std::vector<size_t>& k,
                Tap&& tap) {
  const size_t n = g.rank();
  for (size_t d = 0; d < n; ++d) {
    if (windows[d]->positions.empty()) return;
  }
  k.assign(n, 0);
  while (true) {
    int64_t row = 0, col = 0, scale = 1;
    for (size_t d = 0; d < n; ++d) {
      int64_t pos = windows[d]->positions[k[d]];
      row = row * g.image[d] + pos;
      col += pos * scale;
      scale *= g.image[d];
    }
    tap(row, col);
    size_t d = n;
    while (d-- > 0) {
      if (++k[d] < windows[d]->positions.size()) break;
      k[d] = 0;
    }
    if (d == static_cast<size_t>(-1)) return;
  }
}

// X of rank >= 3 with the node's pooling window resolved against it.
Result<SpatialGeometry> PoolGeometry(KernelContext& ctx) {
  VIGIL_RETURN_IF_ERROR(RequireInputs(ctx, 1));
  const runtime::Tensor& x = *ctx.input(0);
  if (x.rank() < 3) {
    return ctx.Fail("input 0 (X) is {}, {} needs rank >= 3 (N x C x D1 x ...)", x.Describe(), ctx.node().op_type);
  }
  ops::WindowOptions options;
  options.pooling = true;
  VIGIL_ASSIGN_OR_RETURN(ops::WindowAttrs wa, ops::ReadWindowAttrs(ctx.node(), x.rank() - 2, std::nullopt, options));
  return ForwardGeometry(ctx.node(), wa, {x.shape().begin() + 2, x.shape().end()});
}

std::vector<int64_t> PooledShape(const runtime::Tensor& x, const std::vector<int64_t>& spatial) {
  std::vector<int64_t> shape{x.dim(0), x.dim(1)};
  shape.insert(shape.end(), spatial.begin(), spatial.end());
  return shape;
}

template <ir::DataType D>
void MaxPoolPlanes(const SpatialGeometry& g, const runtime::Tensor& x, bool column_major, runtime::Tensor& y,
                   int64_t* indices) {
  using C = ElementCodec<D>;
  using T = typename C::Compute;
  const WindowTable table = BuildWindowTable(g);
  const int64_t planes = x.dim(0) * x.dim(1), image = g.ImageSize(), cols = g.ColumnSize();
  const auto* xs = x.data<typename C::Storage>();
  auto* ys = y.data<typename C::Storage>();
  std::vector<size_t> k;
  for (int64_t p = 0; p < planes; ++p) {
    const auto* xp = xs + p * image;
    ForEachOutput(g, table, [&](int64_t i, const std::vector<const AxisWindow*>& windows) {
      T best = -std::numeric_limits<T>::infinity();
      int64_t best_index = -1;
      ForEachTap(g, windows, k, [&](int64_t row, int64_t col) {
        T v = C::Load(xp[row]);
        // NaN wins (as in numpy's max); the first of equal values wins.
        if (best_index < 0 || v > best || (std::isnan(v) && !std::isnan(best))) {
          best = v;
          best_index = column_major ? col : row;
        }
      });
      // A window wholly in the padding (possible only with dilations) has no
      // value: the dtype's lowest, index -1.
      if (best_index >= 0) {
        ys[p * cols + i] = C::Store(best);
      } else {
        ys[p * cols + i] = std::numeric_limits<typename C::Storage>::is_integer
                               ? std::numeric_limits<typename C::Storage>::lowest()
                               : C::Store(-std::numeric_limits<T>::infinity());
      }
      if (indices) indices[p * cols + i] = best_index >= 0 ? p * image + best_index : -1;
    });
  }
}

// AveragePool and LpPool: `accumulate` maps an element to what is summed,
// `finish(sum, window)` turns the sum into the output.
template <ir::DataType D, typename Accumulate, typename Finish>
void SumPoolPlanes(const SpatialGeometry& g, const runtime::Tensor& x, runtime::Tensor& y, Accumulate&& accumulate,
                   Finish&& finish) {
  using C = ElementCodec<D>;
  const WindowTable table = BuildWindowTable(g);
  const int64_t planes = x.dim(0) * x.dim(1), image = g.ImageSize(), cols = g.ColumnSize();
  const auto* xs = x.data<typename C::Storage>();
  auto* ys = y.data<typename C::Storage>();
  std::vector<size_t> k;
  for (int64_t p = 0; p < planes; ++p) {
    const auto* xp = xs + p * image;
    ForEachOutput(g, table, [&](int64_t i, const std::vector<const AxisWindow*>& windows) {
      double sum = 0;
      ForEachTap(g, windows, k, [&](int64_t row, int64_t) { sum += accumulate(static_cast<double>(C::Load(xp[row]))); });
      ys[p * cols + i] = C::Store(static_cast<typename C::Compute>(finish(sum, windows)));
    });
  }
}

// Taps of a window inside the image, or inside the padded extent.
int64_t WindowCount(const std::vector<const AxisWindow*>& windows, bool include_pad) {
  int64_t n = 1;
  for (const AxisWindow* w : windows) n *= include_pad ? w->padded_taps : static_cast<int64_t>(w->positions.size());
  return n;
}

// LpPool's p: a float attribute in opset 1, an int from opset 2.
Result<double> ReadP(KernelContext& ctx) {
  const ir::Attribute* a = ctx.node().FindAttribute("p");
  double p = 2;
  if (a && a->type == ir::AttributeType::kFloat) {
    p = a->f;
  } else {
    VIGIL_ASSIGN_OR_RETURN(int64_t pi, ops::IntAttr(ctx.node(), "p", 2));
    p = static_cast<double>(pi);
  }
  if (!(p > 0)) return AttributeError(ctx, "p is {}, must be positive", p);
  return p;
}

}  // namespace

Status MaxPoolKernel(KernelContext& ctx) {
  VIGIL_ASSIGN_OR_RETURN(SpatialGeometry g, PoolGeometry(ctx));
  VIGIL_ASSIGN_OR_RETURN(int64_t storage_order, ops::IntAttr(ctx.node(), "storage_order", 0));
  if (storage_order != 0 && storage_order != 1) {
    return AttributeError(ctx, "storage_order is {}, expected 0 (row major) or 1 (column major)", storage_order);
  }
  const runtime::Tensor& x = *ctx.input(0);
  return DispatchFloatOrByte(ctx, 0, [&]<ir::DataType D>() -> Status {
    VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * y, ctx.Output(0, x.dtype(), PooledShape(x, g.columns)));
    int64_t* indices = nullptr;
    if (ctx.num_outputs() > 1 && ctx.output_wanted(1)) {
      VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * ind, ctx.Output(1, ir::DataType::kInt64, PooledShape(x, g.columns)));
      indices = ind->data<int64_t>();
    }
    if constexpr (D == ir::DataType::kFloat32) {
      if (ctx.optimised() && !indices && fast::MaxPool2dFloat(g, x.dim(0) * x.dim(1), x.data<float>(), y->data<float>())) {
        return Status::Ok();
      }
    }
    MaxPoolPlanes<D>(g, x, storage_order == 1, *y, indices);
    return Status::Ok();
  });
}

Status AveragePoolKernel(KernelContext& ctx) {
  VIGIL_ASSIGN_OR_RETURN(SpatialGeometry g, PoolGeometry(ctx));
  VIGIL_ASSIGN_OR_RETURN(int64_t include_pad, ops::IntAttr(ctx.node(), "count_include_pad", 0));
  const runtime::Tensor& x = *ctx.input(0);
  return DispatchFloat(ctx, 0, [&]<ir::DataType D>() -> Status {
    VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * y, ctx.Output(0, x.dtype(), PooledShape(x, g.columns)));
    // An empty window (only with dilations) averages to NaN (0 / 0).
    SumPoolPlanes<D>(
        g, x, *y, [](double v) { return v; },
        [&](double sum, const auto& windows) { return sum / static_cast<double>(WindowCount(windows, include_pad)); });
    return Status::Ok();
  });
}

Status LpPoolKernel(KernelContext& ctx) {
  VIGIL_ASSIGN_OR_RETURN(SpatialGeometry g, PoolGeometry(ctx));
  VIGIL_ASSIGN_OR_RETURN(double p, ReadP(ctx));
  const runtime::Tensor& x = *ctx.input(0);
  return DispatchFloat(ctx, 0, [&]<ir::DataType D>() -> Status {
    VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * y, ctx.Output(0, x.dtype(), PooledShape(x, g.columns)));
    // Padding contributes |0|^p = 0, so only taps inside the image count.
    SumPoolPlanes<D>(
        g, x, *y, [p](double v) { return std::pow(std::abs(v), p); },
        [p](double sum, const auto&) { return std::pow(sum, 1.0 / p); });
    return Status::Ok();
  });
}

namespace {

// Global pools: one value per (n, c) plane from all of its elements.
template <typename Reduce>
Status GlobalPool(KernelContext& ctx, Reduce&& reduce) {
  VIGIL_RETURN_IF_ERROR(RequireInputs(ctx, 1));
  const runtime::Tensor& x = *ctx.input(0);
  if (x.rank() < 2) {
    return ctx.Fail("input 0 (X) is {}, {} needs rank >= 2 (N x C x D1 x ...)", x.Describe(), ctx.node().op_type);
  }
  std::vector<int64_t> shape(x.rank(), 1);
  shape[0] = x.dim(0);
  shape[1] = x.dim(1);
  return DispatchFloat(ctx, 0, [&]<ir::DataType D>() -> Status {
    using C = ElementCodec<D>;
    VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * y, ctx.Output(0, x.dtype(), shape));
    const int64_t planes = x.dim(0) * x.dim(1);
    const int64_t size = planes == 0 ? 0 : static_cast<int64_t>(x.element_count()) / planes;
    const auto* xs = x.data<typename C::Storage>();
    auto* ys = y->data<typename C::Storage>();
    std::vector<double> plane;
    VIGIL_RETURN_IF_ERROR(ResizeScratch(ctx, plane, static_cast<size_t>(size)));
    for (int64_t p = 0; p < planes; ++p) {
      for (int64_t i = 0; i < size; ++i) plane[i] = C::Load(xs[p * size + i]);
      ys[p] = C::Store(static_cast<typename C::Compute>(reduce(plane)));
    }
    return Status::Ok();
  });
}

}  // namespace

Status GlobalAveragePoolKernel(KernelContext& ctx) {
  return GlobalPool(ctx, [](const std::vector<double>& v) {
    double sum = 0;
    for (double e : v) sum += e;
    return sum / static_cast<double>(v.size());  // NaN for an empty plane
  });
}

Status GlobalMaxPoolKernel(KernelContext& ctx) {
  return GlobalPool(ctx, [](const std::vector<double>& v) {
    double best = -std::numeric_limits<double>::infinity();
    for (double e : v) {
      if (e > best || std::isnan(e)) best = e;
      if (std::isnan(best)) break;
    }
    return best;
  });
}

Status GlobalLpPoolKernel(KernelContext& ctx) {
  VIGIL_ASSIGN_OR_RETURN(double p, ReadP(ctx));
  return GlobalPool(ctx, [p](const std::vector<double>& v) {
    double sum = 0;
    for (double e : v) sum += std::pow(std::abs(e), p);
    return std::pow(sum, 1.0 / p);
  });
}

namespace {

// MaxUnpool's output_shape input: one int64 size per dim of X.
Result<std::vector<int64_t>> ReadOutputShape(KernelContext& ctx, size_t rank) {
  const runtime::Tensor& t = *ctx.input(2);
  if (t.dtype() != ir::DataType::kInt64) return ctx.UnsupportedDtype(2);
  if (t.rank() != 1 || t.dim(0) != static_cast<int64_t>(rank)) {
    return ctx.Fail("input 2 (output_shape) is {}, expected [{}] (one size per dim of X)", t.Describe(), rank);
  }
  std::vector<int64_t> shape(rank);
  if (rank) std::memcpy(shape.data(), t.raw_data(), rank * sizeof(int64_t));
  return shape;
}

}  // namespace

// MaxUnpool scatters X into zeros at the flat positions I gives (MaxPool's
// Indices output, row-major over the whole unpooled tensor). With
// output_shape larger than the unpooled shape, the unpooled tensor sits at
// its start (as in the ONNX reference) and the rest is zero.
Status MaxUnpoolKernel(KernelContext& ctx) {
  VIGIL_RETURN_IF_ERROR(RequireInputs(ctx, 2));
  const runtime::Tensor& x = *ctx.input(0);
  const runtime::Tensor& indices = *ctx.input(1);
  if (x.rank() < 3) return ctx.Fail("input 0 (X) is {}, MaxUnpool needs rank >= 3 (N x C x D1 x ...)", x.Describe());
  if (indices.shape() != x.shape()) {
    return ctx.Fail("input 1 (I) is {}; it must have the shape of input 0 (X) {}", indices.Describe(), x.Describe());
  }
  if (indices.dtype() != ir::DataType::kInt64) return ctx.UnsupportedDtype(1);
  const size_t spatial = x.rank() - 2;
  ops::WindowOptions options;
  options.pooling = true;
  VIGIL_ASSIGN_OR_RETURN(ops::WindowAttrs wa, ops::ReadWindowAttrs(ctx.node(), spatial, std::nullopt, options));
  std::vector<int64_t> unpooled{x.dim(0), x.dim(1)};
  for (size_t i = 0; i < spatial; ++i) {
    VIGIL_ASSIGN_OR_RETURN(int64_t size, ops::UnpoolSize(ctx.node(), wa, i, x.dim(i + 2)));
    unpooled.push_back(size);
  }
  std::vector<int64_t> shape = unpooled;
  if (ctx.has_input(2)) {
    VIGIL_ASSIGN_OR_RETURN(shape, ReadOutputShape(ctx, x.rank()));
    for (size_t d = 0; d < shape.size(); ++d) {
      if (shape[d] < unpooled[d]) {
        return ctx.Fail("input 2 (output_shape) [{}] is smaller than the unpooled shape [{}] along dim {}",
                        fmt::join(shape, ","), fmt::join(unpooled, ","), d);
      }
    }
  }
  // Both shapes are at most 2^40 per spatial dim (UnpoolSize); their element
  // counts must fit too.
  uint64_t total = 1, out_total = 1;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (__builtin_mul_overflow(total, static_cast<uint64_t>(unpooled[d]), &total) ||
        __builtin_mul_overflow(out_total, static_cast<uint64_t>(shape[d]), &out_total) ||
        out_total > (uint64_t{1} << 62)) {
      return ctx.Fail("the output shape [{}] has too many elements", fmt::join(shape, ","));
    }
  }
  std::vector<int64_t> flat(indices.element_count());
  if (!flat.empty()) std::memcpy(flat.data(), indices.raw_data(), flat.size() * sizeof(int64_t));
  for (size_t i = 0; i < flat.size(); ++i) {
    if (flat[i] < 0 || static_cast<uint64_t>(flat[i]) >= total) {
      return ctx.Fail("input 1 (I) has {} at position {}; indices into the unpooled shape [{}] are 0 to {}", flat[i],
                      i, fmt::join(unpooled, ","), static_cast<int64_t>(total) - 1);
    }
    if (shape != unpooled) {  // the same coordinates in the larger output
      int64_t rest = flat[i], offset = 0, scale = 1;
      for (size_t d = shape.size(); d-- > 0;) {
        offset += rest % unpooled[d] * scale;
        rest /= unpooled[d];
        scale *= shape[d];
      }
      flat[i] = offset;
    }
  }
  return DispatchFloat(ctx, 0, [&]<ir::DataType D>() -> Status {
    using S = typename ElementCodec<D>::Storage;
    VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * y, ctx.Output(0, x.dtype(), shape));
    std::memset(y->raw_data(), 0, y->byte_size());  // +0.0 in every float type
    const auto* src = static_cast<const uint8_t*>(x.raw_data());
    auto* dst = static_cast<uint8_t*>(y->raw_data());
    // Later elements win where indices repeat.
    for (size_t i = 0; i < flat.size(); ++i) std::memcpy(dst + flat[i] * sizeof(S), src + i * sizeof(S), sizeof(S));
    return Status::Ok();
  });
}

}  // namespace vigil::cpu
