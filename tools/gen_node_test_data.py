#!/usr/bin/env python3
"""Writes the ONNX backend node tests of the given ops (model.onnx + test_data_set_N/*.pb) into
OUTPUT/node/<test>, with the onnx package's own generator: its node test cases
(onnx.backend.test.case.node, the expected outputs computed there by the ONNX reference formulas)
written by onnx.backend.test.cmd_tools.generate_data. The pip onnx (1.23) ships no node test data,
and Debian's libonnx-testdata (1.12) predates opset 23, so CTest runs this before the node tests of
the newest ops. Generated data is a build product: never commit it.

usage: gen_node_test_data.py --output DIR --ops Attention,RMSNormalization,RotaryEmbedding,Gelu
"""
import argparse
import os
import shutil
import subprocess
import sys
import types


def generate_one_op(op: str, output: str) -> int:
    # collect_testcases(op) filters at import time (the case modules call expect() as they load),
    # so each op is collected in a fresh interpreter.
    from onnx.backend.test import cmd_tools
    from onnx.backend.test.case import node as node_cases

    cases = [c for c in node_cases.collect_testcases(op) if c.kind == "node"]
    if not cases:
        print(f"gen_node_test_data: the onnx package has no node tests of {op}", file=sys.stderr)
        return 1
    # generate_data writes every case that its collect_testcases() returns, as OUTPUT/<kind>/<name>.
    cmd_tools.model_test = types.SimpleNamespace(collect_testcases=lambda: cases)
    cmd_tools.generate_data(argparse.Namespace(output=output))
    print(f"gen_node_test_data: {len(cases)} node tests of {op} in {os.path.join(output, 'node')}")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", required=True, help="folder; tests go to OUTPUT/node/<test>")
    parser.add_argument("--ops", required=True, help="comma-separated op types")
    parser.add_argument("--one-op", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one_op:
        return generate_one_op(args.one_op, args.output)
    try:
        import onnx
    except ImportError:
        print("gen_node_test_data: needs the onnx Python package (pip install onnx)", file=sys.stderr)
        return 1
    # Start from an empty OUTPUT/node, so the folder holds exactly this onnx's tests.
    shutil.rmtree(os.path.join(args.output, "node"), ignore_errors=True)
    os.makedirs(args.output, exist_ok=True)
    # Which onnx wrote the data (read by tools/conformance/gen_ops_md.py for docs/ops.md).
    with open(os.path.join(args.output, "ONNX_VERSION"), "w") as f:
        f.write(onnx.__version__ + "\n")
    status = 0
    for op in [o for o in args.ops.split(",") if o]:
        rc = subprocess.call([sys.executable, "-W", "ignore", os.path.abspath(__file__), "--output", args.output,
                              "--ops", op, "--one-op", op])
        status = status or rc
    return status


if __name__ == "__main__":
    sys.exit(main())
