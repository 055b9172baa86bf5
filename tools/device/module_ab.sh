#!/usr/bin/env bash
# Runs on the GPU machine: before/after timings of a change inside the CUDA
# module (a kernel), in one call on one GPU:
#   tools/device/module_ab.sh VIGIL OLD_MODULE NEW_MODULE OUT CASES [FLAGS]
# Each case of CASES is MODEL:DTYPE:BATCH (bench/export_models.py's exports
# in /tmp/peer, made here when missing); FLAGS go to every `vigil bench`
# (e.g. --layout nchw). `vigil bench` p50 of 50 runs, inputs and outputs on
# the GPU, the old and the new module alternating twice.
set -u
vigil=${1:?vigil}
old=${2:?old libvigil_cuda.so}
new=${3:?new libvigil_cuda.so}
out=${4:?output dir}
cases=${5:?cases}
flags=${6:-}
mkdir -p "$out" /tmp/peer
. "$(dirname "$0")/bench_cases.sh"
export_cases "$cases"
{
echo "| case | old | new | old | new | old/new |"
echo "|---|---|---|---|---|---|"
for c in $cases; do
  IFS=: read -r m d n <<<"$c"
  r=()
  for i in 1 2; do
    for mod in "$old" "$new"; do
      # shellcheck disable=SC2086
      r+=("$(VIGIL_CUDA_MODULE=$mod "$vigil" bench /tmp/peer/${m}_$d.onnx --backend cuda --no-fallback --dim N=$n \
        --inputs-on-device --outputs-on-device --no-precision-hint --warmup 10 --iters 50 $flags --json 2>/dev/null | p50)")
    done
  done
  ratio=$(python3 -c "import sys
try: print(f'{(float(sys.argv[1])+float(sys.argv[3]))/(float(sys.argv[2])+float(sys.argv[4])):.2f}x')
except Exception: print('-')" "${r[@]}")
  echo "| $c $flags | ${r[0]} | ${r[1]} | ${r[2]} | ${r[3]} | $ratio |"
done
} | tee "$out/module_ab.md"
