#!/usr/bin/env bash
# Runs on the GPU machine: the Triton backend's GPU checks in one call.
#   tools/device/triton_check.sh DEVBUILD SERVER OUT
# DEVBUILD holds, built on the build machine (sm_90) and stripped:
#   libtriton_vigil.so, libvigil.so.0, libvigil_cuda.so, vigil-worker, vigil
#   (<build>/triton/backends/vigil/ has the first four; the command is
#   <build>/src/cli/vigil), plus pyext/ and pylib/ as tools/device/stage_api.sh
#   makes them (the Python package for reference outputs, pytest).
# SERVER is a tritonserver binary, the unzipped nvidia-pytriton==0.7.0 wheel
# (scripts/triton_env.sh BUILD_DIR puts it in BUILD_DIR/triton/pytriton), or
# the wheel itself (55 MB; unzipped here into /tmp, 144 MB).
# python3 needs numpy and onnx (the tests write small models), torch and
# torchvision for the ResNet-50 export.
# Steps:
#   1. tests/triton with every model as KIND_GPU, 2 instances per model
#   2. ResNet-50 fp16 (bench/export_models.py: dynamic batch dim) served with
#      dynamic batching (max 64) by 2 instances on GPU 0: 1-image requests
#      from 128 clients, and 64-image requests from 8 clients, against
#      `vigil bench --backend cuda --dim N=64` in the same call (images/s)
#   3. with 2 or more GPUs: the same 1-image load with 2 instances on every
#      GPU, and the scaling over step 2
set -u
b=$(cd "${1:?devbuild dir}" && pwd)
server=${2:?tritonserver binary or unzipped pytriton wheel}
out=${3:?output dir}
mkdir -p "$out"
out=$(cd "$out" && pwd)
if [[ "$server" == *.whl ]]; then
  server=$(VIGIL_PYTRITON_WHEEL=$(cd "$(dirname "$server")" && pwd)/$(basename "$server") \
           scripts/triton_env.sh /tmp/triton_wheel python3) || exit 1
fi
[[ -d "$server" ]] && server=$server/pytriton/tritonserver/bin/tritonserver
[[ -x "$server" ]] || { echo "no tritonserver at $server"; exit 1; }
export PYTHONUNBUFFERED=1

# The backend folder, as the build tree stages it.
backends=/tmp/triton_backends
rm -rf "$backends" && mkdir -p "$backends/vigil"
cp "$b/libtriton_vigil.so" "$b/libvigil.so.0" "$b/libvigil_cuda.so" "$b/vigil-worker" "$backends/vigil/"
# The Python package for reference outputs, with the library beside it.
rm -rf /tmp/pyext_triton && mkdir -p /tmp/pyext_triton && cp -r "$b/pyext/vigil" /tmp/pyext_triton/
cp "$b/libvigil.so.0" "$b/libvigil_cuda.so" "$b/vigil-worker" /tmp/pyext_triton/vigil/
export PYTHONPATH=/tmp/pyext_triton${b:+:$b/pylib}

port=18600
start_server() {  # REPO LOG
  "$server" --model-repository="$1" --backend-directory="$backends" --http-address=127.0.0.1 \
    --grpc-address=127.0.0.1 --metrics-address=127.0.0.1 --http-port=$port --grpc-port=$((port + 1)) \
    --metrics-port=$((port + 2)) --exit-timeout-secs=10 > "$2" 2>&1 &
  server_pid=$!
  for _ in $(seq 1 300); do
    if python3 -c "import urllib.request,sys; sys.exit(urllib.request.urlopen('http://127.0.0.1:$port/v2/health/ready').status != 200)" 2>/dev/null; then
      return 0
    fi
    kill -0 $server_pid 2>/dev/null || break
    sleep 1
  done
  echo "the server did not become ready; the end of $2:"; tail -30 "$2"
  return 1
}
stop_server() { kill $server_pid 2>/dev/null; wait $server_pid 2>/dev/null; }

{
  echo "== machine"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  gpus=$(nvidia-smi -L | wc -l)
  python3 -c "import vigil; print('vigil', vigil.__version__, vigil.get_available_providers())"

  steps=${TRITON_CHECK_STEPS:-123}   # e.g. TRITON_CHECK_STEPS=3: the multi-GPU scaling only
  if [[ "$steps" == *1* ]]; then
  echo "== 1. tests/triton, KIND_GPU, 2 instances per model"
  VIGIL_TRITON_KIND=GPU VIGIL_TRITON_INSTANCES=2 VIGIL_TRITONSERVER="$server" VIGIL_TRITON_BACKEND_DIR="$backends" \
    VIGIL_TEST_MODELS=tests/models python3 -m pytest -q -p no:cacheprovider tests/triton 2>&1 | tail -40

  fi
  echo "== 2. ResNet-50 fp16 through Triton vs vigil bench (same call)"
  python3 bench/export_models.py /tmp/m --models resnet50 --dtype fp16 | tail -1
  model=/tmp/m/resnet50_fp16.onnx
  repo=/tmp/triton_resnet && rm -rf "$repo" && mkdir -p "$repo/resnet50/1" && cp "$model" "$repo/resnet50/1/model.onnx"
  write_config() {  # GPU list
    cat > "$repo/resnet50/config.pbtxt" <<EOF
backend: "vigil"
max_batch_size: 64
dynamic_batching { max_queue_delay_microseconds: 2000 preferred_batch_size: [ 64 ] }
instance_group [ { kind: KIND_GPU count: 2 gpus: [ $1 ] } ]
parameters { key: "cuda_graphs" value: { string_value: "true" } }
EOF
    # Triton's model_warmup: every batch size 1..64, twice, on each instance
    # at load, so that building plans for a new batch size and recording its
    # CUDA graph (start-up cost) is not in the measurement.
    for n in $(seq 1 64); do
      echo "model_warmup { name: \"b$n\" batch_size: $n count: 2 inputs { key: \"input_0\" value: { data_type: TYPE_FP16 dims: [ 3, 224, 224 ] random_data: true } } }"
    done >> "$repo/resnet50/config.pbtxt"
  }
  write_config 0
  if [[ "$steps" == *2* ]]; then
  echo "-- vigil bench, batch 64 (inputs copied from page-locked host memory each run, as the backend does)"
  "$b/vigil" bench "$model" --backend cuda --dim N=64 --iters 200 --json |
    python3 -c "import json,sys; j=json.load(sys.stdin); print(json.dumps({k: j[k] for k in ('p50_ms','runs_per_s','cuda_graphs')} | {'images_per_s': j['runs_per_s']*64}))"
  echo "-- vigil bench, batch 64, --inputs-on-device"
  "$b/vigil" bench "$model" --backend cuda --dim N=64 --iters 200 --inputs-on-device --json |
    python3 -c "import json,sys; j=json.load(sys.stdin); print(json.dumps({k: j[k] for k in ('p50_ms','runs_per_s')} | {'images_per_s': j['runs_per_s']*64}))"
  if start_server "$repo" "$out/server_gpu0.log"; then
    python3 -c "import urllib.request; print(urllib.request.urlopen('http://127.0.0.1:$port/v2/models/resnet50/config').read()[:700].decode())"
    echo "-- Triton: 1-image requests, 128 clients (8 processes x 16 threads), 2 instances on GPU 0"
    python3 tools/device/triton_bench.py $port resnet50 --input input_0 --shape 1,3,224,224 --datatype FP16 \
      --processes 8 --threads 16 --seconds 20 | tee "$out/triton_gpu0_1img.json"
    echo "-- Triton: 64-image requests, 8 clients"
    python3 tools/device/triton_bench.py $port resnet50 --input input_0 --shape 64,3,224,224 --datatype FP16 \
      --processes 4 --threads 2 --seconds 20
    stop_server
  fi
  elif [[ "$steps" == *3* ]] && start_server "$repo" "$out/server_gpu0.log"; then  # step 3's baseline
    echo "-- Triton: 1-image requests, 128 clients, 2 instances on GPU 0 (the baseline of step 3)"
    python3 tools/device/triton_bench.py $port resnet50 --input input_0 --shape 1,3,224,224 --datatype FP16 \
      --processes 8 --threads 16 --seconds 20 | tee "$out/triton_gpu0_1img.json"
    stop_server
  fi

  if [[ "$gpus" -ge 2 && "$steps" == *3* ]]; then
    echo "== 3. $gpus GPUs: 2 instances on each"
    write_config "$(seq -s, 0 $((gpus - 1)))"
    if start_server "$repo" "$out/server_all.log"; then
      python3 tools/device/triton_bench.py $port resnet50 --input input_0 --shape 1,3,224,224 --datatype FP16 \
        --processes 16 --threads 16 --seconds 20 | tee "$out/triton_all_1img.json"
      python3 -c "
import json; one = json.load(open('$out/triton_gpu0_1img.json')); all_ = json.load(open('$out/triton_all_1img.json'))
print(f\"scaling: {all_['items_per_s']:.0f} / {one['items_per_s']:.0f} images/s = {all_['items_per_s'] / one['items_per_s']:.2f}x on $gpus GPUs\")"
      stop_server
    fi
  fi
} 2>&1 | tee "$out/triton_check.txt"
