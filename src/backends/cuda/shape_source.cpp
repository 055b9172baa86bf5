// Ops that make a tensor from a shape: Shape and Size (which read only the
// input's dims, never its data), ConstantOfShape, and Range over integers
// (a transformer's position ids, from a Shape; float Ranges stay on the
// CPU). With concrete input
// shapes these are usually folded at plan time and never run; the backend
// must still claim them, or a model with a symbolic batch dim could not be
// placed on the GPU as a whole.
#include <algorithm>
#include <cstring>

#include "backends/cuda/cuda_kernel.h"
#include "backends/cuda/epilogue.h"
#include "ops/op_params.h"
#include "ops/shape_helpers.h"

namespace vigil::cuda {
namespace {

// Copies small host values into a device output (pageable memory: the call
// returns once the bytes are staged, so `values` may go away after it).
Status WriteValues(CudaKernelContext& ctx, ir::DataType dtype, std::vector<int64_t> shape,
                   const std::vector<int64_t>& values) {
  VIGIL_RETURN_IF_ERROR(ctx.stream_context().RefuseWhileRecording(ctx.node(), "it copies host values to the device"));
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * out, ctx.Output(0, dtype, std::move(shape)));
  if (out->byte_size() != values.size() * sizeof(int64_t)) {
    return InternalError("{}: {} values for {}", ops::NodeLabel(ctx.node()), values.size(), out->Describe());
  }
  if (!values.empty()) {
    VIGIL_CUDA_CALL(cudaMemcpyAsync(out->raw_data(), values.data(), out->byte_size(), cudaMemcpyHostToDevice,
                                    ctx.stream()));
  }
  return Status::Ok();
}

Status ShapeOp(CudaKernelContext& ctx) {
  const std::vector<int64_t>& dims = ctx.input(0)->shape();
  int64_t rank = static_cast<int64_t>(dims.size());
  VIGIL_ASSIGN_OR_RETURN(ops::ShapeRange range, ops::ResolveShapeRange(ctx.node(), ctx.opset(), rank));
  return WriteValues(ctx, ir::DataType::kInt64, {range.end - range.start},
                     {dims.begin() + range.start, dims.begin() + range.end});
}

Status SizeOp(CudaKernelContext& ctx) {
  return WriteValues(ctx, ir::DataType::kInt64, {}, {static_cast<int64_t>(ctx.input(0)->element_count())});
}

Status ConstantOfShapeOp(CudaKernelContext& ctx) {
  const runtime::Tensor& shape_in = *ctx.input(0);
  std::vector<int64_t> shape(shape_in.element_count());
  for (size_t i = 0; i < shape.size(); ++i) {
    shape[i] = shape_in.dtype() == ir::DataType::kInt32 ? shape_in.data<int32_t>()[i] : shape_in.data<int64_t>()[i];
    if (shape[i] < 0) return ctx.Fail("shape has a negative dim {}", shape[i]);
  }
  VIGIL_ASSIGN_OR_RETURN(const ir::Tensor* value, ops::TensorAttr(ctx.node(), "value"));
  ir::DataType dtype = value ? value->dtype : ir::DataType::kFloat32;
  size_t eb = static_cast<size_t>(ir::DataTypeBits(dtype) / 8);
  std::vector<uint8_t> element(eb, 0);
  if (value) {
    if (value->ElementCount().value_or(0) != 1 || value->bytes.size() < eb) {
      return ctx.Fail("attribute 'value' must hold exactly one element");
    }
    std::memcpy(element.data(), value->bytes.data(), eb);
  }
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * out, ctx.Output(0, dtype, shape));
  if (out->element_count() == 0) return Status::Ok();
  if (std::all_of(element.begin(), element.end(), [](uint8_t b) { return b == 0; })) {
    VIGIL_CUDA_CALL(cudaMemsetAsync(out->raw_data(), 0, out->byte_size(), ctx.stream()));
    return Status::Ok();
  }
  // One element on the device, broadcast to the output (stream-ordered, so
  // freeing it right after the launch is safe).
  VIGIL_RETURN_IF_ERROR(ctx.stream_context().RefuseWhileRecording(ctx.node(), "it copies a host value to the device"));
  void* one = nullptr;
  VIGIL_CUDA_CALL(cudaMallocAsync(&one, eb, ctx.stream()));
  Status s = [&]() -> Status {
    VIGIL_CUDA_CALL(cudaMemcpyAsync(one, element.data(), eb, cudaMemcpyHostToDevice, ctx.stream()));
    return LaunchBroadcastCopy(out->raw_data(), one, dtype, {}, out->shape(), ctx.stream());
  }();
  cudaFreeAsync(one, ctx.stream());
  return s;
}

// Range(start, limit, delta) over int32 or int64, its scalars read on the
// host: max(ceil((limit - start) / delta), 0) values start + i * delta,
// exactly as the CPU kernel computes them.
Status RangeOp(CudaKernelContext& ctx) {
  const ir::DataType dtype = ctx.input(0)->dtype();
  int64_t v[3];
  for (size_t i = 0; i < 3; ++i) {
    const runtime::Tensor* t = ctx.input(i);
    if (!t || t->dtype() != dtype || t->element_count() != 1) {
      return ctx.Fail("start, limit and delta must be scalars of one dtype; input {} is {}", i,
                      t ? t->Describe() : std::string("missing"));
    }
    v[i] = dtype == ir::DataType::kInt32 ? t->data<int32_t>()[0] : t->data<int64_t>()[0];
  }
  const int64_t start = v[0], limit = v[1], delta = v[2];
  if (delta == 0) return ctx.Fail("delta is 0");
  const __int128 span = static_cast<__int128>(limit) - start;
  const __int128 n = span / delta + ((span % delta != 0 && ((span > 0) == (delta > 0))) ? 1 : 0);
  if (n > (__int128{1} << 31)) return ctx.Unsupported("a Range of {} elements (at most 2^31 here)", static_cast<int64_t>(n));
  std::vector<int64_t> values(static_cast<size_t>(std::max<__int128>(n, 0)));
  for (size_t i = 0; i < values.size(); ++i) values[i] = start + static_cast<int64_t>(i) * delta;
  if (dtype == ir::DataType::kInt64) return WriteValues(ctx, dtype, {static_cast<int64_t>(values.size())}, values);
  // int32: narrowed on the host (every value lies within [start, limit), so within int32).
  VIGIL_RETURN_IF_ERROR(ctx.stream_context().RefuseWhileRecording(ctx.node(), "it copies host values to the device"));
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * out, ctx.Output(0, dtype, {static_cast<int64_t>(values.size())}));
  std::vector<int32_t> narrow(values.begin(), values.end());
  if (!narrow.empty()) {
    VIGIL_CUDA_CALL(cudaMemcpyAsync(out->raw_data(), narrow.data(), out->byte_size(), cudaMemcpyHostToDevice,
                                    ctx.stream()));
  }
  return Status::Ok();
}

bool IntegerRange(const ir::Node& node, const runtime::NodeTypes& types, std::string* why_not) {
  const ir::DataType t = InputDtype(types, 0);
  if (t != ir::DataType::kInt32 && t != ir::DataType::kInt64) {
    if (why_not) *why_not = fmt::format("a Range of {} (int32 and int64 run here)", ir::DataTypeName(t));
    return false;
  }
  return true;
}

bool AnyTensor(const ir::Node& node, const runtime::NodeTypes& types, std::string* why_not) {
  if (InputDtype(types, 0) == ir::DataType::kUndefined) {
    if (why_not) *why_not = "the input's type is not known at load time";
    return false;
  }
  return true;
}

bool FixedSizeValue(const ir::Node& node, const runtime::NodeTypes& types, std::string* why_not) {
  auto value = ops::TensorAttr(node, "value");
  if (!value.ok()) {
    if (why_not) *why_not = "attribute 'value' is malformed";
    return false;
  }
  ir::DataType t = *value ? (*value)->dtype : ir::DataType::kFloat32;
  int bits = ir::DataTypeBits(t);
  if (bits != 8 && bits != 16 && bits != 32 && bits != 64) {
    if (why_not) *why_not = fmt::format("a value of dtype {}", ir::DataTypeName(t));
    return false;
  }
  return true;
}

}  // namespace

std::span<const CudaKernelDef> ShapeSourceCudaKernels() {
  static const CudaKernelDef kDefs[] = {
      {"", "Shape", 1, kLatest, ShapeOp, AnyTensor, 0},
      {"", "Size", 1, kLatest, SizeOp, AnyTensor, 0},
      {"", "ConstantOfShape", 9, kLatest, ConstantOfShapeOp, FixedSizeValue, HostInput(0)},
      {"", "Range", 11, kLatest, RangeOp, IntegerRange, HostInput(0) | HostInput(1) | HostInput(2)},
  };
  return kDefs;
}

}  // namespace vigil::cuda
