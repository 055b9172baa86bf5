#!/usr/bin/env bash
# Runs on the GPU machine: the checks of the BERT attention fusion and of
# float32 NHWC under TF32, in one call.
#   tools/device/bert_fusion_check.sh DEVBUILD OUT
# DEVBUILD holds the stripped vigil, libvigil_cuda.so and vigil_cuda_tests.
#  1. every CUDA test (the masked attention cases among them);
#  2. vigil compare, CUDA against the CPU reference, on the tiny BERT test
#     models with a padding mask and a fully masked row, and on BERT-base
#     float16 at batch 2 with padding;
#  3. the float32 models with --tf32 (NHWC now) against the CPU reference;
#  4. tools/device/ab_probe.sh: BERT-base float16 with the fusion off and on,
#     and the profile of batch 64.
set -u
b=$(cd "${1:?devbuild dir}" && pwd)
out=${2:?output dir}
mkdir -p "$out" /tmp/peer
export VIGIL_CUDA_MODULE=$b/libvigil_cuda.so PYTHONUNBUFFERED=1
echo "== 1. CUDA tests"
"$b/vigil_cuda_tests" 2>&1 | tail -n 400 >"$out/cuda_tests.log"
grep -E "^\[  (PASSED|FAILED)|^\[==========\]|tests? (ran|skipped)" "$out/cuda_tests.log" | tail -8
grep -E "^\[  FAILED" "$out/cuda_tests.log" | head -20
echo "== 2. compare: fused BERT on CUDA against the CPU reference"
python3 - <<'EOF'
import numpy as np
ids = (np.arange(3 * 11).reshape(3, 11) * 37 + 5) % 64
mask = np.ones((3, 11), dtype=np.int64); mask[1, 7:] = 0; mask[2, :] = 0
np.save("/tmp/peer/tiny_ids.npy", ids.astype(np.int64)); np.save("/tmp/peer/tiny_mask.npy", mask)
rng = np.random.default_rng(0)
np.save("/tmp/peer/base_ids.npy", rng.integers(0, 30522, (2, 128), dtype=np.int64))
m = np.ones((2, 128), dtype=np.int64); m[1, 90:] = 0
np.save("/tmp/peer/base_mask.npy", m)
np.save("/tmp/peer/image_1.npy", rng.standard_normal((1, 3, 224, 224)).astype(np.float32))
EOF
for dt in fp32 fp16; do
  "$b/vigil" compare tests/models/bert_tiny/bert_tiny_$dt.onnx -i input_ids=/tmp/peer/tiny_ids.npy \
    -i attention_mask=/tmp/peer/tiny_mask.npy --rtol 2e-2 --atol 2e-2 2>&1 | tail -6
done
python3 bench/export_models.py /tmp/peer --models bert_base --dtype fp16 >/dev/null
"$b/vigil" compare /tmp/peer/bert_base_fp16.onnx -i input_ids=/tmp/peer/base_ids.npy \
  -i attention_mask=/tmp/peer/base_mask.npy --rtol 2e-2 --atol 2e-2 2>&1 | tail -6
"$b/vigil" inspect /tmp/peer/bert_base_fp16.onnx --backend cuda 2>&1 | grep -iE "attention|nodes" | head -5
echo "== 3. float32 with --tf32 (NHWC) against the CPU reference, batch 1"
python3 bench/export_models.py /tmp/peer --models resnet50,mobilenet_v2 --dtype fp32 >/dev/null
for m in resnet50 mobilenet_v2; do
  "$b/vigil" compare /tmp/peer/${m}_fp32.onnx -i input_0=/tmp/peer/image_1.npy --tf32 --rtol 5e-2 --atol 5e-2 2>&1 |
    tail -4
done
echo "== 4. BERT-base float16: the fusion off (VIGIL_FUSE_ATTENTION=0) and on"
bash tools/device/ab_probe.sh "$b" "$out" VIGIL_FUSE_ATTENTION=0 \
  "bert_base:fp16:1 bert_base:fp16:64 vit_b_16:fp16:64" "bert_base:fp16:64"
