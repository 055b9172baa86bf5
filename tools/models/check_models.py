#!/usr/bin/env python3
"""Runs vigil on models exported by export_models.py and compares with the
onnxruntime references; optionally times vigil against onnxruntime.

    python3 tools/models/check_models.py VIGIL_BINARY MODELS_DIR [--bench] [--max-rel-l2 1e-4] [--markdown FILE]
        [--run-arg=--backend --run-arg=cuda ...]

For every MODELS_DIR/NAME/model.json: `vigil run` with the stored inputs,
then per output the relative L2 error ||vigil - ort|| / ||ort|| and the max
absolute error in float64. With --bench, `vigil bench --json` gives vigil's
p50 latency, next to onnxruntime's (single thread, measured by
export_models.py on the same machine). Exit 1 if any model fails or exceeds
the tolerance. Needs numpy only.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np


def rel_l2(ref, got):
    ref = ref.astype(np.float64)
    got = got.astype(np.float64)
    if np.isnan(got).any() and not np.isnan(ref).any():
        return float("inf"), float("inf")
    denom = np.linalg.norm(ref)
    diff = np.linalg.norm(got - ref)
    max_abs = float(np.max(np.abs(got - ref))) if ref.size else 0.0
    return float(diff / denom if denom > 0 else diff), max_abs


def run_vigil(vigil, d, inputs, out, run_args):
    cmd = [vigil, "run", os.path.join(d, "model.onnx"), "--output-dir", out, "--json", *run_args]
    for spec in inputs:
        cmd += ["--input", spec]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        return None, (r.stdout + r.stderr).strip().splitlines()[:3]
    return {o["name"]: o["file"] for o in json.loads(r.stdout)["outputs"]}, None


def check(vigil, d, info, bench, tol, run_args=(), reference_args=None):
    inputs = [f"{i['name']}={os.path.join(d, i['file'])}" for i in info["inputs"]]
    row = {"name": info["name"], "opset": info["opset"], "ort_ms": info.get("ort_cpu_ms_1thread")}
    with tempfile.TemporaryDirectory() as out, tempfile.TemporaryDirectory() as ref_out:
        files, error = run_vigil(vigil, d, inputs, out, run_args)
        if error:
            row["error"] = error
            return row
        ref_files = None
        if reference_args is not None:
            ref_files, error = run_vigil(vigil, d, inputs, ref_out, reference_args)
            if error:
                row["error"] = ["reference: "] + error
                return row
        worst, worst_abs = 0.0, 0.0
        for o in info["outputs"]:
            ref = np.load(ref_files[o["name"]] if ref_files else os.path.join(d, o["file"]))
            if ref.size > 1 and np.all(ref == ref.flat[0]):
                row["error"] = [f"reference output {o['name']} is constant ({ref.flat[0]}): comparing it proves nothing"]
                return row
            if o["name"] not in files:
                row["error"] = [f"vigil did not write output {o['name']}"]
                return row
            got = np.load(files[o["name"]])
            if got.shape != ref.shape:
                row["error"] = [f"output {o['name']}: shape {got.shape}, onnxruntime {ref.shape}"]
                return row
            e, a = rel_l2(ref, got)
            worst, worst_abs = max(worst, e), max(worst_abs, a)
        row["rel_l2"] = float(worst)
        row["max_abs"] = float(worst_abs)
        row["ok"] = bool(worst <= tol)
    if bench:
        cmd = [vigil, "bench", os.path.join(d, "model.onnx"), "--json", "--warmup", "3", "--iters", "20"]
        for spec in inputs:
            cmd += ["--input", spec]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode == 0:
            b = json.loads(r.stdout)
            row["vigil_ms"] = b["p50_ms"]
            row["arena_mib"] = b["arena_bytes"] / 2**20
    return row


def main():
    p = argparse.ArgumentParser()
    p.add_argument("vigil")
    p.add_argument("models")
    p.add_argument("--bench", action="store_true")
    p.add_argument("--max-rel-l2", type=float, default=1e-4)
    p.add_argument("--markdown", default="")
    p.add_argument("--run-arg", action="append", default=[],
                   help="extra argument for `vigil run` (repeat): --run-arg=--backend --run-arg=cuda")
    p.add_argument("--reference-arg", action="append", default=None,
                   help="compare with a second `vigil run` with these arguments (e.g. --reference-arg=--backend "
                        "--reference-arg=cpu) instead of the stored onnxruntime outputs")
    a = p.parse_args()
    if not os.path.isdir(a.models):
        print(f"SKIP: {a.models} is absent")
        return 77
    rows = []
    for name in sorted(os.listdir(a.models)):
        d = os.path.join(a.models, name)
        meta = os.path.join(d, "model.json")
        if not os.path.isfile(meta):
            continue
        with open(meta) as f:
            info = json.load(f)
        row = check(a.vigil, d, info, a.bench, a.max_rel_l2, a.run_arg, a.reference_arg)
        rows.append(row)
        print(json.dumps(row), flush=True)
    ref = "vigil " + " ".join(a.reference_arg) if a.reference_arg is not None else "onnxruntime"
    run = " ".join(a.run_arg) or "cpu"
    lines = [f"| model | opset | rel L2 ({run}) vs {ref} | max abs error | vigil p50 (ms) | onnxruntime CPU (ms, 1 thread) | ratio |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['name']} | {r['opset']} | error: {' '.join(r['error'])[:120]} | | | | |")
            continue
        v, o = r.get("vigil_ms"), r.get("ort_ms")
        ratio = f"{v / o:.2f}x" if v and o else ""
        lines.append(f"| {r['name']} | {r['opset']} | {r['rel_l2']:.2e} | {r['max_abs']:.2e} | "
                     f"{v if v is None else f'{v:.2f}'} | {o if o is None else f'{o:.2f}'} | {ratio} |")
    table = "\n".join(lines)
    print(table)
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write(table + "\n")
    failed = [r["name"] for r in rows if "error" in r or not r.get("ok")]
    print(f"{len(rows) - len(failed)} passed, {len(failed)} failed")
    return 1 if failed or not rows else 0


if __name__ == "__main__":
    sys.exit(main())
