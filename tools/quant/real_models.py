#!/usr/bin/env python3
"""Quantizes the real models of tests/models with onnxruntime.quantization and
compares vigil's CPU backend with onnxruntime CPU on them, integer tensors
exactly.

    python3 tools/quant/real_models.py [--vigil build/src/cli/vigil]
        [--models tests/models/tiny] [--work /tmp/vigil_quant] [--calib 16]

For each model directory (model.onnx, input_*.npy) it writes five quantized
models:
  qdq_s8   quantize_static, QDQ, int8 activations and per-channel int8 weights
  qdq_u8   quantize_static, QDQ, uint8 activations, per-channel int8 weights
  qdq_sym  as qdq_s8 with ActivationSymmetric (every zero point 0): the form
           docs/int8.md recommends for the GPU, whose convolutions then run
           in int8 there (only with --kinds naming it)
  qop_s8, qop_u8  quantize_static, QOperator (QLinearConv, QLinearMatMul and the
           com.microsoft QLinear* ops), int8 or uint8 activations, int8 weights
  dynamic  quantize_dynamic, int8 weights (DynamicQuantizeLinear,
           MatMulInteger, ConvInteger)
The calibration data are `--calib` perturbations of the model's own input
(seeded, so the quantized models are reproducible).

Each quantized model is then copied with every integer tensor a node makes
(QuantizeLinear, DynamicQuantizeLinear, QLinear*, MatMulInteger,
ConvInteger outputs) added to the graph's outputs, and run by
  - onnxruntime CPU with graph optimizations off (ORT_DISABLE_ALL), which
    evaluates each node as the ONNX spec says, and
  - `vigil run --backend cpu`.
It prints, per model and form, the integer tensors and elements compared and
how many differ, and for the float outputs the relative L2 difference. It also
runs the plain quantized model in onnxruntime with its default optimizations
(which fuse QDQ groups into integer kernels with their own rounding) and
prints that output's relative L2 difference from vigil's, for scale.

Where a MatMulInteger or ConvInteger output differs, the node is evaluated
again exactly (int64, numpy) from onnxruntime's values of its inputs, and
the script says which side holds the exact result (onnxruntime's x86 u8*s8
kernels can saturate an intermediate int16 sum).

A quantized model vigil cannot load is reported with vigil's diagnosis (its
first line). Exit status: 0 when every compared integer element agrees, or
differs only where vigil holds the exact result and onnxruntime does not;
1 otherwise. Needs numpy, onnx and onnxruntime (/work/venv_c has them)."""
import argparse
import glob
import json
import os
import re
import subprocess
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnxruntime.quantization import (CalibrationDataReader, QuantFormat, QuantType, quantize_dynamic,
                                      quantize_static)

INTEGER_OPS = ("MatMulInteger", "ConvInteger", "QLinearMatMul", "QLinearConv", "QGemm")
INT_TYPES = {onnx.TensorProto.INT8, onnx.TensorProto.UINT8, onnx.TensorProto.INT32, onnx.TensorProto.INT16,
             onnx.TensorProto.UINT16}


class Reader(CalibrationDataReader):
    def __init__(self, feeds, count, seed):
        rng = np.random.default_rng(seed)
        self.batches = []
        for _ in range(count):
            b = {}
            for name, x in feeds.items():
                if np.issubdtype(x.dtype, np.floating):
                    noise = rng.standard_normal(x.shape).astype(x.dtype)
                    b[name] = (x * (1 + 0.1 * noise) + 0.1 * noise).astype(x.dtype)
                else:
                    b[name] = x.copy()
            self.batches.append(b)
        self.it = iter(self.batches)

    def get_next(self):
        return next(self.it, None)

    def rewind(self):
        self.it = iter(self.batches)


def load_feeds(model_dir, model):
    names = [i.name for i in model.graph.input if i.name not in {t.name for t in model.graph.initializer}]
    files = sorted(glob.glob(os.path.join(model_dir, "input_*.npy")), key=lambda p: int(re.findall(r"\d+", p)[-1]))
    return {n: np.load(f) for n, f in zip(names, files)}


def quantize(kind, src, dst, feeds, calib):
    if kind == "dynamic":
        quantize_dynamic(src, dst, weight_type=QuantType.QInt8)
        return
    fmt = QuantFormat.QOperator if kind.startswith("qop") else QuantFormat.QDQ
    act = QuantType.QInt8 if kind.endswith("s8") or kind == "qdq_sym" else QuantType.QUInt8
    extra = {"ActivationSymmetric": True} if kind == "qdq_sym" else {}
    quantize_static(src, dst, Reader(feeds, calib, 2026), quant_format=fmt, per_channel=True, activation_type=act,
                    weight_type=QuantType.QInt8, extra_options=extra)


def expose_integer_tensors(path, dst):
    """A copy of the model whose graph outputs also list every integer tensor a
    node of the main graph makes. Returns those tensor names."""
    m = onnx.load(path)
    inferred = onnx.shape_inference.infer_shapes(m)
    types = {v.name: v.type.tensor_type.elem_type for v in list(inferred.graph.value_info) + list(inferred.graph.output)}
    present = {o.name for o in m.graph.output}
    # onnx's shape inference does not know com.microsoft QGemm: its output has
    # y_zero_point's type (float32 without one).
    init_types = {i.name: i.data_type for i in m.graph.initializer}
    for node in m.graph.node:
        if node.op_type == "QGemm" and len(node.input) > 8 and node.input[8] in init_types:
            types.setdefault(node.output[0], init_types[node.input[8]])
    added = []
    for node in m.graph.node:
        for out in node.output:
            if out and out not in present and types.get(out) in INT_TYPES:
                m.graph.output.append(onnx.helper.make_tensor_value_info(out, types[out], None))
                present.add(out)
                added.append(out)
    onnx.save(m, dst)
    return added


def conv_integer_exact(x, w, zx, zw, attrs):
    """ConvInteger in int64 (2-D spatial or 1-D), numpy only."""
    x = x.astype(np.int64) - (zx.astype(np.int64) if zx is not None else 0)
    zw = zw.astype(np.int64) if zw is not None else np.int64(0)
    w = w.astype(np.int64) - (zw.reshape(-1, *([1] * (w.ndim - 1))) if np.ndim(zw) == 1 else zw)
    spatial = x.ndim - 2
    group = attrs.get("group", 1)
    strides = attrs.get("strides", [1] * spatial)
    dil = attrs.get("dilations", [1] * spatial)
    pads = attrs.get("pads", [0] * (2 * spatial))
    if attrs.get("auto_pad", b"NOTSET") not in (b"NOTSET", "NOTSET"):
        return None
    xp = np.pad(x, [(0, 0), (0, 0)] + [(pads[i], pads[i + spatial]) for i in range(spatial)])
    k = w.shape[2:]
    out_sp = [(xp.shape[2 + i] - dil[i] * (k[i] - 1) - 1) // strides[i] + 1 for i in range(spatial)]
    n, c = x.shape[:2]
    m = w.shape[0]
    cg, mg = c // group, m // group
    y = np.zeros((n, m, *out_sp), dtype=np.int64)
    for g in range(group):
        xs = xp[:, g * cg:(g + 1) * cg]
        ws = w[g * mg:(g + 1) * mg]
        for idx in np.ndindex(*k):
            sl = [slice(None), slice(None)] + [slice(idx[i] * dil[i], idx[i] * dil[i] + strides[i] * (out_sp[i] - 1) + 1,
                                                     strides[i]) for i in range(spatial)]
            patch = xs[tuple(sl)]
            wk = ws[(slice(None), slice(None)) + tuple(idx)]
            y[:, g * mg:(g + 1) * mg] += np.einsum("nc...,mc->nm...", patch, wk)
    return y


def requantize(acc, scale, zero_point, dtype):
    """saturate(round_half_even(acc * scale) + zero_point), in float64."""
    info = np.iinfo(dtype)
    y = np.rint(acc.astype(np.float64) * scale) + zero_point.astype(np.float64)
    return np.clip(y, info.min, info.max).astype(dtype)


def per_channel(v, ndim):
    v = np.asarray(v, dtype=np.float64) if v.dtype.kind == "f" else np.asarray(v, dtype=np.int64)
    return v.reshape(1, -1, *([1] * (ndim - 2))) if v.ndim == 1 and v.size > 1 else v.reshape(())


def exact_integer_output(node, values):
    """The exact output of an integer node (MatMulInteger, ConvInteger: int32;
    QLinearMatMul, QLinearConv, QGemm with y_zero_point: the int32 product
    requantized in float64)
    from the given values of its inputs; None for other ops."""
    ins = [values.get(i) if i else None for i in node.input]
    if node.op_type == "QLinearMatMul":
        a, sa, za, b, sb, zb, sy, zy = ins
        acc = (a.astype(np.int64) - za.astype(np.int64)) @ (b.astype(np.int64) - zb.astype(np.int64))
        scale = np.float64(sa) * sb.astype(np.float64) / np.float64(sy)
        return requantize(acc, scale, zy, zy.dtype)
    if node.op_type == "QGemm":
        if len(ins) < 9 or ins[8] is None:
            return None  # float output
        a, sa, za, b, sb, zb, c, sy, zy = ins[:9]
        if any(v is None for v in (a, sa, za, b, sb, zb, sy)):
            return None  # an input this run did not capture
        attrs = {x.name: onnx.helper.get_attribute_value(x) for x in node.attribute}
        a = a.T if attrs.get("transA", 0) else a
        b = b.T if attrs.get("transB", 0) else b
        acc = (a.astype(np.int64) - za.astype(np.int64)) @ (b.astype(np.int64) - zb.astype(np.int64).reshape(-1))
        if c is not None:
            acc = acc + c.astype(np.int64)
        scale = np.float64(attrs.get("alpha", 1.0)) * np.float64(sa) * sb.astype(np.float64).reshape(-1) / np.float64(sy)
        return requantize(acc, scale, zy, zy.dtype)
    if node.op_type == "QLinearConv":
        x, sx, zx, w, sw, zw, sy, zy = ins[:8]
        attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
        acc = conv_integer_exact(x, w, zx, zw, attrs)
        if acc is None:
            return None
        if len(ins) > 8 and ins[8] is not None:
            acc = acc + ins[8].astype(np.int64).reshape(1, -1, *([1] * (acc.ndim - 2)))
        scale = per_channel(np.float64(sx) * sw.astype(np.float64) / np.float64(sy), acc.ndim)
        return requantize(acc, scale, zy, zy.dtype)
    if node.op_type == "MatMulInteger":
        a = ins[0].astype(np.int64) - (ins[2].astype(np.int64) if len(ins) > 2 and ins[2] is not None else 0)
        zb = ins[3].astype(np.int64) if len(ins) > 3 and ins[3] is not None else 0
        return a @ (ins[1].astype(np.int64) - zb)
    if node.op_type == "ConvInteger":
        attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
        return conv_integer_exact(ins[0], ins[1], ins[2] if len(ins) > 2 else None, ins[3] if len(ins) > 3 else None,
                                  attrs)
    return None


def safe(name):
    return re.sub(r"[^A-Za-z0-9._-]", "_", name)


def run_vigil(vigil, model, feeds, workdir):
    os.makedirs(workdir, exist_ok=True)
    args = [vigil, "run", model, "--backend", "cpu", "--output-dir", os.path.join(workdir, "out")]
    for name, x in feeds.items():
        p = os.path.join(workdir, safe(name) + ".npy")
        np.save(p, x)
        args += ["--input", f"{name}={p}"]
    r = subprocess.run(args, capture_output=True, text=True)
    if r.returncode != 0:
        first = (r.stdout + r.stderr).strip().splitlines()
        return None, first[0] if first else f"exit {r.returncode}"
    return os.path.join(workdir, "out"), None


def rel_l2(a, b):
    a = a.astype(np.float64)
    b = b.astype(np.float64)
    d = np.linalg.norm(a - b)
    n = np.linalg.norm(b)
    return d / n if n > 0 else d


def main():
    ort.set_default_logger_severity(3)
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--vigil", default="build/src/cli/vigil")
    ap.add_argument("--models", default="tests/models/tiny")
    ap.add_argument("--work", default="/tmp/vigil_quant")
    ap.add_argument("--calib", type=int, default=16)
    ap.add_argument("--kinds", default="qdq_s8,qdq_u8,qop_s8,qop_u8,dynamic")
    ap.add_argument("--only", default="", help="comma-separated model names (default: all)")
    ap.add_argument("--json", default="", help="also write the results to this file")
    args = ap.parse_args()

    results = []
    all_equal = True
    dirs = sorted(d for d in glob.glob(os.path.join(args.models, "*")) if os.path.isfile(os.path.join(d, "model.onnx")))
    only = {s for s in args.only.split(",") if s}
    for d in dirs:
        name = os.path.basename(d)
        if only and name not in only:
            continue
        src = os.path.join(d, "model.onnx")
        model = onnx.load(src)
        feeds = load_feeds(d, model)
        for kind in args.kinds.split(","):
            row = {"model": name, "kind": kind}
            results.append(row)
            work = os.path.join(args.work, name, kind)
            os.makedirs(work, exist_ok=True)
            qpath = os.path.join(work, "model.onnx")
            try:
                quantize(kind, src, qpath, feeds, args.calib)
            except Exception as e:  # the quantizer's own failure: report, go on
                row["error"] = f"onnxruntime.quantization failed: {type(e).__name__}: {str(e).splitlines()[0][:200]}"
                print(f"{name:14} {kind:8} {row['error']}", flush=True)
                continue
            qmodel = onnx.load(qpath)
            row["q_ops"] = sorted({n.op_type for n in qmodel.graph.node if n.op_type not in {o for o in
                                   {n2.op_type for n2 in model.graph.node}}})
            xpath = os.path.join(work, "exposed.onnx")
            ints = expose_integer_tensors(qpath, xpath)
            so = ort.SessionOptions()
            so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
            so.intra_op_num_threads = 1
            sess = ort.InferenceSession(xpath, so, providers=["CPUExecutionProvider"])
            out_names = [o.name for o in sess.get_outputs()]
            ort_out = dict(zip(out_names, sess.run(None, feeds)))
            out_dir, err = run_vigil(args.vigil, xpath, feeds, os.path.join(work, "vigil"))
            if err:
                row["error"] = f"vigil: {err}"
                all_equal = False
                print(f"{name:14} {kind:8} {row['error']}", flush=True)
                continue
            tensors = elements = differ = 0
            first = ""
            producer = {o: n for n in qmodel.graph.node for o in n.output}
            consts = {t.name: onnx.numpy_helper.to_array(t) for t in qmodel.graph.initializer}
            ort_values = {**consts, **feeds, **ort_out}
            vigil_values = {**consts, **feeds}
            for t in ints:
                vigil_values[t] = np.load(os.path.join(out_dir, safe(t) + ".npy"))
            exact_note = []
            for t in ints:  # in node order: the first difference is the root
                v, o = vigil_values[t], ort_out[t]
                if v.shape != o.shape or v.dtype != o.dtype:
                    differ += o.size
                    first = first or f"{t}: vigil {v.dtype}{list(v.shape)} vs onnxruntime {o.dtype}{list(o.shape)}"
                    continue
                n_bad = int(np.count_nonzero(v != o))
                tensors += 1
                elements += o.size
                node = producer.get(t)
                if node is not None and node.op_type in INTEGER_OPS:
                    # Each side against the exact result of its own inputs.
                    ev = exact_integer_output(node, vigil_values)
                    eo = exact_integer_output(node, ort_values)
                    def off(e, got):
                        g = np.abs(e.astype(np.int64) - got.astype(np.int64))
                        return int(np.count_nonzero(g)), int(g.max()) if g.size else 0
                    if ev is not None and not (ev == v).all():
                        n, m = off(ev, v)
                        exact_note.append(f"{node.op_type} {t}: vigil's result is not exact on its own inputs "
                                          f"({n} of {v.size} elements, by up to {m})")
                    if n_bad and eo is not None and not (eo == o).all():
                        n, m = off(eo, o)
                        exact_note.append(f"{node.op_type} {t}: onnxruntime's result is not exact on its own inputs "
                                          f"({n} of {o.size} elements, by up to {m})")
                if n_bad:
                    differ += n_bad
                    if not first:
                        gap = np.abs(v.astype(np.int64) - o.astype(np.int64))
                        first = (f"first difference: {node.op_type if node is not None else '?'} {t}: {n_bad} of "
                                 f"{o.size} differ, max |diff| {int(gap.max())}")
            floats = [o.name for o in model.graph.output]
            l2 = max(rel_l2(np.load(os.path.join(out_dir, safe(f) + ".npy")), ort_out[f]) for f in floats)
            # onnxruntime as users run it: default optimizations, plain model.
            sess2 = ort.InferenceSession(qpath, providers=["CPUExecutionProvider"])
            dflt = dict(zip([o.name for o in sess2.get_outputs()], sess2.run(None, feeds)))
            l2_default = max(rel_l2(np.load(os.path.join(out_dir, safe(f) + ".npy")), dflt[f]) for f in floats)
            l2_float = max(rel_l2(np.load(os.path.join(out_dir, safe(f) + ".npy")),
                                  np.load(os.path.join(d, f"ref_{i}.npy"))) for i, f in enumerate(floats))
            l2_default_float = max(rel_l2(dflt[f], np.load(os.path.join(d, f"ref_{i}.npy")))
                                   for i, f in enumerate(floats))
            row.update(int_tensors=tensors, int_elements=elements, int_differ=differ, first_difference=first,
                       exact_checks=exact_note, rel_l2_vs_ort_spec=l2, rel_l2_vs_ort_default=l2_default,
                       rel_l2_vs_float_model=l2_float, ort_default_rel_l2_vs_float_model=l2_default_float)
            # Differences that start where onnxruntime's integer product is
            # wrong (and vigil's is exact) are onnxruntime's, counted apart.
            vigil_inexact = any("vigil's result is not exact" in e for e in exact_note)
            root = first.split(" ")[3].rstrip(":") if first.startswith("first difference") else None
            ort_root = root is not None and any(e.split(" ")[1] == root + ":" and "onnxruntime's" in e
                                                for e in exact_note)
            row["ort_root_cause"] = ort_root
            all_equal &= not vigil_inexact and (differ == 0 or ort_root)
            print(f"{name:14} {kind:8} int tensors {tensors:4} elements {elements:9} differ {differ:6}  "
                  f"float out rel L2: vs ORT(spec) {l2:.1e}, vs ORT(default opt) {l2_default:.1e}, "
                  f"vs float model {l2_float:.1e} (ORT default opt vs float model {l2_default_float:.1e})"
                  + (f"\n{'':24}{first}" if first else ""), flush=True)
            for e in exact_note:
                print(f"{'':24}{e}", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0 if all_equal else 1


if __name__ == "__main__":
    sys.exit(main())
