"""Writes the ONNX node tests of the installed onnx package as test data.

onnx wheels up to 1.22 carried these files (onnx/backend/test/data/node);
1.23 carries only the test cases (onnx/backend/test/case/node), so the data
is generated from them here, in the layout of the wheel's folder:

    OUT/node/<test name>/model.onnx
    OUT/node/<test name>/test_data_set_<i>/input_<j>.pb, output_<j>.pb

numpy's generator is seeded before the cases are collected, so a given onnx
and numpy write the same bytes on every run. Run by scripts/onnx_node_data.sh.

    python generate_node_data.py OUT
"""

import os
import shutil
import sys

import numpy as np


def write_value(path, value, value_info):
    """A test value as the wheel stored it: a TensorProto, or a sequence,
    optional or map in onnx's proto wrappers."""
    from onnx import TensorProto, numpy_helper

    kind = value_info.type.WhichOneof("value")
    if kind == "sequence_type":
        proto = numpy_helper.from_list(value, value_info.name)
    elif kind == "optional_type":
        proto = numpy_helper.from_optional(value, value_info.name)
    elif kind == "map_type":
        proto = numpy_helper.from_dict(value, value_info.name)
    elif isinstance(value, TensorProto):
        proto = value
    else:
        proto = numpy_helper.from_array(value, value_info.name)
    with open(path, "wb") as f:
        f.write(proto.SerializeToString())


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: generate_node_data.py OUT")
    out = os.path.join(sys.argv[1], "node")
    np.random.seed(0)
    import onnx
    import onnx.backend.test.case.node as node_cases

    cases = node_cases.collect_testcases()
    if os.path.exists(out):
        shutil.rmtree(out)
    written = 0
    for case in cases:
        if case.kind != "node" or case.model is None:
            continue
        folder = os.path.join(out, case.name)
        os.makedirs(folder)
        with open(os.path.join(folder, "model.onnx"), "wb") as f:
            f.write(case.model.SerializeToString())
        for i, (inputs, outputs) in enumerate(case.data_sets or []):
            data = os.path.join(folder, f"test_data_set_{i}")
            os.makedirs(data)
            for j, value in enumerate(inputs):
                write_value(os.path.join(data, f"input_{j}.pb"), value, case.model.graph.input[j])
            for j, value in enumerate(outputs):
                write_value(os.path.join(data, f"output_{j}.pb"), value, case.model.graph.output[j])
        written += 1
    print(f"onnx {onnx.__version__}: {written} node tests written to {out}")


if __name__ == "__main__":
    main()
