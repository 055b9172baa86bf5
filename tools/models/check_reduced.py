#!/usr/bin/env python3
"""Checks a model written by `vigil reduce` with the ONNX tools of others:
onnx.checker (full check, with shape inference) and an onnxruntime session,
run on the inputs vigil wrote next to it (OUT_inputs/NAME.npy).

  check_reduced.py OUT.onnx [--inputs DIR] [--keep-test-ops]

onnxruntime does not know vigil's test-only ops (domain ai.vigil.testing:
Crash, Fail, Diverge, OutOfBoundsWrite, Hang); they take one input and give
one output of the same type, so before onnxruntime loads the model they are
replaced by Identity (unless --keep-test-ops). onnx.checker sees the model as
written.

Exit codes: 0 the model checks, loads and runs; 1 it does not; 77 onnx,
onnxruntime or numpy is not installed (a skip, as for ctest).
"""
import argparse
import os
import re
import sys

TEST_DOMAIN = "ai.vigil.testing"


def safe_file_names(names):
    """The file names vigil gives value names (cli/reduce_output.cpp)."""
    taken, out = set(), []
    for name in names:
        safe = re.sub(r"[^A-Za-z0-9._-]", "_", name)
        if not safe or safe.startswith("."):
            safe = "v" + safe
        unique, n = safe, 2
        while unique in taken:
            unique, n = f"{safe}_{n}", n + 1
        taken.add(unique)
        out.append(unique)
    return out


def without_test_ops(model, onnx):
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    replaced = 0
    for node in copy.graph.node:
        if node.domain == TEST_DOMAIN:
            node.op_type, node.domain = "Identity", ""
            del node.attribute[:]
            replaced += 1
    if replaced:
        keep = [o for o in copy.opset_import if o.domain != TEST_DOMAIN]
        del copy.opset_import[:]
        copy.opset_import.extend(keep)
    return copy, replaced


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model")
    parser.add_argument("--inputs", help="directory of NAME.npy files (default: the model's stem + _inputs)")
    parser.add_argument("--keep-test-ops", action="store_true", help="do not replace ai.vigil.testing ops")
    args = parser.parse_args()
    try:
        import numpy as np
        import onnx
        import onnxruntime as ort
    except ImportError as e:
        print(f"check_reduced: skipped: {e}")
        return 77

    model = onnx.load(args.model)
    try:
        onnx.checker.check_model(model, full_check=True)
    except Exception as e:  # onnx raises several exception types
        print(f"FAIL: onnx.checker: {e}")
        return 1
    print(f"onnx.checker: OK ({len(model.graph.node)} node(s), ir_version {model.ir_version})")

    runnable, replaced = (model, 0) if args.keep_test_ops else without_test_ops(model, onnx)
    if replaced:
        print(f"replaced {replaced} {TEST_DOMAIN} node(s) by Identity for onnxruntime")
    try:
        session = ort.InferenceSession(runnable.SerializeToString(), providers=["CPUExecutionProvider"])
    except Exception as e:
        print(f"FAIL: onnxruntime cannot load it: {e}")
        return 1

    stem = os.path.splitext(args.model)[0]
    inputs_dir = args.inputs or stem + "_inputs"
    names = [i.name for i in session.get_inputs()]
    feeds = {}
    for name, file in zip(names, safe_file_names(names)):
        path = os.path.join(inputs_dir, file + ".npy")
        if not os.path.exists(path):
            print(f"FAIL: no input file {path} for input '{name}'")
            return 1
        feeds[name] = np.load(path)
    try:
        outputs = session.run(None, feeds)
    except Exception as e:
        print(f"FAIL: onnxruntime cannot run it: {e}")
        return 1
    for meta, value in zip(session.get_outputs(), outputs):
        print(f"  output {meta.name}: {value.dtype}{list(value.shape)}")
    print(f"onnxruntime {ort.__version__}: OK, loads and runs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
