// vigil's int8 ops on the CPU (described in ir/fuse_qdq.h): QConv,
// QConvNhwc, QMatMul and QAdd. The reference for the CUDA kernels, and the fallback
// where a device cannot run a node. Plain loops: exact int32 accumulation,
// then the float32 epilogue the op defines.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "backends/cpu/kernel.h"
#include "backends/cpu/kernel_families.h"
#include "ir/fuse_qdq.h"
#include "ir/layout_nhwc.h"  // kVigilDomain, kConvNhwcRelu
#include "ops/attributes.h"
#include "ops/conv_geometry.h"

namespace vigil::cpu {
namespace {

int8_t SaturateInt8(float v) {
  // NaN (a NaN scale) has no quantized value; it maps to 0 as QuantizeLinear maps it to the zero point.
  if (std::isnan(v)) return 0;
  const float r = std::nearbyint(v);
  return static_cast<int8_t>(std::min(127.0f, std::max(-128.0f, r)));
}

// The epilogue of QConv and QMatMul: the int32 accumulator as a float32 (as
// the device's engines convert it), times the scale, plus the bias, each
// rounded to float32, then [relu and] saturated.
int8_t Requantize(int64_t acc, float scale, float bias, bool relu) {
  const auto acc32 = static_cast<int32_t>(
      std::clamp<int64_t>(acc, std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max()));
  volatile float product = static_cast<float>(acc32) * scale;  // volatile: no fused multiply-add
  float v = product + bias;
  if (relu) v = std::max(v, 0.0f);
  return SaturateInt8(v);
}

Result<bool> ReluOf(const KernelContext& ctx) {
  VIGIL_ASSIGN_OR_RETURN(std::string act, ops::StringAttr(ctx.node(), "activation", ""));
  if (act.empty()) return false;
  if (act == ir::kConvNhwcRelu) return true;
  return ctx.Fail("activation is '{}', expected '' or 'Relu'", act);
}

Status RequireDtype(const KernelContext& ctx, size_t i, ir::DataType want) {
  const runtime::Tensor* t = ctx.input(i);
  if (!t) return ctx.Fail("input {} is required", i);
  if (t->dtype() != want) {
    return ctx.Fail("input {} is {}, expected {}", i, t->Describe(), ir::DataTypeName(want));
  }
  return Status::Ok();
}

// QConv (nhwc false: X [N, C, H, W], W [M, C, kH, kW]) and QConvNhwc (X
// [N, H, W, C], W [M, kH, kW, C]).
Status QConvKernel(KernelContext& ctx, bool nhwc) {
  VIGIL_RETURN_IF_ERROR(RequireDtype(ctx, 0, ir::DataType::kInt8));
  VIGIL_RETURN_IF_ERROR(RequireDtype(ctx, 1, ir::DataType::kInt8));
  VIGIL_RETURN_IF_ERROR(RequireDtype(ctx, 2, ir::DataType::kFloat32));
  VIGIL_RETURN_IF_ERROR(RequireDtype(ctx, 3, ir::DataType::kFloat32));
  VIGIL_ASSIGN_OR_RETURN(bool relu, ReluOf(ctx));
  VIGIL_ASSIGN_OR_RETURN(int64_t group, ops::IntAttr(ctx.node(), "group", 1));
  if (group != 1) return ctx.Unsupported("group {} (group 1 only)", group);
  const runtime::Tensor& x = *ctx.input(0);
  const runtime::Tensor& w = *ctx.input(1);
  const runtime::Tensor& scale = *ctx.input(2);
  const runtime::Tensor& bias = *ctx.input(3);
  if (x.rank() != 4 || w.rank() != 4) return ctx.Fail("X is {} and W {}; 2D convolutions only", x.Describe(), w.Describe());
  const size_t cd = nhwc ? 3 : 1, hd = nhwc ? 1 : 2;
  const int64_t n = x.dim(0), c = x.dim(cd), h = x.dim(hd), wi = x.dim(hd + 1);
  const int64_t m = w.dim(0), kh = w.dim(hd), kw = w.dim(hd + 1);
  if (w.dim(cd) != c) return ctx.Fail("X has {} channels, W expects {}", c, w.dim(cd));
  if (scale.element_count() != static_cast<size_t>(m) || bias.element_count() != static_cast<size_t>(m)) {
    return ctx.Fail("scale is {} and bias {}, expected {} values each", scale.Describe(), bias.Describe(), m);
  }
  VIGIL_ASSIGN_OR_RETURN(ops::WindowAttrs a, ops::ReadWindowAttrs(ctx.node(), 2, std::vector<int64_t>{kh, kw}, {}));
  VIGIL_ASSIGN_OR_RETURN(ops::WindowExtent ey, ops::ForwardExtent(ctx.node(), a, 0, h));
  VIGIL_ASSIGN_OR_RETURN(ops::WindowExtent ex, ops::ForwardExtent(ctx.node(), a, 1, wi));
  const int64_t oh = ey.output, ow = ex.output;
  std::vector<int64_t> shape = nhwc ? std::vector<int64_t>{n, oh, ow, m} : std::vector<int64_t>{n, m, oh, ow};
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * y, ctx.Output(0, ir::DataType::kInt8, std::move(shape)));
  const int8_t* xp = x.data<int8_t>();
  const int8_t* wp = w.data<int8_t>();
  const float* sp = scale.data<float>();
  const float* bp = bias.data<float>();
  int8_t* yp = y->data<int8_t>();
  // Element strides of X [n, c, h, w] and W [m, c, i, j] in either layout.
  const int64_t xs_n = c * h * wi, xs_c = nhwc ? 1 : h * wi, xs_h = nhwc ? wi * c : wi, xs_w = nhwc ? c : 1;
  const int64_t ws_m = c * kh * kw, ws_c = nhwc ? 1 : kh * kw, ws_i = nhwc ? kw * c : kw, ws_j = nhwc ? c : 1;
  for (int64_t b = 0; b < n; ++b) {
    for (int64_t o = 0; o < m; ++o) {
      for (int64_t p = 0; p < oh; ++p) {
        for (int64_t q = 0; q < ow; ++q) {
          int64_t acc = 0;
          for (int64_t i = 0; i < kh; ++i) {
            const int64_t yy = p * a.strides[0] - ey.pad_begin + i * a.dilations[0];
            if (yy < 0 || yy >= h) continue;
            for (int64_t j = 0; j < kw; ++j) {
              const int64_t xx = q * a.strides[1] - ex.pad_begin + j * a.dilations[1];
              if (xx < 0 || xx >= wi) continue;
              const int8_t* xr = xp + b * xs_n + yy * xs_h + xx * xs_w;
              const int8_t* wr = wp + o * ws_m + i * ws_i + j * ws_j;
              for (int64_t k = 0; k < c; ++k) acc += int64_t{xr[k * xs_c]} * int64_t{wr[k * ws_c]};
            }
          }
          const int64_t at = nhwc ? ((b * oh + p) * ow + q) * m + o : ((b * m + o) * oh + p) * ow + q;
          yp[at] = Requantize(acc, sp[o], bp[o], relu);
        }
      }
    }
  }
  return Status::Ok();
}

Status QConvNchw(KernelContext& ctx) { return QConvKernel(ctx, false); }
Status QConvNhwc(KernelContext& ctx) { return QConvKernel(ctx, true); }

// QMatMul: A [..., K] times W [N, K] transposed, per row of A.
Status QMatMul(KernelContext& ctx) {
  for (size_t i = 0; i < 4; ++i) {
    VIGIL_RETURN_IF_ERROR(RequireDtype(ctx, i, i < 2 ? ir::DataType::kInt8 : ir::DataType::kFloat32));
  }
  VIGIL_ASSIGN_OR_RETURN(bool relu, ReluOf(ctx));
  const runtime::Tensor& a = *ctx.input(0);
  const runtime::Tensor& w = *ctx.input(1);
  const runtime::Tensor& scale = *ctx.input(2);
  const runtime::Tensor& bias = *ctx.input(3);
  if (a.rank() < 1 || w.rank() != 2) return ctx.Fail("A is {} and W {}; W must be [N, K]", a.Describe(), w.Describe());
  const int64_t k = a.dim(a.rank() - 1), n = w.dim(0);
  if (w.dim(1) != k) return ctx.Fail("A is {} and W {}: A's last dim must equal W's second", a.Describe(), w.Describe());
  if (scale.element_count() != static_cast<size_t>(n) || bias.element_count() != static_cast<size_t>(n)) {
    return ctx.Fail("scale is {} and bias {}, expected {} values each", scale.Describe(), bias.Describe(), n);
  }
  std::vector<int64_t> shape = a.shape();
  shape.back() = n;
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * y, ctx.Output(0, ir::DataType::kInt8, std::move(shape)));
  const int64_t rows = k == 0 ? static_cast<int64_t>(y->element_count()) / std::max<int64_t>(n, 1)
                              : static_cast<int64_t>(a.element_count()) / k;
  const int8_t* ap = a.data<int8_t>();
  const int8_t* wp = w.data<int8_t>();
  const float* sp = scale.data<float>();
  const float* bp = bias.data<float>();
  int8_t* yp = y->data<int8_t>();
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < n; ++c) {
      int64_t acc = 0;
      for (int64_t i = 0; i < k; ++i) acc += int64_t{ap[r * k + i]} * int64_t{wp[c * k + i]};
      yp[r * n + c] = Requantize(acc, sp[c], bp[c], relu);
    }
  }
  return Status::Ok();
}

Result<float> ScalarScale(const KernelContext& ctx, size_t i) {
  VIGIL_RETURN_IF_ERROR(RequireDtype(ctx, i, ir::DataType::kFloat32));
  if (ctx.input(i)->element_count() != 1) return ctx.Fail("input {} is {}, expected one value", i, ctx.input(i)->Describe());
  return ctx.input(i)->data<float>()[0];
}

// The unfused chain's float32 steps, each rounded (ir/fuse_qdq.h).
Status QAdd(KernelContext& ctx) {
  VIGIL_RETURN_IF_ERROR(RequireDtype(ctx, 0, ir::DataType::kInt8));
  VIGIL_RETURN_IF_ERROR(RequireDtype(ctx, 2, ir::DataType::kInt8));
  VIGIL_ASSIGN_OR_RETURN(float sa, ScalarScale(ctx, 1));
  VIGIL_ASSIGN_OR_RETURN(float sb, ScalarScale(ctx, 3));
  VIGIL_ASSIGN_OR_RETURN(float sy, ScalarScale(ctx, 4));
  VIGIL_ASSIGN_OR_RETURN(bool relu, ReluOf(ctx));
  const runtime::Tensor& a = *ctx.input(0);
  const runtime::Tensor& b = *ctx.input(2);
  if (a.shape() != b.shape()) return ctx.Fail("A is {} and B is {}; QAdd does not broadcast", a.Describe(), b.Describe());
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * y, ctx.Output(0, ir::DataType::kInt8, a.shape()));
  const int8_t* ap = a.data<int8_t>();
  const int8_t* bp = b.data<int8_t>();
  int8_t* yp = y->data<int8_t>();
  for (size_t i = 0; i < a.element_count(); ++i) {
    volatile float fa = static_cast<float>(ap[i]) * sa;  // volatile: no contraction into a fused multiply-add
    volatile float fb = static_cast<float>(bp[i]) * sb;
    volatile float sum = fa + fb;
    float v = sum / sy;
    yp[i] = SaturateInt8(v);
    if (relu) yp[i] = std::max<int8_t>(yp[i], 0);
  }
  return Status::Ok();
}

const KernelDef kQdqKernels[] = {
    {ir::kVigilDomain, ir::kQConvOp, 1, kLatest, QConvNchw},
    {ir::kVigilDomain, ir::kQConvNhwcOp, 1, kLatest, QConvNhwc},
    {ir::kVigilDomain, ir::kQMatMulOp, 1, kLatest, QMatMul},
    {ir::kVigilDomain, ir::kQAddOp, 1, kLatest, QAdd},
};

}  // namespace

std::span<const KernelDef> QdqKernels() { return kQdqKernels; }

}  // namespace vigil::cpu
