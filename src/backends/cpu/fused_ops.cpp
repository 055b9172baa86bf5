// vigil's fused ops on the CPU, the reference for the CUDA kernels and the
// fallback where a device cannot run them. Each runs the ONNX ops it fuses,
// through their own CPU kernels, so the semantics cannot drift:
//   ai.vigil.MatMulBias(A, W, B[, R]) = Add(Add(MatMul(A, W), B), R)
//   ai.vigil.MatMulBias(A, W, B) with activation = Gelu(Add(MatMul(A, W), B))
//                                                        (ir/fuse_matmul_bias.h)
//   ai.vigil.Gelu(X) = ONNX Gelu-20, approximate="none"   (ir/fuse_gelu.h)
// Attention has no single ONNX op to defer to before opset 23; its kernel is
// the spec's formula as plain loops in double (ir/fuse_attention.h).
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>

#include "backends/cpu/element_codec.h"
#include "ir/fuse_attention.h"
#include "ir/fuse_gelu.h"
#include "backends/cpu/kernel.h"
#include "ir/fuse_matmul_bias.h"
#include "backends/cpu/kernel_families.h"
#include "ir/layout_nhwc.h"  // kVigilDomain
#include "ops/attention_params.h"  // AttentionMaskStrides

namespace vigil::cpu {
namespace {

// Fresh host buffers for the inner kernels' outputs.
class ScratchOutputs : public runtime::OutputAllocator {
 public:
  Result<runtime::Tensor> Allocate(size_t, ir::DataType dtype, std::vector<int64_t> shape) override {
    return runtime::Tensor::Allocate(dtype, std::move(shape));
  }
};

// Runs the default-domain op `op` of `opset` (13: the semantics MatMul and
// Add share with every later opset) on `inputs`; returns its only output.
Result<runtime::Tensor> RunInner(const KernelContext& ctx, const char* op,
                                 std::span<const runtime::Tensor* const> inputs, int opset = 13,
                                 std::vector<ir::Attribute> attributes = {}) {
  const KernelDef* def = FindKernel("", op, opset);
  if (!def) return InternalError("{}: the CPU {} kernel is missing", ops::NodeLabel(ctx.node()), op);
  ir::Node node;
  node.name = ctx.node().name;
  node.op_type = op;
  node.inputs.assign(inputs.size(), "in");
  node.outputs = {"out"};
  node.attributes = std::move(attributes);
  std::vector<runtime::Tensor> outputs(1);
  ScratchOutputs scratch;
  KernelContext inner(node, opset, inputs, outputs, scratch);
  inner.set_optimised(ctx.optimised());  // a reference run stays on reference code throughout
  inner.set_cache(ctx.cache());
  VIGIL_RETURN_IF_ERROR(def->fn(inner));
  return std::move(outputs[0]);
}

Status MatMulBiasKernel(KernelContext& ctx) {
  for (size_t i = 0; i < 3; ++i) {
    if (!ctx.has_input(i)) return ctx.Fail("input {} is missing; MatMulBias needs A, W and B", i);
  }
  VIGIL_ASSIGN_OR_RETURN(ir::MatMulBiasAct act, ir::MatMulBiasActivationOf(ctx.node()));
  if (act != ir::MatMulBiasAct::kNone && ctx.has_input(3)) {
    return ctx.Fail("has an activation and input 3 (R); MatMulBias takes one or the other");
  }
  const runtime::Tensor* product_inputs[] = {ctx.input(0), ctx.input(1)};
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor product, RunInner(ctx, "MatMul", product_inputs));
  const runtime::Tensor* sum_inputs[] = {&product, ctx.input(2)};
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor sum, RunInner(ctx, "Add", sum_inputs));
  if (sum.shape() != product.shape()) {
    return ctx.Fail("input 2 (B) is {}; adding it changes the product's shape {}", ctx.input(2)->Describe(),
                    product.Describe());
  }
  if (ctx.has_input(3)) {
    // The residual is added as its own Add, as in the graph the pass
    // rewrote, but never broadcast: a device adds it as a matrix of Y's shape.
    const runtime::Tensor& r = *ctx.input(3);
    if (r.dtype() != sum.dtype() || r.shape() != sum.shape()) {
      return ctx.Fail("input 3 (R) is {}, expected {} (Y's dtype and shape; R is not broadcast)", r.Describe(),
                      sum.Describe());
    }
    const runtime::Tensor* residual_inputs[] = {&sum, &r};
    VIGIL_ASSIGN_OR_RETURN(sum, RunInner(ctx, "Add", residual_inputs));
  }
  if (act != ir::MatMulBiasAct::kNone) {
    // ONNX Gelu-20 on the sum, exact (erf) or with its tanh approximation.
    const runtime::Tensor* gelu_inputs[] = {&sum};
    std::vector<ir::Attribute> approximate;
    if (act == ir::MatMulBiasAct::kGeluTanh) approximate.push_back(ir::StringAttribute("approximate", "tanh"));
    VIGIL_ASSIGN_OR_RETURN(sum, RunInner(ctx, "Gelu", gelu_inputs, 20, std::move(approximate)));
  }
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * y, ctx.Output(0, sum.dtype(), sum.shape()));
  if (sum.byte_size()) std::memcpy(y->raw_data(), sum.raw_data(), sum.byte_size());
  return Status::Ok();
}

// The ONNX Gelu kernel on this node: it has no attributes, so approximate
// is "none", 0.5 * x * (1 + erf(x / sqrt(2))) computed in float.
Status GeluKernel(KernelContext& ctx) {
  const KernelDef* def = FindKernel("", "Gelu", 20);
  if (!def) return InternalError("{}: the CPU Gelu kernel is missing", ops::NodeLabel(ctx.node()));
  return def->fn(ctx);
}

// Where one head's rows live in QKV and in Y, per layout (in elements), and
// the mask's strides over [B, H, S, S] (0 where it broadcasts).
struct AttentionGeometry {
  int64_t seq = 0, batch = 0, embed = 0, heads = 0, head_dim = 0;
  int64_t in_row = 0, in_batch = 0, out_row = 0, out_batch = 0;
  float scale = 1;
  bool zero_undefined_rows = false;
  std::array<int64_t, 4> mask_strides{};
  std::vector<int64_t> out_shape;
};

Result<AttentionGeometry> AttentionShape(KernelContext& ctx) {
  const ir::Node& n = ctx.node();
  AttentionGeometry g;
  VIGIL_ASSIGN_OR_RETURN(g.heads, ops::RequiredIntAttr(n, "num_heads"));
  if (!ops::HasAttr(n, "scale")) return AttributeError(ctx, "the attribute scale is missing");
  VIGIL_ASSIGN_OR_RETURN(g.scale, ops::FloatAttr(n, "scale", 1.0f));
  VIGIL_ASSIGN_OR_RETURN(std::string layout, ops::StringAttr(n, "layout", "sbe"));
  VIGIL_ASSIGN_OR_RETURN(std::string rows, ops::StringAttr(n, ir::kAttentionUndefinedRows, "nan"));
  if (g.heads < 1) return AttributeError(ctx, "num_heads is {}; it must be at least 1", g.heads);
  if (layout != "sbe" && layout != "bse") return AttributeError(ctx, "layout '{}' is not 'sbe' or 'bse'", layout);
  if (rows != "nan" && rows != "zero") return AttributeError(ctx, "undefined_rows '{}' is not 'nan' or 'zero'", rows);
  g.zero_undefined_rows = rows == "zero";
  const std::vector<int64_t>& d = ctx.input(0)->shape();
  if (d.size() != 3 || d[2] % (3 * g.heads) != 0) {
    return ctx.Fail("input 0 (QKV) is {}; Attention needs rank 3 with the last dim a multiple of 3 * {}",
                    ctx.input(0)->Describe(), g.heads);
  }
  const bool sbe = layout == "sbe";
  g.seq = sbe ? d[0] : d[1];
  g.batch = sbe ? d[1] : d[0];
  g.embed = d[2] / 3;
  g.head_dim = g.embed / g.heads;
  g.in_row = sbe ? g.batch * 3 * g.embed : 3 * g.embed;
  g.in_batch = sbe ? 3 * g.embed : g.seq * 3 * g.embed;
  g.out_row = sbe ? g.batch * g.embed : g.embed;
  g.out_batch = sbe ? g.embed : g.seq * g.embed;
  g.out_shape = {d[0], d[1], g.embed};
  if (ctx.has_input(1)) {
    const runtime::Tensor& m = *ctx.input(1);
    VIGIL_ASSIGN_OR_RETURN(g.mask_strides, ops::AttentionMaskStrides(n, m.shape(), m.dtype(), ctx.input(0)->dtype(),
                                                                     g.batch, g.heads, g.seq, m.Describe()));
  }
  return g;
}

// One (batch, head): softmax(scale * Q K^T + M) V, with the max subtracted.
// A row whose softmax is undefined (no finite positive sum: every score
// -inf, or a NaN or +inf score) is NaN, or 0 with zero_undefined_rows.
template <typename T, typename Store>
void AttendHead(const AttentionGeometry& g, const T* x, const T* mask, int64_t b, int64_t h, Store store) {
  std::vector<double> p(static_cast<size_t>(g.seq)), acc(static_cast<size_t>(g.head_dim));
  const T* q = x + b * g.in_batch + h * g.head_dim;
  const T* k = q + g.embed;
  const T* v = q + 2 * g.embed;
  const std::array<int64_t, 4>& ms = g.mask_strides;
  for (int64_t s = 0; s < g.seq; ++s) {
    double top = -INFINITY;
    bool nan = false;
    for (int64_t t = 0; t < g.seq; ++t) {
      double dot = 0;
      for (int64_t j = 0; j < g.head_dim; ++j) dot += double{q[s * g.in_row + j]} * double{k[t * g.in_row + j]};
      p[t] = double{g.scale} * dot;
      if (mask) p[t] += double{mask[b * ms[0] + h * ms[1] + s * ms[2] + t * ms[3]]};
      nan = nan || std::isnan(p[t]);
      top = std::max(top, p[t]);
    }
    double sum = 0;
    for (double& e : p) sum += (e = std::exp(e - top));
    const bool undefined = nan || !(sum > 0) || !std::isfinite(sum);
    std::fill(acc.begin(), acc.end(), undefined ? (g.zero_undefined_rows ? 0.0 : NAN) : 0.0);
    if (!undefined) {
      for (int64_t t = 0; t < g.seq; ++t) {
        for (int64_t i = 0; i < g.head_dim; ++i) acc[i] += p[t] * double{v[t * g.in_row + i]};
      }
      for (double& a : acc) a /= sum;
    }
    for (int64_t i = 0; i < g.head_dim; ++i) store(b * g.out_batch + s * g.out_row + h * g.head_dim + i, acc[i]);
  }
}

Status AttentionKernel(KernelContext& ctx) {
  VIGIL_RETURN_IF_ERROR(RequireInputs(ctx, 1));
  VIGIL_ASSIGN_OR_RETURN(AttentionGeometry g, AttentionShape(ctx));
  return DispatchFloat(ctx, 0, [&]<ir::DataType D>() -> Status {
    using C = ElementCodec<D>;
    using S = typename C::Storage;
    std::vector<typename C::Compute> scratch, mask_scratch;
    VIGIL_ASSIGN_OR_RETURN(const typename C::Compute* x, ComputeView<D>(ctx, *ctx.input(0), scratch));
    const typename C::Compute* mask = nullptr;
    if (ctx.has_input(1)) {
      VIGIL_ASSIGN_OR_RETURN(mask, ComputeView<D>(ctx, *ctx.input(1), mask_scratch));
    }
    VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * y, ctx.Output(0, ctx.input(0)->dtype(), g.out_shape));
    S* out = static_cast<S*>(y->raw_data());
    auto store = [&](int64_t i, double v) { out[i] = C::Store(static_cast<typename C::Compute>(v)); };
    for (int64_t b = 0; b < g.batch; ++b) {
      for (int64_t h = 0; h < g.heads; ++h) AttendHead(g, x, mask, b, h, store);
    }
    return Status::Ok();
  });
}

const KernelDef kFusedKernels[] = {
    {ir::kVigilDomain, ir::kMatMulBiasOp, 1, kLatest, MatMulBiasKernel},
    {ir::kVigilDomain, ir::kGeluOp, 1, kLatest, GeluKernel},
    {ir::kVigilDomain, ir::kAttentionOp, 1, kLatest, AttentionKernel},
};

}  // namespace

std::span<const KernelDef> FusedKernels() { return kFusedKernels; }

}  // namespace vigil::cpu
