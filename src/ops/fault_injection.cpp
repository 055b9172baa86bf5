// Schemas of the test-only fault-injection ops (see fault_injection.h).
#include "ops/fault_injection.h"

#include <cstdlib>
#include <cstring>
#include <span>

#include "ops/schema.h"
#include "ops/families.h"

namespace vigil::ops {
namespace {

Status InferSameAsInput(InferenceContext& ctx) {
  if (const ir::TypeInfo* x = ctx.input_type(0)) ctx.set_output(0, *x);
  return Status::Ok();
}

const OpSchema kFaultInjectionSchemas[] = {
    {"ai.vigil.testing", "Crash", 1, kLatest, 1, 1, 1, 1, InferSameAsInput},
    {"ai.vigil.testing", "Fail", 1, kLatest, 1, 1, 1, 1, InferSameAsInput},
    {"ai.vigil.testing", "Diverge", 1, kLatest, 1, 1, 1, 1, InferSameAsInput},
    {"ai.vigil.testing", "OutOfBoundsWrite", 1, kLatest, 1, 1, 1, 1, InferSameAsInput},
    {"ai.vigil.testing", "Hang", 1, kLatest, 1, 1, 1, 1, InferSameAsInput},
    {"ai.vigil.testing", "Jitter", 1, kLatest, 1, 1, 1, 1, InferSameAsInput},
};

}  // namespace

bool TestOpsEnabled() {
  static const bool enabled = [] {
    const char* v = std::getenv(kEnableTestOpsVariable);
    return v != nullptr && std::strcmp(v, "1") == 0;
  }();
  return enabled;
}

std::span<const OpSchema> FaultInjectionSchemas() {
  if (!TestOpsEnabled()) return {};
  return kFaultInjectionSchemas;
}

}  // namespace vigil::ops
