// CPU kernels of the com.microsoft quantized ops of onnxruntime's QOperator
// format: QLinearAdd, QLinearMul, QLinearSigmoid, QLinearLeakyRelu,
// QLinearGlobalAveragePool, QLinearAveragePool, QLinearConcat and
// QLinearSoftmax, int8 and uint8, per-tensor scales and zero points (an
// omitted zero point is 0), and QGemm (B's scale and zero point per tensor
// or per column). The family's list also holds DynamicQuantizeLSTM
// (dynamic_quantize_lstm.cpp).
//
// onnxruntime computes these ops in float32, and its integer outputs depend
// on the order of that arithmetic at round-half-to-even ties. To match it bit
// for bit (issue 18) the kernels form the same float32 values, in the same
// order, with explicit fused multiply-adds (std::fma) where onnxruntime's
// x86-64 kernels fuse; this file is compiled with -ffp-contract=off so that
// the compiler fuses nothing else. The formulas were found by comparing with
// onnxruntime 1.32 CPU (tools/quant/compare_ort.py; docs/int8.md):
//   QLinearAdd   ra = sa/sc, rb = sb/sc (float32). With v the vector operand
//                and s the other one (v = B where A repeats along the
//                innermost broadcast run, else A):
//                c = fma(v, rv, fma(s, rs, zc - fma(rv, zv, rs*zs))).
//   QLinearMul   c = float((a-za)*(b-zb)) * ((sa*sb)/sc) + zc.
//   Sigmoid/LeakyRelu  a 256-entry table: x = float(q-zx)*sx, y = f(x) in
//                float32, q' = round(y/sy) + zy.
//   GlobalAveragePool  round(float(sum(q-zx)) * (sx/(sy*n))) + zy.
//   AveragePool  the float32 sum of float(q-zx)*sx over the window in
//                row-major order, / count, then round(avg/sy + zy). With
//                count_include_pad the count is the kernel size, also where
//                a ceil_mode window runs past the padding (onnxruntime's).
//   Concat       per input a table round(float(q-zx)*sx / sy) + zy.
//   Softmax      a float32 table of exp((j-255)*sx + b) (double, rounded),
//                the float32 sum of a row's entries in order, then
//                round(e * floor(1/sy) / sum) + zy (see QLinearSoftmaxKernel).
// round is round-half-to-even (std::nearbyint in the default rounding mode);
// results saturate to the output type; a NaN gives the zero point.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "backends/cpu/broadcast.h"
#include "backends/cpu/kernel_families.h"
#include "backends/cpu/lstm_products.h"
#include "ops/attributes.h"
#include "ops/qlinear_pool_geometry.h"

namespace vigil::cpu {
namespace {

using ir::DataType;

constexpr const char kMsDomain[] = "com.microsoft";

bool IsInt8Type(DataType t) { return t == DataType::kInt8 || t == DataType::kUint8; }

// Element i of an int8/uint8 tensor.
int32_t Load(const runtime::Tensor& t, size_t i) {
  const auto* bytes = static_cast<const uint8_t*>(t.raw_data());
  return t.dtype() == DataType::kInt8 ? static_cast<int8_t>(bytes[i]) : bytes[i];
}

// round(v) + zp (the zero point added after rounding), saturated to t's
// range; NaN gives zp.
uint8_t Saturate(DataType t, float v, int32_t zp) {
  const int32_t lo = t == DataType::kInt8 ? -128 : 0, hi = t == DataType::kInt8 ? 127 : 255;
  if (std::isnan(v)) return static_cast<uint8_t>(zp);
  const float r = std::nearbyint(v) + static_cast<float>(zp);
  const int32_t q = static_cast<int32_t>(std::min(std::max(r, static_cast<float>(lo)), static_cast<float>(hi)));
  return static_cast<uint8_t>(q);
}

// round(v), saturated, for a value that already includes the zero point zp
// (added in float32 before rounding); NaN gives zp.
uint8_t SaturateBiased(DataType t, float v, int32_t zp) {
  if (std::isnan(v)) return static_cast<uint8_t>(zp);
  return Saturate(t, v, 0);
}

uint8_t* Bytes(runtime::Tensor& t) { return static_cast<uint8_t*>(t.raw_data()); }

// Input i (named `name`) is present and int8 or uint8.
Status CheckData(const KernelContext& ctx, size_t i, const char* name) {
  const runtime::Tensor* t = ctx.input(i);
  if (!t) return ctx.Fail("required input {} ({}) is missing", i, name);
  if (IsInt8Type(t->dtype())) return Status::Ok();
  return ctx.Fail("input {} ({}) has dtype {}, expected int8 or uint8", i, name, ir::DataTypeName(t->dtype()));
}

// A scale: a float32 scalar (one element).
Result<float> ReadScale(const KernelContext& ctx, size_t i, const char* name) {
  const runtime::Tensor* t = ctx.input(i);
  if (!t) return ctx.Fail("required input {} ({}) is missing", i, name);
  if (t->dtype() != DataType::kFloat32 || t->element_count() != 1) {
    return ctx.Fail("input {} ({}) is {}, expected a float32 scalar", i, name, t->Describe());
  }
  float v;
  std::memcpy(&v, t->raw_data(), sizeof(v));
  return v;
}

// A zero point: absent (0) or a scalar of `data`'s dtype.
Result<int32_t> ReadZeroPoint(const KernelContext& ctx, size_t i, const char* name, DataType data) {
  const runtime::Tensor* t = ctx.input(i);
  if (!t) return 0;
  if (t->dtype() != data || t->element_count() != 1) {
    return ctx.Fail("input {} ({}) is {}, expected a {} scalar like the data it belongs to", i, name, t->Describe(),
                    ir::DataTypeName(data));
  }
  return Load(*t, 0);
}

// Element strides of `in` (right-aligned to `out`) in output coordinates, 0
// where the input repeats.
std::vector<int64_t> BroadcastStrides(const std::vector<int64_t>& out, const std::vector<int64_t>& in) {
  std::vector<int64_t> s(out.size(), 0);
  int64_t stride = 1;
  for (size_t k = in.size(); k-- > 0;) {
    const size_t o = out.size() - in.size() + k;
    s[o] = in[k] == 1 ? 0 : stride;
    stride *= in[k];
  }
  return s;
}

// QLinearAdd and QLinearMul.
template <bool kAdd>
Status QLinearBinaryKernel(KernelContext& ctx) {
  VIGIL_RETURN_IF_ERROR(CheckData(ctx, 0, "A"));
  VIGIL_RETURN_IF_ERROR(CheckData(ctx, 3, "B"));
  const runtime::Tensor& a = *ctx.input(0);
  const runtime::Tensor& b = *ctx.input(3);
  const DataType dt = a.dtype();
  if (b.dtype() != dt) {
    return ctx.Fail("input 3 (B) has dtype {}, expected {} like input 0 (A)", ir::DataTypeName(b.dtype()),
                    ir::DataTypeName(dt));
  }
  VIGIL_ASSIGN_OR_RETURN(const float sa, ReadScale(ctx, 1, "A_scale"));
  VIGIL_ASSIGN_OR_RETURN(const float sb, ReadScale(ctx, 4, "B_scale"));
  VIGIL_ASSIGN_OR_RETURN(const float sc, ReadScale(ctx, 6, "C_scale"));
  VIGIL_ASSIGN_OR_RETURN(const int32_t za, ReadZeroPoint(ctx, 2, "A_zero_point", dt));
  VIGIL_ASSIGN_OR_RETURN(const int32_t zb, ReadZeroPoint(ctx, 5, "B_zero_point", dt));
  VIGIL_ASSIGN_OR_RETURN(const int32_t zc, ReadZeroPoint(ctx, 7, "C_zero_point", dt));
  const auto shape = BroadcastShape(a.shape(), b.shape());
  if (!shape) {
    return ctx.Fail("inputs 0 (A) {} and 3 (B) {} do not broadcast", a.Describe(), b.Describe());
  }
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * c, ctx.Output(0, dt, *shape));
  const std::vector<int64_t>& out = *shape;
  const std::vector<int64_t> stride_a = BroadcastStrides(out, a.shape()), stride_b = BroadcastStrides(out, b.shape());
  // Which operand onnxruntime treats as the repeated one along a run.
  bool a_repeats = a.element_count() == 1;
  for (size_t k = out.size(); k-- > 0 && !a_repeats;) {
    if (out[k] == 1) continue;
    a_repeats = stride_a[k] == 0 && stride_b[k] != 0;
    break;
  }
  const float fza = static_cast<float>(za), fzb = static_cast<float>(zb), fzc = static_cast<float>(zc);
  const float ra = sa / sc, rb = sb / sc;
  const float bias_a = fzc - std::fma(ra, fza, rb * fzb);  // a is the vector operand
  const float bias_b = fzc - std::fma(rb, fzb, ra * fza);  // b is
  const float multiplier = (sa * sb) / sc;
  uint8_t* y = Bytes(*c);
  const size_t count = c->element_count();
  std::vector<int64_t> index(out.size(), 0);
  int64_t ia = 0, ib = 0;
  for (size_t i = 0; i < count; ++i) {
    const int32_t qa = Load(a, static_cast<size_t>(ia)), qb = Load(b, static_cast<size_t>(ib));
    if constexpr (kAdd) {
      const float fa = static_cast<float>(qa), fb = static_cast<float>(qb);
      const float v = a_repeats ? std::fma(fb, rb, std::fma(fa, ra, bias_b)) : std::fma(fa, ra, std::fma(fb, rb, bias_a));
      y[i] = SaturateBiased(dt, v, zc);
    } else {
      const float product = static_cast<float>((qa - za) * (qb - zb));
      const float scaled = product * multiplier;
      y[i] = SaturateBiased(dt, scaled + fzc, zc);
    }
    for (size_t k = out.size(); k-- > 0;) {  // odometer
      ia += stride_a[k];
      ib += stride_b[k];
      if (++index[k] < out[k]) break;
      ia -= stride_a[k] * out[k];
      ib -= stride_b[k] * out[k];
      index[k] = 0;
    }
  }
  return Status::Ok();
}

// The unary ops: X, X_scale, X_zero_point?, Y_scale, Y_zero_point? mapped
// through a 256-entry table of fn on the dequantized value.
template <typename Fn>
Status QLinearLookupKernel(KernelContext& ctx, Fn fn) {
  VIGIL_RETURN_IF_ERROR(CheckData(ctx, 0, "X"));
  const runtime::Tensor& x = *ctx.input(0);
  const DataType dt = x.dtype();
  VIGIL_ASSIGN_OR_RETURN(const float sx, ReadScale(ctx, 1, "X_scale"));
  VIGIL_ASSIGN_OR_RETURN(const int32_t zx, ReadZeroPoint(ctx, 2, "X_zero_point", dt));
  VIGIL_ASSIGN_OR_RETURN(const float sy, ReadScale(ctx, 3, "Y_scale"));
  VIGIL_ASSIGN_OR_RETURN(const int32_t zy, ReadZeroPoint(ctx, 4, "Y_zero_point", dt));
  uint8_t table[256];
  for (int byte = 0; byte < 256; ++byte) {
    const int32_t q = dt == DataType::kInt8 ? static_cast<int8_t>(byte) : byte;
    const float v = static_cast<float>(q - zx) * sx;
    table[byte] = Saturate(dt, fn(v) / sy, zy);
  }
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * y, ctx.Output(0, dt, x.shape()));
  const auto* in = static_cast<const uint8_t*>(x.raw_data());
  uint8_t* out = Bytes(*y);
  for (size_t i = 0; i < x.element_count(); ++i) out[i] = table[in[i]];
  return Status::Ok();
}

Status QLinearSigmoidKernel(KernelContext& ctx) {
  return QLinearLookupKernel(ctx, [](float v) { return 1.0f / (1.0f + std::exp(-v)); });
}

Status QLinearLeakyReluKernel(KernelContext& ctx) {
  VIGIL_ASSIGN_OR_RETURN(const float alpha, ops::FloatAttr(ctx.node(), "alpha", 0.01f));
  return QLinearLookupKernel(ctx, [alpha](float v) { return v >= 0.0f ? v : v * alpha; });
}

// channels_last (0 or 1).
Result<bool> ChannelsLast(const KernelContext& ctx) {
  VIGIL_ASSIGN_OR_RETURN(int64_t cl, ops::IntAttr(ctx.node(), "channels_last", 0));
  if (cl != 0 && cl != 1) return ctx.Fail("attribute channels_last is {}, expected 0 or 1", cl);
  return cl == 1;
}

// Batch, channel and spatial extents of a pool input.
struct PoolLayout {
  int64_t batch = 0, channels = 0;
  std::vector<int64_t> spatial;
  bool channels_last = false;
};

Result<PoolLayout> ReadPoolLayout(const KernelContext& ctx, const runtime::Tensor& x) {
  PoolLayout l;
  VIGIL_ASSIGN_OR_RETURN(l.channels_last, ChannelsLast(ctx));
  if (x.rank() < 3) {
    return ctx.Fail("input 0 (X) is {}, expected rank >= 3 ({})", x.Describe(),
                    l.channels_last ? "[N,spatial...,C] with channels_last" : "[N,C,spatial...]");
  }
  const size_t rank = x.rank();
  l.batch = x.dim(0);
  l.channels = x.dim(l.channels_last ? rank - 1 : 1);
  for (size_t i = l.channels_last ? 1 : 2; i < (l.channels_last ? rank - 1 : rank); ++i) l.spatial.push_back(x.dim(i));
  return l;
}

// Output shape of a pool with the given spatial output dims.
std::vector<int64_t> PoolShape(const PoolLayout& l, const std::vector<int64_t>& spatial) {
  std::vector<int64_t> s{l.batch};
  if (!l.channels_last) s.push_back(l.channels);
  s.insert(s.end(), spatial.begin(), spatial.end());
  if (l.channels_last) s.push_back(l.channels);
  return s;
}

int64_t Product(const std::vector<int64_t>& v) {
  int64_t p = 1;
  for (int64_t d : v) p *= d;
  return p;
}

Status QLinearGlobalAveragePoolKernel(KernelContext& ctx) {
  VIGIL_RETURN_IF_ERROR(CheckData(ctx, 0, "X"));
  const runtime::Tensor& x = *ctx.input(0);
  const DataType dt = x.dtype();
  VIGIL_ASSIGN_OR_RETURN(const float sx, ReadScale(ctx, 1, "x_scale"));
  VIGIL_ASSIGN_OR_RETURN(const int32_t zx, ReadZeroPoint(ctx, 2, "x_zero_point", dt));
  VIGIL_ASSIGN_OR_RETURN(const float sy, ReadScale(ctx, 3, "y_scale"));
  VIGIL_ASSIGN_OR_RETURN(const int32_t zy, ReadZeroPoint(ctx, 4, "y_zero_point", dt));
  VIGIL_ASSIGN_OR_RETURN(PoolLayout l, ReadPoolLayout(ctx, x));
  const int64_t n = Product(l.spatial);
  if (n == 0) return ctx.Fail("input 0 (X) is {}: it has no spatial elements to average", x.Describe());
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * y, ctx.Output(0, dt, PoolShape(l, std::vector<int64_t>(l.spatial.size(), 1))));
  const float multiplier = sx / (sy * static_cast<float>(n));
  // Element (b, c, s) is at b*C*n + c*n + s (NCHW) or b*n*C + s*C + c.
  const int64_t c_stride = l.channels_last ? 1 : n, s_stride = l.channels_last ? l.channels : 1;
  uint8_t* out = Bytes(*y);
  for (int64_t b = 0; b < l.batch; ++b) {
    for (int64_t c = 0; c < l.channels; ++c) {
      int64_t sum = 0;
      const int64_t base = b * l.channels * n + c * c_stride;
      for (int64_t s = 0; s < n; ++s) sum += Load(x, static_cast<size_t>(base + s * s_stride)) - zx;
      out[b * l.channels + c] = Saturate(dt, static_cast<float>(sum) * multiplier, zy);
    }
  }
  return Status::Ok();
}

Status QLinearAveragePoolKernel(KernelContext& ctx) {
  VIGIL_RETURN_IF_ERROR(CheckData(ctx, 0, "X"));
  const runtime::Tensor& x = *ctx.input(0);
  const DataType dt = x.dtype();
  VIGIL_ASSIGN_OR_RETURN(const float sx, ReadScale(ctx, 1, "x_scale"));
  VIGIL_ASSIGN_OR_RETURN(const int32_t zx, ReadZeroPoint(ctx, 2, "x_zero_point", dt));
  VIGIL_ASSIGN_OR_RETURN(const float sy, ReadScale(ctx, 3, "y_scale"));
  VIGIL_ASSIGN_OR_RETURN(const int32_t zy, ReadZeroPoint(ctx, 4, "y_zero_point", dt));
  VIGIL_ASSIGN_OR_RETURN(PoolLayout l, ReadPoolLayout(ctx, x));
  VIGIL_ASSIGN_OR_RETURN(std::vector<int64_t> kernel, ops::RequiredIntsAttr(ctx.node(), "kernel_shape"));
  VIGIL_ASSIGN_OR_RETURN(std::vector<int64_t> strides, ops::IntsAttr(ctx.node(), "strides", {}));
  VIGIL_ASSIGN_OR_RETURN(std::vector<int64_t> pads, ops::IntsAttr(ctx.node(), "pads", {}));
  VIGIL_ASSIGN_OR_RETURN(std::string auto_pad, ops::StringAttr(ctx.node(), "auto_pad", "NOTSET"));
  VIGIL_ASSIGN_OR_RETURN(int64_t ceil_mode, ops::IntAttr(ctx.node(), "ceil_mode", 0));
  VIGIL_ASSIGN_OR_RETURN(int64_t cip, ops::IntAttr(ctx.node(), "count_include_pad", 0));
  if (cip != 0 && cip != 1) return ctx.Fail("attribute count_include_pad is {}, expected 0 or 1", cip);
  ops::QLinearPoolGeometry g;
  std::string why;
  if (!ops::ComputeQLinearPoolGeometry(l.spatial, kernel, strides, pads, auto_pad, ceil_mode != 0, &g, &why)) {
    return ctx.Fail("{} (input 0 (X) is {})", why, x.Describe());
  }
  if (strides.empty()) strides.assign(kernel.size(), 1);
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * y, ctx.Output(0, dt, PoolShape(l, g.out)));
  // Dequantized input, float32 as onnxruntime forms it.
  std::vector<float> xf(x.element_count());
  for (size_t i = 0; i < xf.size(); ++i) xf[i] = static_cast<float>(Load(x, i) - zx) * sx;
  const size_t nd = kernel.size();
  const int64_t in_n = Product(l.spatial), out_n = Product(g.out), kernel_n = Product(kernel);
  const int64_t c_stride = l.channels_last ? 1 : in_n, s_stride = l.channels_last ? l.channels : 1;
  const int64_t oc_stride = l.channels_last ? 1 : out_n, os_stride = l.channels_last ? l.channels : 1;
  const float fzy = static_cast<float>(zy);
  uint8_t* out = Bytes(*y);
  std::vector<int64_t> opos(nd), lo(nd), hi(nd), pos(nd);
  for (int64_t o = 0; o < out_n; ++o) {
    int64_t rest = o, valid = 1;
    for (size_t d = nd; d-- > 0;) {
      opos[d] = rest % g.out[d];
      rest /= g.out[d];
      const int64_t start = opos[d] * strides[d] - g.begin[d];
      lo[d] = std::max<int64_t>(start, 0);
      hi[d] = std::min<int64_t>(start + kernel[d], l.spatial[d]);
      valid *= std::max<int64_t>(hi[d] - lo[d], 0);
    }
    const int64_t count = cip ? kernel_n : valid;
    for (int64_t b = 0; b < l.batch; ++b) {
      for (int64_t c = 0; c < l.channels; ++c) {
        const int64_t base = b * l.channels * in_n + c * c_stride;
        float acc = 0.0f;
        if (valid > 0) {
          pos = lo;
          while (true) {  // row-major over the window
            int64_t s = 0;
            for (size_t d = 0; d < nd; ++d) s = s * l.spatial[d] + pos[d];
            acc += xf[static_cast<size_t>(base + s * s_stride)];
            size_t d = nd;
            while (d-- > 0) {
              if (++pos[d] < hi[d]) break;
              pos[d] = lo[d];
            }
            if (d == static_cast<size_t>(-1)) break;
          }
        }
        const float avg = count > 0 ? acc / static_cast<float>(count) : 0.0f;
        const float q = avg / sy + fzy;
        out[b * l.channels * out_n + c * oc_stride + o * os_stride] = SaturateBiased(dt, q, zy);
      }
    }
  }
  return Status::Ok();
}

// QLinearConcat: Y_scale, Y_zero_point, (X, X_scale, X_zero_point)...
Status QLinearConcatKernel(KernelContext& ctx) {
  VIGIL_ASSIGN_OR_RETURN(const float sy, ReadScale(ctx, 0, "Y_scale"));
  VIGIL_RETURN_IF_ERROR(CheckData(ctx, 1, "Y_zero_point"));
  const DataType dt = ctx.input(1)->dtype();
  VIGIL_ASSIGN_OR_RETURN(const int32_t zy, ReadZeroPoint(ctx, 1, "Y_zero_point", dt));
  const size_t n = ctx.num_inputs();
  if (n < 5 || (n - 2) % 3 != 0) {
    return ctx.Fail("has {} inputs, expected Y_scale, Y_zero_point and (X, X_scale, X_zero_point) triples", n);
  }
  VIGIL_ASSIGN_OR_RETURN(int64_t axis, ops::RequiredIntAttr(ctx.node(), "axis"));
  VIGIL_RETURN_IF_ERROR(CheckData(ctx, 2, "X"));
  const runtime::Tensor& first = *ctx.input(2);
  VIGIL_ASSIGN_OR_RETURN(axis, ops::NormalizeAxis(ctx.node(), axis, static_cast<int64_t>(first.rank())));
  std::vector<int64_t> shape = first.shape();
  shape[axis] = 0;
  std::vector<std::vector<uint8_t>> tables;
  for (size_t k = 2; k < n; k += 3) {
    VIGIL_RETURN_IF_ERROR(CheckData(ctx, k, "X"));
    const runtime::Tensor& x = *ctx.input(k);
    if (x.dtype() != dt) {
      return ctx.Fail("input {} (X) has dtype {}, expected {} like input 1 (Y_zero_point)", k,
                      ir::DataTypeName(x.dtype()), ir::DataTypeName(dt));
    }
    bool fits = x.rank() == first.rank();
    for (size_t d = 0; fits && d < x.rank(); ++d) fits = static_cast<int64_t>(d) == axis || x.dim(d) == first.dim(d);
    if (!fits) {
      return ctx.Fail("input {} (X) is {}, expected the shape of input 2 {} except along axis {}", k, x.Describe(),
                      first.Describe(), axis);
    }
    shape[axis] += x.dim(axis);
    VIGIL_ASSIGN_OR_RETURN(const float sx, ReadScale(ctx, k + 1, "X_scale"));
    VIGIL_ASSIGN_OR_RETURN(const int32_t zx, ReadZeroPoint(ctx, k + 2, "X_zero_point", dt));
    std::vector<uint8_t> table(256);
    for (int byte = 0; byte < 256; ++byte) {
      const int32_t q = dt == DataType::kInt8 ? static_cast<int8_t>(byte) : byte;
      table[byte] = Saturate(dt, static_cast<float>(q - zx) * sx / sy, zy);
    }
    tables.push_back(std::move(table));
  }
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * y, ctx.Output(0, dt, shape));
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= shape[d];
  for (size_t d = axis + 1; d < shape.size(); ++d) inner *= shape[d];
  uint8_t* out = Bytes(*y);
  int64_t offset = 0;  // along the output's concatenated block
  const int64_t out_block = shape[axis] * inner;
  for (size_t k = 2, t = 0; k < n; k += 3, ++t) {
    const runtime::Tensor& x = *ctx.input(k);
    const auto* in = static_cast<const uint8_t*>(x.raw_data());
    const int64_t block = x.dim(axis) * inner;
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t j = 0; j < block; ++j) out[o * out_block + offset + j] = tables[t][in[o * block + j]];
    }
    offset += block;
  }
  return Status::Ok();
}

// QLinearSoftmax: X, X_scale, X_zero_point?, Y_scale, Y_zero_point?.
// onnxruntime's arithmetic: a 256-entry float32 table of
// exp((j - 255 + b/sx) * sx), j = 0..255, formed in double and rounded to
// float, with b = max(0, logf(FLT_MAX / D) - 5) so that a sum of D entries
// cannot overflow (D: the reduced length). Entry 255 belongs to the row's
// maximum, entry 255-k to a value k below it (X's zero point cancels). Per
// row: the float32 sum of the entries in order, then
// round((e * floor(1/sy)) / sum) + zy, saturated. The axis defaults to -1
// for every opset (onnxruntime's schema default; ONNX Softmax before opset
// 13 had 1).
Status QLinearSoftmaxKernel(KernelContext& ctx) {
  VIGIL_RETURN_IF_ERROR(CheckData(ctx, 0, "X"));
  const runtime::Tensor& x = *ctx.input(0);
  const DataType dt = x.dtype();
  VIGIL_ASSIGN_OR_RETURN(const float sx, ReadScale(ctx, 1, "X_scale"));
  VIGIL_ASSIGN_OR_RETURN(const int32_t zx, ReadZeroPoint(ctx, 2, "X_zero_point", dt));
  (void)zx;  // softmax is shift invariant: only the distance to the row's maximum matters
  VIGIL_ASSIGN_OR_RETURN(const float sy, ReadScale(ctx, 3, "Y_scale"));
  VIGIL_ASSIGN_OR_RETURN(const int32_t zy, ReadZeroPoint(ctx, 4, "Y_zero_point", dt));
  VIGIL_ASSIGN_OR_RETURN(const int64_t opset, ops::RequiredIntAttr(ctx.node(), "opset"));
  VIGIL_ASSIGN_OR_RETURN(int64_t axis, ops::IntAttr(ctx.node(), "axis", -1));
  const int64_t rank = static_cast<int64_t>(x.rank());
  if (rank == 0) return ctx.Fail("input 0 (X) is {}, expected rank >= 1", x.Describe());
  VIGIL_ASSIGN_OR_RETURN(axis, ops::NormalizeAxis(ctx.node(), axis, rank));
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * y, ctx.Output(0, dt, x.shape()));
  if (x.element_count() == 0) return Status::Ok();
  // Rows of D elements, `inner` apart: opset < 13 coerces X to 2-D at axis,
  // opset 13 reduces along the one axis.
  int64_t outer = 1, d = 1, inner = 1;
  for (int64_t i = 0; i < axis; ++i) outer *= x.dim(i);
  for (int64_t i = axis; i < rank; ++i) (opset < 13 || i == axis ? d : inner) *= x.dim(i);
  // log in float32 (onnxruntime's std::log of a float), the rest in double.
  double shift = static_cast<double>(std::log(std::numeric_limits<float>::max() / static_cast<float>(d)));
  shift = std::max(0.0, shift - 5.0) / static_cast<double>(sx);
  float table[256];  // table[255 - k]: a value k below its row's maximum
  for (int j = 0; j < 256; ++j) {
    table[j] = static_cast<float>(std::exp((static_cast<double>(j) - 255.0 + shift) * static_cast<double>(sx)));
  }
  const float y_mult = std::floor(1.0f / sy);
  uint8_t* out = Bytes(*y);
  std::vector<int32_t> q(static_cast<size_t>(d));
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t r = 0; r < inner; ++r) {
      const int64_t base = o * d * inner + r;
      int32_t qmax = std::numeric_limits<int32_t>::min();
      for (int64_t k = 0; k < d; ++k) {
        q[k] = Load(x, static_cast<size_t>(base + k * inner));
        qmax = std::max(qmax, q[k]);
      }
      float sum = 0.0f;
      for (int64_t k = 0; k < d; ++k) sum += table[255 - (qmax - q[k])];
      for (int64_t k = 0; k < d; ++k) {
        // A zero sum (onnxruntime leaves such a row unwritten) gives the zero point.
        const float e = table[255 - (qmax - q[k])];
        out[base + k * inner] = sum == 0.0f ? static_cast<uint8_t>(zy) : Saturate(dt, (e * y_mult) / sum, zy);
      }
    }
  }
  return Status::Ok();
}

// A per-tensor value or one per column of B: one element, or [N].
Result<std::vector<float>> ReadColumnScales(const KernelContext& ctx, size_t i, const char* name, int64_t n) {
  const runtime::Tensor* t = ctx.input(i);
  if (!t) return ctx.Fail("required input {} ({}) is missing", i, name);
  if (t->dtype() != DataType::kFloat32 || !(t->element_count() == 1 || t->shape() == std::vector<int64_t>{n})) {
    return ctx.Fail("input {} ({}) is {}, expected float32 with one element or [{}] (per column)", i, name,
                    t->Describe(), n);
  }
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t c = 0; c < n; ++c) v[c] = t->data<float>()[t->element_count() == 1 ? 0 : c];
  return v;
}

// QGemm: A, a_scale, a_zero_point, B, b_scale, b_zero_point, C?, y_scale?,
// y_zero_point?; alpha, transA, transB. The exact int32 product
// sum((a-za)*(b-zb[n])) plus C (int32, broadcast to [M,N]), times
// (alpha*sa*sb[n]) (/ sy where y_scale is given) in float32, as onnxruntime
// forms it; with y_zero_point round and add zy, saturated to its type, else
// the float32 value.
Status QGemmKernel(KernelContext& ctx) {
  VIGIL_RETURN_IF_ERROR(CheckData(ctx, 0, "A"));
  VIGIL_RETURN_IF_ERROR(CheckData(ctx, 3, "B"));
  const runtime::Tensor& a = *ctx.input(0);
  const runtime::Tensor& b = *ctx.input(3);
  VIGIL_ASSIGN_OR_RETURN(const float alpha, ops::FloatAttr(ctx.node(), "alpha", 1.0f));
  VIGIL_ASSIGN_OR_RETURN(const int64_t trans_a, ops::IntAttr(ctx.node(), "transA", 0));
  VIGIL_ASSIGN_OR_RETURN(const int64_t trans_b, ops::IntAttr(ctx.node(), "transB", 0));
  if (a.rank() != 2 || b.rank() != 2) {
    return ctx.Fail("inputs 0 (A) {} and 3 (B) {} must be matrices (rank 2)", a.Describe(), b.Describe());
  }
  const int64_t m = a.dim(trans_a ? 1 : 0), k = a.dim(trans_a ? 0 : 1);
  const int64_t kb = b.dim(trans_b ? 1 : 0), n = b.dim(trans_b ? 0 : 1);
  if (k != kb) {
    return ctx.Fail("inputs 0 (A) {} and 3 (B) {} do not multiply (transA {}, transB {}): K {} vs {}", a.Describe(),
                    b.Describe(), trans_a, trans_b, k, kb);
  }
  VIGIL_ASSIGN_OR_RETURN(const float sa, ReadScale(ctx, 1, "a_scale"));
  VIGIL_ASSIGN_OR_RETURN(const int32_t za, ReadZeroPoint(ctx, 2, "a_zero_point", a.dtype()));
  VIGIL_ASSIGN_OR_RETURN(std::vector<float> sb, ReadColumnScales(ctx, 4, "b_scale", n));
  std::vector<int32_t> zb(static_cast<size_t>(n), 0);
  if (const runtime::Tensor* z = ctx.input(5)) {
    if (z->dtype() != b.dtype() || !(z->element_count() == 1 || z->shape() == std::vector<int64_t>{n})) {
      return ctx.Fail("input 5 (b_zero_point) is {}, expected {} with one element or [{}] like input 3 (B)",
                      z->Describe(), ir::DataTypeName(b.dtype()), n);
    }
    for (int64_t c = 0; c < n; ++c) zb[c] = Load(*z, z->element_count() == 1 ? 0 : static_cast<size_t>(c));
  }
  const runtime::Tensor* bias = ctx.input(6);
  std::vector<int64_t> bias_stride{0, 0};  // element strides along M and N
  if (bias) {
    const auto& s = bias->shape();
    const bool ok = bias->dtype() == DataType::kInt32 && s.size() <= 2 &&
                    (s.empty() || s.back() == 1 || s.back() == n) && (s.size() < 2 || s[0] == 1 || s[0] == m);
    if (!ok) {
      return ctx.Fail("input 6 (C) is {}, expected int32 broadcastable to [{},{}]", bias->Describe(), m, n);
    }
    if (!s.empty() && s.back() == n && n != 1) bias_stride[1] = 1;
    if (s.size() == 2 && s[0] == m && m != 1) bias_stride[0] = s[1];
  }
  const runtime::Tensor* ys = ctx.input(7);
  float sy = 1.0f;
  if (ys) {
    VIGIL_ASSIGN_OR_RETURN(sy, ReadScale(ctx, 7, "y_scale"));
  }
  const runtime::Tensor* yz = ctx.input(8);
  if (yz && !ys) return ctx.Fail("input 8 (y_zero_point) is given without input 7 (y_scale)");
  if (yz && (yz->dtype() != a.dtype() || yz->element_count() != 1)) {
    return ctx.Fail("input 8 (y_zero_point) is {}, expected a {} scalar like input 0 (A)", yz->Describe(),
                    ir::DataTypeName(a.dtype()));
  }
  const int32_t zy = yz ? Load(*yz, 0) : 0;
  std::vector<float> scale(static_cast<size_t>(n));
  for (int64_t c = 0; c < n; ++c) {
    scale[c] = alpha * sa * sb[c];
    if (ys) scale[c] /= sy;
  }
  const DataType out_type = yz ? a.dtype() : DataType::kFloat32;
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * y, ctx.Output(0, out_type, {m, n}));
  std::vector<int64_t> acc(static_cast<size_t>(n));
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t c = 0; c < n; ++c) {
      acc[c] = bias ? bias->data<int32_t>()[i * bias_stride[0] + c * bias_stride[1]] : 0;
    }
    for (int64_t j = 0; j < k; ++j) {
      const int64_t qa = Load(a, static_cast<size_t>(trans_a ? j * m + i : i * k + j)) - za;
      if (qa == 0) continue;
      for (int64_t c = 0; c < n; ++c) {
        acc[c] += qa * (Load(b, static_cast<size_t>(trans_b ? c * k + j : j * n + c)) - zb[c]);
      }
    }
    for (int64_t c = 0; c < n; ++c) {
      // The int32 accumulator, as onnxruntime's (wrapping where it overflows).
      const float v = static_cast<float>(static_cast<int32_t>(static_cast<uint32_t>(acc[c]))) * scale[c];
      if (yz) Bytes(*y)[i * n + c] = Saturate(a.dtype(), v, zy);
      else y->data<float>()[i * n + c] = v;
    }
  }
  return Status::Ok();
}

const KernelDef kQuantizedContribKernels[] = {
    {kMsDomain, "QLinearAdd", 1, kLatest, QLinearBinaryKernel<true>},
    {kMsDomain, "QLinearMul", 1, kLatest, QLinearBinaryKernel<false>},
    {kMsDomain, "QLinearSigmoid", 1, kLatest, QLinearSigmoidKernel},
    {kMsDomain, "QLinearLeakyRelu", 1, kLatest, QLinearLeakyReluKernel},
    {kMsDomain, "QLinearGlobalAveragePool", 1, kLatest, QLinearGlobalAveragePoolKernel},
    {kMsDomain, "QLinearAveragePool", 1, kLatest, QLinearAveragePoolKernel},
    {kMsDomain, "QLinearConcat", 1, kLatest, QLinearConcatKernel},
    {kMsDomain, "QLinearSoftmax", 1, kLatest, QLinearSoftmaxKernel},
    {kMsDomain, "QGemm", 1, kLatest, QGemmKernel},
    {kMsDomain, "DynamicQuantizeLSTM", 1, kLatest, DynamicQuantizeLstmKernel},
};

}  // namespace

std::span<const KernelDef> QuantizedContribKernels() { return kQuantizedContribKernels; }

}  // namespace vigil::cpu
