// Ops that only change how a tensor's bytes are read: Reshape, Flatten,
// Squeeze, Unsqueeze, Identity, and Dropout at inference. The output is a
// view of input 0 with the shape that shape inference planned (Reshape's 0
// and -1 and Squeeze's axes are already resolved there); the session keeps
// the input's memory alive for as long as the view is read
// (runtime/execution.cpp, MayAliasInput). Any dtype of 1, 2, 4 or 8 bytes;
// Reshape, Flatten, Squeeze and Unsqueeze also one not known at load time,
// checked when they run (unknown_dtype.h).
#include "backends/cuda/cuda_kernel.h"
#include "backends/cuda/unknown_dtype.h"
#include "ops/shape_helpers.h"

namespace vigil::cuda {
namespace {

// Values of a host-read int64/int32 input (shape, axes).
std::vector<int64_t> HostInts(const runtime::Tensor& t) {
  std::vector<int64_t> v(t.element_count());
  for (size_t i = 0; i < v.size(); ++i) {
    v[i] = t.dtype() == ir::DataType::kInt32 ? t.data<int32_t>()[i] : t.data<int64_t>()[i];
  }
  return v;
}

// The output shape when the plan could not know it: the shape or axes input
// is a graph input, so its value is only known now (it is on the host).
Result<std::vector<int64_t>> RunTimeShape(CudaKernelContext& ctx, const runtime::Tensor& in) {
  const ir::Node& node = ctx.node();
  const std::vector<int64_t>& x = in.shape();
  const runtime::Tensor* arg = ctx.input(1);
  if (node.op_type == "Reshape" && arg) {
    VIGIL_ASSIGN_OR_RETURN(int64_t allowzero, ops::IntAttr(node, "allowzero", 0));
    std::vector<int64_t> out = HostInts(*arg);
    int64_t known = 1, infer = -1;
    for (size_t i = 0; i < out.size(); ++i) {
      if (out[i] == 0 && !allowzero) {
        if (i >= x.size()) return ctx.Fail("shape[{}] = 0 copies a dim the input does not have", i);
        out[i] = x[i];
      }
      if (out[i] == -1) {
        if (infer >= 0) return ctx.Fail("shape has more than one -1");
        infer = static_cast<int64_t>(i);
      } else if (out[i] < 0) {
        return ctx.Fail("shape[{}] = {} is negative", i, out[i]);
      } else {
        known *= out[i];
      }
    }
    if (infer >= 0) {
      if (known == 0 || static_cast<int64_t>(in.element_count()) % known != 0) {
        return ctx.Fail("cannot infer the -1 of shape for {} elements", in.element_count());
      }
      out[infer] = static_cast<int64_t>(in.element_count()) / known;
    }
    return out;
  }
  if ((node.op_type == "Squeeze" || node.op_type == "Unsqueeze") && arg) {
    std::vector<int64_t> axes = HostInts(*arg);
    int64_t rank = static_cast<int64_t>(x.size()) + (node.op_type == "Unsqueeze" ? static_cast<int64_t>(axes.size()) : 0);
    std::vector<bool> marked(static_cast<size_t>(rank), false);
    for (int64_t a : axes) {
      VIGIL_ASSIGN_OR_RETURN(int64_t axis, ops::NormalizeAxis(node, a, rank, "axes"));
      marked[static_cast<size_t>(axis)] = true;
    }
    std::vector<int64_t> out;
    if (node.op_type == "Squeeze") {
      for (size_t i = 0; i < x.size(); ++i) {
        if (!marked[i]) out.push_back(x[i]);
      }
    } else {
      size_t next = 0;
      for (int64_t i = 0; i < rank; ++i) out.push_back(marked[static_cast<size_t>(i)] ? 1 : x[next++]);
    }
    return out;
  }
  return InternalError("{}: the output shape is not known at plan time", ops::NodeLabel(node));
}

Status PlannedView(CudaKernelContext& ctx) {
  const runtime::Tensor* in = ctx.input(0);
  if (in && !in->is_dense()) {  // its type was not known at load (unknown_dtype.h)
    return ctx.Unsupported("input 0 is a sequence or an optional, not a tensor");
  }
  if (!in || in->on_host()) return InternalError("{}: input 0 is not on the device", ops::NodeLabel(ctx.node()));
  const int bits = in->dtype() == ir::DataType::kString ? 0 : ir::DataTypeBits(in->dtype());
  if (bits != 8 && bits != 16 && bits != 32 && bits != 64) {
    return ctx.Unsupported("dtype {} of input 0", ir::DataTypeName(in->dtype()));
  }
  const std::vector<int64_t>* planned = ctx.PlannedDims(0);
  std::vector<int64_t> run_time;
  if (!planned) {
    VIGIL_ASSIGN_OR_RETURN(run_time, RunTimeShape(ctx, *in));
  }
  const std::vector<int64_t>* dims = planned ? planned : &run_time;
  auto count = runtime::ElementCount(*dims);
  if (!count || *count != in->element_count()) {
    return ctx.Fail("the output shape has {} elements, the input {}", count.value_or(0), in->element_count());
  }
  return ctx.SetOutput(0, runtime::Tensor::OnDevice(runtime::Device::kCuda, in->dtype(), *dims,
                                                    const_cast<void*>(in->raw_data()), in->storage()));
}

bool AnyFixedSize(const ir::Node& node, const runtime::NodeTypes& types, std::string* why_not) {
  return FixedSizeInput(types, 0, why_not);
}

// Reshape, Flatten, Squeeze and Unsqueeze also take a dtype not known at load
// time (PlannedView checks it when it runs). Identity and Dropout do not: a
// sequence or an optional of no recorded type may reach them, and those run
// on the host.
bool FixedSizeOrUnknown(const ir::Node& node, const runtime::NodeTypes& types, std::string* why_not) {
  return FixedSizeOrUnknownInput(types, 0, why_not);
}

bool DropoutInference(const ir::Node& node, const runtime::NodeTypes& types, std::string* why_not) {
  if (node.outputs.size() > 1 && !node.outputs[1].empty()) {
    if (why_not) *why_not = "the mask output is not implemented";
    return false;
  }
  if (node.inputs.size() > 2 && !node.inputs[2].empty()) {
    if (why_not) *why_not = "training_mode as an input is not implemented";
    return false;
  }
  return FixedSizeInput(types, 0, why_not);
}

}  // namespace

std::span<const CudaKernelDef> ViewCudaKernels() {
  static const CudaKernelDef kDefs[] = {
      {"", "Reshape", 5, kLatest, PlannedView, FixedSizeOrUnknown, HostInput(1)},
      {"", "Flatten", 1, kLatest, PlannedView, FixedSizeOrUnknown, 0},
      {"", "Squeeze", 1, 12, PlannedView, FixedSizeOrUnknown, 0},
      {"", "Squeeze", 13, kLatest, PlannedView, FixedSizeOrUnknown, HostInput(1)},
      {"", "Unsqueeze", 1, 12, PlannedView, FixedSizeOrUnknown, 0},
      {"", "Unsqueeze", 13, kLatest, PlannedView, FixedSizeOrUnknown, HostInput(1)},
      {"", "Identity", 1, kLatest, PlannedView, AnyFixedSize, 0},
      {"", "Dropout", 1, kLatest, PlannedView, DropoutInference, HostInput(1)},
  };
  return kDefs;
}

}  // namespace vigil::cuda
