#!/usr/bin/env python3
"""Time to first result on the CPU: vigil against onnxruntime's CPU provider,
each in a fresh process per measurement, on models exported by
tools/models/export_models.py (MODELS_DIR/NAME/model.onnx with model.json).

    python3 bench/cpu_ttfr.py VIGIL_BINARY MODELS_DIR [--threads 1] [--reps 5] [--only a,b]

  - vigil: `vigil bench --iters 1 --warmup 0 --json`: its
    time_to_first_result_ms (reading and checking the model, planning the
    session, the first run), with load_ms and first_run_ms beside it;
  - onnxruntime: in a new Python process, after `import onnxruntime` and
    the inputs are read (not timed), InferenceSession(...) with all graph
    optimisations plus its first run().
The two alternate, --reps times each; medians. ratio = vigil / onnxruntime:
above 1, vigil is slower. Needs numpy and onnxruntime.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cpu_peer import vigil_bench  # noqa: E402

ORT_PROBE = r"""
import json, sys, time
import numpy as np
import onnxruntime as ort
model, threads, files = sys.argv[1], int(sys.argv[2]), json.loads(sys.argv[3])
feeds = {n: np.load(p) for n, p in files}
opts = ort.SessionOptions()
opts.intra_op_num_threads = threads
opts.inter_op_num_threads = 1
opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
t0 = time.perf_counter()
sess = ort.InferenceSession(model, opts, providers=["CPUExecutionProvider"])
t1 = time.perf_counter()
sess.run(None, feeds)
t2 = time.perf_counter()
print(json.dumps({"create_ms": (t1 - t0) * 1e3, "first_run_ms": (t2 - t1) * 1e3}))
"""


def vigil_once(vigil, model, files, threads):
    j = vigil_bench(vigil, model, files, threads, "--iters", "1", "--warmup", "0")
    return j["time_to_first_result_ms"], j["load_ms"], j["first_run_ms"]


def ort_once(model, files, threads):
    r = subprocess.run([sys.executable, "-c", ORT_PROBE, model, str(threads), json.dumps(files)],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"onnxruntime failed on {model}: {r.stderr.strip()[-400:]}")
    j = json.loads(r.stdout)
    return j["create_ms"] + j["first_run_ms"], j["create_ms"], j["first_run_ms"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("vigil")
    ap.add_argument("models_dir")
    ap.add_argument("--threads", type=int, default=1, help="threads for both (0: every core)")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--only", default="", help="comma-separated model names")
    a = ap.parse_args()
    names = sorted(d for d in os.listdir(a.models_dir) if os.path.isfile(os.path.join(a.models_dir, d, "model.onnx")))
    if a.only:
        names = [n for n in names if n in a.only.split(",")]
    print("| model | vigil TTFR (load + first run) ms | onnxruntime (create + first run) ms | ratio |")
    print("|---|---|---|---|")
    for name in names:
        d = os.path.join(a.models_dir, name)
        with open(os.path.join(d, "model.json")) as f:
            inputs = json.load(f)["inputs"]
        files = [(i["name"], os.path.join(d, i["file"])) for i in inputs]
        model = os.path.join(d, "model.onnx")
        v, o = [], []
        for _ in range(a.reps):
            v.append(vigil_once(a.vigil, model, files, a.threads))
            o.append(ort_once(model, files, a.threads))
        med = lambda rows, k: statistics.median(r[k] for r in rows)  # noqa: E731
        print(f"| {name} | {med(v, 0):.1f} ({med(v, 1):.1f} + {med(v, 2):.1f}) | "
              f"{med(o, 0):.1f} ({med(o, 1):.1f} + {med(o, 2):.1f}) | {med(v, 0) / med(o, 0):.2f}x |", flush=True)


if __name__ == "__main__":
    sys.exit(main())
