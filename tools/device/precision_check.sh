#!/usr/bin/env bash
# Runs on the GPU machine: a float32 model computed in float16 (--fp16, the
# library's run_as_float16) and `vigil bench`'s --tf32/--fp16 comparison.
#   tools/device/precision_check.sh DEVBUILD OUT "CASES"
# DEVBUILD holds the stripped vigil and libvigil_cuda.so (and, optionally,
# vigil_cuda_tests, which then runs first). Each case of CASES is
# MODEL:BATCH. Models are exported as bench/peer_bench.py exports them, in
# float32 and in float16 (BERT's float16 is its float32 export converted by
# peer_bench's to_fp16); per case:
#   - `vigil bench MODEL_fp32` on cuda, inputs and outputs on the GPU: its
#     "precision:" lines (the exact float32 p50, and --tf32 and --fp16 timed
#     the same way, with how far they move the outputs);
#   - `vigil bench MODEL_fp16` (the float16 export): what --fp16 should match;
#   - CNNs: `vigil run MODEL_fp32 --fp16` on cuda against the CPU's exact
#     float32 on a normal random input (relative L2, top-1 agreement).
set -u
b=$(cd "${1:?devbuild dir}" && pwd)
out=${2:?output dir}
cases=${3:?cases}
mkdir -p "$out" /tmp/peer
export PYTHONUNBUFFERED=1 VIGIL_CUDA_MODULE=$b/libvigil_cuda.so
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
if [ -x "$b/vigil_cuda_tests" ]; then
  "$b/vigil_cuda_tests" --gtest_brief=1 2>&1 | tail -15 | tee "$out/cuda_tests.txt"
fi
declare -A want
for c in $cases; do want["${c%%:*}"]=1; done
for m in "${!want[@]}"; do
  for d in fp32 fp16; do
    python3 bench/export_models.py /tmp/peer --models "$m" --dtype "$d" >/dev/null || echo "export of $m $d failed"
  done
done
python3 "$(dirname "$0")/bert_inputs.py" /tmp/peer --batches 1,8,64
for c in $cases; do
  IFS=: read -r m n <<<"$c"
  extra=()
  [ "$m" = bert_base ] && extra=(-i input_ids=/tmp/peer/bert_ids_$n.npy -i attention_mask=/tmp/peer/bert_mask_$n.npy)
  common=(--backend cuda --no-fallback --dim N=$n --inputs-on-device --outputs-on-device --warmup 10 --iters 50)
  echo "== $m batch $n: float32 model"
  "$b/vigil" bench /tmp/peer/${m}_fp32.onnx "${common[@]}" "${extra[@]}" 2>&1 | grep -E "^(latency|precision|error)" |
    tee "$out/${m}_b$n.txt"
  echo "== $m batch $n: float16 export"
  "$b/vigil" bench /tmp/peer/${m}_fp16.onnx "${common[@]}" "${extra[@]}" 2>&1 | grep -E "^(latency|error)"
  if [ "$m" != bert_base ]; then
    echo "== $m batch $n: --fp16 on cuda against the CPU's float32"
    python3 -c "
import numpy as np
np.save('/tmp/peer/x32_$n.npy', np.random.default_rng($n).standard_normal(($n, 3, 224, 224)).astype(np.float32))"
    rm -rf /tmp/peer/o16 /tmp/peer/o32
    "$b/vigil" run /tmp/peer/${m}_fp32.onnx -i input_0=/tmp/peer/x32_$n.npy --backend cuda --no-fallback --fp16 \
      -o /tmp/peer/o16 >/dev/null 2>&1 || echo "cuda --fp16 run failed"
    "$b/vigil" run /tmp/peer/${m}_fp32.onnx -i input_0=/tmp/peer/x32_$n.npy -o /tmp/peer/o32 >/dev/null 2>&1 ||
      echo "cpu run failed"
    python3 -c "
import glob, numpy as np
for f in sorted(glob.glob('/tmp/peer/o32/*.npy')):
    w = np.load(f).astype(np.float64); g = np.load(f.replace('o32', 'o16')).astype(np.float64)
    print('rel L2 %.3g, nan %d, top-1 agreement %.3f' % (np.linalg.norm(g - w) / np.linalg.norm(w), np.isnan(g).sum(),
          (g.argmax(-1) == w.argmax(-1)).mean()))"
  fi
done
