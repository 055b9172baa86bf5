#!/usr/bin/env bash
# What `cmake --install` gives a user, used the way a user would use it:
#
# 1. installs the current build tree into a temporary prefix (no rebuild);
# 2. checks the installed files, and that libvigil.so exports only vigil_*
#    symbols, has SONAME libvigil.so.0 and RUNPATH $ORIGIN;
# 3. builds examples/c and examples/cpp against the prefix through
#    find_package(vigil) and through pkg-config (their Makefiles), and
#    examples/c once more against vigil::vigil_static (a C program linking
#    the C++ archive);
# 4. runs each on MODEL with INPUT: it must exit 0, write outputs that are
#    bit-for-bit those of the installed `vigil run --output-dir`, and print
#    the diagnoses of seed 003 (a buffer of channels*640*480 floats) and seed
#    000 (int32 data for a float32 input).
#
#   install_test.sh --build-dir B --source-dir S --libdir lib --model M --input X
#                   [--cuda-module 0|1] [--c-compiler CC] [--cxx-compiler CXX]
set -euo pipefail

build_dir="" source_dir="" libdir=lib model="" input="" cuda_module=0
cc=${CC:-cc} cxx=${CXX:-c++}
while (($#)); do
  case "$1" in
    --build-dir) build_dir=$2 ;;
    --source-dir) source_dir=$2 ;;
    --libdir) libdir=$2 ;;
    --model) model=$2 ;;
    --input) input=$2 ;;
    --cuda-module) cuda_module=$2 ;;
    --c-compiler) cc=$2 ;;
    --cxx-compiler) cxx=$2 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
  shift 2
done
for v in build_dir source_dir model input; do
  [[ -n "${!v}" ]] || { echo "--${v//_/-} is required" >&2; exit 2; }
done

build_dir=$(cd "$build_dir" && pwd)
source_dir=$(cd "$source_dir" && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/vigil-install-test.XXXXXX")
# VIGIL_INSTALL_TEST_KEEP=1 keeps the folder (prefix, builds, outputs) to look at.
if [[ "${VIGIL_INSTALL_TEST_KEEP:-0}" == 1 ]]; then
  trap 'echo "kept $tmp"' EXIT
else
  trap 'rm -rf "$tmp"' EXIT
fi
prefix=$tmp/prefix
lib=$prefix/$libdir
jobs=$(nproc 2>/dev/null || echo 2)
failures=0

fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}
# Runs a step quietly; on failure shows its output and stops.
step() {
  local name=$1 log=$tmp/$2.log
  shift 2
  echo "-- $name"
  if ! "$@" >"$log" 2>&1; then
    cat "$log" >&2
    echo "FAIL: $name" >&2
    exit 1
  fi
}

# ---- 1. install ------------------------------------------------------------
step "cmake --install $build_dir --prefix <tmp>" install cmake --install "$build_dir" --prefix "$prefix"

# ---- 2. installed files and libvigil.so's interface ---------------------------
for f in include/vigil/vigil.h include/vigil/vigil.hpp include/vigil/float16.h \
         "$libdir/libvigil.so" "$libdir/libvigil.so.0" "$libdir/libvigil.a" bin/vigil \
         "$libdir/cmake/vigil/vigilConfig.cmake" "$libdir/cmake/vigil/vigilConfigVersion.cmake" \
         "$libdir/cmake/vigil/vigilTargets.cmake" "$libdir/pkgconfig/vigil.pc"; do
  [[ -e "$prefix/$f" ]] || fail "not installed: $f"
done
[[ -L "$lib/libvigil.so" && -L "$lib/libvigil.so.0" ]] || fail "libvigil.so and libvigil.so.0 should be symlinks"
[[ -x "$lib/vigil/vigil-worker" ]] || fail "vigil-worker (isolated sessions) is not installed to $libdir/vigil/"
if [[ "$cuda_module" == 1 ]]; then
  [[ -f "$lib/vigil/libvigil_cuda.so" ]] || fail "the CUDA module was built but not installed to $libdir/vigil/"
fi
# The Triton backend folder (docs/triton.md): the backend, with libvigil.so.0
# and vigil-worker beside it, exporting only the TRITONBACKEND_* entry points.
triton=$lib/vigil/triton/vigil
for f in libtriton_vigil.so libvigil.so.0 vigil-worker; do
  [[ -e "$triton/$f" ]] || fail "not installed: $libdir/vigil/triton/vigil/$f"
done
if [[ "$cuda_module" == 1 ]]; then
  [[ -f "$triton/libvigil_cuda.so" ]] || fail "the CUDA module is not installed to $libdir/vigil/triton/vigil/"
fi
others=$(nm -D --defined-only "$triton/libtriton_vigil.so" | awk '{print $3}' | grep -v '^TRITONBACKEND_' || true)
[[ -z "$others" ]] || fail "libtriton_vigil.so exports more than TRITONBACKEND_*: $(echo "$others" | head | tr '\n' ' ')"
readelf -d "$triton/libtriton_vigil.so" | grep -q 'RUNPATH.*\[\$ORIGIN\]' ||
  fail "libtriton_vigil.so's RUNPATH is not \$ORIGIN"
# Nothing of the build tree may leak into the installed package files.
if grep -rqF "$build_dir" "$lib/cmake/vigil" "$lib/pkgconfig/vigil.pc"; then
  fail "the installed CMake/pkg-config files name the build tree $build_dir"
fi

echo "-- libvigil.so: exported symbols, SONAME, RUNPATH"
# nm shows versioned symbols as name@@VIGIL_0, and the version node itself as
# an absolute symbol VIGIL_0.
others=$(nm -D --defined-only "$lib/libvigil.so" | awk '{print $3}' | sed 's/@.*//' |
         grep -v -e '^vigil_' -e '^VIGIL_[0-9]*$' || true)
[[ -z "$others" ]] || fail "libvigil.so exports symbols other than vigil_*: $(echo "$others" | head -20 | tr '\n' ' ')"
# ... and every function vigil.h declares.
exported=$(nm -D --defined-only "$lib/libvigil.so" | awk '$2 == "T" {print $3}' | sed 's/@.*//')
declared=$(grep -o 'VIGIL_EXPORT [^(]*(' "$prefix/include/vigil/vigil.h" | sed -n 's/.*[ *]\(vigil_[a-z0-9_]*\)($/\1/p')
[[ $(echo "$declared" | wc -l) -ge 40 ]] || fail "found only $(echo "$declared" | wc -l) functions in vigil.h"
for f in $declared; do
  grep -qx "$f" <<<"$exported" || fail "libvigil.so does not export $f, which vigil.h declares"
done
soname=$(readelf -d "$lib/libvigil.so" | awk -F'[][]' '/\(SONAME\)/ {print $2}')
[[ "$soname" == libvigil.so.0 ]] || fail "libvigil.so has SONAME '$soname', not libvigil.so.0"
runpath=$(readelf -d "$lib/libvigil.so" | awk -F'[][]' '/\((RUNPATH|RPATH)\)/ {print $2}')
[[ "$runpath" == '$ORIGIN' ]] || fail "libvigil.so has RUNPATH '$runpath', not \$ORIGIN"

# ---- 3. the reference: the installed command ------------------------------------
step "vigil run --output-dir (installed command)" vigil_run \
  "$prefix/bin/vigil" run "$model" --input "$input" --backend cpu --output-dir "$tmp/out-vigil"
mapfile -t ref_files < <(cd "$tmp/out-vigil" && ls -- *.npy)
((${#ref_files[@]} > 0)) || fail "vigil run wrote no outputs"

# ---- 4. the examples, built four (and a static fifth) ways ----------------------
export PKG_CONFIG_PATH=$lib/pkgconfig
cmake_example() {  # NAME LANG-FOLDER EXTRA-CMAKE-ARGS...
  local name=$1 folder=$2 compiler
  shift 2
  if [[ "$folder" == c ]]; then compiler=-DCMAKE_C_COMPILER="$cc"; else compiler=-DCMAKE_CXX_COMPILER="$cxx"; fi
  step "$name: configure" "$name-configure" cmake -S "$source_dir/examples/$folder" -B "$tmp/$name" \
    -DCMAKE_PREFIX_PATH="$prefix" "$compiler" "$@"
  step "$name: build" "$name-build" cmake --build "$tmp/$name" -j"$jobs"
}
make_example() {  # NAME LANG-FOLDER
  mkdir -p "$tmp/$1"
  step "$1: make (pkg-config)" "$1-build" make -C "$tmp/$1" -f "$source_dir/examples/$2/Makefile" CC="$cc" CXX="$cxx"
}
cmake_example c-cmake c
cmake_example cpp-cmake cpp
cmake_example c-cmake-static c -DVIGIL_EXAMPLE_STATIC=ON
programs=(c-cmake/vigil_example_c cpp-cmake/vigil_example_cpp c-cmake-static/vigil_example_c)
# pkg-config is part of the build set-up (scripts/setup.sh); only an explicit
# VIGIL_INSTALL_TEST_NO_PKG_CONFIG=1 skips these builds where it is missing.
if command -v pkg-config >/dev/null || [[ "${VIGIL_INSTALL_TEST_NO_PKG_CONFIG:-0}" != 1 ]]; then
  make_example c-pkgconfig c
  make_example cpp-pkgconfig cpp
  programs+=(c-pkgconfig/vigil_example_c cpp-pkgconfig/vigil_example_cpp)
else
  echo "-- (no pkg-config: the pkg-config builds are skipped)"
fi
for p in "${programs[@]}"; do
  name=${p%%/*}
  exe=$tmp/$p
  echo "-- $name: run"
  # The program must use the installed libvigil.so (or none, linked statically).
  linked=$(ldd "$exe" | awk '/libvigil/ {print $3}')
  if [[ "$name" == *static ]]; then
    [[ -z "$linked" ]] || fail "$name links $linked, expected libvigil.a"
  elif [[ "$(readlink -f "$linked")" != "$(readlink -f "$lib/libvigil.so.0")" ]]; then
    fail "$name loads libvigil from '$linked', not from the prefix"
  fi
  rc=0
  "$exe" "$model" "$input" "$tmp/out-$name" >"$tmp/$name.out" 2>&1 || rc=$?
  if ((rc != 0)); then
    cat "$tmp/$name.out" >&2
    fail "$name exited $rc"
    continue
  fi
  for f in "${ref_files[@]}"; do
    if [[ ! -f "$tmp/out-$name/$f" ]]; then
      fail "$name did not write $f"
    elif ! cmp "$tmp/out-vigil/$f" "$tmp/out-$name/$f"; then
      fail "$name: $f differs from vigil run's"
    fi
  done
  n_written=$(find "$tmp/out-$name" -name '*.npy' | wc -l)
  ((n_written == ${#ref_files[@]})) || fail "$name wrote $n_written files, vigil run ${#ref_files[@]}"
  # Seed 003's summary line and cause, and seed 000's summary line.
  for expected in "buffer holds 921600 float32 elements" "640 × 480" \
                  "has dtype int32, the model expects float32"; do
    grep -qF "$expected" "$tmp/$name.out" || fail "$name's output lacks '$expected'"
  done
done

# ---- 5. on a GPU: the installed CUDA module is the one loaded ---------------------
if [[ "$cuda_module" == 1 ]] && nvidia-smi -L >/dev/null 2>&1; then
  echo "-- c-cmake: run with cuda"
  rc=0
  "$tmp/c-cmake/vigil_example_c" "$model" "$input" "$tmp/out-cuda" cuda >"$tmp/cuda.out" 2>&1 || rc=$?
  module=$(readlink -f "$lib/vigil/libvigil_cuda.so")
  if ((rc != 0)); then
    cat "$tmp/cuda.out" >&2
    fail "the C example exited $rc with cuda"
  elif ! grep -q "runs on cuda" "$tmp/cuda.out" || ! grep -qF "$module" "$tmp/cuda.out"; then
    cat "$tmp/cuda.out" >&2
    fail "the C example did not run on cuda with the installed module $module"
  fi
else
  echo "-- (no CUDA module or no GPU: the CUDA run is skipped)"
fi

if ((failures)); then
  echo "install test: $failures failure(s)" >&2
  exit 1
fi
echo "install test: passed (${#programs[@]} example builds, ${#ref_files[@]} output(s) each, bit-identical)"
