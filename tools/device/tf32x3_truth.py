#!/usr/bin/env python3
"""How far vigil's float32 products are from the exact evaluation, for each
way vigil can compute them on the GPU: 3xTF32 (the default without TF32),
CUDA cores only (--no-tf32x3), TF32 (--tf32) and 3xTF32 convolutions as
well as products (--tf32x3-convs), next to vigil's CPU
reference in float32. Runs on the GPU machine after bench/export_models.py
wrote MODEL_fp32.onnx into /tmp/peer.

    python3 tools/device/tf32x3_truth.py VIGIL [--models vit_b_16,bert_base] [--batch 4]

"Exact" is the same model with every float32 initializer, input, output
and Cast widened to float64, run by vigil's CPU backend in float64 on the
same input. Prints, per model, the relative L2 of the first output against
it (in float64), and the largest over all float outputs.
"""
import argparse
import os
import sys

import numpy as np
import onnx

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ort_accuracy_ttfr import inputs_for, rel_l2, run_vigil, save_inputs, widen  # noqa: E402

WAYS = [("3xTF32 (default)", []), ("CUDA cores (--no-tf32x3)", ["--no-tf32x3"]), ("TF32 (--tf32)", ["--tf32"]),
        ("3xTF32 convolutions too (--tf32x3-convs)", ["--tf32x3-convs"])]


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("vigil")
    p.add_argument("--models", default="vit_b_16,bert_base")
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--out", default="/tmp/tf32x3_truth")
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)
    print(f"batch {a.batch}; relative L2 against the float64 evaluation: first output / largest over outputs\n")
    print("| model | " + " | ".join(w for w, _ in WAYS) + " | vigil CPU (float32) |")
    print("|---|" + "---|" * (len(WAYS) + 1))
    for model in a.models.split(","):
        src = f"/tmp/peer/{model}_fp32.onnx"
        wide = os.path.join(a.out, f"{model}_f64.onnx")
        widen(src, wide, onnx.TensorProto.FLOAT)
        f32 = inputs_for(model, a.batch, np.float32)
        f64 = {k: (v.astype(np.float64) if v.dtype == np.float32 else v) for k, v in f32.items()}
        exact, err = run_vigil(a.vigil, wide, save_inputs(f64, a.out, f"{model}_x64"), "cpu",
                               os.path.join(a.out, model, "exact"))
        if exact is None:
            print(f"| {model} | exact float64 run failed: {err} |", flush=True)
            continue
        args = save_inputs(f32, a.out, f"{model}_x32")
        cells = []
        for i, (_, extra) in enumerate(WAYS):
            got, err = run_vigil(a.vigil, src, args + extra, "cuda", os.path.join(a.out, model, f"cuda{i}"))
            cells.append(got)
        cpu, _ = run_vigil(a.vigil, src, args, "cpu", os.path.join(a.out, model, "cpu"))
        cells.append(cpu)

        def cell(got):
            if got is None:
                return "failed"
            errs = [rel_l2(g, e) for g, e in zip(got, exact) if np.issubdtype(np.asarray(e).dtype, np.floating)]
            return f"{errs[0]:.3e} / {max(errs):.3e}"

        print(f"| {model} | " + " | ".join(cell(c) for c in cells) + " |", flush=True)


if __name__ == "__main__":
    main()
