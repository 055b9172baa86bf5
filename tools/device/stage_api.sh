#!/usr/bin/env bash
# On the build machine: stages what tools/device/api_check.sh needs into DEST
# (kept out of git, carried to the GPU machine, at most 64 MiB):
#   tools/device/stage_api.sh BUILD DEST
# BUILD is a CUDA build tree (sm_90) with vigil, vigil_shared, vigil_cuda and
# vigil_cuda_tests built. The Python extension is built here for the GPU
# machine's Python (3.12; pyenv's 3.12 headers), against BUILD's libvigil.so.0,
# and pytest's wheels are unpacked into DEST/pylib (nothing can be installed
# there).
set -eu
build=$(cd "${1:?build dir}" && pwd)
dest=${2:?dest dir}
py312=${PY312:-/root/.pyenv/versions/3.12.1/bin/python3}
rm -rf "$dest" && mkdir -p "$dest/pylib" && dest=$(cd "$dest" && pwd)
cp -L "$build/src/cli/vigil" "$build/src/api/vigil-worker" "$build/src/api/libvigil.so.0" "$dest/"
cp -L "$(find "$build/src/backends/cuda" -name libvigil_cuda.so | head -1)" "$dest/"
cp -L "$(find "$build/tests" -name vigil_cuda_tests -type f | head -1)" "$dest/"
strip --strip-unneeded "$dest/vigil" "$dest/vigil-worker" "$dest/libvigil.so.0" "$dest/libvigil_cuda.so" "$dest/vigil_cuda_tests"
nb=$("$build/venv/bin/python" -m nanobind --cmake_dir)
cmake -S tools/device/pyext -B /tmp/pyext312 -DVIGIL_LIB="$dest/libvigil.so.0" -DPython_EXECUTABLE="$py312" \
  -Dnanobind_DIR="$nb" -DCMAKE_BUILD_TYPE=Release > /tmp/pyext312.log 2>&1
cmake --build /tmp/pyext312 -j2 >> /tmp/pyext312.log 2>&1 || { tail -30 /tmp/pyext312.log; exit 1; }
mkdir -p "$dest/pyext" && cp -r /tmp/pyext312/vigil "$dest/pyext/"
strip --strip-unneeded "$dest"/pyext/vigil/_vigil*.so
"$py312" -m pip download -q --only-binary=:all: --python-version 3.12 --no-deps -d /tmp/pywheels \
  pytest==8.4.2 pluggy iniconfig pygments packaging
for w in /tmp/pywheels/*.whl; do (cd "$dest/pylib" && python3 -m zipfile -e "$w" .); done
du -sh "$dest"; ls -la "$dest"
