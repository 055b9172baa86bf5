#!/usr/bin/env python3
"""ResNet-50 or ViT-B/16 in int8 on the GPU, for issue 18's table: vigil's
int8 (the QDQ model, fused by the QDQ pass), vigil's fp16 and fp32, and, with --ort, ONNX
Runtime's CUDA provider on the same QDQ model and on the fp16 one, timed in
the same call; then the top-1 agreement of the int8 and fp32 models on
--images inputs (both on vigil's GPU path) and the int8 model's GPU output
against vigil's CPU reference on a few.

    python3 bench/int8/int8_bench.py --vigil BUILD/vigil --models DIR --out DIR [--model vit_b_16] [--ort]

DIR holds the models of bench/int8/make_resnet50_qdq.py (--model resnet50,
the default) or bench/int8/make_vit_qdq.py (--model vit_b_16). Prints the
results and writes OUT/raw.json.
"""
import argparse
import glob
import json
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import ort_peer  # noqa: E402
from make_resnet50_qdq import images  # noqa: E402


def sh(cmd, **kw):
    print("+", " ".join(cmd), flush=True)
    return subprocess.run(cmd, check=False, text=True, capture_output=True, **kw)


def vigil_bench(vigil, model, batch, iters, extra=()):
    r = sh([vigil, "bench", model, "--backend", "cuda", "--dim", f"N={batch}", "--inputs-on-device", "--warmup", "10",
            "--iters", str(iters), "--json", *extra])
    if r.returncode != 0:
        return {"error": (r.stdout + r.stderr)[-2000:]}
    return json.loads(r.stdout)


def io_names(path):
    import onnx
    m = onnx.load(path, load_external_data=False)
    inits = {t.name for t in m.graph.initializer}
    return [i.name for i in m.graph.input if i.name not in inits][0], m.graph.output[0].name


def ort_time(model, batch, dtype, iters):
    in_name, _ = io_names(model)
    return ort_peer.time_model(model, {in_name: images(batch, 99).astype(dtype)}, iters=iters)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--vigil", required=True)
    p.add_argument("--models", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--ort", action="store_true")
    p.add_argument("--model", choices=("resnet50", "vit_b_16"), default="resnet50")
    p.add_argument("--images", type=int, default=256)
    p.add_argument("--iters", type=int, default=100)
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)
    m = {k: os.path.join(a.models, f"{a.model}_{k}.onnx") for k in ("fp32", "fp16", "qdq_s8")}
    in_name, _ = io_names(m["qdq_s8"])
    raw = {}
    r = sh([a.vigil, "inspect", m["qdq_s8"], "--backend", "cuda"])
    raw["inspect"] = r.stdout[-6000:] + r.stderr[-2000:]
    print(raw["inspect"])
    # Timings: vigil int8, fp16, fp32 at batch 1 and 64.
    raw["vigil"] = {}
    for k in ("qdq_s8", "fp16", "fp32"):
        for batch in (1, 64):
            raw["vigil"][f"{k}/{batch}"] = vigil_bench(a.vigil, m[k], batch, a.iters)
            print(k, batch, json.dumps(raw["vigil"][f"{k}/{batch}"])[:400], flush=True)
    if a.ort:
        raw["ort"] = {}
        for k, dt in (("qdq_s8", np.float32), ("fp16", np.float16)):
            for batch in (1, 64):
                raw["ort"][f"{k}/{batch}"] = ort_time(m[k], batch, dt, a.iters)
                print("ort", k, batch, raw["ort"][f"{k}/{batch}"], flush=True)
    # Accuracy: int8 vs fp32 top-1 on the GPU, in batches of 64.
    agree = total = 0
    l2 = []
    for start in range(0, a.images, 64):
        n = min(64, a.images - start)
        x = images(n, 1000 + start)
        np.save(os.path.join(a.out, "x.npy"), x)
        logits = {}
        for k in ("fp32", "qdq_s8"):
            d = os.path.join(a.out, k)
            r = sh([a.vigil, "run", m[k], "--backend", "cuda", "-i", f"{in_name}={a.out}/x.npy", "-o", d])
            if r.returncode != 0:
                raw["accuracy_error"] = (r.stdout + r.stderr)[-2000:]
                break
            outs = sorted(glob.glob(os.path.join(d, "*.npy")))  # the model's one output
            logits[k] = np.load(outs[0]).astype(np.float64)
        if len(logits) != 2:
            break
        agree += int((logits["fp32"].argmax(1) == logits["qdq_s8"].argmax(1)).sum())
        total += n
        l2.append(float(np.linalg.norm(logits["qdq_s8"] - logits["fp32"]) / np.linalg.norm(logits["fp32"])))
    raw["top1_agreement"] = {"agree": agree, "total": total, "rel_l2_int8_vs_fp32": l2}
    print("top-1 agreement", agree, "of", total, "rel L2", l2, flush=True)
    # The int8 model on the GPU against vigil's CPU reference (the unfused QDQ graph), 4 images.
    x = images(4, 7)
    np.save(os.path.join(a.out, "x4.npy"), x)
    r = sh([a.vigil, "compare", m["qdq_s8"], "--backends", "cuda,cpu", "-i", f"{in_name}={a.out}/x4.npy", "--rtol", "1e-2",
            "--atol", "1e-2"])
    raw["compare_cpu"] = r.stdout[-3000:] + r.stderr[-1000:]
    print(raw["compare_cpu"])
    with open(os.path.join(a.out, "raw.json"), "w") as f:
        json.dump(raw, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
