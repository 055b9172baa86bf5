#!/usr/bin/env bash
# Runs on the GPU machine: each of issue 6's switches, before and after, in
# one call on one GPU (fp16, inputs already on the GPU, p50 of `vigil bench`).
#   tools/device/speedup_check.sh DEVBUILD OUT [MODELS] [BATCHES]
# DEVBUILD: the current stripped vigil and libvigil_cuda.so, and optionally
# DEVBUILD/before/{vigil,libvigil_cuda.so}, an earlier build (its own binary:
# the module interface version may differ). Columns:
#   before      the earlier build, as it ran by default
#   no graphs   current build, --cuda-graphs off
#   graphs      current build, default (CUDA graphs recorded and replayed)
#   -attention  graphs, VIGIL_FUSE_ATTENTION=0 (the unfused attention chain)
#   -depthwise  graphs, VIGIL_DEPTHWISE=cudnn (depthwise convs through cuDNN)
# Models are exported as bench/peer_bench.py does, into /tmp/peer.
set -u
b=$(cd "${1:?devbuild dir}" && pwd)
out=${2:?output dir}
models=${3:-resnet50,mobilenet_v2,vit_b_16}
batches=${4:-1,64}
mkdir -p "$out" /tmp/peer
export PYTHONUNBUFFERED=1
python3 - "$models" <<'PY'
import sys
sys.path.insert(0, "bench")
import peer_bench
for name in sys.argv[1].split(","):
    model, _ = peer_bench.build(name)
    print("exported", peer_bench.export(model, name, "fp16", "/tmp/peer"))
PY
p50() { python3 -c "import json,sys; j=json.load(sys.stdin); print(f\"{j['p50_ms']:.3f}\")" 2>/dev/null || echo error; }
bench() {  # DIR ENV... -- ARGS...
  local dir=$1; shift
  env VIGIL_CUDA_MODULE=$dir/libvigil_cuda.so "$@"
}
echo "| model | batch | before | no graphs | graphs | -attention | -depthwise | before/graphs |"
echo "|---|---|---|---|---|---|---|---|"
for m in ${models//,/ }; do
  for n in ${batches//,/ }; do
    f=/tmp/peer/${m}_fp16.onnx
    common=(bench "$f" --backend cuda --no-fallback --dim N=$n --warmup 10 --iters 100 --inputs-on-device --json)
    t0=-
    [ -x "$b/before/vigil" ] && t0=$(bench "$b/before" "$b/before/vigil" "${common[@]}" | p50)
    t1=$(bench "$b" "$b/vigil" "${common[@]}" --cuda-graphs off | p50)
    t2=$(bench "$b" "$b/vigil" "${common[@]}" | p50)
    t3=-; t4=-
    [ "$m" = vit_b_16 ] && t3=$(bench "$b" VIGIL_FUSE_ATTENTION=0 "$b/vigil" "${common[@]}" | p50)
    [ "$m" = mobilenet_v2 ] && t4=$(bench "$b" VIGIL_DEPTHWISE=cudnn "$b/vigil" "${common[@]}" | p50)
    r=$(python3 -c "print(f'{$t0/$t2:.2f}x')" 2>/dev/null || echo -)
    echo "| $m | $n | $t0 | $t1 | $t2 | $t3 | $t4 | $r |"
  done
done | tee "$out/switches.md"
for m in ${models//,/ }; do
  echo "== $m batch 1: what the graphs did"
  VIGIL_CUDA_MODULE=$b/libvigil_cuda.so "$b/vigil" bench /tmp/peer/${m}_fp16.onnx --backend cuda --no-fallback \
    --dim N=1 --warmup 3 --iters 20 --inputs-on-device | grep -E "latency|cuda graphs"
  echo "== profile $m batch 64"
  VIGIL_CUDA_MODULE=$b/libvigil_cuda.so "$b/vigil" bench /tmp/peer/${m}_fp16.onnx --backend cuda --no-fallback \
    --dim N=64 --warmup 3 --iters 5 --inputs-on-device --profile "/tmp/trace_${m}_b64.json" --profile-top 10 2>&1 \
    | sed -n '1,40p'
done
