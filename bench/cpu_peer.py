#!/usr/bin/env python3
"""vigil's CPU backend against onnxruntime's CPU provider, at equal thread
counts, on models exported by tools/models/export_models.py.

    python3 bench/cpu_peer.py VIGIL_BINARY MODELS_DIR [--threads 1,0] [--iters 30] [--only a,b] [--markdown FILE]

For each MODELS_DIR/NAME/model.onnx (inputs as its model.json names them,
as export_models.py wrote them) and each thread count (0: every core, as both
runtimes count it):
  - onnxruntime: intra_op_num_threads = threads, inter_op 1, sequential
    execution, all graph optimisations; the median of --iters runs after 5
    warm-up runs, inputs bound as numpy arrays;
  - vigil: `vigil bench --threads N --json` with the same input files
    (p50 of --iters runs after 3 warm-up runs, inputs copied in each run).
ratio = vigil / onnxruntime: above 1, vigil is slower. Needs numpy and
onnxruntime.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np


def ort_ms(model, feeds, threads, iters):
    import onnxruntime as ort
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    sess = ort.InferenceSession(model, opts, providers=["CPUExecutionProvider"])
    for _ in range(5):
        sess.run(None, feeds)
    times = []
    for _ in range(iters):
        t0 = time.perf_counter()
        sess.run(None, feeds)
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def vigil_bench(vigil, model, files, threads, *extra):
    """`vigil bench MODEL --json --threads N` with the input files and `extra`
    flags; its JSON report."""
    cmd = [vigil, "bench", model, "--json", "--threads", str(threads), *extra]
    for name, path in files:
        cmd += ["--input", f"{name}={path}"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"vigil bench failed on {model}: {r.stderr.strip()[:400]}")
    return json.loads(r.stdout)


def vigil_ms(vigil, model, files, threads, iters):
    j = vigil_bench(vigil, model, files, threads, "--iters", str(iters))
    return j["p50_ms"], j.get("backend_notes", [])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("vigil")
    ap.add_argument("models_dir")
    ap.add_argument("--threads", default="1,0", help="comma-separated thread counts (0: every core)")
    ap.add_argument("--iters", type=int, default=30)
    ap.add_argument("--only", default="", help="comma-separated model names")
    ap.add_argument("--markdown", help="also write the table to FILE")
    a = ap.parse_args()
    names = sorted(d for d in os.listdir(a.models_dir) if os.path.isfile(os.path.join(a.models_dir, d, "model.onnx")))
    if a.only:
        names = [n for n in names if n in a.only.split(",")]
    threads = [int(t) for t in a.threads.split(",")]
    rows = ["| model | threads | vigil p50 (ms) | onnxruntime median (ms) | ratio |", "|---|---|---|---|---|"]
    notes = set()
    for name in names:
        d = os.path.join(a.models_dir, name)
        with open(os.path.join(d, "model.json")) as f:
            inputs = json.load(f)["inputs"]
        files = [(i["name"], os.path.join(d, i["file"])) for i in inputs]
        feeds = {n: np.load(p) for n, p in files}
        for t in threads:
            o = ort_ms(os.path.join(d, "model.onnx"), feeds, t, a.iters)
            v, n = vigil_ms(a.vigil, os.path.join(d, "model.onnx"), files, t, a.iters)
            notes.update(n)
            label = str(t) if t else f"all ({os.cpu_count()})"
            rows.append(f"| {name} | {label} | {v:.2f} | {o:.2f} | {v / o:.2f}x |")
            print(rows[-1], flush=True)
    text = "\n".join(rows) + "\n" + "".join(f"\nvigil: {n}" for n in sorted(notes)) + "\n"
    print(text)
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write(text)


if __name__ == "__main__":
    sys.exit(main())
