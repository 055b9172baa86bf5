#!/usr/bin/env bash
# The whole test suite: installs what is missing, builds, and runs ctest; then
# builds with AddressSanitizer + UndefinedBehaviorSanitizer and runs again the
# tests of the layers that parse untrusted bytes (ONNX reader, IR validation,
# tensor files, input validation, ELF and ld.so.cache readers), of the CPU
# kernels, of sessions (planning, execution, fusions) and of the C API.
# The parsers' fuzz targets are scripts/fuzz.sh (clang; not run here).
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)

scripts/setup.sh
echo "== tests (build)"
ctest --test-dir build --output-on-failure -j"$jobs"

echo "== tests under ASan+UBSan (build-asan)"
asan_tests=(base/vigil_base_tests ir/vigil_ir_tests onnx/vigil_onnx_tests runtime/vigil_runtime_tests
            doctor/resolver/vigil_doctor_resolver_tests backends/cpu/vigil_cpu_kernel_tests
            runtime/vigil_session_tests api/vigil_api_tests)
VIGIL_BUILD_DIR=build-asan VIGIL_CMAKE_ARGS="-DVIGIL_SANITIZE=ON" VIGIL_TRITON=0 VIGIL_ONNX_NODE=0 scripts/setup.sh "${asan_tests[@]##*/}"
for t in "${asan_tests[@]}"; do
  echo "-- $t"
  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    "build-asan/tests/$t" --gtest_brief=1
done
echo "ASan+UBSan: all ${#asan_tests[@]} test programs passed"
