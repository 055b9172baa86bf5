#!/usr/bin/env bash
# Runs on the GPU machine: the GPU time and executed instructions of the
# kernels whose names match REGEX (Nsight Compute, each kernel alone, clocks
# at base), for one case as the A/B scripts name it, MODEL:DTYPE:BATCH[:tf32],
# with an old and a new module alternating twice. The first COUNT matching
# launches of each run (default 6) are printed, one line each.
#   tools/device/kernel_ab.sh DEVBUILD OLD_MODULE OUT CASE REGEX [COUNT]
# DEVBUILD holds the stripped vigil and the new libvigil_cuda.so; OLD_MODULE
# is the libvigil_cuda.so to compare with.
set -u
b=$(cd "${1:?devbuild dir}" && pwd)
old=${2:?old libvigil_cuda.so}
out=${3:?output dir}
case_=${4:?case}
regex=${5:?kernel name regex}
count=${6:-6}
mkdir -p "$out"
export PYTHONUNBUFFERED=1
. "$(dirname "$0")/bench_cases.sh"
export_cases "$case_"
IFS=: read -r m d n t <<<"$case_"
read -r -a a <<<"$(bench_args "$m" "$d" "$n" "${t:-}")"
ncu=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null) || { echo "no ncu here"; exit 1; }
for round in 1 2; do
  for which in old new; do
    mod=$b/libvigil_cuda.so
    [ "$which" = old ] && mod=$old
    csv=$out/kernels_${which}_$round.csv
    VIGIL_CUDA_MODULE=$mod "$ncu" -k "regex:$regex" -c "$count" --metrics gpu__time_duration.sum,smsp__inst_executed.sum \
      --csv --print-units base "$b/vigil" bench "${a[@]}" --outputs-on-device --no-precision-hint --cuda-graphs off \
      --warmup 1 --iters 1 >"$csv" 2>"$out/ncu_${which}_$round.err"
    python3 - "$csv" "$which" <<'PY'
import csv, io, sys
text = open(sys.argv[1], errors="replace").read()
start = text.find('"ID"')
if start < 0:
    raise SystemExit(f"{sys.argv[1]}: no ncu CSV")
rows = {}
for r in csv.DictReader(io.StringIO(text[start:])):
    rows.setdefault(r["ID"], {"name": r["Kernel Name"].split("(")[0][-60:]})[r["Metric Name"]] = r["Metric Value"]
for k in rows.values():
    print(f"{sys.argv[2]:4} {k['name']:60} {k.get('gpu__time_duration.sum', '?'):>10} ns {k.get('smsp__inst_executed.sum', '?'):>14} instructions")
PY
  done
done
