#!/usr/bin/env bash
# The whole test suite: installs what is missing, builds, and runs ctest twice:
# the normal build, then every test again in a build with
# AddressSanitizer + UndefinedBehaviorSanitizer.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)

scripts/setup.sh
echo "== tests (build)"
ctest --test-dir build --output-on-failure -j"$jobs"

echo "== tests under ASan+UBSan (build-asan)"
VIGIL_BUILD_DIR=build-asan VIGIL_CMAKE_ARGS="-DVIGIL_SANITIZE=ON" scripts/setup.sh
ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan --output-on-failure -j"$jobs"
