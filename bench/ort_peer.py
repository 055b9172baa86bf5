"""ONNX Runtime's CUDA execution provider as a benchmark peer, timed as a
careful user runs it: IOBinding with every input and output already on the
GPU, warm-up runs, then the median of `iters` wall-clock times of
run_with_iobinding (which waits for the outputs). Four configurations are
tried (plain, prefer_nhwc, enable_cuda_graph, both); one that ORT refuses is
reported with its error, and `best` picks the fastest of the others.

Needs the onnxruntime-gpu wheel on PYTHONPATH (tools/device: the 1.31.1
wheel, built for CUDA 13, runs on the GPU machine after preload_dlls()).
"""
import time

import numpy as np

CONFIGS = {
    "plain": {},
    "prefer_nhwc": {"prefer_nhwc": "1"},
    "cuda_graph": {"enable_cuda_graph": "1"},
    "nhwc+graph": {"prefer_nhwc": "1", "enable_cuda_graph": "1"},
}

_preloaded = False


def _ort():
    global _preloaded
    import onnxruntime as ort
    if not _preloaded:
        ort.preload_dlls()
        _preloaded = True
    return ort


def version():
    return _ort().__version__


def time_model(path, feeds, iters=50, warmup=10, tf32=None):
    """feeds: input name -> numpy array. tf32: None (ORT's default, on), True or False
    (the provider's use_tf32). Returns config -> {"median_ms", "first_s"} or {"error"}."""
    ort = _ort()
    out = {}
    for name, opts in CONFIGS.items():
        opts = dict(opts)
        if tf32 is not None:
            opts["use_tf32"] = "1" if tf32 else "0"
        try:
            so = ort.SessionOptions()
            so.log_severity_level = 3
            t0 = time.perf_counter()
            s = ort.InferenceSession(path, so, providers=[("CUDAExecutionProvider", opts), "CPUExecutionProvider"])
            b = s.io_binding()
            keep = []  # the OrtValues must outlive the binding
            for k, v in feeds.items():
                keep.append(ort.OrtValue.ortvalue_from_numpy(np.ascontiguousarray(v), "cuda", 0))
                b.bind_ortvalue_input(k, keep[-1])
            for o in s.get_outputs():
                b.bind_output(o.name, "cuda")
            s.run_with_iobinding(b)
            first = time.perf_counter() - t0
            for _ in range(warmup):
                s.run_with_iobinding(b)
            ts = []
            for _ in range(iters):
                t = time.perf_counter()
                s.run_with_iobinding(b)
                b.synchronize_outputs()
                ts.append(time.perf_counter() - t)
            out[name] = {"median_ms": 1e3 * float(np.median(ts)), "first_s": first}
        except Exception as e:  # a configuration ORT refuses is reported, not fatal
            out[name] = {"error": str(e)[:300]}
    return out


def best(result):
    """(config, median ms) of the fastest configuration that ran, or (None, None)."""
    ok = [(v["median_ms"], k) for k, v in result.items() if "median_ms" in v]
    if not ok:
        return None, None
    ms, k = min(ok)
    return k, ms
