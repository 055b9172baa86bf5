// CPU kernels of the integer and quantized linear ops: MatMulInteger,
// ConvInteger, QLinearMatMul (opsets 10 and 21) and QLinearConv.
//
// The integer part is exact: operands are centred on their zero points into
// int64 (padding of a conv is then 0, i.e. the x zero point before
// centring), multiplied through gemm.h's int64 products and wrapped to int32,
// as the ONNX reference's int32 numpy arithmetic does. The QLinear ops then
// requantize as the reference: the multiplier a_scale * b_scale / y_scale is
// formed in the scales' dtype, the int32 sum times it plus y_zero_point in
// double, rounded half to even and saturated to the output type. Matmul
// broadcasting is MatMul's (matmul_plan.h), conv geometry Conv's
// (conv_pool_kernels.h). float8 operands (QLinearMatMul 21) are Unsupported.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <initializer_list>
#include <string>
#include <vector>

#include "backends/cpu/broadcast.h"
#include "backends/cpu/conv_pool_kernels.h"
#include "backends/cpu/element_codec.h"
#include "backends/cpu/gemm.h"
#include "backends/cpu/kernel_families.h"
#include "backends/cpu/matmul_plan.h"
#include "ops/attributes.h"
#include "vigil/float16.h"

namespace vigil::cpu {
namespace {

using ir::DataType;

bool IsInt8Type(DataType t) { return t == DataType::kInt8 || t == DataType::kUint8; }
bool IsFloat8Type(DataType t) {
  return t == DataType::kFloat8E4M3FN || t == DataType::kFloat8E4M3FNUZ || t == DataType::kFloat8E5M2 ||
         t == DataType::kFloat8E5M2FNUZ;
}

// Element i of an int8/uint8/int32 tensor (memcpy: initializers may be
// mapped at unaligned offsets).
int64_t IntAt(const runtime::Tensor& t, size_t i) {
  const auto* bytes = static_cast<const uint8_t*>(t.raw_data());
  switch (t.dtype()) {
    case DataType::kUint8:
      return bytes[i];
    case DataType::kInt8:
      return static_cast<int8_t>(bytes[i]);
    case DataType::kInt32: {
      int32_t v;
      std::memcpy(&v, bytes + i * sizeof(v), sizeof(v));
      return v;
    }
    default:
      return 0;
  }
}

// Element i of a float32/float16/bfloat16 tensor, widened exactly.
float ScaleAt(const runtime::Tensor& t, size_t i) {
  const auto* bytes = static_cast<const uint8_t*>(t.raw_data());
  if (t.dtype() == DataType::kFloat32) {
    float v;
    std::memcpy(&v, bytes + i * sizeof(v), sizeof(v));
    return v;
  }
  uint16_t h;
  std::memcpy(&h, bytes + i * sizeof(h), sizeof(h));
  return t.dtype() == DataType::kFloat16 ? Float16ToFloat(h) : Bfloat16ToFloat(h);
}

// v rounded to the scales' dtype, as numpy computes float16 arithmetic.
float RoundTo(DataType t, float v) {
  if (t == DataType::kFloat16) return Float16ToFloat(FloatToFloat16(v));
  if (t == DataType::kBfloat16) return Bfloat16ToFloat(FloatToBfloat16(v));
  return v;
}

// a_scale * b_scale / y_scale in the scales' dtype.
float Multiplier(DataType t, float a_scale, float b_scale, float y_scale) {
  return RoundTo(t, RoundTo(t, a_scale * b_scale) / y_scale);
}

// round-half-to-even(acc * multiplier + zp), saturated to `out`'s range;
// NaN (0 * inf from a zero y_scale) gives the zero point.
void StoreRequantized(runtime::Tensor& y, size_t i, int32_t acc, float multiplier, int64_t zp) {
  const bool is_signed = y.dtype() == DataType::kInt8;
  const double lo = is_signed ? -128 : 0, hi = is_signed ? 127 : 255;
  double v = static_cast<double>(acc) * static_cast<double>(multiplier) + static_cast<double>(zp);
  v = std::isnan(v) ? static_cast<double>(zp) : std::min(std::max(std::nearbyint(v), lo), hi);
  auto* out = static_cast<uint8_t*>(y.raw_data());
  out[i] = is_signed ? static_cast<uint8_t>(static_cast<int8_t>(v)) : static_cast<uint8_t>(v);
}

// Input i is present and int8 or uint8 (float8: Unsupported where allowed).
Status CheckQuantInput(const KernelContext& ctx, size_t i, const char* name, bool float8_allowed = false) {
  const runtime::Tensor* t = ctx.input(i);
  if (!t) return ctx.Fail("required input {} ({}) is missing", i, name);
  if (IsInt8Type(t->dtype())) return Status::Ok();
  if (float8_allowed && IsFloat8Type(t->dtype())) {
    return ctx.Unsupported("input {} ({}) has dtype {}; the CPU kernel supports int8 and uint8", i, name,
                           ir::DataTypeName(t->dtype()));
  }
  return ctx.Fail("input {} ({}) has dtype {}, expected int8 or uint8", i, name, ir::DataTypeName(t->dtype()));
}

// An optional zero point (input zp) has the dtype of its tensor (input x).
Status CheckZeroPointType(const KernelContext& ctx, size_t zp, const char* zp_name, size_t x) {
  const runtime::Tensor* z = ctx.input(zp);
  if (!z || z->dtype() == ctx.input(x)->dtype()) return Status::Ok();
  return ctx.Fail("input {} ({}) has dtype {}, expected {} like input {}", zp, zp_name, ir::DataTypeName(z->dtype()),
                  ir::DataTypeName(ctx.input(x)->dtype()), x);
}

// The scales (float32; float16 and bfloat16 too for QLinearMatMul 21), all
// of one dtype, which is returned.
Result<DataType> CheckScales(const KernelContext& ctx, std::initializer_list<size_t> scales, bool any_float) {
  DataType first = DataType::kUndefined;
  for (size_t i : scales) {
    const runtime::Tensor* t = ctx.input(i);
    if (!t) return ctx.Fail("required input {} (a scale) is missing", i);
    const DataType d = t->dtype();
    if (d != DataType::kFloat32 && !(any_float && (d == DataType::kFloat16 || d == DataType::kBfloat16))) {
      return ctx.Fail("input {} (a scale) has dtype {}, expected {}", i, ir::DataTypeName(d),
                      any_float ? "float32, float16 or bfloat16" : "float32");
    }
    if (first != DataType::kUndefined && d != first) {
      return ctx.Fail("input {} (a scale) has dtype {}, another scale has {}; they must match", i, ir::DataTypeName(d),
                      ir::DataTypeName(first));
    }
    first = d;
  }
  return first;
}

Status CheckPerTensor(const KernelContext& ctx, size_t i, const char* name) {
  const runtime::Tensor* t = ctx.input(i);
  if (!t || t->element_count() == 1) return Status::Ok();
  return ctx.Fail("input {} ({}) is {}, expected a single value (per-tensor)", i, name, t->Describe());
}

// ---- matmuls ----

// For each line of a matmul operand (a row of A: [..., M] flattened; a
// column of B: [..., N] flattened), the index of its element of a
// quantization parameter: per tensor (one value), 1-D (one value per row of
// A / column of B) or N-D broadcasting to [..., M, 1] / [..., 1, N].
Result<std::vector<int64_t>> LineIndex(const KernelContext& ctx, size_t index, const char* name,
                                       const std::vector<int64_t>& operand, bool per_row) {
  std::vector<int64_t> target = operand;                                // the operand promoted to a matrix
  if (target.size() == 1 && per_row) target.insert(target.begin(), 1);  // A vector: a [1, K] row
  if (target.size() == 1 && !per_row) target.push_back(1);              // B vector: a [K, 1] column
  target[target.size() - (per_row ? 1 : 2)] = 1;
  int64_t lines = 1;
  for (int64_t d : target) lines *= d;
  std::vector<int64_t> map;
  VIGIL_RETURN_IF_ERROR(ResizeScratch(ctx, map, static_cast<size_t>(lines)));
  const runtime::Tensor* p = ctx.input(index);
  if (!p || p->element_count() == 1) return map;  // all zeros: per tensor
  std::vector<int64_t> shape = p->shape();
  const int64_t want = target[target.size() - (per_row ? 2 : 1)];
  if (shape.size() == 1) shape = per_row ? std::vector<int64_t>{shape[0], 1} : std::vector<int64_t>{1, shape[0]};
  bool fits = shape.size() <= target.size() && (p->rank() != 1 || p->dim(0) == want);
  for (size_t i = 0; fits && i < shape.size(); ++i) {
    const int64_t t = target[target.size() - shape.size() + i];
    fits = shape[i] == t || shape[i] == 1;
  }
  if (!fits) {
    return ctx.Fail("input {} ({}) is {}, expected a single value, {} values (one per {}) or a shape "
                    "broadcasting to {}",
                    index, name, p->Describe(), want, per_row ? "row of A" : "column of B", ShapeString(target));
  }
  // Strides of the parameter over the target's dims (0 where it broadcasts).
  std::vector<int64_t> strides(target.size(), 0);
  int64_t stride = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    if (shape[i] != 1) strides[target.size() - shape.size() + i] = stride;
    stride *= shape[i];
  }
  std::vector<int64_t> coord(target.size(), 0);
  for (int64_t l = 0; l < lines; ++l) {
    int64_t k = 0;
    for (size_t d = 0; d < target.size(); ++d) k += coord[d] * strides[d];
    map[l] = k;
    for (size_t d = target.size(); d-- > 0;) {
      if (++coord[d] < target[d]) break;
      coord[d] = 0;
    }
  }
  return map;
}

// operand - zero point, as int64, for every element of input `x`.
Status Centre(const KernelContext& ctx, size_t x, size_t zp, const char* zp_name, bool per_row,
              std::vector<int64_t>& out) {
  const runtime::Tensor& t = *ctx.input(x);
  VIGIL_ASSIGN_OR_RETURN(std::vector<int64_t> line, LineIndex(ctx, zp, zp_name, t.shape(), per_row));
  VIGIL_RETURN_IF_ERROR(ResizeScratch(ctx, out, t.element_count()));
  const runtime::Tensor* z = ctx.input(zp);
  const int64_t cols = t.shape().back();  // A: K; B: N
  const int64_t rows = t.rank() >= 2 ? t.dim(t.rank() - 2) : 1;
  for (size_t i = 0; i < out.size(); ++i) {
    const int64_t n = static_cast<int64_t>(i);
    // A: the row (n / K); B: batch * N + column (a vector B is one column).
    const int64_t l = per_row ? n / cols : t.rank() == 1 ? 0 : n / (rows * cols) * cols + n % cols;
    out[i] = IntAt(t, i) - (z ? IntAt(*z, static_cast<size_t>(line[l])) : 0);
  }
  return Status::Ok();
}

// The wrapped int32 product of the centred operands, one value per output
// element, in `acc`.
Status CentredMatMul(const KernelContext& ctx, const MatMulPlan& p, const std::vector<int64_t>& a,
                     const std::vector<int64_t>& b, std::vector<int32_t>& acc) {
  std::vector<int64_t> y;
  VIGIL_RETURN_IF_ERROR(ResizeScratch(ctx, y, p.a_offsets.size() * p.gemm.m * p.gemm.n));
  VIGIL_RETURN_IF_ERROR(ResizeScratch(ctx, acc, y.size()));
  if (y.empty()) return Status::Ok();
  if (p.fold_batch) {
    GemmShape folded = p.gemm;
    folded.m *= static_cast<int64_t>(p.a_offsets.size());
    GemmRowMajor(folded, a.data(), b.data(), y.data(), 1, false);
  } else {
    BatchedMatMul(p.gemm, a.data(), p.a_offsets, b.data(), p.b_offsets, y.data());
  }
  for (size_t i = 0; i < y.size(); ++i) acc[i] = static_cast<int32_t>(y[i]);  // wraps, as int32 numpy does
  return Status::Ok();
}

Status MatMulIntegerKernel(KernelContext& ctx) {
  VIGIL_RETURN_IF_ERROR(CheckQuantInput(ctx, 0, "A"));
  VIGIL_RETURN_IF_ERROR(CheckQuantInput(ctx, 1, "B"));
  VIGIL_RETURN_IF_ERROR(CheckZeroPointType(ctx, 2, "a_zero_point", 0));
  VIGIL_RETURN_IF_ERROR(CheckZeroPointType(ctx, 3, "b_zero_point", 1));
  VIGIL_ASSIGN_OR_RETURN(MatMulPlan p, PlanMatMul(ctx, ctx.input(0)->shape(), ctx.input(1)->shape()));
  std::vector<int64_t> a, b;
  VIGIL_RETURN_IF_ERROR(Centre(ctx, 0, 2, "a_zero_point", true, a));
  VIGIL_RETURN_IF_ERROR(Centre(ctx, 1, 3, "b_zero_point", false, b));
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * y, ctx.Output(0, DataType::kInt32, p.out_shape));
  std::vector<int32_t> acc;
  VIGIL_RETURN_IF_ERROR(CentredMatMul(ctx, p, a, b, acc));
  if (!acc.empty()) std::memcpy(y->raw_data(), acc.data(), acc.size() * sizeof(int32_t));
  return Status::Ok();
}

Status QLinearMatMulKernel(KernelContext& ctx) {
  const bool v21 = ctx.opset() >= 21;
  VIGIL_RETURN_IF_ERROR(CheckQuantInput(ctx, 0, "a", v21));
  VIGIL_RETURN_IF_ERROR(CheckQuantInput(ctx, 3, "b", v21));
  VIGIL_RETURN_IF_ERROR(CheckQuantInput(ctx, 2, "a_zero_point", v21));
  VIGIL_RETURN_IF_ERROR(CheckQuantInput(ctx, 5, "b_zero_point", v21));
  VIGIL_RETURN_IF_ERROR(CheckQuantInput(ctx, 7, "y_zero_point", v21));
  VIGIL_RETURN_IF_ERROR(CheckZeroPointType(ctx, 2, "a_zero_point", 0));
  VIGIL_RETURN_IF_ERROR(CheckZeroPointType(ctx, 5, "b_zero_point", 3));
  VIGIL_ASSIGN_OR_RETURN(DataType scale_type, CheckScales(ctx, {1, 4, 6}, v21));
  VIGIL_RETURN_IF_ERROR(CheckPerTensor(ctx, 6, "y_scale"));
  VIGIL_RETURN_IF_ERROR(CheckPerTensor(ctx, 7, "y_zero_point"));
  const runtime::Tensor& a_in = *ctx.input(0);
  const runtime::Tensor& b_in = *ctx.input(3);
  if (a_in.rank() == 0 || b_in.rank() == 0) {
    return ctx.Fail("input {} is a scalar; QLinearMatMul needs rank 1 or more", a_in.rank() == 0 ? "0 (a)" : "3 (b)");
  }
  VIGIL_ASSIGN_OR_RETURN(MatMulPlan p, PlanMatMul(ctx, a_in.shape(), b_in.shape()));
  VIGIL_ASSIGN_OR_RETURN(std::vector<int64_t> a_scale_at, LineIndex(ctx, 1, "a_scale", a_in.shape(), true));
  VIGIL_ASSIGN_OR_RETURN(std::vector<int64_t> b_scale_at, LineIndex(ctx, 4, "b_scale", b_in.shape(), false));
  std::vector<int64_t> a, b;
  VIGIL_RETURN_IF_ERROR(Centre(ctx, 0, 2, "a_zero_point", true, a));
  VIGIL_RETURN_IF_ERROR(Centre(ctx, 3, 5, "b_zero_point", false, b));
  const runtime::Tensor& y_zp = *ctx.input(7);
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * y, ctx.Output(0, y_zp.dtype(), p.out_shape));
  std::vector<int32_t> acc;
  VIGIL_RETURN_IF_ERROR(CentredMatMul(ctx, p, a, b, acc));
  const runtime::Tensor &a_scale = *ctx.input(1), &b_scale = *ctx.input(4);
  const float y_scale = ScaleAt(*ctx.input(6), 0);
  const int64_t zp = IntAt(y_zp, 0);
  const int64_t m = p.gemm.m, n = p.gemm.n;
  for (size_t o = 0; o < p.a_offsets.size(); ++o) {
    // The operands' own batch indices (their matrices may be broadcast).
    const int64_t a_batch = p.a_offsets[o] / std::max<int64_t>(1, m * p.gemm.k);
    const int64_t b_batch = p.b_offsets[o] / std::max<int64_t>(1, p.gemm.k * n);
    for (int64_t r = 0; r < m; ++r) {
      const float as = ScaleAt(a_scale, static_cast<size_t>(a_scale_at[a_batch * m + r]));
      for (int64_t c = 0; c < n; ++c) {
        const float bs = ScaleAt(b_scale, static_cast<size_t>(b_scale_at[b_batch * n + c]));
        const size_t i = (o * m + r) * n + c;
        StoreRequantized(*y, i, acc[i], Multiplier(scale_type, as, bs, y_scale), zp);
      }
    }
  }
  return Status::Ok();
}

// ---- convolutions ----

struct IntConvDims {
  int64_t batch = 0, in_channels = 0, out_channels = 0, group = 1;
  SpatialGeometry g;
};

// X (input 0) and W (input w) against Conv's rules: ranks, channels, group
// and the window attributes.
Result<IntConvDims> IntConvDimsOf(const KernelContext& ctx, size_t w_index) {
  const runtime::Tensor& x = *ctx.input(0);
  const runtime::Tensor& w = *ctx.input(w_index);
  if (x.rank() < 3) {
    return ctx.Fail("input 0 (x) is {}, {} needs rank >= 3 (N x C x D1 x ...)", x.Describe(), ctx.node().op_type);
  }
  if (w.rank() != x.rank()) {
    return ctx.Fail("input {} (w) is {}, {} needs rank {} like input 0 (x) {}", w_index, w.Describe(),
                    ctx.node().op_type, x.rank(), x.Describe());
  }
  IntConvDims d;
  VIGIL_ASSIGN_OR_RETURN(d.group, ops::IntAttr(ctx.node(), "group", 1));
  if (d.group < 1 || d.group > (int64_t{1} << 30)) return ctx.Fail("group is {}, must be in [1, 2^30]", d.group);
  d.batch = x.dim(0);
  d.in_channels = x.dim(1);
  d.out_channels = w.dim(0);
  int64_t grouped = 0;
  if (__builtin_mul_overflow(w.dim(1), d.group, &grouped) || d.in_channels != grouped ||
      d.out_channels % d.group != 0) {
    return ctx.Fail(
        "input 0 (x) {} and input {} (w) {} do not fit group {}: x needs w.dims[1] * group channels and "
        "w.dims[0] must be divisible by group",
        x.Describe(), w_index, w.Describe(), d.group);
  }
  const std::vector<int64_t> x_spatial(x.shape().begin() + 2, x.shape().end());
  const std::vector<int64_t> w_spatial(w.shape().begin() + 2, w.shape().end());
  VIGIL_ASSIGN_OR_RETURN(ops::WindowAttrs wa, ops::ReadWindowAttrs(ctx.node(), x.rank() - 2, w_spatial, {}));
  VIGIL_ASSIGN_OR_RETURN(d.g, ForwardGeometry(ctx.node(), wa, x_spatial));
  return d;
}

// A conv zero point or scale: one value, or one per output channel.
Status CheckPerChannel(const KernelContext& ctx, size_t i, const char* name, int64_t channels) {
  const runtime::Tensor* t = ctx.input(i);
  if (!t || t->element_count() == 1) return Status::Ok();
  if (t->rank() == 1 && t->dim(0) == channels) return Status::Ok();
  return ctx.Fail("input {} ({}) is {}, expected a single value or one per output channel [{}]", i, name, t->Describe(),
                  channels);
}

// For every (kernel tap, output position): the offset of the image element
// it reads, or -1 in the padding.
Status TapOffsets(const KernelContext& ctx, const SpatialGeometry& g, std::vector<int64_t>& off) {
  const int64_t taps = g.KernelSize(), cols = g.ColumnSize();
  VIGIL_RETURN_IF_ERROR(ResizeScratch(ctx, off, static_cast<size_t>(taps * cols)));
  std::vector<int64_t> tap(g.rank(), 0);
  for (int64_t t = 0; t < taps; ++t) {
    std::vector<int64_t> col(g.rank(), 0);
    for (int64_t c = 0; c < cols; ++c) {
      int64_t offset = 0;
      for (size_t d = 0; d < g.rank() && offset >= 0; ++d) {
        const int64_t pos = col[d] * g.strides[d] - g.pad_begin[d] + tap[d] * g.dilations[d];
        offset = pos < 0 || pos >= g.image[d] ? -1 : offset * g.image[d] + pos;
      }
      off[t * cols + c] = offset;
      for (size_t d = g.rank(); d-- > 0;) {
        if (++col[d] < g.columns[d]) break;
        col[d] = 0;
      }
    }
    for (size_t d = g.rank(); d-- > 0;) {
      if (++tap[d] < g.kernel[d]) break;
      tap[d] = 0;
    }
  }
  return Status::Ok();
}

// The wrapped int32 conv of the centred x and w (+ bias), [N, M, cols...].
Status CentredConv(const KernelContext& ctx, const IntConvDims& d, const std::vector<int64_t>& x,
                   const std::vector<int64_t>& w, const runtime::Tensor* bias, std::vector<int32_t>& acc) {
  const SpatialGeometry& g = d.g;
  const int64_t cg = d.in_channels / d.group, mg = d.out_channels / d.group;
  const int64_t taps = g.KernelSize(), cols = g.ColumnSize(), image = g.ImageSize();
  const int64_t depth = cg * taps;
  int64_t col_size = 0, out_size = 0;
  if (__builtin_mul_overflow(depth, cols, &col_size) || __builtin_mul_overflow(taps, cols, &out_size) ||
      __builtin_mul_overflow(d.batch * d.out_channels, cols, &out_size)) {
    return OutOfMemoryError("{}: patch matrix too large", ops::NodeLabel(ctx.node()));
  }
  std::vector<int64_t> col, y, off;
  VIGIL_RETURN_IF_ERROR(ResizeScratch(ctx, acc, static_cast<size_t>(out_size)));
  if (out_size == 0) return Status::Ok();
  VIGIL_RETURN_IF_ERROR(ResizeScratch(ctx, col, static_cast<size_t>(col_size)));
  VIGIL_RETURN_IF_ERROR(ResizeScratch(ctx, y, static_cast<size_t>(mg * cols)));
  VIGIL_RETURN_IF_ERROR(TapOffsets(ctx, g, off));
  for (int64_t n = 0; n < d.batch; ++n) {
    for (int64_t gi = 0; gi < d.group; ++gi) {
      const int64_t* xg = x.data() + (n * d.in_channels + gi * cg) * image;
      for (int64_t c = 0; c < cg; ++c) {
        for (int64_t t = 0; t < taps; ++t) {
          int64_t* row = col.data() + (c * taps + t) * cols;
          const int64_t* o = off.data() + t * cols;
          for (int64_t j = 0; j < cols; ++j) row[j] = o[j] < 0 ? 0 : xg[c * image + o[j]];
        }
      }
      GemmRowMajor(GemmShape{mg, cols, depth}, w.data() + gi * mg * depth, col.data(), y.data(), 1, false);
      for (int64_t m = 0; m < mg; ++m) {
        const int64_t oc = gi * mg + m;
        const int64_t b = bias ? IntAt(*bias, static_cast<size_t>(oc)) : 0;
        int32_t* out = acc.data() + (n * d.out_channels + oc) * cols;
        for (int64_t j = 0; j < cols; ++j) out[j] = static_cast<int32_t>(y[m * cols + j] + b);  // wraps
      }
    }
  }
  return Status::Ok();
}

// x - x_zero_point and w - w_zero_point[output channel], as int64.
Status CentreConvOperands(const KernelContext& ctx, size_t x_zp_index, size_t w_index, size_t w_zp_index,
                          std::vector<int64_t>& x, std::vector<int64_t>& w) {
  const runtime::Tensor& xt = *ctx.input(0);
  const runtime::Tensor& wt = *ctx.input(w_index);
  const runtime::Tensor* x_zp = ctx.input(x_zp_index);
  const runtime::Tensor* w_zp = ctx.input(w_zp_index);
  VIGIL_RETURN_IF_ERROR(ResizeScratch(ctx, x, xt.element_count()));
  VIGIL_RETURN_IF_ERROR(ResizeScratch(ctx, w, wt.element_count()));
  const int64_t xz = x_zp ? IntAt(*x_zp, 0) : 0;
  for (size_t i = 0; i < x.size(); ++i) x[i] = IntAt(xt, i) - xz;
  const size_t per_channel = wt.dim(0) == 0 ? 0 : w.size() / static_cast<size_t>(wt.dim(0));
  const bool per_tensor = !w_zp || w_zp->element_count() == 1;
  for (size_t i = 0; i < w.size(); ++i) {
    const int64_t wz = !w_zp ? 0 : IntAt(*w_zp, per_tensor ? 0 : i / per_channel);
    w[i] = IntAt(wt, i) - wz;
  }
  return Status::Ok();
}

std::vector<int64_t> ConvOutputShape(const IntConvDims& d) {
  std::vector<int64_t> shape{d.batch, d.out_channels};
  shape.insert(shape.end(), d.g.columns.begin(), d.g.columns.end());
  return shape;
}

Status ConvIntegerKernel(KernelContext& ctx) {
  VIGIL_RETURN_IF_ERROR(CheckQuantInput(ctx, 0, "x"));
  VIGIL_RETURN_IF_ERROR(CheckQuantInput(ctx, 1, "w"));
  VIGIL_RETURN_IF_ERROR(CheckZeroPointType(ctx, 2, "x_zero_point", 0));
  VIGIL_RETURN_IF_ERROR(CheckZeroPointType(ctx, 3, "w_zero_point", 1));
  VIGIL_ASSIGN_OR_RETURN(IntConvDims d, IntConvDimsOf(ctx, 1));
  VIGIL_RETURN_IF_ERROR(CheckPerTensor(ctx, 2, "x_zero_point"));
  VIGIL_RETURN_IF_ERROR(CheckPerChannel(ctx, 3, "w_zero_point", d.out_channels));
  std::vector<int64_t> x, w;
  VIGIL_RETURN_IF_ERROR(CentreConvOperands(ctx, 2, 1, 3, x, w));
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * y, ctx.Output(0, DataType::kInt32, ConvOutputShape(d)));
  std::vector<int32_t> acc;
  VIGIL_RETURN_IF_ERROR(CentredConv(ctx, d, x, w, nullptr, acc));
  if (!acc.empty()) std::memcpy(y->raw_data(), acc.data(), acc.size() * sizeof(int32_t));
  return Status::Ok();
}

Status QLinearConvKernel(KernelContext& ctx) {
  VIGIL_RETURN_IF_ERROR(CheckQuantInput(ctx, 0, "x"));
  VIGIL_RETURN_IF_ERROR(CheckQuantInput(ctx, 3, "w"));
  VIGIL_RETURN_IF_ERROR(CheckQuantInput(ctx, 2, "x_zero_point"));
  VIGIL_RETURN_IF_ERROR(CheckQuantInput(ctx, 5, "w_zero_point"));
  VIGIL_RETURN_IF_ERROR(CheckQuantInput(ctx, 7, "y_zero_point"));
  VIGIL_RETURN_IF_ERROR(CheckZeroPointType(ctx, 2, "x_zero_point", 0));
  VIGIL_RETURN_IF_ERROR(CheckZeroPointType(ctx, 5, "w_zero_point", 3));
  VIGIL_ASSIGN_OR_RETURN(DataType scale_type, CheckScales(ctx, {1, 4, 6}, false));
  VIGIL_ASSIGN_OR_RETURN(IntConvDims d, IntConvDimsOf(ctx, 3));
  VIGIL_RETURN_IF_ERROR(CheckPerTensor(ctx, 1, "x_scale"));
  VIGIL_RETURN_IF_ERROR(CheckPerTensor(ctx, 2, "x_zero_point"));
  VIGIL_RETURN_IF_ERROR(CheckPerChannel(ctx, 4, "w_scale", d.out_channels));
  VIGIL_RETURN_IF_ERROR(CheckPerChannel(ctx, 5, "w_zero_point", d.out_channels));
  VIGIL_RETURN_IF_ERROR(CheckPerTensor(ctx, 6, "y_scale"));
  VIGIL_RETURN_IF_ERROR(CheckPerTensor(ctx, 7, "y_zero_point"));
  const runtime::Tensor* bias = ctx.input(8);
  if (bias && (bias->dtype() != DataType::kInt32 || bias->rank() != 1 || bias->dim(0) != d.out_channels)) {
    return ctx.Fail("input 8 (B) is {}, expected int32 with one value per output channel [{}]", bias->Describe(),
                    d.out_channels);
  }
  std::vector<int64_t> x, w;
  VIGIL_RETURN_IF_ERROR(CentreConvOperands(ctx, 2, 3, 5, x, w));
  const runtime::Tensor& y_zp = *ctx.input(7);
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * y, ctx.Output(0, y_zp.dtype(), ConvOutputShape(d)));
  std::vector<int32_t> acc;
  VIGIL_RETURN_IF_ERROR(CentredConv(ctx, d, x, w, bias, acc));
  const runtime::Tensor& w_scale = *ctx.input(4);
  const float x_scale = ScaleAt(*ctx.input(1), 0), y_scale = ScaleAt(*ctx.input(6), 0);
  const int64_t zp = IntAt(y_zp, 0);
  const int64_t cols = d.g.ColumnSize();
  for (int64_t n = 0; n < d.batch; ++n) {
    for (int64_t oc = 0; oc < d.out_channels; ++oc) {
      const size_t k = w_scale.element_count() == 1 ? 0 : static_cast<size_t>(oc);
      const float multiplier = Multiplier(scale_type, x_scale, ScaleAt(w_scale, k), y_scale);
      for (int64_t j = 0; j < cols; ++j) {
        const size_t i = static_cast<size_t>((n * d.out_channels + oc) * cols + j);
        StoreRequantized(*y, i, acc[i], multiplier, zp);
      }
    }
  }
  return Status::Ok();
}

const KernelDef kQuantizedLinearKernels[] = {
    {"", "MatMulInteger", 10, kLatest, MatMulIntegerKernel},
    {"", "ConvInteger", 10, kLatest, ConvIntegerKernel},
    {"", "QLinearMatMul", 10, kLatest, QLinearMatMulKernel},
    {"", "QLinearConv", 10, kLatest, QLinearConvKernel},
};

}  // namespace

std::span<const KernelDef> QuantizedLinearKernels() { return kQuantizedLinearKernels; }

}  // namespace vigil::cpu
