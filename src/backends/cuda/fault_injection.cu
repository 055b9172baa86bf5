// CUDA kernels of the test-only fault-injection ops (ops/fault_injection.h),
// which exist only when VIGIL_ENABLE_TEST_OPS=1. OutOfBoundsWrite is how the
// crash-guard tests produce a real device fault (an illegal address),
// Diverge a real GPU/CPU disagreement, and Jitter real nondeterminism (float
// atomics whose order changes from run to run).
#include <cstdint>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/cuda_kernel.h"
#include "backends/cuda/device_common.cuh"
#include "ops/fault_injection.h"

namespace vigil::cuda {
namespace {

// One terabyte past the output: far beyond any allocation of this process,
// so the store faults instead of silently corrupting a neighbour.
constexpr uint64_t kOutOfBoundsBytes = uint64_t{1} << 40;

__global__ void WriteFarOutside(unsigned char* base) {
  volatile float* target = reinterpret_cast<volatile float*>(base + kOutOfBoundsBytes);
  *target = 1.0f;
}

__global__ void AddHalfToFirst(float* y) { y[0] += 0.5f; }

// Every thread adds a term of its own size to y[0] with atomicAdd: the sum is
// rounded in the order the threads happen to arrive, which the hardware does
// not fix, as in a reduction that accumulates with atomics.
__global__ void AtomicAccumulate(float* y, int terms) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < terms) atomicAdd(y, 1.0f / static_cast<float>(i + 1) * (i % 2 == 0 ? 1.0f : -0.999f));
}

bool FloatOnly(const ir::Node&, const runtime::NodeTypes& types, std::string* why_not) {
  const ir::TypeInfo* x = types.inputs.empty() ? nullptr : types.inputs[0];
  if (x && x->elem_type == ir::DataType::kFloat32) return true;
  *why_not = "the test kernel takes float32 only";
  return false;
}

Status CopyInput(CudaKernelContext& ctx, runtime::Tensor** out) {
  const runtime::Tensor* x = ctx.input(0);
  VIGIL_ASSIGN_OR_RETURN(*out, ctx.Output(0));
  if (x->byte_size() > 0) {
    VIGIL_CUDA_CALL(cudaMemcpyAsync((*out)->raw_data(), x->raw_data(), x->byte_size(), cudaMemcpyDeviceToDevice,
                                    ctx.stream()));
  }
  return Status::Ok();
}

Status Fail(CudaKernelContext& ctx) {
  return InternalError("{}: injected failure (test-only op)", ops::NodeLabel(ctx.node()));
}

Status Diverge(CudaKernelContext& ctx) {
  runtime::Tensor* y = nullptr;
  VIGIL_RETURN_IF_ERROR(CopyInput(ctx, &y));
  if (y->element_count() == 0) return Status::Ok();
  AddHalfToFirst<<<1, 1, 0, ctx.stream()>>>(static_cast<float*>(y->raw_data()));
  VIGIL_CHECK_LAUNCH("AddHalfToFirst");
  return Status::Ok();
}

Status Jitter(CudaKernelContext& ctx) {
  runtime::Tensor* y = nullptr;
  VIGIL_RETURN_IF_ERROR(CopyInput(ctx, &y));
  if (y->element_count() == 0) return Status::Ok();
  constexpr int kTerms = 1 << 20;
  AtomicAccumulate<<<kTerms / 256, 256, 0, ctx.stream()>>>(static_cast<float*>(y->raw_data()), kTerms);
  VIGIL_CHECK_LAUNCH("AtomicAccumulate");
  return Status::Ok();
}

Status OutOfBoundsWrite(CudaKernelContext& ctx) {
  runtime::Tensor* y = nullptr;
  VIGIL_RETURN_IF_ERROR(CopyInput(ctx, &y));
  WriteFarOutside<<<1, 1, 0, ctx.stream()>>>(static_cast<unsigned char*>(y->raw_data()));
  VIGIL_CHECK_LAUNCH("WriteFarOutside");
  return Status::Ok();
}

const CudaKernelDef kFaultInjectionKernels[] = {
    {"ai.vigil.testing", "Fail", 1, kLatest, Fail, nullptr},
    {"ai.vigil.testing", "Diverge", 1, kLatest, Diverge, FloatOnly},
    {"ai.vigil.testing", "OutOfBoundsWrite", 1, kLatest, OutOfBoundsWrite, FloatOnly},
    {"ai.vigil.testing", "Jitter", 1, kLatest, Jitter, FloatOnly},
};

}  // namespace

std::span<const CudaKernelDef> FaultInjectionCudaKernels() {
  if (!ops::TestOpsEnabled()) return {};
  return kFaultInjectionKernels;
}

}  // namespace vigil::cuda
