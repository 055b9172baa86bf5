#!/usr/bin/env python3
"""On the GPU machine: a model run through the Python package with torch CUDA
tensors in and out (DLPack, IOBinding, no host copy), checked against the
same session's numpy path, and timed against `vigil bench --inputs-on-device`
in the same call.

    python3 tools/device/python_bench.py VIGIL MODEL BATCH [--iters 200]

Both sides time whole runs the same way: the median wall time of one
synchronised run (CUDA graphs on), after warm-up. Prints one JSON line.
"""
import argparse
import json
import statistics
import subprocess
import sys
import time

import numpy as np
import torch

import vigil


def python_times(session, binding, iters):
    for _ in range(20):
        session.run_with_iobinding(binding)
    times = []
    for _ in range(iters):
        t0 = time.perf_counter()
        session.run_with_iobinding(binding)
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("vigil")
    p.add_argument("model")
    p.add_argument("batch", type=int)
    p.add_argument("--iters", type=int, default=200)
    a = p.parse_args()

    session = vigil.InferenceSession(a.model, providers=[("CUDAExecutionProvider", {"enable_cuda_graph": True})])
    assert session.get_providers() == ["CUDAExecutionProvider"], session.get_providers()
    inp, out = session.get_inputs()[0], session.get_outputs()[0]
    dim = inp.shape[0] if isinstance(inp.shape[0], str) else None
    dtype = {"tensor(float16)": torch.float16, "tensor(float)": torch.float32}[inp.type]
    shape = [a.batch] + [int(d) for d in inp.shape[1:]]
    torch.manual_seed(0)
    x = torch.randn(shape, device="cuda", dtype=dtype)

    binding = session.io_binding()
    binding.bind_input(inp.name, x)
    binding.bind_output(out.name, "cuda")
    session.run_with_iobinding(binding)
    (value,) = binding.get_outputs()
    y = torch.from_dlpack(value)
    host = session.run(None, {inp.name: x.cpu().numpy()})[0]
    got = y.float().cpu().numpy().astype(np.float64)
    want = host.astype(np.float64)
    rel = float(np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-30))
    checks = {"output_on_cuda": bool(y.is_cuda), "same_memory": y.data_ptr() == value.data_ptr(),
              "nan": bool(np.isnan(got).any()), "rel_l2_vs_numpy_path": rel}

    bench_cmd = [a.vigil, "bench", a.model, "--backend", "cuda", "--inputs-on-device", "--iters", str(a.iters),
                 "--warmup", "20", "--json"]
    if dim:
        bench_cmd += ["--dim", f"{dim}={a.batch}"]
    py1 = python_times(session, binding, a.iters)
    bench = json.loads(subprocess.run(bench_cmd, check=True, capture_output=True, text=True).stdout)
    py2 = python_times(session, binding, a.iters)
    py = min(py1, py2)
    result = {"model": a.model, "batch": a.batch, "python_ms": [round(py1, 4), round(py2, 4)],
              "vigil_bench_p50_ms": round(bench["p50_ms"], 4), "python_over_bench": round(py / bench["p50_ms"], 4),
              "cuda_graphs": bench.get("cuda_graphs"), **checks, "bench_command": " ".join(bench_cmd)}
    print(json.dumps(result))
    ok = checks["output_on_cuda"] and checks["same_memory"] and not checks["nan"] and rel <= 1e-3
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
