#!/usr/bin/env bash
# Installs what is missing (Debian 12 / Ubuntu 24.04, as root or with sudo),
# then configures and builds vigil into $VIGIL_BUILD_DIR (default: build).
# Idempotent: a second run installs nothing and rebuilds only what changed.
#
#   scripts/setup.sh [--tests]     --tests also installs what the test suite needs
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(build-essential cmake pkg-config libcli11-dev nlohmann-json3-dev libfmt-dev libeigen3-dev)
if [[ "${1:-}" == "--tests" ]]; then
  # GoogleTest; ONNX's own test models; the onnx Python package (the reference
  # the inspect test compares against); clang's sanitizer/fuzzer runtimes.
  packages+=(libgtest-dev libgmock-dev libonnx-testdata python3-onnx python3-numpy)
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  sudo=""
  [[ "$(id -u)" -ne 0 ]] && sudo=sudo
  echo "== installing: ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

build_dir=${VIGIL_BUILD_DIR:-build}
tests=OFF
[[ "${1:-}" == "--tests" ]] && tests=ON
echo "== configuring $build_dir"
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DVIGIL_BUILD_TESTS=$tests ${VIGIL_CMAKE_ARGS:-} >/dev/null
echo "== building $build_dir"
cmake --build "$build_dir" -j"$(nproc)"
