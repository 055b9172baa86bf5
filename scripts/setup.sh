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
# fmt; ImageDecoder's image libraries, linked statically, with the same
# package names on Debian 12 and Ubuntu 24.04); GoogleTest; ONNX's test
# models; the onnx Python package and numpy, which the tests compare
# against; venv and headers for the Python package; oneDNN 2.x (its header
# at build time; libdnnl.so.2 is loaded at run time where present, never
# linked: src/backends/cpu/fast/dnnl_library.h).
packages=(build-essential cmake pkg-config libcli11-dev nlohmann-json3-dev libfmt-dev libeigen3-dev
          libgtest-dev libgmock-dev libonnx-testdata python3-onnx python3-numpy python3-venv python3-dev ccache
          libjpeg-dev libpng-dev libwebp-dev libtiff-dev libopenjp2-7-dev libdnnl-dev)
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

# The Python package (python/) is built with the rest and tested by ctest,
# with the pinned packages of a venv at build/venv (VIGIL_PYTHON=0: without).
python_args=()
python=""
if [[ "${VIGIL_PYTHON:-1}" != 0 ]]; then
  python=$(scripts/python_env.sh build/venv)
  python_args=(-DVIGIL_PYTHON=ON "-DPython_EXECUTABLE=$python")
fi

# ccache, so that a second build (another clone, CI after a developer's run)
# compiles only what changed. Paths are taken relative to the checkout, so
# clones in other folders share the cache.
launcher_args=()
if command -v ccache >/dev/null; then
  export CCACHE_BASEDIR=$PWD CCACHE_NOHASHDIR=1 CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-8G}
  launcher_args=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache
                 -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
fi

build_dir=${VIGIL_BUILD_DIR:-build}

# Triton Inference Server for the Triton backend's tests (tests/triton): the
# PyPI wheel nvidia-pytriton==0.7.0, unzipped into $build_dir/triton once,
# with the venv's pip (VIGIL_TRITON=0: without; the tests then fail).
if [[ -n "${python:-}" && "${VIGIL_TRITON:-1}" != 0 ]]; then
  scripts/triton_env.sh "$build_dir" "$python" >/dev/null
fi
# The node tests of ONNX 1.23.2 for tests/conformance, generated from the
# onnx wheel's test cases into $build_dir/onnx-node (VIGIL_ONNX_NODE=0:
# without; those conformance tests then skip).
if [[ "${VIGIL_ONNX_NODE:-1}" != 0 ]]; then
  scripts/onnx_node_data.sh "$build_dir" >/dev/null
fi
echo "== configuring $build_dir"
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DVIGIL_BUILD_TESTS=ON "${python_args[@]}" \
  "${launcher_args[@]}" ${VIGIL_CMAKE_ARGS:-} >/dev/null
echo "== building $build_dir ${*:-(all)}"
targets=()
for t in "$@"; do targets+=(--target "$t"); done
cmake --build "$build_dir" -j"$(nproc)" "${targets[@]}"
