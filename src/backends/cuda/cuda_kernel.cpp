#include "backends/cuda/cuda_kernel.h"
#include "backends/cuda/cuda_kernel_list.h"
#include "backends/cuda/attention.h"
#include "backends/cuda/gelu.h"
#include "backends/cuda/onnx_attention.h"
#include "backends/cuda/pool_nhwc.h"
#include "backends/cuda/quantize_linear.h"
#include "backends/cuda/softmax.h"
#include "backends/cuda/vision.h"

#include <algorithm>
#include <array>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "ops/schema.h"
#include "ops/shape_helpers.h"

namespace vigil::cuda {

namespace {

// A device block of at least `bytes` on `stream` (grows; never shrinks).
Result<void*> GrowBlock(void*& block, size_t& block_bytes, std::shared_ptr<void>& owner, size_t bytes,
                        bool capturing, cudaStream_t stream, const char* what) {
  if (bytes <= block_bytes) return block;
  if (capturing) {
    return UnsupportedError("the {} would grow from {} to {} bytes while recording a CUDA graph", what, block_bytes,
                            bytes)
        .WithCause("no normal run at these shapes preceded the recording");
  }
  // The old block goes when its last recorded graph does.
  owner.reset();
  block = nullptr;
  block_bytes = 0;
  size_t rounded = (bytes + (1 << 20) - 1) / (1 << 20) * (1 << 20);
  void* p = nullptr;
  VIGIL_CUDA_CALL(cudaMallocAsync(&p, rounded, stream));
  owner = std::shared_ptr<void>(p, [stream](void* q) { cudaFreeAsync(q, stream); });
  block = p;
  block_bytes = rounded;
  return block;
}

}  // namespace

Result<void*> StreamContext::Workspace(size_t bytes) {
  return GrowBlock(workspace, workspace_bytes, workspace_owner, bytes, capture != nullptr, stream, "workspace");
}

Result<void*> StreamContext::OperandScratch(size_t bytes) {
  return GrowBlock(operands, operands_bytes, operands_owner, bytes, capture != nullptr, stream, "operand scratch");
}

Status StreamContext::RefuseWhileRecording(const ir::Node& node, const char* what) const {
  if (!capture) return Status::Ok();
  return UnsupportedError("{}: {}, which a recorded CUDA graph cannot hold", ops::NodeLabel(node), what);
}

namespace {

// Where the plan does not know an output's shape (its inputs' shapes are
// known only at run time: the outputs of a Loop, axes given as a computed
// input), the op's shape inference runs again on the actual inputs: their
// shapes, and the values of those the kernel reads on the host.
Result<ir::TypeInfo> InferAtRunTime(const ir::Node& node, int64_t opset,
                                    std::span<const runtime::Tensor* const> inputs, size_t i) {
  const ops::OpSchema* schema = ops::FindSchema(node.domain, node.op_type, opset);
  if (!schema) return InternalError("{}: no schema at opset {} to infer its output shapes", ops::NodeLabel(node), opset);
  std::vector<ir::TypeInfo> types(inputs.size());
  std::vector<ir::Tensor> values(inputs.size());
  std::vector<const ir::TypeInfo*> type_of(inputs.size(), nullptr);
  std::vector<const ir::Tensor*> value_of(inputs.size(), nullptr);
  for (size_t k = 0; k < inputs.size(); ++k) {
    if (!inputs[k]) continue;
    types[k] = ops::TensorType(inputs[k]->dtype(), inputs[k]->shape());
    type_of[k] = &types[k];
    if (inputs[k]->on_host() && k < node.inputs.size()) {
      values[k] = inputs[k]->AsConstant(node.inputs[k]);
      value_of[k] = &values[k];
    }
  }
  int symbols = 0;
  ops::InferenceContext ctx(node, opset, type_of, value_of, &symbols);
  VIGIL_RETURN_IF_ERROR(schema->infer(ctx));
  if (i >= ctx.outputs().size() || !ops::KnownDims(&ctx.outputs()[i]) ||
      ctx.outputs()[i].elem_type == ir::DataType::kUndefined) {
    return InternalError("{}: the shape of output {} is known neither at plan time nor from the inputs at run time, "
                         "and the CUDA kernel needs it",
                         ops::NodeLabel(node), i);
  }
  return ctx.outputs()[i];
}

}  // namespace

Result<runtime::Tensor*> CudaKernelContext::Output(size_t i) {
  const ir::TypeInfo* planned = allocator_.PlannedType(i);
  if (planned) return Output(i, planned->elem_type, *ops::KnownDims(planned));
  VIGIL_ASSIGN_OR_RETURN(ir::TypeInfo inferred, InferAtRunTime(node_, opset_, inputs_, i));
  return Output(i, inferred.elem_type, *ops::KnownDims(&inferred));
}

Result<runtime::Tensor*> CudaKernelContext::Output(size_t i, ir::DataType dtype, std::vector<int64_t> shape) {
  if (i >= outputs_.size()) return InternalError("{}: no output {}", ops::NodeLabel(node_), i);
  VIGIL_ASSIGN_OR_RETURN(outputs_[i], allocator_.Allocate(i, dtype, std::move(shape)));
  if (outputs_[i].on_host()) return InternalError("{}: output {} was given host memory", ops::NodeLabel(node_), i);
  return &outputs_[i];
}

const std::vector<int64_t>* CudaKernelContext::PlannedDims(size_t i) const {
  const ir::TypeInfo* planned = allocator_.PlannedType(i);
  std::optional<std::vector<int64_t>> dims;
  if (planned) {
    dims = ops::KnownDims(planned);
  } else if (auto inferred = InferAtRunTime(node_, opset_, inputs_, i); inferred.ok()) {
    dims = ops::KnownDims(&inferred.value());
  }
  if (!dims) return nullptr;
  planned_dims_.resize(std::max(planned_dims_.size(), i + 1));
  planned_dims_[i] = *dims;
  return &planned_dims_[i];
}

Status CudaKernelContext::SetOutput(size_t i, runtime::Tensor tensor) {
  if (i >= outputs_.size()) return InternalError("{}: no output {}", ops::NodeLabel(node_), i);
  outputs_[i] = std::move(tensor);
  return Status::Ok();
}

namespace {

using Family = std::span<const CudaKernelDef> (*)();
constexpr std::array<Family, 24> kFamilies = {
      ElementwiseCudaKernels,   DataMovementCudaKernels, DataMovementSpatialCudaKernels, ResizeCudaKernels,
      ReductionCudaKernels,     NormalizationCudaKernels, PoolCudaKernels,               ConvCudaKernels,
      MatMulCudaKernels,        ViewCudaKernels,          RecurrentCudaKernels,          ShapeSourceCudaKernels,
      FusedCudaKernels,         FaultInjectionCudaKernels, SoftmaxCudaKernels,            AttentionCudaKernels,
      PoolNhwcCudaKernels,      OnnxAttentionCudaKernels, RotaryEmbeddingCudaKernels, VisionCudaKernels,
      DetectionCudaKernels,     QuantizeLinearCudaKernels, Int8ConvCudaKernels,
      Int8MatMulCudaKernels};

}  // namespace

// Called for every node of a run that is not a CUDA-graph replay
// (CudaBackend::Run) and several times per node while a session plans: the
// kernels of each op name, in family order, found by one hash instead of a
// scan comparing every entry's name (as the CPU backend's FindKernel).
const CudaKernelDef* FindCudaKernel(std::string_view domain, std::string_view op, int64_t opset) {
  static const std::unordered_map<std::string_view, std::vector<const CudaKernelDef*>> kByOp = [] {
    std::unordered_map<std::string_view, std::vector<const CudaKernelDef*>> m;
    for (Family family : kFamilies) {
      for (const CudaKernelDef& def : family()) m[def.op].push_back(&def);
    }
    return m;
  }();
  const std::string_view d = domain == "ai.onnx" ? std::string_view() : domain;
  const auto it = kByOp.find(op);
  if (it == kByOp.end()) return nullptr;
  for (const CudaKernelDef* def : it->second) {
    if (d == def->domain && opset >= def->since_version && opset <= def->until_version) return def;
  }
  return nullptr;
}

std::vector<const CudaKernelDef*> AllCudaKernels() {
  std::vector<const CudaKernelDef*> all;
  for (Family family : kFamilies) {
    for (const CudaKernelDef& def : family()) all.push_back(&def);
  }
  return all;
}

bool IsCudaFloat(ir::DataType t) {
  return t == ir::DataType::kFloat32 || t == ir::DataType::kFloat16 || t == ir::DataType::kBfloat16;
}

ir::DataType InputDtype(const runtime::NodeTypes& types, size_t i) {
  if (i >= types.inputs.size() || !types.inputs[i] || types.inputs[i]->kind != ir::TypeInfo::Kind::kTensor) {
    return ir::DataType::kUndefined;
  }
  return types.inputs[i]->elem_type;
}

bool AllInputsFloat(const ir::Node& node, const runtime::NodeTypes& types, std::string* why_not, uint32_t skip_mask) {
  ir::DataType first = ir::DataType::kUndefined;
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    if (node.inputs[i].empty() || (i < 32 && (skip_mask >> i) & 1)) continue;
    ir::DataType t = InputDtype(types, i);
    if (!IsCudaFloat(t)) {
      if (why_not) {
        *why_not = t == ir::DataType::kUndefined ? fmt::format("the dtype of input {} is not known at load time", i)
                                                 : fmt::format("dtype {} of input {}", ir::DataTypeName(t), i);
      }
      return false;
    }
    if (first == ir::DataType::kUndefined) first = t;
    if (t != first) {
      if (why_not) *why_not = fmt::format("inputs of mixed dtypes ({} and {})", ir::DataTypeName(first), ir::DataTypeName(t));
      return false;
    }
  }
  return true;
}

bool FixedSizeInput(const runtime::NodeTypes& types, size_t i, std::string* why_not) {
  ir::DataType t = InputDtype(types, i);
  int bits = t == ir::DataType::kUndefined ? 0 : ir::DataTypeBits(t);
  bool ok = bits == 8 || bits == 16 || bits == 32 || bits == 64;
  if (!ok && why_not) {
    *why_not = t == ir::DataType::kUndefined ? fmt::format("the dtype of input {} is not known at load time", i)
                                             : fmt::format("dtype {} of input {}", ir::DataTypeName(t), i);
  }
  return ok;
}

}  // namespace vigil::cuda
