#!/usr/bin/env bash
# Runs on the GPU machine (see tools/device/README.md): vigil doctor against
# the real stack, next to nvidia-smi and PyTorch's own view, for the record.
# Usage: tools/device/doctor_on_gpu.sh VIGIL_BINARY OUT_DIR
set -u
vigil=${1:?vigil binary}
out=${2:?output dir}
mkdir -p "$out"
log() { echo; echo "===== $*"; }
{
  log "nvidia-smi"
  nvidia-smi --query-gpu=name,driver_version,compute_cap,memory.total,memory.free --format=csv
  nvidia-smi | head -5
  log "PyTorch's view"
  python3 - <<'PY'
import torch, os
print("torch", torch.__version__, "cuda", torch.version.cuda)
print("torch.backends.cudnn.version()", torch.backends.cudnn.version())
print("device", torch.cuda.get_device_name(0), torch.cuda.get_device_capability(0))
import importlib.util
spec = importlib.util.find_spec("nvidia.cudnn")
print("nvidia.cudnn wheel at", list(spec.submodule_search_locations) if spec else None)
PY
  log "vigil doctor"
  "$vigil" doctor; echo "exit $?"
  log "vigil doctor --json"
  "$vigil" doctor --json > "$out/doctor.json"; echo "exit $?"
  log "vigil doctor with PyTorch's cuDNN first on LD_LIBRARY_PATH"
  cudnn_dir=$(python3 -c 'import nvidia.cudnn, os; print(os.path.join(list(nvidia.cudnn.__path__)[0], "lib"))' 2>/dev/null)
  LD_LIBRARY_PATH="$cudnn_dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$vigil" doctor; echo "exit $?"
  log "CUDA_VISIBLE_DEVICES=''"
  CUDA_VISIBLE_DEVICES="" "$vigil" doctor; echo "exit $?"
  log "CUDNN_LIB_CONFIG=GRAPH_JIT_ONLY"
  CUDNN_LIB_CONFIG=GRAPH_JIT_ONLY "$vigil" doctor; echo "exit $?"
  log "CUDNN_LIB_CONFIG=BOGUS and deprecated logging variables"
  CUDNN_LIB_CONFIG=BOGUS CUDNN_LOGINFO_DBG=1 CUDNN_LOGDEST_DBG=/proc/nope/log "$vigil" doctor; echo "exit $?"
  log "vigil doctor --binary libtorch_cuda.so"
  torch_lib=$(python3 -c 'import torch, os; print(os.path.join(os.path.dirname(torch.__file__), "lib", "libtorch_cuda.so"))')
  "$vigil" doctor --binary "$torch_lib"; echo "exit $?"
  log "vigil doctor --binary /lib/x86_64-linux-gnu/libcudnn_cnn.so.9"
  "$vigil" doctor --binary "$(readlink -f /lib/x86_64-linux-gnu/libcudnn_cnn.so.9)"; echo "exit $?"
} 2>&1 | tee "$out/doctor_on_gpu.log"
