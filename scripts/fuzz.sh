#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz) with clang into build-fuzz and
# runs each for RUNS executions (default 10,000,000) from a seed corpus, one
# target at a time; prints executions, exec/s, wall time, coverage and crashes
# per target (docs/fuzzing.md). Needs clang and libFuzzer (clang 14 or later);
# not part of scripts/test.sh.
#
#   scripts/fuzz.sh [RUNS [TARGET...]]      TARGET: onnx_model npy tensor_proto elf ld_so_cache isolation_wire
#
# The corpus of each target grows in build-fuzz/corpus/TARGET between runs;
# a crashing input is written to build-fuzz/artifacts/TARGET/ and the script
# exits non-zero after the last target. VIGIL_FUZZ_SECONDS=S stops each
# target after S seconds if RUNS is not reached first (the figures then say
# how many ran).
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-10000000}
shift || true
all=(onnx_model npy tensor_proto elf ld_so_cache isolation_wire)
targets=("$@")
((${#targets[@]})) || targets=("${all[@]}")
build=build-fuzz

for tool in clang clang++; do
  command -v "$tool" >/dev/null || { echo "fuzz.sh: $tool not found (apt-get install clang)" >&2; exit 2; }
done
launcher=()
if command -v ccache >/dev/null; then
  export CCACHE_BASEDIR=$PWD CCACHE_NOHASHDIR=1
  launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
echo "== configuring $build (clang, libFuzzer + ASan + UBSan)"
CC=clang CXX=clang++ cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DVIGIL_FUZZ=ON \
  -DVIGIL_BUILD_TESTS=OFF -DVIGIL_PYTHON=OFF -DVIGIL_CUDA=OFF "${launcher[@]}" >/dev/null
build_targets=(--target fuzz_make_seeds)
for t in "${targets[@]}"; do build_targets+=(--target "fuzz_$t"); done
echo "== building ${targets[*]}"
cmake --build "$build" -j"$(nproc)" "${build_targets[@]}" >/dev/null

# Seeds: our encoders' output, then files from the repository and the system.
seeds=$build/seeds
rm -rf "$seeds"
"$build/tests/fuzz/fuzz_make_seeds" "$seeds"
mkdir -p "$seeds/elf"
add_seeds() {  # DIR MAX_BYTES COUNT FILE...: the first COUNT existing files of at most MAX_BYTES
  local dir=$1 max=$2 count=$3 n=0 f
  shift 3
  for f in "$@"; do
    [[ -f "$f" && $(stat -c %s "$f") -le $max ]] || continue
    cp "$f" "$dir/seed$n-$(basename "$f")"
    n=$((n + 1))
    ((n < count)) || break
  done
}
testdata=/usr/share/libonnx-testdata/data/node
shopt -s nullglob
add_seeds "$seeds/npy" 4096 20 tests/models/*/*/*.npy
add_seeds "$seeds/tensor_proto" 4096 40 "$testdata"/test_{cast,abs,add,reshape,gather,where,argmax}*/test_data_set_0/*.pb
add_seeds "$seeds/onnx_model" 8192 40 "$testdata"/test_{abs,add,conv,if,loop,scan,reshape,gather,cast,split}*/model.onnx
add_seeds "$seeds/ld_so_cache" 65536 1 /etc/ld.so.cache
add_seeds "$seeds/elf" 65536 12 /lib/x86_64-linux-gnu/lib{dl,util,anl,rt,attr,mnl,pthread}.so.* /usr/bin/true
# A small shared object with every dynamic entry the reader looks at.
if printf 'int f(void) { return 1; }\n' |
   cc -x c - -shared -fPIC -nostdlib -o "$seeds/elf/tiny.so" -Wl,--build-id -Wl,-soname,libtiny.so.1 \
     -Wl,-rpath,'$ORIGIN/../lib' -Wl,--disable-new-dtags -Wl,--no-as-needed /lib/x86_64-linux-gnu/libm.so.6 2>/dev/null; then
  printf 'int g(void) { return 2; }\n' |
    cc -x c - -shared -fPIC -nostdlib -o "$seeds/elf/tiny-runpath.so" -Wl,--build-id -Wl,-rpath,/opt/a:/opt/b \
      -Wl,--enable-new-dtags 2>/dev/null || true
fi

declare -A max_len=([onnx_model]=8192 [npy]=4096 [tensor_proto]=4096 [elf]=65536 [ld_so_cache]=65536
                    [isolation_wire]=4096)
failed=()
report=()
for t in "${targets[@]}"; do
  corpus=$build/corpus/$t artifacts=$build/artifacts/$t log=$build/logs/$t.log
  mkdir -p "$corpus" "$artifacts" "$(dirname "$log")"
  echo "== fuzz_$t: $runs runs, max_len ${max_len[$t]}, seeds $(ls "$seeds/$t" | wc -l)"
  start=$(date +%s.%N)
  touch "$build/logs/$t.start"
  rc=0
  limit=()
  [[ -n "${VIGIL_FUZZ_SECONDS:-}" ]] && limit=(-max_total_time="$VIGIL_FUZZ_SECONDS")
  "$build/tests/fuzz/fuzz_$t" "$corpus" "$seeds/$t" -runs="$runs" -max_len="${max_len[$t]}" \
    -print_final_stats=1 -timeout=10 -rss_limit_mb=2048 -artifact_prefix="$artifacts/" "${limit[@]}" >"$log" 2>&1 || rc=$?
  wall=$(echo "$(date +%s.%N) - $start" | bc)
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  cov=$(grep -oE 'cov: [0-9]+ ft: [0-9]+' "$log" | tail -1)
  crashes=$(find "$artifacts" -type f -newer "$build/logs/$t.start" | wc -l)
  line=$(printf '%-15s execs %-10s exec/s %-7s wall %7.1fs  %-20s crashes %s (rc %s)' "$t" "${execs:-?}" \
         "${rate:-?}" "$wall" "${cov:-cov: ?}" "$crashes" "$rc")
  echo "$line"
  report+=("$line")
  if ((rc != 0 || crashes != 0)); then
    failed+=("$t")
    grep -m1 -E 'ERROR: |runtime error|deadly signal' "$log" || true
    echo "   log: $log; inputs: $artifacts"
  fi
done
echo "== summary ($runs runs each)"
printf '%s\n' "${report[@]}"
if ((${#failed[@]})); then
  echo "fuzz.sh: findings in: ${failed[*]}" >&2
  exit 1
fi
