#!/usr/bin/env python3
"""How far vigil's CUDA fp16 output is from the exact evaluation of the same
fp16 model, next to how far vigil's CPU reference (and ONNX Runtime's fp16)
is: runs on the GPU machine after bench/peer_bench.py exported MODEL_fp16.onnx
into /tmp/peer.

    python3 tools/device/fp16_truth.py VIGIL MODEL BATCH [--peer /tmp/peer] [--out DIR]

"Exact" is the same model with every float16 initializer, input and output
widened to float32 (the same weights, not the fp32 export) run by vigil's
CPU backend in float32 on the same input: it keeps the fp16 model's
parameters and drops only its per-op fp16 rounding, which each fp16
implementation does in its own places (the CPU reference after every op,
the CUDA backend once per fused Conv+bias+ReLU(+residual)). Prints the
relative L2 of each fp16 output against it, and of CUDA against the CPU
reference (the issue's criterion). Needs numpy, onnx and onnxruntime.
"""
import argparse
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import numpy_helper


def widen(src, dst):
    m = onnx.load(src)
    g = m.graph
    for t in g.initializer:
        if t.data_type == onnx.TensorProto.FLOAT16:
            t.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(t).astype(np.float32), t.name))
    for v in list(g.input) + list(g.output) + list(g.value_info):
        if v.type.tensor_type.elem_type == onnx.TensorProto.FLOAT16:
            v.type.tensor_type.elem_type = onnx.TensorProto.FLOAT
    for n in g.node:
        for a in n.attribute:
            if a.name == "to" and a.i == onnx.TensorProto.FLOAT16:
                a.i = onnx.TensorProto.FLOAT
            if a.type == onnx.AttributeProto.TENSOR and a.t.data_type == onnx.TensorProto.FLOAT16:
                a.t.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(a.t).astype(np.float32), a.t.name))
    onnx.save(m, dst)


def run_vigil(vigil, model, x_path, backend, out_dir):
    os.makedirs(out_dir, exist_ok=True)
    cmd = [vigil, "run", model, "--input", f"input_0={x_path}", "--backend", backend, "--output-dir", out_dir]
    if backend == "cuda":
        cmd.append("--no-fallback")
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{r.stdout}\n{r.stderr}")
    files = sorted(f for f in os.listdir(out_dir) if f.endswith(".npy"))
    return np.load(os.path.join(out_dir, files[0])).astype(np.float64)


def rel_l2(got, want):
    if not np.all(np.isfinite(got)):
        return float("nan")
    return float(np.linalg.norm(got - want) / np.linalg.norm(want))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("vigil")
    p.add_argument("model")
    p.add_argument("batch", type=int)
    p.add_argument("--peer", default="/tmp/peer")
    p.add_argument("--out", default="/tmp/fp16_truth")
    a = p.parse_args()
    src = os.path.join(a.peer, f"{a.model}_fp16.onnx")
    wide = os.path.join(a.out, f"{a.model}_fp16_widened.onnx")
    os.makedirs(a.out, exist_ok=True)
    widen(src, wide)
    x16 = np.random.default_rng(a.batch).standard_normal((a.batch, 3, 224, 224)).astype(np.float16)
    x16_path, x32_path = os.path.join(a.out, "x16.npy"), os.path.join(a.out, "x32.npy")
    np.save(x16_path, x16)
    np.save(x32_path, x16.astype(np.float32))
    exact = run_vigil(a.vigil, wide, x32_path, "cpu", os.path.join(a.out, "exact"))
    cuda = run_vigil(a.vigil, src, x16_path, "cuda", os.path.join(a.out, "cuda"))
    cpu = run_vigil(a.vigil, src, x16_path, "cpu", os.path.join(a.out, "cpu"))
    import onnxruntime as ort
    sess = ort.InferenceSession(src, providers=["CPUExecutionProvider"])
    ort16 = sess.run(None, {"input_0": x16})[0].astype(np.float64)
    print(f"{a.model} fp16 batch {a.batch}: against the widened (exact) evaluation: "
          f"vigil cuda {rel_l2(cuda, exact):.3e}, vigil cpu {rel_l2(cpu, exact):.3e}, "
          f"onnxruntime cpu {rel_l2(ort16, exact):.3e}; cuda against the cpu reference {rel_l2(cuda, cpu):.3e}")


if __name__ == "__main__":
    main()
