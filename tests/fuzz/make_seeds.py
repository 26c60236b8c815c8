#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz harnesses (tests/fuzz/, docs/reliability.md "Fuzzing") into
OUT/<harness>/, one file per input named by its SHA-1 (libFuzzer's own naming). Generated at
build time from our models and the ONNX node tests; nothing binary is committed.

  model_bytes, model_mutator: models/tiny_cnn.py, every model of models/tiny_transformers.py, a few
      hand-made small models (external data, opsets, dtypes), and the model.onnx of every ONNX
      backend node test found (Debian's libonnx-testdata, and --node-tests DIR, e.g. the build's
      onnx123_node_tests written by tools/gen_node_test_data.py).
  external_data: seeded random byte strings (the harness decodes any bytes into a file tree and a
      model, so random bytes are valid inputs).

usage: make_seeds.py OUT [--node-tests DIR ...]
"""
import argparse
import glob
import hashlib
import os
import random
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "models"))

import onnx  # noqa: E402
from onnx import TensorProto, helper  # noqa: E402

DEBIAN_NODE_TESTS = "/usr/share/libonnx-testdata/data/node"


def put(folder, data):
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, hashlib.sha1(data).hexdigest())
    if not os.path.exists(path):
        with open(path, "wb") as f:
            f.write(data)


def small_models():
    """Models that reach corners the zoo does not: external data, old and new opsets, 16-bit and
    integer dtypes, an empty tensor, a shape subgraph that must fold at import."""
    f = TensorProto.FLOAT
    out = []
    ext = helper.make_tensor("w", f, [2, 2], [0.0] * 4)
    ext.ClearField("float_data")
    ext.data_location = TensorProto.EXTERNAL
    for k, v in (("location", "w.bin"), ("offset", "0"), ("length", "16")):
        e = ext.external_data.add()
        e.key, e.value = k, v
    out.append(helper.make_model(helper.make_graph(
        [helper.make_node("Add", ["x", "w"], ["y"], name="add")], "ext",
        [helper.make_tensor_value_info("x", f, [2, 2])], [helper.make_tensor_value_info("y", f, [2, 2])], [ext]),
        opset_imports=[helper.make_opsetid("", 17)]))
    shape_chain = [helper.make_node("Shape", ["x"], ["s"], name="shape"),
                   helper.make_node("ReduceProd", ["s"], ["n"], name="prod", keepdims=1),
                   helper.make_node("Reshape", ["x", "n"], ["flat"], name="reshape"),
                   helper.make_node("MatMul", ["flat", "m"], ["y"], name="mm")]
    m = helper.make_tensor("m", f, [24, 3], [0.5] * 72)
    for opset in (13, 18, 21):
        out.append(helper.make_model(helper.make_graph(
            shape_chain, "shape_chain", [helper.make_tensor_value_info("x", f, [2, 3, 4])],
            [helper.make_tensor_value_info("y", f, None)], [m]), opset_imports=[helper.make_opsetid("", opset)]))
    for dtype in (TensorProto.FLOAT16, TensorProto.BFLOAT16, TensorProto.INT8, TensorProto.INT64):
        out.append(helper.make_model(helper.make_graph(
            [helper.make_node("Cast", ["x"], ["c"], name="cast", to=dtype),
             helper.make_node("Conv", ["x", "k"], ["y"], name="conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             helper.make_node("Cast", ["c"], ["z"], name="back", to=f)], "dtypes",
            [helper.make_tensor_value_info("x", f, [1, 2, 5, 5])],
            [helper.make_tensor_value_info("y", f, None), helper.make_tensor_value_info("z", f, None)],
            [helper.make_tensor("k", f, [4, 2, 3, 3], [0.25] * 72)]), opset_imports=[helper.make_opsetid("", 19)]))
    out.append(helper.make_model(helper.make_graph(
        [helper.make_node("Concat", ["x", "e"], ["y"], name="cat", axis=0)], "empty",
        [helper.make_tensor_value_info("x", f, [0, 3])], [helper.make_tensor_value_info("y", f, None)],
        [helper.make_tensor("e", f, [0, 3], [])]), opset_imports=[helper.make_opsetid("", 17)]))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("--node-tests", action="append", default=[], help="a folder of node tests (DIR/*/model.onnx)")
    args = ap.parse_args()

    import tiny_cnn
    import tiny_transformers
    models = [tiny_cnn.build(0).SerializeToString()]
    models += [tiny_transformers.build(name, k)[0].SerializeToString() for k, name in enumerate(tiny_transformers.MODELS)]
    models += [m.SerializeToString() for m in small_models()]
    node_files = []
    for folder in [DEBIAN_NODE_TESTS] + args.node_tests:
        node_files += sorted(glob.glob(os.path.join(folder, "*", "model.onnx")))
        node_files += sorted(glob.glob(os.path.join(folder, "node", "*", "model.onnx")))
    for path in node_files:
        with open(path, "rb") as f:
            models.append(f.read())
    for harness in ("model_bytes", "model_mutator"):
        for data in models:
            put(os.path.join(args.out, harness), data)
    rng = random.Random(0)
    for _ in range(64):
        put(os.path.join(args.out, "external_data"), bytes(rng.randrange(256) for _ in range(rng.randrange(16, 400))))
    counts = {h: len(os.listdir(os.path.join(args.out, h))) for h in ("model_bytes", "model_mutator", "external_data")}
    print("fuzz seeds: " + ", ".join(f"{h} {n}" for h, n in counts.items()) +
          f" ({len(node_files)} node-test models read)")


if __name__ == "__main__":
    main()
