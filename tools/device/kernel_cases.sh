#!/usr/bin/env bash
# Runs on the GPU machine: each kernel's own GPU time (Nsight Compute,
# tools/device/kernel_times.py) for cases as the A/B scripts name them,
# MODEL:DTYPE:BATCH[:tf32]: one warm-up run and one more, node by node
# (no CUDA graph). Writes OUT/kernels_CASE.csv and prints the grouping.
#   tools/device/kernel_cases.sh DEVBUILD OUT "CASES" [TOP]
set -u
b=$(cd "${1:?devbuild dir}" && pwd)
out=${2:?output dir}
cases=${3:?cases}
top=${4:-30}
mkdir -p "$out"
export VIGIL_CUDA_MODULE=$b/libvigil_cuda.so PYTHONUNBUFFERED=1
. "$(dirname "$0")/bench_cases.sh"
export_cases "$cases"
ncu=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null) || { echo "no ncu here"; exit 1; }
for c in $cases; do
  IFS=: read -r m d n t <<<"$c"
  read -r -a a <<<"$(bench_args "$m" "$d" "$n" "${t:-}")"
  name=${c//:/_}
  "$ncu" --metrics gpu__time_duration.sum --csv --print-units base "$b/vigil" bench "${a[@]}" --outputs-on-device \
    --no-precision-hint --cuda-graphs off --warmup 1 --iters 1 >"$out/kernels_$name.csv" 2>"$out/ncu_$name.err"
  echo "== $c"
  python3 "$(dirname "$0")/kernel_times.py" "$out/kernels_$name.csv" --runs 2 --top "$top"
done
