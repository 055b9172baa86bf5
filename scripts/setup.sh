#!/usr/bin/env bash
# Installs what is missing (Debian 12 / Ubuntu 24.04, as root or with sudo),
# then configures vigil into $VIGIL_BUILD_DIR (default: build) and builds the
# given targets (default: everything, tests included).
# Idempotent: a second run installs nothing and rebuilds only what changed.
#
#   scripts/setup.sh [TARGET...]
set -euo pipefail
cd "$(dirname "$0")/.."

# Compiler and build; header-only or static libraries (Eigen, CLI11, JSON,
# fmt); GoogleTest; ONNX's test models; the onnx Python package and numpy,
# which the tests compare against.
packages=(build-essential cmake pkg-config libcli11-dev nlohmann-json3-dev libfmt-dev libeigen3-dev
          libgtest-dev libgmock-dev libonnx-testdata python3-onnx python3-numpy)
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
echo "== configuring $build_dir"
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DVIGIL_BUILD_TESTS=ON ${VIGIL_CMAKE_ARGS:-} >/dev/null
echo "== building $build_dir ${*:-(all)}"
targets=()
for t in "$@"; do targets+=(--target "$t"); done
cmake --build "$build_dir" -j"$(nproc)" "${targets[@]}"
