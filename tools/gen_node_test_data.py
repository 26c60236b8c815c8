#!/usr/bin/env python3
"""Writes ONNX backend node tests (model.onnx + test_data_set_N/*.pb) into OUTPUT/node/<test>, with
the onnx package's own generator: its node test cases (onnx.backend.test.case.node, the expected
outputs computed there by the ONNX reference formulas) written by
onnx.backend.test.cmd_tools.generate_data. The pip onnx wheels ship no node test data, and Debian's
libonnx-testdata (1.12) predates opset 23, so CTest runs this before the node tests of the newest
ops (--ops Attention,...) and before the sweep over the whole newest release (--ops all).
Generated data is a build product: never commit it.

Reproducible: the onnx version is pinned in tools/install_deps.sh (the line onnx_version=X.Y.Z);
with any other installed onnx this refuses (exit 2) unless --allow-other-onnx is given, which
warns and stamps the version actually used into OUTPUT/ONNX_VERSION. The data is deterministic:
onnx seeds numpy (np.random.seed(0)) before every case's export function, so the same onnx and
numpy write byte-identical files.

usage: gen_node_test_data.py --output DIR --ops all
       gen_node_test_data.py --output DIR --ops Attention,RMSNormalization,RotaryEmbedding,Gelu
       gen_node_test_data.py --check-version     (exit 0 iff the installed onnx is the pinned one)
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import time
import types

INSTALL_DEPS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "install_deps.sh")


def pinned_onnx_version():
    """The onnx version that tools/install_deps.sh installs (its line onnx_version=X.Y.Z)."""
    with open(INSTALL_DEPS) as f:
        m = re.search(r"^onnx_version=([0-9][0-9A-Za-z.+-]*)\s*$", f.read(), re.MULTILINE)
    if not m:
        raise RuntimeError(f"no line onnx_version=X.Y.Z in {INSTALL_DEPS}")
    return m.group(1)


def write_cases(cases, output: str) -> None:
    from onnx.backend.test import cmd_tools
    # generate_data writes every case that its collect_testcases() returns, as OUTPUT/<kind>/<name>.
    cmd_tools.model_test = types.SimpleNamespace(collect_testcases=lambda: cases)
    cmd_tools.generate_data(argparse.Namespace(output=output))


def generate_one_op(op: str, output: str) -> int:
    # collect_testcases(op) filters at import time (the case modules call expect() as they load),
    # so each op is collected in a fresh interpreter.
    from onnx.backend.test.case import node as node_cases

    cases = [c for c in node_cases.collect_testcases(op) if c.kind == "node"]
    if not cases:
        print(f"gen_node_test_data: the onnx package has no node tests of {op}", file=sys.stderr)
        return 1
    write_cases(cases, output)
    print(f"gen_node_test_data: {len(cases)} node tests of {op} in {os.path.join(output, 'node')}")
    return 0


def generate_all(output: str) -> int:
    # collect_testcases(None): every node test case of the package (ai.onnx and, when onnx was
    # built with ONNX_ML, ai.onnx.ml), *_expanded function bodies included.
    from onnx.backend.test.case import node as node_cases

    cases = [c for c in node_cases.collect_testcases(None) if c.kind == "node"]
    names = [c.name for c in cases]
    if len(set(names)) != len(names):
        dup = sorted({n for n in names if names.count(n) > 1})
        print(f"gen_node_test_data: duplicate test names {dup[:5]}", file=sys.stderr)
        return 1
    write_cases(cases, output)
    print(f"gen_node_test_data: {len(cases)} node tests (all ops) in {os.path.join(output, 'node')}")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", help="folder; tests go to OUTPUT/node/<test>")
    parser.add_argument("--ops", help="comma-separated op types, or 'all' for every node test")
    parser.add_argument("--allow-other-onnx", action="store_true",
                        help="warn instead of refusing when the installed onnx is not the pinned version")
    parser.add_argument("--check-version", action="store_true",
                        help="only check that the installed onnx is the pinned version (exit 0) or not (2)")
    parser.add_argument("--one-op", help=argparse.SUPPRESS)
    parser.add_argument("--all-ops", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one_op:
        return generate_one_op(args.one_op, args.output)
    if args.all_ops:
        return generate_all(args.output)
    if not args.check_version and (not args.output or not args.ops):
        parser.error("--output and --ops are required")
    try:
        import onnx
    except ImportError:
        print("gen_node_test_data: needs the onnx Python package (tools/install_deps.sh installs it)",
              file=sys.stderr)
        return 1
    pinned = pinned_onnx_version()
    if onnx.__version__ != pinned:
        msg = (f"the installed onnx is {onnx.__version__}, but tools/install_deps.sh pins onnx {pinned}: "
               f"generated node tests (their number, models and data) differ between onnx releases, "
               f"so results would not be comparable (python3 -m pip install onnx=={pinned})")
        if args.check_version or not args.allow_other_onnx:
            print(f"gen_node_test_data: ERROR: {msg}", file=sys.stderr)
            return 2
        print(f"gen_node_test_data: WARNING: {msg}; generating with onnx {onnx.__version__} "
              f"(--allow-other-onnx)", file=sys.stderr)
    if args.check_version:
        print(f"gen_node_test_data: onnx {onnx.__version__} (the pinned version)")
        return 0
    start = time.monotonic()
    # Start from an empty OUTPUT/node, so the folder holds exactly this onnx's tests.
    shutil.rmtree(os.path.join(args.output, "node"), ignore_errors=True)
    os.makedirs(args.output, exist_ok=True)
    version_file = os.path.join(args.output, "ONNX_VERSION")
    if os.path.exists(version_file):
        os.remove(version_file)
    ops = [o for o in args.ops.split(",") if o]
    child = [sys.executable, "-W", "ignore", os.path.abspath(__file__), "--output", args.output]
    if ops == ["all"]:
        status = subprocess.call(child + ["--all-ops"])
    else:
        status = 0
        for op in ops:
            rc = subprocess.call(child + ["--one-op", op])
            status = status or rc
    if status == 0:
        # Which onnx wrote the data (read by tools/conformance/gen_ops_md.py for docs/ops.md);
        # written last, so a folder with this file holds a complete generation.
        with open(version_file, "w") as f:
            f.write(onnx.__version__ + "\n")
        print(f"gen_node_test_data: onnx {onnx.__version__}, {time.monotonic() - start:.1f} s")
    return status


if __name__ == "__main__":
    sys.exit(main())
