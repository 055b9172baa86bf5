// CPU kernels of the test-only fault-injection ops (ops/fault_injection.h).
// They exist only when VIGIL_ENABLE_TEST_OPS=1.
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstring>

#include "backends/cpu/kernel.h"
#include "ops/fault_injection.h"
#include "backends/cpu/kernel_families.h"

namespace vigil::cpu {
namespace {

Status CopyInput(KernelContext& ctx) {
  const runtime::Tensor* x = ctx.input(0);
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * y, ctx.Output(0, x->dtype(), x->shape()));
  if (x->byte_size() > 0) std::memcpy(y->raw_data(), x->raw_data(), x->byte_size());
  return Status::Ok();
}

// The address is read through a volatile so the compiler cannot prove the
// access undefined and drop it: the process really takes a SIGSEGV here.
volatile uintptr_t g_bad_address = 0x10;

Status Crash(KernelContext& ctx) {
  VIGIL_RETURN_IF_ERROR(CopyInput(ctx));
  volatile int* bad = reinterpret_cast<volatile int*>(g_bad_address);
  *bad = 1;
  return InternalError("{}: the bad pointer did not fault", ops::NodeLabel(ctx.node()));
}

Status Hang(KernelContext& ctx) {
  for (;;) pause();
  return InternalError("{}: unreachable", ops::NodeLabel(ctx.node()));
}

// Element 0 (float32) gets 1e-3 times the number of runs before: each run's
// output differs from the last, as with a kernel that accumulates in a
// different order every time.
Status Jitter(KernelContext& ctx) {
  const runtime::Tensor* x = ctx.input(0);
  if (x->dtype() != ir::DataType::kFloat32 || x->byte_size() < sizeof(float)) {
    return InvalidModelError("{}: Jitter takes a non-empty float32 tensor", ops::NodeLabel(ctx.node()));
  }
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * y, ctx.Output(0, x->dtype(), x->shape()));
  std::memcpy(y->raw_data(), x->raw_data(), x->byte_size());
  static std::atomic<int> runs{0};
  static_cast<float*>(y->raw_data())[0] += 1e-3f * static_cast<float>(runs++);
  return Status::Ok();
}

Status Fail(KernelContext& ctx) {
  return InternalError("{}: injected failure (test-only op)", ops::NodeLabel(ctx.node()));
}

const KernelDef kFaultInjectionKernels[] = {
    {"ai.vigil.testing", "Crash", 1, kLatest, Crash},
    {"ai.vigil.testing", "Fail", 1, kLatest, Fail},
    {"ai.vigil.testing", "Diverge", 1, kLatest, CopyInput},
    {"ai.vigil.testing", "OutOfBoundsWrite", 1, kLatest, CopyInput},
    {"ai.vigil.testing", "Hang", 1, kLatest, Hang},
    {"ai.vigil.testing", "Jitter", 1, kLatest, Jitter},
};

}  // namespace

std::span<const KernelDef> FaultInjectionKernels() {
  if (!ops::TestOpsEnabled()) return {};
  return kFaultInjectionKernels;
}

}  // namespace vigil::cpu
