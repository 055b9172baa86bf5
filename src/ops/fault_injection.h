// Test-only ops for fault injection, in the domain "ai.vigil.testing". They
// exist so that the crash guard (`--isolate`), `vigil reduce` and
// `vigil compare --repeat` can be tested against real failures. They are in
// the catalogue, and have kernels, only when the environment has
// VIGIL_ENABLE_TEST_OPS=1 when the process starts using the catalogue; a
// model that uses them otherwise is refused as an unknown op.
//
// Each takes one input and gives one output of the same type and shape:
//   Crash             CPU: dereferences a bad pointer (SIGSEGV). No CUDA kernel.
//   Fail              CPU and CUDA: returns an error Status.
//   Diverge           CPU: identity. CUDA: identity plus 0.5 on element 0.
//   OutOfBoundsWrite  CPU: identity. CUDA: also writes far outside its output.
//   Hang              CPU: never returns (sleeps). No CUDA kernel.
//   Jitter            CPU: identity plus a value that changes with every run
//                     on element 0. CUDA: identity plus a sum of 2^20 terms
//                     accumulated on element 0 with float atomics (real
//                     nondeterminism: the rounding follows the arrival order).
#pragma once

#include <string_view>

namespace vigil::ops {

inline constexpr std::string_view kTestOpDomain = "ai.vigil.testing";
inline constexpr const char* kEnableTestOpsVariable = "VIGIL_ENABLE_TEST_OPS";

// Whether VIGIL_ENABLE_TEST_OPS=1 (read once, on first use).
bool TestOpsEnabled();

}  // namespace vigil::ops
