#!/usr/bin/env python3
"""Runs com.microsoft DynamicQuantizeLSTM in onnxruntime CPU (one intra-op
thread) and in `vigil run` on the same random models and compares Y, Y_h and
Y_c.

    python3 tools/quant/compare_dynamic_lstm.py [--vigil build/src/cli/vigil] [--rounds N]
    python3 tools/quant/compare_dynamic_lstm.py --model QUANTIZED.onnx --input INPUT.npy

Cases: forward, reverse and bidirectional; int8 W/R (zero point 0, values
in [-64, 63]: see below) and uint8 W/R (one zero point per tensor); per-direction and per-column scales; with
and without bias, peepholes, initial states, sequence_lens (some shorter
than seq_length), clip and input_forget. Prints, per configuration, the
largest absolute difference and the largest difference relative to the
output's largest magnitude; exits 1 when one exceeds --tol (relative).

onnxruntime's deep-CPU LSTM uses its own approximations of the logistic
function and tanh (MLAS), vigil the C library's, so the outputs agree to a
few float32 roundings, except where such a rounding moves a value of the
hidden state across a quantization step of the next step's dynamic
quantization (see docs/int8.md). One thread matters: with more,
onnxruntime splits the batch across threads and quantizes each part's
hidden state with its own range. int8 weights stay within [-64, 63]
because onnxruntime's x86 u8*s8 kernel (without VNNI) adds pairs of
products in saturating int16: with full-range int8 weights its integer
products are not exact and the outputs differ by up to 100% (vigil's
products are exact).

With --model (a model quantize_dynamic wrote, e.g. by real_models.py) each
DynamicQuantizeLSTM node runs alone, on the inputs onnxruntime computes for
it from --input, in vigil, in onnxruntime, and in onnxruntime with int8 W
and R shifted to uint8 (w + 128, zero point + 128: the same op, computed by
onnxruntime's exact u8*u8 kernel); it prints the three differences."""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnx.numpy_helper
from onnx import TensorProto, helper

F = np.float32


def make_case(rng, direction, wdt, per_column, with_b, with_p, with_init, with_lens, clip, input_forget):
    nd = 2 if direction == "bidirectional" else 1
    seq, batch, inp, hid = 7, 3, int(rng.integers(3, 14)), int(rng.integers(2, 9))
    x = rng.normal(0, 1, (seq, batch, inp)).astype(F)
    info = np.iinfo(wdt)
    lo, hi = (-64, 63) if wdt == np.int8 else (info.min, info.max)
    w = rng.integers(lo, hi + 1, (nd, inp, 4 * hid)).astype(wdt)
    r = rng.integers(lo, hi + 1, (nd, hid, 4 * hid)).astype(wdt)
    n = 4 * hid if per_column else None

    def scales():
        return rng.uniform(0.001, 0.02, (nd, n) if n else (nd,)).astype(F)

    def zps():
        if wdt == np.int8:
            return np.zeros((nd, n) if n else (nd,), wdt)
        z = int(rng.integers(100, 156))
        return np.full((nd, n) if n else (nd,), z, wdt)

    ins = {"X": x, "W": w, "R": r}
    if with_b:
        ins["B"] = rng.normal(0, 0.5, (nd, 8 * hid)).astype(F)
    if with_lens:
        ins["sequence_lens"] = np.array([seq, int(rng.integers(1, seq)), int(rng.integers(0, seq))], np.int32)
    if with_init:
        ins["initial_h"] = rng.normal(0, 0.5, (nd, batch, hid)).astype(F)
        ins["initial_c"] = rng.normal(0, 0.5, (nd, batch, hid)).astype(F)
    if with_p:
        ins["P"] = rng.normal(0, 0.5, (nd, 3 * hid)).astype(F)
    ins.update({"W_scale": scales(), "W_zero_point": zps(), "R_scale": scales(), "R_zero_point": zps()})
    order = ["X", "W", "R", "B", "sequence_lens", "initial_h", "initial_c", "P", "W_scale", "W_zero_point",
             "R_scale", "R_zero_point"]
    names = [k if k in ins else "" for k in order]
    attrs = {"hidden_size": hid, "direction": direction}
    if clip:
        attrs["clip"] = float(clip)
    if input_forget:
        attrs["input_forget"] = 1
    node = helper.make_node("DynamicQuantizeLSTM", names, ["Y", "Y_h", "Y_c"], domain="com.microsoft", **attrs)
    graph_inputs = [helper.make_tensor_value_info(k, helper.np_dtype_to_tensor_dtype(v.dtype), list(v.shape))
                    for k, v in ins.items() if k in ("X", "sequence_lens", "initial_h", "initial_c")]
    inits = [onnx.numpy_helper.from_array(v, k) for k, v in ins.items()
             if k not in ("X", "sequence_lens", "initial_h", "initial_c")]
    outs = [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in ("Y", "Y_h", "Y_c")]
    graph = helper.make_graph([node], "dqlstm", graph_inputs, outs, initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid("com.microsoft", 1)])
    model.ir_version = 8
    feeds = {k: v for k, v in ins.items() if k in ("X", "sequence_lens", "initial_h", "initial_c")}
    return model, feeds


def run_ort(model, feeds):
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.intra_op_num_threads = 1
    s = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return s.run(None, feeds)


def run_vigil(vigil, model, feeds, work):
    path = os.path.join(work, "m.onnx")
    with open(path, "wb") as f:
        f.write(model.SerializeToString())
    args = [vigil, "run", path, "--backend", "cpu", "--output-dir", os.path.join(work, "out")]
    for k, v in feeds.items():
        p = os.path.join(work, k + ".npy")
        np.save(p, v)
        args += ["--input", f"{k}={p}"]
    res = subprocess.run(args, capture_output=True, text=True)
    if res.returncode != 0:
        raise RuntimeError(f"vigil run failed: {res.stdout}{res.stderr}")
    return [np.load(os.path.join(work, "out", o + ".npy")) for o in ("Y", "Y_h", "Y_c")]


def real_model(vigil, path, input_path, work):
    import onnxruntime as ort

    m = onnx.load(path)
    inits = {i.name: i for i in m.graph.initializer}
    nodes = [n for n in m.graph.node if n.op_type == "DynamicQuantizeLSTM"]
    names = []
    for n in nodes:
        names += [i for i in n.input if i and i not in inits]
    exposed = onnx.ModelProto()
    exposed.CopyFrom(m)
    del exposed.graph.output[:]
    for nm in names:
        exposed.graph.output.append(helper.make_tensor_value_info(nm, TensorProto.FLOAT, None))
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.intra_op_num_threads = 1
    sess = ort.InferenceSession(exposed.SerializeToString(), so, providers=["CPUExecutionProvider"])
    values = dict(zip(names, sess.run(None, {m.graph.input[0].name: np.load(input_path)})))
    worst = 0.0
    for k, n in enumerate(nodes):
        results = {}
        for shift in (False, True):
            inputs, feeds, infos = [], {}, []
            for i in n.input:
                if not i:
                    continue
                if i in inits:
                    a = onnx.numpy_helper.to_array(inits[i])
                    if shift and a.dtype == np.int8:
                        a = (a.astype(np.int16) + 128).astype(np.uint8)
                    inputs.append(onnx.numpy_helper.from_array(a, i))
                else:
                    feeds[i] = values[i]
                    infos.append(helper.make_tensor_value_info(i, helper.np_dtype_to_tensor_dtype(values[i].dtype),
                                                               list(values[i].shape)))
            node = helper.make_node("DynamicQuantizeLSTM", list(n.input), ["Y", "Y_h", "Y_c"], domain="com.microsoft")
            node.attribute.extend(n.attribute)
            outs = [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in ("Y", "Y_h", "Y_c")]
            one = helper.make_model(helper.make_graph([node], "one", infos, outs, initializer=inputs),
                                    opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid("com.microsoft", 1)])
            one.ir_version = 8
            results["onnxruntime u8" if shift else "onnxruntime"] = run_ort(one, feeds)
            if not shift:
                safe = {f"x{j}": v for j, v in enumerate(feeds.values())}
                renamed = onnx.ModelProto()
                renamed.CopyFrom(one)
                mapping = dict(zip(feeds.keys(), safe.keys()))
                for vi in renamed.graph.input:
                    vi.name = mapping[vi.name]
                for j, nm in enumerate(renamed.graph.node[0].input):
                    renamed.graph.node[0].input[j] = mapping.get(nm, nm)
                results["vigil"] = run_vigil(vigil, renamed, safe, work)
        print(f"DynamicQuantizeLSTM node {k} '{n.name}':")
        for a, b in (("vigil", "onnxruntime u8"), ("vigil", "onnxruntime"), ("onnxruntime", "onnxruntime u8")):
            rel = max(float(np.max(np.abs(x.astype(np.float64) - y)) / max(float(np.max(np.abs(y))), 1e-30))
                      for x, y in zip(results[a], results[b]))
            if a == "vigil" and b == "onnxruntime u8":
                worst = max(worst, rel)
            print(f"  {a:<12} vs {b:<15} largest difference relative to the largest output {rel:.3g}")
    return worst


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--vigil", default="build/src/cli/vigil")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--tol", type=float, default=1e-5)
    ap.add_argument("--model", default="", help="a quantize_dynamic model: compare its DynamicQuantizeLSTM nodes")
    ap.add_argument("--input", default="", help="the model's input (.npy), with --model")
    args = ap.parse_args()
    if args.model:
        with tempfile.TemporaryDirectory() as work:
            worst = real_model(args.vigil, args.model, args.input, work)
        print(f"worst relative difference from exact onnxruntime {worst:.3g} (tolerance {args.tol})")
        return 0 if worst <= args.tol else 1
    rng = np.random.default_rng(args.seed)
    worst = 0.0
    with tempfile.TemporaryDirectory() as work:
        for r in range(args.rounds):
            for direction in ("forward", "reverse", "bidirectional"):
                for wdt in (np.int8, np.uint8):
                    for per_column in (False, True):
                        opts = dict(with_b=r % 2 == 0, with_p=r % 3 == 1, with_init=r % 2 == 1, with_lens=r >= 1,
                                    clip=3.0 if r == 2 else 0, input_forget=r == 3)
                        model, feeds = make_case(rng, direction, wdt, per_column, **opts)
                        want = run_ort(model, feeds)
                        got = run_vigil(args.vigil, model, feeds, work)
                        diffs = []
                        for g, w in zip(got, want):
                            assert g.shape == w.shape, (g.shape, w.shape)
                            d = float(np.max(np.abs(g.astype(np.float64) - w))) if w.size else 0.0
                            scale = float(np.max(np.abs(w))) if w.size else 1.0
                            diffs.append((d, d / max(scale, 1e-30)))
                        rel = max(x[1] for x in diffs)
                        worst = max(worst, rel)
                        label = f"{direction:<13} {np.dtype(wdt).name:<5} {'column' if per_column else 'tensor'}"
                        flags = ",".join(k for k, v in opts.items() if v)
                        print(f"round {r} {label} [{flags}]  max abs {max(x[0] for x in diffs):.3g}  "
                              f"max rel {rel:.3g}")
    print(f"worst relative difference {worst:.3g} (tolerance {args.tol})")
    return 0 if worst <= args.tol else 1


if __name__ == "__main__":
    sys.exit(main())
