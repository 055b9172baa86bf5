#!/usr/bin/env bash
# Runs on the GPU machine: float32 products as 3xTF32 (split_tf32.h), in one
# call on one GPU:
#   tools/device/tf32x3_check.sh DEVBUILD OUT "CASES" [TESTS]
# DEVBUILD holds the stripped vigil and libvigil_cuda.so (and, optionally,
# vigil_cuda_tests, which runs first: the whole suite, or the gtest filter
# TESTS). Each case of CASES is MODEL:BATCH, the float32 export of
# bench/export_models.py, timed with `vigil bench` (inputs on the GPU, p50
# of 50 runs) twice with --no-tf32x3 ("before": CUDA cores only) and twice
# with the default ("after"), alternating. Then the accuracy of each way
# against the float64 evaluation (tools/device/tf32x3_truth.py, batch 4), and
# a per-node profile of the last case with the default.
set -u
b=$(cd "${1:?devbuild dir}" && pwd)
out=${2:?output dir}
cases=${3:?cases}
tests=${4:-}
mkdir -p "$out" /tmp/peer
export PYTHONUNBUFFERED=1 VIGIL_CUDA_MODULE=$b/libvigil_cuda.so
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/gpu.txt"
if [ -x "$b/vigil_cuda_tests" ]; then
  filter=()
  [ -n "$tests" ] && filter=(--gtest_filter="$tests")
  "$b/vigil_cuda_tests" "${filter[@]}" >"$out/cuda_tests.log" 2>&1
  echo "vigil_cuda_tests exit $?"
  grep -E "rel L2 to float64|FAILED|PASSED|SKIPPED \[" "$out/cuda_tests.log" | head -40
fi
declare -A want
for c in $cases; do want["${c%%:*}"]=1; done
for m in "${!want[@]}"; do
  python3 bench/export_models.py /tmp/peer --models "$m" --dtype fp32 >/dev/null || echo "export of $m failed"
done
python3 "$(dirname "$0")/bert_inputs.py" /tmp/peer
args_of() {  # MODEL BATCH
  local a=(/tmp/peer/${1}_fp32.onnx --backend cuda --no-fallback --dim N=$2 --inputs-on-device --outputs-on-device
           --no-precision-hint)
  [ "$1" = bert_base ] && a+=(-i input_ids=/tmp/peer/bert_ids_$2.npy -i attention_mask=/tmp/peer/bert_mask_$2.npy)
  echo "${a[@]}"
}
p50() { python3 -c "import json,sys; j=json.load(sys.stdin); print(f\"{j['p50_ms']:.3f}\")" 2>/dev/null || echo error; }
{
echo "| case | CUDA cores (--no-tf32x3) | 3xTF32 | CUDA cores | 3xTF32 | speed-up |"
echo "|---|---|---|---|---|---|"
for c in $cases; do
  IFS=: read -r m n <<<"$c"
  read -r -a a <<<"$(args_of "$m" "$n")"
  r=()
  for i in 1 2; do
    r+=("$("$b/vigil" bench "${a[@]}" --no-tf32x3 --warmup 10 --iters 50 --json | p50)")
    r+=("$("$b/vigil" bench "${a[@]}" --warmup 10 --iters 50 --json | p50)")
  done
  echo "| $c | ${r[0]} | ${r[1]} | ${r[2]} | ${r[3]} | $(python3 -c "print(f'{min(${r[0]},${r[2]})/min(${r[1]},${r[3]}):.2f}x')" 2>/dev/null || echo -) |"
done
} | tee "$out/ab.md"
python3 tools/device/tf32x3_truth.py "$b/vigil" --models "$(IFS=,; echo "${!want[*]}")" --batch 4 | tee "$out/truth.md"
last=${cases##* }
IFS=: read -r m n <<<"$last"
read -r -a a <<<"$(args_of "$m" "$n")"
"$b/vigil" bench "${a[@]}" --warmup 5 --iters 20 --profile "$out/profile.json" --profile-top 25 >"$out/profile.txt" 2>&1
tail -32 "$out/profile.txt"
