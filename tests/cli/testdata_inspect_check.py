#!/usr/bin/env python3
"""Checks `vigil inspect --json` against the onnx Python package on every model
of Debian's libonnx-testdata (node, pytorch-converted, pytorch-operator, simple).

For each model.onnx: vigil must exit 0, and agree with onnx.load on the name,
dtype and shape of every graph input and output, on the opsets, ir_version,
producer and the number of nodes.

usage: testdata_inspect_check.py VIGIL_BINARY [DATA_ROOT]
Exit 0 all agree, 1 any disagreement, 77 (skipped) when onnx or the data is absent.
"""
import json
import os
import subprocess
import sys

SKIP = 77
SUITES = ["node", "pytorch-converted", "pytorch-operator", "simple"]

# TensorProto.DataType names -> numpy names (vigil's dtype names).
DTYPE = {
    "FLOAT": "float32", "UINT8": "uint8", "INT8": "int8", "UINT16": "uint16", "INT16": "int16",
    "INT32": "int32", "INT64": "int64", "STRING": "str", "BOOL": "bool", "FLOAT16": "float16",
    "DOUBLE": "float64", "UINT32": "uint32", "UINT64": "uint64", "COMPLEX64": "complex64",
    "COMPLEX128": "complex128", "BFLOAT16": "bfloat16", "FLOAT8E4M3FN": "float8_e4m3fn",
    "FLOAT8E4M3FNUZ": "float8_e4m3fnuz", "FLOAT8E5M2": "float8_e5m2", "FLOAT8E5M2FNUZ": "float8_e5m2fnuz",
    "UINT4": "uint4", "INT4": "int4",
}


def expected_value(onnx, vi):
    t = vi.type
    kind = t.WhichOneof("value")
    out = {"name": vi.name}
    if kind in ("tensor_type", "sparse_tensor_type"):
        tt = getattr(t, kind)
        out["type"] = "tensor" if kind == "tensor_type" else "sparse_tensor"
        out["dtype"] = DTYPE[onnx.TensorProto.DataType.Name(tt.elem_type)]
        if tt.HasField("shape"):
            dims = []
            for d in tt.shape.dim:
                which = d.WhichOneof("value")
                dims.append(d.dim_value if which == "dim_value" else d.dim_param if which == "dim_param" else None)
            out["shape"] = dims
        else:
            out["shape"] = None
    else:
        names = {"sequence_type": "sequence", "optional_type": "optional", "map_type": "map", None: "unknown"}
        out["type"] = names[kind]
        out["dtype"] = None
        out["shape"] = None
    return out


def compare(onnx, path, got):
    m = onnx.load(path, load_external_data=False)
    problems = []
    for role in ("inputs", "outputs"):
        want = [expected_value(onnx, vi) for vi in (m.graph.input if role == "inputs" else m.graph.output)]
        have = [{k: v[k] for k in ("name", "type", "dtype", "shape")} for v in got[role]]
        if want != have:
            problems.append(f"{role}: onnx says {want}, vigil says {have}")
    opsets = {o.domain: o.version for o in m.opset_import}
    if opsets != got["opsets"]:
        problems.append(f"opsets: onnx says {opsets}, vigil says {got['opsets']}")
    if m.ir_version != got["ir_version"]:
        problems.append(f"ir_version: onnx says {m.ir_version}, vigil says {got['ir_version']}")
    if m.producer_name != got["producer"]:
        problems.append(f"producer: onnx says {m.producer_name!r}, vigil says {got['producer']!r}")
    if len(m.graph.node) != got["nodes"]:
        problems.append(f"nodes: onnx says {len(m.graph.node)}, vigil says {got['nodes']}")
    n_params = 0
    for t in m.graph.initializer:
        n = 1
        for d in t.dims:
            n *= d
        n_params += n
    if n_params != got["parameters"] and not m.graph.sparse_initializer:
        problems.append(f"parameters: onnx says {n_params}, vigil says {got['parameters']}")
    return problems


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    vigil = sys.argv[1]
    root = sys.argv[2] if len(sys.argv) > 2 else "/usr/include/onnx/backend/test/data"
    try:
        import onnx
    except ImportError:
        print("SKIP: the onnx Python package is not installed (apt-get install python3-onnx)")
        return SKIP
    if not os.path.isdir(root):
        print(f"SKIP: {root} is absent (apt-get install libonnx-testdata)")
        return SKIP
    checked, failures = 0, []
    for suite in SUITES:
        suite_dir = os.path.join(root, suite)
        if not os.path.isdir(suite_dir):
            continue
        for name in sorted(os.listdir(suite_dir)):
            path = os.path.join(suite_dir, name, "model.onnx")
            if not os.path.isfile(path):
                continue
            checked += 1
            r = subprocess.run([vigil, "inspect", "--json", path], capture_output=True, text=True)
            if r.returncode != 0:
                failures.append(f"{suite}/{name}: exit {r.returncode}: {(r.stdout + r.stderr).strip()[:400]}")
                continue
            problems = compare(onnx, path, json.loads(r.stdout))
            failures += [f"{suite}/{name}: {p}" for p in problems]
    for f in failures:
        print("FAIL", f)
    print(f"checked {checked} models in {root}: {checked - len({f.split(':')[0] for f in failures})} agree")
    if checked == 0:
        print("SKIP: no models found")
        return SKIP
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
