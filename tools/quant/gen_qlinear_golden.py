#!/usr/bin/env python3
"""Generates tests/backends/cpu/data/qlinear_contrib_golden.inc: inputs and
onnxruntime CPU outputs of the com.microsoft QLinear* ops, for
tests/backends/cpu/quantized_contrib_test.cpp. Run once and commit the
output:

    python3 tools/quant/gen_qlinear_golden.py > tests/backends/cpu/data/qlinear_contrib_golden.inc

Needs numpy, onnx and onnxruntime. The binary-op cases are picked so that
they contain the elements where onnxruntime's float32 result differs from
the exactly rounded one (ties decided by float32 operation order)."""
import sys

import numpy as np
import onnxruntime

from ort_qlinear import make_model, run_ort

F = np.float32
rng = np.random.default_rng(20261126)
cases = []


def scalar(v, dt):
    return np.array(v, dtype=dt)


def add_case(op, dt, data_inputs, scales, zps, attrs, inputs):
    """data_inputs: the int arrays (in order), inputs: the full ORT input list."""
    model, feeds = make_model(op, inputs, attrs, dt)
    y = run_ort(model, feeds)
    cases.append(dict(op=op, dt=dt, data=data_inputs, scales=scales, zps=zps, attrs=attrs or {}, y=y))


def exact_binary(op, a, b, sa, sb, sc, za, zb, zc):
    ai = a.astype(np.float64) - int(za)
    bi = b.astype(np.float64) - int(zb)
    if op == "QLinearAdd":
        return (ai * float(sa) + bi * float(sb)) / float(sc) + int(zc)
    return ai * bi * float(sa) * float(sb) / float(sc) + int(zc)


def binary_cases(op, dt):
    info = np.iinfo(dt)
    values = np.arange(info.min, info.max + 1).astype(dt)
    # Elementwise: all 65536 pairs, keep those where onnxruntime differs from
    # the exact rounding, plus some others, for a few scale sets.
    picked_a, picked_b, found = [], [], 0
    params = None
    for trial in range(60):
        sa, sb, sc = (F(x) for x in rng.uniform(0.002, 0.2, 3))
        if trial % 3 == 0:
            sc = F(sa + sb)
        za, zb, zc = (dt(x) for x in rng.integers(info.min, info.max + 1, 3))
        a, b = np.repeat(values, 256), np.tile(values, 256)
        ins = [a, scalar(sa, F), scalar(za, dt), b, scalar(sb, F), scalar(zb, dt), scalar(sc, F), scalar(zc, dt)]
        model, feeds = make_model(op, ins, None, dt)
        y = run_ort(model, feeds)
        ex = np.clip(np.rint(exact_binary(op, a, b, sa, sb, sc, za, zb, zc)), info.min, info.max)
        diff = np.nonzero(ex != y)[0]
        if len(diff) >= 2:
            params = (sa, sb, sc, za, zb, zc)
            idx = np.concatenate([diff, rng.choice(a.size, 127 - len(diff) % 127 if len(diff) < 127 else 13, replace=False)])
            picked_a, picked_b = a[idx], b[idx]
            found = len(diff)
            break
    assert params is not None, "no tie-sensitive pairs found"
    sa, sb, sc, za, zb, zc = params
    ins = [picked_a, scalar(sa, F), scalar(za, dt), picked_b, scalar(sb, F), scalar(zb, dt), scalar(sc, F), scalar(zc, dt)]
    add_case(op, dt, [picked_a, picked_b], [sa, sb, sc], [za, zb, zc], None, ins)
    print(f"// {op} {np.dtype(dt).name}: {found} tie-sensitive pairs", file=sys.stderr)
    # Broadcast [13,1] x [1,127] (A repeats along the run) and [13,127] x [13,1]
    # (B repeats), the values of A and B chosen among those tie-sensitive pairs.
    for ashape, bshape in (((13, 1), (1, 127)), ((1, 127), (13, 1)), ((13, 127), (127,))):
        a = rng.integers(info.min, info.max + 1, ashape).astype(dt)
        b = rng.integers(info.min, info.max + 1, bshape).astype(dt)
        fa, fb = a.reshape(-1), b.reshape(-1)
        n = min(len(picked_a), fa.size, fb.size, found)
        fa[:n] = picked_a[:n]
        fb[:n] = picked_b[:n]
        ins = [a, scalar(sa, F), scalar(za, dt), b, scalar(sb, F), scalar(zb, dt), scalar(sc, F), scalar(zc, dt)]
        add_case(op, dt, [a, b], [sa, sb, sc], [za, zb, zc], None, ins)


def unary_cases(op, dt):
    info = np.iinfo(dt)
    x = np.arange(info.min, info.max + 1).astype(dt)
    for k in range(4):
        xs = F(rng.uniform(0.01, 0.1))
        ys = F([1 / 256, xs / 2, xs, rng.uniform(0.002, 0.05)][k])
        zx, zy = (dt(v) for v in rng.integers(info.min, info.max + 1, 2))
        attrs = {"alpha": float(F(rng.uniform(0.05, 0.3)))} if op == "QLinearLeakyRelu" else None
        add_case(op, dt, [x], [xs, ys], [zx, zy], attrs, [x, scalar(xs, F), scalar(zx, dt), scalar(ys, F), scalar(zy, dt)])


def pool_cases(dt):
    info = np.iinfo(dt)
    for cl in (0, 1):
        x = rng.integers(info.min, info.max + 1, (2, 13, 3, 5) if not cl else (2, 3, 5, 13)).astype(dt)
        xs = F(rng.uniform(0.01, 0.1))
        zx, zy = (dt(v) for v in rng.integers(info.min, info.max + 1, 2))
        for ys in (xs, F(xs * 3)):
            add_case("QLinearGlobalAveragePool", dt, [x], [xs, ys], [zx, zy], {"channels_last": cl},
                     [x, scalar(xs, F), scalar(zx, dt), scalar(ys, F), scalar(zy, dt)])
    for cl, cip, ceil, pads, strides, auto_pad in ((0, 1, 1, [1, 1, 1, 1], [2, 2], None), (0, 0, 1, [1, 0, 1, 2], [2, 2], None),
                                                   (1, 1, 0, [1, 1, 0, 0], [1, 2], None), (1, 0, 0, None, [2, 1], "SAME_UPPER")):
        shape = (1, 13, 7, 9) if not cl else (1, 7, 9, 13)
        x = rng.integers(info.min, info.max + 1, shape).astype(dt)
        xs = F(rng.uniform(0.01, 0.1))
        zx, zy = (dt(v) for v in rng.integers(info.min, info.max + 1, 2))
        attrs = {"kernel_shape": [3, 3], "strides": strides, "count_include_pad": cip, "ceil_mode": ceil, "channels_last": cl}
        if pads:
            attrs["pads"] = pads
        if auto_pad:
            attrs["auto_pad"] = auto_pad
        add_case("QLinearAveragePool", dt, [x], [xs, xs], [zx, zy], attrs,
                 [x, scalar(xs, F), scalar(zx, dt), scalar(xs, F), scalar(zy, dt)])


def concat_cases(dt):
    info = np.iinfo(dt)
    for axis, shapes in ((1, [(13, 5), (13, 1), (13, 127)]), (-1, [(2, 3, 4), (2, 3, 1)]), (0, [(1, 7), (3, 7)])):
        ys = F(rng.uniform(0.01, 0.1))
        zy = dt(rng.integers(info.min, info.max + 1))
        ins, data, scales, zps = [scalar(ys, F), scalar(zy, dt)], [], [ys], [zy]
        for i, s in enumerate(shapes):
            x = rng.integers(info.min, info.max + 1, s).astype(dt)
            xs = F([ys, ys * 2, ys / 2, rng.uniform(0.01, 0.1)][i % 4]) if i else ys
            zx = zy if i == 0 else dt(rng.integers(info.min, info.max + 1))
            ins += [x, scalar(xs, F), scalar(zx, dt)]
            data.append(x)
            scales.append(xs)
            zps.append(zx)
        add_case("QLinearConcat", dt, data, scales, zps, {"axis": axis}, ins)


def softmax_cases(dt, rng):
    """QLinearSoftmax, both opset semantics; rows of equal values (D = 512:
    near .5 ties with y_scale 1/256, decided by the float32 sum) and a
    dominant element (256 - 128 saturates to 127 in int8)."""
    info = np.iinfo(dt)
    zq = dt(0 if dt == np.uint8 else -128)
    for shape, attrs in (((5, 13), {"opset": 13, "axis": -1}), ((2, 13, 3), {"opset": 13, "axis": 1}),
                         ((3, 4, 5), {"opset": 12, "axis": 1}), ((3, 127), {"opset": 1})):
        x = rng.integers(info.min, info.max + 1, shape).astype(dt)
        xs, ys = F(rng.uniform(0.02, 0.3)), F([1 / 256, rng.uniform(1 / 300, 1 / 100)][len(shape) % 2])
        zx, zy = dt(rng.integers(info.min, info.max + 1)), [zq, dt(rng.integers(info.min, info.max + 1))][len(shape) % 2]
        add_case("QLinearSoftmax", dt, [x], [xs, ys], [zx, zy], attrs,
                 [x, scalar(xs, F), scalar(zx, dt), scalar(ys, F), scalar(zy, dt)])
    x = np.full((3, 512), dt(rng.integers(info.min, info.max + 1)), dtype=dt)
    x[1, ::3] = max(int(info.min), int(x[0, 0]) - 2)
    x[2, 7] = info.max
    x[2, 8:] = info.min
    xs = F(0.5)
    add_case("QLinearSoftmax", dt, [x], [xs, F(1 / 256)], [dt(0), zq], {"opset": 13},
             [x, scalar(xs, F), scalar(0, dt), scalar(F(1 / 256), F), scalar(zq, dt)])
    # Two equal values along axis 0: the quotient 189/2 lies at a tie that
    # the table's float32 log decides (a double log rounds it the other way).
    x = np.full((2, 3), 57, dtype=dt)
    xs, ys, zy = F(0.18634318), F(0.0052828165), dt(-77 if dt == np.int8 else 20)
    add_case("QLinearSoftmax", dt, [x], [xs, ys], [dt(0), zy], {"opset": 13, "axis": 0},
             [x, scalar(xs, F), scalar(0, dt), scalar(ys, F), scalar(zy, dt)])


for dt in (np.uint8, np.int8):
    binary_cases("QLinearAdd", dt)
    binary_cases("QLinearMul", dt)
    unary_cases("QLinearSigmoid", dt)
    unary_cases("QLinearLeakyRelu", dt)
    pool_cases(dt)
    concat_cases(dt)


# A generator of its own, so that the cases above stay as they were.
softmax_rng = np.random.default_rng(20261127)
for dt in (np.uint8, np.int8):
    softmax_cases(dt, softmax_rng)


def ints(a):
    return "{" + ",".join(str(int(v)) for v in np.asarray(a).reshape(-1)) + "}"


def floats(v):
    return "{" + ",".join(np.format_float_positional(F(x), unique=True) + "f" for x in v) + "}"


print("// Generated by tools/quant/gen_qlinear_golden.py with onnxruntime", onnxruntime.__version__,
      "(CPU); do not edit.")
print("// Each case: op, int8?, data inputs (shape, values), scales, zero points,")
print("// int attributes, float attributes, onnxruntime's output (shape, values).")
for c in cases:
    data = ",".join("{" + ints(d.shape) + "," + ints(d) + "}" for d in c["data"])
    iattrs = ",".join('{"%s",%s}' % (k, ints(v if isinstance(v, list) else [v]))
                      for k, v in c["attrs"].items() if not isinstance(v, (float, str)))
    fattrs = ",".join('{"%s",%sf}' % (k, np.format_float_positional(F(v), unique=True))
                      for k, v in c["attrs"].items() if isinstance(v, float))
    sattrs = ",".join('{"%s","%s"}' % (k, v) for k, v in c["attrs"].items() if isinstance(v, str))
    print('{"%s",%s,{%s},%s,%s,{%s},{%s},{%s},{%s,%s}},' % (
        c["op"], "true" if c["dt"] == np.int8 else "false", data, floats(c["scales"]), ints(c["zps"]),
        iattrs, fattrs, sattrs, ints(c["y"].shape), ints(c["y"])))
