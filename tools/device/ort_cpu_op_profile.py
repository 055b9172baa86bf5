#!/usr/bin/env python3
"""onnxruntime CPU's time per op type on one exported model, to set beside
`vigil bench --profile` on the same machine and thread count.

  python3 tools/device/ort_cpu_op_profile.py MODEL_DIR --threads 16 [--iters 50]

MODEL_DIR is one model of tools/models/export_models.py (model.onnx,
model.json, its input .npy files). Prints the median per-run wall time and,
per op type, the median over runs of the summed kernel times (ms)."""
import argparse
import collections
import json
import os
import statistics
import tempfile
import time

import numpy as np
import onnxruntime as ort


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model_dir")
    ap.add_argument("--threads", type=int, default=0, help="intra-op threads (0: every core)")
    ap.add_argument("--iters", type=int, default=50)
    a = ap.parse_args()
    meta = json.load(open(os.path.join(a.model_dir, "model.json")))
    feeds = {i["name"]: np.load(os.path.join(a.model_dir, i["file"])) for i in meta["inputs"]}
    so = ort.SessionOptions()
    so.intra_op_num_threads = a.threads
    so.enable_profiling = True
    so.profile_file_prefix = os.path.join(tempfile.mkdtemp(), "ort")
    s = ort.InferenceSession(os.path.join(a.model_dir, "model.onnx"), so, providers=["CPUExecutionProvider"])
    for _ in range(5):
        s.run(None, feeds)
    walls = []
    for _ in range(a.iters):
        t = time.perf_counter()
        s.run(None, feeds)
        walls.append((time.perf_counter() - t) * 1e3)
    trace = json.load(open(s.end_profiling()))
    runs = [e for e in trace if e.get("cat") == "Session" and e.get("name") == "model_run"]
    runs = runs[-a.iters:]
    per_op = collections.defaultdict(lambda: [0.0] * len(runs))
    for e in trace:
        if e.get("cat") != "Node" or not e.get("name", "").endswith("_kernel_time"):
            continue
        ts = e["ts"]
        for k, r in enumerate(runs):
            if r["ts"] <= ts <= r["ts"] + r["dur"]:
                per_op[e["args"].get("op_name", "?")][k] += e["dur"] / 1e3
                break
    print(f"{meta['name']}: onnxruntime {ort.__version__} CPU, {a.threads or 'all'} threads, "
          f"median {statistics.median(walls):.3f} ms per run (profiling on)")
    rows = sorted(((statistics.median(v), op) for op, v in per_op.items()), reverse=True)
    for ms, op in rows:
        print(f"  {ms:8.3f}  {op}")


if __name__ == "__main__":
    main()
