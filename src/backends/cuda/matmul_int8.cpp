// ai.vigil.QMatMul (ir/fuse_qdq.h) on cuBLASLt's int8 engines: A's rows
// times W [N, K] transposed, accumulated exactly in int32 into the
// workspace, then x scale[n] + bias[n] (float32), Relu when asked, and the
// conversion to int8 (round half to even, saturated) by our kernel
// (quantize_linear.h), the epilogue the CPU reference computes bit for bit.
#include <optional>
#include <string>

#include <fmt/format.h>

#include "backends/cuda/cuda_kernel.h"
#include "backends/cuda/matmul_cublaslt.h"
#include "backends/cuda/quantize_linear.h"
#include "ir/fuse_qdq.h"
#include "ir/layout_nhwc.h"  // kVigilDomain, kConvNhwcRelu
#include "ops/attributes.h"

namespace vigil::cuda {
namespace {

// cuBLASLt's int8 tensor-core kernels want K and the leading dimensions in
// multiples of 4 (the int32 result's is N).
constexpr int64_t kInt8Multiple = 4;

Status QMatMul(CudaKernelContext& ctx) {
  for (size_t i = 0; i < 4; ++i) {
    if (!ctx.has_input(i)) return ctx.Fail("input {} is missing; QMatMul needs A, W, scale and bias", i);
  }
  const runtime::Tensor& a = *ctx.input(0);
  const runtime::Tensor& w = *ctx.input(1);
  const runtime::Tensor& scale = *ctx.input(2);
  const runtime::Tensor& bias = *ctx.input(3);
  if (a.dtype() != ir::DataType::kInt8 || w.dtype() != ir::DataType::kInt8 ||
      scale.dtype() != ir::DataType::kFloat32 || bias.dtype() != ir::DataType::kFloat32) {
    return ctx.Fail("A {} and W {} must be int8, scale {} and bias {} float32", a.Describe(), w.Describe(),
                    scale.Describe(), bias.Describe());
  }
  if (a.rank() < 1 || w.rank() != 2) return ctx.Fail("A is {} and W {}; W must be [N, K]", a.Describe(), w.Describe());
  const int64_t k = a.dim(a.rank() - 1), n = w.dim(0);
  if (w.dim(1) != k) return ctx.Fail("A is {} and W {}: A's last dim must equal W's second", a.Describe(), w.Describe());
  if (scale.element_count() != static_cast<uint64_t>(n) || bias.element_count() != static_cast<uint64_t>(n)) {
    return ctx.Fail("scale is {} and bias {}, expected {} values each", scale.Describe(), bias.Describe(), n);
  }
  VIGIL_ASSIGN_OR_RETURN(std::string act, ops::StringAttr(ctx.node(), "activation", ""));
  if (!act.empty() && act != ir::kConvNhwcRelu) return ctx.Fail("activation is '{}', expected '' or 'Relu'", act);
  std::vector<int64_t> shape = a.shape();
  shape.back() = n;
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * y, ctx.Output(0, ir::DataType::kInt8, shape));
  if (y->element_count() == 0) return Status::Ok();
  const int64_t rows = static_cast<int64_t>(y->element_count()) / n;
  // The int32 sums go to the workspace past cuBLASLt's own part.
  const size_t acc_bytes = static_cast<size_t>(rows * n) * sizeof(int32_t);
  VIGIL_ASSIGN_OR_RETURN(void* space, ctx.stream_context().Workspace(kMaxLtWorkspace + acc_bytes));
  auto* acc = reinterpret_cast<int32_t*>(static_cast<uint8_t*>(space) + kMaxLtWorkspace);
  VIGIL_RETURN_IF_ERROR(RowMajorGemmInt8(ctx, rows, n, k, static_cast<const int8_t*>(a.raw_data()),
                                         static_cast<const int8_t*>(w.raw_data()), acc));
  return LaunchRequantizeRows(acc, false, scale.data<float>(), bias.data<float>(),
                              static_cast<int8_t*>(y->raw_data()), rows, n, !act.empty(), ctx.stream());
}

bool IsType(const ir::TypeInfo* t, ir::DataType d) {
  return !t || (t->kind == ir::TypeInfo::Kind::kTensor && t->elem_type == d);
}

bool QMatMulSupported(const ir::Node& node, const runtime::NodeTypes& types, std::string* why_not) {
  if (!Int8ProductTypesSupported(node, types, "QMatMul", why_not)) return false;
  auto in = [&](size_t i) { return i < types.inputs.size() ? types.inputs[i] : nullptr; };
  // W [N, K]: both known, in multiples of 4.
  const ir::TypeInfo* w = in(1);
  auto dim = [&](size_t i) -> std::optional<int64_t> {
    if (!w || !w->shape.rank_known || w->shape.dims.size() != 2 || !w->shape.dims[i].is_known()) return std::nullopt;
    return *w->shape.dims[i].value;
  };
  const std::optional<int64_t> n = dim(0), k = dim(1);
  if (!n || !k || *n % kInt8Multiple != 0 || *k % kInt8Multiple != 0) {
    if (why_not) {
      auto text = [](const std::optional<int64_t>& v) { return v ? fmt::format("{}", *v) : std::string("unknown"); };
      *why_not = fmt::format("K = {} and N = {}: cuBLASLt's int8 products need both in multiples of {}", text(k),
                             text(n), kInt8Multiple);
    }
    return false;
  }
  return true;
}

const CudaKernelDef kInt8MatMulKernels[] = {
    {ir::kVigilDomain, ir::kQMatMulOp, 1, kLatest, QMatMul, QMatMulSupported, 0},
};

}  // namespace

bool Int8ProductTypesSupported(const ir::Node& node, const runtime::NodeTypes& types, const char* op,
                               std::string* why_not) {
  auto in = [&](size_t i) { return i < types.inputs.size() ? types.inputs[i] : nullptr; };
  if (!IsType(in(0), ir::DataType::kInt8) || !IsType(in(1), ir::DataType::kInt8) ||
      !IsType(in(2), ir::DataType::kFloat32) || !IsType(in(3), ir::DataType::kFloat32)) {
    if (why_not) *why_not = fmt::format("{} takes int8 inputs 0 and 1, float32 scale and bias", op);
    return false;
  }
  Result<std::string> act = ops::StringAttr(node, "activation", "");
  if (!act.ok() || (!act->empty() && *act != ir::kConvNhwcRelu)) {
    if (why_not) *why_not = "activation other than Relu";
    return false;
  }
  return true;
}

std::span<const CudaKernelDef> Int8MatMulCudaKernels() { return kInt8MatMulKernels; }

}  // namespace vigil::cuda
