#!/usr/bin/env python3
"""Runs each com.microsoft QLinear* op and QGemm in onnxruntime CPU and in
`vigil run` on the same inputs and compares the outputs exactly.

    python3 tools/quant/compare_ort.py [--vigil build/src/cli/vigil] [--rounds N]

One model per op and configuration (built with onnx.helper; data as graph
inputs, scales and zero points as initializers, as onnxruntime.quantization
writes them), int8 and uint8, random scales and zero points, with some
scale ratios that make round-half-to-even ties frequent. Prints, per op, the
elements compared and the mismatches; exits 1 on any mismatch. Needs numpy,
onnx and onnxruntime."""
import argparse
import os
import subprocess
import sys
import tempfile
from collections import defaultdict

import numpy as np

from ort_qlinear import make_model, run_ort

F = np.float32


def vigil_run(vigil, model, feeds, workdir):
    path = os.path.join(workdir, "m.onnx")
    with open(path, "wb") as f:
        f.write(model.SerializeToString())
    args = [vigil, "run", path, "--backend", "cpu", "--output-dir", os.path.join(workdir, "out")]
    for name, value in feeds.items():
        p = os.path.join(workdir, name + ".npy")
        np.save(p, value)
        args += ["--input", f"{name}={p}"]
    r = subprocess.run(args, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"vigil run failed ({r.returncode}): {r.stdout}{r.stderr}")
    return np.load(os.path.join(workdir, "out", "y.npy"))


def params(rng, dt, n):
    info = np.iinfo(dt)
    return [dt(v) for v in rng.integers(info.min, info.max + 1, n)]


def configs(rng, rounds):
    """Yields (label, op, inputs, attrs, dtype, constant indices)."""
    for r in range(rounds):
        for dt in (np.uint8, np.int8):
            info = np.iinfo(dt)

            def data(shape):
                return rng.integers(info.min, info.max + 1, shape).astype(dt)

            # Binary: all 65536 pairs, then broadcasts.
            vals = np.arange(info.min, info.max + 1).astype(dt)
            for op in ("QLinearAdd", "QLinearMul"):
                sa, sb = (F(v) for v in rng.uniform(0.002, 0.2, 2))
                sc = F([sa + sb, sa, rng.uniform(0.002, 0.2)][r % 3]) if op == "QLinearAdd" else F(rng.uniform(0.05, 2))
                za, zb, zc = params(rng, dt, 3)
                for a, b in ((np.repeat(vals, 256), np.tile(vals, 256)), (vals.reshape(256, 1), vals.reshape(1, 256)),
                             (vals.reshape(1, 256), vals.reshape(256, 1)), (data((2, 13, 1, 5)), data((13, 127, 1))),
                             (data((13, 127)), data((127,))), (data((127,)), data(()))):
                    yield op, op, [a, np.array(sa), np.array(za), b, np.array(sb), np.array(zb), np.array(sc),
                                   np.array(zc)], None, dt, (1, 2, 4, 5, 6, 7)
            # Unary: every value, several scale pairs.
            x = np.tile(vals, 13).reshape(13, 256)
            for op in ("QLinearSigmoid", "QLinearLeakyRelu"):
                xs = F(rng.uniform(0.005, 0.2))
                ys = F([1 / 256, xs / 2, xs, rng.uniform(0.002, 0.05)][r % 4])
                zx, zy = params(rng, dt, 2)
                attrs = {"alpha": float(F(rng.uniform(0.01, 0.5)))} if op == "QLinearLeakyRelu" else None
                yield op, op, [x, np.array(xs), np.array(zx), np.array(ys), np.array(zy)], attrs, dt, (1, 2, 3, 4)
            # Pools.
            xs = F(rng.uniform(0.005, 0.2))
            zx, zy = params(rng, dt, 2)
            ys = F([xs, xs / 2, xs * 3, rng.uniform(0.002, 0.05)][r % 4])
            for cl in (0, 1):
                shape = (2, 127, 7, 7) if not cl else (2, 7, 7, 127)
                yield ("QLinearGlobalAveragePool", "QLinearGlobalAveragePool",
                       [data(shape), np.array(xs), np.array(zx), np.array(ys), np.array(zy)], {"channels_last": cl}, dt,
                       (1, 2, 3, 4))
            k = [int(v) for v in rng.integers(1, 4, 2)]
            s = [int(v) for v in rng.integers(1, 3, 2)]
            p = [int(rng.integers(0, k[0])), int(rng.integers(0, k[1])), int(rng.integers(0, k[0])),
                 int(rng.integers(0, k[1]))]
            for cl in (0, 1):
                attrs = {"kernel_shape": k, "strides": s, "pads": p, "count_include_pad": r % 2,
                         "ceil_mode": (r // 2) % 2, "channels_last": cl}
                shape = (2, 13, 11, 9) if not cl else (2, 11, 9, 13)
                yield ("QLinearAveragePool", "QLinearAveragePool",
                       [data(shape), np.array(xs), np.array(zx), np.array(ys), np.array(zy)], attrs, dt, (1, 2, 3, 4))
            attrs = {"kernel_shape": [3], "strides": [2], "auto_pad": "SAME_UPPER", "count_include_pad": r % 2}
            yield ("QLinearAveragePool", "QLinearAveragePool",
                   [data((2, 13, 127)), np.array(xs), np.array(zx), np.array(ys), np.array(zy)], attrs, dt, (1, 2, 3, 4))
            # Concat.
            ys = F(rng.uniform(0.01, 0.1))
            (zy,) = params(rng, dt, 1)
            ins, const = [np.array(ys), np.array(zy)], [0, 1]
            for i, n in enumerate((13, 1, 127)):
                xs_i = F([ys, ys * 2, ys / 2][i] if r % 2 else rng.uniform(0.01, 0.1))
                ins += [data((2, n, 3)), np.array(xs_i), np.array(params(rng, dt, 1)[0])]
                const += [len(ins) - 2, len(ins) - 1]
            yield "QLinearConcat", "QLinearConcat", ins, {"axis": 1}, dt, tuple(const)
            yield from softmax_configs(rng, r, dt)
            yield from qgemm_configs(rng, r, dt)


def qgemm_configs(rng, r, dt):
    """QGemm with A of dtype dt: B int8 (values in [-64, 63]: onnxruntime's
    x86 u8*s8 kernel adds pairs of products in saturating int16, so wider
    weights make its products inexact) or uint8 (with uint8 A); per-tensor
    or per-column B scales and zero points; int32 bias of every broadcast
    shape; transA/transB/alpha; quantized and float outputs."""
    info = np.iinfo(dt)
    m, k, n = 13, 127, 11
    for bt in ((np.int8, np.uint8) if dt == np.uint8 else (np.int8,)):
        a = rng.integers(info.min, info.max + 1, (m, k)).astype(dt)
        b = rng.integers(-64, 64, (k, n)).astype(bt) if bt == np.int8 else rng.integers(0, 256, (k, n)).astype(bt)
        sa, sy = F(rng.uniform(0.01, 0.1)), F(rng.uniform(0.05, 0.5))
        per_col = r % 2 == 1
        sb = rng.uniform(0.001, 0.02, n).astype(F) if per_col else np.array(F(rng.uniform(0.001, 0.02)))
        zb = (np.zeros(n, bt) if per_col else np.array(bt(0))) if bt == np.int8 else \
            (rng.integers(100, 156, n).astype(bt) if per_col else np.array(bt(rng.integers(100, 156))))
        za, zy = params(rng, dt, 2)
        bias = [None, rng.integers(-5000, 5000, n).astype(np.int32), rng.integers(-5000, 5000, (m, n)).astype(np.int32),
                rng.integers(-5000, 5000, (m, 1)).astype(np.int32), np.array(np.int32(1234))][r % 5]
        attrs = {"transA": r % 3 == 2, "transB": r % 4 == 3}
        if r % 3 == 1:
            attrs["alpha"] = float(F(rng.uniform(0.5, 2)))
        aa = np.ascontiguousarray(a.T) if attrs["transA"] else a
        bb = np.ascontiguousarray(b.T) if attrs["transB"] else b
        attrs = {key: int(v) if isinstance(v, bool) else v for key, v in attrs.items()}
        yield ("QGemm", "QGemm", [aa, np.array(sa), np.array(za), bb, sb, zb, bias, np.array(sy), np.array(zy)], attrs,
               dt, (1, 2, 3, 4, 5, 6, 7, 8))
        yield (f"QGemm float ({np.dtype(dt).name} A)", "QGemm", [aa, np.array(sa), np.array(za), bb, sb, zb, bias], attrs, np.float32,
               (1, 2, 3, 4, 5, 6))


def softmax_configs(rng, r, dt):
    """QLinearSoftmax: both opset semantics, several axes; y_scale 1/256 with
    onnxruntime.quantization's output zero point (0 or -128) or random; rows
    of equal values whose quotient is an exact .5 tie (D = 512) or repeats."""
    info = np.iinfo(dt)

    def data(shape, lo=info.min, hi=info.max):
        return rng.integers(lo, hi + 1, shape).astype(dt)

    xs = F(rng.uniform(0.01, 0.3))
    zx = params(rng, dt, 1)[0]
    if r % 2:
        ys, zy = F(1 / 256), dt(0 if dt == np.uint8 else -128)
    else:
        ys, zy = F(rng.uniform(1 / 300, 1 / 100)), params(rng, dt, 1)[0]
    for shape, attrs in (((13, 127), {"opset": 13}), ((2, 13, 11), {"opset": 13, "axis": 1}),
                         ((2, 13, 11), {"opset": 13, "axis": 0}), ((3, 5, 7), {"opset": 12, "axis": 1}),
                         ((3, 5, 7), {"opset": 11}), ((4, 127), {"opset": 12, "axis": -1})):
        yield "QLinearSoftmax", "QLinearSoftmax", [data(shape), np.array(xs), np.array(zx), np.array(ys),
                                                   np.array(zy)], attrs, dt, (1, 2, 3, 4)
    # Ties and saturation: equal rows (D = 512 gives y = 0.5 with y_scale
    # 1/256), two-level rows, a narrow range where one element dominates.
    v = data((1,))[0]
    x = np.full((3, 512), v, dtype=dt)
    x[1, ::2] = max(info.min, int(v) - int(rng.integers(1, 4)))
    yield ("QLinearSoftmax", "QLinearSoftmax", [x, np.array(xs), np.array(zx), np.array(F(1 / 256)),
                                                np.array(zy if r % 2 else params(rng, dt, 1)[0])],
           {"opset": 13}, dt, (1, 2, 3, 4))
    x = data((13, 6), int(info.max) - 3, int(info.max))
    yield ("QLinearSoftmax", "QLinearSoftmax", [x, np.array(F(rng.uniform(0.5, 3))), np.array(zx),
                                                np.array(F(1 / 256)), np.array(zy)], {"opset": 13}, dt, (1, 2, 3, 4))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--vigil", default="build/src/cli/vigil")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--seed", type=int, default=18)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    compared, mismatched, models = defaultdict(int), defaultdict(int), defaultdict(int)
    with tempfile.TemporaryDirectory() as tmp:
        for label, op, inputs, attrs, dt, const in configs(rng, args.rounds):
            inputs = [None if a is None else np.asarray(a, dtype=F) if np.asarray(a).dtype == np.float64 else a
                      for a in inputs]
            model, feeds = make_model(op, inputs, attrs, dt, constants=const)
            want = run_ort(model, feeds)
            got = vigil_run(args.vigil, model, feeds, tmp)
            key = f"{label} {np.dtype(dt).name}"
            models[key] += 1
            if got.shape != want.shape or got.dtype != want.dtype:
                print(f"{key}: vigil gives {got.dtype}{list(got.shape)}, onnxruntime {want.dtype}{list(want.shape)}")
                mismatched[key] += want.size
                compared[key] += want.size
                continue
            compared[key] += want.size
            if want.dtype == np.float32:  # QGemm's float output: float32 products, compared exactly too
                mismatched[key] += int((got.view(np.int32) != want.view(np.int32)).sum())
                continue
            mismatched[key] += int((got != want).sum())
    width = max(len(k) for k in compared)
    total_c = total_m = 0
    for key in compared:
        print(f"{key:<{width}}  models {models[key]:3d}  elements {compared[key]:9d}  mismatches {mismatched[key]}")
        total_c += compared[key]
        total_m += mismatched[key]
    print(f"{'total':<{width}}  models {sum(models.values()):3d}  elements {total_c:9d}  mismatches {total_m}")
    return 1 if total_m else 0


if __name__ == "__main__":
    sys.exit(main())
