#!/usr/bin/env python3
"""Throughput of a model served by Triton's HTTP endpoint: PROCESSES x
THREADS clients, each with a keep-alive connection, send requests of BATCH
items (random data, binary tensors) for SECONDS after a warm-up, and count
the replies. Prints one JSON line: requests/s, items/s, latency percentiles
in ms, errors, and the server's executions and mean batch over the window.

    python3 tools/device/triton_bench.py PORT MODEL --input NAME --shape 1,3,224,224 \
        --datatype FP16 [--processes 8 --threads 16 --seconds 20]

Uses the client of tests/triton/kserve.py (no client package needed).
"""
import argparse
import json
import multiprocessing
import os
import sys
import threading
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "triton"))
import kserve  # noqa: E402


def worker(a, start_at, stop_at, queue):
    rng = np.random.default_rng(os.getpid())
    shape = [int(d) for d in a.shape.split(",")]
    data = rng.standard_normal(shape).astype(kserve.NUMPY_OF[a.datatype])
    results = []

    def loop():
        c = kserve.Client(a.port, timeout=120)
        latencies, errors = [], 0
        while time.time() < start_at:  # warm-up: sent, not counted
            c.infer(a.model, {a.input: data})
        while time.time() < stop_at:
            t0 = time.perf_counter()
            reply = c.infer(a.model, {a.input: data})
            latencies.append(time.perf_counter() - t0)
            errors += 0 if reply.ok else 1
        c.close()
        results.append((latencies, errors))

    threads = [threading.Thread(target=loop) for _ in range(a.threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    queue.put(([x for r in results for x in r[0]], sum(r[1] for r in results)))


def stats(port, model):
    c = kserve.Client(port)
    status, body = c.get_json(f"/v2/models/{model}/stats")
    c.close()
    s = body["model_stats"][0]
    i = s["inference_stats"]
    # The backend's own times, summed over executions (one batch statistic
    # each): gathering the inputs, the run, splitting the outputs.
    b = {k: sum(x[k]["ns"] for x in s.get("batch_stats", [])) for k in ("compute_input", "compute_infer",
                                                                           "compute_output")}
    return s["execution_count"], s["inference_count"], b, i["queue"]["ns"]


def warm_batches(a):
    """One request of every batch size 1..N, twice, from one client: each new
    batch size builds its plans (and, with CUDA graphs, records a graph on its
    second run), which is start-up cost, not throughput."""
    shape = [int(d) for d in a.shape.split(",")]
    rng = np.random.default_rng(1)
    c = kserve.Client(a.port, timeout=300)
    t0 = time.perf_counter()
    for _ in range(2):
        for n in range(1, a.warm_batches + 1):
            data = rng.standard_normal([n] + shape[1:]).astype(kserve.NUMPY_OF[a.datatype])
            reply = c.infer(a.model, {a.input: data})
            assert reply.ok, reply.error
    c.close()
    return time.perf_counter() - t0


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("port", type=int)
    p.add_argument("model")
    p.add_argument("--input", required=True)
    p.add_argument("--shape", required=True, help="one request's shape, batch dim included")
    p.add_argument("--datatype", default="FP32")
    p.add_argument("--processes", type=int, default=8)
    p.add_argument("--threads", type=int, default=16)
    p.add_argument("--seconds", type=float, default=20)
    p.add_argument("--warmup", type=float, default=5)
    p.add_argument("--warm-batches", type=int, default=0,
                   help="first send one request of each batch size 1..N (twice), unmeasured")
    a = p.parse_args()
    warm_s = warm_batches(a) if a.warm_batches else 0.0

    start_at = time.time() + a.warmup
    stop_at = start_at + a.seconds
    queue = multiprocessing.Queue()
    procs = [multiprocessing.Process(target=worker, args=(a, start_at, stop_at, queue)) for _ in range(a.processes)]
    for proc in procs:
        proc.start()
    while time.time() < start_at:
        time.sleep(0.01)
    e0, i0, b0, q0 = stats(a.port, a.model)
    parts = [queue.get() for _ in procs]
    e1, i1, b1, q1 = stats(a.port, a.model)  # a little after stop_at: the last replies are in
    for proc in procs:
        proc.join()
    ms = np.array([x for part in parts for x in part[0]]) * 1e3
    batch = int(a.shape.split(",")[0])
    print(json.dumps({
        "model": a.model, "clients": a.processes * a.threads, "request_shape": a.shape, "datatype": a.datatype,
        "seconds": a.seconds, "requests": len(ms), "errors": sum(part[1] for part in parts),
        "requests_per_s": len(ms) / a.seconds, "items_per_s": len(ms) * batch / a.seconds,
        "p50_ms": float(np.percentile(ms, 50)), "p90_ms": float(np.percentile(ms, 90)),
        "p99_ms": float(np.percentile(ms, 99)), "server_executions": e1 - e0,
        "server_mean_batch": (i1 - i0) / max(e1 - e0, 1),
        # per execution, in ms: what the backend spent (Triton's statistics)
        "backend_ms_per_execution": {k.replace("compute_", ""): (b1[k] - b0[k]) / max(e1 - e0, 1) / 1e6 for k in b1},
        "queue_ms_per_request": (q1 - q0) / max(len(ms), 1) / 1e6,
        "warm_batches_s": round(warm_s, 1)}), flush=True)


if __name__ == "__main__":
    main()
