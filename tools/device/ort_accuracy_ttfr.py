#!/usr/bin/env python3
"""Issue 19's goals 5 and 7 against ONNX Runtime's CUDA provider, on the GPU
machine, after bench/export_models.py wrote /tmp/peer/<model>_<dtype>.onnx
and tools/device/ort_wheel.sh unpacked the wheel (PYTHONPATH=/tmp/ortw):

    python3 tools/device/ort_accuracy_ttfr.py VIGIL [--models resnet50,...] [--batch 8] [--out DIR]

Accuracy (goal 7): each float16 model is widened to float64 (every float16
initializer, attribute tensor, declared type and Cast target becomes
float64; the same weights, none of the per-op float16 rounding) and run on
vigil's CPU backend in float64: the exact evaluation. vigil CUDA and ORT
CUDA (default provider options) each run the float16 model on the same
float16 input; the table gives each one's relative L2 distance from the
exact output, in float64. --vigil-env ENV=VALUE adds a column for vigil CUDA
with that switch set (a fusion's before/after); --no-ort leaves ORT out (its
column reads nan) where the wheel has not been carried.

Time to first result (goal 5): in a fresh process each, for the float32
and float16 models: vigil's `bench --iters 1 --warmup 0` time to first
result (creating the session: reading the model, loading the CUDA module
and cuDNN, planning; then the first run, inputs from the host, outputs to
the host) against ORT's InferenceSession creation with the CUDA provider at
its default cudnn_conv_algo_search=EXHAUSTIVE plus its first run (same
inputs, outputs to the host). ORT's preload_dlls() (loading PyTorch's CUDA
and cuDNN libraries) is timed apart and not counted. Two fresh processes
per side; both are printed.
"""
import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np
import onnx
from onnx import numpy_helper

F16, F64 = onnx.TensorProto.FLOAT16, onnx.TensorProto.DOUBLE


def widen(src, dst, narrow=None):
    """src with every `narrow` (default float16) tensor, type and Cast widened to float64."""
    narrow = F16 if narrow is None else narrow
    m = onnx.load(src)
    g = m.graph

    def wide(t):
        t.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(t).astype(np.float64), t.name))

    for t in g.initializer:
        if t.data_type == narrow:
            wide(t)
    for v in list(g.input) + list(g.output) + list(g.value_info):
        if v.type.tensor_type.elem_type == narrow:
            v.type.tensor_type.elem_type = F64
    for n in g.node:
        for a in n.attribute:
            if a.name == "to" and a.i == narrow:
                a.i = F64
            if a.type == onnx.AttributeProto.TENSOR and a.t.data_type == narrow:
                wide(a.t)
    onnx.save(m, dst)


def inputs_for(model, batch, dtype):
    if model == "bert_base":
        rng = np.random.default_rng(0)
        return {"input_ids": rng.integers(0, 30522, (batch, 128), dtype=np.int64),
                "attention_mask": np.ones((batch, 128), dtype=np.int64)}
    return {"input_0": np.random.default_rng(batch).standard_normal((batch, 3, 224, 224)).astype(dtype)}


def save_inputs(feeds, out, tag):
    args = []
    for k, v in feeds.items():
        path = os.path.join(out, f"{tag}_{k}.npy")
        np.save(path, v)
        args += ["-i", f"{k}={path}"]
    return args


def run_vigil(vigil, model, args, backend, out_dir, env=None):
    os.makedirs(out_dir, exist_ok=True)
    cmd = [vigil, "run", model, "--backend", backend, "--output-dir", out_dir] + args
    if backend == "cuda":
        cmd.append("--no-fallback")
    r = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ, **(env or {})))
    if r.returncode != 0:
        return None, (r.stdout + r.stderr).strip().splitlines()[:3]
    m = onnx.load(model, load_external_data=False)
    import re
    outs = [np.load(os.path.join(out_dir, re.sub(r"[^A-Za-z0-9._-]", "_", o.name) + ".npy")) for o in m.graph.output]
    return outs, None


def rel_l2(got, want):
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    if not np.all(np.isfinite(got)):
        return float("nan")
    return float(np.linalg.norm(got - want) / np.linalg.norm(want))


ORT_FIRST = r"""
import json, sys, time
import numpy as np
t0 = time.perf_counter()
import onnxruntime as ort
ort.preload_dlls()
t1 = time.perf_counter()
so = ort.SessionOptions(); so.log_severity_level = 3
feeds = {k: np.load(v) for k, v in json.loads(sys.argv[2]).items()}
t2 = time.perf_counter()
s = ort.InferenceSession(sys.argv[1], so, providers=["CUDAExecutionProvider", "CPUExecutionProvider"])
s.run(None, feeds)
t3 = time.perf_counter()
print(json.dumps({"import_preload_ms": (t1 - t0) * 1e3, "first_result_ms": (t3 - t2) * 1e3,
                  "providers": s.get_providers()}))
"""


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("vigil")
    p.add_argument("--models", default="resnet50,mobilenet_v2,vit_b_16,bert_base")
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--out", default="/tmp/ort_acc")
    p.add_argument("--skip-accuracy", action="store_true")
    p.add_argument("--skip-first", action="store_true")
    p.add_argument("--no-ort", action="store_true", help="accuracy of vigil alone (no onnxruntime-gpu here)")
    p.add_argument("--vigil-env", default="",
                   help="ENV=VALUE: also vigil CUDA with this set (a before/after switch), in its own column")
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)
    ort = None
    if not a.no_ort:
        import onnxruntime as ort
        ort.preload_dlls()
    print(f"onnxruntime {ort.__version__ if ort else '(not run)'}, batch {a.batch}", flush=True)
    alt_env = dict([a.vigil_env.split("=", 1)]) if a.vigil_env else None
    if not a.skip_accuracy:
        alt = f" vigil CUDA with {a.vigil_env} vs float64 |" if alt_env else ""
        print(f"\n| model (float16) | vigil CUDA vs float64 |{alt} ORT CUDA vs float64 | vigil / ORT | "
              "vigil CPU (float16) vs float64 |")
        print("|---|---|---|---|---|" + ("---|" if alt_env else ""))
        for model in a.models.split(","):
            src = f"/tmp/peer/{model}_fp16.onnx"
            wide = os.path.join(a.out, f"{model}_f64.onnx")
            widen(src, wide)
            f16 = inputs_for(model, a.batch, np.float16)
            f64 = {k: (v.astype(np.float64) if v.dtype == np.float16 else v) for k, v in f16.items()}
            exact, err = run_vigil(a.vigil, wide, save_inputs(f64, a.out, f"{model}_x64"), "cpu",
                                   os.path.join(a.out, model, "exact"))
            if exact is None:
                print(f"| {model} | exact float64 run failed: {err} | | | |", flush=True)
                continue
            args16 = save_inputs(f16, a.out, f"{model}_x16")
            cuda, err = run_vigil(a.vigil, src, args16, "cuda", os.path.join(a.out, model, "cuda"))
            cpu, _ = run_vigil(a.vigil, src, args16, "cpu", os.path.join(a.out, model, "cpu"))
            k = 0  # the first output (logits; BERT's last_hidden_state)
            o = float("nan")
            if ort:
                so = ort.SessionOptions()
                so.log_severity_level = 3
                s = ort.InferenceSession(src, so, providers=["CUDAExecutionProvider"])
                o = rel_l2(s.run(None, f16)[k], exact[k])
            v = rel_l2(cuda[k], exact[k]) if cuda else float("nan")
            c = rel_l2(cpu[k], exact[k]) if cpu else float("nan")
            alt = ""
            if alt_env:
                other, _ = run_vigil(a.vigil, src, args16, "cuda", os.path.join(a.out, model, "cuda_alt"), alt_env)
                alt = f" {rel_l2(other[k], exact[k]) if other else float('nan'):.3e} |"
            print(f"| {model} | {v:.3e} |{alt} {o:.3e} | {v / o:.2f} | {c:.3e} |", flush=True)
    if not a.skip_first:
        print("\n| model | dtype | vigil time to first result (ms) | ORT session + first run (ms) | vigil / ORT | ORT import + preload_dlls (ms) |")
        print("|---|---|---|---|---|---|")
        for model in a.models.split(","):
            for dt, npdt in (("fp32", np.float32), ("fp16", np.float16)):
                path = f"/tmp/peer/{model}_{dt}.onnx"
                feeds = inputs_for(model, a.batch, npdt)
                args = save_inputs(feeds, a.out, f"{model}_{dt}_first")
                files = {k: os.path.join(a.out, f"{model}_{dt}_first_{k}.npy") for k in feeds}
                v, o, pre = [], [], []
                for _ in range(2):
                    r = subprocess.run([a.vigil, "bench", path, "--backend", "cuda", "--iters", "1", "--warmup", "0",
                                        "--no-precision-hint", "--json"] + args, capture_output=True, text=True)
                    v.append(json.loads(r.stdout)["time_to_first_result_ms"] if r.returncode == 0 else float("nan"))
                    r = subprocess.run([sys.executable, "-c", ORT_FIRST, path, json.dumps(files)],
                                       capture_output=True, text=True)
                    if r.returncode == 0:
                        j = json.loads(r.stdout.strip().splitlines()[-1])
                        o.append(j["first_result_ms"])
                        pre.append(j["import_preload_ms"])
                    else:
                        o.append(float("nan"))
                        pre.append(float("nan"))
                print(f"| {model} | {dt} | {v[0]:.0f}, {v[1]:.0f} | {o[0]:.0f}, {o[1]:.0f} | {min(v) / min(o):.2f} | "
                      f"{pre[0]:.0f}, {pre[1]:.0f} |", flush=True)


if __name__ == "__main__":
    main()
