#!/usr/bin/env bash
# Runs on the GPU machine: time to first result (load, first run) and the
# steady p50 under several developer switches, in fresh processes, in one
# call on one GPU.
#   tools/device/first_result_ab.sh DEVBUILD OUT "ENV=V ENV2=V2 ..." CASES
# Each variant of the third argument is ENV=VALUE[,ENV2=VALUE2] ("X=1":
# none) or one CLI flag (--no-measure-first-run); each
# case of CASES is MODEL:DTYPE:BATCH. Models as bench/export_models.py
# exports them (BERT is not handled: CNNs and ViT). Every (case, variant)
# runs twice, the variants alternating, so that drift and cold caches show.
# FRESH_CACHE=1: every process gets an empty CUDA compute cache
# (CUDA_CACHE_PATH), as on a machine's first run.
set -u
b=$(cd "${1:?devbuild dir}" && pwd)
out=${2:?output dir}
variants=${3:?variants}
cases=${4:?cases}
mkdir -p "$out" /tmp/peer
export VIGIL_CUDA_MODULE=$b/libvigil_cuda.so
. "$(dirname "$0")/bench_cases.sh"
export_cases "$cases"
fields() { python3 -c "
import json,sys
try:
    j=json.load(sys.stdin); notes='; '.join(n[:170] for n in j.get('backend_notes', []) if 'first runs' in n)
    print(f\"{j['time_to_first_result_ms']:.0f} ({j['load_ms']:.0f}+{j['first_run_ms']:.0f}) p50 {j['p50_ms']:.3f} {notes}\")
except Exception as e: print('error')"; }
{
echo "| case | variant | run 1: first result (load+first run) ms, p50 ms | run 2 |"
echo "|---|---|---|---|"
for c in $cases; do
  IFS=: read -r m d n <<<"$c"
  declare -A r=()
  for i in 1 2; do
    for v in $variants; do
      if [[ $v == --* ]]; then e=X=1 flag=$v; else e=$v flag=--no-fallback; fi
      cache=()
      [ "${FRESH_CACHE:-0}" = 1 ] && cache=(CUDA_CACHE_PATH="$(mktemp -d)")
      r["$v.$i"]=$(env ${e//,/ } "${cache[@]}" "$b/vigil" bench /tmp/peer/${m}_$d.onnx --backend cuda --no-fallback $flag --dim N=$n \
        --inputs-on-device --outputs-on-device --warmup 10 --iters 50 --no-precision-hint --json 2>/dev/null | fields)
    done
  done
  for v in $variants; do echo "| $c | $v | ${r[$v.1]} | ${r[$v.2]} |"; done
  unset r
done
} | tee "$out/first_result_ab.md"
